package continuo

import (
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// TestGoalJSON pins a goal's field names to CONTRACT.md §5: terminal_reason
// only when set, every other field always.
func TestGoalJSON(t *testing.T) {
	keys := func(g Goal) []string {
		raw, err := json.Marshal(g)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	g := Goal{ID: "goal_x", Steps: []GoalStep{{ID: "a", Title: "A", Status: StepPending}}, UpdatedAt: time.Unix(0, 0)}
	want := []string{"completion_conditions", "current_step_id", "goal_id", "lifecycle", "objective", "revision",
		"session_id", "steps", "title", "updated_at"}
	if got := keys(g); !slices.Equal(got, want) {
		t.Errorf("goal keys = %v\nwant %v", got, want)
	}
	g.TerminalReason = "done"
	if got := keys(g); !slices.Contains(got, "terminal_reason") {
		t.Errorf("goal keys = %v: no terminal_reason", got)
	}
	raw, _ := json.Marshal(g.Steps[0])
	if string(raw) != `{"id":"a","title":"A","status":"pending"}` {
		t.Errorf("step = %s", raw)
	}
}
