package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

func messageTests() []test {
	return []test{
		{"InsertGet", testMessageInsertGet},
		{"GetWrongSession", testMessageGetWrongSession},
		{"Missing", testMessageMissing},
		{"Duplicate", testMessageDuplicate},
		{"Tags", testMessageTags},
		{"Update", testMessageUpdate},
		{"UpdateMissing", testMessageUpdateMissing},
		{"UpdateGuard", testMessageUpdateGuard},
	}
}

func getMessage(t *testing.T, s store.Store, sessionID, id string) *continuo.Message {
	t.Helper()
	return mustGet(t, s, "MessageGet", func(tx store.Tx) (*continuo.Message, error) { return tx.MessageGet(t.Context(), sessionID, id) })
}

func testMessageInsertGet(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	q := Message(t, s, f.Session.ID, 1, continuo.KindQuestion)
	resolved := Base.Add(time.Hour + 42*time.Millisecond)
	want := &continuo.Message{
		ID:           continuo.NewID(continuo.PrefixMessage, Base),
		SessionID:    f.Session.ID,
		Seq:          2,
		Kind:         continuo.KindAnswer,
		Text:         "yes — because\n\"it works\" ✓",
		Status:       continuo.StatusResolved,
		Priority:     continuo.PriorityHigh,
		Tags:         []string{"api", "b c", "ü"},
		ReplyTo:      q.ID,
		Supersedes:   continuo.NewID(continuo.PrefixMessage, Base),
		SupersededBy: continuo.NewID(continuo.PrefixMessage, Base),
		Resolution:   "done",
		ResolvedBy:   continuo.NewID(continuo.PrefixMessage, Base),
		Author:       "alice via dashboard",
		Resolver:     "bob",
		CreatedAt:    Base.Add(time.Minute + 5*time.Millisecond),
		ResolvedAt:   &resolved,
	}
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.MessageCreate(ctx, want); err != nil {
			return err
		}
		got, err := tx.MessageGet(ctx, f.Session.ID, want.ID)
		if err != nil {
			return fmt.Errorf("MessageGet inside the inserting Write: %w", err)
		}
		same(t, "MessageGet inside the inserting Write", *got, *want, normMessage)
		return nil
	})
	same(t, "MessageGet", *getMessage(t, s, f.Session.ID, want.ID), *want, normMessage)

	got := getMessage(t, s, f.Session.ID, q.ID)
	same(t, "MessageGet of a plain message", *got, *q, normMessage)
	if got.ResolvedAt != nil {
		t.Errorf("ResolvedAt of an open message = %s, want nil", showTime(got.ResolvedAt))
	}
}

func testMessageGetWrongSession(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	other := Session(t, s, f.Group.ID, f.Project.ID, "other")
	m := Message(t, s, f.Session.ID, 1, continuo.KindNote)
	_, err := read(t, s, func(tx store.Tx) (*continuo.Message, error) { return tx.MessageGet(ctx, other.ID, m.ID) })
	wantErr(t, err, store.ErrNotFound, "MessageGet with another session's ID")
	_, err = read(t, s, func(tx store.Tx) (*continuo.Message, error) {
		return tx.MessageGet(ctx, continuo.NewID(continuo.PrefixSession, Base), m.ID)
	})
	wantErr(t, err, store.ErrNotFound, "MessageGet with an unknown session ID")
}

func testMessageMissing(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	Message(t, s, f.Session.ID, 1, continuo.KindNote)
	_, err := read(t, s, func(tx store.Tx) (*continuo.Message, error) {
		return tx.MessageGet(ctx, f.Session.ID, continuo.NewID(continuo.PrefixMessage, Base))
	})
	wantErr(t, err, store.ErrNotFound, "MessageGet of an unknown ID")
}

func testMessageDuplicate(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	other := Session(t, s, f.Group.ID, f.Project.ID, "other")
	first := Message(t, s, f.Session.ID, 1, continuo.KindNote)

	dupSeq := NewMessage(f.Session.ID, 1, continuo.KindTodo, "same seq")
	err := s.Write(ctx, func(tx store.Tx) error { return tx.MessageCreate(ctx, dupSeq) })
	wantErr(t, err, store.ErrConflict, "MessageCreate with a seq the session already has")

	dupID := NewMessage(f.Session.ID, 2, continuo.KindTodo, "same id")
	dupID.ID = first.ID
	err = s.Write(ctx, func(tx store.Tx) error { return tx.MessageCreate(ctx, dupID) })
	wantErr(t, err, store.ErrConflict, "MessageCreate with a taken ID")

	// The same seq in another session is fine.
	elsewhere := Message(t, s, other.ID, 1, continuo.KindNote)
	same(t, "message 1 of the other session", *getMessage(t, s, other.ID, elsewhere.ID), *elsewhere, normMessage)
	same(t, "message 1 after the refused duplicates", *getMessage(t, s, f.Session.ID, first.ID), *first, normMessage)
	n := mustGet(t, s, "MessageCount", func(tx store.Tx) (int64, error) {
		return tx.MessageCount(ctx, store.MessageListParams{SessionID: f.Session.ID})
	})
	if n != 1 {
		t.Errorf("MessageCount after the refused duplicates = %d, want 1", n)
	}
}

func testMessageTags(t *testing.T, s store.Store) {
	f := Setup(t, s, "alpha")
	cases := []struct {
		name string
		tags []string
	}{
		{"Nil", nil},
		{"Empty", []string{}},
		{"One", []string{"x"}},
		{"Several", []string{"zeta", "alpha", "with space", "ü", `q"uote`, "zeta2"}},
	}
	for i, c := range cases {
		m := Message(t, s, f.Session.ID, int64(i+1), continuo.KindNote, func(m *continuo.Message) { m.Tags = c.tags })
		got := getMessage(t, s, f.Session.ID, m.ID)
		if len(c.tags) == 0 {
			if len(got.Tags) != 0 {
				t.Errorf("%s tags came back as %q, want empty", c.name, got.Tags)
			}
		} else if !slices.Equal(got.Tags, c.tags) {
			t.Errorf("%s tags came back as %q, want %q (order kept)", c.name, got.Tags, c.tags)
		}
	}
}

func testMessageUpdate(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	todo := Message(t, s, f.Session.ID, 1, continuo.KindTodo, func(m *continuo.Message) { m.Tags = []string{"t"} })
	bystander := Message(t, s, f.Session.ID, 2, continuo.KindTodo)

	// Resolve.
	resolved := *todo
	at := Base.Add(2*time.Hour + 17*time.Millisecond)
	resolved.Status, resolved.Resolution, resolved.ResolvedAt = continuo.StatusResolved, "fixed in abc123", &at
	resolved.ResolvedBy, resolved.Resolver = bystander.ID, "carol via dashboard"
	MustWrite(t, s, func(tx store.Tx) error { return tx.MessageUpdate(ctx, &resolved, continuo.StatusOpen) })
	same(t, "resolved message", *getMessage(t, s, f.Session.ID, todo.ID), resolved, normMessage)

	// Supersede; the update writes only status, superseded_by, resolution,
	// resolved_at, resolved_by and resolver, whatever else the struct says.
	sup := resolved
	sup.Status = continuo.StatusSuperseded
	sup.SupersededBy = bystander.ID
	sup.Resolution = ""
	sup.ResolvedAt = nil
	sup.ResolvedBy, sup.Resolver = "", ""
	sup.Text, sup.Kind, sup.Priority, sup.Tags = "changed", continuo.KindRisk, continuo.PriorityLow, []string{"changed"}
	sup.CreatedAt = Base.Add(99 * time.Hour)
	MustWrite(t, s, func(tx store.Tx) error { return tx.MessageUpdate(ctx, &sup, continuo.StatusResolved) })
	want := resolved
	want.Status, want.SupersededBy, want.Resolution, want.ResolvedAt = continuo.StatusSuperseded, bystander.ID, "", nil
	want.ResolvedBy, want.Resolver = "", ""
	same(t, "superseded message", *getMessage(t, s, f.Session.ID, todo.ID), want, normMessage)

	same(t, "the other message", *getMessage(t, s, f.Session.ID, bystander.ID), *bystander, normMessage)
}

func testMessageUpdateMissing(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	other := Session(t, s, f.Group.ID, f.Project.ID, "other")
	m := Message(t, s, f.Session.ID, 1, continuo.KindTodo)

	wrong := *m
	wrong.SessionID = other.ID
	wrong.Status = continuo.StatusSuperseded
	err := s.Write(ctx, func(tx store.Tx) error { return tx.MessageUpdate(ctx, &wrong, continuo.StatusOpen) })
	wantErr(t, err, store.ErrStale, "MessageUpdate with another session's ID")
	same(t, "message after the refused update", *getMessage(t, s, f.Session.ID, m.ID), *m, normMessage)

	ghost := NewMessage(f.Session.ID, 2, continuo.KindTodo, "ghost")
	err = s.Write(ctx, func(tx store.Tx) error { return tx.MessageUpdate(ctx, ghost, continuo.StatusOpen) })
	wantErr(t, err, store.ErrStale, "MessageUpdate of an unknown message")
}

// testMessageUpdateGuard: an update names the status it read; when the
// message moved on meanwhile (another Write resolved or superseded it), the
// update changes nothing and says ErrStale.
func testMessageUpdateGuard(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	m := Message(t, s, f.Session.ID, 1, continuo.KindTodo)
	at := Base.Add(time.Hour)
	first := *m
	first.Status, first.Resolution, first.ResolvedAt = continuo.StatusResolved, "one", &at
	MustWrite(t, s, func(tx store.Tx) error { return tx.MessageUpdate(ctx, &first, continuo.StatusOpen) })
	late := *m
	late.Status, late.SupersededBy = continuo.StatusSuperseded, NewMessage(f.Session.ID, 2, continuo.KindTodo, "x").ID
	err := s.Write(ctx, func(tx store.Tx) error { return tx.MessageUpdate(ctx, &late, continuo.StatusOpen) })
	wantErr(t, err, store.ErrStale, "MessageUpdate guarded by a status the message no longer has")
	same(t, "message after the refused update", *getMessage(t, s, f.Session.ID, m.ID), first, normMessage)
}

func messageListTests() []test {
	return []test{
		{"NewestFirst", testMessageListNewestFirst},
		{"Filters", testMessageListFilters},
		{"Limit", testMessageListLimit},
		{"BeforeSeqPaging", testMessageListPaging},
		{"Count", testMessageCount},
		{"Isolation", testMessageListIsolation},
		{"ByPriority", testMessageListByPriority},
		{"Handoff", testMessageListHandoff},
		{"Corrections", testMessageListCorrections},
		{"IDs", testMessageListIDs},
	}
}

// msgWorld is one session with messages of every kind and status, and a
// second session with messages of its own.
type msgWorld struct {
	f     *Fixture
	other *continuo.Session
	all   []continuo.Message // of f.Session, by seq ascending
}

const msgWorldSize = 24

func newMsgWorld(t *testing.T, s store.Store) *msgWorld {
	t.Helper()
	ctx := t.Context()
	w := &msgWorld{f: Setup(t, s, "alpha")}
	w.other = Session(t, s, w.f.Group.ID, w.f.Project.ID, "other")
	kinds := continuo.Kinds()
	MustWrite(t, s, func(tx store.Tx) error {
		for seq := int64(1); seq <= msgWorldSize; seq++ {
			m := NewMessage(w.f.Session.ID, seq, kinds[int(seq)%len(kinds)], fmt.Sprintf("message %d", seq))
			switch {
			case seq%5 == 0:
				m.Status = continuo.StatusSuperseded
			case seq%3 == 0:
				m.Status = continuo.StatusResolved
				at := m.CreatedAt.Add(time.Minute)
				m.ResolvedAt = &at
			}
			m.Priority = []continuo.Priority{continuo.PriorityLow, continuo.PriorityNormal, continuo.PriorityHigh}[seq%3]
			if seq%4 == 0 {
				m.Tags = []string{"t" + fmt.Sprint(seq)}
			}
			if seq%16 == 1 || seq == 2 { // progress 1 and 17 are handoff notes; todo 2 only carries the tag
				m.Tags = []string{"x", continuo.HandoffTag}
			}
			if seq%4 == 0 { // corrections (decisions 8 and 16 in force): each supersedes the message before it
				m.Supersedes = w.all[len(w.all)-1].ID
			}
			if err := tx.MessageCreate(ctx, m); err != nil {
				return err
			}
			w.all = append(w.all, *m)
		}
		// The other session's messages share seqs and kinds.
		for seq := int64(1); seq <= 5; seq++ {
			if err := tx.MessageCreate(ctx, NewMessage(w.other.ID, seq, kinds[int(seq)%len(kinds)], "elsewhere")); err != nil {
				return err
			}
		}
		return nil
	})
	return w
}

// want returns the messages matching p's filters, newest first (ignoring
// BeforeSeq and Limit).
func (w *msgWorld) want(p store.MessageListParams) []continuo.Message {
	var out []continuo.Message
	for _, m := range slices.Backward(w.all) {
		if (len(p.Kinds) == 0 || slices.Contains(p.Kinds, m.Kind)) && (len(p.Statuses) == 0 || slices.Contains(p.Statuses, m.Status)) &&
			(!p.Handoff || m.Handoff()) && (!p.Corrections || m.Supersedes != "") && (len(p.IDs) == 0 || slices.Contains(p.IDs, m.ID)) {
			out = append(out, m)
		}
	}
	return out
}

// filters are the filter combinations every list test walks.
func (w *msgWorld) filters() map[string]store.MessageListParams {
	id := w.f.Session.ID
	return map[string]store.MessageListParams{
		"All":           {SessionID: id},
		"OneKind":       {SessionID: id, Kinds: []continuo.Kind{continuo.KindTodo}},
		"Kinds":         {SessionID: id, Kinds: []continuo.Kind{continuo.KindQuestion, continuo.KindDecision, continuo.KindRisk}},
		"OneStatus":     {SessionID: id, Statuses: []continuo.Status{continuo.StatusOpen}},
		"Statuses":      {SessionID: id, Statuses: []continuo.Status{continuo.StatusResolved, continuo.StatusSuperseded}},
		"KindsStatuses": {SessionID: id, Kinds: []continuo.Kind{continuo.KindTodo, continuo.KindNote, continuo.KindProgress}, Statuses: []continuo.Status{continuo.StatusOpen}},
		"NoMatch":       {SessionID: id, Kinds: []continuo.Kind{continuo.KindAnswer}, Statuses: []continuo.Status{continuo.StatusResolved}},
	}
}

func listMessages(t *testing.T, s store.Store, p store.MessageListParams) []continuo.Message {
	t.Helper()
	return mustGet(t, s, "MessageList", func(tx store.Tx) ([]continuo.Message, error) { return tx.MessageList(t.Context(), p) })
}

func testMessageListNewestFirst(t *testing.T, s store.Store) {
	w := newMsgWorld(t, s)
	got := listMessages(t, s, store.MessageListParams{SessionID: w.f.Session.ID, Limit: 1000})
	sameList(t, "MessageList (seq desc)", got, w.want(store.MessageListParams{}), normMessage)
}

func testMessageListFilters(t *testing.T, s store.Store) {
	w := newMsgWorld(t, s)
	for name, p := range w.filters() {
		p.Limit = 1000
		want := w.want(p)
		if name == "NoMatch" && len(want) != 0 {
			t.Fatalf("fixture: NoMatch matches %d messages", len(want))
		}
		if name != "NoMatch" && len(want) == 0 {
			t.Fatalf("fixture: %s matches nothing", name)
		}
		sameList(t, "MessageList "+name, listMessages(t, s, p), want, normMessage)
	}
}

func testMessageListLimit(t *testing.T, s store.Store) {
	w := newMsgWorld(t, s)
	for name, p := range w.filters() {
		want := w.want(p)
		for _, limit := range []int{1, 2, 5, len(want), len(want) + 1} {
			if limit <= 0 {
				continue
			}
			p.Limit = limit
			sameList(t, fmt.Sprintf("MessageList %s limit %d", name, limit), listMessages(t, s, p), want[:min(limit, len(want))], normMessage)
		}
	}
}

// testMessageListPaging walks every filter with a BeforeSeq cursor, the way
// clients page: every matching message is seen exactly once, newest first.
func testMessageListPaging(t *testing.T, s store.Store) {
	w := newMsgWorld(t, s)
	for name, p := range w.filters() {
		want := w.want(p)
		for _, size := range []int{1, 3, 7} {
			var seen []continuo.Message
			q := p
			q.Limit = size
			for pages := 0; ; pages++ {
				if pages > msgWorldSize+1 {
					t.Fatalf("%s, pages of %d: paging does not end", name, size)
				}
				page := listMessages(t, s, q)
				if len(page) > size {
					t.Fatalf("%s, pages of %d: a page holds %d messages", name, size, len(page))
				}
				seen = append(seen, page...)
				if len(page) < size {
					break
				}
				q.BeforeSeq = page[len(page)-1].Seq
			}
			sameList(t, fmt.Sprintf("%s walked in pages of %d", name, size), seen, want, normMessage)
		}
	}
	// A cursor in the middle: only older messages.
	p := store.MessageListParams{SessionID: w.f.Session.ID, BeforeSeq: 10, Limit: 1000}
	got := listMessages(t, s, p)
	if len(got) != 9 || got[0].Seq != 9 || got[len(got)-1].Seq != 1 {
		t.Errorf("BeforeSeq 10: got %d messages from seq %d, want seqs 9…1", len(got), firstSeq(got))
	}
	p.BeforeSeq = 1
	if got := listMessages(t, s, p); len(got) != 0 {
		t.Errorf("BeforeSeq 1: got %d messages, want none", len(got))
	}
}

func firstSeq(ms []continuo.Message) int64 {
	if len(ms) == 0 {
		return 0
	}
	return ms[0].Seq
}

// testMessageCount checks MessageCount against the same filters. A count
// ignores BeforeSeq and Limit: it is the total of matching messages.
func testMessageCount(t *testing.T, s store.Store) {
	ctx := t.Context()
	w := newMsgWorld(t, s)
	count := func(p store.MessageListParams) int64 {
		t.Helper()
		return mustGet(t, s, "MessageCount", func(tx store.Tx) (int64, error) { return tx.MessageCount(ctx, p) })
	}
	for name, p := range w.filters() {
		want := int64(len(w.want(p)))
		if got := count(p); got != want {
			t.Errorf("MessageCount %s = %d, want %d", name, got, want)
		}
		p.BeforeSeq, p.Limit = 5, 2
		if got := count(p); got != want {
			t.Errorf("MessageCount %s with BeforeSeq and Limit = %d, want %d (they do not narrow a count)", name, got, want)
		}
	}
	if got := count(store.MessageListParams{SessionID: w.other.ID}); got != 5 {
		t.Errorf("MessageCount of the other session = %d, want 5", got)
	}
	if got := count(store.MessageListParams{SessionID: continuo.NewID(continuo.PrefixSession, Base)}); got != 0 {
		t.Errorf("MessageCount of an unknown session = %d, want 0", got)
	}
}

func testMessageListIsolation(t *testing.T, s store.Store) {
	w := newMsgWorld(t, s)
	got := listMessages(t, s, store.MessageListParams{SessionID: w.other.ID, Limit: 1000})
	if len(got) != 5 {
		t.Fatalf("MessageList of the other session: %d messages, want 5", len(got))
	}
	for i, m := range got {
		if m.SessionID != w.other.ID || m.Text != "elsewhere" || m.Seq != int64(5-i) {
			t.Errorf("MessageList of the other session [%d] = seq %d of %s (%q), want seq %d of %s",
				i, m.Seq, m.SessionID, m.Text, 5-i, w.other.ID)
		}
	}
	if got := listMessages(t, s, store.MessageListParams{SessionID: continuo.NewID(continuo.PrefixSession, Base), Limit: 10}); len(got) != 0 {
		t.Errorf("MessageList of an unknown session: %d messages, want none", len(got))
	}
}

// testMessageListByPriority: high first, then normal, then low, each newest
// first, for every filter and limit (the brief's decisions in force and
// open items, served by the messages_rank index).
func testMessageListByPriority(t *testing.T, s store.Store) {
	w := newMsgWorld(t, s)
	for name, p := range w.filters() {
		want := w.want(p)
		slices.SortStableFunc(want, func(a, b continuo.Message) int { return b.Priority.Rank() - a.Priority.Rank() })
		p.ByPriority = true
		for _, limit := range []int{1, 3, len(want) + 1} {
			p.Limit = limit
			sameList(t, fmt.Sprintf("MessageList ByPriority %s limit %d", name, limit), listMessages(t, s, p), want[:min(limit, len(want))], normMessage)
		}
	}
}

// testMessageListHandoff: only progress messages tagged handoff match, newest
// first, and they count.
func testMessageListHandoff(t *testing.T, s store.Store) {
	w := newMsgWorld(t, s)
	p := store.MessageListParams{SessionID: w.f.Session.ID, Handoff: true, Limit: 10}
	want := w.want(p)
	if len(want) != 2 || want[0].Seq != 17 || want[1].Seq != 1 {
		t.Fatalf("fixture: handoff notes are %v, want seqs 17 and 1", want)
	}
	sameList(t, "MessageList Handoff", listMessages(t, s, p), want, normMessage)
	p.Limit = 1
	sameList(t, "MessageList Handoff limit 1", listMessages(t, s, p), want[:1], normMessage)
	p.Kinds = []continuo.Kind{continuo.KindProgress}
	sameList(t, "MessageList Handoff progress limit 1", listMessages(t, s, p), want[:1], normMessage)
	n := mustGet(t, s, "MessageCount", func(tx store.Tx) (int64, error) { return tx.MessageCount(t.Context(), p) })
	if n != 2 {
		t.Errorf("MessageCount Handoff = %d, want 2", n)
	}
}

// testMessageListCorrections: only messages that supersede another match,
// newest first, for every filter and limit, and they count (the brief's
// corrections in force, served by the messages_corrections index).
func testMessageListCorrections(t *testing.T, s store.Store) {
	w := newMsgWorld(t, s)
	decisions := store.MessageListParams{SessionID: w.f.Session.ID, Kinds: []continuo.Kind{continuo.KindDecision},
		Statuses: []continuo.Status{continuo.StatusOpen}, Corrections: true}
	if want := w.want(decisions); len(want) == 0 {
		t.Fatal("fixture: no decision in force corrects another")
	}
	for name, p := range w.filters() {
		p.Corrections = true
		want := w.want(p)
		for _, limit := range []int{1, 2, len(want) + 1} {
			p.Limit = limit
			sameList(t, fmt.Sprintf("MessageList Corrections %s limit %d", name, limit), listMessages(t, s, p), want[:min(limit, len(want))], normMessage)
		}
		n := mustGet(t, s, "MessageCount", func(tx store.Tx) (int64, error) { return tx.MessageCount(t.Context(), p) })
		if n != int64(len(want)) {
			t.Errorf("MessageCount Corrections %s = %d, want %d", name, n, len(want))
		}
	}
	decisions.Limit = 10
	for _, m := range listMessages(t, s, decisions) {
		if m.Supersedes == "" || m.Kind != continuo.KindDecision || m.Status != continuo.StatusOpen {
			t.Errorf("a correction in force listed: %+v", m)
		}
	}
}

// testMessageListIDs: only the messages named match, of this session only,
// newest first, with the other filters; unknown ids match nothing.
func testMessageListIDs(t *testing.T, s store.Store) {
	w := newMsgWorld(t, s)
	ids := []string{w.all[3].ID, w.all[17].ID, w.all[8].ID, w.all[0].ID, continuo.NewID(continuo.PrefixMessage, Base)}
	for name, p := range w.filters() {
		p.IDs, p.Limit = ids, 100
		sameList(t, "MessageList IDs "+name, listMessages(t, s, p), w.want(p), normMessage)
	}
	other := listMessages(t, s, store.MessageListParams{SessionID: w.other.ID, Limit: 10})
	p := store.MessageListParams{SessionID: w.f.Session.ID, IDs: []string{other[0].ID}, Limit: 10}
	if got := listMessages(t, s, p); len(got) != 0 {
		t.Errorf("MessageList IDs found another session's message: %v", got)
	}
	p = store.MessageListParams{SessionID: w.f.Session.ID, IDs: ids, Limit: 2}
	if got := listMessages(t, s, p); len(got) != 2 || got[0].ID != w.all[17].ID || got[1].ID != w.all[8].ID {
		t.Errorf("MessageList IDs limit 2: %v, want the newest two", got)
	}
}
