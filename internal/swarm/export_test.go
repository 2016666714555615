package swarm

import (
	"context"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// PlanPass runs one planner pass (the reaper's loop runs it in the
// server).
func PlanPass(ctx context.Context, s *Service) error { return s.planPass(ctx) }

// RedeemBetween is Redeem with between run after its first look at the
// ticket and before its transaction.
func RedeemBetween(ctx context.Context, s *Service, c *continuo.Caller, car Carrier, swarmID, ticket string, between func()) (*Bound, error) {
	return s.redeem(ctx, c, car, swarmID, ticket, "", between)
}

// PressureCost times, inside one Write, what a claiming next does for
// Auto Compact: count the task's prompt in the worker's ledger and check
// its pressure against the threshold (BenchmarkPlannerCost).
func PressureCost(ctx context.Context, s *Service, workerID, ref, prompt string) (time.Duration, error) {
	var d time.Duration
	err := s.db.Write(ctx, func(tx store.Tx) error {
		w, err := tx.WorkerGet(ctx, workerID)
		if err != nil {
			return err
		}
		sw, err := tx.SwarmGet(ctx, w.SwarmID)
		if err != nil {
			return err
		}
		now := s.now()
		t0 := time.Now()
		if err := count(ctx, tx, w, continuo.LedgerTaskPrompt, ref, prompt, now); err != nil {
			return err
		}
		err = s.checkPressure(ctx, tx, &bound{sw: sw, w: w}, now)
		d = time.Since(t0)
		return err
	})
	return d, err
}

// CarrierBackoff is the planner's wait after the n-th failed try of a
// replacement carrier.
func CarrierBackoff(n int) time.Duration { return carrierBackoff(n) }

// SubmitNextBetween is SubmitNext with between run in its next half after
// the claim wrote; an error from between fails that half.
func SubmitNextBetween(ctx context.Context, s *Service, c *continuo.Caller, car Carrier, ref WorkerRef, taskID, result string,
	next NextOptions, between func() error) (*Submitted, error) {
	return s.submitNext(ctx, c, car, ref, taskID, result, next, between)
}
