package workflow_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/workflow"
)

// The races of CONTRACT.md §1 and §3, with real concurrency on both
// engines (on PostgreSQL, many connections in SERIALIZABLE transactions):
// every race has one winner, and the losers are told or replayed.

func TestRaceIdenticalKeyedPosts(t *testing.T) { stores.Each(t, testRaceIdenticalKeyedPosts) }

// testRaceIdenticalKeyedPosts: 50 concurrent posts under one delivery key
// make exactly one message; 49 are replays of it.
func testRaceIdenticalKeyedPosts(t *testing.T) {
	f := setup(t, "", workflow.Git{})
	sess := f.start(t)
	const n = 50
	ids := make([]string, n)
	replayed := make([]bool, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			m, r, err := f.wf.PostMessage(f.ctx, f.caller, workflow.Post{SessionID: sess.ID, Kind: continuo.KindDecision,
				Text: "one decision", DeliveryKey: "the-key"})
			if err == nil {
				ids[i], replayed[i] = m.ID, r
			}
			errs[i] = err
		})
	}
	wg.Wait()
	fresh := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("post %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Errorf("post %d got message %s, post 0 %s", i, ids[i], ids[0])
		}
		if !replayed[i] {
			fresh++
		}
	}
	if fresh != 1 {
		t.Errorf("%d posts were not replays, want exactly 1", fresh)
	}
	page, err := f.wf.ListMessages(f.ctx, f.caller, workflow.MessageQuery{SessionID: sess.ID, Kinds: continuo.Kinds(), Limit: 10})
	if err != nil || page.Total != 1 || len(page.Messages) != 1 {
		t.Fatalf("messages after the race: total %d, %d listed, %v; want 1", page.Total, len(page.Messages), err)
	}
}

func TestRaceConcurrentPosts(t *testing.T) { stores.Each(t, testRaceConcurrentPosts) }

// testRaceConcurrentPosts: concurrent posts to one session lose nothing:
// every acknowledged post is stored once, with distinct sequence numbers,
// and the session's counters equal what is stored.
func testRaceConcurrentPosts(t *testing.T) {
	f := setup(t, "", workflow.Git{})
	sess := f.start(t)
	const writers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for g := range writers {
		wg.Go(func() {
			for j := range each {
				kind := continuo.KindTodo
				if j%2 == 0 {
					kind = continuo.KindProgress
				}
				if _, _, err := f.wf.PostMessage(f.ctx, f.caller, workflow.Post{SessionID: sess.ID, Kind: kind,
					Text: fmt.Sprintf("w%d-%d", g, j), DeliveryKey: fmt.Sprintf("w%d-%d", g, j)}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("post: %v", err)
	}
	page, err := f.wf.ListMessages(f.ctx, f.caller, workflow.MessageQuery{SessionID: sess.ID, Kinds: continuo.Kinds(), Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	seqs := map[int64]bool{}
	for _, m := range page.Messages {
		if seqs[m.Seq] {
			t.Errorf("seq %d used twice", m.Seq)
		}
		seqs[m.Seq] = true
	}
	if page.Total != writers*each || len(page.Messages) != writers*each {
		t.Errorf("total %d, listed %d; want %d", page.Total, len(page.Messages), writers*each)
	}
	h, err := f.wf.ReadHandoff(f.ctx, f.caller, sess.ID, "", true)
	if err != nil {
		t.Fatal(err)
	}
	if c := h.Diagnostic.Counts; c.Progress != writers*each/2 || c.OpenTodos != writers*each/2 || c.Messages != writers*each {
		t.Errorf("counters after concurrent posts: %+v", c)
	}
}

func TestRaceSessionRefs(t *testing.T) { stores.Each(t, testRaceSessionRefs) }

// testRaceSessionRefs: 200 concurrent session starts in one group get 200
// distinct references.
func testRaceSessionRefs(t *testing.T) {
	f := setup(t, "", workflow.Git{})
	const n = 200
	refs := make([]int64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r, err := f.wf.WorkOnProject(f.ctx, f.caller, workflow.WorkOn{Project: "demo", Instruction: fmt.Sprintf("task %d", i)})
			if err == nil {
				refs[i] = r.Session.Ref
			}
			errs[i] = err
		})
	}
	wg.Wait()
	seen := map[int64]int{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("start %d: %v", i, errs[i])
		}
		if j, dup := seen[refs[i]]; dup {
			t.Errorf("starts %d and %d both got ~s%d", j, i, refs[i])
		}
		seen[refs[i]] = i
	}
	page, err := f.wf.ListSessions(f.ctx, f.caller, "demo", "", 0, 50)
	if err != nil || page.Total != n {
		t.Errorf("list_sessions total %d, %v; want %d", page.Total, err, n)
	}
}

func TestRaceSupersede(t *testing.T) { stores.Each(t, testRaceSupersede) }

// testRaceSupersede: of concurrent posts superseding one message, exactly
// one wins; every other is told it lost (conflict naming the winner).
func testRaceSupersede(t *testing.T) {
	f := setup(t, "", workflow.Git{})
	sess := f.start(t)
	for trial := range 10 {
		old, _, err := f.wf.PostMessage(f.ctx, f.caller, workflow.Post{SessionID: sess.ID, Kind: continuo.KindDecision, Text: "old"})
		if err != nil {
			t.Fatal(err)
		}
		const n = 6
		won := make([]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				m, _, err := f.wf.PostMessage(f.ctx, f.caller, workflow.Post{SessionID: sess.ID, Kind: continuo.KindDecision,
					Text: fmt.Sprintf("new %d", i), Supersedes: old.ID})
				if err == nil {
					won[i] = m.ID
				}
				errs[i] = err
			})
		}
		wg.Wait()
		winners := 0
		var winner string
		for i := range n {
			switch {
			case errs[i] == nil:
				winners++
				winner = won[i]
			case continuo.ErrorCode(errs[i]) != continuo.CodeConflict:
				t.Errorf("trial %d: loser %d: %v, want conflict", trial, i, errs[i])
			}
		}
		if winners != 1 {
			t.Fatalf("trial %d: %d winners, want 1", trial, winners)
		}
		for i := range n {
			if errs[i] != nil && continuo.AsError(errs[i]).Details["superseded_by"] != winner {
				t.Errorf("trial %d: loser %d was told superseded_by %v, the winner is %s", trial, i, continuo.AsError(errs[i]).Details, winner)
			}
		}
	}
}

func TestRaceResolve(t *testing.T) { stores.Each(t, testRaceResolve) }

// testRaceResolve: of concurrent resolutions of one todo, exactly one
// changes it; the others see it resolved (changed=false), and the open
// count drops once.
func testRaceResolve(t *testing.T) {
	f := setup(t, "", workflow.Git{})
	sess := f.start(t)
	for trial := range 10 {
		todo, _, err := f.wf.PostMessage(f.ctx, f.caller, workflow.Post{SessionID: sess.ID, Kind: continuo.KindTodo, Text: "do it"})
		if err != nil {
			t.Fatal(err)
		}
		const n = 6
		changed := make([]bool, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				_, changed[i], errs[i] = f.wf.ResolveMessage(f.ctx, f.caller, sess.ID, todo.ID, fmt.Sprintf("by %d", i))
			})
		}
		wg.Wait()
		winners := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("trial %d: resolve %d: %v", trial, i, errs[i])
			}
			if changed[i] {
				winners++
			}
		}
		if winners != 1 {
			t.Fatalf("trial %d: %d resolutions changed the todo, want 1", trial, winners)
		}
	}
	h, err := f.wf.ReadHandoff(f.ctx, f.caller, sess.ID, "", true)
	if err != nil {
		t.Fatal(err)
	}
	if h.Diagnostic.Counts.OpenTodos != 0 {
		t.Errorf("open todos after the races: %d, want 0", h.Diagnostic.Counts.OpenTodos)
	}
}
