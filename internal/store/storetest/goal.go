package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// The Goal section pins store.GoalTx: goals of sessions under a
// revision-guarded update, listed for a session or a group's project, and
// the plans their changes replaced. Completion conditions and steps are
// JSON to the store: nil and empty come back empty and not nil; the
// current step and the terminal reason are "" when there is none.

func goalTests() []test {
	return []test{
		{"CreateGet", testGoalCreateGet},
		{"Empty", testGoalEmpty},
		{"Duplicate", testGoalDuplicate},
		{"Missing", testGoalMissing},
		{"Update", testGoalUpdate},
		{"UpdateStale", testGoalUpdateStale},
		{"UpdateUnknown", testGoalUpdateUnknown},
		{"ListSession", testGoalListSession},
		{"ListGroupProject", testGoalListGroupProject},
		{"ListLifecycle", testGoalListLifecycle},
		{"ListLimitOrder", testGoalListLimitOrder},
		{"ListNeedsScope", testGoalListNeedsScope},
		{"PlanAddList", testGoalPlanAddList},
		{"PlanDuplicate", testGoalPlanDuplicate},
	}
}

// NewGoal returns an active goal of session sessionID at revision 1, with
// two completion conditions and three steps (the first in progress and
// current), updated at Base. It does not touch a store.
func NewGoal(sessionID, title string) *continuo.Goal {
	return &continuo.Goal{
		ID:                   continuo.NewID(continuo.PrefixGoal, Base),
		SessionID:            sessionID,
		Title:                title,
		Objective:            "reach " + title,
		CompletionConditions: []string{"tests pass", `"quoted" ü`},
		Steps: []continuo.GoalStep{
			{ID: "s1", Title: "first", Status: continuo.StepInProgress},
			{ID: "s2", Title: "second", Status: continuo.StepPending},
			{ID: "s.3-x_", Title: "third", Status: continuo.StepPending},
		},
		CurrentStepID: "s1",
		Revision:      1,
		Lifecycle:     continuo.GoalActive,
		UpdatedAt:     Base,
	}
}

// Goal creates a goal (see NewGoal); opts may change it before it is
// created.
func Goal(t testing.TB, s store.Store, sessionID, title string, opts ...func(*continuo.Goal)) *continuo.Goal {
	t.Helper()
	g := NewGoal(sessionID, title)
	for _, o := range opts {
		o(g)
	}
	MustWrite(t, s, func(tx store.Tx) error { return tx.GoalCreate(t.Context(), g) })
	return g
}

func getGoal(t testing.TB, s store.Store, id string) (*continuo.Goal, error) {
	t.Helper()
	return read(t, s, func(tx store.Tx) (*continuo.Goal, error) { return tx.GoalGet(t.Context(), id) })
}

func listGoals(t testing.TB, s store.Store, p store.GoalListParams) []continuo.Goal {
	t.Helper()
	return listOf(t, s, "GoalList", store.Tx.GoalList, p)
}

func goalIDs(gs []continuo.Goal) []string {
	return idsOf(gs, func(g continuo.Goal) string { return g.ID })
}

func normGoal(g continuo.Goal) continuo.Goal {
	g.UpdatedAt = trunc(g.UpdatedAt)
	return g
}

func normPlan(p store.PlanSnapshot) store.PlanSnapshot {
	p.ReplacedAt = trunc(p.ReplacedAt)
	return p
}

func testGoalCreateGet(t *testing.T, s store.Store) {
	f := Setup(t, s, "alpha")
	want := Goal(t, s, f.Session.ID, "ship", func(g *continuo.Goal) { g.UpdatedAt = Base.Add(1500 * time.Microsecond) })
	got, err := getGoal(t, s, want.ID)
	noErr(t, err, "GoalGet")
	same(t, "goal", *got, *want, normGoal)
	if !got.UpdatedAt.Equal(Base.Add(time.Millisecond)) || got.UpdatedAt.Location() != time.UTC {
		t.Errorf("UpdatedAt = %v, want %v in UTC (milliseconds kept)", got.UpdatedAt, Base.Add(time.Millisecond))
	}
	done := Goal(t, s, f.Session.ID, "done", func(g *continuo.Goal) {
		g.Lifecycle, g.TerminalReason, g.CurrentStepID = continuo.GoalCompleted, "all conditions met", ""
		for i := range g.Steps {
			g.Steps[i].Status = continuo.StepCompleted
		}
	})
	got, err = getGoal(t, s, done.ID)
	noErr(t, err, "GoalGet")
	same(t, "completed goal", *got, *done, normGoal)
}

// A goal without conditions or steps reads them back as empty, non-nil
// lists (JSON [] rather than null), with no current step or reason.
func testGoalEmpty(t *testing.T, s store.Store) {
	f := Setup(t, s, "alpha")
	for name, opt := range map[string]func(*continuo.Goal){
		"nil": func(g *continuo.Goal) { g.CompletionConditions, g.Steps, g.CurrentStepID = nil, nil, "" },
		"empty": func(g *continuo.Goal) {
			g.CompletionConditions, g.Steps, g.CurrentStepID = []string{}, []continuo.GoalStep{}, ""
		},
	} {
		g := Goal(t, s, f.Session.ID, name, opt)
		got, err := getGoal(t, s, g.ID)
		noErr(t, err, "GoalGet")
		if got.CompletionConditions == nil || len(got.CompletionConditions) != 0 || got.Steps == nil || len(got.Steps) != 0 {
			t.Errorf("%s: conditions %#v, steps %#v; want empty and not nil", name, got.CompletionConditions, got.Steps)
		}
		if got.CurrentStepID != "" || got.TerminalReason != "" {
			t.Errorf("%s: current step %q, terminal reason %q; want none", name, got.CurrentStepID, got.TerminalReason)
		}
		list := listGoals(t, s, store.GoalListParams{SessionID: f.Session.ID, Limit: 1})
		if len(list) != 1 || list[0].Steps == nil || list[0].CompletionConditions == nil {
			t.Errorf("%s: GoalList = %+v; want the goal with empty, non-nil lists", name, list)
		}
	}
}

// An existing ID is ErrConflict, and the Write that met it keeps nothing.
func testGoalDuplicate(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	g := Goal(t, s, f.Session.ID, "ship")
	other := NewGoal(f.Session.ID, "other")
	dup := NewGoal(f.Session.ID, "again")
	dup.ID = g.ID
	err := s.Write(ctx, func(tx store.Tx) error {
		if err := tx.GoalCreate(ctx, other); err != nil {
			return err
		}
		return tx.GoalCreate(ctx, dup)
	})
	wantErr(t, err, store.ErrConflict, "GoalCreate of an existing ID")
	got, err := getGoal(t, s, g.ID)
	noErr(t, err, "GoalGet")
	same(t, "goal after the refused duplicate", *got, *g, normGoal)
	_, err = getGoal(t, s, other.ID)
	wantErr(t, err, store.ErrNotFound, "GoalGet of a goal created in the failed Write")
}

func testGoalMissing(t *testing.T, s store.Store) {
	_, err := getGoal(t, s, continuo.NewID(continuo.PrefixGoal, Base))
	wantErr(t, err, store.ErrNotFound, "GoalGet of an unknown ID")
}

// GoalUpdate replaces the steps, current step, revision, lifecycle,
// terminal reason and updated_at; the session, title, objective and
// completion conditions stay as created. It must raise the revision.
func testGoalUpdate(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	other := Session(t, s, f.Group.ID, f.Project.ID, "other")
	g := Goal(t, s, f.Session.ID, "ship")
	next := *g
	next.SessionID, next.Title, next.Objective, next.CompletionConditions = other.ID, "renamed", "moved", []string{"other"}
	next.Steps = []continuo.GoalStep{
		{ID: "s1", Title: "first", Status: continuo.StepCompleted},
		{ID: "s4", Title: "inserted", Status: continuo.StepInProgress},
	}
	next.CurrentStepID, next.Revision, next.UpdatedAt = "s4", 2, Base.Add(time.Minute)
	MustWrite(t, s, func(tx store.Tx) error { return tx.GoalUpdate(ctx, &next, 1) })
	want := next
	want.SessionID, want.Title, want.Objective, want.CompletionConditions = g.SessionID, g.Title, g.Objective, g.CompletionConditions
	got, err := getGoal(t, s, g.ID)
	noErr(t, err, "GoalGet")
	same(t, "goal after GoalUpdate", *got, want, normGoal)

	end := want
	end.Steps, end.CurrentStepID = nil, ""
	end.Revision, end.Lifecycle, end.TerminalReason, end.UpdatedAt = 3, continuo.GoalCancelled, "not needed", Base.Add(2*time.Minute)
	MustWrite(t, s, func(tx store.Tx) error { return tx.GoalUpdate(ctx, &end, 2) })
	got, err = getGoal(t, s, g.ID)
	noErr(t, err, "GoalGet")
	end.Steps = []continuo.GoalStep{}
	same(t, "goal after its cancellation", *got, end, normGoal)

	kept := *got
	if err := s.Write(ctx, func(tx store.Tx) error { return tx.GoalUpdate(ctx, &kept, 3) }); err == nil {
		t.Error("GoalUpdate that keeps the revision succeeded")
	}
	if again, _ := getGoal(t, s, g.ID); again == nil || again.Revision != 3 {
		t.Errorf("goal after the refused update: %+v", again)
	}
}

// A guarded update naming a revision the goal has left is ErrStale and
// changes nothing.
func testGoalUpdateStale(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	g := Goal(t, s, f.Session.ID, "ship")
	first := *g
	first.Revision, first.CurrentStepID, first.UpdatedAt = 2, "s2", Base.Add(time.Second)
	MustWrite(t, s, func(tx store.Tx) error { return tx.GoalUpdate(ctx, &first, 1) })
	late := *g
	late.Revision, late.Lifecycle, late.TerminalReason = 2, continuo.GoalCancelled, "late"
	err := s.Write(ctx, func(tx store.Tx) error { return tx.GoalUpdate(ctx, &late, 1) })
	wantErr(t, err, store.ErrStale, "GoalUpdate from revision 1 after revision 2")
	got, err := getGoal(t, s, g.ID)
	noErr(t, err, "GoalGet")
	same(t, "goal after the stale update", *got, first, normGoal)
}

func testGoalUpdateUnknown(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	g := NewGoal(f.Session.ID, "ghost")
	g.Revision = 2
	err := s.Write(ctx, func(tx store.Tx) error { return tx.GoalUpdate(ctx, g, 1) })
	wantErr(t, err, store.ErrNotFound, "GoalUpdate of an unknown goal")
}

// By session: that session's goals only, newest first.
func testGoalListSession(t *testing.T, s store.Store) {
	f := Setup(t, s, "alpha")
	other := Session(t, s, f.Group.ID, f.Project.ID, "other")
	a := Goal(t, s, f.Session.ID, "a")
	Goal(t, s, other.ID, "elsewhere")
	b := Goal(t, s, f.Session.ID, "b", func(g *continuo.Goal) { g.Lifecycle, g.TerminalReason = continuo.GoalCompleted, "done" })
	got := listGoals(t, s, store.GoalListParams{SessionID: f.Session.ID})
	sameList(t, "GoalList by session", got, []continuo.Goal{*b, *a}, normGoal)
	if got := listGoals(t, s, store.GoalListParams{SessionID: continuo.NewID(continuo.PrefixSession, Base)}); len(got) != 0 {
		t.Errorf("GoalList of an unknown session = %v, want none", goalIDs(got))
	}
}

// By group and project: the goals of the group's sessions in that project,
// not of another group's sessions there nor of the group's sessions in
// another project. With a session too, every filter applies.
func testGoalListGroupProject(t *testing.T, s store.Store) {
	f := Setup(t, s, "alpha")
	beta := Group(t, s, "beta")
	Grant(t, s, f.Project.ID, beta.ID, continuo.AccessWrite)
	betaSession := Session(t, s, beta.ID, f.Project.ID, "beta's")
	elsewhere := Project(t, s, "elsewhere")
	Grant(t, s, elsewhere.ID, f.Group.ID, continuo.AccessWrite)
	otherProject := Session(t, s, f.Group.ID, elsewhere.ID, "other project")
	second := Session(t, s, f.Group.ID, f.Project.ID, "second")

	a := Goal(t, s, f.Session.ID, "a")
	Goal(t, s, betaSession.ID, "beta goal")
	Goal(t, s, otherProject.ID, "other project goal")
	b := Goal(t, s, second.ID, "b")
	c := Goal(t, s, f.Session.ID, "c")

	got := listGoals(t, s, store.GoalListParams{GroupID: f.Group.ID, ProjectID: f.Project.ID})
	if want := goalIDs([]continuo.Goal{*c, *b, *a}); !slices.Equal(goalIDs(got), want) {
		t.Errorf("GoalList of alpha in the project = %v, want %v", goalIDs(got), want)
	}
	sameList(t, "GoalList of alpha in the project", got, []continuo.Goal{*c, *b, *a}, normGoal)
	got = listGoals(t, s, store.GoalListParams{GroupID: beta.ID, ProjectID: elsewhere.ID})
	if len(got) != 0 {
		t.Errorf("GoalList of beta in a project it has no session in = %v, want none", goalIDs(got))
	}
	got = listGoals(t, s, store.GoalListParams{SessionID: second.ID, GroupID: f.Group.ID, ProjectID: f.Project.ID})
	if want := []string{b.ID}; !slices.Equal(goalIDs(got), want) {
		t.Errorf("GoalList of a session and its group's project = %v, want %v", goalIDs(got), want)
	}
	got = listGoals(t, s, store.GoalListParams{SessionID: betaSession.ID, GroupID: f.Group.ID, ProjectID: f.Project.ID})
	if len(got) != 0 {
		t.Errorf("GoalList of another group's session within alpha's project = %v, want none", goalIDs(got))
	}
}

func testGoalListLifecycle(t *testing.T, s store.Store) {
	f := Setup(t, s, "alpha")
	terminal := func(l continuo.GoalLifecycle) func(*continuo.Goal) {
		return func(g *continuo.Goal) { g.Lifecycle, g.TerminalReason, g.CurrentStepID = l, "", "" }
	}
	a := Goal(t, s, f.Session.ID, "a")
	done := Goal(t, s, f.Session.ID, "done", terminal(continuo.GoalCompleted))
	dropped := Goal(t, s, f.Session.ID, "dropped", terminal(continuo.GoalCancelled))
	b := Goal(t, s, f.Session.ID, "b")
	want := map[continuo.GoalLifecycle][]string{
		continuo.GoalActive:    {b.ID, a.ID},
		continuo.GoalCompleted: {done.ID},
		continuo.GoalCancelled: {dropped.ID},
		"":                     {b.ID, dropped.ID, done.ID, a.ID},
	}
	for l, ids := range want {
		for _, p := range []store.GoalListParams{
			{SessionID: f.Session.ID, Lifecycle: l},
			{GroupID: f.Group.ID, ProjectID: f.Project.ID, Lifecycle: l},
		} {
			if got := goalIDs(listGoals(t, s, p)); !slices.Equal(got, ids) {
				t.Errorf("GoalList(%+v) = %v, want %v", p, got, ids)
			}
		}
	}
}

// Limit keeps the newest; ≤ 0 is 100.
func testGoalListLimitOrder(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	var all []string
	MustWrite(t, s, func(tx store.Tx) error {
		all = nil
		for i := range 102 {
			g := NewGoal(f.Session.ID, fmt.Sprintf("g%d", i))
			if err := tx.GoalCreate(ctx, g); err != nil {
				return err
			}
			all = append(all, g.ID)
		}
		return nil
	})
	slices.Reverse(all)
	for _, tc := range []struct {
		limit int
		want  []string
	}{{3, all[:3]}, {0, all[:100]}, {-1, all[:100]}, {500, all}} {
		for _, p := range []store.GoalListParams{
			{SessionID: f.Session.ID, Limit: tc.limit},
			{GroupID: f.Group.ID, ProjectID: f.Project.ID, Limit: tc.limit},
		} {
			if got := goalIDs(listGoals(t, s, p)); !slices.Equal(got, tc.want) {
				t.Errorf("GoalList(%+v): %d goals, want the newest %d in ID order descending", p, len(got), len(tc.want))
			}
		}
	}
}

// GoalList is for one session or one group's project: a call with neither
// (or half of a group's project) is an error, not every goal.
func testGoalListNeedsScope(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	Goal(t, s, f.Session.ID, "a")
	for _, p := range []store.GoalListParams{
		{},
		{Lifecycle: continuo.GoalActive},
		{GroupID: f.Group.ID},
		{ProjectID: f.Project.ID},
		{SessionID: f.Session.ID, GroupID: f.Group.ID},
	} {
		_, err := read(t, s, func(tx store.Tx) ([]continuo.Goal, error) { return tx.GoalList(ctx, p) })
		if err == nil {
			t.Errorf("GoalList(%+v) succeeded", p)
		}
	}
}

// Plans list newest first (highest revision), at most limit (≤ 0: 100),
// each goal's own; the count counts them all.
func testGoalPlanAddList(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	g := Goal(t, s, f.Session.ID, "ship")
	other := Goal(t, s, f.Session.ID, "other")
	var want []store.PlanSnapshot
	MustWrite(t, s, func(tx store.Tx) error {
		want = nil
		for rev := int64(1); rev <= 103; rev++ {
			p := store.PlanSnapshot{GoalID: g.ID, Revision: rev, Steps: g.Steps, CurrentStepID: "s1",
				Reason: fmt.Sprintf("revision %d", rev), ReplacedAt: Base.Add(time.Duration(rev) * time.Second)}
			if rev == 2 {
				p.Steps, p.CurrentStepID, p.Reason = nil, "", ""
			}
			if err := tx.GoalPlanAdd(ctx, p); err != nil {
				return err
			}
			if rev == 2 {
				p.Steps = []continuo.GoalStep{}
			}
			want = append(want, p)
		}
		return tx.GoalPlanAdd(ctx, store.PlanSnapshot{GoalID: other.ID, Revision: 1, ReplacedAt: Base})
	})
	slices.Reverse(want)
	plans := func(goalID string, limit int) []store.PlanSnapshot {
		return mustGet(t, s, "GoalPlanList", func(tx store.Tx) ([]store.PlanSnapshot, error) {
			return tx.GoalPlanList(ctx, goalID, limit)
		})
	}
	count := func(goalID string) int {
		return mustGet(t, s, "GoalPlanCount", func(tx store.Tx) (int, error) { return tx.GoalPlanCount(ctx, goalID) })
	}
	sameList(t, "GoalPlanList limit 3", plans(g.ID, 3), want[:3], normPlan)
	sameList(t, "GoalPlanList limit 0", plans(g.ID, 0), want[:100], normPlan)
	sameList(t, "GoalPlanList limit 200", plans(g.ID, 200), want, normPlan)
	if got := plans(g.ID, 200)[101]; got.Steps == nil || len(got.Steps) != 0 {
		t.Errorf("a plan saved without steps reads back steps %#v, want empty and not nil", got.Steps)
	}
	if n := count(g.ID); n != 103 {
		t.Errorf("GoalPlanCount = %d, want 103", n)
	}
	if n := count(other.ID); n != 1 {
		t.Errorf("GoalPlanCount of the other goal = %d, want 1", n)
	}
	unknown := continuo.NewID(continuo.PrefixGoal, Base)
	if got, n := plans(unknown, 5), count(unknown); len(got) != 0 || n != 0 {
		t.Errorf("plans of an unknown goal: %d listed, %d counted; want none", len(got), n)
	}
}

// One goal has one plan per revision: a second is ErrConflict and ends the
// Write with nothing kept.
func testGoalPlanDuplicate(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	g := Goal(t, s, f.Session.ID, "ship")
	p := store.PlanSnapshot{GoalID: g.ID, Revision: 1, Steps: g.Steps, Reason: "first", ReplacedAt: Base}
	MustWrite(t, s, func(tx store.Tx) error { return tx.GoalPlanAdd(ctx, p) })
	err := s.Write(ctx, func(tx store.Tx) error {
		if err := tx.GoalPlanAdd(ctx, store.PlanSnapshot{GoalID: g.ID, Revision: 2, ReplacedAt: Base}); err != nil {
			return err
		}
		return tx.GoalPlanAdd(ctx, store.PlanSnapshot{GoalID: g.ID, Revision: 1, Reason: "again", ReplacedAt: Base})
	})
	wantErr(t, err, store.ErrConflict, "GoalPlanAdd of a revision already saved")
	got := mustGet(t, s, "GoalPlanList", func(tx store.Tx) ([]store.PlanSnapshot, error) { return tx.GoalPlanList(ctx, g.ID, 10) })
	sameList(t, "plans after the refused duplicate", got, []store.PlanSnapshot{p}, normPlan)
}
