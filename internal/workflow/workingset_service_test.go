package workflow_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/workflow"
)

// workingPages reads every page of a session's working set.
func (f *fixture) workingPages(t testing.TB, sid string) []*workflow.WorkingSet {
	t.Helper()
	var out []*workflow.WorkingSet
	cursor := ""
	for len(out) < 100 {
		p, err := f.wf.ReadWorkingSet(f.ctx, f.caller, sid, cursor)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
		if p.NextCursor == nil {
			return out
		}
		cursor = *p.NextCursor
	}
	t.Fatal("the working set does not end")
	return nil
}

// TestWorkingSetInForce: over random histories (supersessions of every
// kind, answers, resolutions, handoff notes), the working set holds exactly
// what the store has in force — every open constraint verbatim, every
// decision in force once and no superseded one, every open question, todo
// and risk, every answered question whose answer holds — and the newest
// current state; two reads give the same bytes.
func TestWorkingSetInForce(t *testing.T) { stores.Each(t, testWorkingSetInForce) }

func testWorkingSetInForce(t *testing.T) {
	kinds := continuo.Kinds()
	prios := continuo.Priorities()
	for seed := range int64(5) {
		r := rand.New(rand.NewSource(seed))
		f := setup(t, "", workflow.Git{})
		sid := f.start(t).ID
		var all []*continuo.Message
		var newestHandoff string
		for range 40 + r.Intn(40) {
			p := workflow.Post{SessionID: sid, Kind: kinds[r.Intn(len(kinds))], Priority: prios[r.Intn(len(prios))],
				Text: strings.Repeat(string(rune('a'+r.Intn(26)))+" ", 1+r.Intn(300))}
			if p.Kind == continuo.KindProgress && r.Intn(3) == 0 {
				p.Tags = []string{continuo.HandoffTag}
			}
			if len(all) > 0 && r.Intn(4) == 0 {
				p.Supersedes = all[r.Intn(len(all))].ID
			}
			if len(all) > 0 && r.Intn(3) == 0 {
				p.ReplyTo = all[r.Intn(len(all))].ID
			}
			m, _, err := f.wf.PostMessage(f.ctx, f.caller, p)
			if code(err) == continuo.CodeConflict { // superseded twice
				continue
			} else if err != nil {
				t.Fatal(err)
			}
			all = append(all, m)
			if m.Handoff() {
				newestHandoff = m.ID
			}
			if r.Intn(6) == 0 && m.Kind.Resolvable() {
				if _, _, err := f.wf.ResolveMessage(f.ctx, f.caller, sid, m.ID, "done"); err != nil {
					t.Fatal(err)
				}
			}
		}
		ps := f.workingPages(t, sid)
		shown := map[string][]string{}
		for _, p := range ps {
			for key, items := range map[string][]workflow.WorkingItem{"guidance": p.Constraints, "decision": p.Decisions,
				"question": p.Questions, "todo": p.Todos, "risk": p.Risks} {
				for _, it := range items {
					shown[key] = append(shown[key], it.MessageID+"\x00"+it.Text)
				}
			}
			for _, a := range p.Answered {
				shown["answered"] = append(shown["answered"], a.Question.MessageID)
			}
		}
		err := f.store.Read(f.ctx, func(tx store.Tx) error {
			for _, k := range []continuo.Kind{continuo.KindGuidance, continuo.KindDecision, continuo.KindQuestion, continuo.KindTodo, continuo.KindRisk} {
				open, err := tx.MessageList(f.ctx, store.MessageListParams{SessionID: sid, Kinds: []continuo.Kind{k},
					Statuses: []continuo.Status{continuo.StatusOpen}, Limit: 1000})
				if err != nil {
					return err
				}
				var want []string
				for _, m := range open {
					want = append(want, m.ID+"\x00"+m.Text) // verbatim: the texts hold no credential
				}
				got := shown[string(k)]
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Errorf("seed %d: %s in the working set:\n%q\nin force in the store:\n%q", seed, k, got, want)
				}
			}
			resolved, err := tx.MessageList(f.ctx, store.MessageListParams{SessionID: sid, Kinds: []continuo.Kind{continuo.KindQuestion},
				Statuses: []continuo.Status{continuo.StatusResolved}, Limit: 1000})
			if err != nil {
				return err
			}
			var want []string
			for _, q := range resolved {
				holds := true
				if q.ResolvedBy != "" {
					a, err := tx.MessageGet(f.ctx, sid, q.ResolvedBy)
					if err != nil {
						return err
					}
					for a.Status == continuo.StatusSuperseded {
						if a, err = tx.MessageGet(f.ctx, sid, a.SupersededBy); err != nil {
							return err
						}
						holds = holds && a.Kind == continuo.KindAnswer
					}
				}
				if holds {
					want = append(want, q.ID)
				}
			}
			got := shown["answered"]
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("seed %d: answered %v, want the resolved questions whose answer holds %v", seed, got, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if newestHandoff != "" && (ps[0].CurrentState == nil || ps[0].CurrentState.MessageID != newestHandoff) {
			t.Errorf("seed %d: current state %+v, want %s", seed, ps[0].CurrentState, newestHandoff)
		}
		again := f.workingPages(t, sid)
		a, _ := json.Marshal(again)
		b, _ := json.Marshal(ps)
		if !bytes.Equal(a, b) {
			t.Fatalf("seed %d: two reads of one state differ", seed)
		}
	}
}

// TestWorkingSetIsolation: another group's session is not found, by id or
// by its ~sN (which names the other group's own session, if any); a token
// without sessions:read is forbidden.
func TestWorkingSetIsolation(t *testing.T) { stores.Each(t, testWorkingSetIsolation) }

func testWorkingSetIsolation(t *testing.T) {
	f := setup(t, "", workflow.Git{})
	sid := f.start(t).ID
	f.post(t, sid, continuo.KindDecision, "alice's plan")
	tok, err := f.auth.CreateToken(f.ctx, "mallory", []continuo.Scope{continuo.ScopeSessionsRead}, 0)
	if err != nil {
		t.Fatal(err)
	}
	mallory, err := f.auth.Authenticate(f.ctx, tok.Token)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{sid, "~s1"} {
		if _, err := f.wf.ReadWorkingSet(f.ctx, mallory, ref, ""); code(err) != continuo.CodeNotFound {
			t.Errorf("another group reads %s: %v, want not_found", ref, err)
		}
	}
	writer := *f.caller
	writer.Scopes = []continuo.Scope{continuo.ScopeSessionsWrite}
	if _, err := f.wf.ReadWorkingSet(f.ctx, &writer, sid, ""); code(err) != continuo.CodeForbidden {
		t.Errorf("without sessions:read: %v, want forbidden", err)
	}
}

// countingStore counts the message rows its reads return.
type countingStore struct {
	store.Store
	rows *atomic.Int64
}

func (c countingStore) Read(ctx context.Context, fn func(store.Tx) error) error {
	return c.Store.Read(ctx, func(tx store.Tx) error { return fn(countingTx{tx, c.rows}) })
}

type countingTx struct {
	store.Tx
	rows *atomic.Int64
}

func (t countingTx) MessageList(ctx context.Context, p store.MessageListParams) ([]continuo.Message, error) {
	ms, err := t.Tx.MessageList(ctx, p)
	t.rows.Add(int64(len(ms)))
	return ms, err
}

func (t countingTx) MessageGet(ctx context.Context, sessionID, id string) (*continuo.Message, error) {
	t.rows.Add(1)
	return t.Tx.MessageGet(ctx, sessionID, id)
}

func (t countingTx) MessageCount(context.Context, store.MessageListParams) (int64, error) {
	panic("the brief and the working set count nothing: their totals come from the session row")
}

// TestReadsFollowWhatIsInForce: the messages the brief and the working set
// read do not grow with the history. The same things in force, after
// 1,500 more messages of history (progress, superseded decisions, resolved
// todos and risks), are read with exactly as many rows; the working set
// reads about what it shows.
func TestReadsFollowWhatIsInForce(t *testing.T) { stores.Each(t, testReadsFollowWhatIsInForce) }

func testReadsFollowWhatIsInForce(t *testing.T) {
	f := setup(t, "", workflow.Git{})
	sid := f.start(t).ID
	var rows atomic.Int64
	counted := workflow.New(countingStore{f.store, &rows}, f.auth, &workflow.Options{WorktreeDir: filepath.Join(t.TempDir(), "wt")})
	history := func(n int) {
		for i := range n {
			switch i % 3 {
			case 0:
				f.post(t, sid, continuo.KindProgress, fmt.Sprint("progress ", i))
			case 1:
				old := f.post(t, sid, continuo.KindDecision, fmt.Sprint("old decision ", i))
				f.postP(t, workflow.Post{SessionID: sid, Kind: continuo.KindNote, Text: "dropped", Supersedes: old.ID})
			case 2:
				m := f.post(t, sid, []continuo.Kind{continuo.KindTodo, continuo.KindRisk}[i%2], fmt.Sprint("done ", i))
				if _, _, err := f.wf.ResolveMessage(f.ctx, f.caller, sid, m.ID, "done"); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	history(300)
	// In force: 12 decisions (one a correction), 3 constraints, 4 todos, 2
	// risks, an answered question, a current state.
	old := f.post(t, sid, continuo.KindDecision, "use JSON")
	f.postP(t, workflow.Post{SessionID: sid, Kind: continuo.KindDecision, Text: "use JSON Lines", Supersedes: old.ID})
	for i := range 11 {
		f.post(t, sid, continuo.KindDecision, fmt.Sprint("decision ", i))
	}
	for i := range 3 {
		f.post(t, sid, continuo.KindGuidance, fmt.Sprint("constraint ", i))
	}
	for i := range 4 {
		f.post(t, sid, continuo.KindTodo, fmt.Sprint("todo ", i))
	}
	for i := range 2 {
		f.post(t, sid, continuo.KindRisk, fmt.Sprint("risk ", i))
	}
	q := f.post(t, sid, continuo.KindQuestion, "which port?")
	f.postP(t, workflow.Post{SessionID: sid, Kind: continuo.KindAnswer, Text: "8080", ReplyTo: q.ID})
	f.postP(t, workflow.Post{SessionID: sid, Kind: continuo.KindProgress, Text: "state", Tags: []string{continuo.HandoffTag}})

	measure := func() (brief, working int64, ws *workflow.WorkingSet) {
		t.Helper()
		rows.Store(0)
		if _, err := counted.ReadHandoff(f.ctx, f.caller, sid, "", false); err != nil {
			t.Fatal(err)
		}
		brief = rows.Swap(0)
		ws, err := counted.ReadWorkingSet(f.ctx, f.caller, sid, "")
		if err != nil {
			t.Fatal(err)
		}
		return brief, rows.Load(), ws
	}
	b1, w1, ws := measure()
	shown := ws.Totals.Decisions + ws.Totals.Constraints + ws.Totals.Todos + ws.Totals.Risks + ws.Totals.Answered
	if shown != 12+3+4+2+1 || ws.NextCursor != nil {
		t.Fatalf("the working set shows %d items (totals %+v), want 22 on one page", shown, ws.Totals)
	}
	// Each item shown is one row; an answered pair two; the current state
	// one. Nothing else.
	if w1 != int64(shown)+2 {
		t.Errorf("the working set read %d message rows to show %d items", w1, shown)
	}
	history(1500)
	b2, w2, _ := measure()
	if b2 != b1 || w2 != w1 {
		t.Errorf("after 1,500 more messages of history the brief reads %d rows (was %d), the working set %d (was %d)", b2, b1, w2, w1)
	}
	t.Logf("rows read: brief %d, working set %d (for %d items in force)", b1, w1, shown)
}
