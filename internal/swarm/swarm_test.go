package swarm_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/store/storetest"
	"github.com/continuo-dev/continuo/internal/swarm"
)

// clock is a test clock: leases expire when a test moves it.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fixture is one store and service, an owner, workers of its group, and
// an outsider of another group.
type fixture struct {
	t     testing.TB
	store store.Store
	svc   *swarm.Service
	clock *clock
	owner *continuo.Caller
	outer *continuo.Caller // another group: sees nothing
	group *continuo.Group
	n     atomic.Int64
}

func newFixture(t testing.TB, opts ...func(*swarm.Options)) *fixture {
	t.Helper()
	s := stores.Open(t)
	g := storetest.Group(t, s, "team")
	p := storetest.Principal(t, s, g.ID, "owner")
	og := storetest.Group(t, s, "outsiders")
	op := storetest.Principal(t, s, og.ID, "eve")
	c := &clock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	o := swarm.Options{Now: c.now, Server: "test-server"}
	for _, f := range opts {
		f(&o)
	}
	svc := swarm.New(s, o)
	t.Cleanup(svc.Close)
	return &fixture{t: t, store: s, svc: svc, clock: c, group: g,
		owner: &continuo.Caller{PrincipalID: p.ID, Principal: p.Name, GroupID: g.ID, Scopes: []continuo.Scope{continuo.ScopeSwarmOwn}},
		outer: &continuo.Caller{PrincipalID: op.ID, Principal: op.Name, GroupID: og.ID, Scopes: []continuo.Scope{continuo.ScopeSwarmOwn, continuo.ScopeSwarmWork}}}
}

// carrier returns a new carrier identity.
func (f *fixture) carrier() swarm.Carrier {
	return swarm.Carrier{Source: continuo.CarrierFromKey, Key: fmt.Sprintf("carrier-key-%022d", f.n.Add(1))}
}

// member returns a new worker principal of the owner's group.
func (f *fixture) member() *continuo.Caller {
	p := storetest.Principal(f.t, f.store, f.group.ID, fmt.Sprintf("worker-%d", f.n.Add(1)))
	return &continuo.Caller{PrincipalID: p.ID, Principal: p.Name, GroupID: f.group.ID, Scopes: []continuo.Scope{continuo.ScopeSwarmWork}}
}

var ownerCar = swarm.Carrier{Source: continuo.CarrierFromSession, Key: "the-owner-conversation-session"}

func (f *fixture) create(limit int, policy *continuo.SwarmPolicy) *swarm.Invited {
	f.t.Helper()
	inv, err := f.svc.Create(f.t.Context(), f.owner, ownerCar, swarm.CreateInput{WorkerLimit: limit, Policy: policy})
	if err != nil {
		f.t.Fatal(err)
	}
	return inv
}

// w is a joined worker with its caller and carrier.
type w struct {
	c   *continuo.Caller
	car swarm.Carrier
	ref swarm.WorkerRef
}

func (f *fixture) join(inv *swarm.Invited, label string) *w {
	f.t.Helper()
	c, car := f.member(), f.carrier()
	j, err := f.svc.Join(f.t.Context(), c, car, swarm.JoinInput{SwarmID: inv.Swarm.ID, Invite: inv.Invite, Label: label})
	if err != nil {
		f.t.Fatal(err)
	}
	return &w{c: c, car: car, ref: swarm.WorkerRef{WorkerID: j.Worker.ID, Epoch: j.Worker.Epoch}}
}

func (f *fixture) dispatch(swarmID, key string, prefer string) *continuo.Task {
	f.t.Helper()
	r, err := f.svc.Dispatch(f.t.Context(), f.owner, ownerCar, swarm.DispatchInput{SwarmID: swarmID, TaskKey: key, Prompt: "do " + key,
		PreferredWorkerID: prefer})
	if err != nil {
		f.t.Fatal(err)
	}
	return &r.Task
}

func (f *fixture) next(x *w) *swarm.Delivery {
	f.t.Helper()
	d, err := f.svc.Next(f.t.Context(), x.c, x.car, x.ref, 0, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

func (f *fixture) task(swarmID, taskID string) *swarm.TaskStatus {
	f.t.Helper()
	ts, err := f.svc.TaskStatus(f.t.Context(), f.owner, ownerCar, swarmID, taskID)
	if err != nil {
		f.t.Fatal(err)
	}
	return ts
}

// wantCode fails unless err carries the contract code.
// oneWorker is the start most tests here share: a swarm of four and one
// worker joined under label.
func oneWorker(t *testing.T, label string) (*fixture, *swarm.Invited, *w) {
	f := newFixture(t)
	inv := f.create(4, nil)
	return f, inv, f.join(inv, label)
}

func wantCode(t *testing.T, err error, code continuo.Code, what string) *continuo.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want %s", what, code)
	}
	if got := continuo.ErrorCode(err); got != code {
		t.Fatalf("%s: got %v, want %s", what, err, code)
	}
	var e *continuo.Error
	errors.As(err, &e)
	return e
}

func TestLifecycle(t *testing.T) { stores.Each(t, testLifecycle) }

func testLifecycle(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	inv := f.create(2, nil)
	if inv.Swarm.Policy != continuo.DefaultSwarmPolicy() || inv.Invite == "" {
		t.Fatalf("created %+v", inv)
	}
	x := f.join(inv, "w1")
	if d := f.next(x); d.State != swarm.NextIdle {
		t.Fatalf("next on an empty queue: %+v", d)
	}
	task := f.dispatch(inv.Swarm.ID, "k1", "")
	d := f.next(x)
	if d.State != swarm.NextTask || d.Task.ID != task.ID || d.Task.Prompt != "do k1" || d.Attempt.Number != 1 || d.Redelivery {
		t.Fatalf("next: %+v", d)
	}
	again := f.next(x)
	if !again.Redelivery || again.Task.ID != task.ID || again.Attempt.ID != d.Attempt.ID {
		t.Fatalf("redelivery: %+v", again)
	}
	if _, err := f.svc.Ack(ctx, x.c, x.car, x.ref, task.ID); err != nil {
		t.Fatal(err)
	}
	if r, err := f.svc.Ack(ctx, x.c, x.car, x.ref, task.ID); err != nil || !r.Replayed || r.Task.State != continuo.TaskRunning {
		t.Fatalf("ack again: %+v %v", r, err)
	}
	wk, err := f.svc.Checkpoint(ctx, x.c, x.car, x.ref, json.RawMessage(`{"summary": "half way", "next": "finish"}`))
	if err != nil || wk.CheckpointHash == "" || wk.Checkpoint != `{"summary":"half way","next":"finish"}` {
		t.Fatalf("checkpoint: %+v %v", wk, err)
	}
	r, err := f.svc.Submit(ctx, x.c, x.car, x.ref, task.ID, "done k1")
	if err != nil || r.Task.State != continuo.TaskResultReady || r.Replayed {
		t.Fatalf("submit: %+v %v", r, err)
	}
	if r, err := f.svc.Submit(ctx, x.c, x.car, x.ref, task.ID, "done k1"); err != nil || !r.Replayed {
		t.Fatalf("submit replay: %+v %v", r, err)
	}
	_, err = f.svc.Submit(ctx, x.c, x.car, x.ref, task.ID, "another result")
	wantCode(t, err, continuo.CodeTerminalImmutable, "a different result after the first")
	if st, err := f.svc.CloseSwarm(ctx, f.owner, ownerCar, inv.Swarm.ID); err != nil || st.Replayed {
		t.Fatalf("close with a result not collected (terminal): %+v %v", st, err)
	}
	c, err := f.svc.Collect(ctx, f.owner, ownerCar, inv.Swarm.ID, task.ID)
	if err != nil || c.Task.State != continuo.TaskCollected || c.Task.Result != "done k1" {
		t.Fatalf("collect: %+v %v", c, err)
	}
	if c, err := f.svc.Collect(ctx, f.owner, ownerCar, inv.Swarm.ID, task.ID); err != nil || !c.Replayed {
		t.Fatalf("collect again: %+v %v", c, err)
	}
	if d := f.next(x); d.State != swarm.NextClosed {
		t.Fatalf("next after close: %+v", d)
	}
	st, err := f.svc.CloseSwarm(ctx, f.owner, ownerCar, inv.Swarm.ID)
	if err != nil || st.Swarm.State != continuo.SwarmClosed || !st.Replayed {
		t.Fatalf("close again: %+v %v", st, err)
	}
	_, err = f.svc.Dispatch(ctx, f.owner, ownerCar, swarm.DispatchInput{SwarmID: inv.Swarm.ID, TaskKey: "late", Prompt: "p"})
	wantCode(t, err, continuo.CodeInvalidState, "dispatch to a closed swarm")
}

func TestJoin(t *testing.T) { stores.Each(t, testJoin) }

func testJoin(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	inv := f.create(2, nil)
	c, car := f.member(), f.carrier()
	in := swarm.JoinInput{SwarmID: inv.Swarm.ID, Invite: inv.Invite, Label: "a"}
	j1, err := f.svc.Join(ctx, c, car, in)
	if err != nil || j1.Replayed || j1.Worker.Epoch != 0 || j1.Worker.State != continuo.WorkerIdle {
		t.Fatalf("join: %+v %v", j1, err)
	}
	j2, err := f.svc.Join(ctx, c, car, in)
	if err != nil || !j2.Replayed || j2.Worker.ID != j1.Worker.ID {
		t.Fatalf("join replay: %+v %v", j2, err)
	}
	_, err = f.svc.Join(ctx, c, car, swarm.JoinInput{SwarmID: inv.Swarm.ID, Invite: inv.Invite, Label: "b"})
	wantCode(t, err, continuo.CodeConflict, "same carrier, other label")
	_, err = f.svc.Join(ctx, f.member(), f.carrier(), swarm.JoinInput{SwarmID: inv.Swarm.ID, Invite: "cto_inv_wrong", Label: "x"})
	wantCode(t, err, continuo.CodeNotFound, "a wrong invite")
	_, err = f.svc.Join(ctx, f.owner, ownerCar, in)
	wantCode(t, err, continuo.CodeForbidden, "the owner lacks swarm:work")
	both := &continuo.Caller{PrincipalID: f.owner.PrincipalID, GroupID: f.owner.GroupID, Scopes: []continuo.Scope{continuo.ScopeAdmin}}
	_, err = f.svc.Join(ctx, both, ownerCar, in)
	wantCode(t, err, continuo.CodeForbidden, "the owner's conversation joining its swarm")

	// Another group holding the invite: the swarm is as unknown to it as
	// to anyone without the invite (an invite is not a grant), and it took
	// no slot.
	ext := f.carrier()
	_, err = f.svc.Join(ctx, f.outer, ext, swarm.JoinInput{SwarmID: inv.Swarm.ID, Invite: inv.Invite, Label: "ext"})
	if e := wantCode(t, err, continuo.CodeNotFound, "another group with the invite"); e.Message != continuo.NotFound("swarm", inv.Swarm.ID).Message {
		t.Errorf("another group with the invite: %q, not what an unknown swarm says", e.Message)
	}
	if _, err := f.svc.Join(ctx, f.member(), f.carrier(), swarm.JoinInput{SwarmID: inv.Swarm.ID, Invite: inv.Invite, Label: "b"}); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.Join(ctx, f.member(), f.carrier(), in)
	e := wantCode(t, err, continuo.CodeCapacityFull, "past the worker limit")
	if e.Details["limit"] != 2 {
		t.Errorf("details %v", e.Details)
	}

	// A new invite: the old one admits no one new, its joins still replay.
	inv2, err := f.svc.Invite(ctx, f.owner, ownerCar, inv.Swarm.ID, 0)
	if err != nil || inv2.Invite == inv.Invite {
		t.Fatalf("invite: %+v %v", inv2, err)
	}
	if j, err := f.svc.Join(ctx, c, car, in); err != nil || !j.Replayed {
		t.Fatalf("replay after a new invite: %+v %v", j, err)
	}
	f2 := f.create(4, nil)
	f.clock.add(continuo.DefaultInviteTTL)
	_, err = f.svc.Join(ctx, f.member(), f.carrier(), swarm.JoinInput{SwarmID: f2.Swarm.ID, Invite: f2.Invite, Label: "late"})
	wantCode(t, err, continuo.CodeTicketInvalid, "an expired invite")
	// A carrier bound once never binds again, in any swarm.
	f3 := f.create(4, nil)
	_, err = f.svc.Join(ctx, c, car, swarm.JoinInput{SwarmID: f3.Swarm.ID, Invite: f3.Invite, Label: "a"})
	wantCode(t, err, continuo.CodeConflict, "a bound carrier joining another swarm")
	_, err = f.svc.Join(ctx, f.member(), swarm.Carrier{Source: continuo.CarrierFromKey}, swarm.JoinInput{SwarmID: f3.Swarm.ID, Invite: f3.Invite, Label: "a"})
	wantCode(t, err, continuo.CodeInvalidInput, "no carrier identity")
}

func TestFencing(t *testing.T) { stores.Each(t, testFencing) }

func testFencing(t *testing.T) {
	f, inv, x := oneWorker(t, "w")
	ctx := t.Context()
	task := f.dispatch(inv.Swarm.ID, "k", "")
	f.next(x)
	calls := map[string]func(c *continuo.Caller, car swarm.Carrier, ref swarm.WorkerRef) error{
		"next": func(c *continuo.Caller, car swarm.Carrier, ref swarm.WorkerRef) error {
			_, err := f.svc.Next(ctx, c, car, ref, 0, nil)
			return err
		},
		"ack": func(c *continuo.Caller, car swarm.Carrier, ref swarm.WorkerRef) error {
			_, err := f.svc.Ack(ctx, c, car, ref, task.ID)
			return err
		},
		"checkpoint": func(c *continuo.Caller, car swarm.Carrier, ref swarm.WorkerRef) error {
			_, err := f.svc.Checkpoint(ctx, c, car, ref, json.RawMessage(`{"s":1}`))
			return err
		},
		"submit": func(c *continuo.Caller, car swarm.Carrier, ref swarm.WorkerRef) error {
			_, err := f.svc.Submit(ctx, c, car, ref, task.ID, "r")
			return err
		},
		"fail": func(c *continuo.Caller, car swarm.Carrier, ref swarm.WorkerRef) error {
			_, err := f.svc.Fail(ctx, c, car, ref, task.ID, "why", swarm.EffectNone)
			return err
		},
	}
	before := f.task(inv.Swarm.ID, task.ID)
	for name, call := range calls {
		e := wantCode(t, call(x.c, f.carrier(), x.ref), continuo.CodeCarrierFenced, name+" from another carrier")
		if e.Details["epoch"] != int64(0) {
			t.Errorf("%s: details %v", name, e.Details)
		}
		wantCode(t, call(x.c, x.car, swarm.WorkerRef{WorkerID: x.ref.WorkerID, Epoch: 1}), continuo.CodeCarrierFenced, name+" at a wrong epoch")
		wantCode(t, call(f.outer, x.car, x.ref), continuo.CodeNotFound, name+" from another group")
		wantCode(t, call(x.c, x.car, swarm.WorkerRef{WorkerID: "wkr_nope"}), continuo.CodeNotFound, name+" of an unknown worker")
		wantCode(t, call(f.owner, ownerCar, x.ref), continuo.CodeForbidden, name+" without swarm:work")
	}
	after := f.task(inv.Swarm.ID, task.ID)
	if after.Task.Revision != before.Task.Revision || after.Attempt.State != before.Attempt.State {
		t.Errorf("refused calls changed the task: %+v → %+v", before, after)
	}
	// Owner tools refuse a worker's carrier, whatever its scopes.
	admin := &continuo.Caller{PrincipalID: x.c.PrincipalID, GroupID: x.c.GroupID, Scopes: []continuo.Scope{continuo.ScopeAdmin}}
	_, err := f.svc.Dispatch(ctx, admin, x.car, swarm.DispatchInput{SwarmID: inv.Swarm.ID, TaskKey: "z", Prompt: "p"})
	wantCode(t, err, continuo.CodeForbidden, "dispatch from a worker's carrier")
	_, err = f.svc.SwarmStatus(ctx, x.c, x.car, inv.Swarm.ID)
	wantCode(t, err, continuo.CodeForbidden, "status without swarm:own")
}

func TestDispatch(t *testing.T) { stores.Each(t, testDispatch) }

func testDispatch(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	inv := f.create(4, nil)
	in := swarm.DispatchInput{SwarmID: inv.Swarm.ID, TaskKey: "k", Prompt: "p", Payload: json.RawMessage(`{ "a": [1, 2] }`)}
	r1, err := f.svc.Dispatch(ctx, f.owner, ownerCar, in)
	if err != nil || r1.Replayed || r1.Task.Payload != `{"a":[1,2]}` {
		t.Fatalf("dispatch: %+v %v", r1, err)
	}
	in.Payload = json.RawMessage(`{"a":[1,2]}`)
	r2, err := f.svc.Dispatch(ctx, f.owner, ownerCar, in)
	if err != nil || !r2.Replayed || r2.Task.ID != r1.Task.ID {
		t.Fatalf("replay (same JSON, other spacing): %+v %v", r2, err)
	}
	in.Prompt = "other"
	_, err = f.svc.Dispatch(ctx, f.owner, ownerCar, in)
	wantCode(t, err, continuo.CodeConflict, "same key, other prompt")
	for name, bad := range map[string]swarm.DispatchInput{
		"no key":          {SwarmID: inv.Swarm.ID, Prompt: "p"},
		"long key":        {SwarmID: inv.Swarm.ID, TaskKey: string(make([]byte, 129)), Prompt: "p"},
		"no prompt":       {SwarmID: inv.Swarm.ID, TaskKey: "b"},
		"huge prompt":     {SwarmID: inv.Swarm.ID, TaskKey: "b", Prompt: string(make([]byte, continuo.MaxTaskPrompt+1))},
		"bad payload":     {SwarmID: inv.Swarm.ID, TaskKey: "b", Prompt: "p", Payload: json.RawMessage(`{`)},
		"unknown prefers": {SwarmID: inv.Swarm.ID, TaskKey: "b", Prompt: "p", PreferredWorkerID: "wkr_x"},
	} {
		_, err := f.svc.Dispatch(ctx, f.owner, ownerCar, bad)
		if code := continuo.ErrorCode(err); code != continuo.CodeInvalidInput {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, err = f.svc.Dispatch(ctx, f.owner, ownerCar, swarm.DispatchInput{SwarmID: inv.Swarm.ID, TaskKey: "b", Prompt: "p",
		Payload: json.RawMessage(`"` + string(make([]byte, continuo.MaxTaskPayload)) + `"`)})
	wantCode(t, err, continuo.CodeTooLarge, "huge payload")
	_, err = f.svc.Dispatch(ctx, f.outer, ownerCar, swarm.DispatchInput{SwarmID: inv.Swarm.ID, TaskKey: "b", Prompt: "p"})
	wantCode(t, err, continuo.CodeNotFound, "another group's swarm")
	st, err := f.svc.SwarmStatus(ctx, f.owner, ownerCar, inv.Swarm.ID)
	if err != nil || st.Counts[continuo.TaskQueued] != 1 || len(st.Counts) != 1 {
		t.Fatalf("refused dispatches wrote something: %+v %v", st, err)
	}
	// Credentials in a prompt never reach a worker.
	r, err := f.svc.Dispatch(ctx, f.owner, ownerCar, swarm.DispatchInput{SwarmID: inv.Swarm.ID, TaskKey: "s",
		Prompt: "use OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"})
	if err != nil || r.Task.Prompt == "" || containsSecret(r.Task.Prompt) {
		t.Fatalf("prompt kept a secret: %+v %v", r, err)
	}
}

func containsSecret(s string) bool {
	return len(s) > 0 && (contains(s, "sk-proj-abcdefghijklmnop"))
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestPreferred(t *testing.T) { stores.Each(t, testPreferred) }

func testPreferred(t *testing.T) {
	f := newFixture(t)
	inv := f.create(4, nil)
	a, b := f.join(inv, "a"), f.join(inv, "b")
	any1 := f.dispatch(inv.Swarm.ID, "any1", "")
	forB := f.dispatch(inv.Swarm.ID, "forB", b.ref.WorkerID)
	if d := f.next(b); d.Task == nil || d.Task.ID != forB.ID {
		t.Fatalf("b should get its preferred task first: %+v", d)
	}
	forB2 := f.dispatch(inv.Swarm.ID, "forB2", b.ref.WorkerID)
	if d := f.next(a); d.Task == nil || d.Task.ID != any1.ID {
		t.Fatalf("a gets the unpreferred task: %+v", d)
	}
	ctx := t.Context()
	if _, err := f.svc.Submit(ctx, a.c, a.car, a.ref, any1.ID, "r"); err != nil {
		t.Fatal(err)
	}
	if d := f.next(a); d.State != swarm.NextIdle {
		t.Fatalf("a must never take b's task: %+v (%s)", d, forB2.ID)
	}
}

func TestLeaseExpiry(t *testing.T) { stores.Each(t, testLeaseExpiry) }

func testLeaseExpiry(t *testing.T) {
	for _, requeue := range []bool{false, true} {
		for _, acked := range []bool{false, true} {
			t.Run(fmt.Sprintf("requeue=%v,acked=%v", requeue, acked), func(t *testing.T) {
				f := newFixture(t)
				ctx := t.Context()
				policy := continuo.DefaultSwarmPolicy()
				policy.RequeueUnacked = requeue
				inv := f.create(4, &policy)
				x := f.join(inv, "w")
				task := f.dispatch(inv.Swarm.ID, "k", "")
				d := f.next(x)
				if acked {
					if _, err := f.svc.Ack(ctx, x.c, x.car, x.ref, task.ID); err != nil {
						t.Fatal(err)
					}
				}
				f.clock.add(policy.LeaseTTL() - time.Second)
				if err := f.svc.Sweep(ctx); err != nil {
					t.Fatal(err)
				}
				if st := f.task(inv.Swarm.ID, task.ID); st.Task.State.Terminal() || st.Task.State == continuo.TaskQueued || st.Task.State == continuo.TaskReconcileRequired {
					t.Fatalf("swept before the lease ran out: %s", st.Task.State)
				}
				f.clock.add(2 * time.Second)
				if err := f.svc.Sweep(ctx); err != nil {
					t.Fatal(err)
				}
				st := f.task(inv.Swarm.ID, task.ID)
				if requeue && !acked {
					if st.Task.State != continuo.TaskQueued || st.Attempt.State != continuo.AttemptRequeued {
						t.Fatalf("an unacked claim should requeue: %+v", st)
					}
					y := f.join(inv, "y")
					d2 := f.next(y)
					if d2.Task == nil || d2.Task.ID != task.ID || d2.Attempt.Number != 2 {
						t.Fatalf("requeued task as a new attempt: %+v", d2)
					}
					_, err := f.svc.Submit(ctx, x.c, x.car, x.ref, task.ID, "late")
					wantCode(t, err, continuo.CodeConflict, "the first worker's late submit")
					return
				}
				if st.Task.State != continuo.TaskReconcileRequired || st.Task.Reason != continuo.ReasonLeaseExpired || st.Attempt.State != continuo.AttemptInDoubt {
					t.Fatalf("want reconcile_required: %+v", st)
				}
				// The in-doubt task is never delivered again, and its late
				// result is refused with the reason.
				if d := f.next(x); d.State != swarm.NextIdle {
					t.Fatalf("in-doubt task delivered again: %+v", d)
				}
				_, err := f.svc.Submit(ctx, x.c, x.car, x.ref, task.ID, "late")
				wantCode(t, err, continuo.CodeReconcileRequired, "a late submit")
				reconcile(t, f, inv.Swarm.ID, task.ID, d.Attempt.ID)
			})
		}
	}
}

// reconcile walks the owner's decisions on a task in doubt.
func reconcile(t *testing.T, f *fixture, swarmID, taskID, attemptID string) {
	ctx := t.Context()
	in := swarm.ReconcileInput{SwarmID: swarmID, TaskID: taskID, AttemptID: attemptID, Decision: swarm.DecideRequeue,
		Disposition: swarm.EffectUnknown, Evidence: "not sure"}
	_, err := f.svc.Reconcile(ctx, f.owner, ownerCar, in)
	if e := wantCode(t, err, continuo.CodeReconcileRequired, "requeue without no_effect"); e.Details["field"] != "evidence.disposition" {
		t.Errorf("requeue without no_effect: details %v", e.Details)
	}
	in.Disposition, in.AttemptID = swarm.NoEffect, continuo.NewID(continuo.PrefixAttempt, f.clock.now())
	_, err = f.svc.Reconcile(ctx, f.owner, ownerCar, in)
	wantCode(t, err, continuo.CodeNotFound, "evidence naming an unknown attempt")
	in.AttemptID = attemptID
	r, err := f.svc.Reconcile(ctx, f.owner, ownerCar, in)
	if err != nil || r.Task.State != continuo.TaskQueued {
		t.Fatalf("requeue: %+v %v", r, err)
	}
	if r, err := f.svc.Reconcile(ctx, f.owner, ownerCar, in); err != nil || !r.Replayed {
		t.Fatalf("requeue replay: %+v %v", r, err)
	}
}

func TestReconcileAttempts(t *testing.T) { stores.Each(t, testReconcileAttempts) }

// testReconcileAttempts: the owner's evidence names the latest attempt; an
// earlier attempt of the task is a conflict, another task's attempt is
// not_found.
func testReconcileAttempts(t *testing.T) {
	f, inv, x := oneWorker(t, "x")
	ctx := t.Context()
	other := f.dispatch(inv.Swarm.ID, "other", "")
	otherAttempt := f.next(x).Attempt.ID
	if _, err := f.svc.Submit(ctx, x.c, x.car, x.ref, other.ID, "r"); err != nil {
		t.Fatal(err)
	}
	task := f.dispatch(inv.Swarm.ID, "k", "")
	var attempts []string
	for range 2 {
		d := f.next(x)
		attempts = append(attempts, d.Attempt.ID)
		if _, err := f.svc.Fail(ctx, x.c, x.car, x.ref, task.ID, "crashed", swarm.EffectMaybe); err != nil {
			t.Fatal(err)
		}
		if len(attempts) == 1 {
			reconcile(t, f, inv.Swarm.ID, task.ID, d.Attempt.ID)
		}
	}
	in := swarm.ReconcileInput{SwarmID: inv.Swarm.ID, TaskID: task.ID, AttemptID: attempts[0], Decision: swarm.DecideFailed,
		Disposition: swarm.EffectApplied, Evidence: "it broke things"}
	_, err := f.svc.Reconcile(ctx, f.owner, ownerCar, in)
	if e := wantCode(t, err, continuo.CodeConflict, "evidence naming an earlier attempt"); e.Details["attempt_id"] != attempts[1] {
		t.Errorf("conflict details %v, want the latest attempt %s", e.Details, attempts[1])
	}
	in.AttemptID = otherAttempt
	_, err = f.svc.Reconcile(ctx, f.owner, ownerCar, in)
	wantCode(t, err, continuo.CodeNotFound, "evidence naming another task's attempt")
	in.AttemptID = attempts[1]
	if r, err := f.svc.Reconcile(ctx, f.owner, ownerCar, in); err != nil || r.Task.State != continuo.TaskFailed {
		t.Fatalf("failed on the latest attempt: %+v %v", r, err)
	}
}

func TestServerRestart(t *testing.T) { stores.Each(t, testServerRestart) }

func testServerRestart(t *testing.T) {
	f, inv, x := oneWorker(t, "x")
	y := f.join(inv, "y")
	ctx := t.Context()
	t1, t2 := f.dispatch(inv.Swarm.ID, "t1", ""), f.dispatch(inv.Swarm.ID, "t2", "")
	f.next(x)
	f.next(y)
	if _, err := f.svc.Submit(ctx, y.c, y.car, y.ref, t2.ID, "done"); err != nil {
		t.Fatal(err)
	}
	// Another server process on the same store, which knows the first is
	// gone (a restart): what the first delivered is in doubt.
	later := swarm.New(f.store, swarm.Options{Now: f.clock.now, Server: "restarted",
		Alive: func(s string) (bool, bool) { return s != "test-server", true }})
	t.Cleanup(later.Close)
	if err := later.Start(); err != nil {
		t.Fatal(err)
	}
	st := f.task(inv.Swarm.ID, t1.ID)
	if st.Task.State != continuo.TaskReconcileRequired || st.Task.Reason != continuo.ReasonServerRestart {
		t.Fatalf("after a restart: %+v", st.Task)
	}
	if st := f.task(inv.Swarm.ID, t2.ID); st.Task.State != continuo.TaskResultReady {
		t.Fatalf("a submitted task is untouched: %s", st.Task.State)
	}
	// A server whose liveness cannot be told (another host) leaves its
	// attempts to their leases.
	f.dispatch(inv.Swarm.ID, "t3", "")
	f.next(y)
	unknown := swarm.New(f.store, swarm.Options{Now: f.clock.now, Server: "elsewhere",
		Alive: func(string) (bool, bool) { return false, false }})
	if err := unknown.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := f.svc.SwarmStatus(ctx, f.owner, ownerCar, inv.Swarm.ID)
	if err != nil || s.Counts[continuo.TaskClaimed] != 1 {
		t.Fatalf("unknown liveness swept: %+v %v", s, err)
	}
}

func TestFail(t *testing.T) { stores.Each(t, testFail) }

func testFail(t *testing.T) {
	f, inv, x := oneWorker(t, "x")
	ctx := t.Context()
	cases := []struct {
		effect swarm.Effect
		cancel bool
		want   continuo.TaskState
	}{
		{swarm.EffectNone, false, continuo.TaskFailed},
		{swarm.EffectMaybe, false, continuo.TaskReconcileRequired},
		{swarm.EffectNone, true, continuo.TaskCancelled},
		{swarm.EffectMaybe, true, continuo.TaskReconcileRequired},
	}
	for i, c := range cases {
		task := f.dispatch(inv.Swarm.ID, fmt.Sprint("k", i), "")
		if d := f.next(x); d.Task == nil || d.Task.ID != task.ID {
			t.Fatalf("case %d: %+v", i, d)
		}
		if c.cancel {
			r, err := f.svc.Cancel(ctx, f.owner, ownerCar, inv.Swarm.ID, task.ID)
			if err != nil || r.Task.State != continuo.TaskCancelRequested {
				t.Fatalf("cancel a held task: %+v %v", r, err)
			}
		}
		r, err := f.svc.Fail(ctx, x.c, x.car, x.ref, task.ID, "broke", c.effect)
		if err != nil || r.Task.State != c.want {
			t.Fatalf("case %d: %+v %v", i, r, err)
		}
		if r, err := f.svc.Fail(ctx, x.c, x.car, x.ref, task.ID, "broke", c.effect); err != nil || !r.Replayed {
			t.Fatalf("case %d replay: %+v %v", i, r, err)
		}
	}
	queued := f.dispatch(inv.Swarm.ID, "q", "")
	r, err := f.svc.Cancel(ctx, f.owner, ownerCar, inv.Swarm.ID, queued.ID)
	if err != nil || r.Task.State != continuo.TaskCancelled {
		t.Fatalf("cancel queued: %+v %v", r, err)
	}
	if d := f.next(x); d.State != swarm.NextIdle {
		t.Fatalf("a cancelled task was delivered: %+v", d)
	}
}

func TestCheckpointRefusesSecrets(t *testing.T) { stores.Each(t, testCheckpointRefusesSecrets) }

func testCheckpointRefusesSecrets(t *testing.T) {
	f, inv, x := oneWorker(t, "x")
	ctx := t.Context()
	for _, bad := range []string{
		`{"summary": "ok", "notes": ["fine", "token ghp_XdnYcLxQlNnVxKW3x9KsQuKf0ElTELYCRPkl"]}`,
		`{"api_key": "abc123def456"}`,
		// What a security review found checkpoints accepting (issue 23),
		// each fake.
		`{"summary": "I pasted the bot token MTA0MjM0NTY3ODkwMTIzNDU2.GAbCdE.aB3dE5gH7jK9mN2pQ4rS6tU8vW0xY1zA3bC into the config"}`,
		`{"summary": "alerts go through 7123456789:AAHk3mP9qR2sT5uV8wX1yZ4aB7cD0eF3gH6 now"}`,
		`{"summary": "Mailgun: sending with key-3ax6xnjp29jd6fds4gc373sgvjxteol0 from the sandbox"}`,
		`{"summary": "logged in with vault login hvs.CAESIJ7kLm2nP4qR6sT8vX0yZ3aB"}`,
		`{"next": "aws configure set aws_secret_access_key wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ9vB2nL4k --profile ci"}`,
		`{"summary": "the old aws secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ9vB2nL4k still works"}`,
		`{"summary": "Twilio account AC0123456789abcdef0123456789abcdef with auth 9f8e7d6c5b4a39281706f5e4d3c2b1a0"}`,
		`{"summary": "doppler run --token dp.st.dev.x7Kq2mN9pR4sT6vW8yZ1aB3cD5eF7gH9jK2lM4nP6q -- make"}`,
		`{"summary": "the staging DB password is Tr0ub4dor&3x until Friday"}`,
		`{"summary": "export OPENAI_API_KEY=sk-abc123def4\\\ngh5678ijkl9012mnop3456"}`,
		`{"summary": "the access key is ＡＫＩＡＱ３ＥＧＹＷＬ２ＸＮ７ＰＡＦＤ６ for the ci user"}`,
	} {
		_, err := f.svc.Checkpoint(ctx, x.c, x.car, x.ref, json.RawMessage(bad))
		e := wantCode(t, err, continuo.CodeInvalidInput, bad)
		if e.Details["path"] == nil {
			t.Errorf("%s: no path in %v", bad, e.Details)
		}
	}
	for _, bad := range []string{`[1]`, `"s"`, `{`} {
		_, err := f.svc.Checkpoint(ctx, x.c, x.car, x.ref, json.RawMessage(bad))
		wantCode(t, err, continuo.CodeInvalidInput, bad)
	}
	st, _ := f.svc.SwarmStatus(ctx, f.owner, ownerCar, inv.Swarm.ID)
	if st.Workers[0].Checkpoint != "" {
		t.Fatalf("a refused checkpoint was kept: %s", st.Workers[0].Checkpoint)
	}
}

func TestCloseRefusesOpenTasks(t *testing.T) { stores.Each(t, testCloseRefusesOpenTasks) }

func testCloseRefusesOpenTasks(t *testing.T) {
	f, inv, x := oneWorker(t, "x")
	ctx := t.Context()
	task := f.dispatch(inv.Swarm.ID, "k", "")
	_, err := f.svc.CloseSwarm(ctx, f.owner, ownerCar, inv.Swarm.ID)
	wantCode(t, err, continuo.CodeInvalidState, "close with a queued task")
	// A waiting worker is woken by the close.
	done := make(chan *swarm.Delivery, 1)
	f.next(x)
	if _, err := f.svc.Submit(ctx, x.c, x.car, x.ref, task.ID, "r"); err != nil {
		t.Fatal(err)
	}
	go func() {
		d, err := f.svc.Next(ctx, x.c, x.car, x.ref, 20*time.Second, nil)
		if err != nil {
			t.Error(err)
		}
		done <- d
	}()
	if _, err := f.svc.CloseSwarm(ctx, f.owner, ownerCar, inv.Swarm.ID); err != nil {
		t.Fatal(err)
	}
	if d := <-done; d == nil || d.State != swarm.NextClosed {
		t.Fatalf("waiting worker: %+v", d)
	}
}

// TestWake: a worker waiting in next gets a task dispatched while it
// waits, and a wake-up passes on so that a burst reaches every waiter.
func TestWake(t *testing.T) { stores.Each(t, testWake) }

func testWake(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	inv := f.create(8, nil)
	const n = 8
	ws := make([]*w, n)
	for i := range ws {
		ws[i] = f.join(inv, fmt.Sprint("w", i))
	}
	got := make(chan string, n)
	var wg sync.WaitGroup
	for _, x := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := f.svc.Next(ctx, x.c, x.car, x.ref, 25*time.Second, nil)
			if err != nil {
				t.Error(err)
				return
			}
			if d.Task != nil {
				got <- d.Task.ID
			}
		}()
	}
	want := map[string]bool{}
	for i := 0; i < n; i++ {
		want[f.dispatch(inv.Swarm.ID, fmt.Sprint("k", i), "").ID] = true
	}
	wg.Wait()
	close(got)
	for id := range got {
		if !want[id] {
			t.Errorf("unexpected or repeated task %s", id)
		}
		delete(want, id)
	}
	if len(want) != 0 {
		t.Errorf("tasks nobody got: %v", want)
	}
}

// TestOneClaim: many workers calling next at once on one queued task:
// exactly one gets it, every trial — with ack (the one-call protocol's
// next, which claims and starts it) on every other trial, its winner
// handing it in with submit-and-next. 100 trials are 3,200 racing claims
// (500 took minutes per engine under -race, the package's longest test).
func TestOneClaim(t *testing.T) { stores.Each(t, testOneClaim) }

func testOneClaim(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	const workers = 32
	trials := 100
	if testing.Short() {
		trials = 50
	}
	inv := f.create(workers, nil)
	ws := make([]*w, workers)
	for i := range ws {
		ws[i] = f.join(inv, fmt.Sprint("w", i))
	}
	for trial := 0; trial < trials; trial++ {
		task := f.dispatch(inv.Swarm.ID, fmt.Sprint("t", trial), "")
		ack := trial%2 == 0
		var claims atomic.Int32
		var winner atomic.Pointer[w]
		var wg sync.WaitGroup
		for _, x := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d, err := f.svc.Deliver(ctx, x.c, x.car, x.ref, swarm.NextOptions{Ack: ack})
				if err != nil {
					t.Errorf("trial %d: %v", trial, err)
					return
				}
				if d.Task != nil {
					claims.Add(1)
					winner.Store(x)
					if want := map[bool]continuo.TaskState{true: continuo.TaskRunning, false: continuo.TaskClaimed}[ack]; d.Task.State != want {
						t.Errorf("trial %d: the claimed task is %s, want %s", trial, d.Task.State, want)
					}
				}
			}()
		}
		wg.Wait()
		if claims.Load() != 1 {
			t.Fatalf("trial %d: %d claims of one task", trial, claims.Load())
		}
		x := winner.Load()
		if s, err := f.svc.SubmitNext(ctx, x.c, x.car, x.ref, task.ID, "r", swarm.NextOptions{Ack: ack}); err != nil || s.NextErr != nil ||
			s.Next.State != swarm.NextIdle {
			t.Fatalf("trial %d: submit and next: %+v %v", trial, s, err)
		}
	}
}

// TestSubmitCancelRace: a worker's submit racing the owner's cancel: one
// of the two outcomes, consistent, every trial.
func TestSubmitCancelRace(t *testing.T) { stores.Each(t, testSubmitCancelRace) }

func testSubmitCancelRace(t *testing.T) {
	f, inv, x := oneWorker(t, "x")
	ctx := t.Context()
	for trial := 0; trial < 50; trial++ {
		task := f.dispatch(inv.Swarm.ID, fmt.Sprint("t", trial), "")
		f.next(x)
		var wg sync.WaitGroup
		var submitErr, cancelErr error
		wg.Add(2)
		go func() { defer wg.Done(); _, submitErr = f.svc.Submit(ctx, x.c, x.car, x.ref, task.ID, "r") }()
		go func() { defer wg.Done(); _, cancelErr = f.svc.Cancel(ctx, f.owner, ownerCar, inv.Swarm.ID, task.ID) }()
		wg.Wait()
		st := f.task(inv.Swarm.ID, task.ID)
		// The submit always lands (cancel_requested still takes a result);
		// a cancel after it is told the task is settled.
		if submitErr != nil || st.Task.State != continuo.TaskResultReady {
			t.Fatalf("trial %d: submit %v, state %s", trial, submitErr, st.Task.State)
		}
		if cancelErr != nil && continuo.ErrorCode(cancelErr) != continuo.CodeTerminalImmutable {
			t.Fatalf("trial %d: cancel %v", trial, cancelErr)
		}
	}
}

// TestDispatchReplayRace: the same dispatch sent concurrently makes one
// task; every caller gets it.
func TestDispatchReplayRace(t *testing.T) { stores.Each(t, testDispatchReplayRace) }

func testDispatchReplayRace(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	inv := f.create(4, nil)
	for trial := 0; trial < 20; trial++ {
		ids := make([]string, 8)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := f.svc.Dispatch(ctx, f.owner, ownerCar, swarm.DispatchInput{SwarmID: inv.Swarm.ID, TaskKey: fmt.Sprint("k", trial), Prompt: "p"})
				if err != nil {
					t.Errorf("trial %d: %v", trial, err)
					return
				}
				ids[i] = r.Task.ID
			}()
		}
		wg.Wait()
		for _, id := range ids {
			if id != ids[0] {
				t.Fatalf("trial %d: two tasks for one key: %v", trial, ids)
			}
		}
	}
	st, _ := f.svc.SwarmStatus(ctx, f.owner, ownerCar, inv.Swarm.ID)
	if st.Counts[continuo.TaskQueued] != 20 {
		t.Fatalf("counts %v", st.Counts)
	}
}

// TestOrphanOnCall: a task delivered by a server that died is in doubt as
// soon as its worker calls through a survivor, before any reaper pass: its
// submit is refused and the refusal's settlement is committed; its next
// gets a new task, never the old one again.
func TestOrphanOnCall(t *testing.T) { stores.Each(t, testOrphanOnCall) }

func testOrphanOnCall(t *testing.T) {
	f, inv, x := oneWorker(t, "x")
	y := f.join(inv, "y")
	ctx := t.Context()
	t1, t2 := f.dispatch(inv.Swarm.ID, "t1", ""), f.dispatch(inv.Swarm.ID, "t2", "")
	f.next(x)
	f.next(y)
	// The survivor: it knows the first server ("test-server") is gone, and
	// its reaper has not run.
	survivor := swarm.New(f.store, swarm.Options{Now: f.clock.now, Server: "survivor",
		Alive: func(s string) (bool, bool) { return s != "test-server", true }})
	t.Cleanup(survivor.Close)
	_, err := survivor.Submit(ctx, x.c, x.car, x.ref, t1.ID, "done")
	wantCode(t, err, continuo.CodeReconcileRequired, "submit of a task a dead server delivered")
	if st := f.task(inv.Swarm.ID, t1.ID); st.Task.State != continuo.TaskReconcileRequired || st.Task.Reason != continuo.ReasonServerRestart {
		t.Fatalf("after the refused submit: %+v", st.Task)
	}
	t3 := f.dispatch(inv.Swarm.ID, "t3", "")
	d, err := survivor.Next(ctx, y.c, y.car, y.ref, 0, nil)
	if err != nil || d.Task == nil || d.Task.ID != t3.ID || d.Redelivery {
		t.Fatalf("next through the survivor: %+v %v (t2 %s must not come back)", d, err, t2.ID)
	}
	if st := f.task(inv.Swarm.ID, t2.ID); st.Task.State != continuo.TaskReconcileRequired {
		t.Fatalf("t2: %s", st.Task.State)
	}
	// What the survivor delivers itself is its own.
	if r, err := survivor.Submit(ctx, y.c, y.car, y.ref, t3.ID, "r3"); err != nil || r.Task.State != continuo.TaskResultReady {
		t.Fatalf("submit to the survivor: %+v %v", r, err)
	}
}

func TestListTasks(t *testing.T) { stores.Each(t, testListTasks) }

func testListTasks(t *testing.T) {
	f, inv, x := oneWorker(t, "x")
	ctx := t.Context()
	var want []string
	for i := range 5 {
		want = append(want, f.dispatch(inv.Swarm.ID, fmt.Sprint("k", i), "").ID)
	}
	d := f.next(x)
	if _, err := f.svc.Submit(ctx, x.c, x.car, x.ref, d.Task.ID, "r"); err != nil {
		t.Fatal(err)
	}
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		p, err := f.svc.ListTasks(ctx, f.owner, ownerCar, inv.Swarm.ID, continuo.TaskQueued, after, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range p.Tasks {
			got = append(got, task.ID)
		}
		if p.Next == "" {
			break
		}
		after = p.Next
		if pages > 3 {
			t.Fatal("paging does not end")
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want[1:]) {
		t.Fatalf("queued pages %v, want %v", got, want[1:])
	}
	p, err := f.svc.ListTasks(ctx, f.owner, ownerCar, inv.Swarm.ID, continuo.TaskResultReady, "", 0)
	if err != nil || len(p.Tasks) != 1 || p.Tasks[0].ID != want[0] || p.Next != "" {
		t.Fatalf("result_ready: %+v %v", p, err)
	}
	_, err = f.svc.ListTasks(ctx, f.outer, ownerCar, inv.Swarm.ID, continuo.TaskQueued, "", 0)
	wantCode(t, err, continuo.CodeNotFound, "another group's tasks")
}
