package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// goalsFingerprint summarises every goal of a session, with its plan
// history: any write of a goal tool changes it.
func (f *fixture) goalsFingerprint(sessionID string) string {
	f.t.Helper()
	var b strings.Builder
	err := f.db.Read(f.ctx, func(tx store.Tx) error {
		gs, err := tx.GoalList(f.ctx, store.GoalListParams{SessionID: sessionID})
		if err != nil {
			return err
		}
		for _, g := range gs {
			n, err := tx.GoalPlanCount(f.ctx, g.ID)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "%s rev=%d %s %v plans=%d\n", g.ID, g.Revision, g.Lifecycle, g.Steps, n)
		}
		return nil
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return b.String() + f.fingerprint()
}

// goalTools are the goal tools; TestGoalBadInput holds their bad input.
var goalTools = []string{"create_goal", "get_goal", "list_goals", "checkpoint_goal", "revise_goal_plan", "update_goal"}

func stepArgs(ids ...string) []obj {
	out := make([]obj, len(ids))
	for i, id := range ids {
		out[i] = obj{"id": id, "title": "step " + id}
	}
	return out
}

// TestGoalTools: a goal's whole life through the real client, every tool.
func TestGoalTools(t *testing.T) {
	f := newFixture(t)
	c := f.connect(f.token("gia", sessionScopes...))
	pID := f.project("proj", map[string]continuo.Access{"gia": continuo.AccessWrite})
	sID := c.ok("work_on_project", obj{"project": pID, "instruction": "task"}).str("session_id")

	create := obj{"session_id": "~s1", "title": "ship", "objective": "ship it", "completion_conditions": []string{"tests pass"},
		"steps": stepArgs("a", "b"), "idempotency_key": "c1"}
	r := c.ok("create_goal", create)
	gID := r.str("goal", "goal_id")
	if r.Data["replayed"] != false || r.num("goal", "revision") != 1 || r.str("goal", "session_id") != sID || r.str("goal", "lifecycle") != "active" {
		t.Fatalf("create_goal: %v", r.Data)
	}
	if r := c.ok("create_goal", create); r.Data["replayed"] != true || r.str("goal", "goal_id") != gID {
		t.Fatalf("replay: %v", r.Data)
	}
	create["title"] = "other"
	c.fails("create_goal", create, "conflict")

	r = c.ok("checkpoint_goal", obj{"goal_id": gID, "expected_revision": 1, "idempotency_key": "k1", "completed_step_ids": []string{},
		"current_step_id": "a", "summary": "on a"})
	if r.num("goal", "revision") != 2 || r.str("goal", "current_step_id") != "a" {
		t.Fatalf("checkpoint: %v", r.Data)
	}
	stale := c.fails("checkpoint_goal", obj{"goal_id": gID, "expected_revision": 1, "idempotency_key": "k2", "completed_step_ids": []string{"a"},
		"summary": "a done"}, "revision_conflict")
	if stale.details()["current_revision"] != float64(2) {
		t.Fatalf("details: %v", stale.Data)
	}
	r = c.ok("revise_goal_plan", obj{"goal_id": gID, "expected_revision": 2, "idempotency_key": "k3", "reason": "b goes",
		"steps": stepArgs("a", "c")})
	if r.num("goal", "revision") != 3 || r.str("goal", "current_step_id") != "a" {
		t.Fatalf("revise: %v", r.Data)
	}
	// The handoff shows the active goal, in the brief and as goal_context.
	h := c.ok("read_session_handoff", obj{"session_id": sID})
	if h.str("goal_context", "status") != "available" || h.str("goal_context", "goal", "goal_id") != gID ||
		dig(h.Data["handoff_brief"], "goal", "total") != float64(1) {
		t.Fatalf("read_session_handoff with a goal: %v", h.Data)
	}
	c.fails("update_goal", obj{"goal_id": gID, "expected_revision": 3, "idempotency_key": "k4", "lifecycle": "completed",
		"terminal_reason": "done"}, "goal_plan_incomplete")
	r = c.ok("get_goal", obj{"goal_id": gID})
	if r.num("plan_history", "total_count") != 2 || r.num("plan_history", "returned_count") != 2 || r.Data["plan_history"].(obj)["truncated"] != false {
		t.Fatalf("get_goal: %v", r.Data)
	}
	if r := c.ok("get_goal", obj{"goal_id": gID, "history_limit": 1}); r.num("plan_history", "returned_count") != 1 ||
		r.Data["plan_history"].(obj)["truncated"] != true {
		t.Fatalf("get_goal limit 1: %v", r.Data)
	}
	r = c.ok("list_goals", obj{"project": "proj", "lifecycle": "active"})
	if gs := r.Data["goals"].([]any); len(gs) != 1 || dig(gs[0], "steps_total") != float64(2) || dig(gs[0], "revision") != float64(3) {
		t.Fatalf("list_goals: %v", r.Data)
	}
	done := obj{"goal_id": gID, "expected_revision": 3, "idempotency_key": "k5", "lifecycle": "cancelled", "terminal_reason": "dropped"}
	r = c.ok("update_goal", done)
	if r.str("goal", "lifecycle") != "cancelled" || r.str("goal", "terminal_reason") != "dropped" {
		t.Fatalf("update_goal: %v", r.Data)
	}
	if r := c.ok("update_goal", done); r.Data["replayed"] != true {
		t.Fatalf("update_goal replay: %v", r.Data)
	}
	if h := c.ok("read_session_handoff", obj{"session_id": sID}); h.Data["goal_context"] != nil || dig(h.Data["handoff_brief"], "goal") != nil {
		t.Fatalf("read_session_handoff with no active goal: %v", h.Data)
	}
	c.fails("checkpoint_goal", obj{"goal_id": gID, "expected_revision": 4, "idempotency_key": "k6", "completed_step_ids": []string{},
		"summary": "more"}, "goal_terminal")
	if r := c.ok("list_goals", obj{"session_id": sID, "lifecycle": "active"}); len(r.Data["goals"].([]any)) != 0 {
		t.Fatalf("list_goals active: %v", r.Data)
	}

	// Another group sees nothing.
	other := f.connect(f.token("hal", sessionScopes...))
	other.fails("get_goal", obj{"goal_id": gID}, "not_found")
	other.fails("list_goals", obj{"session_id": sID}, "not_found")
	other.fails("update_goal", obj{"goal_id": gID, "expected_revision": 4, "idempotency_key": "x", "lifecycle": "cancelled",
		"terminal_reason": "x"}, "not_found")

	// A credential in a goal's texts is redacted in every result.
	secret := "sk-proj-abcdefghijklmnopqrstuvwx"
	r = c.ok("create_goal", obj{"session_id": sID, "title": "use " + secret, "objective": "API_KEY=" + secret,
		"completion_conditions": []string{secret}, "steps": []obj{{"id": "a", "title": secret}}, "idempotency_key": "c2"})
	g2 := r.str("goal", "goal_id")
	c.ok("checkpoint_goal", obj{"goal_id": g2, "expected_revision": 1, "idempotency_key": "k", "completed_step_ids": []string{},
		"summary": "Bearer " + secret})
	for _, res := range []result{r, c.ok("get_goal", obj{"goal_id": g2}), c.ok("list_goals", obj{"session_id": sID})} {
		if s := mustJSON(t, res.Data) + res.Text; strings.Contains(s, "abcdefghijklmnop") {
			t.Fatalf("secret in a result: %s", s)
		}
	}
}

// TestGoalBadInput: bad input to every goal tool is a structured
// invalid_input naming the field, and writes nothing.
func TestGoalBadInput(t *testing.T) {
	f := newFixture(t)
	c := f.connect(f.token("ivy", sessionScopes...))
	pID := f.project("proj", map[string]continuo.Access{"ivy": continuo.AccessWrite})
	sID := c.ok("work_on_project", obj{"project": pID, "instruction": "task"}).str("session_id")
	gID := c.ok("create_goal", obj{"session_id": sID, "title": "t", "objective": "o", "completion_conditions": []string{},
		"steps": stepArgs("a", "b"), "idempotency_key": "c"}).str("goal", "goal_id")

	create := func(k string, v any) obj {
		a := obj{"session_id": sID, "title": "t", "objective": "o", "completion_conditions": []string{}, "steps": stepArgs("a"), "idempotency_key": "n"}
		if v == nil {
			delete(a, k)
		} else {
			a[k] = v
		}
		return a
	}
	mut := func(base obj) func(k string, v any) obj {
		return func(k string, v any) obj {
			a := obj{"goal_id": gID, "expected_revision": 1, "idempotency_key": "n"}
			for bk, bv := range base {
				a[bk] = bv
			}
			if v == nil {
				delete(a, k)
			} else {
				a[k] = v
			}
			return a
		}
	}
	cp := mut(obj{"completed_step_ids": []string{}, "summary": "s"})
	rv := mut(obj{"reason": "r", "steps": stepArgs("a", "b")})
	up := mut(obj{"lifecycle": "cancelled", "terminal_reason": "r"})
	type bad struct {
		name, tool string
		args       any
		field      string
	}
	steps33 := stepArgs(strings.Split(strings.Repeat("x,", 33), ",")[:33]...)
	cases := []bad{
		{"no session", "create_goal", create("session_id", nil), "session_id"},
		{"bad session", "create_goal", create("session_id", "ses_bad"), "session_id"},
		{"title 201", "create_goal", create("title", strings.Repeat("t", 201)), "title"},
		{"no title", "create_goal", create("title", nil), "title"},
		{"objective 8193", "create_goal", create("objective", strings.Repeat("o", 8193)), "objective"},
		{"9 conditions", "create_goal", create("completion_conditions", make([]string, 9)), "completion_conditions"},
		{"condition 513", "create_goal", create("completion_conditions", []string{strings.Repeat("c", 513)}), "completion_conditions[0]"},
		{"no steps", "create_goal", create("steps", []obj{}), "steps"},
		{"33 steps", "create_goal", create("steps", steps33), "steps"},
		{"step bad id", "create_goal", create("steps", []obj{{"id": "a b", "title": "t"}}), "steps[0].id"},
		{"step dup id", "create_goal", create("steps", stepArgs("a", "a")), "steps[1].id"},
		{"step extra field", "create_goal", create("steps", []obj{{"id": "a", "title": "t", "status": "completed"}}), "steps[0].status"},
		{"step title 201", "create_goal", create("steps", []obj{{"id": "a", "title": strings.Repeat("t", 201)}}), "steps[0].title"},
		{"no key", "create_goal", create("idempotency_key", nil), "idempotency_key"},
		{"key 129", "create_goal", create("idempotency_key", strings.Repeat("k", 129)), "idempotency_key"},
		{"unknown arg", "create_goal", create("bogus", 1), "bogus"},
		{"no goal", "get_goal", obj{}, "goal_id"},
		{"bad goal", "get_goal", obj{"goal_id": "ses_x"}, "goal_id"},
		{"history 9", "get_goal", obj{"goal_id": gID, "history_limit": 9}, "history_limit"},
		{"history -1", "get_goal", obj{"goal_id": gID, "history_limit": -1}, "history_limit"},
		{"neither", "list_goals", obj{}, "session_id"},
		{"lifecycle", "list_goals", obj{"session_id": sID, "lifecycle": "open"}, "lifecycle"},
		{"no revision", "checkpoint_goal", cp("expected_revision", nil), "expected_revision"},
		{"revision 0", "checkpoint_goal", cp("expected_revision", 0), "expected_revision"},
		{"revision string", "checkpoint_goal", cp("expected_revision", "1"), "expected_revision"},
		{"no key", "checkpoint_goal", cp("idempotency_key", nil), "idempotency_key"},
		{"no summary", "checkpoint_goal", cp("summary", nil), "summary"},
		{"summary 2049", "checkpoint_goal", cp("summary", strings.Repeat("s", 2049)), "summary"},
		{"unknown step", "checkpoint_goal", cp("completed_step_ids", []string{"a", "zz"}), "completed_step_ids[1]"},
		{"unknown current", "checkpoint_goal", cp("current_step_id", "zz"), "current_step_id"},
		{"33 ids", "checkpoint_goal", cp("completed_step_ids", make([]string, 33)), "completed_step_ids"},
		{"no reason", "revise_goal_plan", rv("reason", nil), "reason"},
		{"reason 1025", "revise_goal_plan", rv("reason", strings.Repeat("r", 1025)), "reason"},
		{"no steps", "revise_goal_plan", rv("steps", nil), "steps"},
		{"dup steps", "revise_goal_plan", rv("steps", stepArgs("a", "a")), "steps[1].id"},
		{"lifecycle active", "update_goal", up("lifecycle", "active"), "lifecycle"},
		{"no lifecycle", "update_goal", up("lifecycle", nil), "lifecycle"},
		{"no reason", "update_goal", up("terminal_reason", nil), "terminal_reason"},
		{"reason 1025", "update_goal", up("terminal_reason", strings.Repeat("r", 1025)), "terminal_reason"},
		{"array", "update_goal", json.RawMessage(`[1]`), ""},
	}
	for _, tool := range goalTools {
		if !slices.ContainsFunc(cases, func(b bad) bool { return b.tool == tool }) {
			t.Errorf("no bad input for %s", tool)
		}
	}
	before := f.goalsFingerprint(sID)
	for _, bc := range cases {
		t.Run(bc.tool+"/"+bc.name, func(t *testing.T) {
			r := c.at(t).fails(bc.tool, bc.args, "invalid_input")
			if bc.field != "" && r.details()["field"] != bc.field {
				t.Fatalf("details.field = %v, want %q (%v)", r.details()["field"], bc.field, r.Data)
			}
			if after := f.goalsFingerprint(sID); after != before {
				t.Fatalf("a rejected call wrote:\n%s\n→\n%s", before, after)
			}
		})
	}
}
