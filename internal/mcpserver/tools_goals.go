package mcpserver

import (
	"context"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/workflow"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Goal is a goal as a model reads it (CONTRACT.md §5): every text redacted.
type Goal struct {
	GoalID               string              `json:"goal_id"`
	SessionID            string              `json:"session_id"`
	Title                string              `json:"title"`
	Objective            string              `json:"objective"`
	CompletionConditions []string            `json:"completion_conditions"`
	Steps                []continuo.GoalStep `json:"steps"`
	CurrentStepID        string              `json:"current_step_id"`
	Revision             int64               `json:"revision"`
	Lifecycle            string              `json:"lifecycle"`
	TerminalReason       string              `json:"terminal_reason,omitempty"`
	UpdatedAt            string              `json:"updated_at"`
	Redacted             bool                `json:"redacted,omitempty"`
}

func goal(g *continuo.Goal) Goal {
	r, red := workflow.RedactGoal(*g)
	return Goal{GoalID: r.ID, SessionID: r.SessionID, Title: r.Title, Objective: r.Objective,
		CompletionConditions: r.CompletionConditions, Steps: r.Steps, CurrentStepID: r.CurrentStepID, Revision: r.Revision,
		Lifecycle: string(r.Lifecycle), TerminalReason: r.TerminalReason, UpdatedAt: ts(r.UpdatedAt), Redacted: red}
}

// goalSchema names a goal's fields once, for the five tools that return
// one (a typed schema of each would be most of their bytes).
var goalSchema = described("goal_id, session_id, title, objective, completion_conditions, steps[{id, title, status}], current_step_id (\"\": none), revision, lifecycle, terminal_reason?, updated_at, redacted?",
	map[string][]string{"steps[].status": strs(continuo.StepStatuses()), "lifecycle": strs(continuo.GoalLifecycles())})

var goalSummarySchema = described("goal_id, session_id, title, lifecycle, revision, current_step_id, steps_completed, steps_total, updated_at",
	map[string][]string{"lifecycle": strs(continuo.GoalLifecycles())})

var planHistorySchema = &jsonschema.Schema{Type: "object",
	Description: "snapshots (replaced plans, newest first: revision, steps, current_step_id, reason, replaced_at), total_count, returned_count, truncated"}

// registerGoalTools registers the goal tools (CONTRACT.md §5), one
// function each.
func (s *server) registerGoalTools(srv *mcp.Server) {
	for _, register := range []func(*mcp.Server){
		s.createGoal, s.getGoal, s.listGoals, s.checkpointGoal, s.reviseGoalPlan, s.updateGoal,
	} {
		register(srv)
	}
}

// GoalResult is the result of every goal mutation.
type GoalResult struct {
	Goal     Goal `json:"goal"`
	Replayed bool `json:"replayed"`
}

func goalResult(g *continuo.Goal, replayed bool, err error) (*GoalResult, error) {
	if err != nil {
		return nil, err
	}
	return &GoalResult{Goal: goal(g), Replayed: replayed}, nil
}

// ---- create_goal ----

// CreateGoalArgs are the arguments of create_goal.
type CreateGoalArgs struct {
	SessionID            string                   `json:"session_id" limit:"1,64" jsonschema:"ses_… or ~sN"`
	Title                string                   `json:"title" limit:"1,200"`
	Objective            string                   `json:"objective" limit:"1,8192"`
	CompletionConditions []string                 `json:"completion_conditions" limit:"0,8" each:"512" jsonschema:"fixed for the goal's life"`
	Steps                []workflow.GoalStepInput `json:"steps" limit:"1,32" jsonschema:"ordered plan, [{id, title}]; ids of A-Za-z0-9._-"`
	IdempotencyKey       string                   `json:"idempotency_key" limit:"1,128" jsonschema:"retry key: same key and arguments return the original"`
}

func (s *server) createGoal(srv *mcp.Server) {
	add(s, srv, tool{name: "create_goal", title: "Create a goal", idempotent: true,
		desc: "Use for multi-step work: a Continuo goal of the session (not a client's own goal tool) with an ordered plan (revision 1, every step pending)."},
		func(ctx context.Context, c *continuo.Caller, in *CreateGoalArgs) (*GoalResult, error) {
			return goalResult(s.opts.Workflow.CreateGoal(ctx, c, workflow.NewGoalInput{SessionID: in.SessionID, Title: in.Title,
				Objective: in.Objective, CompletionConditions: in.CompletionConditions, Steps: in.Steps, IdempotencyKey: in.IdempotencyKey}))
		})
}

// ---- get_goal ----

// GetGoalArgs are the arguments of get_goal.
type GetGoalArgs struct {
	GoalID       string `json:"goal_id" limit:"1,64"`
	HistoryLimit *int   `json:"history_limit,omitempty" limit:"0,8" jsonschema:"replaced plans to return, 0..8 (default 8)"`
}

// GetGoalResult is the result of get_goal.
type GetGoalResult struct {
	Goal        Goal                 `json:"goal"`
	PlanHistory workflow.PlanHistory `json:"plan_history"`
}

func (s *server) getGoal(srv *mcp.Server) {
	add(s, srv, tool{name: "get_goal", title: "Read a goal", readOnly: true, idempotent: true,
		desc: "Use before changing a Continuo goal: it, its revision, and its replaced plans (≤ 8, ≤ 64 KiB)."},
		func(ctx context.Context, c *continuo.Caller, in *GetGoalArgs) (*GetGoalResult, error) {
			limit := workflow.MaxPlanHistory
			if in.HistoryLimit != nil {
				limit = *in.HistoryLimit
			}
			g, h, err := s.opts.Workflow.GetGoal(ctx, c, in.GoalID, limit)
			if err != nil {
				return nil, err
			}
			return &GetGoalResult{Goal: goal(g), PlanHistory: *h}, nil
		})
}

// ---- list_goals ----

// ListGoalsArgs are the arguments of list_goals.
type ListGoalsArgs struct {
	SessionID string `json:"session_id,omitempty" limit:"1,64" jsonschema:"ses_… or ~sN; or give project"`
	Project   string `json:"project,omitempty" limit:"1,128" jsonschema:"your group's goals in this project"`
	Lifecycle string `json:"lifecycle,omitempty" enum:"goallifecycle"`
}

// GoalSummary is one goal in list_goals.
type GoalSummary struct {
	GoalID         string `json:"goal_id"`
	SessionID      string `json:"session_id"`
	Title          string `json:"title"`
	Lifecycle      string `json:"lifecycle"`
	Revision       int64  `json:"revision"`
	CurrentStepID  string `json:"current_step_id"`
	StepsCompleted int    `json:"steps_completed"`
	StepsTotal     int    `json:"steps_total"`
	UpdatedAt      string `json:"updated_at"`
}

// ListGoalsResult is the result of list_goals.
type ListGoalsResult struct {
	Goals     []GoalSummary `json:"goals"`
	Truncated bool          `json:"truncated"`
}

func (s *server) listGoals(srv *mcp.Server) {
	add(s, srv, tool{name: "list_goals", title: "List goals", readOnly: true, idempotent: true,
		desc: "Use to find the Continuo goals of a session or of a project, newest first (at most 100)."},
		func(ctx context.Context, c *continuo.Caller, in *ListGoalsArgs) (*ListGoalsResult, error) {
			gs, more, err := s.opts.Workflow.ListGoals(ctx, c, workflow.GoalQuery{SessionID: in.SessionID, Project: in.Project,
				Lifecycle: continuo.GoalLifecycle(in.Lifecycle)})
			if err != nil {
				return nil, err
			}
			out := &ListGoalsResult{Goals: []GoalSummary{}, Truncated: more}
			for _, g := range gs {
				title, _ := redact.String(g.Title)
				sum := GoalSummary{GoalID: g.ID, SessionID: g.SessionID, Title: title, Lifecycle: string(g.Lifecycle),
					Revision: g.Revision, CurrentStepID: g.CurrentStepID, StepsTotal: len(g.Steps), UpdatedAt: ts(g.UpdatedAt)}
				for _, st := range g.Steps {
					if st.Status == continuo.StepCompleted {
						sum.StepsCompleted++
					}
				}
				out.Goals = append(out.Goals, sum)
			}
			return out, nil
		})
}

// ---- checkpoint_goal ----

// CheckpointGoalArgs are the arguments of checkpoint_goal.
type CheckpointGoalArgs struct {
	GoalID           string   `json:"goal_id" limit:"1,64"`
	ExpectedRevision *int64   `json:"expected_revision" limit:"1,9007199254740991" jsonschema:"the goal's revision you last read"`
	IdempotencyKey   string   `json:"idempotency_key" limit:"1,128" jsonschema:"fresh per change; same key and arguments return the original"`
	CompletedStepIDs []string `json:"completed_step_ids" limit:"0,32" each:"64" jsonschema:"steps now completed (never undone)"`
	CurrentStepID    *string  `json:"current_step_id,omitempty" limit:"0,64" jsonschema:"the step now in progress; \"\" for none; omit to keep"`
	Summary          string   `json:"summary" limit:"1,2048" jsonschema:"what was done"`
}

func (s *server) checkpointGoal(srv *mcp.Server) {
	add(s, srv, tool{name: "checkpoint_goal", title: "Checkpoint a goal", idempotent: true,
		desc: "Use as a Continuo goal's steps finish: marks steps completed and sets the current step, all or nothing."},
		func(ctx context.Context, c *continuo.Caller, in *CheckpointGoalArgs) (*GoalResult, error) {
			return goalResult(s.opts.Workflow.CheckpointGoal(ctx, c, workflow.CheckpointInput{GoalID: in.GoalID,
				ExpectedRevision: *in.ExpectedRevision, IdempotencyKey: in.IdempotencyKey, CompletedStepIDs: in.CompletedStepIDs,
				CurrentStepID: in.CurrentStepID, Summary: in.Summary}))
		})
}

// ---- revise_goal_plan ----

// ReviseGoalPlanArgs are the arguments of revise_goal_plan.
type ReviseGoalPlanArgs struct {
	GoalID           string                   `json:"goal_id" limit:"1,64"`
	ExpectedRevision *int64                   `json:"expected_revision" limit:"1,9007199254740991" jsonschema:"the goal's revision you last read"`
	IdempotencyKey   string                   `json:"idempotency_key" limit:"1,128" jsonschema:"fresh per change; same key and arguments return the original"`
	Reason           string                   `json:"reason" limit:"1,1024"`
	Steps            []workflow.GoalStepInput `json:"steps" limit:"1,32" jsonschema:"the whole new plan, [{id, title}]; completed steps stay as they are"`
}

func (s *server) reviseGoalPlan(srv *mcp.Server) {
	add(s, srv, tool{name: "revise_goal_plan", title: "Revise a goal's plan", idempotent: true,
		desc: "Use when a Continuo goal's plan must change: replaces it; kept ids keep their status, new ones are pending."},
		func(ctx context.Context, c *continuo.Caller, in *ReviseGoalPlanArgs) (*GoalResult, error) {
			return goalResult(s.opts.Workflow.ReviseGoalPlan(ctx, c, workflow.ReviseInput{GoalID: in.GoalID,
				ExpectedRevision: *in.ExpectedRevision, IdempotencyKey: in.IdempotencyKey, Reason: in.Reason, Steps: in.Steps}))
		})
}

// ---- update_goal ----

// UpdateGoalArgs are the arguments of update_goal.
type UpdateGoalArgs struct {
	GoalID           string `json:"goal_id" limit:"1,64"`
	ExpectedRevision *int64 `json:"expected_revision" limit:"1,9007199254740991" jsonschema:"the goal's revision you last read"`
	IdempotencyKey   string `json:"idempotency_key" limit:"1,128" jsonschema:"fresh per change; same key and arguments return the original"`
	Lifecycle        string `json:"lifecycle" enum:"goalend"`
	TerminalReason   string `json:"terminal_reason" limit:"1,1024"`
}

func (s *server) updateGoal(srv *mcp.Server) {
	add(s, srv, tool{name: "update_goal", title: "Finish a goal", idempotent: true,
		desc: "Use when a Continuo goal is done or abandoned (not a client's own goal tool): ends it for good, completed (every step completed) or cancelled."},
		func(ctx context.Context, c *continuo.Caller, in *UpdateGoalArgs) (*GoalResult, error) {
			return goalResult(s.opts.Workflow.UpdateGoal(ctx, c, workflow.FinishInput{GoalID: in.GoalID,
				ExpectedRevision: *in.ExpectedRevision, IdempotencyKey: in.IdempotencyKey, Lifecycle: continuo.GoalLifecycle(in.Lifecycle),
				TerminalReason: in.TerminalReason}))
		})
}
