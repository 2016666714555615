package continuo

import (
	"slices"
	"time"
)

// StepStatus is a goal step's status. A step is pending until it becomes
// the current step (in_progress); completed is final (CONTRACT.md §5).
type StepStatus string

// The step statuses.
const (
	StepPending    StepStatus = "pending"
	StepInProgress StepStatus = "in_progress"
	StepCompleted  StepStatus = "completed"
)

// stepStatuses is the closed set of step statuses, in the contract's order.
var stepStatuses = []StepStatus{StepPending, StepInProgress, StepCompleted}

// StepStatuses lists every step status, in order.
func StepStatuses() []StepStatus { return slices.Clone(stepStatuses) }

// Valid reports whether s is one of StepStatuses.
func (s StepStatus) Valid() bool { return slices.Contains(stepStatuses, s) }

// GoalLifecycle is a goal's lifecycle: active → completed | cancelled;
// nothing leaves a terminal lifecycle.
type GoalLifecycle string

// The goal lifecycles.
const (
	GoalActive    GoalLifecycle = "active"
	GoalCompleted GoalLifecycle = "completed"
	GoalCancelled GoalLifecycle = "cancelled"
)

// goalLifecycles is the closed set of goal lifecycles, in order.
var goalLifecycles = []GoalLifecycle{GoalActive, GoalCompleted, GoalCancelled}

// GoalLifecycles lists every goal lifecycle, in order.
func GoalLifecycles() []GoalLifecycle { return slices.Clone(goalLifecycles) }

// Valid reports whether l is one of GoalLifecycles.
func (l GoalLifecycle) Valid() bool { return slices.Contains(goalLifecycles, l) }

// Terminal reports whether a goal in lifecycle l is immutable.
func (l GoalLifecycle) Terminal() bool { return l == GoalCompleted || l == GoalCancelled }

// Goal bounds (CONTRACT.md §5), in UTF-8 bytes.
const (
	MaxGoalTitle          = 200
	MaxGoalObjective      = 8 << 10
	MaxGoalConditions     = 8
	MaxGoalCondition      = 512
	MaxGoalSteps          = 32
	MaxGoalStepID         = 64 // of [A-Za-z0-9._-]
	MaxGoalStepTitle      = 200
	MaxGoalSummary        = 2048 // checkpoint_goal's summary
	MaxGoalReason         = 1024 // revise_goal_plan's reason
	MaxGoalTerminalReason = 1024 // update_goal's terminal_reason
)

// GoalStep is one step of a goal's plan.
type GoalStep struct {
	ID     string     `json:"id"`
	Title  string     `json:"title"`
	Status StepStatus `json:"status"`
}

// Goal is a goal of a session: an objective, immutable completion
// conditions, and an ordered plan whose every change bumps Revision.
// CurrentStepID is the one in_progress step, "" when there is none.
type Goal struct {
	ID                   string        `json:"goal_id"`
	SessionID            string        `json:"session_id"`
	Title                string        `json:"title"`
	Objective            string        `json:"objective"`
	CompletionConditions []string      `json:"completion_conditions"`
	Steps                []GoalStep    `json:"steps"`
	CurrentStepID        string        `json:"current_step_id"`
	Revision             int64         `json:"revision"`
	Lifecycle            GoalLifecycle `json:"lifecycle"`
	TerminalReason       string        `json:"terminal_reason,omitempty"`
	UpdatedAt            time.Time     `json:"updated_at"`
}
