package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// EntryList: a session's listing merges messages with instructions, in
// store.EntryKey order, and finds entries by words (store/search.go).

func entryTests() []test {
	return []test{
		{"Order", testEntryOrder},
		{"Paging", testEntryPaging},
		{"Query", testEntryQuery},
		{"Secret", testEntrySecret},
		{"Isolation", testEntryIsolation},
		{"SameAsMessage", testEntrySameAsMessage},
	}
}

// entryWorld is one session: instruction 1 before any message, messages
// 1..3, instruction 2, messages 4..6, instruction 3; and a second session
// with the same words.
type entryWorld struct {
	f     *Fixture
	other *continuo.Session
	all   []string // labels, oldest first: "i1", "m1", …
}

var entryTexts = map[string]struct {
	kind   continuo.Kind
	status continuo.Status
	text   string
}{
	"i1": {continuo.KindInstruction, continuo.StatusOpen, "Port the Parser to the new AST."},
	"m1": {continuo.KindNote, continuo.StatusOpen, "Fix the PARSER: handle UTF-8 input"},
	"m2": {continuo.KindTodo, continuo.StatusOpen, "parser tests are failing"},
	"m3": {continuo.KindProgress, continuo.StatusResolved, "What remains: docs, bench."},
	"i2": {continuo.KindInstruction, continuo.StatusOpen, "Now fix the failing tests"},
	"m4": {continuo.KindNote, continuo.StatusSuperseded, "naïve café résumé"},
	"m5": {continuo.KindTodo, continuo.StatusResolved, "send e-mail to foo_bar about x.y"},
	"m6": {continuo.KindNote, continuo.StatusOpen, "the key AKIAIOSFODNN7EXAMPLE leaked"},
	"i3": {continuo.KindInstruction, continuo.StatusOpen, "what remains? ship it"},
}

func newEntryWorld(t *testing.T, s store.Store) *entryWorld {
	t.Helper()
	ctx := t.Context()
	w := &entryWorld{f: Setup(t, s, "entries"), all: []string{"i1", "m1", "m2", "m3", "i2", "m4", "m5", "m6", "i3"}}
	w.other = Session(t, s, w.f.Group.ID, w.f.Project.ID, "other")
	for _, sid := range []string{w.f.Session.ID, w.other.ID} {
		var seq, ins int64
		for i, label := range w.all {
			e := entryTexts[label]
			at := Base.Add(time.Duration(i) * time.Second)
			MustWrite(t, s, func(tx store.Tx) error {
				if e.kind == continuo.KindInstruction {
					ins++
					return tx.InstructionAppend(ctx, store.Instruction{SessionID: sid, Seq: ins, AfterSeq: seq, Text: e.text, CreatedAt: at})
				}
				seq++
				m := NewMessage(sid, seq, e.kind, e.text)
				m.Status, m.CreatedAt = e.status, at
				return tx.MessageCreate(ctx, m)
			})
		}
	}
	return w
}

// label names an entry by its kind and seq.
func label(e store.Entry) string {
	if e.Kind == continuo.KindInstruction {
		return fmt.Sprintf("i%d", e.Seq)
	}
	return fmt.Sprintf("m%d", e.Seq)
}

func (w *entryWorld) list(t *testing.T, s store.Store, p store.EntryListParams) ([]string, int64) {
	t.Helper()
	if p.SessionID == "" {
		p.SessionID = w.f.Session.ID
	}
	if p.Limit == 0 {
		p.Limit = 100
	}
	var got []string
	var n int64
	MustRead(t, s, func(tx store.Tx) error {
		es, err := tx.EntryList(t.Context(), p)
		if err != nil {
			return fmt.Errorf("EntryList: %w", err)
		}
		got = nil
		for _, e := range es {
			if e.SessionID != p.SessionID {
				t.Errorf("entry %s of session %s in the listing of %s", label(e), e.SessionID, p.SessionID)
			}
			got = append(got, label(e))
			if want := entryTexts[label(e)]; e.Text != want.text || e.Kind != want.kind || e.Status != want.status {
				t.Errorf("%s = %s/%s %q, want %s/%s %q", label(e), e.Kind, e.Status, e.Text, want.kind, want.status, want.text)
			}
		}
		if n, err = tx.EntryCount(t.Context(), p); err != nil {
			return fmt.Errorf("EntryCount: %w", err)
		}
		return nil
	})
	return got, n
}

func reversed(xs []string) []string { ys := slices.Clone(xs); slices.Reverse(ys); return ys }

func testEntryOrder(t *testing.T, s store.Store) {
	w := newEntryWorld(t, s)
	got, n := w.list(t, s, store.EntryListParams{Oldest: true})
	if !slices.Equal(got, w.all) || n != 9 {
		t.Errorf("oldest first: %v (count %d), want %v (9)", got, n, w.all)
	}
	got, n = w.list(t, s, store.EntryListParams{})
	if !slices.Equal(got, reversed(w.all)) || n != 9 {
		t.Errorf("newest first: %v (count %d), want %v (9)", got, n, reversed(w.all))
	}
	got, _ = w.list(t, s, store.EntryListParams{Limit: 3})
	if want := []string{"i3", "m6", "m5"}; !slices.Equal(got, want) {
		t.Errorf("newest 3: %v, want %v", got, want)
	}
	got, _ = w.list(t, s, store.EntryListParams{Limit: 3, Oldest: true})
	if want := []string{"i1", "m1", "m2"}; !slices.Equal(got, want) {
		t.Errorf("oldest 3: %v, want %v", got, want)
	}
}

// Every page size, both orders, every filter: keyset paging from each
// entry's key visits what follows it, once.
func testEntryPaging(t *testing.T, s store.Store) {
	w := newEntryWorld(t, s)
	for _, base := range []store.EntryListParams{{}, {Kinds: []continuo.Kind{continuo.KindInstruction}},
		{Kinds: []continuo.Kind{continuo.KindNote, continuo.KindInstruction}}, {Statuses: []continuo.Status{continuo.StatusOpen}},
		{Words: []string{"parser"}}, {Kinds: []continuo.Kind{continuo.KindTodo}}} {
		for _, oldest := range []bool{false, true} {
			p := base
			p.Oldest, p.SessionID = oldest, w.f.Session.ID
			full, count := w.list(t, s, p)
			if int64(len(full)) != count {
				t.Errorf("%+v: %d listed, count %d", p, len(full), count)
			}
			for limit := 1; limit <= 4; limit++ {
				p.Limit, p.After = limit, nil
				var seen []string
				for range 20 {
					var page []store.Entry
					MustRead(t, s, func(tx store.Tx) error {
						var err error
						page, err = tx.EntryList(t.Context(), p)
						return err
					})
					for _, e := range page {
						seen = append(seen, label(e))
					}
					if len(page) < limit {
						break
					}
					k := page[len(page)-1].Key
					p.After = &k
				}
				if !slices.Equal(seen, full) {
					t.Errorf("%+v limit %d: pages %v, want %v", base, limit, seen, full)
				}
			}
		}
	}
}

func testEntryQuery(t *testing.T, s store.Store) {
	w := newEntryWorld(t, s)
	instr := []continuo.Kind{continuo.KindInstruction}
	for _, c := range []struct {
		query  string
		kinds  []continuo.Kind
		status []continuo.Status
		want   []string // newest first
	}{
		{query: "parser", want: []string{"m2", "m1", "i1"}},
		{query: "PaRsEr", want: []string{"m2", "m1", "i1"}},    // case-insensitive, both sides
		{query: "parser failing", want: []string{"m2"}},        // every word must match
		{query: "failing parser", want: []string{"m2"}},        // in any order
		{query: "tests failing", want: []string{"i2", "m2"}},   // an instruction among messages
		{query: "what remains", want: []string{"i3", "m3"}},    // punctuation in the text
		{query: "remains?!", want: []string{"i3", "m3"}},       // punctuation in the query
		{query: "pars", want: nil},                             // whole words, no prefixes
		{query: "parsers", want: nil},                          // no stemming
		{query: "the", want: []string{"m6", "i2", "m1", "i1"}}, // no stop words
		{query: "utf 8", want: []string{"m1"}},                 // "UTF-8" is two words
		{query: "utf-8", want: []string{"m1"}},
		{query: "foo_bar", want: []string{"m5"}}, // "_" splits words
		{query: "bar", want: []string{"m5"}},
		{query: "x.y", want: []string{"m5"}},
		{query: "CAFÉ", want: []string{"m4"}}, // Unicode case folding
		{query: "cafe", want: nil},            // no diacritic folding
		{query: "naïve résumé", want: []string{"m4"}},
		{query: "absent", want: nil},
		{query: "parser absent", want: nil},
		{query: "parser", kinds: []continuo.Kind{continuo.KindTodo}, want: []string{"m2"}},
		{query: "parser", kinds: instr, want: []string{"i1"}},
		{query: "parser", kinds: []continuo.Kind{continuo.KindNote, continuo.KindInstruction}, want: []string{"m1", "i1"}},
		{query: "parser", status: []continuo.Status{continuo.StatusOpen}, want: []string{"m2", "m1", "i1"}},
		{query: "remains", status: []continuo.Status{continuo.StatusResolved}, want: []string{"m3"}},
		{query: "remains", kinds: instr, status: []continuo.Status{continuo.StatusResolved}, want: nil},
	} {
		p := store.EntryListParams{Words: store.SearchWords(c.query), Kinds: c.kinds, Statuses: c.status}
		got, n := w.list(t, s, p)
		if !slices.Equal(got, c.want) || n != int64(len(c.want)) {
			t.Errorf("query %q kinds %v status %v: %v (count %d), want %v", c.query, c.kinds, c.status, got, n, c.want)
		}
		p.Oldest = true
		if got, _ := w.list(t, s, p); !slices.Equal(got, reversed(c.want)) {
			t.Errorf("query %q oldest first: %v, want %v", c.query, got, reversed(c.want))
		}
	}
}

// The index holds what a model reads: a redacted secret is not found by
// its text, only by the placeholder's word.
func testEntrySecret(t *testing.T, s store.Store) {
	w := newEntryWorld(t, s)
	for _, q := range []string{"AKIAIOSFODNN7EXAMPLE", "akiaiosfodnn7example"} {
		if got, n := w.list(t, s, store.EntryListParams{Words: store.SearchWords(q)}); len(got) != 0 || n != 0 {
			t.Errorf("query %q found %v (count %d): the secret is searchable", q, got, n)
		}
	}
	if got, _ := w.list(t, s, store.EntryListParams{Words: []string{"redacted"}}); !slices.Equal(got, []string{"m6"}) {
		t.Errorf(`query "redacted": %v, want [m6]`, got)
	}
	if got, _ := w.list(t, s, store.EntryListParams{Words: []string{"key", "leaked"}}); !slices.Equal(got, []string{"m6"}) {
		t.Errorf(`query "key leaked": %v, want [m6]`, got)
	}
	if !strings.Contains(entryTexts["m6"].text, "AKIA") {
		t.Fatal("the stored text lost its secret: the test no longer tests anything")
	}
}

func testEntryIsolation(t *testing.T, s store.Store) {
	w := newEntryWorld(t, s)
	got, n := w.list(t, s, store.EntryListParams{SessionID: w.other.ID, Words: []string{"parser"}})
	if !slices.Equal(got, []string{"m2", "m1", "i1"}) || n != 3 {
		t.Errorf("other session: %v (count %d)", got, n)
	}
	none := Session(t, s, w.f.Group.ID, w.f.Project.ID, "empty")
	got, n = w.list(t, s, store.EntryListParams{SessionID: none.ID})
	if len(got) != 0 || n != 0 {
		t.Errorf("empty session: %v (count %d)", got, n)
	}
}

// testEntrySameAsMessage: a listed message carries every field MessageGet
// returns (a resolved question with its resolution and the answer that
// resolved it included).
func testEntrySameAsMessage(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	at := Base.Add(time.Minute)
	q := Message(t, s, f.Session.ID, 1, continuo.KindQuestion, func(m *continuo.Message) {
		m.Status, m.Resolution, m.ResolvedAt, m.ResolvedBy, m.Tags = continuo.StatusResolved, "no", &at, "msg_answer", []string{"a", "b"}
		m.Author, m.Resolver = "alice", "bob via dashboard"
	})
	entries := mustGet(t, s, "EntryList", func(tx store.Tx) ([]store.Entry, error) {
		return tx.EntryList(ctx, store.EntryListParams{SessionID: f.Session.ID, Kinds: []continuo.Kind{continuo.KindQuestion}, Limit: 10})
	})
	if len(entries) != 1 {
		t.Fatalf("EntryList: %d entries, want 1", len(entries))
	}
	same(t, "listed message", entries[0].Message, *getMessage(t, s, f.Session.ID, q.ID), normMessage)
}
