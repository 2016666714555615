package workflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
)

// testGoals returns n active goals, newest first, each with three steps:
// one completed, one in progress (the current step), one pending.
func testGoals(n int, title func(i int) string) []continuo.Goal {
	out := make([]continuo.Goal, 0, n)
	for i := n - 1; i >= 0; i-- {
		out = append(out, continuo.Goal{ID: fmt.Sprintf("goal_%026d", i+1), SessionID: "ses_00000000000000000000000001",
			Title: title(i), Objective: "objective " + title(i), Revision: int64(3 + i), Lifecycle: continuo.GoalActive,
			Steps: []continuo.GoalStep{{ID: "a", Title: "step a", Status: continuo.StepCompleted},
				{ID: "b", Title: "step b " + title(i), Status: continuo.StepInProgress},
				{ID: "c", Title: "step c", Status: continuo.StepPending}},
			CurrentStepID: "b", UpdatedAt: briefBase})
	}
	return out
}

func goalActions(b *Brief) []string {
	var out []string
	for _, a := range b.NextActions {
		if strings.Contains(a, "get_goal(") {
			out = append(out, a)
		}
	}
	return out
}

func TestBriefGoalSection(t *testing.T) {
	short := func(i int) string { return fmt.Sprintf("goal %d", i) }
	const secret = "sk-abcdefghijklmnopqrstuvwx"
	for _, tc := range []struct {
		name     string
		mod      func(s *Snapshot)
		want     string // the goal section's JSON; "" for none
		wantNext string // the get_goal next action; "" for none
	}{
		{name: "none", mod: func(*Snapshot) {}},
		{name: "one", mod: func(s *Snapshot) { s.Goals = testGoals(1, short) },
			want: `{"items":[{"goal_id":"goal_00000000000000000000000001","title":{"excerpt":"goal 0","truncated":false},"revision":3,` +
				`"current_step":{"id":"b","title":"step b goal 0"},"steps":{"pending":1,"in_progress":1,"completed":1}}],"total":1,"returned":1,"truncated":false}`,
			wantNext: `read the active goal's plan before continuing: get_goal(goal_id="goal_00000000000000000000000001")`},
		{name: "no current step", mod: func(s *Snapshot) {
			s.Goals = testGoals(1, short)
			s.Goals[0].CurrentStepID, s.Goals[0].Steps[1].Status = "", continuo.StepPending
		},
			want: `{"items":[{"goal_id":"goal_00000000000000000000000001","title":{"excerpt":"goal 0","truncated":false},"revision":3,` +
				`"steps":{"pending":2,"in_progress":0,"completed":1}}],"total":1,"returned":1,"truncated":false}`,
			wantNext: `read the active goal's plan before continuing: get_goal(goal_id="goal_00000000000000000000000001")`},
		{name: "several", mod: func(s *Snapshot) { s.Goals = testGoals(2, short) },
			wantNext: `several active goals: read the plan of the one this work serves: get_goal(goal_id="goal_00000000000000000000000002") (newest), list_goals(session_id="~s3", lifecycle="active")`},
		{name: "more than loaded", mod: func(s *Snapshot) { s.Goals, s.GoalsMore = testGoals(BriefGoals, short), true }},
		{name: "redacted", mod: func(s *Snapshot) { s.Goals = testGoals(1, func(int) string { return "deploy with " + secret }) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testSnapshot()
			tc.mod(s)
			b, raw := BuildBrief(s)
			m := decodeBrief(t, raw)
			acts := goalActions(b)
			if len(s.Goals) == 0 {
				if _, ok := m["goal"]; ok || b.Goal != nil || len(acts) != 0 {
					t.Fatalf("no active goal, yet goal = %v, actions %q", m["goal"], acts)
				}
				return
			}
			if b.Goal == nil {
				t.Fatalf("no goal section: %s", raw)
			}
			g := b.Goal
			if g.Total != len(s.Goals) || g.Returned != len(g.Items) || g.Returned != min(3, len(s.Goals)) ||
				g.Truncated != (g.Returned < g.Total || s.GoalsMore) {
				t.Errorf("coverage = total %d returned %d items %d truncated %v", g.Total, g.Returned, len(g.Items), g.Truncated)
			}
			for i, it := range g.Items {
				if it.GoalID != s.Goals[i].ID || it.Revision != s.Goals[i].Revision {
					t.Errorf("item %d = %+v, want goal %s in the snapshot's order", i, it, s.Goals[i].ID)
				}
			}
			if tc.want != "" {
				got, _ := json.Marshal(g)
				if string(got) != tc.want {
					t.Errorf("goal =\n%s\nwant\n%s", got, tc.want)
				}
			}
			if len(acts) != 1 || (tc.wantNext != "" && acts[0] != tc.wantNext) {
				t.Errorf("goal actions = %q, want one %q", acts, tc.wantNext)
			}
			if strings.Contains(string(raw), secret) {
				t.Errorf("secret survives: %s", raw)
			}
			if tc.name == "redacted" && (!g.Items[0].Title.Redacted || g.Items[0].CurrentStep.Title == "") {
				t.Errorf("redacted goal = %+v", g.Items[0])
			}
		})
	}
}

// With a brief that must be cut hard, the goal section keeps its minimal
// form (one goal, its identity, revision, current step and counts) and its
// get_goal action as long as the constraints are whole, and goes before
// they are cut (they are the last thing cut); the same input gives the
// same bytes.
func TestBriefGoalSurvivesCutting(t *testing.T) {
	s := heavySnapshot()
	s.Goals, s.GoalsMore = testGoals(BriefGoals, func(i int) string { return nasty(200) }), true
	for i := range s.Goals {
		s.Goals[i].Steps[1].Title = nasty(200)
	}
	_, raw := BuildBrief(s)
	if len(raw) > MaxBriefBytes {
		t.Fatalf("%d bytes", len(raw))
	}
	if _, again := BuildBrief(s); !bytes.Equal(raw, again) {
		t.Error("two builds differ")
	}
	sc := scrub(s)
	// The last level whose constraints are whole shows the minimal goal.
	minimal := -1
	for i, lv := range briefLevels {
		if lv.constraints == briefLevels[0].constraints {
			minimal = i
		}
	}
	b := build(sc, briefLevels[minimal])
	g := b.Goal
	if g == nil || len(g.Items) != 1 || !g.Truncated || g.Total != BriefGoals {
		t.Fatalf("goal section at level %d = %+v", minimal, g)
	}
	it := g.Items[0]
	if it.GoalID != s.Goals[0].ID || !it.Title.Truncated || it.CurrentStep == nil || it.CurrentStep.ID != "b" || !it.CurrentStep.Truncated ||
		it.Steps != (StepCounts{Pending: 1, InProgress: 1, Completed: 1}) {
		t.Errorf("first goal = %+v", it)
	}
	if len(it.Title.Excerpt) > 120 {
		t.Errorf("title excerpt %q", it.Title.Excerpt)
	}
	if acts := goalActions(b); len(acts) != 1 || len(b.NextActions) > maxActions {
		t.Errorf("next actions = %q", b.NextActions)
	}
	// Past it the goal is gone (goal_context still names it).
	if last := build(sc, briefLevels[len(briefLevels)-1]); last.Goal != nil {
		t.Errorf("smallest level goal = %+v", last.Goal)
	}
	// The goal outlasts the recent progress, and goes before the
	// constraints are cut.
	for i, lv := range briefLevels {
		whole := lv.constraints == briefLevels[0].constraints
		if lv.progress > 0 && lv.goals < 3 || whole && lv.goals < 1 || !whole && lv.goals != 0 {
			t.Errorf("level %d: %+v", i, lv)
		}
	}
}

func TestGoalContext(t *testing.T) {
	short := func(i int) string { return fmt.Sprintf("goal %d", i) }
	s := testSnapshot()
	if gc := goalContext(s); gc != nil {
		t.Fatalf("no goal, goal_context = %+v", gc)
	}
	s.Goals = testGoals(1, func(int) string { return "use sk-abcdefghijklmnopqrstuvwx" })
	s.Goals[0].Objective = strings.Repeat("o", 2000)
	gc := goalContext(s)
	if gc == nil || gc.Status != GoalAvailable || gc.Goal == nil || gc.Candidates != nil || gc.ReasonCode != "" {
		t.Fatalf("one goal: %+v", gc)
	}
	v := gc.Goal
	if v.GoalID != s.Goals[0].ID || v.Revision != 3 || v.CurrentStepID != "b" || len(v.Steps) != 3 || !v.Objective.Truncated ||
		len(v.Objective.Excerpt) != goalObjectiveBytes || strings.Contains(v.Title, "sk-abc") || strings.Contains(v.Steps[1].Title, "sk-abc") {
		t.Errorf("goal view = %+v", v)
	}
	s.Goals, s.GoalsMore = testGoals(BriefGoals, short), true
	gc = goalContext(s)
	if gc.Status != GoalSelectionRequired || gc.ReasonCode != "multiple_active_goals" || gc.Goal != nil || len(gc.Candidates) != BriefGoals || !gc.Truncated {
		t.Fatalf("several goals: %+v", gc)
	}
	if c := gc.Candidates[0]; c.GoalID != s.Goals[0].ID || c.Title != s.Goals[0].Title || c.Revision != s.Goals[0].Revision {
		t.Errorf("first candidate = %+v", c)
	}
}
