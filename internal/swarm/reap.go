package swarm

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// The lease reaper. Every replica runs it; it needs no leader, because
// each expiry is one Write that re-reads the attempt and changes it only
// if it is still the active attempt it found (a guarded update): two
// reapers racing over one attempt have one winner, and the other finds
// nothing left to do.

// sweepBatch bounds one pass's work of each kind.
const sweepBatch = 100

func (s *Service) reapLoop() {
	defer s.wg.Done()
	for {
		t := time.NewTimer(jitter(2 * s.every))
		select {
		case <-s.bg.Done():
			t.Stop()
			return
		case <-s.plan:
			t.Stop()
			if err := s.planPass(s.bg); err != nil && s.bg.Err() == nil {
				s.log.Warn("swarm planner failed", "err", err)
			}
			continue
		case <-t.C:
		}
		if err := s.Sweep(s.bg); err != nil && s.bg.Err() == nil {
			s.log.Warn("swarm sweep failed", "err", err)
		}
		if err := s.planPass(s.bg); err != nil && s.bg.Err() == nil {
			s.log.Warn("swarm planner failed", "err", err)
		}
	}
}

// Sweep settles what lost its carrier: active attempts whose lease ran out
// (reconcile_required, or back to the queue when the swarm's policy says
// requeue_unacked and the worker never acked), active attempts of a
// server process that no longer runs on this host (reconcile_required:
// the server that delivered them restarted), and workers whose carrier
// stayed silent past their idle TTL (retired). Tests call it directly
// with an injected clock.
func (s *Service) Sweep(ctx context.Context) error {
	// A pass handles at most sweepBatch attempts of each kind; after a
	// crash with more in doubt, passes run until one finds fewer.
	if err := s.sweepOps(ctx); err != nil {
		return err
	}
	for _, pass := range []func(context.Context) (int, error){s.sweepPass, s.sweepIdle} {
		for range 1000 {
			n, err := pass(ctx)
			if err != nil {
				return err
			}
			if n < sweepBatch {
				break
			}
		}
	}
	return nil
}

// sweepPass is one pass of Sweep; it returns how many attempts it found
// of the kind it found most of.
func (s *Service) sweepPass(ctx context.Context) (int, error) {
	var expired, orphaned []continuo.Attempt
	var lapsed []continuo.Continuation
	now := s.now()
	err := s.db.Read(ctx, func(tx store.Tx) error {
		var err error
		if expired, err = tx.AttemptsActive(ctx, store.AttemptListParams{LeaseBefore: now, Limit: sweepBatch}); err != nil {
			return err
		}
		if lapsed, err = tx.ContinuationList(ctx, store.ContinuationListParams{States: lapsing, ExpiresBefore: now, Limit: sweepBatch}); err != nil {
			return err
		}
		servers, err := tx.AttemptServers(ctx)
		if err != nil {
			return err
		}
		for _, srv := range servers {
			if srv == s.self {
				continue
			}
			if alive, known := s.alive(srv); !known || alive {
				continue
			}
			as, err := tx.AttemptsActive(ctx, store.AttemptListParams{Server: srv, Limit: sweepBatch})
			if err != nil {
				return err
			}
			orphaned = append(orphaned, as...)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	var first error
	for _, a := range orphaned {
		first = errors.Join(first, s.lose(ctx, a, continuo.ReasonServerRestart))
	}
	for _, a := range expired {
		first = errors.Join(first, s.lose(ctx, a, continuo.ReasonLeaseExpired))
	}
	for _, c := range lapsed {
		first = errors.Join(first, s.lapse(ctx, c.ID))
	}
	return max(len(expired), len(orphaned), len(lapsed)), first
}

// openStates are the continuation states that may still bind.
var openStates = []continuo.ContinuationState{continuo.ContinuationPending, continuo.ContinuationApproved, continuo.ContinuationReconcileRequired}

// lapsing are the open states that expire with their time. A continuation
// in doubt (reconcile_required: a carrier start whose outcome is unknown,
// or one that failed) waits for the owner however long it takes: were it
// to expire, its worker would be compact_required again and the planner
// would start a second replacement without anyone having decided that the
// first did nothing. Its ticket binds nothing once its time ran out.
var lapsing = []continuo.ContinuationState{continuo.ContinuationPending, continuo.ContinuationApproved}

// lapses reports whether cn has run out of time and expires with it.
func (s *Service) lapses(cn *continuo.Continuation) bool {
	return slices.Contains(lapsing, cn.State) && !s.now().Before(cn.ExpiresAt)
}

// lapse expires an open continuation whose time ran out, if it still is
// one: its ticket or approval binds nothing any more, and its worker is
// steady again.
func (s *Service) lapse(ctx context.Context, id string) error {
	var token string
	err := s.db.Write(ctx, func(tx store.Tx) (err error) {
		token = ""
		cn, err := tx.ContinuationGet(ctx, id)
		if err != nil || !s.lapses(cn) {
			return err
		}
		w, err := tx.WorkerGet(ctx, cn.WorkerID)
		if err != nil {
			return err
		}
		token, err = s.expire(ctx, tx, cn, w)
		return err
	})
	if err == nil {
		s.revoke(ctx, token)
	}
	return err
}

// lose settles one attempt whose carrier was lost, if it is still the
// active attempt it was.
func (s *Service) lose(ctx context.Context, found continuo.Attempt, reason string) error {
	return s.db.Write(ctx, func(tx store.Tx) error {
		a, err := tx.AttemptGet(ctx, found.ID)
		if err != nil {
			return err
		}
		if !a.State.Active() || reason == continuo.ReasonLeaseExpired && !a.LeaseUntil.Before(s.now()) {
			return nil // settled, or renewed, meanwhile
		}
		t, err := tx.TaskGet(ctx, a.TaskID)
		if err != nil {
			return err
		}
		sw, err := tx.SwarmGet(ctx, a.SwarmID)
		if err != nil {
			return err
		}
		w, err := tx.WorkerGet(ctx, a.WorkerID)
		if err != nil {
			return err
		}
		return s.drop(ctx, tx, sw, w, t, a, reason, true)
	})
}

// orphaned reports whether an attempt was delivered by a server process
// of this host that no longer runs: whatever it held is in doubt.
func (s *Service) orphaned(a *continuo.Attempt) bool {
	if a.Server == s.self {
		return false
	}
	alive, known := s.alive(a.Server)
	return known && !alive
}

// drop ends an active attempt whose outcome is unknown, inside tx: its
// task becomes reconcile_required for reason (or, for a lapsed lease on a
// claim never acked in a swarm whose policy says requeue_unacked, queued
// again), and its worker idle. lost marks the worker's carrier lost (the
// reaper found it silent); a carrier calling right now stays active. t, a
// and w are updated in place.
func (s *Service) drop(ctx context.Context, tx store.Tx, sw *continuo.Swarm, w *continuo.Worker, t *continuo.Task,
	a *continuo.Attempt, reason string, lost bool) error {
	now := s.now()
	prevT, prevW := t.Revision, w.Revision
	requeue := reason == continuo.ReasonLeaseExpired && sw.Policy.RequeueUnacked && a.State == continuo.AttemptClaimed &&
		t.State == continuo.TaskClaimed
	if w.CurrentTaskID == t.ID {
		w.CurrentTaskID, w.Revision, w.UpdatedAt = "", prevW+1, now
		carrier := w.CarrierState
		if lost && carrier == continuo.CarrierActive {
			carrier = continuo.CarrierLost
		}
		if err := tx.WorkerMove(ctx, w, prevW, continuo.WorkerIdle, carrier); err != nil {
			return err
		}
	}
	a.EndedAt = &now
	t.Revision, t.UpdatedAt = prevT+1, now
	taskTo, attemptTo := continuo.TaskReconcileRequired, continuo.AttemptInDoubt
	if requeue {
		taskTo, attemptTo = continuo.TaskQueued, continuo.AttemptRequeued
		t.WorkerID, t.Reason = "", ""
	} else {
		t.Reason = reason
	}
	if err := tx.TaskMove(ctx, t, prevT, taskTo); err != nil {
		return err
	}
	if err := tx.AttemptMove(ctx, a, attemptTo); err != nil {
		return err
	}
	if requeue {
		return tx.Notify(ctx, channel(sw.ID), wakePayload(t.PreferredWorkerID))
	}
	return nil
}
