package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

func transitionTests() []test {
	return []test{
		{"Task", testTransitionTask},
		{"Run", testTransitionRun},
		{"Continuation", testTransitionContinuation},
		{"Worker", testTransitionWorker},
		{"Carrier", testTransitionCarrier},
	}
}

// errUndo rolls a transition case's Write back, so that every case starts
// from an empty slate (no active task, running run or open continuation of
// another case in the way).
var errUndo = errors.New("storetest: case undone")

// allowed is what the store must do with an update from state from to
// state to: a change its table lists, or a write that keeps the state
// (no transition: other fields change).
func allowed[S interface {
	comparable
	CanBecome(S) bool
}](from, to S) bool {
	return from == to || from.CanBecome(to)
}

// transitions tries every (from, to) pair of one state type: create (in
// one Write) a row in from, update it to to, and check that an allowed
// change is written and any other is store.ErrInvalidState and leaves the
// row as created. The Write is then undone.
func transitions[S interface {
	comparable
	CanBecome(S) bool
}](t *testing.T, s store.Store, all []S, try func(tx store.Tx, from, to S) (got S, err error)) {
	t.Helper()
	for _, from := range all {
		for _, to := range all {
			what := fmt.Sprintf("%v → %v", from, to)
			err := s.Write(t.Context(), func(tx store.Tx) error {
				got, err := try(tx, from, to)
				switch ok := allowed(from, to); {
				case ok && err != nil:
					t.Errorf("%s: %v, want it written", what, err)
				case ok && got != to:
					t.Errorf("%s: stored %v after the update", what, got)
				case !ok && !errors.Is(err, store.ErrInvalidState):
					t.Errorf("%s: got error %v, want %v", what, err, store.ErrInvalidState)
				case !ok && got != from:
					t.Errorf("%s: refused, but stored %v", what, got)
				}
				return errUndo
			})
			if !errors.Is(err, errUndo) {
				t.Fatalf("%s: Write: %v", what, err)
			}
		}
	}
}

// taskIn shapes a task for state st as the schema wants it: ended and
// with a result exactly when the state says so.
func taskIn(k *continuo.Task, st continuo.TaskState) {
	at := Base.Add(time.Second)
	k.State, k.EndedAt, k.Result, k.ResultHash = st, nil, "", ""
	if st.Terminal() {
		k.EndedAt = &at
	}
	if st == continuo.TaskResultReady || st == continuo.TaskCollected {
		k.Result, k.ResultHash = "done", "rh"
	}
}

func testTransitionTask(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	transitions(t, s, continuo.TaskStates(), func(tx store.Tx, from, to continuo.TaskState) (continuo.TaskState, error) {
		ctx := t.Context()
		k := NewSwarmTask(f.Swarm.ID, "k")
		k.WorkerID, k.Attempt = f.W1.ID, 1
		taskIn(k, from)
		if err := tx.TaskCreate(ctx, k); err != nil {
			return "", err
		}
		next := *k
		taskIn(&next, to)
		next.Revision = 2
		err := updateTask(ctx, tx, &next, 1)
		got, gerr := tx.TaskGet(ctx, k.ID)
		if gerr != nil {
			return "", gerr
		}
		return got.State, err
	})
}

// runIn shapes a run for state st: started unless queued, ended unless
// queued or running.
func runIn(r *continuo.Run, st continuo.RunState) {
	started, ended := Base.Add(time.Second), Base.Add(2*time.Second)
	r.State, r.StartedAt, r.EndedAt = st, nil, nil
	if st != continuo.RunQueued {
		r.StartedAt = &started
	}
	if st.Terminal() {
		r.EndedAt = &ended
	}
}

func testTransitionRun(t *testing.T, s store.Store) {
	f := Setup(t, s, "alpha")
	transitions(t, s, continuo.RunStates(), func(tx store.Tx, from, to continuo.RunState) (continuo.RunState, error) {
		ctx := t.Context()
		r := NewRun(f.Group.ID, f.Project.ID, "/src/a", "test")
		runIn(r, from)
		if err := tx.RunCreate(ctx, r); err != nil {
			return "", err
		}
		next := *r
		runIn(&next, to)
		next.Revision = 2
		err := updateRun(ctx, tx, &next, 1)
		got, gerr := tx.RunGet(ctx, r.ID)
		if gerr != nil {
			return "", gerr
		}
		return got.State, err
	})
}

func testTransitionContinuation(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	in := func(c *continuo.Continuation, st continuo.ContinuationState) {
		c.TargetCarrier, c.TargetSource, c.BoundAt = "", "", nil
		continuationIn(st)(c)
	}
	transitions(t, s, continuo.ContinuationStates(), func(tx store.Tx, from, to continuo.ContinuationState) (continuo.ContinuationState, error) {
		ctx := t.Context()
		c := NewContinuation(f.W1)
		in(c, from)
		if err := tx.ContinuationCreate(ctx, c); err != nil {
			return "", err
		}
		next := *c
		in(&next, to)
		next.Version = c.Version + 1
		err := updateContinuation(ctx, tx, &next, c.Version)
		got, gerr := tx.ContinuationGet(ctx, c.ID)
		if gerr != nil {
			return "", gerr
		}
		return got.State, err
	})
}

// newWorker creates, in tx, a worker of f's swarm whose carrier state is cs
// and which holds a task when st is busy.
func newWorker(t *testing.T, tx store.Tx, f *swarmFixture, st continuo.WorkerState, cs continuo.CarrierState) (*continuo.Worker, error) {
	w := NewSwarmWorker(f.Swarm.ID, f.Principal.ID, "w")
	w.State, w.CarrierState = st, cs
	if st == continuo.WorkerBusy {
		w.CurrentTaskID = "tsk_held"
	}
	return w, tx.WorkerCreate(t.Context(), w)
}

func testTransitionWorker(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	transitions(t, s, continuo.WorkerStates(), func(tx store.Tx, from, to continuo.WorkerState) (continuo.WorkerState, error) {
		ctx := t.Context()
		w, err := newWorker(t, tx, f, from, continuo.CarrierActive)
		if err != nil {
			return "", err
		}
		next := *w
		next.State, next.CurrentTaskID, next.Revision = to, "", 2
		if to == continuo.WorkerBusy {
			next.CurrentTaskID = "tsk_held"
		}
		err = updateWorker(ctx, tx, &next, 1)
		got, gerr := tx.WorkerGet(ctx, w.ID)
		if gerr != nil {
			return "", gerr
		}
		return got.State, err
	})
}

// A worker's carrier state moves by WorkerUpdate as the carrier table
// says; CarrierRetire moves a carrier row (active or retired: a lost
// carrier is the worker's view) the same way.
func testTransitionCarrier(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	transitions(t, s, continuo.CarrierStates(), func(tx store.Tx, from, to continuo.CarrierState) (continuo.CarrierState, error) {
		ctx := t.Context()
		w, err := newWorker(t, tx, f, continuo.WorkerIdle, from)
		if err != nil {
			return "", err
		}
		next := *w
		next.CarrierState, next.Revision = to, 2
		err = updateWorker(ctx, tx, &next, 1)
		got, gerr := tx.WorkerGet(ctx, w.ID)
		if gerr != nil {
			return "", gerr
		}
		return got.CarrierState, err
	})
	ctx := t.Context()
	at := Base.Add(time.Minute)
	MustWrite(t, s, func(tx store.Tx) error { return tx.CarrierRetire(ctx, f.W1.CarrierHash, at) })
	wantErr(t, s.Write(ctx, func(tx store.Tx) error { return tx.CarrierRetire(ctx, f.W1.CarrierHash, at) }), store.ErrInvalidState,
		"retiring a retired carrier")
	if c := mustCarrier(t, s, f.W1.CarrierHash); c.State != continuo.CarrierRetired || !c.RetiredAt.Equal(at) {
		t.Errorf("carrier after the refused retirement: %s at %v, want retired at %v", c.State, c.RetiredAt, at)
	}
}
