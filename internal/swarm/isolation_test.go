package swarm_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/swarm"
)

// export is every row of every table, as continuo export writes it: two
// equal exports are the same database, byte for byte.
func (f *fixture) export() []byte {
	f.t.Helper()
	var b bytes.Buffer
	if _, err := store.Export(f.t.Context(), f.store, store.SchemaVersion, &b); err != nil {
		f.t.Fatal(err)
	}
	return b.Bytes()
}

// anID matches the IDs a message may name.
var anID = regexp.MustCompile(`\b[a-z]{3}_[0-9A-Z]{10,}\b`)

// shape is an error as its caller can tell it from another: its code,
// its message with the IDs it names masked, and its details.
func shape(err error) string {
	var e *continuo.Error
	if !errors.As(err, &e) {
		if err == nil {
			return "no error"
		}
		return "not a continuo.Error: " + err.Error()
	}
	d, _ := json.Marshal(e.Details)
	return string(e.Code) + " | " + anID.ReplaceAllString(e.Message, "ID") + " | " + string(d)
}

// TestGroupIsolation (issue 23): a caller of another group that holds
// swarm:own and swarm:work, a swarm of its own, and every identifier and
// secret of this group's swarm — the swarm, its invite, its workers (and
// their carrier keys), its tasks and attempts, its continuations and a
// continuation ticket — reaches nothing through any entry point of the
// service: each call is refused exactly as the same call naming an
// unknown object is (not_found, the same message), the database is byte
// for byte what it was, and afterwards the ticket is still the rightful
// carrier's to redeem.
func TestGroupIsolation(t *testing.T) { stores.Each(t, testGroupIsolation) }

func testGroupIsolation(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()

	// This group's swarm A: worker X with a pending ticket, Y holding a
	// task, Z asked to be continued (the approval path), U's task in
	// doubt, V's result ready, and a task queued.
	a := f.create(8, nil)
	aID := a.Swarm.ID
	x := f.checkpointed(a, "x")
	ticket := f.prepare(a, x)
	y := f.join(a, "y")
	held := f.dispatch(aID, "held", y.ref.WorkerID)
	f.next(y)
	z := f.checkpointed(a, "z")
	requested, _, err := f.svc.Request(ctx, f.member(), f.carrier(), swarm.RequestInput{SwarmID: aID, WorkerID: z.ref.WorkerID, Reason: "full"})
	if err != nil {
		t.Fatal(err)
	}
	u := f.join(a, "u")
	doubt := f.dispatch(aID, "doubt", u.ref.WorkerID)
	f.next(u)
	if _, err := f.svc.Fail(ctx, u.c, u.car, u.ref, doubt.ID, "crashed", swarm.EffectMaybe); err != nil {
		t.Fatal(err)
	}
	attempt := f.task(aID, doubt.ID).Attempt.ID
	v := f.join(a, "v")
	ready := f.dispatch(aID, "ready", v.ref.WorkerID)
	f.next(v)
	if _, err := f.svc.Submit(ctx, v.c, v.car, v.ref, ready.ID, "done"); err != nil {
		t.Fatal(err)
	}
	queued := f.dispatch(aID, "queued", "")

	// The other group, B: a swarm of its own with a worker of its own, so
	// that it calls as a real owner and a real (bound) worker would.
	b := f.outer
	bOwner := f.carrier()
	bs, err := f.svc.Create(ctx, b, bOwner, swarm.CreateInput{WorkerLimit: 2})
	if err != nil {
		t.Fatal(err)
	}
	bBound := f.carrier()
	if _, err := f.svc.Join(ctx, b, bBound, swarm.JoinInput{SwarmID: bs.Swarm.ID, Invite: bs.Invite, Label: "b"}); err != nil {
		t.Fatal(err)
	}
	bTask, err := f.svc.Dispatch(ctx, b, bOwner, swarm.DispatchInput{SwarmID: bs.Swarm.ID, TaskKey: "bt", Prompt: "b's"})
	if err != nil {
		t.Fatal(err)
	}

	unknown := func(prefix string) string { return continuo.NewID(prefix, time.Now()) }
	nobodysTicket := "cto_cnt_" + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	wref := func(x *w) swarm.WorkerRef { return x.ref }
	cp := json.RawMessage(`{"summary":"b was here"}`)
	before := f.export()

	// Each case calls an entry point as B with this group's object
	// (theirs), and the same entry point with an unknown object (none).
	type call func(car swarm.Carrier) error
	cases := []struct {
		name        string
		theirs      call
		none        call
		notNotFound continuo.Code // the code both give when the object is named where not_found is not the answer
	}{
		// ---- owner tools, on A's swarm ----
		{name: "invite", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.Invite(ctx, b, car, aID, 0)
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.Invite(ctx, b, car, unknown(continuo.PrefixSwarm), 0)
			return err
		}},
		{name: "dispatch", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.Dispatch(ctx, b, car, swarm.DispatchInput{SwarmID: aID, TaskKey: "held", Prompt: "p"})
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.Dispatch(ctx, b, car, swarm.DispatchInput{SwarmID: unknown(continuo.PrefixSwarm), TaskKey: "held", Prompt: "p"})
			return err
		}},
		{name: "dispatch to B's swarm preferring A's worker", notNotFound: continuo.CodeInvalidInput, theirs: func(car swarm.Carrier) error {
			_, err := f.svc.Dispatch(ctx, b, bOwner, swarm.DispatchInput{SwarmID: bs.Swarm.ID, TaskKey: "pref", Prompt: "p", PreferredWorkerID: y.ref.WorkerID})
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.Dispatch(ctx, b, bOwner, swarm.DispatchInput{SwarmID: bs.Swarm.ID, TaskKey: "pref", Prompt: "p", PreferredWorkerID: unknown(continuo.PrefixWorker)})
			return err
		}},
		{name: "status", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.SwarmStatus(ctx, b, car, aID)
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.SwarmStatus(ctx, b, car, unknown(continuo.PrefixSwarm))
			return err
		}},
		{name: "status of tasks in a state", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.ListTasks(ctx, b, car, aID, continuo.TaskQueued, "", 0)
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.ListTasks(ctx, b, car, unknown(continuo.PrefixSwarm), continuo.TaskQueued, "", 0)
			return err
		}},
		{name: "status of a task", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.TaskStatus(ctx, b, car, aID, held.ID)
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.TaskStatus(ctx, b, car, unknown(continuo.PrefixSwarm), held.ID)
			return err
		}},
		{name: "status of A's task in B's swarm", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.TaskStatus(ctx, b, bOwner, bs.Swarm.ID, held.ID)
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.TaskStatus(ctx, b, bOwner, bs.Swarm.ID, unknown(continuo.PrefixTask))
			return err
		}},
		{name: "collect", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.Collect(ctx, b, car, aID, ready.ID)
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.Collect(ctx, b, car, unknown(continuo.PrefixSwarm), ready.ID)
			return err
		}},
		{name: "collect A's task in B's swarm", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.Collect(ctx, b, bOwner, bs.Swarm.ID, ready.ID)
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.Collect(ctx, b, bOwner, bs.Swarm.ID, unknown(continuo.PrefixTask))
			return err
		}},
		{name: "cancel", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.Cancel(ctx, b, car, aID, queued.ID)
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.Cancel(ctx, b, car, unknown(continuo.PrefixSwarm), queued.ID)
			return err
		}},
		{name: "reconcile", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.Reconcile(ctx, b, car, swarm.ReconcileInput{SwarmID: aID, TaskID: doubt.ID, AttemptID: attempt,
				Decision: swarm.DecideFailed, Disposition: swarm.EffectUnknown, Evidence: "b says so"})
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.Reconcile(ctx, b, car, swarm.ReconcileInput{SwarmID: unknown(continuo.PrefixSwarm), TaskID: doubt.ID, AttemptID: attempt,
				Decision: swarm.DecideFailed, Disposition: swarm.EffectUnknown, Evidence: "b says so"})
			return err
		}},
		{name: "reconcile B's task with A's attempt", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.Reconcile(ctx, b, bOwner, swarm.ReconcileInput{SwarmID: bs.Swarm.ID, TaskID: doubt.ID, AttemptID: attempt,
				Decision: swarm.DecideFailed, Disposition: swarm.EffectUnknown, Evidence: "b says so"})
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.Reconcile(ctx, b, bOwner, swarm.ReconcileInput{SwarmID: bs.Swarm.ID, TaskID: unknown(continuo.PrefixTask), AttemptID: attempt,
				Decision: swarm.DecideFailed, Disposition: swarm.EffectUnknown, Evidence: "b says so"})
			return err
		}},
		{name: "close", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.CloseSwarm(ctx, b, car, aID)
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.CloseSwarm(ctx, b, car, unknown(continuo.PrefixSwarm))
			return err
		}},
		{name: "prepare_continuation", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.Prepare(ctx, b, car, aID, y.ref.WorkerID, "b's", 0)
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.Prepare(ctx, b, car, unknown(continuo.PrefixSwarm), y.ref.WorkerID, "b's", 0)
			return err
		}},
		{name: "prepare_continuation of A's worker in B's swarm", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.Prepare(ctx, b, bOwner, bs.Swarm.ID, y.ref.WorkerID, "b's", 0)
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.Prepare(ctx, b, bOwner, bs.Swarm.ID, unknown(continuo.PrefixWorker), "b's", 0)
			return err
		}},
		{name: "approve_continuation", theirs: func(car swarm.Carrier) error {
			_, _, err := f.svc.Approve(ctx, b, car, aID, requested.ID, requested.Version)
			return err
		}, none: func(car swarm.Carrier) error {
			_, _, err := f.svc.Approve(ctx, b, car, unknown(continuo.PrefixSwarm), requested.ID, requested.Version)
			return err
		}},
		{name: "approve A's continuation in B's swarm", theirs: func(car swarm.Carrier) error {
			_, _, err := f.svc.Approve(ctx, b, bOwner, bs.Swarm.ID, requested.ID, requested.Version)
			return err
		}, none: func(car swarm.Carrier) error {
			_, _, err := f.svc.Approve(ctx, b, bOwner, bs.Swarm.ID, unknown(continuo.PrefixContinuation), requested.Version)
			return err
		}},
		{name: "revoke_continuation", theirs: func(car swarm.Carrier) error {
			_, _, err := f.svc.Revoke(ctx, b, car, aID, ticket.Continuation.ID)
			return err
		}, none: func(car swarm.Carrier) error {
			_, _, err := f.svc.Revoke(ctx, b, car, unknown(continuo.PrefixSwarm), ticket.Continuation.ID)
			return err
		}},
		{name: "revoke A's continuation in B's swarm", theirs: func(car swarm.Carrier) error {
			_, _, err := f.svc.Revoke(ctx, b, bOwner, bs.Swarm.ID, ticket.Continuation.ID)
			return err
		}, none: func(car swarm.Carrier) error {
			_, _, err := f.svc.Revoke(ctx, b, bOwner, bs.Swarm.ID, unknown(continuo.PrefixContinuation))
			return err
		}},
		{name: "reconcile_continuation", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.ReconcileContinuation(ctx, b, car, aID, requested.ID, "no_effect")
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.ReconcileContinuation(ctx, b, car, unknown(continuo.PrefixSwarm), requested.ID, "no_effect")
			return err
		}},
		// ---- the owner reads of the dashboard ----
		{name: "tasks with attempts", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.ListTaskStatus(ctx, b, car, aID, continuo.TaskReconcileRequired, "", 0)
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.ListTaskStatus(ctx, b, car, unknown(continuo.PrefixSwarm), continuo.TaskReconcileRequired, "", 0)
			return err
		}},
		{name: "task history", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.TaskHistory(ctx, b, car, aID, doubt.ID)
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.TaskHistory(ctx, b, car, unknown(continuo.PrefixSwarm), doubt.ID)
			return err
		}},
		{name: "task history of A's task in B's swarm", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.TaskHistory(ctx, b, bOwner, bs.Swarm.ID, doubt.ID)
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.TaskHistory(ctx, b, bOwner, bs.Swarm.ID, unknown(continuo.PrefixTask))
			return err
		}},
		{name: "overview", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.Overview(ctx, b, car, aID, swarm.OverviewInput{InDoubt: 20, Bucket: time.Hour, Buckets: 24, History: 20})
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.Overview(ctx, b, car, unknown(continuo.PrefixSwarm), swarm.OverviewInput{InDoubt: 20, Bucket: time.Hour, Buckets: 24, History: 20})
			return err
		}},
		// ---- worker tools ----
		{name: "join with A's invite", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.Join(ctx, b, car, swarm.JoinInput{SwarmID: aID, Invite: a.Invite, Label: "b"})
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.Join(ctx, b, car, swarm.JoinInput{SwarmID: unknown(continuo.PrefixSwarm), Invite: a.Invite, Label: "b"})
			return err
		}},
		{name: "join with A's invite from B's bound carrier", theirs: func(swarm.Carrier) error {
			_, err := f.svc.Join(ctx, b, bBound, swarm.JoinInput{SwarmID: aID, Invite: a.Invite, Label: "b"})
			return err
		}, none: func(swarm.Carrier) error {
			_, err := f.svc.Join(ctx, b, bBound, swarm.JoinInput{SwarmID: unknown(continuo.PrefixSwarm), Invite: a.Invite, Label: "b"})
			return err
		}},
		{name: "join with A's ticket", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.Redeem(ctx, b, car, aID, ticket.Ticket)
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.Redeem(ctx, b, car, aID, nobodysTicket)
			return err
		}},
		{name: "join with A's ticket into B's swarm", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.Redeem(ctx, b, car, bs.Swarm.ID, ticket.Ticket)
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.Redeem(ctx, b, car, bs.Swarm.ID, nobodysTicket)
			return err
		}},
		{name: "join with A's ticket and X's own carrier key", theirs: func(swarm.Carrier) error {
			_, err := f.svc.Redeem(ctx, b, x.car, aID, ticket.Ticket)
			return err
		}, none: func(swarm.Carrier) error {
			_, err := f.svc.Redeem(ctx, b, x.car, aID, nobodysTicket)
			return err
		}},
		{name: "join with A's ticket from B's bound carrier", theirs: func(swarm.Carrier) error {
			_, err := f.svc.Redeem(ctx, b, bBound, aID, ticket.Ticket)
			return err
		}, none: func(swarm.Carrier) error {
			_, err := f.svc.Redeem(ctx, b, bBound, aID, nobodysTicket)
			return err
		}},
		{name: "next", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.Next(ctx, b, car, wref(y), 0, nil)
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.Next(ctx, b, car, swarm.WorkerRef{WorkerID: unknown(continuo.PrefixWorker)}, 0, nil)
			return err
		}},
		{name: "next, waiting, with Y's own carrier key", theirs: func(swarm.Carrier) error {
			_, err := f.svc.Next(ctx, b, y.car, wref(y), time.Second, nil)
			return err
		}, none: func(swarm.Carrier) error {
			_, err := f.svc.Next(ctx, b, y.car, swarm.WorkerRef{WorkerID: unknown(continuo.PrefixWorker)}, time.Second, nil)
			return err
		}},
		{name: "ack", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.Ack(ctx, b, car, wref(y), held.ID)
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.Ack(ctx, b, car, swarm.WorkerRef{WorkerID: unknown(continuo.PrefixWorker)}, held.ID)
			return err
		}},
		{name: "checkpoint", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.Checkpoint(ctx, b, x.car, wref(x), cp)
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.Checkpoint(ctx, b, x.car, swarm.WorkerRef{WorkerID: unknown(continuo.PrefixWorker)}, cp)
			return err
		}},
		{name: "submit", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.Submit(ctx, b, y.car, wref(y), held.ID, "b's result")
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.Submit(ctx, b, y.car, swarm.WorkerRef{WorkerID: unknown(continuo.PrefixWorker)}, held.ID, "b's result")
			return err
		}},
		{name: "fail", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.Fail(ctx, b, car, wref(y), held.ID, "b's", swarm.EffectMaybe)
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.Fail(ctx, b, car, swarm.WorkerRef{WorkerID: unknown(continuo.PrefixWorker)}, held.ID, "b's", swarm.EffectMaybe)
			return err
		}},
		{name: "fail B's own task as A's worker", theirs: func(swarm.Carrier) error {
			_, err := f.svc.Fail(ctx, b, bBound, wref(y), bTask.Task.ID, "b's", swarm.EffectNone)
			return err
		}, none: func(swarm.Carrier) error {
			_, err := f.svc.Fail(ctx, b, bBound, swarm.WorkerRef{WorkerID: unknown(continuo.PrefixWorker)}, bTask.Task.ID, "b's", swarm.EffectNone)
			return err
		}},
		{name: "report_context", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.ReportContext(ctx, b, car, wref(y), swarm.ReportInput{Tokens: 1 << 30, Source: continuo.LedgerHostExact})
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.ReportContext(ctx, b, car, swarm.WorkerRef{WorkerID: unknown(continuo.PrefixWorker)}, swarm.ReportInput{Tokens: 1 << 30, Source: continuo.LedgerHostExact})
			return err
		}},
		{name: "context_status", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.ContextStatus(ctx, b, car, wref(y))
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.ContextStatus(ctx, b, car, swarm.WorkerRef{WorkerID: unknown(continuo.PrefixWorker)})
			return err
		}},
		{name: "request_continuation", theirs: func(car swarm.Carrier) error {
			_, _, err := f.svc.Request(ctx, b, car, swarm.RequestInput{SwarmID: aID, WorkerID: y.ref.WorkerID, Reason: "b's"})
			return err
		}, none: func(car swarm.Carrier) error {
			_, _, err := f.svc.Request(ctx, b, car, swarm.RequestInput{SwarmID: aID, WorkerID: unknown(continuo.PrefixWorker), Reason: "b's"})
			return err
		}},
		{name: "continuation_status", theirs: func(car swarm.Carrier) error {
			_, err := f.svc.ContinuationStatus(ctx, b, car, aID)
			return err
		}, none: func(car swarm.Carrier) error {
			_, err := f.svc.ContinuationStatus(ctx, b, car, unknown(continuo.PrefixSwarm))
			return err
		}},
	}
	for _, c := range cases {
		theirs, none := c.theirs(f.carrier()), c.none(f.carrier())
		want := continuo.CodeNotFound
		if c.notNotFound != "" {
			want = c.notNotFound
		}
		if continuo.ErrorCode(theirs) != want || shape(theirs) != shape(none) {
			t.Errorf("%s: B naming A's object: %v\n\twith an unknown one: %v\n\twant the same %s", c.name, theirs, none, want)
		}
	}
	// B's lists hold nothing of A's.
	page, err := f.svc.ListSwarms(ctx, b, "", 0)
	if err != nil || len(page.Swarms) != 1 || page.Swarms[0].Swarm.ID != bs.Swarm.ID {
		t.Errorf("B's swarms: %+v %v", page, err)
	}
	if after := f.export(); !bytes.Equal(after, before) {
		t.Errorf("B's calls changed the database: %s", firstDiff(before, after))
	}

	// The ticket is still the rightful carrier's: redeemed, at epoch 1.
	got, err := f.svc.Redeem(ctx, f.member(), f.carrier(), aID, ticket.Ticket)
	if err != nil || got.Worker.ID != x.ref.WorkerID || got.Worker.Epoch != 1 || got.Continuation.State != continuo.ContinuationBound {
		t.Fatalf("the rightful carrier redeems after B: %+v %v", got, err)
	}
	// A's invite still admits A's members, and Y still holds its task.
	if _, err := f.svc.Join(ctx, f.member(), f.carrier(), swarm.JoinInput{SwarmID: aID, Invite: a.Invite, Label: "late"}); err != nil {
		t.Errorf("A's member joins after B: %v", err)
	}
	if _, err := f.svc.Submit(ctx, y.c, y.car, y.ref, held.ID, "y's result"); err != nil {
		t.Errorf("Y submits after B: %v", err)
	}
}

// firstDiff names the first line where two exports differ.
func firstDiff(a, b []byte) string {
	as, bs := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range max(len(as), len(bs)) {
		var x, y []byte
		if i < len(as) {
			x = as[i]
		}
		if i < len(bs) {
			y = bs[i]
		}
		if !bytes.Equal(x, y) {
			return fmt.Sprintf("line %d:\n\t%s\nthen\n\t%s", i+1, x, y)
		}
	}
	return "(equal)"
}
