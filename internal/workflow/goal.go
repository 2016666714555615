package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/store"
)

// Goals (CONTRACT.md §5). A goal belongs to a session and is seen by whoever
// sees the session: its group, while that group holds a grant on the
// session's project; anything else is not_found. Every mutation is one
// Write: resolve the session, replay a known key, compare the revision, run
// the pure rule (goalplan.go), update the goal guarded by the revision it
// read, record the replaced plan, remember the key. Texts are stored as
// given and redacted in what a model reads (GoalView, PlanHistory).

// Plan history bounds of get_goal.
const (
	MaxPlanHistory      = 8
	MaxPlanHistoryBytes = 64 << 10
)

// The idempotency scopes of the goal mutations: one per tool, create's
// within its session, the others within their goal.
func createGoalScope(sessionID string) string { return "create_goal:" + sessionID }
func goalScope(tool, goalID string) string    { return tool + ":" + goalID }

// NewGoalInput is the input of create_goal.
type NewGoalInput struct {
	SessionID            string
	Title                string
	Objective            string
	CompletionConditions []string
	Steps                []GoalStepInput
	IdempotencyKey       string
}

func (in NewGoalInput) fingerprint() string {
	return fingerprint("create_goal/v1", in.Title, in.Objective, in.CompletionConditions, in.Steps)
}

// CheckpointInput is the input of checkpoint_goal. CurrentStepID nil leaves
// the current step as the rule says; a pointer to "" clears it.
type CheckpointInput struct {
	GoalID           string
	ExpectedRevision int64
	IdempotencyKey   string
	CompletedStepIDs []string
	CurrentStepID    *string
	Summary          string
}

func (in CheckpointInput) fingerprint() string {
	return fingerprint("checkpoint_goal/v1", in.ExpectedRevision, in.CompletedStepIDs, in.CurrentStepID, in.Summary)
}

// ReviseInput is the input of revise_goal_plan.
type ReviseInput struct {
	GoalID           string
	ExpectedRevision int64
	IdempotencyKey   string
	Reason           string
	Steps            []GoalStepInput
}

func (in ReviseInput) fingerprint() string {
	return fingerprint("revise_goal_plan/v1", in.ExpectedRevision, in.Reason, in.Steps)
}

// FinishInput is the input of update_goal.
type FinishInput struct {
	GoalID           string
	ExpectedRevision int64
	IdempotencyKey   string
	Lifecycle        continuo.GoalLifecycle
	TerminalReason   string
}

func (in FinishInput) fingerprint() string {
	return fingerprint("update_goal/v1", in.ExpectedRevision, in.Lifecycle, in.TerminalReason)
}

// CreateGoal adds a goal (revision 1, every step pending) to an active
// session. A replay of its key returns the goal as it is now.
func (s *Service) CreateGoal(ctx context.Context, c *continuo.Caller, in NewGoalInput) (*continuo.Goal, bool, error) {
	if err := c.Require(continuo.ScopeSessionsWrite); err != nil {
		return nil, false, err
	}
	if err := checkKey(in.IdempotencyKey); err != nil {
		return nil, false, err
	}
	// The rule first: bad input is refused before anything is read.
	fresh, err := NewGoal(in.Title, in.Objective, in.CompletionConditions, in.Steps)
	if err != nil {
		return nil, false, err
	}
	var out *continuo.Goal
	var replayed bool
	err = s.store.Write(ctx, func(tx store.Tx) error {
		out, replayed = nil, false
		sess, err := s.resolveSession(ctx, tx, c, in.SessionID)
		if err != nil {
			return err
		}
		scope := createGoalScope(sess.ID)
		if id, err := replay(ctx, tx, scope, in.IdempotencyKey, in.fingerprint()); err != nil {
			return err
		} else if id != "" {
			out, err = tx.GoalGet(ctx, id)
			replayed = true
			return err
		}
		if sess.Lifecycle != continuo.LifecycleActive {
			return continuo.Errorf(continuo.CodeSessionClosed, "session %s is closed", continuo.SessionRef(sess.Ref))
		}
		// The session row guards its goals' keys (store's package comment):
		// two creates under one key collide on it, and the second replays.
		prev := sess.Revision
		s.bump(sess)
		if err := tx.SessionUpdate(ctx, sess, prev); err != nil {
			return err
		}
		g := fresh
		g.Steps = append([]continuo.GoalStep(nil), fresh.Steps...)
		g.ID = continuo.NewID(continuo.PrefixGoal, sess.UpdatedAt)
		g.SessionID = sess.ID
		g.UpdatedAt = sess.UpdatedAt
		if err := tx.GoalCreate(ctx, &g); err != nil {
			return err
		}
		if err := remember(ctx, tx, scope, in.IdempotencyKey, in.fingerprint(), g.ID, g.UpdatedAt); err != nil {
			return err
		}
		out = &g
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("create goal in session %s: %w", in.SessionID, err)
	}
	return out, replayed, nil
}

// CheckpointGoal records progress: completed steps and the current step.
// The prior plan, with the summary, goes to the plan history.
func (s *Service) CheckpointGoal(ctx context.Context, c *continuo.Caller, in CheckpointInput) (*continuo.Goal, bool, error) {
	if err := CheckSummary(in.Summary); err != nil {
		return nil, false, err
	}
	return s.mutateGoal(ctx, c, "checkpoint_goal", in.GoalID, in.ExpectedRevision, in.IdempotencyKey, in.fingerprint(), in.Summary,
		func(g continuo.Goal) (continuo.Goal, error) {
			return Checkpoint(g, in.CompletedStepIDs, in.CurrentStepID)
		})
}

// ReviseGoalPlan replaces a goal's plan; the prior plan, with the reason,
// goes to the plan history.
func (s *Service) ReviseGoalPlan(ctx context.Context, c *continuo.Caller, in ReviseInput) (*continuo.Goal, bool, error) {
	if err := CheckReason(in.Reason); err != nil {
		return nil, false, err
	}
	return s.mutateGoal(ctx, c, "revise_goal_plan", in.GoalID, in.ExpectedRevision, in.IdempotencyKey, in.fingerprint(), in.Reason,
		func(g continuo.Goal) (continuo.Goal, error) { return RevisePlan(g, in.Steps) })
}

// UpdateGoal ends a goal: completed (every step completed) or cancelled.
// The plan does not change, so nothing goes to the plan history.
func (s *Service) UpdateGoal(ctx context.Context, c *continuo.Caller, in FinishInput) (*continuo.Goal, bool, error) {
	return s.mutateGoal(ctx, c, "update_goal", in.GoalID, in.ExpectedRevision, in.IdempotencyKey, in.fingerprint(), "",
		func(g continuo.Goal) (continuo.Goal, error) { return Finish(g, in.Lifecycle, in.TerminalReason) })
}

// mutateGoal is every mutation of an existing goal. history, when not "",
// is the reason recorded with the replaced plan.
func (s *Service) mutateGoal(ctx context.Context, c *continuo.Caller, tool, goalID string, expected int64, key, fp, history string,
	rule func(continuo.Goal) (continuo.Goal, error)) (*continuo.Goal, bool, error) {
	if err := c.Require(continuo.ScopeSessionsWrite); err != nil {
		return nil, false, err
	}
	if err := checkKey(key); err != nil {
		return nil, false, err
	}
	if expected < 1 {
		return nil, false, continuo.Invalid("expected_revision", "must be a revision (1 or more), got %d", expected)
	}
	var out *continuo.Goal
	var replayed bool
	err := s.store.Write(ctx, func(tx store.Tx) error {
		out, replayed = nil, false
		g, sess, err := s.goal(ctx, tx, c, goalID)
		if err != nil {
			return err
		}
		scope := goalScope(tool, g.ID)
		// A replay answers before any check: the goal has moved past the
		// revision the original call expected, and may be terminal now.
		if id, err := replay(ctx, tx, scope, key, fp); err != nil {
			return err
		} else if id != "" {
			out, replayed = g, true
			return nil
		}
		if sess.Lifecycle != continuo.LifecycleActive {
			return continuo.Errorf(continuo.CodeSessionClosed, "session %s is closed; its goals no longer change", continuo.SessionRef(sess.Ref))
		}
		if g.Lifecycle.Terminal() {
			// Before the revision: a terminal goal is immutable whatever
			// revision the caller expected, and reobserving will not help.
			return checkActive(*g)
		}
		if err := CheckRevision(*g, expected); err != nil {
			return err
		}
		next, err := rule(*g)
		if err != nil {
			return err
		}
		next.UpdatedAt = s.now()
		if next.UpdatedAt.Before(g.UpdatedAt) { // monotonic across clock steps
			next.UpdatedAt = g.UpdatedAt
		}
		if err := tx.GoalUpdate(ctx, &next, g.Revision); errors.Is(err, store.ErrStale) {
			cur, gerr := tx.GoalGet(ctx, g.ID)
			if gerr != nil {
				return gerr
			}
			return CheckRevision(*cur, expected)
		} else if err != nil {
			return err
		}
		if history != "" {
			if err := tx.GoalPlanAdd(ctx, store.PlanSnapshot{GoalID: g.ID, Revision: g.Revision, Steps: g.Steps,
				CurrentStepID: g.CurrentStepID, Reason: history, ReplacedAt: next.UpdatedAt}); err != nil {
				return err
			}
		}
		if err := remember(ctx, tx, scope, key, fp, g.ID, next.UpdatedAt); err != nil {
			return err
		}
		out = &next
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("%s %s: %w", tool, goalID, err)
	}
	return out, replayed, nil
}

// checkKey checks an idempotency key: every goal mutation takes one.
func checkKey(key string) error {
	if len(key) < 1 || len(key) > 128 {
		return continuo.Invalid("idempotency_key", "must be 1..128 bytes, got %d", len(key)).With("limit", 128)
	}
	return nil
}

// goal loads a goal the caller may see, with its session.
func (s *Service) goal(ctx context.Context, tx store.Tx, c *continuo.Caller, id string) (*continuo.Goal, *continuo.Session, error) {
	if !continuo.ValidID(continuo.PrefixGoal, id) {
		return nil, nil, continuo.Invalid("goal_id", "must be a goal_… id")
	}
	g, err := tx.GoalGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, continuo.NotFound("goal", id)
	} else if err != nil {
		return nil, nil, err
	}
	sess, err := s.resolveSession(ctx, tx, c, g.SessionID)
	if continuo.ErrorCode(err) == continuo.CodeNotFound {
		return nil, nil, continuo.NotFound("goal", id)
	} else if err != nil {
		return nil, nil, err
	}
	return g, sess, nil
}

// PlanView is a replaced plan as get_goal shows it (redacted).
type PlanView struct {
	Revision      int64               `json:"revision"`
	Steps         []continuo.GoalStep `json:"steps"`
	CurrentStepID string              `json:"current_step_id"`
	Reason        string              `json:"reason"`
	ReplacedAt    string              `json:"replaced_at"`
}

// PlanHistory is get_goal's plan_history: the newest replaced plans, at
// most MaxPlanHistory and MaxPlanHistoryBytes of JSON in all.
type PlanHistory struct {
	Snapshots     []PlanView `json:"snapshots"`
	TotalCount    int        `json:"total_count"`
	ReturnedCount int        `json:"returned_count"`
	Truncated     bool       `json:"truncated"`
}

// GetGoal returns a goal and its newest replaced plans, at most limit
// (0..MaxPlanHistory) and MaxPlanHistoryBytes.
func (s *Service) GetGoal(ctx context.Context, c *continuo.Caller, goalID string, limit int) (*continuo.Goal, *PlanHistory, error) {
	if err := c.Require(continuo.ScopeSessionsRead); err != nil {
		return nil, nil, err
	}
	if limit < 0 || limit > MaxPlanHistory {
		return nil, nil, continuo.Invalid("history_limit", "must be 0..%d, got %d", MaxPlanHistory, limit).With("limit", MaxPlanHistory)
	}
	var g *continuo.Goal
	var snaps []store.PlanSnapshot
	var total int
	err := s.store.Read(ctx, func(tx store.Tx) error {
		var err error
		if g, _, err = s.goal(ctx, tx, c, goalID); err != nil {
			return err
		}
		if total, err = tx.GoalPlanCount(ctx, g.ID); err != nil {
			return err
		}
		snaps = nil
		if limit > 0 && total > 0 {
			snaps, err = tx.GoalPlanList(ctx, g.ID, limit)
		}
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("get goal %s: %w", goalID, err)
	}
	h := &PlanHistory{Snapshots: []PlanView{}, TotalCount: total}
	size := 2 // the brackets
	for _, p := range snaps {
		v := snapshotView(p)
		b, err := json.Marshal(v)
		if err != nil {
			return nil, nil, err
		}
		if size+len(b)+1 > MaxPlanHistoryBytes {
			break
		}
		size += len(b) + 1
		h.Snapshots = append(h.Snapshots, v)
	}
	h.ReturnedCount = len(h.Snapshots)
	h.Truncated = h.ReturnedCount < h.TotalCount
	return g, h, nil
}

func snapshotView(p store.PlanSnapshot) PlanView {
	steps := make([]continuo.GoalStep, len(p.Steps))
	for i, st := range p.Steps {
		st.Title, _ = redact.String(st.Title)
		steps[i] = st
	}
	reason, _ := redact.String(p.Reason)
	return PlanView{Revision: p.Revision, Steps: steps, CurrentStepID: p.CurrentStepID, Reason: reason,
		ReplacedAt: p.ReplacedAt.UTC().Format(continuo.TimeFormat)}
}

// GoalQuery is the input of list_goals: a session, or a project (the
// caller group's sessions in it); with both, the project must be the
// session's.
type GoalQuery struct {
	SessionID string
	Project   string
	Lifecycle continuo.GoalLifecycle
}

// MaxGoalList bounds one list_goals answer.
const MaxGoalList = 100

// ListGoals lists goals newest first, at most MaxGoalList; more reports
// whether there were more.
func (s *Service) ListGoals(ctx context.Context, c *continuo.Caller, q GoalQuery) (goals []continuo.Goal, more bool, err error) {
	if err := c.Require(continuo.ScopeSessionsRead); err != nil {
		return nil, false, err
	}
	if q.Lifecycle != "" && !q.Lifecycle.Valid() {
		return nil, false, continuo.Invalid("lifecycle", "unknown lifecycle %q", q.Lifecycle)
	}
	if q.SessionID == "" && q.Project == "" {
		return nil, false, continuo.Invalid("session_id", "give session_id or project")
	}
	err = s.store.Read(ctx, func(tx store.Tx) error {
		p := store.GoalListParams{Lifecycle: q.Lifecycle, Limit: MaxGoalList + 1}
		if q.SessionID != "" {
			sess, proj, err := s.resolveWithProject(ctx, tx, c, q.SessionID)
			if err != nil {
				return err
			}
			if err := checkProject(q.Project, proj); err != nil {
				return err
			}
			p.SessionID = sess.ID
		} else {
			proj, _, err := s.auth.ResolveProject(ctx, tx, c, q.Project, continuo.AccessRead)
			if err != nil {
				return err
			}
			p.GroupID, p.ProjectID = c.GroupID, proj.ID
		}
		var err error
		goals, err = tx.GoalList(ctx, p)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("list goals: %w", err)
	}
	if len(goals) > MaxGoalList {
		goals, more = goals[:MaxGoalList], true
	}
	return goals, more, nil
}

// RedactGoal returns g as a model reads it: every text redacted (title,
// objective, completion conditions, step titles, terminal reason), and
// whether anything was.
func RedactGoal(g continuo.Goal) (continuo.Goal, bool) {
	var r [5]bool
	g.Title, r[0] = redact.String(g.Title)
	g.Objective, r[1] = redact.String(g.Objective)
	g.CompletionConditions, r[2] = redact.Strings(g.CompletionConditions)
	steps := make([]continuo.GoalStep, len(g.Steps))
	for i, st := range g.Steps {
		var red bool
		st.Title, red = redact.String(st.Title)
		r[3] = r[3] || red
		steps[i] = st
	}
	g.Steps = steps
	g.TerminalReason, r[4] = redact.String(g.TerminalReason)
	if g.CompletionConditions == nil {
		g.CompletionConditions = []string{}
	}
	return g, r[0] || r[1] || r[2] || r[3] || r[4]
}
