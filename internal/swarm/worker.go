package swarm

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/store"
)

// JoinInput is what chat_swarm_join takes with an invite.
type JoinInput struct {
	SwarmID string
	Invite  string
	Label   string
}

// Joined is the worker a join bound the calling carrier to.
type Joined struct {
	Worker   continuo.Worker
	Replayed bool
}

// Join binds the calling carrier to a new worker of a swarm at epoch 0.
// The same carrier joining again with the same invite and label gets the
// same worker back (replayed), whatever has happened to the invite since;
// a carrier bound before, to anything else, is a conflict. Only members of
// the swarm's group join: to anyone else the swarm is not_found, with its
// invite or without.
func (s *Service) Join(ctx context.Context, c *continuo.Caller, car Carrier, in JoinInput) (*Joined, error) {
	if err := c.Require(continuo.ScopeSwarmWork); err != nil {
		return nil, err
	}
	hash, err := car.need(c.PrincipalID)
	if err != nil {
		return nil, err
	}
	if in.Label == "" || len(in.Label) > continuo.MaxWorkerLabel {
		return nil, continuo.Invalid("label", "must be 1..%d bytes", continuo.MaxWorkerLabel)
	}
	label, _ := redact.String(in.Label)
	invHash := inviteHash(in.Invite)
	joinHash := digest("continuo join v1", in.SwarmID, invHash, in.Label)
	var out *Joined
	err = s.db.Write(ctx, func(tx store.Tx) error {
		// Another group's swarm is unknown, whatever the invite: an invite
		// admits members of the owner's group, it is not a grant.
		sw, err := groupSwarm(ctx, tx, c, in.SwarmID)
		if err != nil {
			return err
		}
		if prev, err := tx.CarrierGet(ctx, hash); err == nil {
			if prev.SwarmID == sw.ID && prev.State == continuo.CarrierActive {
				w, err := tx.WorkerGet(ctx, prev.WorkerID)
				if err != nil {
					return err
				}
				if w.JoinHash == joinHash {
					out = &Joined{Worker: *w, Replayed: true}
					return nil
				}
			}
			return continuo.Errorf(continuo.CodeConflict, "this conversation already carries (or carried) worker %s; a carrier binds once: join from a new conversation", prev.WorkerID).
				With("worker_id", prev.WorkerID)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		now := s.now()
		valid := sw.InviteHash != "" && subtle.ConstantTimeCompare([]byte(invHash), []byte(sw.InviteHash)) == 1
		if !valid {
			// Without the swarm's invite nobody learns that it exists.
			return continuo.NotFound("swarm", in.SwarmID)
		}
		switch {
		case sw.State != continuo.SwarmActive:
			return closedErr(sw)
		case !now.Before(sw.InviteExpiresAt):
			return continuo.Errorf(continuo.CodeTicketInvalid, "the invite expired at %s: ask the owner for a new one (chat_swarm_invite)",
				sw.InviteExpiresAt.Format(continuo.TimeFormat)).With("reason", "invite_expired")
		case hash == sw.OwnerCarrier:
			return continuo.Errorf(continuo.CodeForbidden, "this conversation owns the swarm: workers join from other conversations")
		}
		n, err := tx.WorkerCount(ctx, sw.ID)
		if err != nil {
			return err
		}
		if n >= sw.WorkerLimit {
			return continuo.Errorf(continuo.CodeCapacityFull, "the swarm has its limit of %d workers", sw.WorkerLimit).With("limit", sw.WorkerLimit)
		}
		// The swarm's row guards its worker count: two joins racing for the
		// last slot collide on it, and one of them is run again.
		prev := sw.Revision
		sw.Revision, sw.UpdatedAt = prev+1, now
		if err := tx.SwarmUpdate(ctx, sw, prev); err != nil {
			return stale(err, "the swarm")
		}
		w := continuo.Worker{ID: continuo.NewID(continuo.PrefixWorker, now), SwarmID: sw.ID, PrincipalID: c.PrincipalID, Label: label,
			CarrierHash: hash, CarrierSource: car.Source, CarrierState: continuo.CarrierActive, State: continuo.WorkerIdle,
			ContinuityState: continuo.ContinuitySteady, JoinHash: joinHash, LastSeenAt: now, Revision: 1, CreatedAt: now, UpdatedAt: now,
			IdleTTL: sw.Policy.WorkerIdleTTL()}
		if err := tx.WorkerCreate(ctx, &w); err != nil {
			return err
		}
		if err := tx.CarrierBind(ctx, continuo.Carrier{Hash: hash, WorkerID: w.ID, SwarmID: sw.ID, Source: car.Source,
			State: continuo.CarrierActive, BoundAt: now}); err != nil {
			return stale(err, "the carrier")
		}
		out = &Joined{Worker: w}
		return nil
	})
	return out, err
}

// Delivery is what next hands a worker.
type Delivery struct {
	State      NextState
	Task       *continuo.Task
	Attempt    *continuo.Attempt
	Redelivery bool
}

// NextState is chat_swarm_next's state.
type NextState string

// The states next returns (CONTRACT.md §7); compact_required and continued
// come with worker continuity (§8).
const (
	NextTask            NextState = "task"
	NextIdle            NextState = "idle"
	NextCompactRequired NextState = "compact_required" // stop taking work: the worker's carrier is to be replaced
	NextContinued       NextState = "continued"        // this carrier was replaced: stop
	NextClosed          NextState = "closed"
)

// NextStates lists every state next returns, in order.
func NextStates() []NextState {
	return []NextState{NextTask, NextIdle, NextCompactRequired, NextContinued, NextClosed}
}

// Progress is told, while next waits, how long it has waited of how long.
type Progress func(waited, of time.Duration)

// NextOptions says how next waits, and whether it acks what it delivers.
type NextOptions struct {
	Wait time.Duration // 0..MaxNextWait
	// Ack claims and marks the task running in one call: the carrier
	// starts at once (its effect may exist from then on).
	Ack      bool
	Progress Progress
	// claimFirst tries the claim before the read-only look: right after
	// the worker's submit (SubmitNext) there is most likely work queued,
	// and the look would only cost a transaction more.
	claimFirst bool
}

// Next returns the worker's current task again (redelivery), or claims the
// next one for it, or waits up to wait for one to be dispatched.
func (s *Service) Next(ctx context.Context, c *continuo.Caller, car Carrier, ref WorkerRef, wait time.Duration, progress Progress) (*Delivery, error) {
	return s.Deliver(ctx, c, car, ref, NextOptions{Wait: wait, Progress: progress})
}

// Deliver is chat_swarm_next: the worker's current task again
// (redelivery), or the next one claimed for it, or, up to o.Wait, the
// first one dispatched for it; with o.Ack what it delivers is running.
func (s *Service) Deliver(ctx context.Context, c *continuo.Caller, car Carrier, ref WorkerRef, o NextOptions) (*Delivery, error) {
	wait := o.Wait
	if wait < 0 || wait > continuo.MaxNextWait {
		return nil, continuo.Invalid("wait_secs", "must be 0..%d", int(continuo.MaxNextWait/time.Second))
	}
	if o.claimFirst {
		// Anything but a task goes the usual way: an idle claim waits,
		// and a refusal is explained by the look (a worker continued
		// meanwhile is told so, not refused).
		if d, err := s.claim(ctx, c, car, ref, o.Ack); err == nil && d.State == NextTask {
			return d, nil
		}
	}
	continued := false
	var seen time.Time // when the worker was last seen, at the first look
	look := func() (swarmID string, mine bool, err error) {
		// Read-only: most looks of an idle worker find nothing.
		err = s.db.Read(ctx, func(tx store.Tx) error {
			b, err := s.carrierOf(ctx, tx, c, car, ref)
			if err != nil {
				if !isRetired(err) && s.replaced(ctx, tx, c, car, ref) {
					continued, swarmID = true, ""
					return nil
				}
				return err
			}
			swarmID = b.sw.ID
			if seen.IsZero() {
				seen = b.w.LastSeenAt
			}
			mine = b.w.CurrentTaskID != "" || b.sw.State != continuo.SwarmActive || b.w.ContinuityState != continuo.ContinuitySteady
			if !mine {
				mine, err = tx.TaskQueued(ctx, b.sw.ID, b.w.ID)
			}
			return err
		})
		return swarmID, mine || continued, err
	}
	var out *Delivery
	try := func() (bool, bool, error) {
		if _, mine, err := look(); err != nil || !mine {
			return false, false, err
		}
		if continued {
			out = &Delivery{State: NextContinued}
			return true, false, nil
		}
		d, err := s.claim(ctx, c, car, ref, o.Ack)
		if err != nil || d.State == NextIdle {
			return false, false, err
		}
		out = d
		return true, d.State == NextTask && !d.Redelivery, nil
	}
	// A worker never changes swarm: once known, its swarm's room is
	// entered before the first look, so that a dispatch committed after
	// that look wakes it, and an idle call costs one look, not two.
	var room *waiter
	if id, ok := s.swarmOf.Load(ref.WorkerID); ok && wait > 0 {
		w, err := s.rooms.enter(channel(id.(string)), ref.WorkerID)
		if err != nil {
			return nil, err
		}
		defer s.rooms.leave(channel(id.(string)), w)
		room = w
	}
	swarmID, mine, err := look()
	if err != nil {
		return nil, err
	}
	if continued {
		return &Delivery{State: NextContinued}, nil
	}
	s.swarmOf.Store(ref.WorkerID, swarmID)
	if mine {
		if d, err := s.claim(ctx, c, car, ref, o.Ack); err != nil || d.State != NextIdle || wait == 0 {
			return d, err
		}
	} else if s.now().Sub(seen) >= touchEvery {
		// An idle worker's looks are reads: it is marked seen now and
		// then, so that the reaper never takes a worker that calls for a
		// silent one.
		if err := s.touch(ctx, c, car, ref); err != nil {
			return nil, err
		}
	}
	if wait == 0 {
		return &Delivery{State: NextIdle}, nil
	}
	done, err := s.waitFor(ctx, channel(swarmID), ref.WorkerID, room, wait, o.Progress, try)
	if err != nil || !done {
		return &Delivery{State: NextIdle}, err
	}
	return out, nil
}

// touchEvery is how often an idle worker's next marks it seen: well
// within MinWorkerIdleTTL, with next's longest wait added.
const touchEvery = time.Minute

// touch marks the calling carrier's worker seen now.
func (s *Service) touch(ctx context.Context, c *continuo.Caller, car Carrier, ref WorkerRef) error {
	return s.db.Write(ctx, func(tx store.Tx) error {
		b, err := s.carrierOf(ctx, tx, c, car, ref)
		if err != nil {
			return err
		}
		return tx.WorkerTouch(ctx, b.w.ID, s.now())
	})
}

// claim redelivers the worker's current task (renewing its lease) or
// claims the next queued one, in one Write; with ack, what it delivers is
// running. The Write runs at READ COMMITTED on PostgreSQL
// (store.ReadCommitted): it locks the worker's row first and only then
// reads it, and every other decision is a guarded statement, so
// concurrent claimers take different tasks instead of failing on each
// other's snapshots.
func (s *Service) claim(ctx context.Context, c *continuo.Caller, car Carrier, ref WorkerRef, ack bool) (*Delivery, error) {
	var out *Delivery
	err := s.db.Write(store.ReadCommitted(ctx), func(tx store.Tx) error {
		var err error
		out, err = s.claimIn(ctx, tx, c, car, ref, ack, nil)
		return err
	})
	return out, err
}

// claimIn is claim's transaction. b, when not nil, is the worker as this
// transaction already wrote it (its row locked, the carrier checked): a
// submit with next claims after its submit without reading it again.
func (s *Service) claimIn(ctx context.Context, tx store.Tx, c *continuo.Caller, car Carrier, ref WorkerRef, ack bool, b *bound) (out *Delivery, err error) {
	now := s.now()
	if b == nil {
		// The worker's row first: two claims for one worker serialize on
		// it, and the second reads what the first did. An unknown worker
		// touches nothing, and carrierOf says why in its own order; any
		// refusal rolls the touch back.
		if err := tx.WorkerTouch(ctx, ref.WorkerID, now); err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		if b, err = s.carrierOf(ctx, tx, c, car, ref); err != nil {
			return nil, err
		}
	}
	err = func() error {
		if b.w.CurrentTaskID != "" {
			t, err := tx.TaskGet(ctx, b.w.CurrentTaskID)
			if err != nil {
				return err
			}
			a, err := tx.AttemptOf(ctx, t.ID, t.Attempt)
			if err != nil {
				return err
			}
			if holds(b.w, t, a) && s.orphaned(a) {
				// Delivered by a server that died: in doubt, whoever asks.
				// The worker is free for the next task.
				if err := s.drop(ctx, tx, b.sw, b.w, t, a, continuo.ReasonServerRestart, false); err != nil {
					return err
				}
			} else if a.State.Active() && a.WorkerID == b.w.ID {
				to := a.State
				a.LeaseUntil = now.Add(b.sw.Policy.LeaseTTL())
				if ack {
					if err := start(ctx, tx, t, a, now); err != nil {
						return err
					}
					to = continuo.AttemptRunning
				}
				if err := tx.AttemptMove(ctx, a, to); err != nil {
					return stale(err, "the attempt")
				}
				out = &Delivery{State: NextTask, Task: t, Attempt: a, Redelivery: true}
				return nil
			}
		}
		if b.sw.State != continuo.SwarmActive {
			out = &Delivery{State: NextClosed}
			return nil
		}
		if b.w.CurrentTaskID != "" {
			return continuo.Errorf(continuo.CodeInternal, "worker %s names task %s, which it does not hold", b.w.ID, b.w.CurrentTaskID)
		}
		if b.w.ContinuityState != continuo.ContinuitySteady {
			// Its carrier is to be replaced (or cannot be: blocked): no new
			// work until it is.
			out = &Delivery{State: NextCompactRequired}
			return nil
		}
		prevW := b.w.Revision
		if b.idleFrom != 0 {
			// The settle before is unwritten: the row is still busy at
			// idleFrom, and this write is the worker's one of the call.
			prevW = b.idleFrom
		}
		t, err := tx.TaskClaim(ctx, b.sw.ID, b.w.ID, now, ack)
		if errors.Is(err, store.ErrNotFound) {
			out = &Delivery{State: NextIdle}
			return nil
		}
		if err != nil {
			return stale(err, "the worker")
		}
		b.w.CurrentTaskID = t.ID
		b.w.LastSeenAt, b.w.Revision, b.w.UpdatedAt = now, prevW+1, now
		if err := count(ctx, tx, b.w, continuo.LedgerTaskPrompt, t.ID, t.Prompt+t.Payload, now); err != nil {
			return err
		}
		if err := tx.WorkerMove(ctx, b.w, prevW, continuo.WorkerBusy, continuo.CarrierActive); err != nil {
			return stale(err, "the worker")
		}
		b.idleFrom = 0
		state, acked := continuo.AttemptClaimed, (*time.Time)(nil)
		if ack { // claimed and started in one: TaskClaim made the task running
			state, acked = continuo.AttemptRunning, &now
		}
		a := continuo.Attempt{ID: continuo.NewID(continuo.PrefixAttempt, now), TaskID: t.ID, SwarmID: b.sw.ID, Number: t.Attempt,
			WorkerID: b.w.ID, Epoch: b.w.Epoch, Server: s.self, State: state,
			LeaseUntil: now.Add(b.sw.Policy.LeaseTTL()), ClaimedAt: now, AckedAt: acked}
		if err := tx.AttemptCreate(ctx, &a); err != nil {
			return stale(err, "the task")
		}
		out = &Delivery{State: NextTask, Task: t, Attempt: &a}
		return s.checkPressure(ctx, tx, b, now)
	}()
	return out, err
}

// start records that the worker acked an attempt (the caller moves the
// attempt to running), and moves its task running if it was claimed (a
// cancel_requested task stays so).
func start(ctx context.Context, tx store.Tx, t *continuo.Task, a *continuo.Attempt, now time.Time) error {
	if a.State == continuo.AttemptRunning {
		return nil
	}
	a.AckedAt = &now
	if t.State != continuo.TaskClaimed {
		return nil
	}
	prev := t.Revision
	t.Revision, t.UpdatedAt = prev+1, now
	return stale(tx.TaskMove(ctx, t, prev, continuo.TaskRunning), "the task")
}

// held runs fn on the task the calling carrier's worker holds, in one
// Write. A task the worker does not hold is explained: another worker's,
// settled, or in doubt and awaiting the owner.
func (s *Service) held(ctx context.Context, c *continuo.Caller, car Carrier, ref WorkerRef, taskID string,
	fn func(tx store.Tx, b *bound, t *continuo.Task, a *continuo.Attempt) error) error {
	var doubted *continuo.Task
	err := s.db.Write(ctx, func(tx store.Tx) error {
		var err error
		doubted, err = s.heldIn(ctx, tx, c, car, ref, taskID, fn)
		return err
	})
	if err == nil && doubted != nil {
		return notHeld(&continuo.Worker{ID: doubted.WorkerID}, doubted)
	}
	return err
}

// heldIn is held's transaction; doubted is the task it found in doubt
// (its drop written, fn not run), to be refused once that committed.
func (s *Service) heldIn(ctx context.Context, tx store.Tx, c *continuo.Caller, car Carrier, ref WorkerRef, taskID string,
	fn func(tx store.Tx, b *bound, t *continuo.Task, a *continuo.Attempt) error) (doubted *continuo.Task, err error) {
	b, err := s.carrierOf(ctx, tx, c, car, ref)
	if err != nil {
		return nil, err
	}
	t, err := taskOf(ctx, tx, b.sw.ID, taskID)
	if err != nil {
		return nil, err
	}
	var a *continuo.Attempt
	if t.Attempt > 0 {
		if a, err = tx.AttemptOf(ctx, t.ID, t.Attempt); err != nil {
			return nil, err
		}
	}
	if holds(b.w, t, a) && s.orphaned(a) {
		// The server that delivered it died: the task is in doubt
		// whatever this call would have done, and that is committed
		// before the caller is told.
		return t, s.drop(ctx, tx, b.sw, b.w, t, a, continuo.ReasonServerRestart, false)
	}
	return nil, fn(tx, b, t, a)
}

// notHeld explains why a worker's call on a task it does not hold is
// refused.
func notHeld(w *continuo.Worker, t *continuo.Task) error {
	switch {
	case t.State == continuo.TaskReconcileRequired && t.WorkerID == w.ID:
		return continuo.Errorf(continuo.CodeReconcileRequired, "task %s is in doubt (%s): the owner decides what became of it; report what you did to the owner", t.ID, t.Reason).
			With("state", string(t.State)).With("reason", t.Reason)
	case t.State.Terminal():
		return continuo.Errorf(continuo.CodeTerminalImmutable, "task %s is %s already", t.ID, t.State).With("state", string(t.State))
	}
	return continuo.Errorf(continuo.CodeConflict, "task %s is not this worker's to work on (it is %s)", t.ID, t.State).With("state", string(t.State))
}

// holds reports whether worker w holds t through attempt a.
func holds(w *continuo.Worker, t *continuo.Task, a *continuo.Attempt) bool {
	return a != nil && t.State.Active() && t.WorkerID == w.ID && w.CurrentTaskID == t.ID && a.State.Active()
}

// Ack records that the worker started executing its task: its effect may
// now exist. Acking again changes nothing.
func (s *Service) Ack(ctx context.Context, c *continuo.Caller, car Carrier, ref WorkerRef, taskID string) (*TaskResult, error) {
	var out *TaskResult
	err := s.held(ctx, c, car, ref, taskID, func(tx store.Tx, b *bound, t *continuo.Task, a *continuo.Attempt) error {
		if !holds(b.w, t, a) {
			return notHeld(b.w, t)
		}
		now := s.now()
		a.LeaseUntil = now.Add(b.sw.Policy.LeaseTTL())
		if a.State == continuo.AttemptRunning {
			out = &TaskResult{Task: *t, Replayed: true}
			return tx.AttemptUpdate(ctx, a)
		}
		if err := start(ctx, tx, t, a, now); err != nil {
			return err
		}
		if err := tx.AttemptMove(ctx, a, continuo.AttemptRunning); err != nil {
			return stale(err, "the attempt")
		}
		out = &TaskResult{Task: *t}
		return tx.WorkerTouch(ctx, b.w.ID, now)
	})
	return out, err
}

// Checkpoint stores the worker's verified checkpoint (the continuation's
// starting point) and renews the lease of the task it holds. A checkpoint
// that carries a credential is refused, naming where.
func (s *Service) Checkpoint(ctx context.Context, c *continuo.Caller, car Carrier, ref WorkerRef, checkpoint json.RawMessage) (*continuo.Worker, error) {
	text, err := compactJSON("checkpoint", checkpoint, continuo.MaxCheckpoint)
	if err != nil {
		return nil, err
	}
	if text == "" || text[0] != '{' {
		return nil, continuo.Invalid("checkpoint", "must be a JSON object (summary, state, blockers, next step, artifact refs)")
	}
	if path := secretAt(text); path != "" {
		return nil, continuo.Invalid("checkpoint", "%s looks like a credential: a checkpoint never carries one", path).With("path", path)
	}
	var out *continuo.Worker
	err = s.db.Write(ctx, func(tx store.Tx) error {
		b, err := s.carrierOf(ctx, tx, c, car, ref)
		if err != nil {
			return err
		}
		now, w := s.now(), b.w
		if w.CurrentTaskID != "" {
			t, err := tx.TaskGet(ctx, w.CurrentTaskID)
			if err != nil {
				return err
			}
			if a, err := tx.AttemptOf(ctx, t.ID, t.Attempt); err == nil && holds(w, t, a) && s.orphaned(a) {
				if err := s.drop(ctx, tx, b.sw, w, t, a, continuo.ReasonServerRestart, false); err != nil {
					return err
				}
			} else if err == nil && holds(w, t, a) {
				a.LeaseUntil = now.Add(b.sw.Policy.LeaseTTL())
				if err := tx.AttemptUpdate(ctx, a); err != nil {
					return stale(err, "the attempt")
				}
			} else if err != nil {
				return err
			}
		}
		prev := w.Revision
		w.Checkpoint, w.CheckpointHash, w.CheckpointAt = text, digest("continuo checkpoint v1", text), &now
		w.LastSeenAt, w.Revision, w.UpdatedAt = now, prev+1, now
		if w.ContinuityState == continuo.ContinuityCompactBlocked {
			// A new checkpoint may make a capsule that fits, and starts
			// the planner's tries afresh: it looks again.
			w.ContinuityState, w.BlockedReason = continuo.ContinuityCompactRequired, ""
		}
		if err := tx.WorkerMove(ctx, w, prev, w.State, continuo.CarrierActive); err != nil {
			return stale(err, "the worker")
		}
		out = w
		return nil
	})
	if err == nil && out.ContinuityState == continuo.ContinuityCompactRequired {
		s.kickPlanner()
	}
	return out, err
}

// secretAt returns where in a JSON object a credential-looking string (or
// key) sits, as a path ("summary", "artifacts[2]"), or "".
func secretAt(text string) string {
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return ""
	}
	return findSecret(v, "")
}

func findSecret(v any, path string) string {
	switch x := v.(type) {
	case string:
		if _, changed := redact.String(x); changed {
			return path
		}
	case []any:
		for i, e := range x {
			if p := findSecret(e, path+"["+itoa(i)+"]"); p != "" {
				return p
			}
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if _, changed := redact.Value(map[string]any{k: x[k]}); changed {
				if q := findSecret(x[k], p); q != "" {
					return q
				}
				return p
			}
		}
	}
	return ""
}

// Submit settles the worker's task with its result. It never waits. The
// same result again returns the task (replayed); another result for a
// settled task is terminal_immutable.
func (s *Service) Submit(ctx context.Context, c *continuo.Caller, car Carrier, ref WorkerRef, taskID, result string) (*TaskResult, error) {
	fn, out, err := s.submitter(ctx, result)
	if err != nil {
		return nil, err
	}
	err = s.held(ctx, c, car, ref, taskID, fn)
	if err == nil {
		s.kickPlanner() // a settled task may be the safe boundary a compacting worker waited for
	}
	return *out, err
}

// submitter checks a submit's result and returns the transaction that
// submits it (to run as held's fn) and where it puts its answer.
func (s *Service) submitter(ctx context.Context, result string) (func(tx store.Tx, b *bound, t *continuo.Task, a *continuo.Attempt) error, **TaskResult, error) {
	if result == "" || len(result) > continuo.MaxTaskResult {
		return nil, nil, continuo.Invalid("result", "must be 1..%d bytes", continuo.MaxTaskResult)
	}
	hash := digest("continuo result v1", result)
	stored, _ := redact.String(result)
	out := new(*TaskResult)
	return func(tx store.Tx, b *bound, t *continuo.Task, a *continuo.Attempt) error {
		*out = nil
		if t.State == continuo.TaskResultReady || t.State == continuo.TaskCollected {
			if t.ResultHash == hash && t.WorkerID == b.w.ID {
				*out = &TaskResult{Task: *t, Replayed: true}
				return nil
			}
			return continuo.Errorf(continuo.CodeTerminalImmutable, "task %s has another result already", t.ID).With("state", string(t.State))
		}
		if !holds(b.w, t, a) {
			return notHeld(b.w, t)
		}
		now := s.now()
		if err := count(ctx, tx, b.w, continuo.LedgerTaskResult, t.ID, result, now); err != nil {
			return err
		}
		if err := s.settle(ctx, tx, b, t, a, func(now time.Time) (continuo.TaskState, continuo.AttemptState) {
			t.Result, t.ResultHash, t.Reason, t.EndedAt = stored, hash, "", &now
			return continuo.TaskResultReady, continuo.AttemptSubmitted
		}, out); err != nil {
			return err
		}
		// An owner waiting to collect hears of it.
		if err := tx.Notify(ctx, readyChannel(b.sw.ID), wakePayload("")); err != nil {
			return err
		}
		return s.checkPressure(ctx, tx, b, now)
	}, out, nil
}

// Submitted is a submit, and what next answered after it.
type Submitted struct {
	TaskResult
	// Next is next's answer after the submit committed; nil when its half
	// failed, NextErr saying why (the submit stands).
	Next    *Delivery
	NextErr error
}

// SubmitNext submits the worker's result and, once that committed,
// answers as Deliver does with next: one call per task in the steady
// state. A failure of the next half never undoes the submit; it is
// returned in NextErr. An identical replay (a lost answer) returns the
// same next task: the submit replays, and next redelivers the task the
// worker holds since the first call.
func (s *Service) SubmitNext(ctx context.Context, c *continuo.Caller, car Carrier, ref WorkerRef, taskID, result string, next NextOptions) (*Submitted, error) {
	return s.submitNext(ctx, c, car, ref, taskID, result, next, nil)
}

// submitNext is SubmitNext; between, if not nil, runs in the next half
// after its claim wrote, and an error from it fails that half (a test's
// way to make the next half fail).
//
// The submit and the claim of the next task are one transaction (one
// commit, one turn of SQLite's writer, the worker read once): the claim
// runs in a savepoint (store.Tx.Part) after the submit, so a claim that
// fails is rolled back alone and the submit commits. The transaction runs
// at READ COMMITTED on PostgreSQL, as a claim does: every write of the
// submit is guarded by the revision or state it read, and when one of
// them finds its row changed (a conflict) the call is made again as two
// transactions, the submit under a snapshot, then next. When the claim
// finds nothing, next goes its usual way (a look, then a wait) after the
// commit. The worker's row is written once, by the claim (busy with the
// next task) or after it (idle): so on PostgreSQL it is locked after the
// tasks, not before them; a concurrent call of the same worker that locks
// it first and then its task may deadlock with this one, and PostgreSQL's
// deadlock error makes the store run one of them again (store.Write).
// With a guarded write per row, a lost race is a retry, never a
// double claim.
func (s *Service) submitNext(ctx context.Context, c *continuo.Caller, car Carrier, ref WorkerRef, taskID, result string, next NextOptions,
	between func() error) (*Submitted, error) {
	if next.Wait < 0 || next.Wait > continuo.MaxNextWait {
		return nil, continuo.Invalid("next.wait_secs", "must be 0..%d", int(continuo.MaxNextWait/time.Second))
	}
	fn, r, err := s.submitter(ctx, result)
	if err != nil {
		return nil, err
	}
	var doubted *continuo.Task
	var d *Delivery
	var nextErr error
	err = s.db.Write(store.ReadCommitted(ctx), func(tx store.Tx) error {
		d, nextErr = nil, nil
		var b *bound
		var err error
		doubted, err = s.heldIn(ctx, tx, c, car, ref, taskID, func(tx store.Tx, bb *bound, t *continuo.Task, a *continuo.Attempt) error {
			b = bb
			bb.idleLater = true
			return fn(tx, bb, t, a)
		})
		if err != nil || doubted != nil {
			return err
		}
		if (*r).Replayed {
			// A replay wrote nothing: the worker's row is neither locked
			// nor known fresh, so the claim locks and reads it itself.
			b = nil
		}
		var idle continuo.Worker // the worker as settled, for writeIdle
		var idleFrom int64
		if b != nil {
			idle, idleFrom = *b.w, b.idleFrom
		}
		nextErr, err = tx.Part(ctx, func() error {
			var err error
			if d, err = s.claimIn(ctx, tx, c, car, ref, next.Ack, b); err == nil && between != nil {
				err = between()
			}
			return err
		})
		if err != nil || idleFrom == 0 || (nextErr == nil && d.State == NextTask) {
			return err // a task claimed wrote the worker busy with it
		}
		// No task, or the claim rolled back: the worker ends idle, as
		// settled (the claim may have changed b before rolling back).
		*b.w, b.idleFrom = idle, idleFrom
		return b.writeIdle(ctx, tx)
	})
	switch {
	case continuo.ErrorCode(err) == continuo.CodeConflict:
		return s.submitThenNext(ctx, c, car, ref, taskID, result, next)
	case err != nil:
		return nil, err
	case doubted != nil:
		return nil, notHeld(&continuo.Worker{ID: doubted.WorkerID}, doubted)
	}
	s.kickPlanner() // a settled task may be the safe boundary a compacting worker waited for
	out := &Submitted{TaskResult: **r}
	switch {
	case nextErr != nil:
		out.NextErr = nextErr
	case d.State == NextTask:
		out.Next = d
	default:
		// Anything but a task goes the usual way: an idle claim waits,
		// and a refusal is explained by the look.
		if out.Next, out.NextErr = s.Deliver(ctx, c, car, ref, next); out.NextErr != nil {
			out.Next = nil
		}
	}
	return out, nil
}

// submitThenNext is SubmitNext as two transactions: the submit, then next
// claiming first.
func (s *Service) submitThenNext(ctx context.Context, c *continuo.Caller, car Carrier, ref WorkerRef, taskID, result string, next NextOptions) (*Submitted, error) {
	r, err := s.Submit(ctx, c, car, ref, taskID, result)
	if err != nil {
		return nil, err
	}
	out := &Submitted{TaskResult: *r}
	next.claimFirst = true
	out.Next, out.NextErr = s.Deliver(ctx, c, car, ref, next)
	if out.NextErr != nil {
		out.Next = nil
	}
	return out, nil
}

// Effect is what a failing worker knows of its task's effect.
type Effect string

// The effects chat_swarm_fail takes.
const (
	EffectNone  Effect = "none"    // nothing happened: the task fails
	EffectMaybe Effect = "unknown" // something may have happened: the owner decides
)

// Fail gives up the worker's task: with effect none it is failed (or
// cancelled, when the owner asked for that), with effect unknown it awaits
// the owner's decision.
func (s *Service) Fail(ctx context.Context, c *continuo.Caller, car Carrier, ref WorkerRef, taskID, reason string, effect Effect) (*TaskResult, error) {
	switch {
	case reason == "" || len(reason) > continuo.MaxFailReason:
		return nil, continuo.Invalid("reason", "must be 1..%d bytes", continuo.MaxFailReason)
	case effect != EffectNone && effect != EffectMaybe:
		return nil, continuo.Invalid("effect", "must be none or unknown")
	}
	detail, _ := redact.String(reason)
	var out *TaskResult
	err := s.held(ctx, c, car, ref, taskID, func(tx store.Tx, b *bound, t *continuo.Task, a *continuo.Attempt) error {
		if !holds(b.w, t, a) {
			if a != nil && a.WorkerID == b.w.ID && t.Detail == detail && failedAs(t, a, effect) {
				out = &TaskResult{Task: *t, Replayed: true}
				return nil
			}
			return notHeld(b.w, t)
		}
		return s.settle(ctx, tx, b, t, a, func(now time.Time) (continuo.TaskState, continuo.AttemptState) {
			t.Detail = detail
			switch {
			case effect == EffectMaybe:
				t.Reason = continuo.ReasonEffectUnknown
				return continuo.TaskReconcileRequired, continuo.AttemptInDoubt
			case t.State == continuo.TaskCancelRequested:
				t.Reason, t.EndedAt = continuo.ReasonCancelled, &now
				return continuo.TaskCancelled, continuo.AttemptCancelled
			default:
				t.Reason, t.EndedAt = continuo.ReasonWorkerFailed, &now
				return continuo.TaskFailed, continuo.AttemptFailed
			}
		}, &out)
	})
	if err == nil {
		s.kickPlanner()
	}
	return out, err
}

// failedAs reports whether a task was already failed by its attempt as a
// fail with effect would have.
func failedAs(t *continuo.Task, a *continuo.Attempt, effect Effect) bool {
	if effect == EffectMaybe {
		return t.State == continuo.TaskReconcileRequired && t.Reason == continuo.ReasonEffectUnknown && a.State == continuo.AttemptInDoubt
	}
	return (t.State == continuo.TaskFailed && a.State == continuo.AttemptFailed) || (t.State == continuo.TaskCancelled && a.State == continuo.AttemptCancelled)
}

// settle ends the worker's hold on its task: change sets the task's
// fields and returns the task's and the attempt's new states; the worker
// becomes idle.
func (s *Service) settle(ctx context.Context, tx store.Tx, b *bound, t *continuo.Task, a *continuo.Attempt,
	change func(now time.Time) (continuo.TaskState, continuo.AttemptState), out **TaskResult) error {
	now := s.now()
	prevT, prevW := t.Revision, b.w.Revision
	taskTo, attemptTo := change(now)
	t.Revision, t.UpdatedAt, a.EndedAt = prevT+1, now, &now
	b.w.CurrentTaskID = ""
	b.w.LastSeenAt, b.w.Revision, b.w.UpdatedAt = now, prevW+1, now
	b.idleFrom = prevW
	if !b.idleLater {
		if err := b.writeIdle(ctx, tx); err != nil {
			return err
		}
	}
	var err error
	if taskTo == continuo.TaskResultReady {
		err = tx.TaskSubmit(ctx, t, prevT) // guarded by the states that may become result_ready
	} else {
		err = tx.TaskMove(ctx, t, prevT, taskTo)
	}
	if err != nil {
		return stale(err, "the task")
	}
	if err := tx.AttemptMove(ctx, a, attemptTo); err != nil {
		return stale(err, "the attempt")
	}
	*out = &TaskResult{Task: *t}
	return nil
}
