package workflow

// Goal rules (CONTRACT.md §5) as pure functions: a goal and an operation in,
// a new goal or an error out. They do no I/O and read no clock; the store
// runs one of them inside the transaction that compares and sets the
// revision, and stamps UpdatedAt, records plan history and remembers the
// idempotency key itself. Each returns a new goal whose slices are its own
// (the input is never changed) with Revision + 1 and CurrentStepID equal to
// the one in_progress step ("" when there is none); on error the goal
// returned is the zero Goal.

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/continuo-dev/continuo"
)

// GoalStepInput is a step as create_goal and revise_goal_plan name it: the
// status is the rules' to decide.
type GoalStepInput struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// CheckRevision is the compare of the store's compare-and-set: expected must
// be g's revision exactly, else revision_conflict with current_revision.
func CheckRevision(g continuo.Goal, expected int64) error {
	if expected != g.Revision {
		return continuo.Errorf(continuo.CodeRevisionConflict, "goal %s is at revision %d, not %d", g.ID, g.Revision, expected).
			With("current_revision", g.Revision)
	}
	return nil
}

// NewGoal is create_goal's rule: the texts within their bounds, a valid
// plan of pending steps, revision 1, active. ID, SessionID and UpdatedAt
// are the caller's to set.
func NewGoal(title, objective string, conditions []string, steps []GoalStepInput) (continuo.Goal, error) {
	if err := checkText("title", title, continuo.MaxGoalTitle); err != nil {
		return continuo.Goal{}, err
	}
	if err := checkText("objective", objective, continuo.MaxGoalObjective); err != nil {
		return continuo.Goal{}, err
	}
	if len(conditions) > continuo.MaxGoalConditions {
		return continuo.Goal{}, continuo.Invalid("completion_conditions", "must have at most %d items, got %d",
			continuo.MaxGoalConditions, len(conditions)).With("limit", continuo.MaxGoalConditions)
	}
	for i, c := range conditions {
		if err := checkText(fmt.Sprintf("completion_conditions[%d]", i), c, continuo.MaxGoalCondition); err != nil {
			return continuo.Goal{}, err
		}
	}
	plan, err := NewPlan(steps)
	if err != nil {
		return continuo.Goal{}, err
	}
	return continuo.Goal{
		Title:                title,
		Objective:            objective,
		CompletionConditions: slices.Clone(conditions),
		Steps:                plan,
		Revision:             1,
		Lifecycle:            continuo.GoalActive,
	}, nil
}

// NewPlan checks a plan (1..MaxGoalSteps steps, unique ids of
// [A-Za-z0-9._-], titles within bounds) and returns it with every step
// pending.
func NewPlan(steps []GoalStepInput) ([]continuo.GoalStep, error) {
	if err := checkSteps(steps); err != nil {
		return nil, err
	}
	plan := make([]continuo.GoalStep, len(steps))
	for i, s := range steps {
		plan[i] = continuo.GoalStep{ID: s.ID, Title: s.Title, Status: continuo.StepPending}
	}
	return plan, nil
}

// Checkpoint is checkpoint_goal's rule. The whole batch is checked before
// anything changes: every id in completed must be a step of the plan, listed
// once. Completing a step that is already completed is inert; nothing ever
// leaves completed. current, when not nil, names the step now in progress:
// it must be a step that is not completed (before or by this batch), and
// any other in_progress step goes back to pending; a pointer to "" means no
// step is in progress. When current is nil the in_progress step stays,
// unless this batch completes it, which leaves none current. A checkpoint
// that changes no step is still a new revision (its summary is the change).
func Checkpoint(g continuo.Goal, completed []string, current *string) (continuo.Goal, error) {
	if err := checkActive(g); err != nil {
		return continuo.Goal{}, err
	}
	index := stepIndex(g.Steps)
	done := make(map[string]bool, len(completed))
	for i, id := range completed {
		field := fmt.Sprintf("completed_step_ids[%d]", i)
		if _, ok := index[id]; !ok {
			return continuo.Goal{}, continuo.Invalid(field, "goal %s has no step %q", g.ID, id).With("step_id", id)
		}
		if done[id] {
			return continuo.Goal{}, continuo.Invalid(field, "step %q is listed twice", id).With("step_id", id)
		}
		done[id] = true
	}
	if current != nil && *current != "" {
		id := *current
		i, ok := index[id]
		switch {
		case !ok:
			return continuo.Goal{}, continuo.Invalid("current_step_id", "goal %s has no step %q", g.ID, id).With("step_id", id)
		case done[id]:
			return continuo.Goal{}, continuo.Invalid("current_step_id", "step %q is completed by this checkpoint; a completed step cannot be current", id).
				With("step_id", id)
		case g.Steps[i].Status == continuo.StepCompleted:
			return continuo.Goal{}, continuo.Invalid("current_step_id", "step %q is already completed; a completed step cannot be current", id).
				With("step_id", id)
		}
	}

	out := cloneGoal(g)
	for i := range out.Steps {
		s := &out.Steps[i]
		switch {
		case done[s.ID]:
			s.Status = continuo.StepCompleted
		case current == nil || s.Status == continuo.StepCompleted:
		case s.ID == *current:
			s.Status = continuo.StepInProgress
		case s.Status == continuo.StepInProgress:
			s.Status = continuo.StepPending
		}
	}
	return next(out), nil
}

// RevisePlan is revise_goal_plan's rule: steps replace the whole plan, in
// their order. Every completed step must stay, with its title unchanged
// (it may move); a retained step keeps its status (a pending or in_progress
// step may be renamed); a new id starts pending. Dropping the in_progress
// step leaves no step current. Completion conditions are not the plan's and
// do not change.
func RevisePlan(g continuo.Goal, steps []GoalStepInput) (continuo.Goal, error) {
	if err := checkActive(g); err != nil {
		return continuo.Goal{}, err
	}
	if err := checkSteps(steps); err != nil {
		return continuo.Goal{}, err
	}
	revised := make(map[string]int, len(steps))
	for i, s := range steps {
		revised[s.ID] = i
	}
	for _, s := range g.Steps {
		if s.Status != continuo.StepCompleted {
			continue
		}
		j, ok := revised[s.ID]
		if !ok {
			return continuo.Goal{}, continuo.Invalid("steps", "completed step %q must stay in the plan", s.ID).With("step_id", s.ID)
		}
		if steps[j].Title != s.Title {
			return continuo.Goal{}, continuo.Invalid(fmt.Sprintf("steps[%d].title", j), "completed step %q keeps its title %q", s.ID, s.Title).
				With("step_id", s.ID)
		}
	}

	old := stepIndex(g.Steps)
	out := cloneGoal(g)
	out.Steps = make([]continuo.GoalStep, len(steps))
	for i, s := range steps {
		status := continuo.StepPending
		if j, ok := old[s.ID]; ok {
			status = g.Steps[j].Status
		}
		out.Steps[i] = continuo.GoalStep{ID: s.ID, Title: s.Title, Status: status}
	}
	return next(out), nil
}

// Finish is update_goal's rule: an active goal becomes completed, when every
// step is completed (else goal_plan_incomplete naming the others), or
// cancelled, always. The steps are left as they were, so a cancelled goal
// shows where it stopped (its in_progress step stays current).
func Finish(g continuo.Goal, lifecycle continuo.GoalLifecycle, reason string) (continuo.Goal, error) {
	if err := checkActive(g); err != nil {
		return continuo.Goal{}, err
	}
	if !lifecycle.Terminal() {
		return continuo.Goal{}, continuo.Invalid("lifecycle", "must be %s or %s, got %q",
			continuo.GoalCompleted, continuo.GoalCancelled, lifecycle)
	}
	if err := checkText("terminal_reason", reason, continuo.MaxGoalTerminalReason); err != nil {
		return continuo.Goal{}, err
	}
	if lifecycle == continuo.GoalCompleted {
		var open []string
		for _, s := range g.Steps {
			if s.Status != continuo.StepCompleted {
				open = append(open, s.ID)
			}
		}
		if len(open) > 0 {
			return continuo.Goal{}, continuo.Errorf(continuo.CodeGoalPlanIncomplete,
				"goal %s cannot be completed: %d of %d steps are not completed (%s)", g.ID, len(open), len(g.Steps), strings.Join(open, ", ")).
				With("incomplete_step_ids", open)
		}
	}
	out := cloneGoal(g)
	out.Lifecycle = lifecycle
	out.TerminalReason = reason
	return next(out), nil
}

// checkActive refuses every change to a terminal goal.
func checkActive(g continuo.Goal) error {
	switch {
	case g.Lifecycle == continuo.GoalActive:
		return nil
	case g.Lifecycle.Terminal():
		return continuo.Errorf(continuo.CodeGoalTerminal, "goal %s is %s and cannot change", g.ID, g.Lifecycle).
			With("lifecycle", string(g.Lifecycle))
	default:
		return fmt.Errorf("goal %s has lifecycle %q", g.ID, g.Lifecycle)
	}
}

// checkSteps checks a plan as given: 1..MaxGoalSteps steps, each id valid
// and unique, each title within bounds.
func checkSteps(steps []GoalStepInput) error {
	if len(steps) < 1 || len(steps) > continuo.MaxGoalSteps {
		return continuo.Invalid("steps", "must have 1..%d items, got %d", continuo.MaxGoalSteps, len(steps)).
			With("limit", continuo.MaxGoalSteps)
	}
	seen := make(map[string]bool, len(steps))
	for i, s := range steps {
		field := fmt.Sprintf("steps[%d].id", i)
		if !validStepID(s.ID) {
			return continuo.Invalid(field, "must be 1..%d bytes of A-Z, a-z, 0-9, '.', '_' or '-'", continuo.MaxGoalStepID).
				With("limit", continuo.MaxGoalStepID)
		}
		if seen[s.ID] {
			return continuo.Invalid(field, "step %q is listed twice", s.ID).With("step_id", s.ID)
		}
		seen[s.ID] = true
		if err := checkText(fmt.Sprintf("steps[%d].title", i), s.Title, continuo.MaxGoalStepTitle); err != nil {
			return err
		}
	}
	return nil
}

// validStepID reports whether id is 1..MaxGoalStepID bytes of [A-Za-z0-9._-].
func validStepID(id string) bool {
	if len(id) < 1 || len(id) > continuo.MaxGoalStepID {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// checkText checks a required text: 1..limit bytes of UTF-8, not only
// white space.
func checkText(field, s string, limit int) error {
	if len(s) < 1 || len(s) > limit {
		return continuo.Invalid(field, "must be 1..%d bytes, got %d", limit, len(s)).With("limit", limit)
	}
	if !utf8.ValidString(s) {
		return continuo.Invalid(field, "must be valid UTF-8")
	}
	if strings.TrimSpace(s) == "" {
		return continuo.Invalid(field, "must not be blank")
	}
	return nil
}

// stepIndex maps each step's id to its position.
func stepIndex(steps []continuo.GoalStep) map[string]int {
	m := make(map[string]int, len(steps))
	for i, s := range steps {
		m[s.ID] = i
	}
	return m
}

// cloneGoal returns g with slices of its own.
func cloneGoal(g continuo.Goal) continuo.Goal {
	g.Steps = slices.Clone(g.Steps)
	g.CompletionConditions = slices.Clone(g.CompletionConditions)
	return g
}

// next finishes a change: the current step follows the statuses, and the
// revision moves on.
func next(g continuo.Goal) continuo.Goal {
	g.CurrentStepID = ""
	for _, s := range g.Steps {
		if s.Status == continuo.StepInProgress {
			g.CurrentStepID = s.ID
			break
		}
	}
	g.Revision++
	return g
}

// CheckSummary checks checkpoint_goal's summary (1..MaxGoalSummary bytes).
func CheckSummary(summary string) error {
	return checkText("summary", summary, continuo.MaxGoalSummary)
}

// CheckReason checks revise_goal_plan's reason (1..MaxGoalReason bytes).
func CheckReason(reason string) error {
	return checkText("reason", reason, continuo.MaxGoalReason)
}
