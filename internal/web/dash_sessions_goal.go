package web

import (
	"net/http"
	"slices"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/workflow"
)

// GET /g/{goal}: a goal's objective, completion conditions and plan (the
// current step marked), and the plan's history (get_goal's plan_history)
// as the changes between consecutive plans, computed here for reading.

type goalsGoalView struct {
	Goal         continuo.Goal // redacted
	Redacted     bool
	Session      *continuo.Session
	SessionTitle string
	Steps        []goalsStep
	Done         int
	Changes      []goalsChange // newest first
	Checkpoints  []goalsChange // the changes that only moved steps on
	HistoryTotal int
	Older        int // changes older than the history shows
}

type goalsStep struct {
	continuo.GoalStep
	Current bool
}

// goalsChange is one change of a goal's plan: from the plan of revision
// From to the one after it, with the reason or checkpoint summary given.
type goalsChange struct {
	From, To   int64
	Reason     string
	At         string
	Revised    bool // steps were added, removed, renamed or reordered (revise_goal_plan); else a checkpoint
	Added      []continuo.GoalStep
	Removed    []continuo.GoalStep
	Renamed    []goalsRename
	Moved      []goalsMove
	Reordered  bool
	CurrentWas string // the current step before and after ("" none), when it changed
	CurrentNow string
	Current    bool // the current step changed
}

type goalsRename struct{ ID, From, To string }

type goalsMove struct {
	ID, Title string
	From, To  continuo.StepStatus
}

func (d *dash) goalsGoal(r *http.Request, c *continuo.Caller) (string, any, error) {
	ctx := r.Context()
	g, h, err := d.svc.Workflow.GetGoal(ctx, c, r.PathValue("goal"), workflow.MaxPlanHistory)
	if err != nil {
		return "", nil, err
	}
	sess, _, err := d.svc.Workflow.GetSession(ctx, c, g.SessionID)
	if err != nil {
		return "", nil, err
	}
	rg, red := workflow.RedactGoal(*g)
	v := &goalsGoalView{Goal: rg, Redacted: red, Session: sess, SessionTitle: sessionsRedact(sess.Title),
		HistoryTotal: h.TotalCount, Older: h.TotalCount - h.ReturnedCount}
	for _, st := range rg.Steps {
		v.Steps = append(v.Steps, goalsStep{GoalStep: st, Current: st.ID == rg.CurrentStepID})
		if st.Status == continuo.StepCompleted {
			v.Done++
		}
	}
	// Each snapshot is the plan a change replaced; what replaced it is the
	// next newer snapshot's plan, or the goal's plan for the newest.
	next, nextCurrent := rg.Steps, rg.CurrentStepID
	for _, snap := range h.Snapshots {
		ch := goalsDiff(snap.Steps, snap.CurrentStepID, next, nextCurrent)
		ch.From, ch.To, ch.Reason, ch.At = snap.Revision, snap.Revision+1, snap.Reason, snap.ReplacedAt
		v.Changes = append(v.Changes, ch)
		if !ch.Revised {
			v.Checkpoints = append(v.Checkpoints, ch)
		}
		next, nextCurrent = snap.Steps, snap.CurrentStepID
	}
	return rg.Title, v, nil
}

// goalsDiff is the change from plan a to plan b: steps added, removed,
// renamed, moved to another status, the order and the current step.
func goalsDiff(a []continuo.GoalStep, aCurrent string, b []continuo.GoalStep, bCurrent string) goalsChange {
	var ch goalsChange
	before := map[string]continuo.GoalStep{}
	for _, st := range a {
		before[st.ID] = st
	}
	after := map[string]bool{}
	var kept []string // ids in both, in b's order
	for _, st := range b {
		after[st.ID] = true
		old, ok := before[st.ID]
		if !ok {
			ch.Added = append(ch.Added, st)
			continue
		}
		kept = append(kept, st.ID)
		if old.Title != st.Title {
			ch.Renamed = append(ch.Renamed, goalsRename{ID: st.ID, From: old.Title, To: st.Title})
		}
		if old.Status != st.Status {
			ch.Moved = append(ch.Moved, goalsMove{ID: st.ID, Title: st.Title, From: old.Status, To: st.Status})
		}
	}
	var keptBefore []string
	for _, st := range a {
		if !after[st.ID] {
			ch.Removed = append(ch.Removed, st)
		} else {
			keptBefore = append(keptBefore, st.ID)
		}
	}
	ch.Reordered = !slices.Equal(kept, keptBefore)
	ch.Revised = len(ch.Added) > 0 || len(ch.Removed) > 0 || len(ch.Renamed) > 0 || ch.Reordered
	if aCurrent != bCurrent {
		ch.Current, ch.CurrentWas, ch.CurrentNow = true, goalsStepTitle(a, aCurrent), goalsStepTitle(b, bCurrent)
	}
	return ch
}

// goalsStepTitle names a step of a plan by its title, "" for none.
func goalsStepTitle(steps []continuo.GoalStep, id string) string {
	for _, st := range steps {
		if st.ID == id {
			return st.Title
		}
	}
	return id
}
