package store

import (
	"context"
	"time"

	"github.com/continuo-dev/continuo"
)

// SwarmTx holds Chat Swarm's swarms, workers, carriers, tasks and attempts
// (CONTRACT.md §7). Who may act on them is the swarm service's business;
// which state change is allowed is the transition tables' (continuo's
// CanBecome), and the store writes every task, worker and carrier state
// change as one statement guarded by them (the Move methods; an Update
// keeps the states): a change the table does not list is ErrInvalidState
// and changes nothing. The store also keeps the
// invariants the schema can (one active task per worker, one active
// attempt per task, one active carrier per worker, a carrier bound once
// ever, unique task keys) and guards every update on the revision or state
// it was read with.
type SwarmTx interface {
	// SwarmCreate inserts a swarm; an existing ID is ErrConflict.
	SwarmCreate(ctx context.Context, s *continuo.Swarm) error
	SwarmGet(ctx context.Context, id string) (*continuo.Swarm, error)
	// SwarmUpdate replaces a swarm's state, invite, revision and
	// updated_at if its stored revision is still prevRevision (which
	// s.Revision must exceed); else ErrStale.
	SwarmUpdate(ctx context.Context, s *continuo.Swarm, prevRevision int64) error
	// SwarmList lists a group's swarms as p selects, newest first.
	SwarmList(ctx context.Context, p SwarmListParams) ([]continuo.Swarm, error)

	// WorkerCreate inserts a worker; an existing ID is ErrConflict.
	WorkerCreate(ctx context.Context, w *continuo.Worker) error
	WorkerGet(ctx context.Context, id string) (*continuo.Worker, error)
	// WorkerUpdate replaces a worker's mutable fields other than its
	// states (epoch, carrier, continuity state, current task, checkpoint,
	// last seen, revision, updated_at, counted tokens, blocked and retired
	// reasons, retired_at) if its stored revision is still prevRevision
	// (which w.Revision must exceed), else ErrStale, and its stored state
	// and carrier state are still w's, else ErrInvalidState: an update
	// never changes a state. The idle TTL stays as created.
	WorkerUpdate(ctx context.Context, w *continuo.Worker, prevRevision int64) error
	// WorkerMove is WorkerUpdate that also moves the worker's state to to
	// and its carrier state to carrier, each as its table allows (a state
	// that is w's already stays, guarded as WorkerUpdate guards it), else
	// ErrInvalidState. On success w has the new states.
	WorkerMove(ctx context.Context, w *continuo.Worker, prevRevision int64, to continuo.WorkerState, carrier continuo.CarrierState) error
	// WorkerTouch sets a worker's last_seen_at (and its carrier state back
	// to active if it was lost) without changing its revision.
	WorkerTouch(ctx context.Context, id string, at time.Time) error
	// WorkerList lists a swarm's workers, retired ones too, oldest first.
	WorkerList(ctx context.Context, swarmID string) ([]continuo.Worker, error)
	// WorkerCount counts a swarm's workers that are not retired: those
	// that take a slot.
	WorkerCount(ctx context.Context, swarmID string) (int, error)
	// WorkersIdle lists workers that hold no task and are not retired
	// whose last_seen_at plus idle TTL is before now, the longest silent
	// first: the idle reaper's work.
	WorkersIdle(ctx context.Context, now time.Time, limit int) ([]continuo.Worker, error)

	// CarrierBind records a carrier's binding; a hash bound before, to any
	// worker, is ErrConflict, and so is a second active carrier of one
	// worker.
	CarrierBind(ctx context.Context, c continuo.Carrier) error
	CarrierGet(ctx context.Context, hash string) (*continuo.Carrier, error)
	// CarrierRetire retires an active carrier at at (a continuation
	// replaced it), so that its worker may bind the next; a carrier
	// already retired is ErrInvalidState.
	CarrierRetire(ctx context.Context, hash string, at time.Time) error

	// TaskCreate inserts a task; an existing ID or (swarm, task key) is
	// ErrConflict.
	TaskCreate(ctx context.Context, t *continuo.Task) error
	TaskGet(ctx context.Context, id string) (*continuo.Task, error)
	TaskByKey(ctx context.Context, swarmID, taskKey string) (*continuo.Task, error)
	// TaskUpdate replaces a task's mutable fields other than its state
	// (worker, attempt, result, result hash, reason, detail, revision,
	// updated_at, ended_at) if its stored revision is still prevRevision
	// (which t.Revision must exceed), else ErrStale, and its stored state
	// is still t.State, else ErrInvalidState: an update never changes the
	// state. A second active task of one worker is ErrConflict.
	TaskUpdate(ctx context.Context, t *continuo.Task, prevRevision int64) error
	// TaskMove is TaskUpdate that also moves the task's state from
	// t.State to to, if the stored state is one the task transition table
	// lets become to, else ErrInvalidState (to = t.State is no move: as
	// TaskUpdate). On success t.State is to.
	TaskMove(ctx context.Context, t *continuo.Task, prevRevision int64, to continuo.TaskState) error
	// TaskClaim claims the next queued task of a swarm for a worker, in one
	// guarded statement: the oldest task preferring this worker, else the
	// oldest preferring none, if its state is still one the task
	// transition table lets become claimed. It sets state claimed (with
	// ack, running: claimed and started in the one statement), the
	// worker, attempt+1, revision+1 and updated_at = at, and returns the
	// task as it is after; ErrNotFound when nothing is queued for the
	// worker. On PostgreSQL the candidate row is locked with SKIP LOCKED,
	// so concurrent claimers take different tasks rather than queue
	// behind one another.
	TaskClaim(ctx context.Context, swarmID, workerID string, at time.Time, ack bool) (*continuo.Task, error)
	// TaskSubmit hands in t's result in one guarded statement: state
	// result_ready, result, result hash, reason and detail, revision,
	// updated_at and ended_at as t has them, if the stored revision is
	// still prevRevision and the stored state one the task transition
	// table lets become result_ready; else ErrStale. On success t.State
	// is result_ready.
	TaskSubmit(ctx context.Context, t *continuo.Task, prevRevision int64) error
	// TaskQueued reports whether a task is queued that workerID could claim
	// (a read, for waiters deciding whether to try a claim).
	TaskQueued(ctx context.Context, swarmID, workerID string) (bool, error)
	// TaskCount counts a swarm's tasks in one state.
	TaskCount(ctx context.Context, swarmID string, state continuo.TaskState) (int, error)
	// TaskCounts counts a swarm's tasks by state (states with none are
	// absent).
	TaskCounts(ctx context.Context, swarmID string) (map[continuo.TaskState]int, error)
	// TaskList lists a swarm's tasks as p selects, by ID: oldest first, or
	// newest first when p.Newest.
	TaskList(ctx context.Context, p TaskListParams) ([]continuo.Task, error)
	// TaskTimeline counts a swarm's tasks dispatched (created_at) and
	// settled (ended_at) in each of p.Buckets consecutive buckets of
	// p.Bucket from p.Since, in one aggregate per count: it returns
	// p.Buckets entries, oldest first, empty buckets included.
	TaskTimeline(ctx context.Context, p TaskTimelineParams) ([]TaskBucket, error)

	// AttemptCreate inserts an attempt; an existing ID or (task, number) is
	// ErrConflict, and so is a second active attempt of one task.
	AttemptCreate(ctx context.Context, a *continuo.Attempt) error
	AttemptGet(ctx context.Context, id string) (*continuo.Attempt, error)
	// AttemptOf returns attempt number n of a task.
	AttemptOf(ctx context.Context, taskID string, n int) (*continuo.Attempt, error)
	// AttemptsLatest returns the latest attempt of each task named (the
	// attempt whose number is the task's attempt), by task ID; a task
	// never claimed, or unknown, has none. At most MaxAttemptsLatest
	// tasks.
	AttemptsLatest(ctx context.Context, taskIDs []string) (map[string]continuo.Attempt, error)
	// AttemptUpdate replaces an attempt's lease, acked_at and ended_at if
	// its stored state is still a.State; else ErrStale.
	AttemptUpdate(ctx context.Context, a *continuo.Attempt) error
	// AttemptMove is AttemptUpdate that also sets the attempt's state to
	// to (attempts have no transition table: the guard is the state read).
	// On success a.State is to.
	AttemptMove(ctx context.Context, a *continuo.Attempt, to continuo.AttemptState) error
	// AttemptsActive lists active attempts (claimed or running), oldest
	// first, as p selects.
	AttemptsActive(ctx context.Context, p AttemptListParams) ([]continuo.Attempt, error)
	// AttemptServers lists the distinct servers that delivered the active
	// attempts, so that a sweeper can ask once per server whether it lives.
	AttemptServers(ctx context.Context) ([]string, error)
}

// SwarmListParams selects a group's swarms.
type SwarmListParams struct {
	GroupID  string
	BeforeID string // keyset: only swarms with a smaller ID (older)
	Limit    int    // ≤ 0: 100
}

// TaskTimelineParams selects the buckets of TaskTimeline.
type TaskTimelineParams struct {
	SwarmID string
	Since   time.Time     // the first bucket's start
	Bucket  time.Duration // each bucket's length, ≥ 1 ms
	Buckets int           // how many, 1..MaxTimelineBuckets
}

// MaxAttemptsLatest bounds the tasks of one AttemptsLatest.
const MaxAttemptsLatest = 100

// MaxTimelineBuckets bounds TaskTimeline.
const MaxTimelineBuckets = 200

// TaskBucket is one bucket of TaskTimeline: the tasks created in
// [Start, Start+Bucket), and those that became terminal in it.
type TaskBucket struct {
	Start      time.Time
	Dispatched int
	Settled    int
}

// TaskListParams selects a swarm's tasks.
type TaskListParams struct {
	SwarmID  string
	WorkerID string               // "": any worker (or none)
	States   []continuo.TaskState // empty: any
	AfterID  string               // keyset: only tasks with a greater ID (in either order)
	Newest   bool                 // newest first; else oldest first
	Limit    int                  // ≤ 0: 100
}

// AttemptListParams selects active attempts. Every set field must match.
type AttemptListParams struct {
	SwarmID     string    // "": any swarm
	Server      string    // "": any server
	LeaseBefore time.Time // zero: any; else lease_until < LeaseBefore
	Limit       int       // ≤ 0: 100
}
