package web_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/workflow"
)

// The sessions area: a project's sessions (/p/…), a session's brief, notes
// and goals (/s/…), one note (/s/…/m/…) and a goal (/g/…), with data made
// through the workflow service as the tools make it.

// sessionsWorld is alice's project webapp with sessions made through the
// services, and bob, of another group.
type sessionsWorld struct {
	s          *dashServer
	alice, bob *auth.IssuedToken
	ac         *continuo.Caller
	project    *continuo.Project
}

func newSessionsWorld(t *testing.T) *sessionsWorld {
	t.Helper()
	s := newDashServer(t)
	w := &sessionsWorld{s: s,
		alice: s.token("alice", continuo.ScopeSessionsRead, continuo.ScopeSessionsWrite),
		bob:   s.token("bob", continuo.ScopeSessionsRead, continuo.ScopeSessionsWrite)}
	w.ac = s.caller(w.alice)
	w.project = s.project("webapp", map[string]continuo.Access{"alice": continuo.AccessWrite})
	return w
}

func (w *sessionsWorld) start(t *testing.T, title, instruction string) *continuo.Session {
	t.Helper()
	r, err := w.s.wf.WorkOnProject(t.Context(), w.ac, workflow.WorkOn{Project: "webapp", Title: title, Instruction: instruction})
	if err != nil {
		t.Fatal(err)
	}
	return r.Session
}

func (w *sessionsWorld) post(t *testing.T, p workflow.Post) *continuo.Message {
	t.Helper()
	m, _, err := w.s.wf.PostMessage(t.Context(), w.ac, p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (w *sessionsWorld) note(t *testing.T, sid string, kind continuo.Kind, text string) *continuo.Message {
	t.Helper()
	return w.post(t, workflow.Post{SessionID: sid, Kind: kind, Text: text})
}

// goal creates a goal in session sid with steps (id, title, id, title, …),
// keyed by its title.
func (w *sessionsWorld) goal(t *testing.T, sid string, in workflow.NewGoalInput, steps ...string) *continuo.Goal {
	t.Helper()
	in.SessionID, in.IdempotencyKey = sid, "goal "+in.Title
	for i := 0; i+1 < len(steps); i += 2 {
		in.Steps = append(in.Steps, workflow.GoalStepInput{ID: steps[i], Title: steps[i+1]})
	}
	g, _, err := w.s.wf.CreateGoal(t.Context(), w.ac, in)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// checkpoint checkpoints g at its revision: the steps done, the current
// step ("" leaves it), the summary.
func (w *sessionsWorld) checkpoint(t *testing.T, g *continuo.Goal, done []string, current, summary string) *continuo.Goal {
	t.Helper()
	in := workflow.CheckpointInput{GoalID: g.ID, ExpectedRevision: g.Revision, IdempotencyKey: fmt.Sprint("checkpoint ", g.Revision),
		CompletedStepIDs: done, Summary: summary}
	if current != "" {
		in.CurrentStepID = &current
	}
	g, _, err := w.s.wf.CheckpointGoal(t.Context(), w.ac, in)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// revise replaces g's plan at its revision with steps (id, title, …).
func (w *sessionsWorld) revise(t *testing.T, g *continuo.Goal, reason string, steps ...string) *continuo.Goal {
	t.Helper()
	in := workflow.ReviseInput{GoalID: g.ID, ExpectedRevision: g.Revision, IdempotencyKey: fmt.Sprint("revise ", g.Revision), Reason: reason}
	for i := 0; i+1 < len(steps); i += 2 {
		in.Steps = append(in.Steps, workflow.GoalStepInput{ID: steps[i], Title: steps[i+1]})
	}
	g, _, err := w.s.wf.ReviseGoalPlan(t.Context(), w.ac, in)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// sessionsHas fails unless body holds every string of want.
func sessionsHas(t *testing.T, what, body string, want ...string) {
	t.Helper()
	for _, x := range want {
		if !strings.Contains(body, x) {
			t.Errorf("%s lacks %q", what, x)
		}
	}
}

// sessionsLacks fails if body holds any string of unwanted.
func sessionsLacks(t *testing.T, what, body string, unwanted ...string) {
	t.Helper()
	for _, x := range unwanted {
		if strings.Contains(body, x) {
			t.Errorf("%s holds %q", what, x)
		}
	}
}

// sessionsSection is the part of a page from the element <tag … id="id"> to the
// next element of the same tag, for checking what one section shows.
func sessionsSection(t *testing.T, body, tag, id string) string {
	t.Helper()
	loc := regexp.MustCompile(`<` + tag + `[^>]* id="` + regexp.QuoteMeta(id) + `"`).FindStringIndex(body)
	if loc == nil {
		t.Fatalf("no <%s id=%q> on the page", tag, id)
	}
	rest := body[loc[1]:]
	if end := strings.Index(rest, "<"+tag); end >= 0 {
		return body[loc[0] : loc[1]+end]
	}
	return body[loc[0]:]
}

// sessionsNotesOn lists the anchors of the timeline's notes on a page, in order.
var sessionsNoteRE = regexp.MustCompile(`<article class="note [^"]*" id="([^"]+)"`)

func sessionsNotesOn(body string) []string {
	var out []string
	for _, m := range sessionsNoteRE.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// sessionsHrefRE finds the links of a page.
var sessionsHrefRE = regexp.MustCompile(`href="([^"]+)"`)

// sessionsLink returns the first link of body whose (unescaped) target holds
// part, or fails.
func sessionsLink(t *testing.T, body, part string) string {
	t.Helper()
	for _, m := range sessionsHrefRE.FindAllStringSubmatch(body, -1) {
		if u := html.UnescapeString(m[1]); strings.Contains(u, part) {
			return u
		}
	}
	t.Fatalf("no link to %q on the page", part)
	return ""
}

// ---- GET /p/{project} ----

func TestDashboardSessionsProject(t *testing.T) { stores.Each(t, testDashboardSessionsProject) }

// testDashboardSessionsProject: the project page lists the group's
// sessions newest activity first with their open work, finds them by a
// word of their title or notes, filters by lifecycle, pages by 20, and
// shows the project's goals and the link to its evidence.
func testDashboardSessionsProject(t *testing.T) {
	w := newSessionsWorld(t)
	ctx := t.Context()
	var all []*continuo.Session
	for i := range 22 {
		all = append(all, w.start(t, fmt.Sprintf("Chore number %02d", i), "tidy up"))
	}
	cache := w.start(t, "Cache invalidation", "make the cache correct")
	noted := w.start(t, "Slow pages", "find out why")
	w.note(t, noted.ID, continuo.KindTodo, "profile the CACHE layer")
	w.note(t, noted.ID, continuo.KindQuestion, "may we drop IE11?")
	if _, _, err := w.s.wf.CloseSession(ctx, w.ac, cache.ID, "done"); err != nil {
		t.Fatal(err)
	}
	g := w.goal(t, noted.ID, workflow.NewGoalInput{Title: "Pages under 1s", Objective: "fast"}, "measure", "Measure")

	b := w.s.browser(w.alice)
	home := b.page("/")
	p := b.page(sessionsLink(t, home.body, "/p/webapp"))
	sessionsHas(t, "project page", p.body, `<h1>webapp</h1>`, `href="/p/webapp/evidence"`, `href="/g/`+g.ID+`"`, "Pages under 1s", "24",
		`href="/s/`+noted.ID+`"`, "Slow pages", "1 todo", "1 question")
	rows := regexp.MustCompile(`<a href="/s/(ses_[^"]+)"><span class="ref">`).FindAllStringSubmatch(p.body, -1)
	if len(rows) != 20 || rows[0][1] != noted.ID || rows[1][1] != cache.ID {
		t.Fatalf("first page: %d rows, first %v; want 20, the newest activity first", len(rows), rows[:min(2, len(rows))])
	}
	// Page 2: the 4 oldest chores, and a link back.
	p2 := b.page(sessionsLink(t, p.body, "offset=20"))
	rows = regexp.MustCompile(`<a href="/s/(ses_[^"]+)"><span class="ref">`).FindAllStringSubmatch(p2.body, -1)
	if len(rows) != 4 || rows[3][1] != all[0].ID {
		t.Fatalf("second page: %d rows; want the 4 oldest", len(rows))
	}
	sessionsHas(t, "second page", p2.body, "21–24 of 24", "← Newer")
	sessionsLacks(t, "second page", p2.body, "Older →")

	// Search: a word of a title, of a note; with a lifecycle.
	for q, want := range map[string][]string{"cache": {noted.ID, cache.ID}, "IE11": {noted.ID}, "chore 07": {all[7].ID}, "nowhere": nil} {
		r := b.page("/p/webapp?" + url.Values{"q": {q}}.Encode())
		rows = regexp.MustCompile(`<a href="/s/(ses_[^"]+)"><span class="ref">`).FindAllStringSubmatch(r.body, -1)
		var got []string
		for _, m := range rows {
			got = append(got, m[1])
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("search %q: %v, want %v", q, got, want)
		}
		if len(want) > 0 {
			// Each found session links to its notes that match.
			sessionsLink(t, r.body, "/s/"+want[0]+"?"+url.Values{"q": {q}}.Encode()+"#timeline")
		}
	}
	closed := b.page("/p/webapp?lifecycle=closed")
	rows = regexp.MustCompile(`<a href="/s/(ses_[^"]+)"><span class="ref">`).FindAllStringSubmatch(closed.body, -1)
	if len(rows) != 1 || rows[0][1] != cache.ID {
		t.Errorf("closed sessions: %v", rows)
	}
	for _, bad := range []string{"?lifecycle=archived", "?offset=-1", "?offset=x", "?q=%21%21"} {
		if r := b.get("/p/webapp" + bad); r.StatusCode != http.StatusBadRequest {
			t.Errorf("GET /p/webapp%s: %d, want 400", bad, r.StatusCode)
		}
	}
	if r := b.get("/p/nosuch"); r.StatusCode != http.StatusNotFound {
		t.Errorf("unknown project: %d", r.StatusCode)
	}
}

// ---- GET /s/{session} ----

func TestDashboardSessionBrief(t *testing.T) { stores.Each(t, testDashboardSessionBrief) }

// testDashboardSessionBrief: the session page renders every section of
// the handoff brief for people — the current state, the instructions,
// constraints, decisions in force (superseded ones only counted), open
// work, answered pairs, the active goal, validation, next actions and the
// basis — and marks a cut section with the brief's own pointer.
func testDashboardSessionBrief(t *testing.T) {
	w := newSessionsWorld(t)
	ctx := t.Context()
	s := w.start(t, "Ship the parser", "port the parser to the new AST")
	if _, err := w.s.wf.WorkOnProject(ctx, w.ac, workflow.WorkOn{SessionID: s.ID, Instruction: "now fix the failing tests"}); err != nil {
		t.Fatal(err)
	}
	old := w.note(t, s.ID, continuo.KindDecision, "use a recursive descent parser")
	w.post(t, workflow.Post{SessionID: s.ID, Kind: continuo.KindDecision, Text: "use a Pratt parser", Supersedes: old.ID, Priority: continuo.PriorityHigh})
	for i := range 30 { // more than the brief reads: the section is cut
		w.note(t, s.ID, continuo.KindDecision, fmt.Sprintf("minor decision %d", i))
	}
	w.note(t, s.ID, continuo.KindGuidance, "never push to main")
	w.note(t, s.ID, continuo.KindTodo, "port the error messages")
	w.note(t, s.ID, continuo.KindRisk, "the grammar is ambiguous")
	q := w.note(t, s.ID, continuo.KindQuestion, "may we break the API?")
	open := w.note(t, s.ID, continuo.KindQuestion, "which Go version?")
	w.post(t, workflow.Post{SessionID: s.ID, Kind: continuo.KindAnswer, Text: "yes, in v2", ReplyTo: q.ID})
	w.note(t, s.ID, continuo.KindProgress, "lexer done")
	state := w.post(t, workflow.Post{SessionID: s.ID, Kind: continuo.KindProgress, Tags: []string{continuo.HandoffTag},
		Text: "Done: lexer, parser.\nDoing: errors.\nNext: tests.\nVerify: go test ./parser"})
	g := w.goal(t, s.ID, workflow.NewGoalInput{Title: "Parser on the new AST", Objective: "port it"}, "lex", "Lexer", "parse", "Parser")
	w.checkpoint(t, g, []string{"lex"}, "parse", "lexer done")
	h, err := w.s.wf.ReadHandoff(ctx, w.ac, s.ID, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Brief.Task.Decisions.Truncated {
		t.Fatal("the decisions are not cut: the test no longer tests the pointer")
	}

	b := w.s.browser(w.alice)
	r := b.page("/s/" + s.ID)
	body := r.body
	sessionsHas(t, "session page", body, "~s1 · Ship the parser", `href="/p/webapp"`,
		"Done: lexer, parser.\nDoing: errors.\nNext: tests.\nVerify: go test ./parser", `href="/s/`+s.ID+`/m/`+state.ID+`"`,
		"port the parser to the new AST", "now fix the failing tests", "never push to main", "port the error messages",
		"the grammar is ambiguous", "which Go version?", "may we break the API?", "yes, in v2", "lexer done",
		`href="/g/`+g.ID+`"`, "Parser on the new AST", "current step: <strong>Parser</strong>", "1 superseded",
		html.EscapeString(workflow.QuestionsNote))
	decisions := sessionsSection(t, body, "section", "brief-decisions")
	sessionsHas(t, "decisions", decisions, "use a Pratt parser", "badge-prio-high", "replaces <a class=\"mono\" href=\"/s/"+s.ID+"/m/"+old.ID+"\"",
		"24 of 31", "badge-cut", html.EscapeString(`read_session_working_set(session_id="~s1")`),
		html.EscapeString("/s/"+s.ID+"?kind=decision&status=open#timeline"))
	sessionsLacks(t, "decisions in force", decisions, "recursive descent")
	sessionsLacks(t, "open questions", sessionsSection(t, body, "section", "brief-open"), "may we break the API?")
	sessionsHas(t, "open questions", sessionsSection(t, body, "section", "brief-open"), `href="/s/`+s.ID+`/m/`+open.ID+`"`)
	for _, a := range h.Brief.NextActions {
		sessionsHas(t, "next actions", sessionsSection(t, body, "section", "brief-next"), html.EscapeString(a))
	}
	sessionsHas(t, "basis", body, fmt.Sprintf("session revision %d", h.Brief.Basis.SessionRevision))
	sessionsHas(t, "validation", sessionsSection(t, body, "section", "brief-validation"), "no named checks")
}
