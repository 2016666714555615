package swarm

import (
	"context"
	"errors"
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
		case <-t.C:
		}
		if err := s.Sweep(s.bg); err != nil && s.bg.Err() == nil {
			s.log.Warn("swarm sweep failed", "err", err)
		}
	}
}

// Sweep settles what lost its carrier: active attempts whose lease ran out
// (reconcile_required, or back to the queue when the swarm's policy says
// requeue_unacked and the worker never acked), and active attempts of a
// server process that no longer runs on this host (reconcile_required:
// the server that delivered them restarted). Tests call it directly with
// an injected clock.
func (s *Service) Sweep(ctx context.Context) error {
	var expired, orphaned []continuo.Attempt
	now := s.now()
	err := s.db.Read(ctx, func(tx store.Tx) error {
		var err error
		if expired, err = tx.AttemptsActive(ctx, store.AttemptListParams{LeaseBefore: now, Limit: sweepBatch}); err != nil {
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
		return err
	}
	var first error
	for _, a := range orphaned {
		first = errors.Join(first, s.lose(ctx, a, continuo.ReasonServerRestart))
	}
	for _, a := range expired {
		first = errors.Join(first, s.lose(ctx, a, continuo.ReasonLeaseExpired))
	}
	return first
}

// lose settles one attempt whose carrier was lost, if it is still the
// active attempt it was.
func (s *Service) lose(ctx context.Context, found continuo.Attempt, reason string) error {
	return s.db.Write(ctx, func(tx store.Tx) error {
		a, err := tx.AttemptGet(ctx, found.ID)
		if err != nil {
			return err
		}
		now := s.now()
		if !a.State.Active() || reason == continuo.ReasonLeaseExpired && !a.LeaseUntil.Before(now) {
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
		prevA, prevT, prevW := a.State, t.Revision, w.Revision
		requeue := reason == continuo.ReasonLeaseExpired && sw.Policy.RequeueUnacked && a.State == continuo.AttemptClaimed &&
			t.State == continuo.TaskClaimed
		if w.CurrentTaskID == t.ID {
			w.State, w.CurrentTaskID, w.Revision, w.UpdatedAt = continuo.WorkerIdle, "", prevW+1, now
			if w.CarrierState == continuo.CarrierActive {
				w.CarrierState = continuo.CarrierLost
			}
			if err := tx.WorkerUpdate(ctx, w, prevW); err != nil {
				return err
			}
		}
		a.EndedAt = &now
		t.Revision, t.UpdatedAt = prevT+1, now
		if requeue {
			a.State = continuo.AttemptRequeued
			t.State, t.WorkerID, t.Reason = continuo.TaskQueued, "", ""
		} else {
			a.State = continuo.AttemptInDoubt
			t.State, t.Reason = continuo.TaskReconcileRequired, reason
		}
		if err := tx.TaskUpdate(ctx, t, prevT); err != nil {
			return err
		}
		if err := tx.AttemptUpdate(ctx, a, prevA); err != nil {
			return err
		}
		if requeue {
			return tx.Notify(ctx, channel(sw.ID), wakePayload(t.PreferredWorkerID))
		}
		return nil
	})
}
