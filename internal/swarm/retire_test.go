package swarm_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/swarm"
)

// worker is worker x as the owner's status shows it.
func (f *fixture) worker(inv *swarm.Invited, x *w) continuo.Worker {
	f.t.Helper()
	st, err := f.svc.SwarmStatus(f.t.Context(), f.owner, ownerCar, inv.Swarm.ID)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, w := range st.Workers {
		if w.ID == x.ref.WorkerID {
			return w
		}
	}
	f.t.Fatalf("no worker %s", x.ref.WorkerID)
	return continuo.Worker{}
}

// TestLeaveRemove: a worker leaves, or the owner removes it, only at a
// safe boundary (unsafe_boundary with the reason otherwise); retired, it
// takes no slot — a new worker joins in its place — its carrier is fenced
// for good (told it was retired, never "continued"), status says why, and
// either call again is a replay.
func TestLeaveRemove(t *testing.T) { stores.Each(t, testLeaveRemove) }

func testLeaveRemove(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	inv := f.create(2, nil)
	id := inv.Swarm.ID
	x, y := f.join(inv, "x"), f.join(inv, "y")
	_, err := f.svc.Join(ctx, f.member(), f.carrier(), swarm.JoinInput{SwarmID: id, Invite: inv.Invite, Label: "z"})
	wantCode(t, err, continuo.CodeCapacityFull, "a third worker in a swarm of two")

	// Holding a task, neither way retires it.
	task := f.dispatch(id, "held", x.ref.WorkerID)
	f.next(x)
	_, err = f.svc.Leave(ctx, x.c, x.car, x.ref)
	if e := wantCode(t, err, continuo.CodeUnsafeBoundary, "leave holding a task"); e.Details["reason"] != "task_in_flight" || e.Details["task_id"] != task.ID {
		t.Fatalf("details %v", e.Details)
	}
	_, err = f.svc.RemoveWorker(ctx, f.owner, ownerCar, id, x.ref.WorkerID)
	wantCode(t, err, continuo.CodeUnsafeBoundary, "remove holding a task")
	if _, err := f.svc.Submit(ctx, x.c, x.car, x.ref, task.ID, "done"); err != nil {
		t.Fatal(err)
	}

	// It leaves; again is a replay.
	l, err := f.svc.Leave(ctx, x.c, x.car, x.ref)
	if err != nil || l.Replayed || l.Worker.RetiredReason != continuo.RetiredLeft || l.Worker.RetiredAt == nil ||
		l.Worker.CarrierState != continuo.CarrierRetired {
		t.Fatalf("leave: %+v %v", l, err)
	}
	if again, err := f.svc.Leave(ctx, x.c, x.car, x.ref); err != nil || !again.Replayed || again.Worker.RetiredReason != continuo.RetiredLeft {
		t.Fatalf("leave again: %+v %v", again, err)
	}
	// Its carrier is fenced and told why; another carrier is not the one
	// that left.
	_, err = f.svc.Next(ctx, x.c, x.car, x.ref, 0, nil)
	if e := wantCode(t, err, continuo.CodeCarrierFenced, "next after leaving"); e.Details["reason"] != "retired" || e.Details["retired_reason"] != "left" {
		t.Fatalf("details %v", e.Details)
	}
	_, err = f.svc.Leave(ctx, x.c, f.carrier(), x.ref)
	wantCode(t, err, continuo.CodeCarrierFenced, "leave by another carrier")
	_, err = f.svc.Checkpoint(ctx, x.c, x.car, x.ref, []byte(`{"summary":"x"}`))
	wantCode(t, err, continuo.CodeCarrierFenced, "checkpoint after leaving")
	if got := f.worker(inv, x); got.RetiredReason != continuo.RetiredLeft {
		t.Fatalf("status shows %+v", got)
	}
	// A task preferring it cannot be dispatched.
	_, err = f.svc.Dispatch(ctx, f.owner, ownerCar, swarm.DispatchInput{SwarmID: id, TaskKey: "for x", Prompt: "p", PreferredWorkerID: x.ref.WorkerID})
	wantCode(t, err, continuo.CodeInvalidInput, "a task preferring a retired worker")

	// Its slot is free.
	z := f.join(inv, "z")
	// The owner removes y (idle, no task); again is a replay; the carrier
	// that left cannot join again.
	r, err := f.svc.RemoveWorker(ctx, f.owner, ownerCar, id, y.ref.WorkerID)
	if err != nil || r.Replayed || r.Worker.RetiredReason != continuo.RetiredRemoved {
		t.Fatalf("remove: %+v %v", r, err)
	}
	if again, err := f.svc.RemoveWorker(ctx, f.owner, ownerCar, id, y.ref.WorkerID); err != nil || !again.Replayed {
		t.Fatalf("remove again: %+v %v", again, err)
	}
	if again, err := f.svc.RemoveWorker(ctx, f.owner, ownerCar, id, x.ref.WorkerID); err != nil || !again.Replayed ||
		again.Worker.RetiredReason != continuo.RetiredLeft {
		t.Fatalf("remove of the worker that left: %+v %v", again, err)
	}
	_, err = f.svc.Next(ctx, y.c, y.car, y.ref, 0, nil)
	wantCode(t, err, continuo.CodeCarrierFenced, "next after removal")
	_, err = f.svc.Join(ctx, x.c, x.car, swarm.JoinInput{SwarmID: id, Invite: inv.Invite, Label: "x"})
	wantCode(t, err, continuo.CodeConflict, "the carrier that left joining again")
	// Another group's owner sees no worker; a worker cannot remove one.
	_, err = f.svc.RemoveWorker(ctx, f.outer, ownerCar, id, z.ref.WorkerID)
	wantCode(t, err, continuo.CodeNotFound, "another group's owner")
	_, err = f.svc.RemoveWorker(ctx, z.c, z.car, id, z.ref.WorkerID)
	wantCode(t, err, continuo.CodeForbidden, "a worker removing")

	// A worker with a continuation open is not at a safe boundary.
	cp := f.checkpointed(inv, "cp")
	p := f.prepare(inv, cp)
	_, err = f.svc.RemoveWorker(ctx, f.owner, ownerCar, id, cp.ref.WorkerID)
	if e := wantCode(t, err, continuo.CodeUnsafeBoundary, "remove with a continuation open"); e.Details["continuation_id"] != p.Continuation.ID {
		t.Fatalf("details %v", e.Details)
	}
	if _, _, err := f.svc.Revoke(ctx, f.owner, ownerCar, id, p.Continuation.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.RemoveWorker(ctx, f.owner, ownerCar, id, cp.ref.WorkerID); err != nil {
		t.Fatal(err)
	}
	var n int
	storeRead(f, func(tx store.Tx) (err error) { n, err = tx.WorkerCount(ctx, id); return err })
	if n != 1 {
		t.Fatalf("%d workers take a slot, want 1 (z)", n)
	}
}

// TestIdleRetired: the reaper retires a worker whose carrier stayed silent
// past its swarm's worker_idle_ttl_secs with no task in flight; a worker
// whose carrier keeps calling next (idle), one holding a task and one
// with a continuation open are left as they are.
func TestIdleRetired(t *testing.T) { stores.Each(t, testIdleRetired) }

func testIdleRetired(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	policy := continuo.DefaultSwarmPolicy()
	policy.WorkerIdleTTLSecs, policy.LeaseTTLSecs = 300, 3600 // the busy worker's lease outlasts the test
	inv := f.create(8, &policy)
	id := inv.Swarm.ID
	silent, calling, busy := f.join(inv, "silent"), f.join(inv, "calling"), f.join(inv, "busy")
	pending := f.checkpointed(inv, "pending")
	f.prepare(inv, pending)
	f.dispatch(id, "long task", busy.ref.WorkerID)
	f.next(busy)
	// Six minutes pass; the calling worker calls next every 25 s or so.
	for range 15 {
		f.clock.add(25 * time.Second)
		f.next(calling)
	}
	if err := f.svc.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		x    *w
		want continuo.RetiredReason
	}{{silent, continuo.RetiredIdle}, {calling, ""}, {busy, ""}, {pending, ""}} {
		if got := f.worker(inv, c.x); got.RetiredReason != c.want {
			t.Errorf("worker %s: retired %q, want %q", got.Label, got.RetiredReason, c.want)
		}
	}
	_, err := f.svc.Next(ctx, silent.c, silent.car, silent.ref, 0, nil)
	if e := wantCode(t, err, continuo.CodeCarrierFenced, "the idle worker's late next"); e.Details["retired_reason"] != "idle" {
		t.Fatalf("details %v", e.Details)
	}
	// A policy's idle TTL is bounded.
	for _, secs := range []int{60, 8 * 24 * 3600} {
		p := continuo.DefaultSwarmPolicy()
		p.WorkerIdleTTLSecs = secs
		_, err := f.svc.Create(ctx, f.owner, ownerCar, swarm.CreateInput{WorkerLimit: 1, Policy: &p})
		if e := wantCode(t, err, continuo.CodeInvalidInput, fmt.Sprint("idle TTL ", secs)); e.Details["field"] != "policy.worker_idle_ttl_secs" {
			t.Fatalf("details %v", e.Details)
		}
	}
}

// TestCancelRequestedSettled: a task cancelled while a worker holds it
// (cancel_requested) keeps the swarm from closing until it is terminal;
// the owner need not wait for a worker that never answers: it settles it
// with reconcile (failed, or result_ready with what it did; never
// requeue), which frees the worker, and then the swarm closes.
func TestCancelRequestedSettled(t *testing.T) { stores.Each(t, testCancelRequestedSettled) }

func testCancelRequestedSettled(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	inv := f.create(4, nil)
	id := inv.Swarm.ID
	x := f.join(inv, "x")
	task := f.dispatch(id, "slow", "")
	d, err := f.svc.Deliver(ctx, x.c, x.car, x.ref, swarm.NextOptions{Ack: true})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := f.svc.Cancel(ctx, f.owner, ownerCar, id, task.ID); err != nil || r.Task.State != continuo.TaskCancelRequested {
		t.Fatalf("cancel: %+v %v", r, err)
	}
	_, err = f.svc.CloseSwarm(ctx, f.owner, ownerCar, id)
	wantCode(t, err, continuo.CodeInvalidState, "close with a task cancel_requested")
	in := swarm.ReconcileInput{SwarmID: id, TaskID: task.ID, AttemptID: d.Attempt.ID, Decision: swarm.DecideRequeue,
		Disposition: swarm.NoEffect, Evidence: "the worker never answered"}
	_, err = f.svc.Reconcile(ctx, f.owner, ownerCar, in)
	wantCode(t, err, continuo.CodeInvalidState, "requeue of a cancelled task")
	in.Decision, in.Disposition = swarm.DecideFailed, swarm.EffectUnknown
	r, err := f.svc.Reconcile(ctx, f.owner, ownerCar, in)
	if err != nil || r.Task.State != continuo.TaskFailed || r.Task.Reason != continuo.ReasonReconciled {
		t.Fatalf("reconcile failed: %+v %v", r, err)
	}
	if again, err := f.svc.Reconcile(ctx, f.owner, ownerCar, in); err != nil || !again.Replayed {
		t.Fatalf("reconcile again: %+v %v", again, err)
	}
	if got := f.worker(inv, x); got.CurrentTaskID != "" || got.State != continuo.WorkerIdle {
		t.Fatalf("the worker after the owner settled its task: %+v", got)
	}
	_, err = f.svc.Submit(ctx, x.c, x.car, x.ref, task.ID, "late")
	wantCode(t, err, continuo.CodeTerminalImmutable, "the worker's late submit")
	if st, err := f.svc.CloseSwarm(ctx, f.owner, ownerCar, id); err != nil || st.Swarm.State != continuo.SwarmClosed {
		t.Fatalf("close once every task is terminal: %+v %v", st, err)
	}
}
