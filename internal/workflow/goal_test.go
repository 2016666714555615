package workflow_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/workflow"
)

func steps(ids ...string) []workflow.GoalStepInput {
	out := make([]workflow.GoalStepInput, len(ids))
	for i, id := range ids {
		out[i] = workflow.GoalStepInput{ID: id, Title: "step " + id}
	}
	return out
}

func strp(s string) *string { return &s }

func (f *fixture) goal(t testing.TB, sid string, key string, ids ...string) *continuo.Goal {
	t.Helper()
	g, replayed, err := f.wf.CreateGoal(f.ctx, f.caller, workflow.NewGoalInput{SessionID: sid, Title: "ship it", Objective: "ship the feature",
		CompletionConditions: []string{"tests pass"}, Steps: steps(ids...), IdempotencyKey: key})
	if err != nil || replayed {
		t.Fatalf("CreateGoal: %v (replayed %v)", err, replayed)
	}
	return g
}

func wantCode(t testing.TB, err error, want continuo.Code) *continuo.Error {
	t.Helper()
	if code(err) != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
	e := continuo.AsError(err)
	return e
}

func TestGoalLifecycle(t *testing.T) { stores.Each(t, testGoalLifecycle) }

// testGoalLifecycle walks a goal through every mutation, checking the
// rules' results come back from the store as they were written.
func testGoalLifecycle(t *testing.T) {
	f := setup(t, "", workflow.Git{})
	sess := f.start(t)
	g := f.goal(t, "~s1", "k-create", "a", "b", "c")
	if g.Revision != 1 || g.Lifecycle != continuo.GoalActive || g.SessionID != sess.ID || g.CurrentStepID != "" {
		t.Fatalf("created %+v", g)
	}
	for _, st := range g.Steps {
		if st.Status != continuo.StepPending {
			t.Fatalf("step %+v not pending", st)
		}
	}
	g, _, err := f.wf.CheckpointGoal(f.ctx, f.caller, workflow.CheckpointInput{GoalID: g.ID, ExpectedRevision: 1, IdempotencyKey: "k1",
		CurrentStepID: strp("a"), Summary: "starting a"})
	if err != nil || g.Revision != 2 || g.CurrentStepID != "a" {
		t.Fatalf("checkpoint 1: %+v %v", g, err)
	}
	g, _, err = f.wf.CheckpointGoal(f.ctx, f.caller, workflow.CheckpointInput{GoalID: g.ID, ExpectedRevision: 2, IdempotencyKey: "k2",
		CompletedStepIDs: []string{"a"}, CurrentStepID: strp("b"), Summary: "a done"})
	if err != nil || g.Revision != 3 || g.CurrentStepID != "b" || g.Steps[0].Status != continuo.StepCompleted {
		t.Fatalf("checkpoint 2: %+v %v", g, err)
	}
	// Revise: drop the current step b, keep a (completed), add d.
	g, _, err = f.wf.ReviseGoalPlan(f.ctx, f.caller, workflow.ReviseInput{GoalID: g.ID, ExpectedRevision: 3, IdempotencyKey: "k3",
		Reason: "b is not needed", Steps: []workflow.GoalStepInput{{ID: "a", Title: "step a"}, {ID: "c", Title: "step c, renamed"}, {ID: "d", Title: "step d"}}})
	if err != nil || g.Revision != 4 || g.CurrentStepID != "" || len(g.Steps) != 3 || g.Steps[2].Status != continuo.StepPending {
		t.Fatalf("revise: %+v %v", g, err)
	}
	if g.CompletionConditions[0] != "tests pass" {
		t.Fatalf("conditions changed: %v", g.CompletionConditions)
	}
	_, _, err = f.wf.UpdateGoal(f.ctx, f.caller, workflow.FinishInput{GoalID: g.ID, ExpectedRevision: 4, IdempotencyKey: "k4",
		Lifecycle: continuo.GoalCompleted, TerminalReason: "done"})
	e := wantCode(t, err, continuo.CodeGoalPlanIncomplete)
	if ids, _ := e.Details["incomplete_step_ids"].([]string); len(ids) != 2 {
		t.Fatalf("details %v", e.Details)
	}
	g, _, err = f.wf.CheckpointGoal(f.ctx, f.caller, workflow.CheckpointInput{GoalID: g.ID, ExpectedRevision: 4, IdempotencyKey: "k5",
		CompletedStepIDs: []string{"c", "d"}, Summary: "all done"})
	if err != nil || g.Revision != 5 {
		t.Fatalf("checkpoint 3: %+v %v", g, err)
	}
	g, _, err = f.wf.UpdateGoal(f.ctx, f.caller, workflow.FinishInput{GoalID: g.ID, ExpectedRevision: 5, IdempotencyKey: "k6",
		Lifecycle: continuo.GoalCompleted, TerminalReason: "done"})
	if err != nil || g.Revision != 6 || g.Lifecycle != continuo.GoalCompleted || g.TerminalReason != "done" {
		t.Fatalf("finish: %+v %v", g, err)
	}
	// Terminal: every change is goal_terminal, whatever the revision.
	for _, rev := range []int64{6, 1} {
		_, _, err = f.wf.CheckpointGoal(f.ctx, f.caller, workflow.CheckpointInput{GoalID: g.ID, ExpectedRevision: rev, IdempotencyKey: "k7",
			Summary: "more"})
		wantCode(t, err, continuo.CodeGoalTerminal)
		_, _, err = f.wf.ReviseGoalPlan(f.ctx, f.caller, workflow.ReviseInput{GoalID: g.ID, ExpectedRevision: rev, IdempotencyKey: "k7",
			Reason: "r", Steps: steps("a")})
		wantCode(t, err, continuo.CodeGoalTerminal)
		_, _, err = f.wf.UpdateGoal(f.ctx, f.caller, workflow.FinishInput{GoalID: g.ID, ExpectedRevision: rev, IdempotencyKey: "k7",
			Lifecycle: continuo.GoalCancelled, TerminalReason: "x"})
		wantCode(t, err, continuo.CodeGoalTerminal)
	}
	got, h, err := f.wf.GetGoal(f.ctx, f.caller, g.ID, 8)
	if err != nil || got.Revision != 6 || got.Lifecycle != continuo.GoalCompleted {
		t.Fatalf("get: %+v %v", got, err)
	}
	// Checkpoints 1, 2, 3 and the revision replaced a plan each; update_goal none.
	if h.TotalCount != 4 || h.ReturnedCount != 4 || h.Truncated || len(h.Snapshots) != 4 {
		t.Fatalf("history %+v", h)
	}
	if s := h.Snapshots[0]; s.Revision != 4 || s.Reason != "all done" {
		t.Fatalf("newest snapshot %+v", s)
	}
	if s := h.Snapshots[1]; s.Revision != 3 || s.Reason != "b is not needed" || len(s.Steps) != 3 || s.CurrentStepID != "b" {
		t.Fatalf("revision's snapshot %+v", s)
	}
	// list_goals: by session (ref or id) and by project, with lifecycles.
	other := f.goal(t, sess.ID, "k-create-2", "x")
	for _, q := range []workflow.GoalQuery{{SessionID: "~s1"}, {Project: "demo"}, {SessionID: sess.ID, Project: "demo"}} {
		gs, more, err := f.wf.ListGoals(f.ctx, f.caller, q)
		if err != nil || more || len(gs) != 2 || gs[0].ID != other.ID || gs[1].ID != g.ID {
			t.Fatalf("ListGoals(%+v) = %d goals, %v", q, len(gs), err)
		}
		q.Lifecycle = continuo.GoalActive
		if gs, _, err := f.wf.ListGoals(f.ctx, f.caller, q); err != nil || len(gs) != 1 || gs[0].ID != other.ID {
			t.Fatalf("ListGoals(%+v) = %d goals, %v", q, len(gs), err)
		}
	}
	_, _, err = f.wf.ListGoals(f.ctx, f.caller, workflow.GoalQuery{})
	wantCode(t, err, continuo.CodeInvalidInput)
	_, _, err = f.wf.ListGoals(f.ctx, f.caller, workflow.GoalQuery{SessionID: "~s1", Project: "nope"})
	wantCode(t, err, continuo.CodeInvalidInput)
	_, _, err = f.wf.ListGoals(f.ctx, f.caller, workflow.GoalQuery{Project: "demo", Lifecycle: "paused"})
	wantCode(t, err, continuo.CodeInvalidInput)
}

func TestGoalErrors(t *testing.T) { stores.Each(t, testGoalErrors) }

// testGoalErrors: every error code the goal tools return, each leaving the
// goal as it was.
func testGoalErrors(t *testing.T) {
	f := setup(t, "", workflow.Git{})
	sess := f.start(t)
	g := f.goal(t, sess.ID, "k", "a", "b")
	unchanged := func() {
		t.Helper()
		got, h, err := f.wf.GetGoal(f.ctx, f.caller, g.ID, 8)
		if err != nil || got.Revision != 1 || h.TotalCount != 0 {
			t.Fatalf("goal changed: %+v %+v %v", got, h, err)
		}
	}
	cp := func(in workflow.CheckpointInput) error {
		if in.GoalID == "" {
			in.GoalID = g.ID
		}
		if in.IdempotencyKey == "" {
			in.IdempotencyKey = "kc"
		}
		if in.Summary == "" {
			in.Summary = "s"
		}
		_, _, err := f.wf.CheckpointGoal(f.ctx, f.caller, in)
		return err
	}
	// Stale revision: revision_conflict with the current revision.
	e := wantCode(t, cp(workflow.CheckpointInput{ExpectedRevision: 2}), continuo.CodeRevisionConflict)
	if e.Details["current_revision"] != int64(1) {
		t.Fatalf("details %v", e.Details)
	}
	// The whole batch is validated: one unknown id refuses the others.
	wantCode(t, cp(workflow.CheckpointInput{ExpectedRevision: 1, CompletedStepIDs: []string{"a", "zz"}}), continuo.CodeInvalidInput)
	wantCode(t, cp(workflow.CheckpointInput{ExpectedRevision: 1, CurrentStepID: strp("zz")}), continuo.CodeInvalidInput)
	wantCode(t, cp(workflow.CheckpointInput{ExpectedRevision: 1, Summary: strings.Repeat("x", 2049)}), continuo.CodeInvalidInput)
	wantCode(t, cp(workflow.CheckpointInput{ExpectedRevision: 0}), continuo.CodeInvalidInput)
	wantCode(t, cp(workflow.CheckpointInput{ExpectedRevision: 1, IdempotencyKey: strings.Repeat("k", 129)}), continuo.CodeInvalidInput)
	wantCode(t, cp(workflow.CheckpointInput{ExpectedRevision: 1, GoalID: "goal_nope"}), continuo.CodeInvalidInput)
	wantCode(t, cp(workflow.CheckpointInput{ExpectedRevision: 1, GoalID: continuo.NewID(continuo.PrefixGoal, g.UpdatedAt)}), continuo.CodeNotFound)
	_, _, err := f.wf.ReviseGoalPlan(f.ctx, f.caller, workflow.ReviseInput{GoalID: g.ID, ExpectedRevision: 1, IdempotencyKey: "kr", Reason: "",
		Steps: steps("a")})
	wantCode(t, err, continuo.CodeInvalidInput)
	_, _, err = f.wf.ReviseGoalPlan(f.ctx, f.caller, workflow.ReviseInput{GoalID: g.ID, ExpectedRevision: 1, IdempotencyKey: "kr", Reason: "r",
		Steps: steps("a", "a")})
	wantCode(t, err, continuo.CodeInvalidInput)
	_, _, err = f.wf.UpdateGoal(f.ctx, f.caller, workflow.FinishInput{GoalID: g.ID, ExpectedRevision: 1, IdempotencyKey: "ku",
		Lifecycle: continuo.GoalActive, TerminalReason: "x"})
	wantCode(t, err, continuo.CodeInvalidInput)
	_, _, err = f.wf.UpdateGoal(f.ctx, f.caller, workflow.FinishInput{GoalID: g.ID, ExpectedRevision: 1, IdempotencyKey: "ku",
		Lifecycle: continuo.GoalCompleted, TerminalReason: "x"})
	wantCode(t, err, continuo.CodeGoalPlanIncomplete)
	_, _, err = f.wf.GetGoal(f.ctx, f.caller, g.ID, 9)
	wantCode(t, err, continuo.CodeInvalidInput)
	// Bad create input: nothing is created.
	for _, in := range []workflow.NewGoalInput{
		{SessionID: sess.ID, Title: "", Objective: "o", Steps: steps("a"), IdempotencyKey: "x"},
		{SessionID: sess.ID, Title: "t", Objective: "o", Steps: nil, IdempotencyKey: "x"},
		{SessionID: sess.ID, Title: "t", Objective: "o", Steps: steps("a"), IdempotencyKey: ""},
		{SessionID: sess.ID, Title: "t", Objective: "o", Steps: steps("bad id"), IdempotencyKey: "x"},
		{SessionID: sess.ID, Title: "t", Objective: "o", CompletionConditions: make([]string, 9), Steps: steps("a"), IdempotencyKey: "x"},
		{SessionID: "ses_bad", Title: "t", Objective: "o", Steps: steps("a"), IdempotencyKey: "x"},
	} {
		_, _, err := f.wf.CreateGoal(f.ctx, f.caller, in)
		wantCode(t, err, continuo.CodeInvalidInput)
	}
	_, _, err = f.wf.CreateGoal(f.ctx, f.caller, workflow.NewGoalInput{SessionID: "~s9", Title: "t", Objective: "o", Steps: steps("a"), IdempotencyKey: "x"})
	wantCode(t, err, continuo.CodeNotFound)
	unchanged()
	if gs, _, err := f.wf.ListGoals(f.ctx, f.caller, workflow.GoalQuery{SessionID: sess.ID}); err != nil || len(gs) != 1 {
		t.Fatalf("goals: %d, %v", len(gs), err)
	}

	// Another group: not_found for everything, by id and by ref.
	bob := f.otherCaller(t, "bob")
	_, _, err = f.wf.GetGoal(f.ctx, bob, g.ID, 8)
	wantCode(t, err, continuo.CodeNotFound)
	_, _, err = f.wf.CheckpointGoal(f.ctx, bob, workflow.CheckpointInput{GoalID: g.ID, ExpectedRevision: 1, IdempotencyKey: "b", Summary: "s"})
	wantCode(t, err, continuo.CodeNotFound)
	_, _, err = f.wf.UpdateGoal(f.ctx, bob, workflow.FinishInput{GoalID: g.ID, ExpectedRevision: 1, IdempotencyKey: "b",
		Lifecycle: continuo.GoalCancelled, TerminalReason: "x"})
	wantCode(t, err, continuo.CodeNotFound)
	_, _, err = f.wf.ListGoals(f.ctx, bob, workflow.GoalQuery{SessionID: sess.ID})
	wantCode(t, err, continuo.CodeNotFound)
	_, _, err = f.wf.ListGoals(f.ctx, bob, workflow.GoalQuery{Project: "demo"})
	wantCode(t, err, continuo.CodeNotFound)
	_, _, err = f.wf.CreateGoal(f.ctx, bob, workflow.NewGoalInput{SessionID: sess.ID, Title: "t", Objective: "o", Steps: steps("a"), IdempotencyKey: "x"})
	wantCode(t, err, continuo.CodeNotFound)
	// A read-only token: forbidden.
	ro := f.otherCaller(t, "alice", continuo.ScopeSessionsRead)
	_, _, err = f.wf.CheckpointGoal(f.ctx, ro, workflow.CheckpointInput{GoalID: g.ID, ExpectedRevision: 1, IdempotencyKey: "b", Summary: "s"})
	wantCode(t, err, continuo.CodeForbidden)
	if _, _, err := f.wf.GetGoal(f.ctx, ro, g.ID, 0); err != nil {
		t.Fatal(err)
	}
	unchanged()

	// A closed session: no new goals, no changes to its goals; reads work.
	if _, _, err := f.wf.CloseSession(f.ctx, f.caller, sess.ID, ""); err != nil {
		t.Fatal(err)
	}
	_, _, err = f.wf.CreateGoal(f.ctx, f.caller, workflow.NewGoalInput{SessionID: sess.ID, Title: "t", Objective: "o", Steps: steps("a"), IdempotencyKey: "x"})
	wantCode(t, err, continuo.CodeSessionClosed)
	wantCode(t, cp(workflow.CheckpointInput{ExpectedRevision: 1}), continuo.CodeSessionClosed)
	unchanged()
}

// otherCaller authenticates a new token of principal (and its group).
func (f *fixture) otherCaller(t testing.TB, principal string, scopes ...continuo.Scope) *continuo.Caller {
	t.Helper()
	if len(scopes) == 0 {
		scopes = []continuo.Scope{continuo.ScopeSessionsRead, continuo.ScopeSessionsWrite}
	}
	tok, err := f.auth.CreateToken(f.ctx, principal, scopes, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.auth.Authenticate(f.ctx, tok.Token)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestGoalIdempotency(t *testing.T) { stores.Each(t, testGoalIdempotency) }

// testGoalIdempotency: the same key and payload replay (nothing changes,
// also through a new Service on the same store); the same key with another
// payload is a conflict; a replay answers even once the goal moved on or
// ended.
func testGoalIdempotency(t *testing.T) {
	f := setup(t, "", workflow.Git{})
	sess := f.start(t)
	in := workflow.NewGoalInput{SessionID: sess.ID, Title: "t", Objective: "o", Steps: steps("a", "b"), IdempotencyKey: "create"}
	g, replayed, err := f.wf.CreateGoal(f.ctx, f.caller, in)
	if err != nil || replayed {
		t.Fatal(err, replayed)
	}
	fresh := workflow.New(f.store, f.auth, nil) // as after a restart
	in.SessionID = "~s1"                        // the same session, named by its ref
	again, replayed, err := fresh.CreateGoal(f.ctx, f.caller, in)
	if err != nil || !replayed || again.ID != g.ID {
		t.Fatalf("replay of create: %v %v %v", again, replayed, err)
	}
	in.Title = "other"
	_, _, err = fresh.CreateGoal(f.ctx, f.caller, in)
	wantCode(t, err, continuo.CodeConflict)
	if gs, _, _ := f.wf.ListGoals(f.ctx, f.caller, workflow.GoalQuery{SessionID: sess.ID}); len(gs) != 1 {
		t.Fatalf("%d goals after replays, want 1", len(gs))
	}

	ck := workflow.CheckpointInput{GoalID: g.ID, ExpectedRevision: 1, IdempotencyKey: "ck", CompletedStepIDs: []string{"a"}, Summary: "a done"}
	g2, replayed, err := f.wf.CheckpointGoal(f.ctx, f.caller, ck)
	if err != nil || replayed || g2.Revision != 2 {
		t.Fatal(err, replayed)
	}
	r, replayed, err := fresh.CheckpointGoal(f.ctx, f.caller, ck)
	if err != nil || !replayed || r.Revision != 2 {
		t.Fatalf("replay of checkpoint: %+v %v %v", r, replayed, err)
	}
	ck2 := ck
	ck2.Summary = "changed"
	_, _, err = fresh.CheckpointGoal(f.ctx, f.caller, ck2)
	wantCode(t, err, continuo.CodeConflict)
	ck2 = ck
	ck2.ExpectedRevision = 2
	_, _, err = fresh.CheckpointGoal(f.ctx, f.caller, ck2)
	wantCode(t, err, continuo.CodeConflict)
	ck2 = ck
	ck2.CurrentStepID = strp("")
	_, _, err = fresh.CheckpointGoal(f.ctx, f.caller, ck2)
	wantCode(t, err, continuo.CodeConflict)

	rv := workflow.ReviseInput{GoalID: g.ID, ExpectedRevision: 2, IdempotencyKey: "rv", Reason: "add c", Steps: steps("a", "b", "c")}
	rv.Steps[0].Title = "step a"
	if _, _, err := f.wf.ReviseGoalPlan(f.ctx, f.caller, rv); err != nil {
		t.Fatal(err)
	}
	fin := workflow.FinishInput{GoalID: g.ID, ExpectedRevision: 3, IdempotencyKey: "fin", Lifecycle: continuo.GoalCancelled, TerminalReason: "no"}
	if _, _, err := f.wf.UpdateGoal(f.ctx, f.caller, fin); err != nil {
		t.Fatal(err)
	}
	// Every earlier key replays against the terminal goal; the goal stays.
	if _, replayed, err := fresh.ReviseGoalPlan(f.ctx, f.caller, rv); err != nil || !replayed {
		t.Fatal(err, replayed)
	}
	if _, replayed, err := fresh.CheckpointGoal(f.ctx, f.caller, ck); err != nil || !replayed {
		t.Fatal(err, replayed)
	}
	if x, replayed, err := fresh.UpdateGoal(f.ctx, f.caller, fin); err != nil || !replayed || x.Revision != 4 {
		t.Fatal(err, replayed)
	}
	fin.Lifecycle = continuo.GoalCompleted
	_, _, err = fresh.UpdateGoal(f.ctx, f.caller, fin)
	wantCode(t, err, continuo.CodeConflict)
	// A key is its tool's: the checkpoint's key on a revision is fresh (and
	// the goal is terminal).
	rv.IdempotencyKey = "ck"
	_, _, err = fresh.ReviseGoalPlan(f.ctx, f.caller, rv)
	wantCode(t, err, continuo.CodeGoalTerminal)
	got, h, err := f.wf.GetGoal(f.ctx, f.caller, g.ID, 8)
	if err != nil || got.Revision != 4 || h.TotalCount != 2 {
		t.Fatalf("after replays: %+v %+v %v", got, h, err)
	}
}

func TestGoalHistoryBounds(t *testing.T) { stores.Each(t, testGoalHistoryBounds) }

// testGoalHistoryBounds: plan_history returns at most history_limit and 8
// snapshots, newest first, within 64 KiB of JSON, and says what it cut.
func testGoalHistoryBounds(t *testing.T) {
	f := setup(t, "", workflow.Git{})
	sess := f.start(t)
	// 32 steps with 200-byte titles, 40 bytes of which JSON writes as
	// \u003c: each snapshot is about 14 KiB, and four fit in 64 KiB.
	var big []workflow.GoalStepInput
	for i := range continuo.MaxGoalSteps {
		big = append(big, workflow.GoalStepInput{ID: fmt.Sprintf("s%02d", i), Title: strings.Repeat("<", 40) + strings.Repeat("t", 150) + fmt.Sprintf("%010d", i)})
	}
	g, _, err := f.wf.CreateGoal(f.ctx, f.caller, workflow.NewGoalInput{SessionID: sess.ID, Title: "t", Objective: "o", Steps: big, IdempotencyKey: "c"})
	if err != nil {
		t.Fatal(err)
	}
	const changes = 11
	for i := range changes {
		g, _, err = f.wf.CheckpointGoal(f.ctx, f.caller, workflow.CheckpointInput{GoalID: g.ID, ExpectedRevision: g.Revision,
			IdempotencyKey: fmt.Sprint("k", i), CurrentStepID: strp(big[i].ID), Summary: fmt.Sprint("moving to ", i)})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, limit := range []int{0, 1, 3, 8} {
		_, h, err := f.wf.GetGoal(f.ctx, f.caller, g.ID, limit)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(h.Snapshots)
		if h.TotalCount != changes || h.ReturnedCount != len(h.Snapshots) || !h.Truncated || len(h.Snapshots) > limit ||
			len(b) > workflow.MaxPlanHistoryBytes {
			t.Fatalf("limit %d: total %d returned %d (%d) truncated %v, %d bytes", limit, h.TotalCount, h.ReturnedCount,
				len(h.Snapshots), h.Truncated, len(b))
		}
		if limit <= 3 && len(h.Snapshots) != limit {
			t.Fatalf("limit %d: %d snapshots", limit, len(h.Snapshots))
		}
		if limit == 8 && len(h.Snapshots) != 4 {
			t.Fatalf("%d snapshots of ~14 KiB in 64 KiB (%d bytes), want 4", len(h.Snapshots), len(b))
		}
		for i, s := range h.Snapshots {
			if want := g.Revision - 1 - int64(i); s.Revision != want {
				t.Fatalf("snapshot %d is of revision %d, want %d (newest first)", i, s.Revision, want)
			}
		}
	}
}

func TestGoalRedacted(t *testing.T) { stores.Each(t, testGoalRedacted) }

// testGoalRedacted: a credential in a goal's texts is stored as given and
// redacted in what a model reads.
func testGoalRedacted(t *testing.T) {
	f := setup(t, "", workflow.Git{})
	sess := f.start(t)
	secret := "sk-proj-abcdefghijklmnopqrstuvwx"
	g, _, err := f.wf.CreateGoal(f.ctx, f.caller, workflow.NewGoalInput{SessionID: sess.ID, Title: "use " + secret, Objective: "API_KEY=" + secret,
		CompletionConditions: []string{"token " + secret}, Steps: []workflow.GoalStepInput{{ID: "a", Title: "with " + secret}}, IdempotencyKey: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err = f.wf.CheckpointGoal(f.ctx, f.caller, workflow.CheckpointInput{GoalID: g.ID, ExpectedRevision: 1, IdempotencyKey: "k",
		Summary: "used Bearer " + secret}); err != nil {
		t.Fatal(err)
	}
	got, h, err := f.wf.GetGoal(f.ctx, f.caller, g.ID, 8)
	if err != nil {
		t.Fatal(err)
	}
	r, red := workflow.RedactGoal(*got)
	b, _ := json.Marshal([]any{r, h})
	if !red || strings.Contains(string(b), "abcdefghijklmnop") {
		t.Fatalf("not redacted (%v): %s", red, b)
	}
}

func TestRaceGoalCheckpoint(t *testing.T) { stores.Each(t, testRaceGoalCheckpoint) }

// testRaceGoalCheckpoint: two checkpoints at the same revision at once:
// exactly one wins, the other is revision_conflict naming the winner's
// revision; 200 trials.
func testRaceGoalCheckpoint(t *testing.T) {
	f := setup(t, "", workflow.Git{})
	sess := f.start(t)
	g := f.goal(t, sess.ID, "c", "a", "b")
	trials := 200
	if testing.Short() {
		trials = 20
	}
	for trial := range trials {
		rev := g.Revision
		var wg sync.WaitGroup
		var res [2]*continuo.Goal
		var errs [2]error
		for i := range 2 {
			wg.Go(func() {
				res[i], _, errs[i] = f.wf.CheckpointGoal(f.ctx, f.caller, workflow.CheckpointInput{GoalID: g.ID, ExpectedRevision: rev,
					IdempotencyKey: fmt.Sprintf("t%d-%d", trial, i), CurrentStepID: strp([]string{"a", "b"}[i]), Summary: fmt.Sprint("racer ", i)})
			})
		}
		wg.Wait()
		wins := 0
		for i := range 2 {
			switch {
			case errs[i] == nil:
				wins++
				g = res[i]
			case code(errs[i]) == continuo.CodeRevisionConflict:
				if cur := continuo.AsError(errs[i]).Details["current_revision"]; cur != rev+1 {
					t.Fatalf("trial %d: current_revision %v, want %d", trial, cur, rev+1)
				}
			default:
				t.Fatalf("trial %d: racer %d: %v", trial, i, errs[i])
			}
		}
		if wins != 1 || g.Revision != rev+1 {
			t.Fatalf("trial %d: %d winners, revision %d (was %d)", trial, wins, g.Revision, rev)
		}
	}
	_, h, err := f.wf.GetGoal(f.ctx, f.caller, g.ID, 0)
	if err != nil || h.TotalCount != trials {
		t.Fatalf("history: %d snapshots, want %d (%v)", h.TotalCount, trials, err)
	}
}
