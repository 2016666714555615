package workflow

import (
	"github.com/continuo-dev/continuo"
)

// GoalSection is the session's active goals, newest first: where each
// stands. get_goal has the full plan.
type GoalSection struct {
	Items     []BriefGoal `json:"items"`
	Total     int         `json:"total"` // active goals loaded (at most BriefGoals)
	Returned  int         `json:"returned"`
	Truncated bool        `json:"truncated"`
}

// BriefGoal is one active goal: identity, revision, current step and how
// many steps are in each status.
type BriefGoal struct {
	GoalID      string     `json:"goal_id"`
	Title       Text       `json:"title"`
	Revision    int64      `json:"revision"`
	CurrentStep *StepRef   `json:"current_step,omitempty"` // absent: none in progress
	Steps       StepCounts `json:"steps"`
}

// StepRef names a step.
type StepRef struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	Truncated bool   `json:"truncated,omitempty"`
}

// StepCounts counts a plan's steps by status.
type StepCounts struct {
	Pending    int `json:"pending"`
	InProgress int `json:"in_progress"`
	Completed  int `json:"completed"`
}

// goalSection shows the first lr.goals active goals; nil when there is none.
func goalSection(s *scrubbed, lr rest) *GoalSection {
	if len(s.Goals) == 0 || lr.goals == 0 {
		return nil
	}
	out := &GoalSection{Items: []BriefGoal{}, Total: len(s.Goals)}
	for i := range s.Goals {
		if i == lr.goals {
			break
		}
		g := &s.Goals[i]
		bg := BriefGoal{GoalID: g.ID, Title: excerpt(g.Title, s.goalRedacted[i], lr.goalTitle), Revision: g.Revision}
		for _, st := range g.Steps {
			switch st.Status {
			case continuo.StepPending:
				bg.Steps.Pending++
			case continuo.StepInProgress:
				bg.Steps.InProgress++
			case continuo.StepCompleted:
				bg.Steps.Completed++
			}
			if st.ID == g.CurrentStepID && g.CurrentStepID != "" {
				t := excerpt(st.Title, false, lr.goalTitle)
				bg.CurrentStep = &StepRef{ID: st.ID, Title: t.Excerpt, Truncated: t.Truncated}
			}
		}
		out.Items = append(out.Items, bg)
	}
	out.Returned = len(out.Items)
	out.Truncated = out.Returned < out.Total || s.GoalsMore
	return out
}
