package swarm

import (
	"context"
	"errors"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// Auto Compact (CONTRACT.md §8): a worker whose context pressure reached
// its swarm's threshold is compact_required; at its next safe boundary the
// planner prepares a continuation and the carrier runtime starts a
// replacement carrier with the ticket, which redeems it. With no runtime
// (the manual one) the planner does nothing: the owner sees the worker
// compact_required and prepares the continuation itself.
//
// Every start goes through an operation record on the continuation:
// prepared → in_flight → succeeded | failed. A server that dies while it
// is in flight leaves it unknown, and the continuation reconcile_required:
// never a second replacement for one continuation.

// Runtime starts replacement carriers.
type Runtime interface {
	// Start starts a carrier of the worker name (its ID, which names its
	// log) whose environment holds env (NAME=value) on top of the
	// runtime's own minimal one, and returns the started process's
	// identity (proc.Ident).
	Start(ctx context.Context, name string, env []string) (string, error)
}

// Minter mints and revokes the tokens of the carriers a runtime starts.
type Minter interface {
	Mint(ctx context.Context, principalID string, ttl time.Duration) (token, id string, err error)
	Revoke(ctx context.Context, id string) error
}

// carrierTokenTTL bounds a started carrier's token; it is revoked sooner,
// when the carrier is retired.
const carrierTokenTTL = 7 * 24 * time.Hour

// plannerReason is the reason of the continuations the planner prepares.
const plannerReason = "auto compact: the worker's context pressure reached its swarm's threshold"

// kickPlanner asks the planner to look at compact_required workers soon.
func (s *Service) kickPlanner() {
	if s.runtime == nil {
		return
	}
	select {
	case s.plan <- struct{}{}:
	default:
	}
}

// planPass prepares and starts a replacement for every compact_required
// worker at a safe boundary.
func (s *Service) planPass(ctx context.Context) error {
	if s.runtime == nil || s.minter == nil {
		return nil
	}
	var ws []continuo.Worker
	if err := s.db.Read(ctx, func(tx store.Tx) (err error) {
		ws, err = tx.WorkersCompacting(ctx, sweepBatch)
		return err
	}); err != nil {
		return err
	}
	var first error
	for _, w := range ws {
		first = errors.Join(first, s.replace(ctx, w.ID))
	}
	return first
}

// Retries of a replacement carrier (CONTRACT.md §8, "No storms"): one
// that did not start, or started and did not redeem its ticket before it
// expired, is retried after a backoff; after maxCarrierTries failures in a
// row at one epoch and checkpoint the worker is compact_blocked. The
// backoffs put the five tries within 10 minutes when starts fail at once;
// a ticket the planner prepares expires after plannerTicketTTL (a carrier
// the server starts redeems within seconds), so five not redeemed take a
// little longer: never more than five tries in any 10 minutes.
const (
	maxCarrierTries  = 5
	plannerTicketTTL = 2 * time.Minute
)

// carrierBackoff is the wait after the n-th failed try (n ≥ 1) before the
// next: 10 s, 30 s, 90 s, 270 s.
func carrierBackoff(n int) time.Duration {
	d := 10 * time.Second
	for range n - 1 {
		d *= 3
	}
	return d
}

// failedTries returns how many of the planner's continuations of w at its
// epoch and checkpoint failed in a row, newest first, and the newest of
// them: revoked because its carrier did not start, or expired unredeemed.
// Any other continuation (bound, the owner's, revoked by the owner) ends
// the run.
func failedTries(ctx context.Context, tx store.Tx, w *continuo.Worker) (int, *continuo.Continuation, error) {
	cs, err := tx.ContinuationList(ctx, store.ContinuationListParams{WorkerID: w.ID, Limit: maxCarrierTries})
	if err != nil {
		return 0, nil, err
	}
	n := 0
	for _, cn := range cs {
		if cn.RequestedBy != plannerBy || cn.SourceEpoch != w.Epoch || cn.CheckpointHash != w.CheckpointHash || failure(&cn) == "" {
			break
		}
		n++
	}
	if n == 0 {
		return 0, nil, nil
	}
	return n, &cs[0], nil
}

// plannerBy is the requested_by of the planner's continuations.
const plannerBy = "planner"

// failure says how a planner's continuation failed: its carrier did not
// start (revoked with its start failed, or expired before a start), or
// started — or, in doubt, was said by the owner to have started — and
// never redeemed (expired); "" when it did not fail.
func failure(cn *continuo.Continuation) continuo.BlockedReason {
	switch {
	case cn.State == continuo.ContinuationRevoked && cn.CarrierOp == continuo.OpFailed:
		return continuo.BlockedCarrierStartFailed
	case cn.State == continuo.ContinuationExpired && (cn.CarrierOp == continuo.OpSucceeded || cn.CarrierOp == continuo.OpUnknown):
		return continuo.BlockedNotRedeemed
	case cn.State == continuo.ContinuationExpired:
		return continuo.BlockedCarrierStartFailed
	}
	return ""
}

// block records that no rollover can leave worker w room to work.
func block(ctx context.Context, tx store.Tx, w *continuo.Worker, why continuo.BlockedReason, now time.Time) error {
	prev := w.Revision
	w.ContinuityState, w.BlockedReason, w.Revision, w.UpdatedAt = continuo.ContinuityCompactBlocked, why, prev+1, now
	return stale(tx.WorkerUpdate(ctx, w, prev), "the worker")
}

// replace prepares a continuation of a compact_required worker at a safe
// boundary and starts its replacement carrier — unless the last tries
// failed (it waits out the backoff, or, after maxCarrierTries, blocks the
// worker) or the capsule cannot leave room to work (it blocks the
// worker).
func (s *Service) replace(ctx context.Context, workerID string) error {
	ticket := newTicket()
	var cn *continuo.Continuation
	var principal string
	var retry bool
	var blocked continuo.BlockedReason
	err := s.db.Write(ctx, func(tx store.Tx) error {
		cn, retry, blocked = nil, false, ""
		w, err := tx.WorkerGet(ctx, workerID)
		if err != nil || w.ContinuityState != continuo.ContinuityCompactRequired || w.Retired() {
			return err
		}
		sw, err := tx.SwarmGet(ctx, w.SwarmID)
		if err != nil || sw.State != continuo.SwarmActive {
			return err
		}
		if err := boundary(ctx, tx, w, ""); err != nil {
			if continuo.ErrorCode(err) == continuo.CodeUnsafeBoundary {
				return nil // at its next safe boundary
			}
			return err
		}
		now := s.now()
		n, last, err := failedTries(ctx, tx, w)
		switch {
		case err != nil:
			return err
		case n >= maxCarrierTries:
			blocked = failure(last)
			return block(ctx, tx, w, blocked, now)
		case n > 0 && now.Before(last.UpdatedAt.Add(carrierBackoff(n))):
			return nil // after the backoff
		}
		capsule, hash, err := buildCapsule(ctx, tx, w, w.Epoch+1, capsuleLimit(sw))
		if reason, _ := continuo.AsError(err).Details["reason"].(string); reason == string(continuo.BlockedCapsuleTooLarge) {
			blocked = continuo.BlockedCapsuleTooLarge
			return block(ctx, tx, w, blocked, now)
		}
		if err != nil {
			return err
		}
		c := newContinuation(w, continuo.PathTicket, plannerReason, plannerBy, now, plannerTicketTTL)
		c.TicketHash, c.Capsule, c.CapsuleHash, c.CarrierOp = ticketHash(ticket), capsule, hash, continuo.OpPrepared
		if err := s.open(ctx, tx, w, &c, now); err != nil {
			return err
		}
		cn, principal, retry = &c, w.PrincipalID, n > 0
		return nil
	})
	if blocked != "" && err == nil {
		s.log.Warn("swarm: a worker is compact_blocked", "worker", workerID, "reason", string(blocked))
		s.meters.blocked(blocked)
	}
	if err != nil || cn == nil {
		return err
	}
	s.meters.tried(retry)
	token, tokenID, err := s.minter.Mint(ctx, principal, carrierTokenTTL)
	if err != nil {
		return errors.Join(err, s.startFailed(ctx, cn.ID, ""))
	}
	// From here until the start is recorded, a crash leaves its outcome
	// unknown (the sweep makes the continuation reconcile_required).
	if err := s.setOp(ctx, cn.ID, continuo.OpPrepared, continuo.OpInFlight, s.self, tokenID); err != nil {
		return errors.Join(err, s.minter.Revoke(ctx, tokenID))
	}
	ident, err := s.runtime.Start(ctx, cn.WorkerID, []string{"CONTINUO_CONTINUATION_TICKET=" + ticket, "CONTINUO_SWARM_ID=" + cn.SwarmID,
		"CONTINUO_WORKER_ID=" + cn.WorkerID, "CONTINUO_TOKEN=" + token})
	if err != nil {
		s.log.Warn("swarm: a replacement carrier did not start", "worker", cn.WorkerID, "continuation", cn.ID, "err", err)
		s.meters.started(false)
		return s.startFailed(ctx, cn.ID, tokenID)
	}
	s.meters.started(true)
	s.log.Info("swarm: a replacement carrier started", "worker", cn.WorkerID, "continuation", cn.ID, "process", ident)
	return s.setOp(ctx, cn.ID, continuo.OpInFlight, continuo.OpSucceeded, ident, tokenID)
}

// setOp moves a continuation's carrier operation from one state to the
// next, recording the process and the token.
func (s *Service) setOp(ctx context.Context, id string, from, to continuo.CarrierOp, proc, token string) error {
	return s.db.Write(ctx, func(tx store.Tx) error {
		cn, err := tx.ContinuationGet(ctx, id)
		if err != nil || cn.CarrierOp != from {
			return err
		}
		prev := cn.Version
		cn.CarrierOp, cn.CarrierProc, cn.CarrierToken, cn.Version, cn.UpdatedAt = to, proc, token, prev+1, s.now()
		return stale(tx.ContinuationUpdate(ctx, cn, prev), "the continuation")
	})
}

// startFailed records that a carrier start failed, knowing that nothing
// started (the ticket was never handed out): the continuation is revoked
// with its operation failed, the worker goes back to compact_required and
// the planner tries again after a backoff (failedTries). The token, if
// any, is revoked.
func (s *Service) startFailed(ctx context.Context, id, token string) error {
	err := s.db.Write(ctx, func(tx store.Tx) error {
		cn, err := tx.ContinuationGet(ctx, id)
		if err != nil || !cn.State.Open() {
			return err
		}
		prev := cn.Version
		cn.CarrierOp, cn.Version, cn.UpdatedAt = continuo.OpFailed, prev+1, s.now()
		if err := tx.ContinuationUpdate(ctx, cn, prev); err != nil {
			return stale(err, "the continuation")
		}
		w, err := tx.WorkerGet(ctx, cn.WorkerID)
		if err != nil {
			return err
		}
		_, err = s.end(ctx, tx, cn, w, continuo.ContinuationRevoked)
		return err
	})
	if token != "" {
		err = errors.Join(err, s.minter.Revoke(ctx, token))
	}
	return err
}

// unknownOp ends a continuation's carrier operation in state op (failed
// or unknown) and puts the continuation, if still open, in
// reconcile_required.
func (s *Service) unknownOp(ctx context.Context, id string, op continuo.CarrierOp) error {
	return s.db.Write(ctx, func(tx store.Tx) error {
		cn, err := tx.ContinuationGet(ctx, id)
		if err != nil {
			return err
		}
		prev := cn.Version
		cn.CarrierOp, cn.Version, cn.UpdatedAt = op, prev+1, s.now()
		open, to := cn.State.Open(), cn.State
		if open {
			to = continuo.ContinuationReconcileRequired
		}
		if err := tx.ContinuationMove(ctx, cn, prev, to); err != nil || !open {
			return stale(err, "the continuation")
		}
		// The worker shows the owner that its continuation awaits them.
		w, err := tx.WorkerGet(ctx, cn.WorkerID)
		if err != nil || w.Epoch != cn.SourceEpoch {
			return err
		}
		return setContinuity(ctx, tx, w, continuo.ContinuityReconcileRequired, cn.UpdatedAt)
	})
}

// sweepOps settles the carrier starts a dead server left in flight.
func (s *Service) sweepOps(ctx context.Context) error {
	var cs []continuo.Continuation
	if err := s.db.Read(ctx, func(tx store.Tx) (err error) {
		cs, err = tx.ContinuationList(ctx, store.ContinuationListParams{CarrierOp: continuo.OpInFlight, Limit: sweepBatch})
		return err
	}); err != nil {
		return err
	}
	var first error
	for _, c := range cs {
		if c.CarrierProc == s.self {
			continue
		}
		if alive, known := s.alive(c.CarrierProc); known && !alive {
			first = errors.Join(first, s.unknownOp(ctx, c.ID, continuo.OpUnknown))
		}
	}
	return first
}

// supersede is the bound continuation that made old (the carrier being
// retired) w's carrier, when one did: its capsule is dropped (its hash
// stays), since no one will read it again — its carrier's receipt is
// fenced from now on — so that a worker's stored capsules do not pile up
// with its rollovers. It returns the token of that carrier if the planner
// started it, or "".
func supersede(ctx context.Context, tx store.Tx, w *continuo.Worker, old string, now time.Time) (string, error) {
	cs, err := tx.ContinuationList(ctx, store.ContinuationListParams{WorkerID: w.ID, TargetCarrier: old,
		States: []continuo.ContinuationState{continuo.ContinuationBound}, Limit: 1})
	if err != nil || len(cs) == 0 {
		return "", err
	}
	prev := cs[0]
	if prev.Capsule != "" {
		v := prev.Version
		prev.Capsule, prev.Version, prev.UpdatedAt = "", v+1, now
		if err := tx.ContinuationUpdate(ctx, &prev, v); err != nil {
			return "", stale(err, "the superseded continuation")
		}
	}
	return prev.CarrierToken, nil
}

// revoke revokes a retired carrier's token, after the transfer committed.
func (s *Service) revoke(ctx context.Context, token string) {
	if token == "" || s.minter == nil {
		return
	}
	if err := s.minter.Revoke(ctx, token); err != nil {
		s.log.Warn("swarm: revoke a retired carrier's token", "token", token, "err", err)
	}
}
