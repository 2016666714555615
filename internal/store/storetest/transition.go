package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// One test and one store for every state type: a store of its own costs
// more than all of a type's pairs, which share a Write.
func transitionTests() []test {
	return []test{{"Tables", testTransitions}}
}

func testTransitions(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	for _, c := range []struct {
		name string
		run  func(*testing.T, store.Store, *swarmFixture)
	}{
		{"Task", testTransitionTask},
		{"Run", testTransitionRun},
		{"Continuation", testTransitionContinuation},
		{"Worker", testTransitionWorker},
		{"Carrier", testTransitionCarrier},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, s, f) })
	}
}

// errUndo rolls a transition test's Write back: its rows were only there
// to be moved.
var errUndo = errors.New("storetest: case undone")

// machine is one state type as the transition test drives it, through
// rows of type R. Every func runs in the test's one Write.
type machine[S interface {
	comparable
	CanBecome(S) bool
}, R any] struct {
	states []S
	// create inserts a new row in state from, each with its own key and
	// owner, so that no two rows of the test meet in a unique index.
	create func(tx store.Tx, n int, from S) (*R, error)
	// move shapes r for state to (raising its revision) and moves it
	// there with the store's Move.
	move func(tx store.Tx, r *R, to S) error
	// update raises r's revision and writes it with the store's Update.
	update func(tx store.Tx, r *R) error
	// state is r's state in memory; set changes it (as no caller may).
	state func(r *R) S
	set   func(r *R, s S)
	// stored is r's state as the store has it.
	stored func(tx store.Tx, r *R) (S, error)
}

// transitions tries every (from, to) pair of one state type in one
// Write, each on a row of its own created in from: a Move the table
// allows (or one to from itself, no transition) is written and leaves the
// row's state in memory to; any other is store.ErrInvalidState and leaves
// the row, stored and in memory, in from. It then checks, from every
// state, that an Update keeping the state is written, and that one whose
// state in memory was changed is ErrInvalidState and changes nothing. The
// Write is undone.
func transitions[S interface {
	comparable
	CanBecome(S) bool
}, R any](t *testing.T, s store.Store, m machine[S, R]) {
	t.Helper()
	err := s.Write(t.Context(), func(tx store.Tx) error {
		n := 0
		row := func(from S) *R {
			n++
			r, err := m.create(tx, n, from)
			if err != nil {
				t.Fatalf("create a row in %v: %v", from, err)
			}
			return r
		}
		check := func(what string, r *R, want S) {
			got, err := m.stored(tx, r)
			if err != nil {
				t.Fatalf("%s: read it back: %v", what, err)
			}
			if got != want || m.state(r) != want {
				t.Errorf("%s: stored %v, in memory %v; want %v", what, got, m.state(r), want)
			}
		}
		for _, from := range m.states {
			for _, to := range m.states {
				what := fmt.Sprintf("%v → %v", from, to)
				r := row(from)
				err := m.move(tx, r, to)
				if from == to || from.CanBecome(to) {
					if err != nil {
						t.Errorf("%s: %v, want it written", what, err)
					}
					check(what, r, to)
					continue
				}
				wantErr(t, err, store.ErrInvalidState, what)
				check(what+" (refused)", r, from)
			}
			r := row(from)
			noErr(t, m.update(tx, r), fmt.Sprintf("update of a %v row", from))
			check(fmt.Sprintf("update of a %v row", from), r, from)
			for _, other := range m.states {
				if other == from {
					continue
				}
				what := fmt.Sprintf("update of a %v row whose state in memory is %v", from, other)
				r := row(from)
				m.set(r, other)
				wantErr(t, m.update(tx, r), store.ErrInvalidState, what)
				m.set(r, from)
				check(what, r, from)
			}
		}
		return errUndo
	})
	if !errors.Is(err, errUndo) {
		t.Fatalf("Write: %v", err)
	}
}

// taskIn shapes a task for state st as the schema wants it: ended and
// with a result exactly when the state says so.
func taskIn(k *continuo.Task, st continuo.TaskState) {
	at := Base.Add(time.Second)
	k.EndedAt, k.Result, k.ResultHash = nil, "", ""
	if st.Terminal() {
		k.EndedAt = &at
	}
	if st == continuo.TaskResultReady || st == continuo.TaskCollected {
		k.Result, k.ResultHash = "done", "rh"
	}
}

func testTransitionTask(t *testing.T, s store.Store, f *swarmFixture) {
	ctx := t.Context()
	transitions(t, s, machine[continuo.TaskState, continuo.Task]{
		states: continuo.TaskStates(),
		create: func(tx store.Tx, n int, from continuo.TaskState) (*continuo.Task, error) {
			// A worker of its own: a worker holds one active task.
			w, err := newWorker(t, tx, f, n, continuo.WorkerIdle, continuo.CarrierActive)
			if err != nil {
				return nil, err
			}
			k := NewSwarmTask(f.Swarm.ID, fmt.Sprint("k", n))
			k.WorkerID, k.Attempt, k.State = w.ID, 1, from
			taskIn(k, from)
			return k, tx.TaskCreate(ctx, k)
		},
		move: func(tx store.Tx, k *continuo.Task, to continuo.TaskState) error {
			taskIn(k, to)
			k.Revision++
			return tx.TaskMove(ctx, k, k.Revision-1, to)
		},
		update: func(tx store.Tx, k *continuo.Task) error {
			k.Revision++
			return tx.TaskUpdate(ctx, k, k.Revision-1)
		},
		state: func(k *continuo.Task) continuo.TaskState { return k.State },
		set:   func(k *continuo.Task, st continuo.TaskState) { k.State = st },
		stored: func(tx store.Tx, k *continuo.Task) (continuo.TaskState, error) {
			got, err := tx.TaskGet(ctx, k.ID)
			if err != nil {
				return "", err
			}
			return got.State, nil
		},
	})
}

// runIn shapes a run for state st: started unless queued, ended unless
// queued or running.
func runIn(r *continuo.Run, st continuo.RunState) {
	started, ended := Base.Add(time.Second), Base.Add(2*time.Second)
	r.StartedAt, r.EndedAt = nil, nil
	if st != continuo.RunQueued {
		r.StartedAt = &started
	}
	if st.Terminal() {
		r.EndedAt = &ended
	}
}

func testTransitionRun(t *testing.T, s store.Store, f *swarmFixture) {
	ctx := t.Context()
	transitions(t, s, machine[continuo.RunState, continuo.Run]{
		states: continuo.RunStates(),
		create: func(tx store.Tx, n int, from continuo.RunState) (*continuo.Run, error) {
			// A directory of its own: one running validation run per check
			// in a directory.
			r := NewRun(f.Group.ID, f.Project.ID, fmt.Sprint("/src/", n), "test")
			r.State = from
			runIn(r, from)
			return r, tx.RunCreate(ctx, r)
		},
		move: func(tx store.Tx, r *continuo.Run, to continuo.RunState) error {
			runIn(r, to)
			r.Revision++
			return tx.RunMove(ctx, r, r.Revision-1, to)
		},
		update: func(tx store.Tx, r *continuo.Run) error {
			r.Revision++
			return tx.RunUpdate(ctx, r, r.Revision-1)
		},
		state: func(r *continuo.Run) continuo.RunState { return r.State },
		set:   func(r *continuo.Run, st continuo.RunState) { r.State = st },
		stored: func(tx store.Tx, r *continuo.Run) (continuo.RunState, error) {
			got, err := tx.RunGet(ctx, r.ID)
			if err != nil {
				return "", err
			}
			return got.State, nil
		},
	})
}

func testTransitionContinuation(t *testing.T, s store.Store, f *swarmFixture) {
	ctx := t.Context()
	in := func(c *continuo.Continuation, st continuo.ContinuationState) {
		c.TargetCarrier, c.TargetSource, c.BoundAt = "", "", nil
		if st == continuo.ContinuationBound {
			at := Base.Add(time.Second)
			c.TargetCarrier, c.TargetSource, c.BoundAt = "carrier-next-"+c.ID, continuo.CarrierFromKey, &at
		}
	}
	transitions(t, s, machine[continuo.ContinuationState, continuo.Continuation]{
		states: continuo.ContinuationStates(),
		create: func(tx store.Tx, n int, from continuo.ContinuationState) (*continuo.Continuation, error) {
			// A worker of its own: a worker has one open continuation.
			w, err := newWorker(t, tx, f, n, continuo.WorkerIdle, continuo.CarrierActive)
			if err != nil {
				return nil, err
			}
			c := NewContinuation(w)
			c.State = from
			in(c, from)
			return c, tx.ContinuationCreate(ctx, c)
		},
		move: func(tx store.Tx, c *continuo.Continuation, to continuo.ContinuationState) error {
			in(c, to)
			c.Version++
			return tx.ContinuationMove(ctx, c, c.Version-1, to)
		},
		update: func(tx store.Tx, c *continuo.Continuation) error {
			c.Version++
			return tx.ContinuationUpdate(ctx, c, c.Version-1)
		},
		state: func(c *continuo.Continuation) continuo.ContinuationState { return c.State },
		set:   func(c *continuo.Continuation, st continuo.ContinuationState) { c.State = st },
		stored: func(tx store.Tx, c *continuo.Continuation) (continuo.ContinuationState, error) {
			got, err := tx.ContinuationGet(ctx, c.ID)
			if err != nil {
				return "", err
			}
			return got.State, nil
		},
	})
}

// newWorker creates, in tx, worker n of f's swarm whose carrier state is
// cs and which holds a task when st is busy.
func newWorker(t *testing.T, tx store.Tx, f *swarmFixture, n int, st continuo.WorkerState, cs continuo.CarrierState) (*continuo.Worker, error) {
	w := NewSwarmWorker(f.Swarm.ID, f.Principal.ID, fmt.Sprint("w", n))
	w.State, w.CarrierState = st, cs
	if st == continuo.WorkerBusy {
		w.CurrentTaskID = "tsk_held"
	}
	return w, tx.WorkerCreate(t.Context(), w)
}

// workerGet is a worker's stored row.
func workerGet(t *testing.T, tx store.Tx, w *continuo.Worker) (*continuo.Worker, error) {
	return tx.WorkerGet(t.Context(), w.ID)
}

// workerUpdate raises w's revision and writes it with WorkerUpdate.
func workerUpdate(t *testing.T) func(store.Tx, *continuo.Worker) error {
	return func(tx store.Tx, w *continuo.Worker) error {
		w.Revision++
		return tx.WorkerUpdate(t.Context(), w, w.Revision-1)
	}
}

func testTransitionWorker(t *testing.T, s store.Store, f *swarmFixture) {
	transitions(t, s, machine[continuo.WorkerState, continuo.Worker]{
		states: continuo.WorkerStates(),
		create: func(tx store.Tx, n int, from continuo.WorkerState) (*continuo.Worker, error) {
			return newWorker(t, tx, f, n, from, continuo.CarrierActive)
		},
		move: func(tx store.Tx, w *continuo.Worker, to continuo.WorkerState) error {
			w.CurrentTaskID = ""
			if to == continuo.WorkerBusy {
				w.CurrentTaskID = "tsk_held"
			}
			w.Revision++
			return tx.WorkerMove(t.Context(), w, w.Revision-1, to, w.CarrierState)
		},
		update: workerUpdate(t),
		state:  func(w *continuo.Worker) continuo.WorkerState { return w.State },
		set:    func(w *continuo.Worker, st continuo.WorkerState) { w.State = st },
		stored: func(tx store.Tx, w *continuo.Worker) (continuo.WorkerState, error) {
			got, err := workerGet(t, tx, w)
			if err != nil {
				return "", err
			}
			return got.State, nil
		},
	})
}

// A worker's carrier state moves by WorkerMove as the carrier table
// says; CarrierRetire moves a carrier row (active or retired: a lost
// carrier is the worker's view) the same way.
func testTransitionCarrier(t *testing.T, s store.Store, f *swarmFixture) {
	transitions(t, s, machine[continuo.CarrierState, continuo.Worker]{
		states: continuo.CarrierStates(),
		create: func(tx store.Tx, n int, from continuo.CarrierState) (*continuo.Worker, error) {
			return newWorker(t, tx, f, n, continuo.WorkerIdle, from)
		},
		move: func(tx store.Tx, w *continuo.Worker, to continuo.CarrierState) error {
			w.Revision++
			return tx.WorkerMove(t.Context(), w, w.Revision-1, w.State, to)
		},
		update: workerUpdate(t),
		state:  func(w *continuo.Worker) continuo.CarrierState { return w.CarrierState },
		set:    func(w *continuo.Worker, st continuo.CarrierState) { w.CarrierState = st },
		stored: func(tx store.Tx, w *continuo.Worker) (continuo.CarrierState, error) {
			got, err := workerGet(t, tx, w)
			if err != nil {
				return "", err
			}
			return got.CarrierState, nil
		},
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
