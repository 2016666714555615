package swarm_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/swarm"
)

// TestListSwarms: the group's swarms, newest first and paged, each with
// its worker count and task counts; another group's caller sees none of
// them, and a caller without swarm:own is refused.
func TestListSwarms(t *testing.T) { stores.Each(t, testListSwarms) }

func testListSwarms(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	a, b, c := f.create(4, nil), f.create(2, nil), f.create(8, nil)
	f.join(a, "a1")
	f.join(a, "a2")
	f.dispatch(a.Swarm.ID, "k1", "")
	f.dispatch(a.Swarm.ID, "k2", "")
	x := f.join(c, "c1")
	f.dispatch(c.Swarm.ID, "k", "")
	f.next(x)
	if _, err := f.svc.Create(ctx, f.outer, f.carrier(), swarm.CreateInput{WorkerLimit: 1}); err != nil {
		t.Fatal(err)
	}

	p, err := f.svc.ListSwarms(ctx, f.owner, "", 2)
	if err != nil || len(p.Swarms) != 2 || p.Swarms[0].Swarm.ID != c.Swarm.ID || p.Swarms[1].Swarm.ID != b.Swarm.ID || p.Next != b.Swarm.ID {
		t.Fatalf("first page: %+v %v", p, err)
	}
	if s := p.Swarms[0]; s.Workers != 1 || s.Counts[continuo.TaskClaimed] != 1 || len(s.Counts) != 1 {
		t.Errorf("c: %+v", s)
	}
	if s := p.Swarms[1]; s.Workers != 0 || len(s.Counts) != 0 {
		t.Errorf("b: %+v", s)
	}
	p, err = f.svc.ListSwarms(ctx, f.owner, p.Next, 2)
	if err != nil || len(p.Swarms) != 1 || p.Swarms[0].Swarm.ID != a.Swarm.ID || p.Next != "" {
		t.Fatalf("second page: %+v %v", p, err)
	}
	if s := p.Swarms[0]; s.Workers != 2 || s.Counts[continuo.TaskQueued] != 2 {
		t.Errorf("a: %+v", s)
	}
	theirs, err := f.svc.ListSwarms(ctx, f.outer, "", 0)
	if err != nil || len(theirs.Swarms) != 1 || theirs.Swarms[0].Swarm.GroupID != f.outer.GroupID {
		t.Fatalf("the other group's list: %+v %v", theirs, err)
	}
	_, err = f.svc.ListSwarms(ctx, f.member(), "", 0)
	wantCode(t, err, continuo.CodeForbidden, "a worker's caller lists swarms")
}

// TestPressures: every worker's pressure, with the signal it rests on —
// the server's counts, a worker's estimate, a host's exact figure — for
// the owner only.
func TestPressures(t *testing.T) { stores.Each(t, testPressures) }

func testPressures(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	inv := f.create(4, smallBudget(10_000, 1_000, 0.5))
	quiet, counted, est, exact := f.join(inv, "quiet"), f.join(inv, "counted"), f.join(inv, "estimate"), f.join(inv, "exact")
	if _, err := f.svc.Dispatch(ctx, f.owner, ownerCar, swarm.DispatchInput{SwarmID: inv.Swarm.ID, TaskKey: "big", Prompt: strings.Repeat("p", 8_000),
		PreferredWorkerID: counted.ref.WorkerID}); err != nil {
		t.Fatal(err)
	}
	f.next(counted)
	for x, r := range map[*w]swarm.ReportInput{est: {Tokens: 3_000, Source: continuo.LedgerEstimate}, exact: {Tokens: 6_000, Source: continuo.LedgerHostExact}} {
		if _, err := f.svc.ReportContext(ctx, x.c, x.car, x.ref, r); err != nil {
			t.Fatal(err)
		}
	}
	o, err := f.svc.Overview(ctx, f.owner, ownerCar, inv.Swarm.ID, hour)
	if err != nil || len(o.Pressures) != 4 {
		t.Fatalf("pressures: %v %v", o, err)
	}
	ps := o.Pressures
	for _, tc := range []struct {
		x       *w
		tokens  int64
		leading string
		exact   bool
		compact bool
	}{
		{quiet, 1_000, "", false, false},
		{counted, 3_000, swarm.LeadCounted, false, false},
		{est, 4_000, string(continuo.LedgerEstimate), false, false},
		{exact, 7_000, string(continuo.LedgerHostExact), true, true},
	} {
		p := ps[tc.x.ref.WorkerID]
		if p == nil || p.Tokens != tc.tokens || p.Leading != tc.leading || p.Exact != tc.exact || p.CompactRequired != tc.compact || p.Budget != 10_000 {
			t.Errorf("pressure of %s = %+v, want tokens %d leading %q exact %v", tc.x.ref.WorkerID, p, tc.tokens, tc.leading, tc.exact)
		}
	}
	_, err = f.svc.Overview(ctx, f.outer, f.carrier(), inv.Swarm.ID, hour)
	wantCode(t, err, continuo.CodeNotFound, "another group's pressures")
	_, err = f.svc.Overview(ctx, quiet.c, quiet.car, inv.Swarm.ID, hour)
	wantCode(t, err, continuo.CodeForbidden, "a worker reads the pressures")
}

// TestTaskHistory: a task in doubt comes with its latest attempt in
// ListTaskStatus; once requeued and claimed again TaskHistory shows both
// attempts, newest first, with the workers' labels.
func TestTaskHistory(t *testing.T) { stores.Each(t, testTaskHistory) }

func testTaskHistory(t *testing.T) {
	f, inv := newSwarm(t)
	ctx := t.Context()
	x, y := f.join(inv, "first"), f.join(inv, "second")
	task := f.dispatch(inv.Swarm.ID, "k", "")
	first := f.next(x)
	if _, err := f.svc.Fail(ctx, x.c, x.car, x.ref, task.ID, "crashed mid-way", swarm.EffectMaybe); err != nil {
		t.Fatal(err)
	}
	f.dispatch(inv.Swarm.ID, "other", "")
	doubt, err := f.svc.ListTaskStatus(ctx, f.owner, ownerCar, inv.Swarm.ID, continuo.TaskReconcileRequired, "", 0)
	if err != nil || len(doubt.Tasks) != 1 || doubt.Tasks[0].Task.ID != task.ID || doubt.Tasks[0].Attempt == nil ||
		doubt.Tasks[0].Attempt.ID != first.Attempt.ID || doubt.Next != "" {
		t.Fatalf("in doubt: %+v %v", doubt, err)
	}
	queued, err := f.svc.ListTaskStatus(ctx, f.owner, ownerCar, inv.Swarm.ID, continuo.TaskQueued, "", 0)
	if err != nil || len(queued.Tasks) != 1 || queued.Tasks[0].Attempt != nil {
		t.Fatalf("queued, never claimed: %+v %v", queued, err)
	}
	// A decision or a disposition outside the contract's sets settles
	// nothing (the MCP edge checks them too; a form is checked here).
	for _, in := range []swarm.ReconcileInput{{Decision: "retry", Disposition: swarm.NoEffect}, {Decision: swarm.DecideFailed, Disposition: "maybe"},
		{Decision: swarm.DecideFailed}} {
		in.SwarmID, in.TaskID, in.AttemptID, in.Evidence = inv.Swarm.ID, task.ID, first.Attempt.ID, "whatever"
		_, err := f.svc.Reconcile(ctx, f.owner, ownerCar, in)
		wantCode(t, err, continuo.CodeInvalidInput, fmt.Sprintf("reconcile %q/%q", in.Decision, in.Disposition))
	}
	if ts := f.task(inv.Swarm.ID, task.ID); ts.Task.State != continuo.TaskReconcileRequired || ts.Attempt.State != continuo.AttemptInDoubt {
		t.Fatalf("after refused decisions: %+v %+v", ts.Task, ts.Attempt)
	}
	if _, err := f.svc.Reconcile(ctx, f.owner, ownerCar, swarm.ReconcileInput{SwarmID: inv.Swarm.ID, TaskID: task.ID, AttemptID: first.Attempt.ID,
		Decision: swarm.DecideRequeue, Disposition: swarm.NoEffect, Evidence: "the log shows nothing ran"}); err != nil {
		t.Fatal(err)
	}
	second := f.next(y)
	if second.Task == nil || second.Task.ID != task.ID {
		second = f.next(y) // the other task came first
	}
	h, err := f.svc.TaskHistory(ctx, f.owner, ownerCar, inv.Swarm.ID, task.ID)
	if err != nil || len(h.Attempts) != 2 || h.Earlier != 0 || h.Attempts[0].ID != second.Attempt.ID || h.Attempts[1].ID != first.Attempt.ID ||
		h.Attempts[1].State != continuo.AttemptRequeued || h.Labels[x.ref.WorkerID] != "first" || h.Labels[y.ref.WorkerID] != "second" {
		t.Fatalf("history: %+v %v", h, err)
	}
	_, err = f.svc.TaskHistory(ctx, f.outer, f.carrier(), inv.Swarm.ID, task.ID)
	wantCode(t, err, continuo.CodeNotFound, "another group's task")
	other := f.create(1, nil)
	_, err = f.svc.TaskHistory(ctx, f.owner, ownerCar, other.Swarm.ID, task.ID)
	wantCode(t, err, continuo.CodeNotFound, "a task through another swarm")
	_, err = f.svc.ListTaskStatus(ctx, f.owner, ownerCar, inv.Swarm.ID, "nonsense", "", 0)
	wantCode(t, err, continuo.CodeInvalidInput, "an unknown state")
}

// TestTimeline: tasks dispatched and settled per bucket, the last bucket
// holding now; bounds are checked.
func TestTimeline(t *testing.T) { stores.Each(t, testTimeline) }

func testTimeline(t *testing.T) {
	f, inv := newSwarm(t)
	ctx := t.Context()
	x := f.join(inv, "x")
	f.dispatch(inv.Swarm.ID, "early", "") // 10:00
	f.clock.add(90 * time.Minute)         // 11:30
	f.dispatch(inv.Swarm.ID, "late", "")
	d := f.next(x) // early, the oldest
	if _, err := f.svc.Submit(ctx, x.c, x.car, x.ref, d.Task.ID, "done"); err != nil {
		t.Fatal(err)
	}
	o, err := f.svc.Overview(ctx, f.owner, ownerCar, inv.Swarm.ID, swarm.OverviewInput{Bucket: time.Hour, Buckets: 3})
	if err != nil {
		t.Fatal(err)
	}
	tl := o.Timeline
	got := []string{}
	for _, b := range tl.Buckets {
		got = append(got, fmt.Sprintf("%s %d/%d", b.Start.Format("15:04"), b.Dispatched, b.Settled))
	}
	if want := []string{"09:00 0/0", "10:00 1/0", "11:00 1/1"}; !slices.Equal(got, want) || tl.Bucket != time.Hour {
		t.Fatalf("timeline = %v, want %v", got, want)
	}
	for _, tc := range []struct {
		bucket time.Duration
		n      int
	}{{time.Second, 3}, {time.Hour, 0}, {time.Hour, swarm.MaxTimelineBuckets + 1}} {
		_, err := f.svc.Overview(ctx, f.owner, ownerCar, inv.Swarm.ID, swarm.OverviewInput{Bucket: tc.bucket, Buckets: tc.n})
		wantCode(t, err, continuo.CodeInvalidInput, fmt.Sprintf("timeline of %d × %s", tc.n, tc.bucket))
	}
	_, err = f.svc.Overview(ctx, f.outer, f.carrier(), inv.Swarm.ID, hour)
	wantCode(t, err, continuo.CodeNotFound, "another group's timeline")
}

// TestHistory: a swarm's continuations, newest first, paged by ID.
func TestHistory(t *testing.T) { stores.Each(t, testHistory) }

func testHistory(t *testing.T) {
	f, inv := newSwarm(t)
	ctx := t.Context()
	x, y := f.checkpointed(inv, "x"), f.checkpointed(inv, "y")
	px := f.prepare(inv, x)
	if _, _, err := f.svc.Revoke(ctx, f.owner, ownerCar, inv.Swarm.ID, px.Continuation.ID); err != nil {
		t.Fatal(err)
	}
	px2 := f.prepare(inv, x)
	py := f.prepare(inv, y)
	page, err := history(f, "", 2, inv.Swarm.ID)
	if err != nil || len(page.Continuations) != 2 || page.Continuations[0].ID != py.Continuation.ID || page.Continuations[1].ID != px2.Continuation.ID ||
		page.Next != px2.Continuation.ID {
		t.Fatalf("first page: %+v %v", page, err)
	}
	page, err = history(f, page.Next, 2, inv.Swarm.ID)
	if err != nil || len(page.Continuations) != 1 || page.Continuations[0].ID != px.Continuation.ID ||
		page.Continuations[0].State != continuo.ContinuationRevoked || page.Next != "" {
		t.Fatalf("second page: %+v %v", page, err)
	}
	_, err = f.svc.Overview(ctx, f.outer, f.carrier(), inv.Swarm.ID, hour)
	wantCode(t, err, continuo.CodeNotFound, "another group's history")
}

// hour is an overview's smallest timeline: one bucket of an hour.
var hour = swarm.OverviewInput{Bucket: time.Hour, Buckets: 1}

// history is one page of a swarm's continuations, as its owner's overview
// reads it.
func history(f *fixture, before string, limit int, swarmID string) (*swarm.ContinuationPage, error) {
	in := hour
	in.HistoryBefore, in.History = before, limit
	o, err := f.svc.Overview(f.t.Context(), f.owner, ownerCar, swarmID, in)
	if err != nil {
		return nil, err
	}
	return o.History, nil
}

// TestOverview: one snapshot of what the separate reads return.
func TestOverview(t *testing.T) { stores.Each(t, testOverview) }

func testOverview(t *testing.T) {
	f, inv := newSwarm(t)
	ctx := t.Context()
	x, y := f.checkpointed(inv, "x"), f.join(inv, "y")
	f.prepare(inv, x)
	task := f.dispatch(inv.Swarm.ID, "k", y.ref.WorkerID)
	f.next(y)
	if _, err := f.svc.Fail(ctx, y.c, y.car, y.ref, task.ID, "lost", swarm.EffectMaybe); err != nil {
		t.Fatal(err)
	}
	in := swarm.OverviewInput{InDoubt: 5, Bucket: time.Hour, Buckets: 6, History: 5}
	o, err := f.svc.Overview(ctx, f.owner, ownerCar, inv.Swarm.ID, in)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.svc.SwarmStatus(ctx, f.owner, ownerCar, inv.Swarm.ID)
	doubt, _ := f.svc.ListTaskStatus(ctx, f.owner, ownerCar, inv.Swarm.ID, continuo.TaskReconcileRequired, "", 5)
	for what, pair := range map[string][2]any{"status": {o.Status, st}, "pressures": {o.Pressures, st.Pressures}, "in doubt": {o.InDoubt, doubt}} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("overview's %s = %+v, the read's %+v", what, pair[0], pair[1])
		}
	}
	if len(o.InDoubt.Tasks) != 1 || o.InDoubt.Tasks[0].Attempt == nil || len(o.History.Continuations) != 1 || o.Status.Runtime != swarm.RuntimeManual {
		t.Fatalf("overview: %+v", o)
	}
	_, err = f.svc.Overview(ctx, f.outer, f.carrier(), inv.Swarm.ID, in)
	wantCode(t, err, continuo.CodeNotFound, "another group's overview")
	_, err = f.svc.Overview(ctx, f.owner, ownerCar, inv.Swarm.ID, swarm.OverviewInput{Bucket: time.Hour})
	wantCode(t, err, continuo.CodeInvalidInput, "an overview without buckets")
}
