package swarm

import (
	"context"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// Owner reads beyond the tools' (the dashboard's): the group's swarms,
// every worker's pressure, tasks with their attempts, the tasks of a swarm
// over time and its continuations. Each is one read snapshot with the
// owner checks of ownSwarm, and each is bounded.

// Page bounds of the owner reads.
const (
	MaxSwarmPage        = 50
	MaxContinuationPage = 50
	// MaxAttemptsShown bounds the attempts TaskAttempts returns (the
	// newest); a task requeued more often says how many it left out.
	MaxAttemptsShown = 20
	// MaxTimelineBuckets bounds Timeline.
	MaxTimelineBuckets = 168
	// MinTimelineBucket is the shortest bucket of Timeline.
	MinTimelineBucket = time.Minute
)

// SwarmSummary is a swarm with its worker count and task counts by state.
type SwarmSummary struct {
	Swarm   continuo.Swarm
	Workers int
	Counts  map[continuo.TaskState]int
}

// SwarmPage is one page of a group's swarms, newest first.
type SwarmPage struct {
	Swarms []SwarmSummary
	Next   string // the before of the next page; "" at the end
}

// ListSwarms lists the swarms the caller's group owns, newest first,
// before a swarm ID (a keyset cursor), with their counts.
func (s *Service) ListSwarms(ctx context.Context, c *continuo.Caller, before string, limit int) (*SwarmPage, error) {
	if err := c.Require(continuo.ScopeSwarmOwn); err != nil {
		return nil, err
	}
	limit = pageSize(limit, MaxSwarmPage)
	var out *SwarmPage
	err := s.db.Read(ctx, func(tx store.Tx) error {
		ss, err := tx.SwarmList(ctx, store.SwarmListParams{GroupID: c.GroupID, BeforeID: before, Limit: limit + 1})
		if err != nil {
			return err
		}
		page := &SwarmPage{}
		ss, page.Next = cut(ss, limit, func(sw continuo.Swarm) string { return sw.ID })
		for _, sw := range ss {
			n, err := tx.WorkerCount(ctx, sw.ID)
			if err != nil {
				return err
			}
			counts, err := tx.TaskCounts(ctx, sw.ID)
			if err != nil {
				return err
			}
			page.Swarms = append(page.Swarms, SwarmSummary{Swarm: sw, Workers: n, Counts: counts})
		}
		out = page
		return nil
	})
	return out, err
}

// pressures are the pressures of workers ws of swarm sw, from one read of
// the swarm's ledger.
func pressures(ctx context.Context, tx store.Tx, sw *continuo.Swarm, ws []continuo.Worker) (map[string]*Pressure, error) {
	es, err := tx.LedgerOfSwarm(ctx, sw.ID)
	if err != nil {
		return nil, err
	}
	of := map[string][]continuo.LedgerEntry{}
	for _, e := range es {
		of[e.WorkerID] = append(of[e.WorkerID], e)
	}
	ps := make(map[string]*Pressure, len(ws))
	for i := range ws {
		w := &ws[i]
		ps[w.ID] = pressureFrom(sw, w, of[w.ID])
	}
	return ps, nil
}

// pageSize is a page's size: limit, or the most when limit is ≤ 0 or
// past it.
func pageSize(limit, most int) int {
	if limit <= 0 || limit > most {
		return most
	}
	return limit
}

// cut keeps the first limit of a page read with limit+1 rows, and returns
// the cursor of the next page: the ID of the last one kept, or "" when
// nothing is left.
func cut[T any](xs []T, limit int, id func(T) string) ([]T, string) {
	if len(xs) > limit {
		return xs[:limit], id(xs[limit-1])
	}
	return xs, ""
}

// owned runs fn on a swarm the caller owns, in one read snapshot.
func (s *Service) owned(ctx context.Context, c *continuo.Caller, car Carrier, swarmID string, fn func(tx store.Tx, sw *continuo.Swarm) error) error {
	return s.db.Read(ctx, func(tx store.Tx) error {
		sw, err := s.ownSwarm(ctx, tx, c, car, swarmID)
		if err != nil {
			return err
		}
		return fn(tx, sw)
	})
}

// TaskStatusPage is one page of a swarm's tasks in one state, oldest
// first, each with its latest attempt.
type TaskStatusPage struct {
	Tasks []TaskStatus
	Next  string // the after of the next page; "" at the end
}

// ListTaskStatus lists the tasks of a swarm the caller owns in one state
// as ListTasks does, each with its latest attempt: what the owner needs to
// reconcile a task in doubt (the attempt its evidence names).
func (s *Service) ListTaskStatus(ctx context.Context, c *continuo.Caller, car Carrier, swarmID string, state continuo.TaskState, after string, limit int) (*TaskStatusPage, error) {
	if !state.Valid() {
		return nil, continuo.Invalid("state", "must be a task state")
	}
	var out *TaskStatusPage
	err := s.owned(ctx, c, car, swarmID, func(tx store.Tx, sw *continuo.Swarm) (err error) {
		out, err = taskStatusPage(ctx, tx, sw, state, after, limit)
		return err
	})
	return out, err
}

func taskStatusPage(ctx context.Context, tx store.Tx, sw *continuo.Swarm, state continuo.TaskState, after string, limit int) (*TaskStatusPage, error) {
	page, err := taskPage(ctx, tx, sw.ID, state, after, pageSize(limit, MaxTaskPage))
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(page.Tasks))
	for i, t := range page.Tasks {
		ids[i] = t.ID
	}
	as, err := tx.AttemptsLatest(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := &TaskStatusPage{Next: page.Next, Tasks: make([]TaskStatus, len(page.Tasks))}
	for i, t := range page.Tasks {
		out.Tasks[i].Task = t
		if a, ok := as[t.ID]; ok {
			out.Tasks[i].Attempt = &a
		}
	}
	return out, nil
}

// TaskAttempts is a task with its newest attempts, newest first, and the
// labels of the workers they name.
type TaskAttempts struct {
	Task     continuo.Task
	Attempts []continuo.Attempt
	Earlier  int               // older attempts left out (past MaxAttemptsShown)
	Labels   map[string]string // worker ID → label, for the task's and its attempts' workers
}

// TaskHistory returns one task of a swarm the caller owns with its
// attempts.
func (s *Service) TaskHistory(ctx context.Context, c *continuo.Caller, car Carrier, swarmID, taskID string) (*TaskAttempts, error) {
	var out *TaskAttempts
	err := s.owned(ctx, c, car, swarmID, func(tx store.Tx, sw *continuo.Swarm) error {
		t, err := taskOf(ctx, tx, sw.ID, taskID)
		if err != nil {
			return err
		}
		res := &TaskAttempts{Task: *t, Labels: map[string]string{}}
		oldest := max(1, t.Attempt-MaxAttemptsShown+1)
		res.Earlier = oldest - 1
		for n := t.Attempt; n >= oldest; n-- {
			a, err := tx.AttemptOf(ctx, t.ID, n)
			if err != nil {
				return err
			}
			res.Attempts = append(res.Attempts, *a)
		}
		for _, id := range append([]string{t.WorkerID, t.PreferredWorkerID}, workersOf(res.Attempts)...) {
			if _, ok := res.Labels[id]; ok || id == "" {
				continue
			}
			w, err := tx.WorkerGet(ctx, id)
			if err != nil {
				return err
			}
			res.Labels[id] = w.Label
		}
		out = res
		return nil
	})
	return out, err
}

func workersOf(as []continuo.Attempt) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.WorkerID
	}
	return out
}

// Timeline is a swarm's tasks dispatched and settled per bucket, oldest
// bucket first; the last one holds the time of the read.
type Timeline struct {
	Bucket  time.Duration
	Buckets []store.TaskBucket
}

func checkTimeline(bucket time.Duration, n int) error {
	switch {
	case bucket < MinTimelineBucket:
		return continuo.Invalid("bucket", "must be at least %s", MinTimelineBucket)
	case n < 1 || n > MaxTimelineBuckets:
		return continuo.Invalid("buckets", "must be 1..%d", MaxTimelineBuckets)
	}
	return nil
}

func (s *Service) timeline(ctx context.Context, tx store.Tx, sw *continuo.Swarm, bucket time.Duration, n int) (*Timeline, error) {
	since := s.now().Truncate(bucket).Add(-bucket * time.Duration(n-1))
	bs, err := tx.TaskTimeline(ctx, store.TaskTimelineParams{SwarmID: sw.ID, Since: since, Bucket: bucket, Buckets: n})
	if err != nil {
		return nil, err
	}
	return &Timeline{Bucket: bucket, Buckets: bs}, nil
}

// ContinuationPage is one page of a swarm's continuations, newest first.
type ContinuationPage struct {
	Continuations []continuo.Continuation
	Next          string // the before of the next page; "" at the end
}

func history(ctx context.Context, tx store.Tx, sw *continuo.Swarm, before string, limit int) (*ContinuationPage, error) {
	limit = pageSize(limit, MaxContinuationPage)
	cs, err := tx.ContinuationList(ctx, store.ContinuationListParams{SwarmID: sw.ID, BeforeID: before, Limit: limit + 1})
	if err != nil {
		return nil, err
	}
	page := &ContinuationPage{}
	page.Continuations, page.Next = cut(cs, limit, func(c continuo.Continuation) string { return c.ID })
	return page, nil
}

// OverviewInput says what Overview reads beyond the swarm's status.
type OverviewInput struct {
	InDoubt       int           // tasks in doubt, with their latest attempts (≤ MaxTaskPage)
	Bucket        time.Duration // the timeline's buckets
	Buckets       int
	HistoryBefore string // the history's cursor
	History       int    // continuations of the history (≤ MaxContinuationPage)
}

// Overview is a swarm as its owner's page shows it, read in one snapshot.
type Overview struct {
	Status    *Status
	Pressures map[string]*Pressure
	InDoubt   *TaskStatusPage
	Timeline  *Timeline
	History   *ContinuationPage
}

// Overview reads, in one snapshot, a swarm the caller owns as its page
// shows it: its status, every worker's pressure, the tasks in doubt (as
// ListTaskStatus), the timeline of tasks dispatched and settled, and a page
// of its continuations.
func (s *Service) Overview(ctx context.Context, c *continuo.Caller, car Carrier, swarmID string, in OverviewInput) (*Overview, error) {
	if err := checkTimeline(in.Bucket, in.Buckets); err != nil {
		return nil, err
	}
	var out *Overview
	err := s.owned(ctx, c, car, swarmID, func(tx store.Tx, sw *continuo.Swarm) error {
		o := &Overview{}
		var err error
		if o.Status, err = status(ctx, tx, sw); err != nil {
			return err
		}
		if o.Pressures, err = pressures(ctx, tx, sw, o.Status.Workers); err != nil {
			return err
		}
		o.Status.Pressures = o.Pressures // as SwarmStatus gives them
		if o.InDoubt, err = taskStatusPage(ctx, tx, sw, continuo.TaskReconcileRequired, "", in.InDoubt); err != nil {
			return err
		}
		if o.Timeline, err = s.timeline(ctx, tx, sw, in.Bucket, in.Buckets); err != nil {
			return err
		}
		if o.History, err = history(ctx, tx, sw, in.HistoryBefore, in.History); err != nil {
			return err
		}
		out = o
		return nil
	})
	if out != nil {
		out.Status.Runtime = s.runtimeName()
	}
	return out, err
}
