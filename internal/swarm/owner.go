package swarm

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/store"
)

// Invite bounds.
const (
	MinInviteTTL = time.Minute
	MaxInviteTTL = 24 * time.Hour
	// invitePrefix marks an invite, so that it reads as a credential to
	// people and to redaction alike.
	invitePrefix = "cto_inv_"
)

// CreateInput is what chat_swarm_create takes.
type CreateInput struct {
	WorkerLimit int
	Policy      *continuo.SwarmPolicy // nil: DefaultSwarmPolicy
	InviteTTL   time.Duration         // 0: DefaultInviteTTL
}

// Invited is a swarm with its new invite, which is shown here only.
type Invited struct {
	Swarm     continuo.Swarm
	Invite    string
	ExpiresAt time.Time
}

// CheckPolicy validates a policy, field by field.
func CheckPolicy(p continuo.SwarmPolicy) error {
	ttl := p.LeaseTTL()
	switch c := p.Compaction; {
	case ttl < continuo.MinLeaseTTL || ttl > continuo.MaxLeaseTTL:
		return continuo.Invalid("policy.lease_ttl_secs", "must be %d..%d", int(continuo.MinLeaseTTL/time.Second), int(continuo.MaxLeaseTTL/time.Second))
	case c.BudgetTokens < 1 || c.BudgetTokens > continuo.MaxBudgetTokens:
		return continuo.Invalid("policy.compaction.budget_tokens", "must be 1..%d", continuo.MaxBudgetTokens)
	case !(c.Threshold > 0 && c.Threshold <= 1):
		return continuo.Invalid("policy.compaction.threshold", "must be in (0, 1]")
	case c.ReserveTokens < 0 || c.ReserveTokens >= c.BudgetTokens:
		return continuo.Invalid("policy.compaction.reserve_tokens", "must be 0..budget_tokens-1")
	case p.WorkerIdleTTLSecs != 0 && (p.WorkerIdleTTL() < continuo.MinWorkerIdleTTL || p.WorkerIdleTTL() > continuo.MaxWorkerIdleTTL):
		return continuo.Invalid("policy.worker_idle_ttl_secs", "must be %d..%d", int(continuo.MinWorkerIdleTTL/time.Second),
			int(continuo.MaxWorkerIdleTTL/time.Second))
	}
	return nil
}

func inviteTTL(d time.Duration) (time.Duration, error) {
	if d == 0 {
		return continuo.DefaultInviteTTL, nil
	}
	if d < MinInviteTTL || d > MaxInviteTTL {
		return 0, continuo.Invalid("invite_ttl_secs", "must be %d..%d", int(MinInviteTTL/time.Second), int(MaxInviteTTL/time.Second))
	}
	return d, nil
}

func newInvite() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	invite := invitePrefix + base64.RawURLEncoding.EncodeToString(b[:])
	redact.RegisterMinted(invite)
	return invite
}

func inviteHash(invite string) string { return digest("continuo invite v1", invite) }

// Create makes a swarm owned by the caller's group and its first invite.
func (s *Service) Create(ctx context.Context, c *continuo.Caller, car Carrier, in CreateInput) (*Invited, error) {
	if err := c.Require(continuo.ScopeSwarmOwn); err != nil {
		return nil, err
	}
	if in.WorkerLimit < 1 || in.WorkerLimit > continuo.MaxSwarmWorkers {
		return nil, continuo.Invalid("worker_limit", "must be 1..%d", continuo.MaxSwarmWorkers)
	}
	policy := continuo.DefaultSwarmPolicy()
	if in.Policy != nil {
		policy = *in.Policy
	}
	if err := CheckPolicy(policy); err != nil {
		return nil, err
	}
	ttl, err := inviteTTL(in.InviteTTL)
	if err != nil {
		return nil, err
	}
	now := s.now()
	invite := newInvite()
	sw := continuo.Swarm{ID: continuo.NewID(continuo.PrefixSwarm, now), GroupID: c.GroupID, CreatedBy: c.PrincipalID,
		OwnerCarrier: car.hash(c.PrincipalID), State: continuo.SwarmActive, WorkerLimit: in.WorkerLimit, Policy: policy,
		InviteHash: inviteHash(invite), InviteExpiresAt: now.Add(ttl), Revision: 1, CreatedAt: now, UpdatedAt: now}
	if err := s.db.Write(ctx, func(tx store.Tx) error { return tx.SwarmCreate(ctx, &sw) }); err != nil {
		return nil, err
	}
	return &Invited{Swarm: sw, Invite: invite, ExpiresAt: sw.InviteExpiresAt}, nil
}

// Invite replaces an active swarm's invite: the previous one stops
// admitting joins.
func (s *Service) Invite(ctx context.Context, c *continuo.Caller, car Carrier, swarmID string, ttl time.Duration) (*Invited, error) {
	ttl, err := inviteTTL(ttl)
	if err != nil {
		return nil, err
	}
	invite := newInvite()
	var out *Invited
	err = s.db.Write(ctx, func(tx store.Tx) error {
		sw, err := s.ownSwarm(ctx, tx, c, car, swarmID)
		if err != nil {
			return err
		}
		if sw.State != continuo.SwarmActive {
			return closedErr(sw)
		}
		now, prev := s.now(), sw.Revision
		sw.InviteHash, sw.InviteExpiresAt, sw.Revision, sw.UpdatedAt = inviteHash(invite), now.Add(ttl), prev+1, now
		if err := tx.SwarmUpdate(ctx, sw, prev); err != nil {
			return stale(err, "the swarm")
		}
		out = &Invited{Swarm: *sw, Invite: invite, ExpiresAt: sw.InviteExpiresAt}
		return nil
	})
	return out, err
}

func closedErr(sw *continuo.Swarm) error {
	return continuo.Errorf(continuo.CodeInvalidState, "swarm %s is closed", sw.ID).With("state", string(sw.State))
}

// DispatchInput is what chat_swarm_dispatch takes for one task.
type DispatchInput struct {
	SwarmID           string
	TaskKey           string
	Prompt            string
	Payload           json.RawMessage // nil: none
	PreferredWorkerID string
}

// DispatchItem is one task of a batch dispatch.
type DispatchItem struct {
	TaskKey           string
	Prompt            string
	Payload           json.RawMessage // nil: none
	PreferredWorkerID string
}

// TaskResult is a task and whether the call replayed an earlier one.
type TaskResult struct {
	Task     continuo.Task
	Replayed bool
}

// Dispatch queues a task, or replays the task of the same key: the same
// prompt, payload and preferred worker return it (replayed), anything else
// under that key is a conflict.
func (s *Service) Dispatch(ctx context.Context, c *continuo.Caller, car Carrier, in DispatchInput) (*TaskResult, error) {
	out, err := s.dispatch(ctx, c, car, in.SwarmID, []DispatchItem{{TaskKey: in.TaskKey, Prompt: in.Prompt, Payload: in.Payload,
		PreferredWorkerID: in.PreferredWorkerID}}, false)
	if err != nil {
		return nil, err
	}
	return &out[0], nil
}

// DispatchBatch queues 1..MaxDispatchBatch tasks in one transaction, all or
// none, and returns them in order. Each item replays by its task key as a
// single dispatch does (an item repeating an earlier item's key and
// content is that task); an item that cannot be queued fails the batch,
// its error naming its index (details.index, fields tasks[i].…).
func (s *Service) DispatchBatch(ctx context.Context, c *continuo.Caller, car Carrier, swarmID string, items []DispatchItem) ([]TaskResult, error) {
	return s.dispatch(ctx, c, car, swarmID, items, true)
}

// queuedTask is one item of a dispatch, checked and hashed.
type queuedTask struct {
	DispatchItem
	payload, prompt, reqHash string
}

// dispatch queues items in one Write. batch names an item's fields by its
// index (tasks[i].…) and puts the index in an error's details.
func (s *Service) dispatch(ctx context.Context, c *continuo.Caller, car Carrier, swarmID string, items []DispatchItem, batch bool) ([]TaskResult, error) {
	name := func(i int, field string) string {
		if !batch {
			return field
		}
		return fmt.Sprintf("tasks[%d].%s", i, field)
	}
	at := func(i int, err *continuo.Error) *continuo.Error {
		if batch {
			err = err.With("index", i)
		}
		return err
	}
	if batch && (len(items) < 1 || len(items) > continuo.MaxDispatchBatch) {
		return nil, continuo.Invalid("tasks", "must have 1..%d items, got %d", continuo.MaxDispatchBatch, len(items)).With("limit", continuo.MaxDispatchBatch)
	}
	qs := make([]queuedTask, len(items))
	total := 0
	for i, it := range items {
		switch {
		case it.TaskKey == "" || len(it.TaskKey) > continuo.MaxTaskKey:
			return nil, at(i, continuo.Invalid(name(i, "task_key"), "must be 1..%d bytes", continuo.MaxTaskKey))
		case it.Prompt == "" || len(it.Prompt) > continuo.MaxTaskPrompt:
			return nil, at(i, continuo.Invalid(name(i, "prompt"), "must be 1..%d bytes", continuo.MaxTaskPrompt))
		}
		payload, err := compactJSON(name(i, "payload"), it.Payload, continuo.MaxTaskPayload)
		if err != nil {
			return nil, at(i, continuo.AsError(err))
		}
		total += len(it.Prompt) + len(payload)
		if batch && total > continuo.MaxDispatchBatchBytes {
			return nil, continuo.Errorf(continuo.CodeTooLarge, "the tasks' prompts and payloads exceed %d bytes together: dispatch them in smaller batches",
				continuo.MaxDispatchBatchBytes).With("field", "tasks").With("limit", continuo.MaxDispatchBatchBytes).With("index", i)
		}
		q := queuedTask{DispatchItem: it, reqHash: digest("continuo task v1", it.Prompt, payload, it.PreferredWorkerID)}
		// A model reads the prompt and the payload: no credential reaches it.
		q.prompt, _ = redact.String(it.Prompt)
		if payload != "" {
			q.payload = redactJSON(payload)
		}
		qs[i] = q
	}
	var out []TaskResult
	write := func(tx store.Tx) error {
		out = make([]TaskResult, len(qs))
		sw, err := s.ownSwarm(ctx, tx, c, car, swarmID)
		if err != nil {
			return err
		}
		var fresh []int           // the items this call queues
		first := map[string]int{} // task key → the first item with it
		for i, q := range qs {
			if j, ok := first[q.TaskKey]; ok {
				if qs[j].reqHash != q.reqHash {
					return at(i, continuo.Errorf(continuo.CodeConflict, "%s: task_key %q was given with another prompt, payload or preferred worker at index %d",
						name(i, "task_key"), q.TaskKey, j))
				}
				out[i] = TaskResult{Task: out[j].Task, Replayed: true}
				continue
			}
			first[q.TaskKey] = i
			prev, err := tx.TaskByKey(ctx, sw.ID, q.TaskKey)
			switch {
			case err == nil && prev.RequestHash == q.reqHash:
				out[i] = TaskResult{Task: *prev, Replayed: true}
				continue
			case err == nil:
				return at(i, continuo.Errorf(continuo.CodeConflict, "task_key %q was dispatched with another prompt, payload or preferred worker", q.TaskKey).
					With("task_id", prev.ID))
			case !errors.Is(err, store.ErrNotFound):
				return err
			}
			if sw.State != continuo.SwarmActive {
				return closedErr(sw)
			}
			if q.PreferredWorkerID != "" {
				w, err := tx.WorkerGet(ctx, q.PreferredWorkerID)
				switch {
				case errors.Is(err, store.ErrNotFound) || err == nil && w.SwarmID != sw.ID:
					return at(i, continuo.Invalid(name(i, "preferred_worker_id"), "is not a worker of this swarm"))
				case err != nil:
					return err
				case w.Retired():
					return at(i, continuo.Invalid(name(i, "preferred_worker_id"), "names worker %s, which was retired (%s)", w.ID, w.RetiredReason).
						With("retired_reason", string(w.RetiredReason)))
				}
			}
			fresh = append(fresh, i)
		}
		if len(fresh) == 0 {
			return nil
		}
		queued, err := tx.TaskCount(ctx, sw.ID, continuo.TaskQueued)
		if err != nil {
			return err
		}
		if queued+len(fresh) > continuo.DefaultQueueLimit {
			return continuo.Errorf(continuo.CodeQueueFull, "the swarm has %d queued tasks and its limit is %d: wait for workers to claim some",
				queued, continuo.DefaultQueueLimit).With("limit", continuo.DefaultQueueLimit)
		}
		now := s.now()
		anyone := 0 // tasks queued for any worker
		for _, i := range fresh {
			q := qs[i]
			t := continuo.Task{ID: continuo.NewID(continuo.PrefixTask, now), SwarmID: sw.ID, TaskKey: q.TaskKey, RequestHash: q.reqHash,
				Prompt: q.prompt, Payload: q.payload, PreferredWorkerID: q.PreferredWorkerID, State: continuo.TaskQueued,
				Revision: 1, CreatedAt: now, UpdatedAt: now}
			if err := tx.TaskCreate(ctx, &t); err != nil {
				return err
			}
			out[i] = TaskResult{Task: t}
			for j := i + 1; j < len(qs); j++ {
				if qs[j].TaskKey == q.TaskKey {
					out[j].Task = t
				}
			}
			if q.PreferredWorkerID == "" {
				anyone++
			} else if err := tx.Notify(ctx, channel(sw.ID), wakePayload(q.PreferredWorkerID)); err != nil {
				return err
			}
		}
		if anyone == 0 {
			return nil
		}
		// One notification for the tasks any worker may take: up to that
		// many waiters wake, in every replica.
		return tx.Notify(ctx, channel(sw.ID), wakeMany(anyone))
	}
	err := s.db.Write(ctx, write)
	if errors.Is(err, store.ErrConflict) {
		// A concurrent dispatch of the same key committed first (on
		// PostgreSQL the second insert meets its unique key): this run
		// finds it and replays it, or reports the conflict.
		err = s.db.Write(ctx, write)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// compactJSON validates an optional JSON value and returns it compacted
// ("" for none).
func compactJSON(field string, raw json.RawMessage, limit int) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	if len(raw) > limit {
		return "", continuo.Errorf(continuo.CodeTooLarge, "%s exceeds %d bytes", field, limit).With("field", field).With("limit", limit)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil || !json.Valid(raw) {
		return "", continuo.Invalid(field, "must be JSON")
	}
	return b.String(), nil
}

// redactJSON redacts the strings of a JSON value (keys that name secrets
// included), keeping it JSON.
func redactJSON(text string) string {
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return text
	}
	r, changed := redact.Value(v)
	if !changed {
		return text
	}
	b, err := json.Marshal(r)
	if err != nil {
		return text
	}
	return string(b)
}

// Status is a swarm with its workers, task counts and open continuations.
type Status struct {
	Swarm         continuo.Swarm
	Workers       []continuo.Worker
	Counts        map[continuo.TaskState]int
	Continuations []continuo.Continuation // open ones: what awaits the owner
	// Runtime is the carrier runtime that replaces a compact_required
	// worker's carrier: RuntimeProcess (the planner starts one) or
	// RuntimeManual (none: the owner continues the worker).
	Runtime string
	// Pressures are the workers' context pressures by worker ID
	// (SwarmStatus; nil from CloseSwarm).
	Pressures map[string]*Pressure
	// Replayed is set by a close of a swarm closed already.
	Replayed bool
}

// SwarmStatus returns a swarm the caller owns, with its workers and task
// counts.
func (s *Service) SwarmStatus(ctx context.Context, c *continuo.Caller, car Carrier, swarmID string) (*Status, error) {
	var out *Status
	err := s.db.Read(ctx, func(tx store.Tx) error {
		sw, err := s.ownSwarm(ctx, tx, c, car, swarmID)
		if err != nil {
			return err
		}
		if out, err = status(ctx, tx, sw); err != nil {
			return err
		}
		out.Pressures, err = pressures(ctx, tx, sw, out.Workers)
		return err
	})
	if out != nil {
		out.Runtime = s.runtimeName()
	}
	return out, err
}

// runtimeName names the carrier runtime of this service.
func (s *Service) runtimeName() string {
	if s.runtime != nil && s.minter != nil {
		return RuntimeProcess
	}
	return RuntimeManual
}

// The carrier runtimes (CONTRACT.md §8).
const (
	RuntimeManual  = "manual"
	RuntimeProcess = "process"
)

// status reads a swarm's workers and task counts.
func status(ctx context.Context, tx store.Tx, sw *continuo.Swarm) (*Status, error) {
	ws, err := tx.WorkerList(ctx, sw.ID)
	if err != nil {
		return nil, err
	}
	counts, err := tx.TaskCounts(ctx, sw.ID)
	if err != nil {
		return nil, err
	}
	cs, err := tx.ContinuationList(ctx, store.ContinuationListParams{SwarmID: sw.ID, States: openStates})
	if err != nil {
		return nil, err
	}
	return &Status{Swarm: *sw, Workers: ws, Counts: counts, Continuations: cs}, nil
}

// MaxTaskPage bounds one page of ListTasks.
const MaxTaskPage = 100

// TaskPage is one page of a swarm's tasks in one state, oldest first.
type TaskPage struct {
	Tasks []continuo.Task
	Next  string // the after of the next page; "" at the end
}

// ListTasks lists the tasks of a swarm the caller owns in one state, by
// ID, after a task ID (a keyset cursor): how an owner finds the results to
// collect and the tasks to reconcile.
func (s *Service) ListTasks(ctx context.Context, c *continuo.Caller, car Carrier, swarmID string, state continuo.TaskState, after string, limit int) (*TaskPage, error) {
	if !state.Valid() {
		return nil, continuo.Invalid("state", "must be a task state")
	}
	limit = pageSize(limit, MaxTaskPage)
	var out *TaskPage
	err := s.db.Read(ctx, func(tx store.Tx) error {
		sw, err := s.ownSwarm(ctx, tx, c, car, swarmID)
		if err != nil {
			return err
		}
		out, err = taskPage(ctx, tx, sw.ID, state, after, limit)
		return err
	})
	return out, err
}

// taskPage reads one page of a swarm's tasks in one state.
func taskPage(ctx context.Context, tx store.Tx, swarmID string, state continuo.TaskState, after string, limit int) (*TaskPage, error) {
	ts, err := tx.TaskList(ctx, store.TaskListParams{SwarmID: swarmID, States: []continuo.TaskState{state}, AfterID: after, Limit: limit + 1})
	if err != nil {
		return nil, err
	}
	out := &TaskPage{}
	out.Tasks, out.Next = cut(ts, limit, func(t continuo.Task) string { return t.ID })
	return out, nil
}

// TaskStatus is one task of a swarm the caller owns, with its latest
// attempt (nil before the first claim).
type TaskStatus struct {
	Task    continuo.Task
	Attempt *continuo.Attempt
}

// TaskStatus returns one task of a swarm the caller owns.
func (s *Service) TaskStatus(ctx context.Context, c *continuo.Caller, car Carrier, swarmID, taskID string) (*TaskStatus, error) {
	var out *TaskStatus
	err := s.db.Read(ctx, func(tx store.Tx) error {
		sw, err := s.ownSwarm(ctx, tx, c, car, swarmID)
		if err != nil {
			return err
		}
		t, err := taskOf(ctx, tx, sw.ID, taskID)
		if err != nil {
			return err
		}
		out = &TaskStatus{Task: *t}
		if t.Attempt > 0 {
			if out.Attempt, err = tx.AttemptOf(ctx, t.ID, t.Attempt); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// ownedTask runs fn on a task of a swarm the caller owns, in one Write.
func (s *Service) ownedTask(ctx context.Context, c *continuo.Caller, car Carrier, swarmID, taskID string,
	fn func(tx store.Tx, sw *continuo.Swarm, t *continuo.Task) error) error {
	return s.db.Write(ctx, func(tx store.Tx) error {
		sw, err := s.ownSwarm(ctx, tx, c, car, swarmID)
		if err != nil {
			return err
		}
		t, err := taskOf(ctx, tx, sw.ID, taskID)
		if err != nil {
			return err
		}
		return fn(tx, sw, t)
	})
}

// Collect takes a ready result: result_ready becomes collected; collecting
// again returns the same task (replayed).
func (s *Service) Collect(ctx context.Context, c *continuo.Caller, car Carrier, swarmID, taskID string) (*TaskResult, error) {
	var out *TaskResult
	err := s.ownedTask(ctx, c, car, swarmID, taskID, func(tx store.Tx, sw *continuo.Swarm, t *continuo.Task) error {
		switch t.State {
		case continuo.TaskCollected:
			out = &TaskResult{Task: *t, Replayed: true}
			return nil
		case continuo.TaskResultReady:
		default:
			return stateErr(t, "only a result_ready task can be collected")
		}
		prev := t.Revision
		t.Revision, t.UpdatedAt = prev+1, s.now()
		if err := tx.TaskMove(ctx, t, prev, continuo.TaskCollected); err != nil {
			return stale(err, "the task")
		}
		out = &TaskResult{Task: *t}
		return nil
	})
	return out, err
}

// CollectInput is what chat_swarm_collect takes without a task_id.
type CollectInput struct {
	SwarmID string
	Wait    time.Duration // 0..MaxNextWait: how long to wait for the first result
	Limit   int           // 1..MaxCollectBatch; 0: DefaultCollectBatch
	// Key, when given (1..128 bytes), makes the call a keyed mutation: the
	// same key and limit return the tasks the first call collected
	// (replayed), which is how an owner recovers a lost answer.
	Key string
}

// Collected is the results one collect took, oldest first.
type Collected struct {
	Tasks    []continuo.Task
	Replayed bool
}

// collectScope is what a collect's key is unique within: its swarm.
func collectScope(swarmID string) string { return "collect:" + swarmID }

// CollectReady takes up to in.Limit ready results of a swarm the caller
// owns, oldest first (result_ready becomes collected), in one Write;
// with none ready it waits up to in.Wait for the first, woken by the
// submit (or reconcile) that makes it ready.
func (s *Service) CollectReady(ctx context.Context, c *continuo.Caller, car Carrier, in CollectInput) (*Collected, error) {
	switch {
	case in.Wait < 0 || in.Wait > continuo.MaxNextWait:
		return nil, continuo.Invalid("wait_secs", "must be 0..%d", int(continuo.MaxNextWait/time.Second))
	case in.Limit < 0 || in.Limit > continuo.MaxCollectBatch:
		return nil, continuo.Invalid("limit", "must be 1..%d", continuo.MaxCollectBatch)
	case len(in.Key) > 128:
		return nil, continuo.Invalid("idempotency_key", "must be 1..128 bytes")
	}
	limit := in.Limit
	if limit == 0 {
		limit = continuo.DefaultCollectBatch
	}
	fp := digest("continuo collect v1", in.SwarmID, itoa(limit))
	var out *Collected
	try := func() (bool, bool, error) {
		err := s.db.Write(ctx, func(tx store.Tx) error {
			out = nil
			sw, err := s.ownSwarm(ctx, tx, c, car, in.SwarmID)
			if err != nil {
				return err
			}
			if out, err = replayCollect(ctx, tx, sw.ID, in.Key, fp); err != nil || out != nil {
				return err
			}
			ts, err := tx.TaskList(ctx, store.TaskListParams{SwarmID: sw.ID, States: []continuo.TaskState{continuo.TaskResultReady}, Limit: limit})
			if err != nil {
				return err
			}
			now := s.now()
			ids := make([]string, len(ts))
			for i := range ts {
				t := &ts[i]
				prev := t.Revision
				t.Revision, t.UpdatedAt = prev+1, now
				if err := tx.TaskMove(ctx, t, prev, continuo.TaskCollected); err != nil {
					return stale(err, "a task")
				}
				ids[i] = t.ID
			}
			out = &Collected{Tasks: ts}
			if in.Key == "" || len(ts) == 0 {
				// Nothing taken, nothing to replay: the key stays unused.
				return nil
			}
			return tx.IdempotencyCreate(ctx, store.Idempotency{Scope: collectScope(sw.ID), KeyHash: digest("continuo collect key v1", in.Key),
				RequestHash: fp, ResultID: strings.Join(ids, " "), CreatedAt: now})
		})
		if err != nil {
			return false, false, err
		}
		return len(out.Tasks) > 0 || out.Replayed, len(out.Tasks) == limit, nil
	}
	first := try
	try = func() (bool, bool, error) {
		done, pass, err := first()
		if errors.Is(err, store.ErrConflict) {
			// A concurrent collect with the same key recorded it first:
			// this one replays it.
			done, pass, err = first()
		}
		return done, pass, err
	}
	if done, _, err := try(); err != nil || done || in.Wait == 0 {
		return out, err
	}
	if _, err := s.waitFor(ctx, readyChannel(in.SwarmID), "", nil, in.Wait, nil, try); err != nil {
		return nil, err
	}
	return out, nil
}

// replayCollect returns the tasks a keyed collect took, when key was used
// before with the same request (fp); nil when it was not; conflict when
// it was used with another.
func replayCollect(ctx context.Context, tx store.Tx, swarmID, key, fp string) (*Collected, error) {
	if key == "" {
		return nil, nil
	}
	rec, err := tx.IdempotencyGet(ctx, collectScope(swarmID), digest("continuo collect key v1", key))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if rec.RequestHash != fp {
		return nil, continuo.Errorf(continuo.CodeConflict, "idempotency_key was used with another limit").With("field", "idempotency_key")
	}
	out := &Collected{Replayed: true}
	for _, id := range strings.Fields(rec.ResultID) {
		t, err := tx.TaskGet(ctx, id)
		if err != nil {
			return nil, err
		}
		out.Tasks = append(out.Tasks, *t)
	}
	return out, nil
}

func stateErr(t *continuo.Task, why string) error {
	return continuo.Errorf(continuo.CodeInvalidState, "task %s is %s: %s", t.ID, t.State, why).With("state", string(t.State))
}

// Cancel stops a task: a queued one is cancelled; one a worker holds
// becomes cancel_requested (its effect may exist: the worker submits what
// it did, or fails it). Cancelling again returns the same task.
func (s *Service) Cancel(ctx context.Context, c *continuo.Caller, car Carrier, swarmID, taskID string) (*TaskResult, error) {
	var out *TaskResult
	err := s.ownedTask(ctx, c, car, swarmID, taskID, func(tx store.Tx, sw *continuo.Swarm, t *continuo.Task) error {
		var to continuo.TaskState
		switch t.State {
		case continuo.TaskCancelled, continuo.TaskCancelRequested:
			out = &TaskResult{Task: *t, Replayed: true}
			return nil
		case continuo.TaskQueued:
			to = continuo.TaskCancelled
		case continuo.TaskClaimed, continuo.TaskRunning:
			to = continuo.TaskCancelRequested
		case continuo.TaskReconcileRequired:
			return stateErr(t, "its outcome is unknown: settle it with chat_swarm_reconcile")
		default:
			return continuo.Errorf(continuo.CodeTerminalImmutable, "task %s is %s already", t.ID, t.State).With("state", string(t.State))
		}
		now, prev := s.now(), t.Revision
		t.Revision, t.UpdatedAt = prev+1, now
		if to == continuo.TaskCancelled {
			t.Reason, t.EndedAt = continuo.ReasonCancelled, &now
		}
		if err := tx.TaskMove(ctx, t, prev, to); err != nil {
			return stale(err, "the task")
		}
		out = &TaskResult{Task: *t}
		if to == continuo.TaskCancelRequested {
			return tx.Notify(ctx, channel(sw.ID), wakePayload(t.WorkerID))
		}
		return nil
	})
	return out, err
}

// CloseSwarm closes a swarm whose tasks are all settled; closing again
// returns it as it is (replayed).
func (s *Service) CloseSwarm(ctx context.Context, c *continuo.Caller, car Carrier, swarmID string) (*Status, error) {
	var out *Status
	var tokens []string
	err := s.db.Write(ctx, func(tx store.Tx) error {
		tokens = nil
		sw, err := s.ownSwarm(ctx, tx, c, car, swarmID)
		if err != nil {
			return err
		}
		st, err := status(ctx, tx, sw)
		if err != nil {
			return err
		}
		replayed := sw.State != continuo.SwarmActive
		if !replayed {
			open := map[string]any{}
			for state, n := range st.Counts {
				if !state.Terminal() {
					open[string(state)] = n
				}
			}
			if len(open) > 0 {
				return continuo.Errorf(continuo.CodeInvalidState, "the swarm still has unsettled tasks: cancel, wait for or reconcile them first").
					With("open", open)
			}
			now, prev := s.now(), sw.Revision
			sw.State, sw.InviteHash, sw.InviteExpiresAt, sw.Revision, sw.UpdatedAt = continuo.SwarmClosed, "", time.Time{}, prev+1, now
			if err := tx.SwarmUpdate(ctx, sw, prev); err != nil {
				return stale(err, "the swarm")
			}
			// No carrier binds in a closed swarm: its open continuations
			// are revoked, and the tokens of carriers started for them
			// with them (after the commit).
			for i := range st.Continuations {
				cn := &st.Continuations[i]
				w, err := tx.WorkerGet(ctx, cn.WorkerID)
				if err != nil {
					return err
				}
				token, err := s.end(ctx, tx, cn, w, continuo.ContinuationRevoked)
				if err != nil {
					return err
				}
				if token != "" {
					tokens = append(tokens, token)
				}
			}
			st.Continuations = nil
			if err := tx.Notify(ctx, channel(sw.ID), wakeAll); err != nil {
				return err
			}
			st.Swarm = *sw
		}
		st.Replayed = replayed
		out = st
		return nil
	})
	if err == nil {
		for _, t := range tokens {
			s.revoke(ctx, t)
		}
	}
	return out, err
}
