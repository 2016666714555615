package workflow

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/continuo-dev/continuo"
)

// WorkingSetCall is the exact read_session_working_set call of a session:
// next_actions[0] whenever the brief cut anything the working set holds.
func WorkingSetCall(ref string) string {
	return fmt.Sprintf("read_session_working_set(session_id=%q)", ref)
}

// cutInForce reports whether the brief left out anything the working set
// holds: an instruction, the current state, a constraint, a decision, an
// answered pair, open work, a goal, a changed path or a commit subject.
// Older progress is not in force, so its cut does not count.
func cutInForce(b *Brief) bool {
	t := &b.Task
	cut := t.RootInstruction.Truncated || t.LatestInstruction != nil && t.LatestInstruction.Truncated ||
		t.CurrentState != nil && t.CurrentState.Truncated || t.Decisions.Truncated ||
		b.Constraints.Truncated || b.Answered.Truncated ||
		b.Open.Todos.Truncated || b.Open.Risks.Truncated || b.Open.Questions.Truncated ||
		b.Goal != nil && b.Goal.Truncated
	if w := b.Workspace; w != nil {
		cut = cut || w.Changes != nil && w.Changes.Truncated || w.SinceStart != nil && len(w.SinceStart.Subjects) < w.SinceStart.Count
	}
	return cut
}

// nextActions derives at most maxActions hints from fixed templates, most
// important first, each naming the exact id, check or call. Whenever the
// brief cut something in force, the first is the working-set call.
func nextActions(b *Brief) []string {
	out := []string{}
	add := func(format string, args ...any) {
		if len(out) < maxActions {
			out = append(out, fmt.Sprintf(format, args...))
		}
	}
	ref := b.Session.SessionRef
	if cutInForce(b) {
		add("%s", WorkingSetCall(ref))
	}
	if b.Session.Lifecycle == string(continuo.LifecycleClosed) {
		add("session closed: read it for context; continue in a new session (work_on_project)")
	}
	if !b.Basis.Complete {
		add("re-read before relying on it: read_session_handoff(session_id=%q) (%s)", ref, strings.Join(b.Basis.Reasons, ", "))
	}
	if q := b.Open.Questions.Items; len(q) > 0 {
		add("ask the user question %s (%d open); do not answer it yourself", q[0].MessageID, b.Open.Questions.Total)
	}
	if g := b.Goal; g != nil && (g.Returned > 1 || g.Truncated) {
		add("several active goals: list_goals(session_id=%q, lifecycle=\"active\")", ref)
	}
	if w := b.Workspace; w != nil && w.Dirty != nil && *w.Dirty {
		n := 0
		if w.Changes != nil {
			n = w.Changes.Total
		}
		add("inspect the %d uncommitted change(s) before editing: git status, git diff", n)
	}
	// The checks that need a run, worst first (failed, stale, running,
	// not_run), at most maxCheckActions.
	checks := slices.Clone(b.Validation.Checks)
	slices.SortStableFunc(checks, func(x, y CheckStatus) int { return checkRank[x.Status] - checkRank[y.Status] })
	var runs []string
	for _, cs := range checks[:min(maxCheckActions, len(checks))] {
		switch {
		case cs.Status == CheckPassed:
		case cs.Status == CheckRunning:
			runs = append(runs, fmt.Sprintf("observe_run(run_id=%q) (%s running)", cs.RunID, cs.Check))
		case b.Session.Lifecycle == string(continuo.LifecycleActive):
			runs = append(runs, fmt.Sprintf("run_validation(session_id=%q, check=%q) (%s)", ref, cs.Check, cs.Status))
		}
	}
	if len(runs) > 0 {
		add("%s", strings.Join(runs, "; "))
	}
	if ws := openWork(b); ws != "" {
		add("open work by priority: %s", ws)
	}
	if b.Task.RecentProgress.Truncated {
		add("older progress: list_session_messages(session_id=%q, kinds=[\"progress\"])", ref)
	}
	return out
}

// openWork names the first three open risks and todos by priority (risks
// first at equal priority), "" without any.
func openWork(b *Brief) string {
	type work struct {
		kind string
		it   Item
		rank int
	}
	var ws []work
	for _, it := range b.Open.Risks.Items {
		ws = append(ws, work{"risk", it, continuo.Priority(orNormal(it.Priority)).Rank()*2 + 1})
	}
	for _, it := range b.Open.Todos.Items {
		ws = append(ws, work{"todo", it, continuo.Priority(orNormal(it.Priority)).Rank() * 2})
	}
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].rank > ws[j].rank })
	parts := make([]string, 0, 3)
	for _, w := range ws[:min(3, len(ws))] {
		p := w.kind + " " + w.it.MessageID
		if w.it.Priority != "" {
			p += " (" + w.it.Priority + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

func orNormal(p string) string {
	if p == "" {
		return string(continuo.PriorityNormal)
	}
	return p
}
