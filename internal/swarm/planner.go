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

// replace prepares a continuation of a compact_required worker at a safe
// boundary and starts its replacement carrier.
func (s *Service) replace(ctx context.Context, workerID string) error {
	ticket := newTicket()
	var cn *continuo.Continuation
	var principal string
	err := s.db.Write(ctx, func(tx store.Tx) error {
		cn = nil
		w, err := tx.WorkerGet(ctx, workerID)
		if err != nil || w.ContinuityState != continuo.ContinuityCompactRequired {
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
		capsule, hash, err := buildCapsule(ctx, tx, w, w.Epoch+1)
		if err != nil {
			return err
		}
		now := s.now()
		c := continuo.Continuation{ID: continuo.NewID(continuo.PrefixContinuation, now), SwarmID: sw.ID, WorkerID: w.ID,
			Path: continuo.PathTicket, State: continuo.ContinuationPending, Version: 1, SourceEpoch: w.Epoch, TargetEpoch: w.Epoch + 1,
			SourceCarrier: w.CarrierHash, TicketHash: ticketHash(ticket), CheckpointHash: w.CheckpointHash, Capsule: capsule,
			CapsuleHash: hash, Reason: plannerReason, RequestedBy: "planner", CreatedAt: now, UpdatedAt: now,
			ExpiresAt: now.Add(continuo.DefaultTicketTTL), CarrierOp: continuo.OpPrepared}
		if err := s.markPending(ctx, tx, w, now); err != nil {
			return err
		}
		if err := tx.ContinuationCreate(ctx, &c); err != nil {
			return stale(err, "the worker's continuation")
		}
		cn, principal = &c, w.PrincipalID
		return nil
	})
	if err != nil || cn == nil {
		return err
	}
	token, tokenID, err := s.minter.Mint(ctx, principal, carrierTokenTTL)
	if err != nil {
		return errors.Join(err, s.opFailed(ctx, cn.ID, ""))
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
		return s.opFailed(ctx, cn.ID, tokenID)
	}
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

// opFailed records that a carrier start failed: the continuation awaits
// the owner (reconcile_required; no_effect revokes it), so that a failing
// command is not started again and again. The token, if any, is revoked.
func (s *Service) opFailed(ctx context.Context, id, token string) error {
	err := s.unknownOp(ctx, id, continuo.OpFailed)
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
		open := cn.State.Open()
		if open {
			cn.State = continuo.ContinuationReconcileRequired
		}
		if err := tx.ContinuationUpdate(ctx, cn, prev); err != nil || !open {
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
