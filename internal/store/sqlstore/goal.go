package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// goalListDefault is GoalList's and GoalPlanList's limit when none is given.
const goalListDefault = 100

// goalCols are the columns of goals, as g.
const goalCols = `g.id, g.session_id, g.title, g.objective, g.completion_conditions, g.steps, g.current_step_id,
	g.revision, g.lifecycle, g.terminal_reason, g.created_at, g.updated_at`

// jsonList encodes a list as a JSON array, nil as [].
func jsonList[T any](xs []T) (string, error) {
	if xs == nil {
		xs = []T{}
	}
	b, err := json.Marshal(xs)
	return string(b), err
}

// fromJSONList decodes a JSON array; an empty one is an empty, non-nil
// slice.
func fromJSONList[T any](text string) ([]T, error) {
	var out []T
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		return nil, err
	}
	if out == nil {
		out = []T{}
	}
	return out, nil
}

func scanGoal(s scanner) (*continuo.Goal, error) {
	var g continuo.Goal
	var conds, steps, lifecycle string
	var reason sql.NullString
	var created, updated int64
	if err := s.Scan(&g.ID, &g.SessionID, &g.Title, &g.Objective, &conds, &steps, &g.CurrentStepID,
		&g.Revision, &lifecycle, &reason, &created, &updated); err != nil {
		return nil, err
	}
	var err error
	if g.CompletionConditions, err = fromJSONList[string](conds); err != nil {
		return nil, err
	}
	if g.Steps, err = fromJSONList[continuo.GoalStep](steps); err != nil {
		return nil, err
	}
	g.Lifecycle, g.TerminalReason, g.UpdatedAt = continuo.GoalLifecycle(lifecycle), reason.String, fromMS(updated)
	return &g, nil
}

// GoalCreate implements store.GoalTx. The goal's UpdatedAt is also its
// created_at.
func (t *Tx) GoalCreate(ctx context.Context, g *continuo.Goal) error {
	conds, err := jsonList(g.CompletionConditions)
	if err != nil {
		return err
	}
	steps, err := jsonList(g.Steps)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, `INSERT INTO goals (id, session_id, title, objective, completion_conditions, steps, current_step_id,
		revision, lifecycle, terminal_reason, created_at, updated_at) VALUES (`+Placeholders(12)+")",
		g.ID, g.SessionID, g.Title, g.Objective, conds, steps, g.CurrentStepID,
		g.Revision, string(g.Lifecycle), nullString(g.TerminalReason), ms(g.UpdatedAt), ms(g.UpdatedAt))
	return err
}

// GoalGet implements store.GoalTx.
func (t *Tx) GoalGet(ctx context.Context, id string) (*continuo.Goal, error) {
	g, err := scanGoal(t.row(ctx, "SELECT "+goalCols+" FROM goals g WHERE g.id = ?", id))
	return g, t.interpret(err)
}

// GoalUpdate implements store.GoalTx. The session, title, objective,
// completion conditions and creation time stay as created.
func (t *Tx) GoalUpdate(ctx context.Context, g *continuo.Goal, prevRevision int64) error {
	if g.Revision <= prevRevision {
		return errors.New("store: a goal update must raise the revision")
	}
	steps, err := jsonList(g.Steps)
	if err != nil {
		return err
	}
	return t.useOnce(ctx, "goals", g.ID, store.ErrStale, `UPDATE goals SET steps = ?, current_step_id = ?, revision = ?,
		lifecycle = ?, terminal_reason = ?, updated_at = ? WHERE id = ? AND revision = ?`,
		steps, g.CurrentStepID, g.Revision, string(g.Lifecycle), nullString(g.TerminalReason), ms(g.UpdatedAt), g.ID, prevRevision)
}

// GoalList implements store.GoalTx. Every filter given applies; a group's
// project is read through its sessions.
func (t *Tx) GoalList(ctx context.Context, p store.GoalListParams) ([]continuo.Goal, error) {
	if p.SessionID == "" && (p.GroupID == "" || p.ProjectID == "") || (p.GroupID == "") != (p.ProjectID == "") {
		return nil, errors.New("store: GoalList needs a session, or a group with a project")
	}
	from, where, args := "goals g", "1 = 1", []any{}
	if p.GroupID != "" {
		from += " JOIN sessions s ON s.id = g.session_id"
		where += " AND s.group_id = ? AND s.project_id = ?"
		args = append(args, p.GroupID, p.ProjectID)
	}
	if p.SessionID != "" {
		where += " AND g.session_id = ?"
		args = append(args, p.SessionID)
	}
	if p.Lifecycle != "" {
		where += " AND g.lifecycle = ?"
		args = append(args, string(p.Lifecycle))
	}
	limit := p.Limit
	if limit <= 0 {
		limit = goalListDefault
	}
	return list(t, ctx, scanGoal, "SELECT "+goalCols+" FROM "+from+" WHERE "+where+" ORDER BY g.id DESC LIMIT ?",
		append(args, limit)...)
}

func scanPlan(s scanner) (*store.PlanSnapshot, error) {
	var p store.PlanSnapshot
	var steps string
	var at int64
	if err := s.Scan(&p.GoalID, &p.Revision, &steps, &p.CurrentStepID, &p.Reason, &at); err != nil {
		return nil, err
	}
	var err error
	if p.Steps, err = fromJSONList[continuo.GoalStep](steps); err != nil {
		return nil, err
	}
	p.ReplacedAt = fromMS(at)
	return &p, nil
}

// GoalPlanAdd implements store.GoalTx. A second plan of one goal at one
// revision is ErrConflict.
func (t *Tx) GoalPlanAdd(ctx context.Context, s store.PlanSnapshot) error {
	steps, err := jsonList(s.Steps)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, `INSERT INTO goal_plans (goal_id, revision, steps, current_step_id, reason, replaced_at)
		VALUES (?, ?, ?, ?, ?, ?)`, s.GoalID, s.Revision, steps, s.CurrentStepID, s.Reason, ms(s.ReplacedAt))
	return err
}

// GoalPlanList implements store.GoalTx; a limit ≤ 0 is 100.
func (t *Tx) GoalPlanList(ctx context.Context, goalID string, limit int) ([]store.PlanSnapshot, error) {
	if limit <= 0 {
		limit = goalListDefault
	}
	return list(t, ctx, scanPlan, `SELECT goal_id, revision, steps, current_step_id, reason, replaced_at
		FROM goal_plans WHERE goal_id = ? ORDER BY revision DESC LIMIT ?`, goalID, limit)
}

// GoalPlanCount implements store.GoalTx.
func (t *Tx) GoalPlanCount(ctx context.Context, goalID string) (int, error) {
	var n int
	err := t.row(ctx, "SELECT count(*) FROM goal_plans WHERE goal_id = ?", goalID).Scan(&n)
	return n, t.interpret(err)
}
