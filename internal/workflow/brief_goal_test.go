package workflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
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
		if strings.Contains(a, "list_goals(") {
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
		wantNext string // the list_goals next action (several goals only); "" for none
	}{
		{name: "none", mod: func(*Snapshot) {}},
		{name: "one", mod: func(s *Snapshot) { s.Goals = testGoals(1, short) },
			want: `{"items":[{"goal_id":"goal_00000000000000000000000001","title":{"excerpt":"goal 0","truncated":false},"revision":3,` +
				`"current_step":{"id":"b","title":"step b goal 0"},"steps":{"pending":1,"in_progress":1,"completed":1}}],"total":1,"returned":1,"truncated":false}`},
		{name: "no current step", mod: func(s *Snapshot) {
			s.Goals = testGoals(1, short)
			s.Goals[0].CurrentStepID, s.Goals[0].Steps[1].Status = "", continuo.StepPending
		},
			want: `{"items":[{"goal_id":"goal_00000000000000000000000001","title":{"excerpt":"goal 0","truncated":false},"revision":3,` +
				`"steps":{"pending":2,"in_progress":0,"completed":1}}],"total":1,"returned":1,"truncated":false}`},
		{name: "several", mod: func(s *Snapshot) { s.Goals = testGoals(2, short) },
			wantNext: `several active goals: list_goals(session_id="~s3", lifecycle="active")`},
		{name: "more than loaded", mod: func(s *Snapshot) { s.Goals, s.GoalsMore = testGoals(BriefGoals, short), true },
			wantNext: `several active goals: list_goals(session_id="~s3", lifecycle="active")`},
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
			if tc.wantNext == "" && len(acts) != 0 || tc.wantNext != "" && (len(acts) != 1 || acts[0] != tc.wantNext) {
				t.Errorf("goal actions = %q, want %q", acts, tc.wantNext)
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

// With a brief that must be cut hard, the goal section keeps its full form
// through every cut of the contract's order (it is not among them), and is
// shrunk only in the last resort, to one goal (identity, revision, current
// step and counts), then none (goal_context, outside the brief, still names
// it); the same input gives the same bytes.
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
	full := len(lastResort) - 1
	cutAll := shape{open: openFew, rest: full}
	if g := build(sc, cutAll).Goal; g == nil || len(g.Items) != 3 || !g.Truncated || g.Total != BriefGoals {
		t.Fatalf("goal section with every contract cut made = %+v", g)
	}
	one := slices.IndexFunc(lastResort, func(r rest) bool { return r.goals == 1 })
	b := build(sc, shape{rest: one})
	g := b.Goal
	if g == nil || len(g.Items) != 1 || !g.Truncated || g.Total != BriefGoals {
		t.Fatalf("goal section at last resort %d = %+v", one, g)
	}
	it := g.Items[0]
	if it.GoalID != s.Goals[0].ID || !it.Title.Truncated || it.CurrentStep == nil || it.CurrentStep.ID != "b" || !it.CurrentStep.Truncated ||
		it.Steps != (StepCounts{Pending: 1, InProgress: 1, Completed: 1}) {
		t.Errorf("first goal = %+v", it)
	}
	if len(it.Title.Excerpt) > lastResort[one].goalTitle {
		t.Errorf("title excerpt %q", it.Title.Excerpt)
	}
	if acts := goalActions(b); len(acts) != 1 || len(b.NextActions) > maxActions {
		t.Errorf("next actions = %q", b.NextActions)
	}
	if last := build(sc, shape{}); last.Goal != nil {
		t.Errorf("smallest setting: goal = %+v", last.Goal)
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
		len(v.Objective.Excerpt) > goalObjectiveBytes || !strings.HasSuffix(v.Objective.Excerpt, "…") ||
		strings.Contains(v.Title, "sk-abc") || strings.Contains(v.Steps[1].Title, "sk-abc") {
		t.Errorf("goal view = %+v", v)
	}
	// The completion conditions are whole, and redacted.
	s.Goals[0].CompletionConditions = []string{"go test ./... passes", "no API key like sk-abcdefghijklmnopqrstuvwx in the code"}
	if c := goalContext(s).Goal.Conditions; len(c) != 2 || c[0] != "go test ./... passes" || strings.Contains(c[1], "sk-abc") ||
		!strings.HasPrefix(c[1], "no API key like ") {
		t.Errorf("completion conditions = %q", c)
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
