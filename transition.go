package continuo

import "slices"

// The transition tables: one per state type, each the whole state machine
// of its rows (drawn in docs/ARCHITECTURE.md). The store writes a state
// change only as one guarded statement, UPDATE … SET state = new WHERE
// id = … AND state IN (new.From()) (its Move methods; nothing else assigns
// a state), so a change a table does not list is refused by the database,
// not by the caller's reading of it.

// taskTransitions: claimed → queued is the one way back, and only for a
// claim never acked whose lease ran out in a swarm whose policy says
// requeue_unacked; reconcile_required → queued needs the owner's no_effect
// evidence.
var taskTransitions = map[TaskState][]TaskState{
	TaskQueued:            {TaskClaimed, TaskCancelled},
	TaskClaimed:           {TaskRunning, TaskCancelRequested, TaskResultReady, TaskFailed, TaskReconcileRequired, TaskQueued},
	TaskRunning:           {TaskCancelRequested, TaskResultReady, TaskFailed, TaskReconcileRequired},
	TaskCancelRequested:   {TaskResultReady, TaskFailed, TaskCancelled, TaskReconcileRequired},
	TaskReconcileRequired: {TaskQueued, TaskFailed, TaskResultReady},
	TaskResultReady:       {TaskCollected},
}

// runTransitions: queued → failed is a run no executor of this process can
// start (its kind has none).
var runTransitions = map[RunState][]RunState{
	RunQueued:  {RunRunning, RunFailed, RunCancelled, RunInterrupted},
	RunRunning: {RunSucceeded, RunFailed, RunCancelled, RunTimedOut, RunInterrupted},
}

var continuationTransitions = map[ContinuationState][]ContinuationState{
	ContinuationPending:           {ContinuationApproved, ContinuationBound, ContinuationRevoked, ContinuationExpired, ContinuationReconcileRequired},
	ContinuationApproved:          {ContinuationBound, ContinuationRevoked, ContinuationExpired, ContinuationReconcileRequired},
	ContinuationReconcileRequired: {ContinuationPending, ContinuationBound, ContinuationRevoked, ContinuationExpired},
}

// workerTransitions: a worker is busy while it holds a task.
var workerTransitions = map[WorkerState][]WorkerState{
	WorkerIdle: {WorkerBusy},
	WorkerBusy: {WorkerIdle},
}

// carrierTransitions: a lost carrier that calls is active again; a retired
// one is fenced for good.
var carrierTransitions = map[CarrierState][]CarrierState{
	CarrierActive: {CarrierLost, CarrierRetired},
	CarrierLost:   {CarrierActive, CarrierRetired},
}

// CanBecome reports whether a task may go from state s to state t.
func (s TaskState) CanBecome(t TaskState) bool { return slices.Contains(taskTransitions[s], t) }

// CanBecome reports whether a run may go from state s to state t.
func (s RunState) CanBecome(t RunState) bool { return slices.Contains(runTransitions[s], t) }

// CanBecome reports whether a continuation may go from state s to t.
func (s ContinuationState) CanBecome(t ContinuationState) bool {
	return slices.Contains(continuationTransitions[s], t)
}

// CanBecome reports whether a worker may go from state s to state t.
func (s WorkerState) CanBecome(t WorkerState) bool { return slices.Contains(workerTransitions[s], t) }

// CanBecome reports whether a carrier may go from state s to state t.
func (s CarrierState) CanBecome(t CarrierState) bool {
	return slices.Contains(carrierTransitions[s], t)
}

// From lists the states a task may become t from, in TaskStates order.
func (t TaskState) From() []TaskState { return from(taskTransitions, taskStates, t) }

// From lists the states a run may become t from, in RunStates order.
func (t RunState) From() []RunState { return from(runTransitions, runStates, t) }

// From lists the states a continuation may become t from, in
// ContinuationStates order.
func (t ContinuationState) From() []ContinuationState {
	return from(continuationTransitions, continuationStates, t)
}

// From lists the states a worker may become t from, in WorkerStates order.
func (t WorkerState) From() []WorkerState { return from(workerTransitions, workerStates, t) }

// From lists the states a carrier may become t from, in CarrierStates
// order.
func (t CarrierState) From() []CarrierState { return from(carrierTransitions, carrierStates, t) }

// from inverts one transition table for one target state.
func from[S comparable](table map[S][]S, all []S, to S) []S {
	var out []S
	for _, s := range all {
		if slices.Contains(table[s], to) {
			out = append(out, s)
		}
	}
	return out
}
