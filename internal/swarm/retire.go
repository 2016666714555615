package swarm

import (
	"context"
	"errors"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// Retiring a worker (CONTRACT.md §7): its carrier leaves
// (chat_swarm_leave), the owner removes it (chat_swarm_remove_worker), or
// the reaper finds its carrier silent past its swarm's
// worker_idle_ttl_secs with no task in flight. Each happens only at a
// safe boundary — no task held, no continuation open — and does the same:
// the worker keeps its rows and history but takes no slot, its carrier is
// retired (fenced for good, its token revoked if the server started it),
// and status says why.

// Retired is a worker a leave or a removal retired.
type Retired struct {
	Worker   continuo.Worker
	Replayed bool
}

// retiredErr is what every worker call of a retired worker's carrier is
// told.
func retiredErr(w *continuo.Worker) error {
	return continuo.Errorf(continuo.CodeCarrierFenced, "worker %s was retired (%s): stop working as this worker", w.ID, w.RetiredReason).
		With("epoch", w.Epoch).With("worker_id", w.ID).With("reason", "retired").With("retired_reason", string(w.RetiredReason))
}

// Leave retires the calling carrier's worker, at a safe boundary: its
// slot is free for a new worker. Leaving again returns it (replayed).
func (s *Service) Leave(ctx context.Context, c *continuo.Caller, car Carrier, ref WorkerRef) (*Retired, error) {
	var out *Retired
	var token string
	err := s.db.Write(ctx, func(tx store.Tx) error {
		out, token = nil, ""
		b, err := s.carrierOf(ctx, tx, c, car, ref)
		if err != nil {
			// The carrier that left, asking again (a lost answer).
			if w, ok := s.leftBy(ctx, tx, c, car, ref); ok {
				out = &Retired{Worker: *w, Replayed: true}
				return nil
			}
			return err
		}
		if token, err = s.retire(ctx, tx, b.w, continuo.RetiredLeft); err != nil {
			return err
		}
		out = &Retired{Worker: *b.w}
		return nil
	})
	if err == nil {
		s.revoke(ctx, token)
		if !out.Replayed {
			s.meters.retiredFor(out.Worker.RetiredReason)
		}
	}
	return out, err
}

// leftBy returns the worker ref names when the calling carrier is the one
// that left it, at its epoch.
func (s *Service) leftBy(ctx context.Context, tx store.Tx, c *continuo.Caller, car Carrier, ref WorkerRef) (*continuo.Worker, bool) {
	h := car.hash(c.PrincipalID)
	w, err := tx.WorkerGet(ctx, ref.WorkerID)
	if err != nil || h == "" {
		return nil, false
	}
	return w, w.RetiredReason == continuo.RetiredLeft && w.CarrierHash == h && w.Epoch == ref.Epoch
}

// RemoveWorker retires a worker of a swarm the caller owns, at a safe
// boundary: its slot is free, and its carrier is fenced for good.
// Removing a retired worker returns it as it is (replayed), whatever
// retired it.
func (s *Service) RemoveWorker(ctx context.Context, c *continuo.Caller, car Carrier, swarmID, workerID string) (*Retired, error) {
	var out *Retired
	var token string
	err := s.db.Write(ctx, func(tx store.Tx) error {
		out, token = nil, ""
		_, w, err := s.ownWorker(ctx, tx, c, car, swarmID, workerID)
		if err != nil {
			return err
		}
		if w.Retired() {
			out = &Retired{Worker: *w, Replayed: true}
			return nil
		}
		if token, err = s.retire(ctx, tx, w, continuo.RetiredRemoved); err != nil {
			return err
		}
		out = &Retired{Worker: *w}
		return nil
	})
	if err == nil {
		s.revoke(ctx, token)
		if !out.Replayed {
			s.meters.retiredFor(out.Worker.RetiredReason)
		}
	}
	return out, err
}

// retirable checks that a worker is at a safe boundary to retire: no task
// held (its effect may have started: let it submit or fail, or the owner
// reconcile it), no continuation open (revoke or reconcile it first).
func retirable(ctx context.Context, tx store.Tx, w *continuo.Worker) error {
	if w.CurrentTaskID != "" {
		return unsafe("task_in_flight", "worker %s holds task %s, whose effect may have started: it submits or fails it first, or the owner reconciles it",
			w.ID, w.CurrentTaskID).With("task_id", w.CurrentTaskID)
	}
	open, err := tx.ContinuationOpen(ctx, w.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return err
	}
	return unsafe("continuation_pending", "worker %s has continuation %s open: revoke or reconcile it first", w.ID, open.ID).
		With("continuation_id", open.ID)
}

// retire retires w for reason, in tx, at a safe boundary, and updates w.
// It returns the token of its carrier if the planner started it, which
// the caller revokes once tx committed.
func (s *Service) retire(ctx context.Context, tx store.Tx, w *continuo.Worker, reason continuo.RetiredReason) (string, error) {
	if err := retirable(ctx, tx, w); err != nil {
		return "", err
	}
	now := s.now()
	token, err := supersede(ctx, tx, w, w.CarrierHash, now)
	if err != nil {
		return "", err
	}
	prev := w.Revision
	w.RetiredReason, w.RetiredAt = reason, &now
	// Where its carrier stood in a replacement means nothing any more.
	w.ContinuityState, w.BlockedReason = continuo.ContinuitySteady, ""
	w.Revision, w.UpdatedAt = prev+1, now
	if err := tx.WorkerMove(ctx, w, prev, w.State, continuo.CarrierRetired); err != nil {
		return "", stale(err, "the worker")
	}
	if err := tx.CarrierRetire(ctx, w.CarrierHash, now); err != nil && !errors.Is(err, store.ErrInvalidState) {
		return "", err
	}
	// Its carrier, waiting in next, hears that it was retired.
	return token, tx.Notify(ctx, channel(w.SwarmID), wakeAll)
}

// sweepIdle retires the workers whose carrier stayed silent past their
// swarm's worker_idle_ttl_secs with no task in flight; it returns how many
// it retired (one with a continuation open is left for later).
func (s *Service) sweepIdle(ctx context.Context) (int, error) {
	var ws []continuo.Worker
	if err := s.db.Read(ctx, func(tx store.Tx) (err error) {
		ws, err = tx.WorkersIdle(ctx, s.now(), sweepBatch)
		return err
	}); err != nil {
		return 0, err
	}
	var first error
	n := 0
	for _, w := range ws {
		retired, err := s.idle(ctx, w.ID)
		if retired {
			n++
		}
		first = errors.Join(first, err)
	}
	return n, first
}

// idle retires one worker found silent, if it still is, and still at a
// safe boundary (a continuation open waits for its end, or the owner).
func (s *Service) idle(ctx context.Context, id string) (bool, error) {
	var token string
	var retired *continuo.Worker
	err := s.db.Write(ctx, func(tx store.Tx) error {
		token, retired = "", nil
		w, err := tx.WorkerGet(ctx, id)
		if err != nil || w.Retired() || w.CurrentTaskID != "" || s.now().Before(w.LastSeenAt.Add(w.IdleTTL)) {
			return err // it called meanwhile, or it is retired already
		}
		seen := w.LastSeenAt
		token, err = s.retire(ctx, tx, w, continuo.RetiredIdle)
		if continuo.ErrorCode(err) == continuo.CodeUnsafeBoundary {
			return nil
		}
		w.LastSeenAt, retired = seen, w
		return err
	})
	if err != nil || retired == nil {
		return false, err
	}
	s.revoke(ctx, token)
	s.meters.retiredFor(continuo.RetiredIdle)
	s.log.Info("swarm: a silent worker was retired", "worker", retired.ID, "swarm", retired.SwarmID,
		"last_seen", retired.LastSeenAt.Format(time.RFC3339))
	return true, nil
}

// isRetired reports whether err is what a retired worker's carrier is told.
func isRetired(err error) bool {
	var e *continuo.Error
	return errors.As(err, &e) && e.Code == continuo.CodeCarrierFenced && e.Details["reason"] == "retired"
}
