package swarm

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/store"
)

// Decision is how the owner settles a task in doubt.
type Decision string

// The decisions (CONTRACT.md §7).
const (
	DecideRequeue     Decision = "requeue"      // run it again: needs no_effect evidence on the latest attempt
	DecideFailed      Decision = "failed"       // it failed
	DecideResultReady Decision = "result_ready" // it did its work: here is the result
)

// Decisions lists every decision, in order.
func Decisions() []Decision { return []Decision{DecideRequeue, DecideFailed, DecideResultReady} }

// Disposition is what the owner's evidence says of the attempt's effect.
type Disposition string

// The dispositions.
const (
	NoEffect      Disposition = "no_effect"
	EffectApplied Disposition = "applied"
	EffectUnknown Disposition = "unknown"
)

// Dispositions lists every disposition, in order.
func Dispositions() []Disposition { return []Disposition{NoEffect, EffectApplied, EffectUnknown} }

// ReconcileInput is what chat_swarm_reconcile takes.
type ReconcileInput struct {
	SwarmID     string
	TaskID      string
	AttemptID   string // must be the task's latest attempt
	Decision    Decision
	Disposition Disposition
	Evidence    string // what the owner's decision rests on (1..4096 bytes)
	Result      string // result_ready only
}

// Reconcile settles a task in reconcile_required — or one in
// cancel_requested, so that the owner need not wait for a worker that may
// never answer — by the owner's decision.
// Requeue runs it again as a new attempt, and only on no_effect evidence
// naming its latest attempt: nothing in doubt is ever run twice on a
// guess. The same decision again returns the task (replayed).
func (s *Service) Reconcile(ctx context.Context, c *continuo.Caller, car Carrier, in ReconcileInput) (*TaskResult, error) {
	switch {
	case in.Evidence == "" || len(in.Evidence) > continuo.MaxEvidence:
		return nil, continuo.Invalid("evidence.ref", "must be 1..%d bytes: what the decision rests on", continuo.MaxEvidence)
	case in.Decision == DecideRequeue && in.Disposition != NoEffect:
		return nil, continuo.Errorf(continuo.CodeReconcileRequired, "requeue needs no_effect evidence: the attempt must be known not to have acted").
			With("field", "evidence.disposition")
	case !slices.Contains(Decisions(), in.Decision):
		return nil, continuo.Invalid("decision", "must be requeue, failed or result_ready")
	case !slices.Contains(Dispositions(), in.Disposition):
		return nil, continuo.Invalid("evidence.disposition", "must be no_effect, applied or unknown")
	case in.Decision == DecideResultReady && (in.Result == "" || len(in.Result) > continuo.MaxTaskResult):
		return nil, continuo.Invalid("result", "result_ready needs the result, 1..%d bytes", continuo.MaxTaskResult)
	case in.Decision != DecideResultReady && in.Result != "":
		return nil, continuo.Invalid("result", "is only for decision result_ready")
	}
	resultHash := ""
	if in.Decision == DecideResultReady {
		resultHash = digest("continuo result v1", in.Result)
	}
	evidence, _ := redact.String(string(in.Disposition) + ": " + in.Evidence)
	var out *TaskResult
	err := s.ownedTask(ctx, c, car, in.SwarmID, in.TaskID, func(tx store.Tx, sw *continuo.Swarm, t *continuo.Task) error {
		if t.Attempt == 0 {
			return stateErr(t, "it was never delivered")
		}
		latest, err := tx.AttemptOf(ctx, t.ID, t.Attempt)
		if err != nil {
			return err
		}
		if replayed(t, latest, in, resultHash) {
			out = &TaskResult{Task: *t, Replayed: true}
			return nil
		}
		if in.AttemptID != latest.ID {
			// An attempt of another task, or of nothing the caller may
			// see, is unknown; an earlier attempt of this task is stale.
			a, err := tx.AttemptGet(ctx, in.AttemptID)
			if errors.Is(err, store.ErrNotFound) || err == nil && a.TaskID != t.ID {
				return continuo.NotFound("attempt", in.AttemptID)
			}
			if err != nil {
				return err
			}
		}
		switch {
		case t.State == continuo.TaskCancelRequested && in.Decision == DecideRequeue:
			return stateErr(t, "it was cancelled: settle it as failed, or result_ready with what it did")
		case t.State != continuo.TaskReconcileRequired && t.State != continuo.TaskCancelRequested:
			return stateErr(t, "only a reconcile_required or cancel_requested task is reconciled")
		}
		if in.AttemptID != latest.ID {
			return continuo.Errorf(continuo.CodeConflict, "the evidence names attempt %s; the task's latest attempt is %s", in.AttemptID, latest.ID).
				With("attempt_id", latest.ID)
		}
		now, prevState := s.now(), latest.State
		attemptTo := continuo.AttemptSettled
		prev := t.Revision
		t.Revision, t.UpdatedAt, t.Detail = prev+1, now, evidence
		var taskTo continuo.TaskState
		switch in.Decision {
		case DecideRequeue:
			attemptTo = continuo.AttemptRequeued
			taskTo, t.WorkerID, t.Reason = continuo.TaskQueued, "", ""
		case DecideFailed:
			taskTo, t.Reason, t.EndedAt = continuo.TaskFailed, continuo.ReasonReconciled, &now
		case DecideResultReady:
			result, _ := redact.String(in.Result)
			taskTo, t.Result, t.ResultHash, t.Reason, t.EndedAt = continuo.TaskResultReady, result, resultHash, continuo.ReasonReconciled, &now
		}
		if latest.EndedAt == nil {
			latest.EndedAt = &now
		}
		if prevState.Active() {
			// A cancel_requested task its worker still holds (gone, or
			// slow to answer): the owner's decision frees the worker, whose
			// late submit or fail is then refused.
			if err := release(ctx, tx, latest.WorkerID, t.ID, now); err != nil {
				return err
			}
		}
		if err := tx.TaskMove(ctx, t, prev, taskTo); err != nil {
			return stale(err, "the task")
		}
		if err := tx.AttemptMove(ctx, latest, attemptTo); err != nil {
			return stale(err, "the attempt")
		}
		out = &TaskResult{Task: *t}
		switch t.State {
		case continuo.TaskQueued:
			return tx.Notify(ctx, channel(sw.ID), wakePayload(t.PreferredWorkerID))
		case continuo.TaskResultReady:
			return tx.Notify(ctx, readyChannel(sw.ID), wakePayload(""))
		}
		return nil
	})
	if err == nil {
		s.kickPlanner() // a worker freed of a cancel_requested task may be at its safe boundary
	}
	return out, err
}

// replayed reports whether a reconcile call repeats the decision that
// already settled the task's attempt.
func replayed(t *continuo.Task, latest *continuo.Attempt, in ReconcileInput, resultHash string) bool {
	switch in.Decision {
	case DecideRequeue:
		// A requeued task was claimed again (a newer attempt), or waits.
		if t.Attempt == latest.Number && latest.ID == in.AttemptID {
			return latest.State == continuo.AttemptRequeued && t.State == continuo.TaskQueued
		}
		return false
	case DecideFailed:
		return latest.ID == in.AttemptID && latest.State == continuo.AttemptSettled && t.State == continuo.TaskFailed
	case DecideResultReady:
		return latest.ID == in.AttemptID && latest.State == continuo.AttemptSettled &&
			(t.State == continuo.TaskResultReady || t.State == continuo.TaskCollected) && t.ResultHash == resultHash
	}
	return false
}

// release makes worker workerID idle if it holds task taskID.
func release(ctx context.Context, tx store.Tx, workerID, taskID string, now time.Time) error {
	w, err := tx.WorkerGet(ctx, workerID)
	if err != nil || w.CurrentTaskID != taskID {
		return err
	}
	prev := w.Revision
	w.CurrentTaskID, w.Revision, w.UpdatedAt = "", prev+1, now
	return stale(tx.WorkerMove(ctx, w, prev, continuo.WorkerIdle, w.CarrierState), "the worker")
}
