package workflow

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
)

const (
	pending    = continuo.StepPending
	inProgress = continuo.StepInProgress
	done       = continuo.StepCompleted
)

// fixture is an active goal at revision 5: a completed, b in progress, c
// pending.
func fixture() continuo.Goal {
	return continuo.Goal{
		ID: "goal_test", SessionID: "ses_test", Title: "ship", Objective: "ship it",
		CompletionConditions: []string{"tests pass"},
		Steps: []continuo.GoalStep{
			{ID: "a", Title: "A", Status: done},
			{ID: "b", Title: "B", Status: inProgress},
			{ID: "c", Title: "C", Status: pending},
		},
		CurrentStepID: "b", Revision: 5, Lifecycle: continuo.GoalActive,
	}
}

func terminal(l continuo.GoalLifecycle) continuo.Goal {
	g := fixture()
	g.Lifecycle, g.TerminalReason = l, "over"
	return g
}

// deepCopy is g with slices of its own, to tell later whether g was changed.
func deepCopy(g continuo.Goal) continuo.Goal {
	g.Steps = slices.Clone(g.Steps)
	g.CompletionConditions = slices.Clone(g.CompletionConditions)
	return g
}

func ptr(s string) *string { return &s }

func steps(spec string) []GoalStepInput {
	var out []GoalStepInput
	for _, f := range strings.Fields(spec) {
		id, title, _ := strings.Cut(f, "=")
		out = append(out, GoalStepInput{ID: id, Title: title})
	}
	return out
}

// statuses writes a plan as "a:completed b:pending".
func statuses(g continuo.Goal) string {
	var b strings.Builder
	for i, s := range g.Steps {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%s:%s", s.ID, s.Title, s.Status)
	}
	return b.String()
}

// errCase is the error a case expects: the code, and when set the field and
// step_id details.
type errCase struct {
	code   continuo.Code
	field  string
	stepID string
}

func checkErr(t *testing.T, err error, want errCase) {
	t.Helper()
	var e *continuo.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want %s", err, want.code)
	}
	if e.Code != want.code {
		t.Fatalf("code = %s (%v), want %s", e.Code, err, want.code)
	}
	if want.field != "" && e.Details["field"] != want.field {
		t.Errorf("field = %v, want %s (%v)", e.Details["field"], want.field, err)
	}
	if want.stepID != "" && e.Details["step_id"] != want.stepID {
		t.Errorf("step_id = %v, want %s (%v)", e.Details["step_id"], want.stepID, err)
	}
}

// applyCase runs a table case's op through apply, on in or, when in is
// the zero goal, on the fixture, and checks the error the case wants. It
// returns the new goal and whether the case goes on to check it (it
// wanted no error).
func applyCase(t *testing.T, in continuo.Goal, want errCase, op func(continuo.Goal) (continuo.Goal, error)) (continuo.Goal, bool) {
	t.Helper()
	if in.ID == "" {
		in = fixture()
	}
	out, err := apply(t, in, op)
	if want.code != "" {
		checkErr(t, err, want)
		return out, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return out, true
}

// apply runs op on in and checks what every operation promises: the input
// is unchanged, an error returns the zero goal, a success is revision + 1
// with slices of its own and a current step that follows the statuses.
func apply(t *testing.T, in continuo.Goal, op func(continuo.Goal) (continuo.Goal, error)) (continuo.Goal, error) {
	t.Helper()
	before := deepCopy(in)
	out, err := op(in)
	if !reflect.DeepEqual(in, before) {
		t.Fatalf("the input goal was changed:\n%+v\nwas %+v", in, before)
	}
	if err != nil {
		if !reflect.DeepEqual(out, continuo.Goal{}) {
			t.Fatalf("error %v with a goal %+v", err, out)
		}
		return out, err
	}
	if out.Revision != in.Revision+1 {
		t.Fatalf("revision %d → %d, want +1", in.Revision, out.Revision)
	}
	if len(in.Steps) > 0 && len(out.Steps) > 0 && &in.Steps[0] == &out.Steps[0] {
		t.Fatal("the new goal shares the input's steps")
	}
	if len(in.CompletionConditions) > 0 && &in.CompletionConditions[0] == &out.CompletionConditions[0] {
		t.Fatal("the new goal shares the input's completion conditions")
	}
	if !slices.Equal(in.CompletionConditions, out.CompletionConditions) {
		t.Fatalf("completion conditions %q → %q", in.CompletionConditions, out.CompletionConditions)
	}
	checkInvariants(t, out)
	return out, nil
}

// checkInvariants checks one goal: unique step ids, at most MaxGoalSteps,
// valid statuses, at most one in_progress, and CurrentStepID naming it.
func checkInvariants(t *testing.T, g continuo.Goal) {
	t.Helper()
	if len(g.Steps) > continuo.MaxGoalSteps {
		t.Fatalf("%d steps", len(g.Steps))
	}
	seen := map[string]bool{}
	current := ""
	for _, s := range g.Steps {
		if seen[s.ID] {
			t.Fatalf("step %s twice: %s", s.ID, statuses(g))
		}
		seen[s.ID] = true
		if !s.Status.Valid() {
			t.Fatalf("step %s status %q", s.ID, s.Status)
		}
		if s.Status == inProgress {
			if current != "" {
				t.Fatalf("two steps in progress: %s", statuses(g))
			}
			current = s.ID
		}
	}
	if g.CurrentStepID != current {
		t.Fatalf("current_step_id %q, in progress %q: %s", g.CurrentStepID, current, statuses(g))
	}
}

func TestCheckRevision(t *testing.T) {
	g := fixture()
	if err := CheckRevision(g, 5); err != nil {
		t.Fatal(err)
	}
	for _, stale := range []int64{4, 6, 0, -1} {
		err := CheckRevision(g, stale)
		checkErr(t, err, errCase{code: continuo.CodeRevisionConflict})
		if d := continuo.AsError(err).Details["current_revision"]; d != int64(5) {
			t.Errorf("expected %d: current_revision = %v, want 5", stale, d)
		}
	}
}

func TestNewGoal(t *testing.T) {
	g, err := NewGoal("ship", "ship it", []string{"tests pass", "docs"}, steps("a=A b=B"))
	if err != nil {
		t.Fatal(err)
	}
	if g.Revision != 1 || g.Lifecycle != continuo.GoalActive || g.CurrentStepID != "" ||
		statuses(g) != "a=A:pending b=B:pending" || !slices.Equal(g.CompletionConditions, []string{"tests pass", "docs"}) {
		t.Errorf("new goal = %+v", g)
	}
	if _, err := NewGoal("t", "o", nil, steps("a=A")); err != nil {
		t.Errorf("no completion conditions: %v", err)
	}
	long := func(n int) string { return strings.Repeat("x", n) }
	wide := func(n int) string { return strings.Repeat("é", n/2) } // n bytes of two-byte runes
	if _, err := NewGoal(wide(continuo.MaxGoalTitle), long(continuo.MaxGoalObjective),
		slices.Repeat([]string{long(continuo.MaxGoalCondition)}, continuo.MaxGoalConditions), steps("a=A")); err != nil {
		t.Errorf("at the bounds: %v", err)
	}
	for name, c := range map[string]struct {
		title, objective string
		conditions       []string
		field            string
	}{
		"empty title":     {"", "o", nil, "title"},
		"blank title":     {" \t", "o", nil, "title"},
		"long title":      {long(continuo.MaxGoalTitle + 1), "o", nil, "title"},
		"bad UTF-8 title": {"\xff", "o", nil, "title"},
		"empty objective": {"t", "", nil, "objective"},
		"long objective":  {"t", long(continuo.MaxGoalObjective + 1), nil, "objective"},
		"too many":        {"t", "o", slices.Repeat([]string{"c"}, continuo.MaxGoalConditions+1), "completion_conditions"},
		"long condition":  {"t", "o", []string{"c", long(continuo.MaxGoalCondition + 1)}, "completion_conditions[1]"},
		"empty condition": {"t", "o", []string{""}, "completion_conditions[0]"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewGoal(c.title, c.objective, c.conditions, steps("a=A"))
			checkErr(t, err, errCase{code: continuo.CodeInvalidInput, field: c.field})
		})
	}
	_, err = NewGoal("t", "o", nil, nil)
	checkErr(t, err, errCase{code: continuo.CodeInvalidInput, field: "steps"})
}

func TestNewPlan(t *testing.T) {
	plan, err := NewPlan(steps("a=A b.2=B C_3-x=C"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plan, []continuo.GoalStep{{ID: "a", Title: "A", Status: pending}, {ID: "b.2", Title: "B", Status: pending}, {ID: "C_3-x", Title: "C", Status: pending}}) {
		t.Errorf("plan = %+v", plan)
	}
	full := make([]GoalStepInput, continuo.MaxGoalSteps)
	for i := range full {
		full[i] = GoalStepInput{ID: fmt.Sprint("s", i), Title: "t"}
	}
	full[0] = GoalStepInput{ID: strings.Repeat("i", continuo.MaxGoalStepID), Title: strings.Repeat("t", continuo.MaxGoalStepTitle)}
	if _, err := NewPlan(full); err != nil {
		t.Errorf("%d steps at the bounds: %v", len(full), err)
	}
	for name, c := range map[string]struct {
		in   []GoalStepInput
		want errCase
	}{
		"no steps":       {nil, errCase{continuo.CodeInvalidInput, "steps", ""}},
		"too many steps": {append(slices.Clone(full), GoalStepInput{"x", "X"}), errCase{continuo.CodeInvalidInput, "steps", ""}},
		"duplicate id":   {steps("a=A b=B a=C"), errCase{continuo.CodeInvalidInput, "steps[2].id", "a"}},
		"empty id":       {[]GoalStepInput{{"", "A"}}, errCase{continuo.CodeInvalidInput, "steps[0].id", ""}},
		"long id":        {[]GoalStepInput{{strings.Repeat("i", continuo.MaxGoalStepID+1), "A"}}, errCase{continuo.CodeInvalidInput, "steps[0].id", ""}},
		"space in id":    {[]GoalStepInput{{"a", "A"}, {"b c", "B"}}, errCase{continuo.CodeInvalidInput, "steps[1].id", ""}},
		"slash in id":    {[]GoalStepInput{{"a/b", "A"}}, errCase{continuo.CodeInvalidInput, "steps[0].id", ""}},
		"non-ASCII id":   {[]GoalStepInput{{"é", "A"}}, errCase{continuo.CodeInvalidInput, "steps[0].id", ""}},
		"empty title":    {[]GoalStepInput{{"a", ""}}, errCase{continuo.CodeInvalidInput, "steps[0].title", ""}},
		"blank title":    {[]GoalStepInput{{"a", "  "}}, errCase{continuo.CodeInvalidInput, "steps[0].title", ""}},
		"long title":     {[]GoalStepInput{{"a", strings.Repeat("t", continuo.MaxGoalStepTitle+1)}}, errCase{continuo.CodeInvalidInput, "steps[0].title", ""}},
		"bad UTF-8":      {[]GoalStepInput{{"a", "A\xc3"}}, errCase{continuo.CodeInvalidInput, "steps[0].title", ""}},
	} {
		t.Run(name, func(t *testing.T) {
			plan, err := NewPlan(c.in)
			checkErr(t, err, c.want)
			if plan != nil {
				t.Errorf("plan %+v with an error", plan)
			}
		})
	}
}

func TestCheckpoint(t *testing.T) {
	for name, c := range map[string]struct {
		in        continuo.Goal
		completed []string
		current   *string
		want      string // the plan after, when no error
		err       errCase
	}{
		"complete the current step":          {completed: []string{"b"}, want: "a=A:completed b=B:completed c=C:pending"},
		"complete it and move on":            {completed: []string{"b"}, current: ptr("c"), want: "a=A:completed b=B:completed c=C:in_progress"},
		"complete a pending step":            {completed: []string{"c"}, want: "a=A:completed b=B:in_progress c=C:completed"},
		"switch: the old one goes pending":   {current: ptr("c"), want: "a=A:completed b=B:pending c=C:in_progress"},
		"no step current":                    {current: ptr(""), want: "a=A:completed b=B:pending c=C:pending"},
		"the current step again":             {current: ptr("b"), want: "a=A:completed b=B:in_progress c=C:pending"},
		"a completed step again is inert":    {completed: []string{"a"}, want: "a=A:completed b=B:in_progress c=C:pending"},
		"nothing but a summary":              {want: "a=A:completed b=B:in_progress c=C:pending"},
		"everything":                         {completed: []string{"c", "b", "a"}, current: ptr(""), want: "a=A:completed b=B:completed c=C:completed"},
		"unknown completed id":               {completed: []string{"zz"}, err: errCase{continuo.CodeInvalidInput, "completed_step_ids[0]", "zz"}},
		"one unknown id refuses the batch":   {completed: []string{"b", "c", "zz"}, current: ptr("c"), err: errCase{continuo.CodeInvalidInput, "completed_step_ids[2]", "zz"}},
		"a step listed twice":                {completed: []string{"b", "b"}, err: errCase{continuo.CodeInvalidInput, "completed_step_ids[1]", "b"}},
		"unknown current step":               {completed: []string{"b"}, current: ptr("zz"), err: errCase{continuo.CodeInvalidInput, "current_step_id", "zz"}},
		"a completed step cannot be current": {current: ptr("a"), err: errCase{continuo.CodeInvalidInput, "current_step_id", "a"}},
		"nor one completed in the batch":     {completed: []string{"c"}, current: ptr("c"), err: errCase{continuo.CodeInvalidInput, "current_step_id", "c"}},
		"a completed goal":                   {in: terminal(continuo.GoalCompleted), completed: []string{"b"}, err: errCase{code: continuo.CodeGoalTerminal}},
		"a cancelled goal":                   {in: terminal(continuo.GoalCancelled), err: errCase{code: continuo.CodeGoalTerminal}},
		"terminal before bad input":          {in: terminal(continuo.GoalCancelled), completed: []string{"zz"}, err: errCase{code: continuo.CodeGoalTerminal}},
	} {
		t.Run(name, func(t *testing.T) {
			out, ok := applyCase(t, c.in, c.err, func(g continuo.Goal) (continuo.Goal, error) { return Checkpoint(g, c.completed, c.current) })
			if !ok {
				return
			}
			if got := statuses(out); got != c.want {
				t.Errorf("plan = %s\nwant   %s", got, c.want)
			}
		})
	}
}

func TestRevisePlan(t *testing.T) {
	for name, c := range map[string]struct {
		in    continuo.Goal
		steps string
		want  string
		err   errCase
	}{
		"add a step":                        {steps: "a=A b=B c=C d=D", want: "a=A:completed b=B:in_progress c=C:pending d=D:pending"},
		"reorder, rename the unfinished":    {steps: "c=C2 a=A b=B2", want: "c=C2:pending a=A:completed b=B2:in_progress"},
		"a new id starts pending":           {steps: "a=A b=B x=X", want: "a=A:completed b=B:in_progress x=X:pending"},
		"dropping the current step":         {steps: "a=A c=C", want: "a=A:completed c=C:pending"},
		"the same plan is still a revision": {steps: "a=A b=B c=C", want: "a=A:completed b=B:in_progress c=C:pending"},
		"dropping a completed step":         {steps: "b=B c=C", err: errCase{continuo.CodeInvalidInput, "steps", "a"}},
		"renaming a completed step":         {steps: "b=B a=A2 c=C", err: errCase{continuo.CodeInvalidInput, "steps[1].title", "a"}},
		"a duplicate id":                    {steps: "a=A b=B b=B3", err: errCase{continuo.CodeInvalidInput, "steps[2].id", "b"}},
		"an empty plan":                     {steps: "", err: errCase{continuo.CodeInvalidInput, "steps", ""}},
		"a bad id":                          {steps: "a=A b*=B", err: errCase{continuo.CodeInvalidInput, "steps[1].id", ""}},
		"a terminal goal":                   {in: terminal(continuo.GoalCompleted), steps: "a=A b=B c=C", err: errCase{code: continuo.CodeGoalTerminal}},
		"a cancelled goal, bad plan":        {in: terminal(continuo.GoalCancelled), steps: "", err: errCase{code: continuo.CodeGoalTerminal}},
	} {
		t.Run(name, func(t *testing.T) {
			out, ok := applyCase(t, c.in, c.err, func(g continuo.Goal) (continuo.Goal, error) { return RevisePlan(g, steps(c.steps)) })
			if !ok {
				return
			}
			if got := statuses(out); got != c.want {
				t.Errorf("plan = %s\nwant   %s", got, c.want)
			}
		})
	}
	many := make([]GoalStepInput, continuo.MaxGoalSteps+1)
	for i := range many {
		many[i] = GoalStepInput{ID: fmt.Sprint("s", i), Title: "t"}
	}
	many[0], many[1], many[2] = GoalStepInput{"a", "A"}, GoalStepInput{"b", "B"}, GoalStepInput{"c", "C"}
	_, err := apply(t, fixture(), func(g continuo.Goal) (continuo.Goal, error) { return RevisePlan(g, many) })
	checkErr(t, err, errCase{continuo.CodeInvalidInput, "steps", ""})
	if _, err := apply(t, fixture(), func(g continuo.Goal) (continuo.Goal, error) { return RevisePlan(g, many[:continuo.MaxGoalSteps]) }); err != nil {
		t.Errorf("%d steps: %v", continuo.MaxGoalSteps, err)
	}
}

func TestFinish(t *testing.T) {
	allDone := fixture()
	for i := range allDone.Steps {
		allDone.Steps[i].Status = done
	}
	allDone.CurrentStepID = ""
	for name, c := range map[string]struct {
		in        continuo.Goal
		lifecycle continuo.GoalLifecycle
		reason    string
		want      string
		current   string
		err       errCase
	}{
		"complete":                      {in: allDone, lifecycle: continuo.GoalCompleted, reason: "all done", want: "a=A:completed b=B:completed c=C:completed"},
		"cancel keeps where it stopped": {lifecycle: continuo.GoalCancelled, reason: "no longer needed", want: "a=A:completed b=B:in_progress c=C:pending", current: "b"},
		"cancel a finished plan":        {in: allDone, lifecycle: continuo.GoalCancelled, reason: "r", want: "a=A:completed b=B:completed c=C:completed"},
		"complete with steps open":      {lifecycle: continuo.GoalCompleted, reason: "r", err: errCase{code: continuo.CodeGoalPlanIncomplete}},
		"back to active":                {lifecycle: continuo.GoalActive, reason: "r", err: errCase{continuo.CodeInvalidInput, "lifecycle", ""}},
		"an unknown lifecycle":          {lifecycle: "done", reason: "r", err: errCase{continuo.CodeInvalidInput, "lifecycle", ""}},
		"no reason":                     {lifecycle: continuo.GoalCancelled, err: errCase{continuo.CodeInvalidInput, "terminal_reason", ""}},
		"a long reason":                 {lifecycle: continuo.GoalCancelled, reason: strings.Repeat("r", continuo.MaxGoalTerminalReason+1), err: errCase{continuo.CodeInvalidInput, "terminal_reason", ""}},
		"completed is terminal":         {in: terminal(continuo.GoalCompleted), lifecycle: continuo.GoalCancelled, reason: "r", err: errCase{code: continuo.CodeGoalTerminal}},
		"cancelled is terminal":         {in: terminal(continuo.GoalCancelled), lifecycle: continuo.GoalCompleted, reason: "r", err: errCase{code: continuo.CodeGoalTerminal}},
		"cancelled again":               {in: terminal(continuo.GoalCancelled), lifecycle: continuo.GoalCancelled, reason: "r", err: errCase{code: continuo.CodeGoalTerminal}},
	} {
		t.Run(name, func(t *testing.T) {
			out, ok := applyCase(t, c.in, c.err, func(g continuo.Goal) (continuo.Goal, error) { return Finish(g, c.lifecycle, c.reason) })
			if !ok {
				return
			}
			if got := statuses(out); got != c.want || out.CurrentStepID != c.current {
				t.Errorf("plan = %s, current %q\nwant   %s, current %q", got, out.CurrentStepID, c.want, c.current)
			}
			if out.Lifecycle != c.lifecycle || out.TerminalReason != c.reason {
				t.Errorf("lifecycle %s reason %q", out.Lifecycle, out.TerminalReason)
			}
		})
	}
	_, err := Finish(fixture(), continuo.GoalCompleted, "r")
	if d := continuo.AsError(err).Details["incomplete_step_ids"]; !reflect.DeepEqual(d, []string{"b", "c"}) {
		t.Errorf("incomplete_step_ids = %v, want [b c]", d)
	}
}

// TestGoalCorrupt: a goal whose lifecycle is none of the set is an internal
// error, not a rule a client could satisfy.
func TestGoalCorrupt(t *testing.T) {
	g := fixture()
	g.Lifecycle = "paused"
	for name, op := range map[string]func() (continuo.Goal, error){
		"checkpoint": func() (continuo.Goal, error) { return Checkpoint(g, nil, nil) },
		"revise":     func() (continuo.Goal, error) { return RevisePlan(g, steps("a=A")) },
		"finish":     func() (continuo.Goal, error) { return Finish(g, continuo.GoalCancelled, "r") },
	} {
		if _, err := op(); err == nil || continuo.ErrorCode(err) != continuo.CodeInternal {
			t.Errorf("%s: err = %v, want internal", name, err)
		}
	}
}

func TestSummaryAndReason(t *testing.T) {
	if CheckSummary(strings.Repeat("s", continuo.MaxGoalSummary)) != nil || CheckReason(strings.Repeat("r", continuo.MaxGoalReason)) != nil {
		t.Error("refused at the bound")
	}
	checkErr(t, CheckSummary(""), errCase{continuo.CodeInvalidInput, "summary", ""})
	checkErr(t, CheckSummary(strings.Repeat("s", continuo.MaxGoalSummary+1)), errCase{continuo.CodeInvalidInput, "summary", ""})
	checkErr(t, CheckReason(""), errCase{continuo.CodeInvalidInput, "reason", ""})
	checkErr(t, CheckReason(strings.Repeat("r", continuo.MaxGoalReason+1)), errCase{continuo.CodeInvalidInput, "reason", ""})
}

// TestGoalProperties runs random sequences of checkpoints, revisions and
// finishes, valid and not, and checks after each that nothing the rules
// promise broke: at most one step in progress and current_step_id naming
// it, a completed step never regresses nor loses its title, the revision
// grows by one on success and not at all on error, the input goal is never
// changed, and a terminal goal refuses everything with goal_terminal.
func TestGoalProperties(t *testing.T) {
	pool := []string{"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9"}
	const seeds, ops = 8, 1000
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
		var g continuo.Goal
		// id is mostly a step of g, sometimes another id of the pool, an
		// unknown one or a malformed one.
		id := func() string {
			switch k := r.IntN(20); {
			case k == 0:
				return "bad id"
			case k == 1:
				return "unknown"
			case k < 5 || len(g.Steps) == 0:
				return pool[r.IntN(len(pool))]
			}
			return g.Steps[r.IntN(len(g.Steps))].ID
		}
		title := func() string {
			if r.IntN(40) == 0 {
				return ""
			}
			return fmt.Sprint("T", r.IntN(3))
		}
		// randomPlan mostly keeps the completed steps, as a model would,
		// keeps or renames some others and adds new ids; now and then it
		// drops or renames a completed step, repeats an id or is too long.
		randomPlan := func(g continuo.Goal) []GoalStepInput {
			var out []GoalStepInput
			used := map[string]bool{}
			for _, s := range g.Steps {
				switch {
				case s.Status == done && r.IntN(40) == 0:
				case s.Status == done && r.IntN(40) == 0:
					out = append(out, GoalStepInput{s.ID, "renamed"})
				case s.Status == done:
					out = append(out, GoalStepInput{s.ID, s.Title})
				case r.IntN(4) > 0:
					out = append(out, GoalStepInput{s.ID, title()})
				}
				used[s.ID] = true
			}
			for range r.IntN(4) + 1 {
				p := id()
				if used[p] && r.IntN(10) > 0 {
					continue
				}
				used[p] = true
				out = append(out, GoalStepInput{p, title()})
			}
			if r.IntN(50) == 0 {
				for i := range continuo.MaxGoalSteps + 1 {
					out = append(out, GoalStepInput{fmt.Sprint("x", i), "X"})
				}
			}
			r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
			return out
		}

		successes, failures := 0, 0
		for i := range ops {
			if g.Lifecycle == "" || (g.Lifecycle.Terminal() && r.IntN(4) == 0) {
				var err error
				g = continuo.Goal{}
				for g.Lifecycle == "" {
					g, err = NewGoal("goal", "objective", []string{"c"}, randomPlan(continuo.Goal{}))
					if err != nil {
						g = continuo.Goal{}
					}
				}
				g.ID = fmt.Sprint("goal_", seed, "_", i)
				checkInvariants(t, g)
			}
			var op func(continuo.Goal) (continuo.Goal, error)
			var what string
			switch k := r.IntN(10); {
			case k < 5:
				var completed []string
				for range r.IntN(3) {
					if p := id(); !slices.Contains(completed, p) || r.IntN(10) == 0 {
						completed = append(completed, p)
					}
				}
				var current *string
				switch r.IntN(4) {
				case 0:
					current = ptr("")
				case 1, 2:
					current = ptr(id())
				}
				what = fmt.Sprintf("checkpoint %q %v", completed, current)
				op = func(g continuo.Goal) (continuo.Goal, error) { return Checkpoint(g, completed, current) }
			case k < 9:
				plan := randomPlan(g)
				what = fmt.Sprintf("revise %v", plan)
				op = func(g continuo.Goal) (continuo.Goal, error) { return RevisePlan(g, plan) }
			default:
				l := []continuo.GoalLifecycle{continuo.GoalActive, "bogus", continuo.GoalCompleted, continuo.GoalCompleted, continuo.GoalCancelled}[r.IntN(5)]
				reason := []string{"", strings.Repeat("r", continuo.MaxGoalTerminalReason+1), "why", "why", "why"}[r.IntN(5)]
				what = fmt.Sprintf("finish %s %.8q", l, reason)
				op = func(g continuo.Goal) (continuo.Goal, error) { return Finish(g, l, reason) }
			}

			out, err := apply(t, g, op)
			if g.Lifecycle.Terminal() {
				if continuo.ErrorCode(err) != continuo.CodeGoalTerminal {
					t.Fatalf("seed %d op %d: %s on a %s goal: %v, want goal_terminal", seed, i, what, g.Lifecycle, err)
				}
				failures++
				continue
			}
			if err != nil {
				if c := continuo.ErrorCode(err); c == continuo.CodeInternal || c == continuo.CodeGoalTerminal {
					t.Fatalf("seed %d op %d: %s: %v", seed, i, what, err)
				}
				failures++
				continue
			}
			successes++
			next := stepIndex(out.Steps)
			for _, s := range g.Steps {
				if s.Status != done {
					continue
				}
				j, ok := next[s.ID]
				if !ok || out.Steps[j].Status != done || out.Steps[j].Title != s.Title {
					t.Fatalf("seed %d op %d: %s: completed step %s=%s regressed:\n%s\n→ %s", seed, i, what, s.ID, s.Title, statuses(g), statuses(out))
				}
			}
			if out.Lifecycle.Terminal() && g.Lifecycle.Terminal() {
				t.Fatalf("seed %d op %d: a terminal goal changed", seed, i)
			}
			if out.Lifecycle == continuo.GoalCompleted {
				for _, s := range out.Steps {
					if s.Status != done {
						t.Fatalf("seed %d op %d: completed with step %s %s", seed, i, s.ID, s.Status)
					}
				}
			}
			g = out
		}
		// The sequence must exercise both outcomes, or it tests little.
		if successes < ops/3 || failures < ops/10 {
			t.Errorf("seed %d: %d successes, %d failures", seed, successes, failures)
		}
	}
}
