package store

import (
	"context"
	"time"

	"github.com/continuo-dev/continuo"
)

// GoalTx holds goals and the history of their plans (CONTRACT.md §5). A
// goal belongs to a session; who may see it is the session's business.
type GoalTx interface {
	// GoalCreate inserts a goal (Revision 1); an existing ID is ErrConflict.
	GoalCreate(ctx context.Context, g *continuo.Goal) error
	GoalGet(ctx context.Context, id string) (*continuo.Goal, error)
	// GoalUpdate replaces every mutable field of a goal (title and
	// objective excepted: steps, current step, revision, lifecycle,
	// terminal reason, updated_at) if its stored revision is still
	// prevRevision; else ErrStale (ErrNotFound for an unknown ID).
	GoalUpdate(ctx context.Context, g *continuo.Goal, prevRevision int64) error
	// GoalList lists goals newest first (by ID), filtered as p says.
	GoalList(ctx context.Context, p GoalListParams) ([]continuo.Goal, error)

	// GoalPlanAdd records a plan a change replaced.
	GoalPlanAdd(ctx context.Context, s PlanSnapshot) error
	// GoalPlanList lists a goal's replaced plans newest first (highest
	// revision), at most limit (≤ 0: 100).
	GoalPlanList(ctx context.Context, goalID string, limit int) ([]PlanSnapshot, error)
	// GoalPlanCount counts a goal's replaced plans.
	GoalPlanCount(ctx context.Context, goalID string) (int, error)
}

// GoalListParams filters GoalList. SessionID, or GroupID with ProjectID,
// must be set: goals are listed for one session or one group's project.
type GoalListParams struct {
	SessionID string
	GroupID   string // with ProjectID: goals of the group's sessions in that project
	ProjectID string
	Lifecycle continuo.GoalLifecycle // "" = every lifecycle
	Limit     int                    // ≤ 0: 100
}

// PlanSnapshot is a goal's plan as it was before a change replaced it.
type PlanSnapshot struct {
	GoalID        string              `json:"-"`
	Revision      int64               `json:"revision"` // the goal's revision the plan belonged to
	Steps         []continuo.GoalStep `json:"steps"`
	CurrentStepID string              `json:"current_step_id"`
	Reason        string              `json:"reason"` // why it was replaced: the revision's reason or summary
	ReplacedAt    time.Time           `json:"replaced_at"`
}
