package storetest

import (
	"context"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// The tests of fields, revisions and constraints write a whole row with
// the state they want in it. These helpers write such a row as the store
// now must: an Update when the stored state is the row's, else a Move
// from the stored state to the row's (so the transition table still
// guards it). The row keeps the state the test gave it either way.

func updateTask(ctx context.Context, tx store.Tx, k *continuo.Task, prev int64) error {
	cur, err := tx.TaskGet(ctx, k.ID)
	if err != nil || cur.State == k.State {
		return firstErr(err, func() error { return tx.TaskUpdate(ctx, k, prev) })
	}
	to := k.State
	k.State = cur.State
	err = tx.TaskMove(ctx, k, prev, to)
	k.State = to
	return err
}

func updateRun(ctx context.Context, tx store.Tx, r *continuo.Run, prev int64) error {
	cur, err := tx.RunGet(ctx, r.ID)
	if err != nil || cur.State == r.State {
		return firstErr(err, func() error { return tx.RunUpdate(ctx, r, prev) })
	}
	to := r.State
	r.State = cur.State
	err = tx.RunMove(ctx, r, prev, to)
	r.State = to
	return err
}

func updateContinuation(ctx context.Context, tx store.Tx, c *continuo.Continuation, prev int64) error {
	cur, err := tx.ContinuationGet(ctx, c.ID)
	if err != nil || cur.State == c.State {
		return firstErr(err, func() error { return tx.ContinuationUpdate(ctx, c, prev) })
	}
	to := c.State
	c.State = cur.State
	err = tx.ContinuationMove(ctx, c, prev, to)
	c.State = to
	return err
}

func updateWorker(ctx context.Context, tx store.Tx, w *continuo.Worker, prev int64) error {
	cur, err := tx.WorkerGet(ctx, w.ID)
	if err != nil || cur.State == w.State && cur.CarrierState == w.CarrierState {
		return firstErr(err, func() error { return tx.WorkerUpdate(ctx, w, prev) })
	}
	to, carrier := w.State, w.CarrierState
	w.State, w.CarrierState = cur.State, cur.CarrierState
	err = tx.WorkerMove(ctx, w, prev, to, carrier)
	w.State, w.CarrierState = to, carrier
	return err
}

// updateAttempt writes a as AttemptMove from prev to a.State.
func updateAttempt(ctx context.Context, tx store.Tx, a *continuo.Attempt, prev continuo.AttemptState) error {
	to := a.State
	a.State = prev
	err := tx.AttemptMove(ctx, a, to)
	a.State = to
	return err
}

// firstErr is err, else what fn returns.
func firstErr(err error, fn func() error) error {
	if err != nil {
		return err
	}
	return fn()
}
