package storetest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// The swarm's tasks (see swarm.go for the section's rules).

func normTask(k continuo.Task) continuo.Task {
	k.CreatedAt, k.UpdatedAt, k.EndedAt = trunc(k.CreatedAt), trunc(k.UpdatedAt), truncPtr(k.EndedAt)
	return k
}

func taskID(k continuo.Task) string { return k.ID }

func getTask(t testing.TB, s store.Store, id string) (*continuo.Task, error) {
	t.Helper()
	return read(t, s, func(tx store.Tx) (*continuo.Task, error) { return tx.TaskGet(t.Context(), id) })
}

func mustTask(t testing.TB, s store.Store, id string) continuo.Task {
	t.Helper()
	k, err := getTask(t, s, id)
	noErr(t, err, "TaskGet")
	return *k
}

func listTasks(t testing.TB, s store.Store, p store.TaskListParams) []continuo.Task {
	t.Helper()
	return mustGet(t, s, fmt.Sprintf("TaskList(%+v)", p), func(tx store.Tx) ([]continuo.Task, error) { return tx.TaskList(t.Context(), p) })
}

// taskHeld returns an option that gives a task to worker workerID in
// state (an active one), at attempt 1.
func taskHeld(workerID string, state continuo.TaskState) func(*continuo.Task) {
	return func(k *continuo.Task) { k.WorkerID, k.State, k.Attempt = workerID, state, 1 }
}

// taskFailed returns a copy of k failed (terminal) a minute after Base, at
// the next revision.
func taskFailed(k continuo.Task) *continuo.Task {
	at := Base.Add(time.Minute)
	k.State, k.Reason, k.EndedAt, k.UpdatedAt, k.Revision = continuo.TaskFailed, continuo.ReasonWorkerFailed, &at, at, k.Revision+1
	return &k
}

// claim runs TaskClaim in a Write of its own. With settle, the same Write
// fails the task it took, so that the worker may claim again.
func claim(t testing.TB, s store.Store, swarmID, workerID string, at time.Time, settle bool) (*continuo.Task, error) {
	t.Helper()
	ctx := t.Context()
	var out *continuo.Task
	err := s.Write(ctx, func(tx store.Tx) error {
		k, err := tx.TaskClaim(ctx, swarmID, workerID, at, false)
		if err != nil {
			return err
		}
		if settle {
			if err := updateTask(ctx, tx, taskFailed(*k), k.Revision); err != nil {
				return err
			}
		}
		out = k
		return nil
	})
	return out, err
}

// Every field round-trips, set and unset: a collected task with a result,
// a reason, a detail, an end and a preferred worker; a bare queued one.
// TaskByKey finds each in its swarm.
func testTaskCreateGet(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := setupSwarm(t, s)
	ended := Base.Add(time.Minute + 1500*time.Microsecond)
	full := SwarmTask(t, s, f.Swarm.ID, "key \"ü\"/1", func(k *continuo.Task) {
		k.RequestHash, k.Prompt, k.Payload, k.PreferredWorkerID = "req", "prompt \"ü\"\n", `{"files":["a.go"],"n":1}`, f.W2.ID
		k.WorkerID, k.State, k.Attempt = f.W2.ID, continuo.TaskCollected, 3
		k.Result, k.ResultHash, k.Reason, k.Detail = `{"ok":true}`, "result-hash", continuo.ReasonReconciled, "evidence: ü"
		k.Revision, k.CreatedAt, k.UpdatedAt, k.EndedAt = 8, Base.Add(1500*time.Microsecond), ended, &ended
	})
	bare := SwarmTask(t, s, f.Swarm.ID, "k")
	for _, want := range []*continuo.Task{full, bare} {
		same(t, "task "+want.TaskKey, mustTask(t, s, want.ID), *want, normTask)
		got := mustGet(t, s, "TaskByKey", func(tx store.Tx) (*continuo.Task, error) { return tx.TaskByKey(ctx, f.Swarm.ID, want.TaskKey) })
		same(t, "task by key "+want.TaskKey, *got, *want, normTask)
	}
	got := mustTask(t, s, full.ID)
	if got.EndedAt == nil || !got.EndedAt.Equal(ended.Truncate(time.Millisecond)) || got.EndedAt.Location() != time.UTC ||
		!got.CreatedAt.Equal(Base.Add(time.Millisecond)) {
		t.Errorf("EndedAt %s, CreatedAt %v; want milliseconds kept, in UTC", showTime(got.EndedAt), got.CreatedAt)
	}
	if got := mustTask(t, s, bare.ID); got.EndedAt != nil || got.Payload != "" || got.WorkerID != "" || got.Attempt != 0 {
		t.Errorf("a bare task read back end %s, payload %q, worker %q, attempt %d; want none", showTime(got.EndedAt), got.Payload, got.WorkerID, got.Attempt)
	}
}

// An existing ID, or an existing key in the swarm, is ErrConflict, and
// the Write keeps nothing; the same key in another swarm is no conflict.
func testTaskDuplicate(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := setupSwarm(t, s)
	k := SwarmTask(t, s, f.Swarm.ID, "k")
	byID, byKey := NewSwarmTask(f.Swarm.ID, "other"), NewSwarmTask(f.Swarm.ID, "k")
	byID.ID = k.ID
	for name, dup := range map[string]*continuo.Task{"ID": byID, "key": byKey} {
		fresh := NewSwarmTask(f.Swarm.ID, "fresh-"+name)
		err := s.Write(ctx, func(tx store.Tx) error {
			if err := tx.TaskCreate(ctx, fresh); err != nil {
				return err
			}
			return tx.TaskCreate(ctx, dup)
		})
		wantErr(t, err, store.ErrConflict, "TaskCreate of an existing "+name)
	}
	sameList(t, "tasks after the refused duplicates", listTasks(t, s, store.TaskListParams{SwarmID: f.Swarm.ID}), []continuo.Task{*k}, normTask)
	other := Swarm(t, s, f.Group.ID, "")
	elsewhere := SwarmTask(t, s, other.ID, "k")
	same(t, "the same key in another swarm", mustTask(t, s, elsewhere.ID), *elsewhere, normTask)
}

// TaskUpdate replaces the worker, state, attempt, result, result hash,
// reason, detail, revision, updated_at and ended_at; the swarm, key,
// request hash, prompt, payload, preferred worker and creation time stay.
// It must raise the revision; a stale revision is ErrStale and an unknown
// task ErrNotFound, and neither changes anything.
func testTaskUpdate(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := setupSwarm(t, s)
	k := SwarmTask(t, s, f.Swarm.ID, "k", func(k *continuo.Task) { k.Payload, k.PreferredWorkerID = `{"a":1}`, f.W1.ID })
	at := Base.Add(time.Minute)
	next := *k
	next.SwarmID, next.TaskKey, next.RequestHash, next.Prompt, next.Payload = "swm_x", "other", "req-x", "p", "{}"
	next.PreferredWorkerID, next.CreatedAt = "", Base.Add(time.Hour)
	next.WorkerID, next.State, next.Attempt = f.W1.ID, continuo.TaskClaimed, 2
	next.Result, next.ResultHash, next.Reason, next.Detail = "done", "", continuo.ReasonReconciled, "owner's evidence"
	next.Revision, next.UpdatedAt = 2, at
	MustWrite(t, s, func(tx store.Tx) error { return updateTask(ctx, tx, &next, 1) })
	want := next
	want.SwarmID, want.TaskKey, want.RequestHash, want.Prompt, want.Payload = k.SwarmID, k.TaskKey, k.RequestHash, k.Prompt, k.Payload
	want.PreferredWorkerID, want.CreatedAt = k.PreferredWorkerID, k.CreatedAt
	same(t, "task after TaskUpdate", mustTask(t, s, k.ID), want, normTask)

	// Back to the queue (a lease ran out, never acked): no result, no end.
	back := want
	back.State, back.Result, back.ResultHash, back.Reason, back.Detail, back.EndedAt, back.Revision = continuo.TaskQueued, "", "", "", "", nil, 3
	MustWrite(t, s, func(tx store.Tx) error { return updateTask(ctx, tx, &back, 2) })
	same(t, "task after clearing its result", mustTask(t, s, k.ID), back, normTask)

	late := back
	late.State, late.WorkerID, late.Revision = continuo.TaskClaimed, f.W2.ID, 3
	wantErr(t, s.Write(ctx, func(tx store.Tx) error { return updateTask(ctx, tx, &late, 2) }), store.ErrStale, "TaskUpdate from revision 2 at 3")
	if err := s.Write(ctx, func(tx store.Tx) error { return updateTask(ctx, tx, &late, 3) }); err == nil {
		t.Error("TaskUpdate that keeps the revision succeeded")
	}
	same(t, "task after the refused updates", mustTask(t, s, k.ID), back, normTask)
	unknown := NewSwarmTask(f.Swarm.ID, "x")
	unknown.Revision = 2
	wantErr(t, s.Write(ctx, func(tx store.Tx) error { return updateTask(ctx, tx, unknown, 1) }), store.ErrNotFound, "TaskUpdate of an unknown task")
}

// A claim with ack takes the task straight to running in its one
// statement (attempt 1, revision 2), as claimed then started.
func testTaskClaimAck(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := setupSwarm(t, s)
	k := SwarmTask(t, s, f.Swarm.ID, "k")
	at := Base.Add(time.Minute)
	var got *continuo.Task
	MustWrite(t, s, func(tx store.Tx) error {
		var err error
		got, err = tx.TaskClaim(ctx, f.Swarm.ID, f.W1.ID, at, true)
		return err
	})
	want := *k
	want.State, want.WorkerID, want.Attempt, want.Revision, want.UpdatedAt = continuo.TaskRunning, f.W1.ID, 1, 2, at
	same(t, "task claimed with ack", *got, want, normTask)
	same(t, "task claimed with ack, read back", mustTask(t, s, k.ID), want, normTask)
}

// TaskSubmit makes a held task result_ready, guarded by its revision and
// by the states that may become result_ready: a queued task (it cannot)
// or a stale revision is ErrStale and keeps the task as it was; a task
// that is not a submit's is refused.
func testTaskSubmit(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := setupSwarm(t, s)
	at := Base.Add(time.Minute)
	submitted := func(k continuo.Task) *continuo.Task {
		k.State, k.Result, k.ResultHash, k.Revision, k.UpdatedAt, k.EndedAt = continuo.TaskResultReady, "done", "rh", k.Revision+1, at, &at
		return &k
	}
	queued := SwarmTask(t, s, f.Swarm.ID, "queued", func(k *continuo.Task) { k.WorkerID, k.Attempt = f.W2.ID, 1 })
	wantErr(t, s.Write(ctx, func(tx store.Tx) error { return tx.TaskSubmit(ctx, submitted(*queued), queued.Revision) }), store.ErrStale,
		"TaskSubmit of a queued task")
	same(t, "queued task after the refused submit", mustTask(t, s, queued.ID), *queued, normTask)
	for _, state := range continuo.TaskResultReady.From() {
		k := SwarmTask(t, s, f.Swarm.ID, "from-"+string(state), func(k *continuo.Task) { k.WorkerID, k.State, k.Attempt = f.W1.ID, state, 1 })
		next := submitted(*k)
		late := *next
		late.Revision++
		wantErr(t, s.Write(ctx, func(tx store.Tx) error { return tx.TaskSubmit(ctx, &late, k.Revision+1) }), store.ErrStale,
			"TaskSubmit from a stale revision, "+string(state))
		MustWrite(t, s, func(tx store.Tx) error { return tx.TaskSubmit(ctx, next, k.Revision) })
		same(t, "task submitted from "+string(state), mustTask(t, s, k.ID), *next, normTask)
	}
	failed := *taskFailed(*queued)
	if err := s.Write(ctx, func(tx store.Tx) error { return tx.TaskSubmit(ctx, &failed, queued.Revision) }); err == nil {
		t.Error("TaskSubmit of a task that is not result_ready succeeded")
	}
}

// A worker holds one active task (claimed, running or cancel_requested):
// a second, by TaskCreate, TaskUpdate or TaskClaim, is ErrConflict and
// changes nothing. Tasks it no longer holds are any number, and once its
// task settles it may take the next.
func testTaskOneActivePerWorker(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := setupSwarm(t, s)
	held := SwarmTask(t, s, f.Swarm.ID, "held", taskHeld(f.W1.ID, continuo.TaskRunning))
	SwarmTask(t, s, f.Swarm.ID, "theirs", taskHeld(f.W2.ID, continuo.TaskCancelRequested))
	for _, key := range []string{"failed-1", "failed-2"} {
		SwarmTask(t, s, f.Swarm.ID, key, func(k *continuo.Task) { *k = *taskFailed(*k); k.WorkerID, k.Attempt = f.W1.ID, 1 })
	}
	queued := SwarmTask(t, s, f.Swarm.ID, "queued")

	second := NewSwarmTask(f.Swarm.ID, "second")
	taskHeld(f.W1.ID, continuo.TaskCancelRequested)(second)
	wantErr(t, s.Write(ctx, func(tx store.Tx) error { return tx.TaskCreate(ctx, second) }), store.ErrConflict,
		"TaskCreate of a second active task of one worker")
	_, err := getTask(t, s, second.ID)
	wantErr(t, err, store.ErrNotFound, "TaskGet of the refused task")
	take := *queued
	take.WorkerID, take.State, take.Attempt, take.Revision = f.W1.ID, continuo.TaskClaimed, 1, 2
	wantErr(t, s.Write(ctx, func(tx store.Tx) error { return updateTask(ctx, tx, &take, 1) }), store.ErrConflict,
		"TaskUpdate making a second task of one worker active")
	_, err = claim(t, s, f.Swarm.ID, f.W1.ID, Base, false)
	wantErr(t, err, store.ErrConflict, "TaskClaim by a worker that holds a task")
	same(t, "the queued task after the refused takes", mustTask(t, s, queued.ID), *queued, normTask)

	MustWrite(t, s, func(tx store.Tx) error { return updateTask(ctx, tx, taskFailed(*held), held.Revision) })
	MustWrite(t, s, func(tx store.Tx) error { return updateTask(ctx, tx, &take, 1) })
	same(t, "the task taken after the first settled", mustTask(t, s, queued.ID), take, normTask)
}

// TaskClaim takes the oldest task preferring the worker, then the oldest
// preferring none; never one preferring another worker, one not queued or
// one of another swarm; then ErrNotFound. The task it returns is the
// stored one: claimed by the worker, at the next attempt and revision,
// updated at the time given, the rest as it was.
func testTaskClaimOrder(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	other := Swarm(t, s, f.Group.ID, "")
	prefers := func(id string) func(*continuo.Task) { return func(k *continuo.Task) { k.PreferredWorkerID = id } }
	SwarmTask(t, s, f.Swarm.ID, "cancelled", func(k *continuo.Task) {
		at := Base
		k.State, k.Reason, k.EndedAt = continuo.TaskCancelled, continuo.ReasonCancelled, &at
	})
	SwarmTask(t, s, other.ID, "elsewhere")
	theirs := SwarmTask(t, s, f.Swarm.ID, "theirs", prefers(f.W2.ID))
	anyOld := SwarmTask(t, s, f.Swarm.ID, "any-old", func(k *continuo.Task) {
		// Requeued after a first attempt by the other worker.
		k.WorkerID, k.Attempt, k.Revision, k.Detail, k.Payload = f.W2.ID, 1, 4, "never acked", `{"x":1}`
	})
	mine1 := SwarmTask(t, s, f.Swarm.ID, "mine-1", prefers(f.W1.ID))
	mine2 := SwarmTask(t, s, f.Swarm.ID, "mine-2", prefers(f.W1.ID))
	anyNew := SwarmTask(t, s, f.Swarm.ID, "any-new")
	at := Base.Add(time.Minute + 1500*time.Microsecond)
	for _, want := range []*continuo.Task{mine1, mine2, anyOld, anyNew} {
		got, err := claim(t, s, f.Swarm.ID, f.W1.ID, at, true)
		if err != nil {
			t.Fatalf("TaskClaim for %s: %v", want.TaskKey, err)
		}
		claimed := *want
		claimed.State, claimed.WorkerID, claimed.Attempt, claimed.Revision, claimed.UpdatedAt = continuo.TaskClaimed, f.W1.ID,
			want.Attempt+1, want.Revision+1, at
		same(t, "claimed task "+want.TaskKey, *got, claimed, normTask)
		same(t, "stored task "+want.TaskKey, mustTask(t, s, want.ID), *taskFailed(claimed), normTask)
	}
	_, err := claim(t, s, f.Swarm.ID, f.W1.ID, at, false)
	wantErr(t, err, store.ErrNotFound, "TaskClaim with only another worker's task queued")
	same(t, "the task preferring the other worker", mustTask(t, s, theirs.ID), *theirs, normTask)
	got, err := claim(t, s, f.Swarm.ID, f.W2.ID, at, false)
	noErr(t, err, "TaskClaim by the preferred worker")
	if got.ID != theirs.ID || got.WorkerID != f.W2.ID || got.Attempt != 1 {
		t.Errorf("the preferred worker claimed %s (worker %s, attempt %d), want %s", got.TaskKey, got.WorkerID, got.Attempt, theirs.TaskKey)
	}
}

// Nothing queued for the worker is ErrNotFound, for a swarm with no tasks
// and for an unknown one, and changes nothing; a claim needs a worker.
func testTaskClaimNone(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	for name, swarmID := range map[string]string{"empty": f.Swarm.ID, "unknown": continuo.NewID(continuo.PrefixSwarm, Base)} {
		_, err := claim(t, s, swarmID, f.W1.ID, Base, false)
		wantErr(t, err, store.ErrNotFound, "TaskClaim in an "+name+" swarm")
	}
	k := SwarmTask(t, s, f.Swarm.ID, "k")
	if _, err := claim(t, s, f.Swarm.ID, "", Base, false); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Errorf("TaskClaim for no worker = %v, want an error other than ErrNotFound", err)
	}
	same(t, "task after the refused claim", mustTask(t, s, k.ID), *k, normTask)
}

// Workers racing to claim from one queue, each in its own Write: every
// task is claimed by exactly one, the claims that found none left are
// ErrNotFound, and nothing fails otherwise.
func testTaskClaimConcurrent(t *testing.T, s store.Store) {
	const workers, tasks = 8, 5
	f := setupSwarm(t, s)
	var ws []*continuo.Worker
	for i := range workers {
		ws = append(ws, SwarmWorker(t, s, f.Swarm.ID, "", fmt.Sprintf("w%d", i)))
	}
	want := map[string]bool{}
	for i := range tasks {
		want[SwarmTask(t, s, f.Swarm.ID, fmt.Sprintf("k%d", i)).ID] = true
	}
	got := make([]*continuo.Task, workers)
	errs := parallel(workers, func(i int) error {
		k, err := claim(t, s, f.Swarm.ID, ws[i].ID, Base, false)
		got[i] = k
		return err
	})
	taken := map[string]string{}
	for i, err := range errs {
		switch {
		case err == nil:
			if prev, dup := taken[got[i].ID]; dup {
				t.Errorf("task %s claimed by %s and %s", got[i].TaskKey, prev, ws[i].Label)
			}
			taken[got[i].ID] = ws[i].ID
		case !errors.Is(err, store.ErrNotFound):
			t.Errorf("claim by %s: %v, want a task or ErrNotFound", ws[i].Label, err)
		}
	}
	if !slices.Equal(slices.Sorted(maps.Keys(taken)), slices.Sorted(maps.Keys(want))) {
		t.Errorf("claimed %d tasks, want each of the %d once", len(taken), tasks)
	}
	for id, worker := range taken {
		if k := mustTask(t, s, id); k.State != continuo.TaskClaimed || k.WorkerID != worker || k.Attempt != 1 || k.Revision != 2 {
			t.Errorf("task %s after the race: state %s, worker %s, attempt %d, revision %d", k.TaskKey, k.State, k.WorkerID, k.Attempt, k.Revision)
		}
	}
}

// Workers draining a queue larger than themselves, each claim (and the
// failure that frees the worker again) in a Write of its own: every task
// is taken exactly once.
func testTaskClaimDrain(t *testing.T, s store.Store) {
	const workers, tasks = 6, 30
	ctx := t.Context()
	f := setupSwarm(t, s)
	var ws []*continuo.Worker
	for i := range workers {
		ws = append(ws, SwarmWorker(t, s, f.Swarm.ID, "", fmt.Sprintf("w%d", i)))
	}
	var all []string
	MustWrite(t, s, func(tx store.Tx) error {
		var created []string
		for i := range tasks {
			k := NewSwarmTask(f.Swarm.ID, fmt.Sprintf("k%02d", i))
			if err := tx.TaskCreate(ctx, k); err != nil {
				return err
			}
			created = append(created, k.ID)
		}
		all = created
		return nil
	})
	got := make([][]string, workers)
	errs := parallel(workers, func(i int) error {
		for {
			k, err := claim(t, s, f.Swarm.ID, ws[i].ID, Base, true)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			got[i] = append(got[i], k.ID)
		}
	})
	var taken []string
	for i, err := range errs {
		if err != nil {
			t.Errorf("worker %s: %v", ws[i].Label, err)
		}
		taken = append(taken, got[i]...)
	}
	slices.Sort(taken)
	if !slices.Equal(taken, all) {
		t.Errorf("the workers took %d tasks (%d distinct), want each of %d once", len(taken), len(slices.Compact(slices.Clone(taken))), tasks)
	}
	if n := mustGet(t, s, "TaskCounts", func(tx store.Tx) (map[continuo.TaskState]int, error) { return tx.TaskCounts(ctx, f.Swarm.ID) }); !maps.Equal(n,
		map[continuo.TaskState]int{continuo.TaskFailed: tasks}) {
		t.Errorf("TaskCounts after the drain = %v, want %d failed", n, tasks)
	}
}

// TaskQueued reports whether TaskClaim would find a task for the worker.
func testTaskQueued(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	queued := func(workerID string) bool {
		return mustGet(t, s, "TaskQueued", func(tx store.Tx) (bool, error) { return tx.TaskQueued(t.Context(), f.Swarm.ID, workerID) })
	}
	if queued(f.W1.ID) {
		t.Error("TaskQueued of an empty swarm = true")
	}
	SwarmTask(t, s, f.Swarm.ID, "held", taskHeld(f.W2.ID, continuo.TaskClaimed))
	SwarmTask(t, s, f.Swarm.ID, "theirs", func(k *continuo.Task) { k.PreferredWorkerID = f.W2.ID })
	if queued(f.W1.ID) || !queued(f.W2.ID) {
		t.Errorf("with only a task preferring worker 2 queued: TaskQueued = %v for 1, %v for 2; want false, true", queued(f.W1.ID), queued(f.W2.ID))
	}
	SwarmTask(t, s, f.Swarm.ID, "mine", func(k *continuo.Task) { k.PreferredWorkerID = f.W1.ID })
	if !queued(f.W1.ID) {
		t.Error("TaskQueued with a task preferring the worker = false")
	}
	other := Swarm(t, s, f.Group.ID, "")
	SwarmTask(t, s, other.ID, "any")
	if got := mustGet(t, s, "TaskQueued", func(tx store.Tx) (bool, error) { return tx.TaskQueued(t.Context(), other.ID, f.W1.ID) }); !got {
		t.Error("TaskQueued with a task for any worker = false")
	}
}

// TaskCounts counts a swarm's tasks by state, leaving out states with
// none and other swarms' tasks.
func testTaskCounts(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	counts := func(swarmID string) map[continuo.TaskState]int {
		return mustGet(t, s, "TaskCounts", func(tx store.Tx) (map[continuo.TaskState]int, error) { return tx.TaskCounts(t.Context(), swarmID) })
	}
	if got := counts(f.Swarm.ID); len(got) != 0 {
		t.Errorf("TaskCounts of an empty swarm = %v", got)
	}
	SwarmTask(t, s, f.Swarm.ID, "q1")
	SwarmTask(t, s, f.Swarm.ID, "q2")
	SwarmTask(t, s, f.Swarm.ID, "q3")
	SwarmTask(t, s, f.Swarm.ID, "running", taskHeld(f.W1.ID, continuo.TaskRunning))
	SwarmTask(t, s, f.Swarm.ID, "failed", func(k *continuo.Task) { *k = *taskFailed(*k) })
	SwarmTask(t, s, f.Swarm.ID, "reconcile", func(k *continuo.Task) {
		k.WorkerID, k.State, k.Attempt, k.Reason = f.W2.ID, continuo.TaskReconcileRequired, 1, continuo.ReasonLeaseExpired
	})
	other := Swarm(t, s, f.Group.ID, "")
	SwarmTask(t, s, other.ID, "q1")
	want := map[continuo.TaskState]int{continuo.TaskQueued: 3, continuo.TaskRunning: 1, continuo.TaskFailed: 1, continuo.TaskReconcileRequired: 1}
	if got := counts(f.Swarm.ID); !maps.Equal(got, want) {
		t.Errorf("TaskCounts = %v, want %v", got, want)
	}
}

// TaskList lists a swarm's tasks by ID, in the states asked (any when
// none), after AfterID, at most Limit.
func testTaskList(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	a := SwarmTask(t, s, f.Swarm.ID, "a")
	b := SwarmTask(t, s, f.Swarm.ID, "b", taskHeld(f.W1.ID, continuo.TaskClaimed))
	other := Swarm(t, s, f.Group.ID, "")
	SwarmTask(t, s, other.ID, "a")
	c := SwarmTask(t, s, f.Swarm.ID, "c", func(k *continuo.Task) { *k = *taskFailed(*k) })
	d := SwarmTask(t, s, f.Swarm.ID, "d")
	e := SwarmTask(t, s, f.Swarm.ID, "e", taskHeld(f.W2.ID, continuo.TaskRunning))
	id := func(ks ...*continuo.Task) []string {
		out := []string{}
		for _, k := range ks {
			out = append(out, k.ID)
		}
		return out
	}
	queued, claimed, running := continuo.TaskQueued, continuo.TaskClaimed, continuo.TaskRunning
	for _, tc := range []struct {
		p    store.TaskListParams
		want []string
	}{
		{store.TaskListParams{}, id(a, b, c, d, e)},
		{store.TaskListParams{States: []continuo.TaskState{queued}}, id(a, d)},
		{store.TaskListParams{States: []continuo.TaskState{claimed, running}}, id(b, e)},
		{store.TaskListParams{States: []continuo.TaskState{continuo.TaskCollected}}, id()},
		{store.TaskListParams{AfterID: b.ID}, id(c, d, e)},
		{store.TaskListParams{AfterID: b.ID, States: []continuo.TaskState{queued}}, id(d)},
		{store.TaskListParams{AfterID: e.ID}, id()},
		{store.TaskListParams{Limit: 2}, id(a, b)},
		{store.TaskListParams{AfterID: b.ID, Limit: 2}, id(c, d)},
		{store.TaskListParams{Limit: 2, States: []continuo.TaskState{queued, running}}, id(a, d)},
	} {
		tc.p.SwarmID = f.Swarm.ID
		if got := idsOf(listTasks(t, s, tc.p), taskID); !slices.Equal(got, tc.want) {
			t.Errorf("TaskList(%+v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	sameList(t, "TaskList", listTasks(t, s, store.TaskListParams{SwarmID: f.Swarm.ID}), []continuo.Task{*a, *b, *c, *d, *e}, normTask)
}

// TaskList by worker keeps the tasks that worker holds or held, never
// another's or a queued one's; Newest lists newest first, the limit
// keeping the newest, and AfterID still keeps greater IDs.
func testTaskListWorker(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	failed := func(workerID string) func(*continuo.Task) {
		return func(k *continuo.Task) { taskHeld(workerID, continuo.TaskClaimed)(k); *k = *taskFailed(*k) }
	}
	a := SwarmTask(t, s, f.Swarm.ID, "a", failed(f.W1.ID))
	b := SwarmTask(t, s, f.Swarm.ID, "b", failed(f.W2.ID))
	c := SwarmTask(t, s, f.Swarm.ID, "c")
	d := SwarmTask(t, s, f.Swarm.ID, "d", failed(f.W1.ID))
	other := Swarm(t, s, f.Group.ID, "")
	elsewhere := SwarmWorker(t, s, other.ID, "", "elsewhere")
	SwarmTask(t, s, other.ID, "x", failed(elsewhere.ID))
	e := SwarmTask(t, s, f.Swarm.ID, "e", taskHeld(f.W1.ID, continuo.TaskRunning))
	id := func(ks ...*continuo.Task) []string {
		out := []string{}
		for _, k := range ks {
			out = append(out, k.ID)
		}
		return out
	}
	for _, tc := range []struct {
		p    store.TaskListParams
		want []string
	}{
		{store.TaskListParams{WorkerID: f.W1.ID}, id(a, d, e)},
		{store.TaskListParams{WorkerID: f.W1.ID, Newest: true}, id(e, d, a)},
		{store.TaskListParams{WorkerID: f.W1.ID, Newest: true, Limit: 2}, id(e, d)},
		{store.TaskListParams{WorkerID: f.W1.ID, Newest: true, AfterID: a.ID}, id(e, d)},
		{store.TaskListParams{WorkerID: f.W1.ID, States: []continuo.TaskState{continuo.TaskFailed}, Newest: true}, id(d, a)},
		{store.TaskListParams{WorkerID: f.W2.ID}, id(b)},
		{store.TaskListParams{WorkerID: elsewhere.ID}, id()},
		{store.TaskListParams{Newest: true}, id(e, d, c, b, a)},
		{store.TaskListParams{Newest: true, Limit: 2}, id(e, d)},
		{store.TaskListParams{Newest: true, AfterID: c.ID}, id(e, d)},
	} {
		tc.p.SwarmID = f.Swarm.ID
		if got := idsOf(listTasks(t, s, tc.p), taskID); !slices.Equal(got, tc.want) {
			t.Errorf("TaskList(%+v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	sameList(t, "TaskList of a worker", listTasks(t, s, store.TaskListParams{SwarmID: f.Swarm.ID, WorkerID: f.W1.ID, Newest: true}),
		[]continuo.Task{*e, *d, *a}, normTask)
}

// A limit ≤ 0 is 100.
func testTaskListLimit(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := setupSwarm(t, s)
	var all []string
	MustWrite(t, s, func(tx store.Tx) error {
		var created []string
		for i := range 102 {
			k := NewSwarmTask(f.Swarm.ID, fmt.Sprintf("k%03d", i))
			if err := tx.TaskCreate(ctx, k); err != nil {
				return err
			}
			created = append(created, k.ID)
		}
		all = created
		return nil
	})
	for _, tc := range []struct {
		limit int
		want  []string
	}{{0, all[:100]}, {-1, all[:100]}, {500, all}} {
		if got := idsOf(listTasks(t, s, store.TaskListParams{SwarmID: f.Swarm.ID, Limit: tc.limit}), taskID); !slices.Equal(got, tc.want) {
			t.Errorf("TaskList(Limit %d): %d tasks, want the oldest %d in ID order", tc.limit, len(got), len(tc.want))
		}
	}
}
