package workflow_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/workflow"
	"github.com/continuo-dev/continuo/internal/workspace"
)

func (f *fixture) postP(t testing.TB, p workflow.Post) *continuo.Message {
	t.Helper()
	m, _, err := f.wf.PostMessage(f.ctx, f.caller, p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (f *fixture) brief(t testing.TB, sid string) (*workflow.Brief, []byte) {
	t.Helper()
	h, err := f.wf.ReadHandoff(f.ctx, f.caller, sid, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.BriefJSON) > workflow.MaxBriefBytes {
		t.Fatalf("brief is %d bytes", len(h.BriefJSON))
	}
	return h.Brief, h.BriefJSON
}

var (
	startHead = strings.Repeat("1", 40)
	nowHead   = strings.Repeat("2", 40)
)

// fakeGit is a checkout with two changed files and three commits since the
// session started.
func fakeGit() workflow.Git {
	return workflow.Git{
		Fingerprint: func(string) (string, error) { return "fp", nil },
		Probe: func(context.Context, string, int) (workspace.State, error) {
			return workspace.State{Branch: "main", Head: nowHead, Dirty: true, ChangedTotal: 2,
				Changes: []workspace.Change{{Status: ".M", Path: "main.go"}, {Status: "??", Path: "notes.txt"}}}, nil
		},
		Head: func(context.Context, string) (string, error) { return startHead, nil },
		Since: func(_ context.Context, _, base string, _ int) (workspace.Commits, error) {
			if base != startHead {
				return workspace.Commits{}, fmt.Errorf("base %s", base)
			}
			return workspace.Commits{Count: 3, Subjects: []string{"third", "second", "first"}}, nil
		},
	}
}

// The case: after the important messages, 400 progress notes and
// 50 low-value decisions. The brief still carries every high-priority
// decision in force, every open constraint verbatim, the handoff note, the
// open question and the answered pair, and names the call that returns the
// decisions it cut.
func TestBriefBulk(t *testing.T) { stores.Each(t, testBriefBulk) }

func testBriefBulk(t *testing.T) {
	f := setup(t, "/srv/demo", fakeGit())
	sid := f.start(t).ID
	var high []string
	for i := range 3 {
		high = append(high, f.postP(t, workflow.Post{SessionID: sid, Kind: continuo.KindDecision, Priority: continuo.PriorityHigh,
			Text: fmt.Sprintf("decision %d in force: the wire format is CBOR", i)}).ID)
	}
	old := f.post(t, sid, continuo.KindDecision, "use JSON")
	high = append(high, f.postP(t, workflow.Post{SessionID: sid, Kind: continuo.KindDecision, Priority: continuo.PriorityHigh,
		Text: "use JSON Lines instead", Supersedes: old.ID}).ID)
	long := strings.Repeat("Never push to main. ", 60) + "LAST CONSTRAINT: keep the public API." // 1,237 bytes
	guidance := []*continuo.Message{
		f.postP(t, workflow.Post{SessionID: sid, Kind: continuo.KindGuidance, Text: "no new dependencies"}),
		f.postP(t, workflow.Post{SessionID: sid, Kind: continuo.KindGuidance, Text: long, Priority: continuo.PriorityHigh}),
	}
	handoff := f.postP(t, workflow.Post{SessionID: sid, Kind: continuo.KindProgress, Tags: []string{"handoff"},
		Text: "DONE: parser. IN PROGRESS: printer. NEXT: docs. VERIFY: go test ./..."})
	q := f.post(t, sid, continuo.KindQuestion, "may I rename the package?")
	asked := f.post(t, sid, continuo.KindQuestion, "which port?")
	ans := f.postP(t, workflow.Post{SessionID: sid, Kind: continuo.KindAnswer, Text: "8080", ReplyTo: asked.ID})
	todo := f.postP(t, workflow.Post{SessionID: sid, Kind: continuo.KindTodo, Text: "write the changelog", Priority: continuo.PriorityHigh})
	for i := range 400 {
		f.post(t, sid, continuo.KindProgress, fmt.Sprintf("progress note %d: ran the tests again", i))
	}
	for i := range 50 {
		f.post(t, sid, continuo.KindDecision, fmt.Sprintf("low-value decision %d: name the variable x%d", i, i))
	}

	b, raw := f.brief(t, sid)
	t.Logf("%d bytes: %s", len(raw), raw)
	d := b.Task.Decisions
	var ids []string
	for _, it := range d.Items {
		ids = append(ids, it.MessageID)
	}
	for _, id := range high {
		if !slices.Contains(ids, id) {
			t.Errorf("high-priority decision %s in force is not in the brief: %v", id, ids)
		}
	}
	if slices.Contains(ids, old.ID) || d.Superseded != 1 || d.Total != 54 || !d.Truncated {
		t.Errorf("decisions: %+v", d)
	}
	if d.Items[0].Supersedes != old.ID || d.Items[0].MessageID != high[3] || d.Items[3].MessageID != high[0] {
		t.Errorf("decisions not high first then newest, or supersedes missing: %+v", d.Items[:4])
	}
	c := b.Constraints
	if c.Total != 2 || c.Returned != 2 || c.Truncated || c.Items[0].MessageID != guidance[1].ID || c.Items[0].Text != long ||
		c.Items[1].Text != guidance[0].Text {
		t.Errorf("constraints (high first, verbatim): %+v", c)
	}
	cs := b.Task.CurrentState
	if cs == nil || cs.MessageID != handoff.ID || cs.Text != handoff.Text || !cs.Handoff {
		t.Errorf("current state = %+v, want the handoff note in full", cs)
	}
	for _, it := range b.Task.RecentProgress.Items {
		if it.MessageID == handoff.ID {
			t.Error("the current state is repeated in recent_progress")
		}
	}
	if qs := b.Open.Questions; qs.Total != 1 || len(qs.Items) != 1 || qs.Items[0].MessageID != q.ID || qs.Note != workflow.QuestionsNote {
		t.Errorf("questions = %+v", qs)
	}
	if a := b.Answered; a.Total != 1 || len(a.Items) != 1 || a.Items[0].Question.MessageID != asked.ID ||
		a.Items[0].Answer.MessageID != ans.ID || a.Items[0].Answer.Excerpt != "8080" {
		t.Errorf("answered = %+v", a)
	}
	if call := `read_session_working_set(session_id="~s1")`; b.NextActions[0] != call {
		t.Errorf("next_actions[0] is not %s: %q", call, b.NextActions)
	}
	for _, want := range []string{"ask the user question " + q.ID, "todo " + todo.ID + " (high)", "inspect the 2 uncommitted change(s)"} {
		if !slices.ContainsFunc(b.NextActions, func(a string) bool { return strings.Contains(a, want) }) {
			t.Errorf("next_actions lack %q: %q", want, b.NextActions)
		}
	}
	for _, a := range b.NextActions {
		if strings.HasPrefix(a, "answer") {
			t.Errorf("next action invites the model to answer: %q", a)
		}
	}
	w := b.Workspace
	if w == nil || w.Path != "/srv/demo" || w.Head != nowHead || w.StartHead != startHead || w.Changes == nil ||
		w.Changes.Total != 2 || w.Changes.Items[0] != (workflow.Change{Path: "main.go", Status: ".M"}) ||
		w.SinceStart == nil || w.SinceStart.Count != 3 || !slices.Equal(w.SinceStart.Subjects, []string{"third", "second", "first"}) {
		t.Errorf("workspace = %+v", w)
	}
	if b.Task.LatestInstruction != nil {
		t.Error("latest_instruction repeats the root")
	}
	if bytes.Contains(raw, []byte(`"status":"open"`)) {
		t.Error("items carry status open")
	}
	// The same state gives the same bytes.
	if _, again := f.brief(t, sid); !bytes.Equal(raw, again) {
		t.Fatal("two briefs of one state differ")
	}
}

// A real checkout: the start head is recorded and the brief counts what was
// committed since.
func TestBriefStartHead(t *testing.T) { stores.Each(t, testBriefStartHead) }

func testBriefStartHead(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=T", "-c", "user.email=t@example.com",
			"-c", "commit.gpgsign=false"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("commit", "-q", "--allow-empty", "-m", "base")
	base := git("rev-parse", "HEAD")
	f := setup(t, dir, workflow.Git{})
	s := f.start(t)
	if s.StartHead != base {
		t.Fatalf("start head %q, want %q", s.StartHead, base)
	}
	git("commit", "-q", "--allow-empty", "-m", "one")
	git("commit", "-q", "--allow-empty", "-m", "two")
	b, _ := f.brief(t, s.ID)
	w := b.Workspace
	if w == nil || w.StartHead != base || w.SinceStart == nil || w.SinceStart.Count != 2 ||
		!slices.Equal(w.SinceStart.Subjects, []string{"two", "one"}) || w.Path != dir || *w.Dirty {
		t.Fatalf("workspace = %+v", w)
	}
}

// Random histories: the brief never exceeds its budget, never shows a
// superseded decision as in force, always carries the newest handoff note
// and every high-priority constraint, and is byte-identical for one state.
func TestBriefProperties(t *testing.T) { stores.Each(t, testBriefProperties) }

func testBriefProperties(t *testing.T) {
	kinds := continuo.Kinds()
	prios := continuo.Priorities()
	for seed := range int64(6) {
		r := rand.New(rand.NewSource(seed))
		f := setup(t, "", workflow.Git{})
		sid := f.start(t).ID
		var all []*continuo.Message
		var newestHandoff string
		for range 20 + r.Intn(30) {
			p := workflow.Post{SessionID: sid, Kind: kinds[r.Intn(len(kinds))], Priority: prios[r.Intn(len(prios))],
				Text: strings.Repeat(string(rune('a'+r.Intn(26))), 1+r.Intn(1500))}
			if p.Kind == continuo.KindProgress && r.Intn(3) == 0 {
				p.Tags = []string{continuo.HandoffTag}
			}
			if len(all) > 0 && r.Intn(4) == 0 {
				p.Supersedes = all[r.Intn(len(all))].ID
			}
			if len(all) > 0 && r.Intn(4) == 0 {
				p.ReplyTo = all[r.Intn(len(all))].ID
			}
			m, _, err := f.wf.PostMessage(f.ctx, f.caller, p)
			if code(err) == continuo.CodeConflict { // superseded twice
				continue
			} else if err != nil {
				t.Fatal(err)
			}
			all = append(all, m)
			if m.Handoff() {
				newestHandoff = m.ID
			}
		}
		b, raw := f.brief(t, sid)
		if !json.Valid(raw) {
			t.Fatalf("seed %d: invalid JSON", seed)
		}
		err := f.store.Read(f.ctx, func(tx store.Tx) error {
			for _, it := range b.Task.Decisions.Items {
				m, err := tx.MessageGet(f.ctx, sid, it.MessageID)
				if err != nil {
					return err
				}
				if m.Status != continuo.StatusOpen || m.Kind != continuo.KindDecision {
					t.Errorf("seed %d: %s shown as in force is %s %s", seed, m.ID, m.Kind, m.Status)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if newestHandoff != "" && (b.Task.CurrentState == nil || b.Task.CurrentState.MessageID != newestHandoff) {
			t.Errorf("seed %d: current state %+v, want %s", seed, b.Task.CurrentState, newestHandoff)
		}
		if len(b.NextActions) > 7 {
			t.Errorf("seed %d: %d next actions", seed, len(b.NextActions))
		}
		if _, again := f.brief(t, sid); !bytes.Equal(raw, again) {
			t.Fatalf("seed %d: two briefs of one state differ", seed)
		}
	}
}

// The handoff shows the session's active goals: none ⇒ no goal section and
// no goal_context; one ⇒ available; two ⇒ selection_required; a goal that
// is completed or cancelled disappears.
func TestBriefGoals(t *testing.T) { stores.Each(t, testBriefGoals) }

func testBriefGoals(t *testing.T) {
	f := setup(t, "", workflow.Git{})
	sess := f.start(t)
	other := f.start(t) // its goals are not this session's
	read := func() (*workflow.Handoff, map[string]any) {
		t.Helper()
		h, err := f.wf.ReadHandoff(f.ctx, f.caller, sess.ID, "", false)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(h.BriefJSON, &m); err != nil {
			t.Fatal(err)
		}
		return h, m
	}
	f.goal(t, other.ID, "other", "x")

	h, m := read()
	if _, ok := m["goal"]; ok || h.GoalContext != nil || strings.Contains(string(h.BriefJSON), "get_goal") {
		t.Fatalf("no active goal, yet goal %v, goal_context %+v", m["goal"], h.GoalContext)
	}

	g1 := f.goal(t, sess.ID, "g1", "a", "b")
	g1, _, err := f.wf.CheckpointGoal(f.ctx, f.caller, workflow.CheckpointInput{GoalID: g1.ID, ExpectedRevision: 1, IdempotencyKey: "c1",
		CompletedStepIDs: []string{"a"}, CurrentStepID: strp("b"), Summary: "a done"})
	if err != nil {
		t.Fatal(err)
	}
	h, _ = read()
	if gs := h.Brief.Goal; gs == nil || gs.Total != 1 || len(gs.Items) != 1 || gs.Items[0].GoalID != g1.ID || gs.Items[0].Revision != 2 ||
		gs.Items[0].CurrentStep == nil || gs.Items[0].CurrentStep.ID != "b" || gs.Items[0].Steps != (workflow.StepCounts{InProgress: 1, Completed: 1}) {
		t.Fatalf("one goal: section %+v", h.Brief.Goal)
	}
	if gc := h.GoalContext; gc == nil || gc.Status != workflow.GoalAvailable || gc.Goal == nil || gc.Goal.GoalID != g1.ID ||
		gc.Goal.Objective.Excerpt != "ship the feature" || len(gc.Goal.Steps) != 2 || gc.Goal.CurrentStepID != "b" {
		t.Fatalf("one goal: goal_context %+v", h.GoalContext)
	}
	if gc := h.GoalContext; len(gc.Goal.Conditions) != 1 || gc.Goal.Conditions[0] != "tests pass" {
		t.Errorf("one goal: completion conditions %q", gc.Goal.Conditions)
	}

	g2 := f.goal(t, sess.ID, "g2", "a")
	h, _ = read()
	if gs := h.Brief.Goal; gs == nil || gs.Total != 2 || len(gs.Items) != 2 || gs.Items[0].GoalID != g2.ID || gs.Items[1].GoalID != g1.ID ||
		gs.Items[0].CurrentStep != nil {
		t.Fatalf("two goals: section %+v", h.Brief.Goal)
	}
	gc := h.GoalContext
	if gc == nil || gc.Status != workflow.GoalSelectionRequired || gc.Goal != nil || len(gc.Candidates) != 2 ||
		gc.Candidates[0] != (workflow.GoalCandidate{GoalID: g2.ID, Title: "ship it", Revision: 1}) || gc.Candidates[1].GoalID != g1.ID {
		t.Fatalf("two goals: goal_context %+v", gc)
	}

	// Cancelled, g2 disappears; completed, g1 too.
	if _, _, err := f.wf.UpdateGoal(f.ctx, f.caller, workflow.FinishInput{GoalID: g2.ID, ExpectedRevision: 1, IdempotencyKey: "u2",
		Lifecycle: continuo.GoalCancelled, TerminalReason: "not needed"}); err != nil {
		t.Fatal(err)
	}
	h, _ = read()
	if gc := h.GoalContext; gc == nil || gc.Status != workflow.GoalAvailable || gc.Goal.GoalID != g1.ID || len(h.Brief.Goal.Items) != 1 {
		t.Fatalf("after cancelling: goal_context %+v, section %+v", gc, h.Brief.Goal)
	}
	if _, _, err := f.wf.CheckpointGoal(f.ctx, f.caller, workflow.CheckpointInput{GoalID: g1.ID, ExpectedRevision: 2, IdempotencyKey: "c2",
		CompletedStepIDs: []string{"b"}, Summary: "b done"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.wf.UpdateGoal(f.ctx, f.caller, workflow.FinishInput{GoalID: g1.ID, ExpectedRevision: 3, IdempotencyKey: "u1",
		Lifecycle: continuo.GoalCompleted, TerminalReason: "done"}); err != nil {
		t.Fatal(err)
	}
	h, m = read()
	if _, ok := m["goal"]; ok || h.GoalContext != nil {
		t.Fatalf("every goal finished, yet goal %v, goal_context %+v", m["goal"], h.GoalContext)
	}
}
