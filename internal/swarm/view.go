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
	if limit <= 0 || limit > MaxSwarmPage {
		limit = MaxSwarmPage
	}
	var out *SwarmPage
	err := s.db.Read(ctx, func(tx store.Tx) error {
		ss, err := tx.SwarmList(ctx, store.SwarmListParams{GroupID: c.GroupID, BeforeID: before, Limit: limit + 1})
		if err != nil {
			return err
		}
		page := &SwarmPage{}
		if len(ss) > limit {
			ss, page.Next = ss[:limit], ss[limit-1].ID
		}
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

// Pressures returns the context pressure of every worker of a swarm the
// caller owns, at each worker's current epoch, by worker ID.
func (s *Service) Pressures(ctx context.Context, c *continuo.Caller, car Carrier, swarmID string) (map[string]*Pressure, error) {
	var out map[string]*Pressure
	err := s.db.Read(ctx, func(tx store.Tx) error {
		sw, err := s.ownSwarm(ctx, tx, c, car, swarmID)
		if err != nil {
			return err
		}
		ws, err := tx.WorkerList(ctx, sw.ID)
		if err != nil {
			return err
		}
		ps := make(map[string]*Pressure, len(ws))
		for i := range ws {
			if ps[ws[i].ID], err = pressureOf(ctx, tx, sw, &ws[i]); err != nil {
				return err
			}
		}
		out = ps
		return nil
	})
	return out, err
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
	if limit <= 0 || limit > MaxTaskPage {
		limit = MaxTaskPage
	}
	var out *TaskStatusPage
	err := s.db.Read(ctx, func(tx store.Tx) error {
		sw, err := s.ownSwarm(ctx, tx, c, car, swarmID)
		if err != nil {
			return err
		}
		page, err := taskPage(ctx, tx, sw.ID, state, after, limit)
		if err != nil {
			return err
		}
		res := &TaskStatusPage{Next: page.Next}
		for _, t := range page.Tasks {
			ts := TaskStatus{Task: t}
			if t.Attempt > 0 {
				if ts.Attempt, err = tx.AttemptOf(ctx, t.ID, t.Attempt); err != nil {
					return err
				}
			}
			res.Tasks = append(res.Tasks, ts)
		}
		out = res
		return nil
	})
	return out, err
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
	err := s.db.Read(ctx, func(tx store.Tx) error {
		sw, err := s.ownSwarm(ctx, tx, c, car, swarmID)
		if err != nil {
			return err
		}
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

// Timeline counts the tasks of a swarm the caller owns dispatched and
// settled in each of n buckets of length bucket (whole buckets, the last
// one holding now): an aggregate of the store, whatever the number of
// tasks.
func (s *Service) Timeline(ctx context.Context, c *continuo.Caller, car Carrier, swarmID string, bucket time.Duration, n int) (*Timeline, error) {
	switch {
	case bucket < MinTimelineBucket:
		return nil, continuo.Invalid("bucket", "must be at least %s", MinTimelineBucket)
	case n < 1 || n > MaxTimelineBuckets:
		return nil, continuo.Invalid("buckets", "must be 1..%d", MaxTimelineBuckets)
	}
	since := s.now().Truncate(bucket).Add(-bucket * time.Duration(n-1))
	var out *Timeline
	err := s.db.Read(ctx, func(tx store.Tx) error {
		sw, err := s.ownSwarm(ctx, tx, c, car, swarmID)
		if err != nil {
			return err
		}
		bs, err := tx.TaskTimeline(ctx, store.TaskTimelineParams{SwarmID: sw.ID, Since: since, Bucket: bucket, Buckets: n})
		if err != nil {
			return err
		}
		out = &Timeline{Bucket: bucket, Buckets: bs}
		return nil
	})
	return out, err
}

// ContinuationPage is one page of a swarm's continuations, newest first.
type ContinuationPage struct {
	Continuations []continuo.Continuation
	Next          string // the before of the next page; "" at the end
}

// History lists the continuations of a swarm the caller owns — its
// rollovers, bound or not — newest first, before a continuation ID (a
// keyset cursor).
func (s *Service) History(ctx context.Context, c *continuo.Caller, car Carrier, swarmID, before string, limit int) (*ContinuationPage, error) {
	if limit <= 0 || limit > MaxContinuationPage {
		limit = MaxContinuationPage
	}
	var out *ContinuationPage
	err := s.db.Read(ctx, func(tx store.Tx) error {
		sw, err := s.ownSwarm(ctx, tx, c, car, swarmID)
		if err != nil {
			return err
		}
		cs, err := tx.ContinuationList(ctx, store.ContinuationListParams{SwarmID: sw.ID, BeforeID: before, Limit: limit + 1})
		if err != nil {
			return err
		}
		page := &ContinuationPage{Continuations: cs}
		if len(cs) > limit {
			page.Continuations, page.Next = cs[:limit], cs[limit-1].ID
		}
		out = page
		return nil
	})
	return out, err
}
