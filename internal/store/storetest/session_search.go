package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// SessionList's Words: a group's sessions in a project whose title, or one
// of whose instructions or messages, holds every word (store/search.go).

func sessionSearchTests() []test {
	return []test{
		{"Sources", testSessionSearchSources},
		{"EveryWordInOneText", testSessionSearchOneText},
		{"Filters", testSessionSearchFilters},
		{"Secret", testSessionSearchSecret},
		{"TitleChange", testSessionSearchTitleChange},
	}
}

// searchWorld is group alpha's sessions in project web, each with the
// word "login" in one place or none, and the same word in another group's
// and another project's sessions.
type searchWorld struct {
	lw                                        *listWorld
	title, note, instr, none, closed, partial *continuo.Session
}

func newSearchWorld(t *testing.T, s store.Store) *searchWorld {
	t.Helper()
	ctx := t.Context()
	lw := &listWorld{g1: Group(t, s, "alpha"), g2: Group(t, s, "bravo"), p1: Project(t, s, "web"), p2: Project(t, s, "api")}
	w := &searchWorld{lw: lw}
	n := 0
	at := func(x *continuo.Session) { n++; x.UpdatedAt = Base.Add(time.Duration(n) * time.Minute) }
	w.title = Session(t, s, lw.g1.ID, lw.p1.ID, "Fix the LOGIN redirect", at)
	w.note = Session(t, s, lw.g1.ID, lw.p1.ID, "Slow pages", at)
	w.instr = Session(t, s, lw.g1.ID, lw.p1.ID, "Audit", at)
	w.none = Session(t, s, lw.g1.ID, lw.p1.ID, "Logins are words apart", at) // "logins" is not "login"
	w.closed = Session(t, s, lw.g1.ID, lw.p1.ID, "login, closed", at, func(x *continuo.Session) {
		x.Lifecycle, x.ClosedAt = continuo.LifecycleClosed, &x.UpdatedAt
	})
	w.partial = Session(t, s, lw.g1.ID, lw.p1.ID, "login", at) // "redirect" only in a note
	Session(t, s, lw.g2.ID, lw.p1.ID, "login of another group", at)
	Session(t, s, lw.g1.ID, lw.p2.ID, "login in another project", at)
	MustWrite(t, s, func(tx store.Tx) error {
		for _, m := range []*continuo.Message{
			NewMessage(w.note.ID, 1, continuo.KindNote, "the Login page takes 3s"),
			NewMessage(w.note.ID, 2, continuo.KindNote, "nothing else"),
			NewMessage(w.none.ID, 1, continuo.KindNote, "logins, log-in and log in"),
			NewMessage(w.partial.ID, 1, continuo.KindNote, "a redirect loop"),
		} {
			m.ID = continuo.NewID(continuo.PrefixMessage, m.CreatedAt)
			if err := tx.MessageCreate(ctx, m); err != nil {
				return err
			}
		}
		return tx.InstructionAppend(ctx, store.Instruction{SessionID: w.instr.ID, Seq: 2, Text: "Now audit the login flow", CreatedAt: Base})
	})
	return w
}

// search lists alpha's sessions in web that match words, newest activity
// first, and checks the total against the page.
func (w *searchWorld) search(t *testing.T, s store.Store, p store.SessionListParams) []string {
	t.Helper()
	p.GroupID, p.ProjectID = w.lw.g1.ID, w.lw.p1.ID
	if p.Limit == 0 {
		p.Limit = 100
	}
	list, total := listSessions(t, s, p)
	if p.Offset == 0 && total != int64(len(list)) && len(list) < p.Limit {
		t.Errorf("SessionList(%v): total %d, %d listed", p.Words, total, len(list))
	}
	return ids(list)
}

func testSessionSearchSources(t *testing.T, s store.Store) {
	w := newSearchWorld(t, s)
	want := []string{w.partial.ID, w.closed.ID, w.instr.ID, w.note.ID, w.title.ID}
	if got := w.search(t, s, store.SessionListParams{Words: []string{"login"}}); !slices.Equal(got, want) {
		t.Errorf("sessions with login in the title, a note or an instruction: %q, want %q", got, want)
	}
	if got := w.search(t, s, store.SessionListParams{Words: []string{"logins"}}); !slices.Equal(got, []string{w.none.ID}) {
		t.Errorf("logins: %q, want only %q (whole words)", got, w.none.ID)
	}
	if got := w.search(t, s, store.SessionListParams{Words: []string{"absent"}}); len(got) != 0 {
		t.Errorf("a word nowhere: %q", got)
	}
	if got := w.search(t, s, store.SessionListParams{}); len(got) != 6 {
		t.Errorf("no words: %d sessions, want all 6", len(got))
	}
}

// Every word must be in one text (the title, or one message, or one
// instruction), as the listing's query matches one entry.
func testSessionSearchOneText(t *testing.T, s store.Store) {
	w := newSearchWorld(t, s)
	if got := w.search(t, s, store.SessionListParams{Words: []string{"login", "redirect"}}); !slices.Equal(got, []string{w.title.ID}) {
		t.Errorf("login redirect: %q, want only %q (the words split over a title and a note do not match)", got, w.title.ID)
	}
	if got := w.search(t, s, store.SessionListParams{Words: []string{"login", "page"}}); !slices.Equal(got, []string{w.note.ID}) {
		t.Errorf("login page: %q, want %q", got, w.note.ID)
	}
	if got := w.search(t, s, store.SessionListParams{Words: []string{"audit", "flow"}}); !slices.Equal(got, []string{w.instr.ID}) {
		t.Errorf("audit flow: %q, want %q", got, w.instr.ID)
	}
}

func testSessionSearchFilters(t *testing.T, s store.Store) {
	w := newSearchWorld(t, s)
	words := []string{"login"}
	if got := w.search(t, s, store.SessionListParams{Words: words, Lifecycle: continuo.LifecycleClosed}); !slices.Equal(got, []string{w.closed.ID}) {
		t.Errorf("closed with login: %q", got)
	}
	if got := w.search(t, s, store.SessionListParams{Words: words, Lifecycle: continuo.LifecycleActive}); len(got) != 4 || slices.Contains(got, w.closed.ID) {
		t.Errorf("active with login: %q", got)
	}
	p := store.SessionListParams{GroupID: w.lw.g1.ID, ProjectID: w.lw.p1.ID, Words: words, Offset: 1, Limit: 2}
	list, total := listSessions(t, s, p)
	if total != 5 || !slices.Equal(ids(list), []string{w.closed.ID, w.instr.ID}) {
		t.Errorf("page 2 of 2 with login: %q of %d, want 2 of 5", ids(list), total)
	}
	// Another group's session in the project is never found, nor the
	// group's own in another project.
	other, total := listSessions(t, s, store.SessionListParams{GroupID: w.lw.g2.ID, ProjectID: w.lw.p1.ID, Words: words, Limit: 10})
	if total != 1 || len(other) != 1 || other[0].Title != "login of another group" {
		t.Errorf("bravo's search: %q of %d", ids(other), total)
	}
}

// The title's search text is of the redacted title, so a secret in a
// title is never found (what a model reads, store/search.go).
func testSessionSearchSecret(t *testing.T, s store.Store) {
	w := newSearchWorld(t, s)
	const key = "AKIAIOSFODNN7EXAMPLE"
	sess := Session(t, s, w.lw.g1.ID, w.lw.p1.ID, "rotate "+key+" today")
	if got := w.search(t, s, store.SessionListParams{Words: store.SearchWords(key)}); len(got) != 0 {
		t.Errorf("the secret in a title is searchable: %q", got)
	}
	if got := w.search(t, s, store.SessionListParams{Words: []string{"rotate", "today"}}); !slices.Equal(got, []string{sess.ID}) {
		t.Errorf("rotate today: %q, want %q", got, sess.ID)
	}
	if getSession(t, s, sess.ID).Title != sess.Title {
		t.Fatal("the stored title lost its secret: the test no longer tests anything")
	}
}

// SessionUpdate indexes the title it writes.
func testSessionSearchTitleChange(t *testing.T, s store.Store) {
	w := newSearchWorld(t, s)
	sess := *w.none
	prev := sess.Revision
	sess.Revision++
	sess.Title = "Renamed: session cookie"
	MustWrite(t, s, func(tx store.Tx) error { return tx.SessionUpdate(t.Context(), &sess, prev) })
	if got := w.search(t, s, store.SessionListParams{Words: []string{"cookie"}}); !slices.Equal(got, []string{sess.ID}) {
		t.Errorf("cookie after the rename: %q, want %q", got, sess.ID)
	}
	if got := w.search(t, s, store.SessionListParams{Words: []string{"apart"}}); len(got) != 0 {
		t.Errorf("the old title's word still finds %q", got)
	}
}

// Migration0011Seed are rows of a version 10 database, in SQL both engines
// run, for the drivers' upgrade tests of migration 0011: two sessions of
// group grp_1 in project prj_1, one titled with a secret.
var Migration0011Seed = []string{
	"INSERT INTO groups (id, name, created_at) VALUES ('grp_1', 'g', 0)",
	"INSERT INTO projects (id, name, writable, created_at) VALUES ('prj_1', 'p', 1, 0)",
	`INSERT INTO sessions (id, group_id, ref, project_id, title, lifecycle, mode, root_instruction, latest_instruction,
		instructions, revision, message_seq, created_at, updated_at) VALUES
		('ses_1', 'grp_1', 1, 'prj_1', 'Fix the login redirect', 'active', 'checkout', 'i', 'i', 1, 1, 0, 0, 2),
		('ses_2', 'grp_1', 2, 'prj_1', 'rotate AKIAIOSFODNN7EXAMPLE', 'active', 'checkout', 'i', 'i', 1, 1, 0, 0, 1)`,
}

// CheckMigration0011 checks a store migrated from Migration0011Seed: its
// sessions are found by the words of their titles (the driver indexed
// them after migrating), never by the secret in one.
func CheckMigration0011(t testing.TB, s store.Store) {
	t.Helper()
	MustRead(t, s, func(tx store.Tx) error {
		for q, want := range map[string]int64{"login": 1, "redirect fix": 1, "rotate": 1, "AKIAIOSFODNN7EXAMPLE": 0} {
			got, total, err := tx.SessionList(t.Context(), store.SessionListParams{GroupID: "grp_1", ProjectID: "prj_1",
				Words: store.SearchWords(q), Limit: 10})
			if err != nil {
				return err
			}
			if total != want || int64(len(got)) != want {
				t.Errorf("sessions titled with %q after 0011: %d listed, total %d; want %d", q, len(got), total, want)
			}
		}
		return nil
	})
}
