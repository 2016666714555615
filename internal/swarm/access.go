package swarm

import (
	"context"
	"errors"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// Group isolation (CONTRACT.md §2, §7): a swarm and everything in it — its
// invite, its workers, its tasks, its continuations and their tickets —
// belong to the group that owns the swarm. To a caller of any other group
// each of them is exactly what an unknown one is: the same not_found,
// decided before anything else about the object is looked at, and nothing
// written. Holding an invite or a ticket (bearer secrets) is never enough.

// visible reports whether the caller's group owns sw: the one test every
// path into a swarm makes.
func visible(c *continuo.Caller, sw *continuo.Swarm) bool { return sw.GroupID == c.GroupID }

// groupSwarm reads a swarm the caller's group owns; another group's, like
// an unknown one, is not_found.
func groupSwarm(ctx context.Context, tx store.Tx, c *continuo.Caller, swarmID string) (*continuo.Swarm, error) {
	sw, err := tx.SwarmGet(ctx, swarmID)
	if errors.Is(err, store.ErrNotFound) || err == nil && !visible(c, sw) {
		return nil, continuo.NotFound("swarm", swarmID)
	}
	return sw, err
}

// ownSwarm returns a swarm the caller owns: it holds swarm:own, its group
// owns the swarm, and the calling carrier is not one of the swarm's
// workers (owner tools refuse workers). Anything else the caller may not
// see is not_found.
func (s *Service) ownSwarm(ctx context.Context, tx store.Tx, c *continuo.Caller, car Carrier, swarmID string) (*continuo.Swarm, error) {
	if err := c.Require(continuo.ScopeSwarmOwn); err != nil {
		return nil, err
	}
	sw, err := groupSwarm(ctx, tx, c, swarmID)
	if err != nil {
		return nil, err
	}
	if h := car.hash(c.PrincipalID); h != "" {
		bound, err := tx.CarrierGet(ctx, h)
		if err == nil && bound.SwarmID == sw.ID {
			return nil, continuo.Errorf(continuo.CodeForbidden, "this conversation carries worker %s of this swarm: owner tools refuse workers", bound.WorkerID).
				With("worker_id", bound.WorkerID)
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
	}
	return sw, nil
}

// WorkerRef names a worker as its carrier does: the worker and the epoch
// the carrier holds.
type WorkerRef struct {
	WorkerID string
	Epoch    int64
}

// bound is a worker with its swarm, as its carrier reaches them.
type bound struct {
	sw *continuo.Swarm
	w  *continuo.Worker
	// idleLater asks settle to leave the worker's move to idle unwritten:
	// a submit with next writes the worker once, busy with its next task
	// when the claim finds one, idle (writeIdle) when not.
	idleLater bool
	// idleFrom is the worker's revision in the store while its settled
	// move to idle is not written yet (0: nothing pending).
	idleFrom int64
}

// writeIdle writes the worker's move to idle that settle left pending.
func (b *bound) writeIdle(ctx context.Context, tx store.Tx) error {
	if b.idleFrom == 0 {
		return nil
	}
	prev := b.idleFrom
	b.idleFrom = 0
	return stale(tx.WorkerMove(ctx, b.w, prev, continuo.WorkerIdle, continuo.CarrierActive), "the worker")
}

// carrierOf returns the worker a call names when the calling carrier is
// its active carrier at the current epoch. A worker the caller may not see
// (of a swarm another group owns) is not_found; a carrier that is not the
// bound one, or an epoch that is not current, is carrier_fenced with the
// current epoch.
func (s *Service) carrierOf(ctx context.Context, tx store.Tx, c *continuo.Caller, car Carrier, ref WorkerRef) (*bound, error) {
	if err := c.Require(continuo.ScopeSwarmWork); err != nil {
		return nil, err
	}
	hash, err := car.need(c.PrincipalID)
	if err != nil {
		return nil, err
	}
	w, err := tx.WorkerGet(ctx, ref.WorkerID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, continuo.NotFound("worker", ref.WorkerID)
	}
	if err != nil {
		return nil, err
	}
	sw, err := tx.SwarmGet(ctx, w.SwarmID)
	if err != nil {
		return nil, err
	}
	if !visible(c, sw) {
		return nil, continuo.NotFound("worker", ref.WorkerID)
	}
	if w.Retired() {
		return nil, retiredErr(w)
	}
	if hash != w.CarrierHash || w.CarrierState == continuo.CarrierRetired || ref.Epoch != w.Epoch {
		why := "this conversation is not the worker's bound carrier"
		if hash == w.CarrierHash && ref.Epoch != w.Epoch {
			why = "the epoch is not the worker's current one"
		}
		return nil, continuo.Errorf(continuo.CodeCarrierFenced, "%s (worker %s is at epoch %d): stop working as this worker", why, w.ID, w.Epoch).
			With("epoch", w.Epoch).With("worker_id", w.ID)
	}
	return &bound{sw: sw, w: w}, nil
}

// taskOf returns a task of a swarm; a task of another swarm is not_found.
func taskOf(ctx context.Context, tx store.Tx, swarmID, taskID string) (*continuo.Task, error) {
	t, err := tx.TaskGet(ctx, taskID)
	if errors.Is(err, store.ErrNotFound) || err == nil && t.SwarmID != swarmID {
		return nil, continuo.NotFound("task", taskID)
	}
	return t, err
}

// replaced reports whether the calling carrier is a retired carrier of
// the worker a call names: a continuation replaced it, and the polite
// answer to its next is "continued".
func (s *Service) replaced(ctx context.Context, tx store.Tx, c *continuo.Caller, car Carrier, ref WorkerRef) bool {
	h := car.hash(c.PrincipalID)
	if h == "" {
		return false
	}
	bound, err := tx.CarrierGet(ctx, h)
	return err == nil && bound.WorkerID == ref.WorkerID && bound.State == continuo.CarrierRetired
}
