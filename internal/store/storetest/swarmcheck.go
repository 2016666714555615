package storetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// swarmWorld is one of everything the swarm keeps, for tests that check
// nothing changed: a swarm, two workers and their carriers, a queued task
// and a task held by the first worker with its active attempt.
type swarmWorld struct {
	*swarmFixture
	Queued, Held *continuo.Task
	Attempt      *continuo.Attempt
}

func setupSwarmWorld(t testing.TB, s store.Store) *swarmWorld {
	t.Helper()
	w := &swarmWorld{swarmFixture: setupSwarm(t, s)}
	w.Queued = SwarmTask(t, s, w.Swarm.ID, "queued")
	w.Held = heldTask(t, s, w.Swarm.ID, w.W1.ID, "held", 1)
	w.Attempt = SwarmAttempt(t, s, w.Held, "host-1")
	return w
}

// unchanged fails the test unless the store holds w exactly: no row of
// it changed and no row was added.
func (w *swarmWorld) unchanged(t testing.TB, s store.Store) {
	t.Helper()
	ctx := t.Context()
	sameList(t, "swarms", listSwarms(t, s, w.Group.ID, 0), []continuo.Swarm{*w.Swarm}, normSwarm)
	sameList(t, "workers", listWorkers(t, s, w.Swarm.ID), []continuo.Worker{*w.W1, *w.W2}, normWorker)
	for _, wk := range []*continuo.Worker{w.W1, w.W2} {
		want := continuo.Carrier{Hash: wk.CarrierHash, WorkerID: wk.ID, SwarmID: wk.SwarmID, Epoch: wk.Epoch, Source: wk.CarrierSource,
			State: continuo.CarrierActive, BoundAt: wk.CreatedAt}
		same(t, "carrier of "+wk.Label, mustCarrier(t, s, wk.CarrierHash), want, normCarrier)
	}
	sameList(t, "tasks", listTasks(t, s, store.TaskListParams{SwarmID: w.Swarm.ID}), []continuo.Task{*w.Queued, *w.Held}, normTask)
	sameList(t, "active attempts", activeAttempts(t, s, store.AttemptListParams{}), []continuo.Attempt{*w.Attempt}, normAttempt)
	// The attempts the tests try to add, ended, are number 2.
	for _, k := range []*continuo.Task{w.Queued, w.Held} {
		_, err := read(t, s, func(tx store.Tx) (*continuo.Attempt, error) { return tx.AttemptOf(ctx, k.ID, 2) })
		wantErr(t, err, store.ErrNotFound, "attempt 2 of task "+k.TaskKey)
	}
}

// Inside Read every SwarmTx write fails and changes nothing.
func testSwarmReadRejectsWrites(t *testing.T, s store.Store) {
	ctx := t.Context()
	w := setupSwarmWorld(t, s)
	at := Base.Add(time.Minute)
	wantRefusedInRead(t, s, map[string]func(tx store.Tx) error{
		"SwarmCreate": func(tx store.Tx) error { return tx.SwarmCreate(ctx, NewSwarm(w.Group.ID, "")) },
		"SwarmUpdate": func(tx store.Tx) error {
			next := *w.Swarm
			next.State, next.Revision = continuo.SwarmClosed, 2
			return tx.SwarmUpdate(ctx, &next, 1)
		},
		"WorkerCreate": func(tx store.Tx) error { return tx.WorkerCreate(ctx, NewSwarmWorker(w.Swarm.ID, "", "x")) },
		"WorkerUpdate": func(tx store.Tx) error {
			next := *w.W2
			next.Epoch, next.Revision = 2, 2
			return updateWorker(ctx, tx, &next, 1)
		},
		"WorkerTouch": func(tx store.Tx) error { return tx.WorkerTouch(ctx, w.W1.ID, at) },
		"CarrierBind": func(tx store.Tx) error {
			return tx.CarrierBind(ctx, continuo.Carrier{Hash: "x", WorkerID: w.W1.ID, SwarmID: w.Swarm.ID, Source: continuo.CarrierFromKey,
				State: continuo.CarrierRetired, BoundAt: at, RetiredAt: &at})
		},
		"CarrierRetire": func(tx store.Tx) error { return tx.CarrierRetire(ctx, w.W1.CarrierHash, at) },
		"TaskCreate":    func(tx store.Tx) error { return tx.TaskCreate(ctx, NewSwarmTask(w.Swarm.ID, "x")) },
		"TaskUpdate":    func(tx store.Tx) error { return updateTask(ctx, tx, taskFailed(*w.Queued), 1) },
		"TaskClaim":     func(tx store.Tx) error { _, err := tx.TaskClaim(ctx, w.Swarm.ID, w.W2.ID, at, false); return err },
		"AttemptCreate": func(tx store.Tx) error {
			a := NewSwarmAttempt(w.Held, "x")
			a.Number = 2
			attemptEnded(continuo.AttemptFailed)(a)
			return tx.AttemptCreate(ctx, a)
		},
		"AttemptUpdate": func(tx store.Tx) error {
			next := *w.Attempt
			attemptRunning(&next)
			return updateAttempt(ctx, tx, &next, continuo.AttemptClaimed)
		},
	})
	w.unchanged(t, s)
}

// testSwarmChecks: the schema refuses what no swarm service should write
// (unknown states, ID prefixes and parents; a busy worker without a task
// and an idle one with one; a carrier row that is lost, or retired
// without a time; a task key empty or too long; JSON that is not; a
// task settled without an end, active without a worker, with a result
// outside result_ready and collected; an attempt running unacked or
// ended without an end; non-positive revisions and numbers), as a CHECK,
// cast or foreign-key error — never ErrConflict — and nothing is kept.
func testSwarmChecks(t *testing.T, s store.Store) {
	ctx := t.Context()
	w := setupSwarmWorld(t, s)
	unknown, retired := continuo.NewID(continuo.PrefixSwarm, Base), Base
	createSwarm := func(o func(*continuo.Swarm)) func(tx store.Tx) error {
		return func(tx store.Tx) error { sw := NewSwarm(w.Group.ID, ""); o(sw); return tx.SwarmCreate(ctx, sw) }
	}
	createWorker := func(o func(*continuo.Worker)) func(tx store.Tx) error {
		return func(tx store.Tx) error {
			wk := NewSwarmWorker(w.Swarm.ID, "", "x")
			o(wk)
			return tx.WorkerCreate(ctx, wk)
		}
	}
	bindCarrier := func(o func(*continuo.Carrier)) func(tx store.Tx) error {
		return func(tx store.Tx) error {
			// A worker of its own, which no active carrier carries yet.
			wk := NewSwarmWorker(w.Swarm.ID, "", "x")
			if err := tx.WorkerCreate(ctx, wk); err != nil {
				return err
			}
			c := continuo.Carrier{Hash: "carrier-x", WorkerID: wk.ID, SwarmID: w.Swarm.ID, Epoch: 2, Source: continuo.CarrierFromKey,
				State: continuo.CarrierRetired, BoundAt: Base, RetiredAt: &retired}
			o(&c)
			return tx.CarrierBind(ctx, c)
		}
	}
	createTask := func(o func(*continuo.Task)) func(tx store.Tx) error {
		return func(tx store.Tx) error { k := NewSwarmTask(w.Swarm.ID, "x"); o(k); return tx.TaskCreate(ctx, k) }
	}
	updateTask := func(o func(*continuo.Task)) func(tx store.Tx) error {
		return func(tx store.Tx) error { k := *w.Queued; k.Revision = 2; o(&k); return updateTask(ctx, tx, &k, 1) }
	}
	// An attempt of the queued task, which has no active attempt that an
	// active one would collide with.
	createAttempt := func(o func(*continuo.Attempt)) func(tx store.Tx) error {
		return func(tx store.Tx) error {
			a := NewSwarmAttempt(w.Held, "x")
			a.TaskID, a.Number = w.Queued.ID, 2
			attemptEnded(continuo.AttemptFailed)(a)
			o(a)
			return tx.AttemptCreate(ctx, a)
		}
	}
	ended := Base.Add(time.Minute)
	bad := map[string]func(tx store.Tx) error{
		"SwarmIDPrefix":       createSwarm(func(sw *continuo.Swarm) { sw.ID = continuo.NewID(continuo.PrefixTask, Base) }),
		"UnknownSwarmState":   createSwarm(func(sw *continuo.Swarm) { sw.State = "paused" }),
		"SwarmOfUnknownGroup": createSwarm(func(sw *continuo.Swarm) { sw.GroupID = continuo.NewID(continuo.PrefixGroup, Base) }),
		"SwarmNoWorkers":      createSwarm(func(sw *continuo.Swarm) { sw.WorkerLimit = 0 }),
		"SwarmTooManyWorkers": createSwarm(func(sw *continuo.Swarm) { sw.WorkerLimit = continuo.MaxSwarmWorkers + 1 }),
		"SwarmZeroRevision":   createSwarm(func(sw *continuo.Swarm) { sw.Revision = 0 }),
		"UnknownSwarmStateUpdate": func(tx store.Tx) error {
			sw := *w.Swarm
			sw.State, sw.Revision = "open", 2
			return tx.SwarmUpdate(ctx, &sw, 1)
		},
		"WorkerIDPrefix":         createWorker(func(wk *continuo.Worker) { wk.ID = continuo.NewID(continuo.PrefixSwarm, Base) }),
		"WorkerOfUnknownSwarm":   createWorker(func(wk *continuo.Worker) { wk.SwarmID = unknown }),
		"UnknownWorkerState":     createWorker(func(wk *continuo.Worker) { wk.State = "asleep" }),
		"UnknownCarrierState":    createWorker(func(wk *continuo.Worker) { wk.CarrierState = "gone" }),
		"UnknownCarrierSource":   createWorker(func(wk *continuo.Worker) { wk.CarrierSource = "cookie" }),
		"UnknownContinuityState": createWorker(func(wk *continuo.Worker) { wk.ContinuityState = "compacting" }),
		"WorkerNegativeEpoch":    createWorker(func(wk *continuo.Worker) { wk.Epoch = -1 }),
		"BusyWithoutTask":        createWorker(func(wk *continuo.Worker) { wk.State = continuo.WorkerBusy }),
		"IdleWithTask":           createWorker(func(wk *continuo.Worker) { wk.CurrentTaskID = w.Held.ID }),
		"CheckpointNotJSON":      createWorker(func(wk *continuo.Worker) { wk.Checkpoint = "step 2" }),
		"WorkerZeroRevision":     createWorker(func(wk *continuo.Worker) { wk.Revision = 0 }),
		"BlockedWithoutReason":   createWorker(func(wk *continuo.Worker) { wk.ContinuityState = continuo.ContinuityCompactBlocked }),
		"ReasonWithoutBlocked":   createWorker(func(wk *continuo.Worker) { wk.BlockedReason = continuo.BlockedNotRedeemed }),
		"UnknownBlockedReason": createWorker(func(wk *continuo.Worker) {
			wk.ContinuityState, wk.BlockedReason = continuo.ContinuityCompactBlocked, "tired"
		}),
		"UnknownRetiredReason": createWorker(func(wk *continuo.Worker) {
			wk.RetiredReason, wk.RetiredAt, wk.CarrierState = "bored", &retired, continuo.CarrierRetired
		}),
		"RetiredUntimed": createWorker(func(wk *continuo.Worker) {
			wk.RetiredReason, wk.CarrierState = continuo.RetiredLeft, continuo.CarrierRetired
		}),
		"RetiredAtWithoutReason": createWorker(func(wk *continuo.Worker) { wk.RetiredAt = &retired }),
		"RetiredWithCarrier":     createWorker(func(wk *continuo.Worker) { wk.RetiredReason, wk.RetiredAt = continuo.RetiredIdle, &retired }),
		"RetiredBusy": createWorker(func(wk *continuo.Worker) {
			wk.RetiredReason, wk.RetiredAt, wk.CarrierState = continuo.RetiredRemoved, &retired, continuo.CarrierRetired
			wk.State, wk.CurrentTaskID = continuo.WorkerBusy, w.Held.ID
		}),
		"CarrierLost":             bindCarrier(func(c *continuo.Carrier) { c.State = continuo.CarrierLost }),
		"CarrierRetiredUntimed":   bindCarrier(func(c *continuo.Carrier) { c.RetiredAt = nil }),
		"CarrierActiveRetiredAt":  bindCarrier(func(c *continuo.Carrier) { c.State = continuo.CarrierActive }),
		"CarrierUnknownSource":    bindCarrier(func(c *continuo.Carrier) { c.Source = "cookie" }),
		"CarrierOfUnknownWorker":  bindCarrier(func(c *continuo.Carrier) { c.WorkerID = continuo.NewID(continuo.PrefixWorker, Base) }),
		"CarrierOfUnknownSwarm":   bindCarrier(func(c *continuo.Carrier) { c.SwarmID = unknown }),
		"TaskIDPrefix":            createTask(func(k *continuo.Task) { k.ID = continuo.NewID(continuo.PrefixAttempt, Base) }),
		"UnknownTaskState":        createTask(func(k *continuo.Task) { k.State = "waiting" }),
		"TaskOfUnknownSwarm":      createTask(func(k *continuo.Task) { k.SwarmID = unknown }),
		"TaskKeyEmpty":            createTask(func(k *continuo.Task) { k.TaskKey = "" }),
		"TaskKeyTooLong":          createTask(func(k *continuo.Task) { k.TaskKey = strings.Repeat("ü", continuo.MaxTaskKey/2+1) }),
		"TaskPayloadNotJSON":      createTask(func(k *continuo.Task) { k.Payload = "{" }),
		"TaskNegativeAttempt":     createTask(func(k *continuo.Task) { k.Attempt = -1 }),
		"TaskZeroRevision":        createTask(func(k *continuo.Task) { k.Revision = 0 }),
		"TaskEndedWhileQueued":    createTask(func(k *continuo.Task) { k.EndedAt = &ended }),
		"TaskActiveWithoutWorker": createTask(func(k *continuo.Task) { k.State = continuo.TaskRunning }),
		"TaskResultWhileQueued":   createTask(func(k *continuo.Task) { k.ResultHash = "h" }),
		"UnknownTaskStateUpdate":  updateTask(func(k *continuo.Task) { k.State = "paused" }),
		"TaskSettledWithoutEnd":   updateTask(func(k *continuo.Task) { k.State = continuo.TaskCancelled }),
		"TaskReadyWithoutResult": updateTask(func(k *continuo.Task) {
			k.State, k.WorkerID, k.EndedAt = continuo.TaskResultReady, w.W2.ID, &ended
		}),
		"AttemptIDPrefix":         createAttempt(func(a *continuo.Attempt) { a.ID = continuo.NewID(continuo.PrefixTask, Base) }),
		"UnknownAttemptState":     createAttempt(func(a *continuo.Attempt) { a.State = "lost" }),
		"AttemptZeroNumber":       createAttempt(func(a *continuo.Attempt) { a.Number = 0 }),
		"AttemptOfUnknownTask":    createAttempt(func(a *continuo.Attempt) { a.TaskID = continuo.NewID(continuo.PrefixTask, Base) }),
		"AttemptOfUnknownWorker":  createAttempt(func(a *continuo.Attempt) { a.WorkerID = continuo.NewID(continuo.PrefixWorker, Base) }),
		"AttemptEndedWithoutEnd":  createAttempt(func(a *continuo.Attempt) { a.EndedAt = nil }),
		"AttemptActiveWithEnd":    createAttempt(func(a *continuo.Attempt) { a.State = continuo.AttemptClaimed }),
		"AttemptRunningUnacked":   createAttempt(func(a *continuo.Attempt) { a.State, a.EndedAt, a.AckedAt = continuo.AttemptRunning, nil, nil }),
		"AttemptLeaseBeforeEpoch": createAttempt(func(a *continuo.Attempt) { a.LeaseUntil = time.Unix(-5, 0) }),
		"UnknownAttemptStateUpdate": func(tx store.Tx) error {
			a := *w.Attempt
			a.State = "paused"
			return updateAttempt(ctx, tx, &a, continuo.AttemptClaimed)
		},
	}
	for name, fn := range bad {
		t.Run(name, func(t *testing.T) {
			err := s.Write(ctx, fn)
			if err == nil {
				t.Fatal("the schema accepted it")
			}
			if errors.Is(err, store.ErrConflict) {
				t.Errorf("a CHECK or foreign-key violation is reported as ErrConflict: %v", err)
			}
		})
	}
	w.unchanged(t, s)
}
