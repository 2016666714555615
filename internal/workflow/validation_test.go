package workflow_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/run"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/workflow"
)

// validationFixture is a service with runs, a project whose root is a git
// checkout, and checks: "where" prints the directory it runs in, "slow"
// waits until a file appears.
func validationFixture(t *testing.T) (*fixture, string, string) {
	t.Helper()
	root := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "first"}} {
		if out, err := exec.Command("git", append([]string{"-C", root}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	gate := filepath.Join(t.TempDir(), "gate")
	f := setup(t, root, workflow.Git{})
	err := f.store.Write(f.ctx, func(tx store.Tx) error {
		return tx.ProjectSetChecks(f.ctx, f.project.ID, map[string]continuo.Check{
			"where": {Command: []string{"pwd"}},
			"slow":  {Command: []string{"sh", "-c", "while [ ! -e " + gate + " ]; do sleep 0.01; done"}},
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	runs := run.New(f.store, f.auth, run.Options{Key: []byte("k"), Executors: map[continuo.RunKind]run.Executor{continuo.RunValidation: run.Commands{}}})
	if err := runs.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(runs.Close)
	f.wf = workflow.New(f.store, f.auth, &workflow.Options{WorktreeDir: filepath.Join(t.TempDir(), "wt"), Runs: runs})
	f.runs = runs
	return f, root, gate
}

func TestValidationShared(t *testing.T) { stores.Each(t, testValidationShared) }

// Two sessions asking for the same check on the same source while it runs
// share one run, and both record it as evidence; once the source changed,
// a third ask waits queued behind it (never two at once in one checkout).
func testValidationShared(t *testing.T) {
	f, root, gate := validationFixture(t)
	s1, s2 := f.start(t), f.start(t)
	a, err := f.wf.RunValidation(f.ctx, f.caller, s1.ID, "slow", 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.wf.RunValidation(f.ctx, f.caller, continuo.SessionRef(s2.Ref), "slow", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Shared || b.Run.ID != a.Run.ID || a.Shared {
		t.Fatalf("second ask: shared=%v run %s, first %s", b.Shared, b.Run.ID, a.Run.ID)
	}
	if err := os.WriteFile(filepath.Join(root, "new.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := f.wf.RunValidation(f.ctx, f.caller, s1.ID, "slow", 0)
	if err != nil {
		t.Fatal(err)
	}
	if c.Shared || c.Run.ID == a.Run.ID || c.Run.SourceTree == a.Run.SourceTree {
		t.Fatalf("after an edit: %+v", c)
	}
	r, _ := f.runs.Get(f.ctx, f.caller, c.Run.ID)
	if r.State != continuo.RunQueued {
		t.Errorf("the run on the new source is %s while the first runs, want queued", r.State)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{a.Run.ID, c.Run.ID} {
		r, err := f.runs.Wait(f.ctx, f.caller, id, 30*time.Second)
		if err != nil || r.State != continuo.RunSucceeded {
			t.Fatalf("run %s = %+v, %v", id, r, err)
		}
	}
	first, _ := f.runs.Get(f.ctx, f.caller, a.Run.ID)
	second, _ := f.runs.Get(f.ctx, f.caller, c.Run.ID)
	if second.StartedAt.Before(*first.EndedAt) {
		t.Errorf("the queued run started at %v, before the first ended at %v", second.StartedAt, first.EndedAt)
	}
	for _, s := range []*continuo.Session{s1, s2} {
		h, err := f.wf.ReadHandoff(f.ctx, f.caller, s.ID, "", false)
		if err != nil {
			t.Fatal(err)
		}
		var slow workflow.CheckStatus
		for _, cs := range h.Brief.Validation.Checks {
			if cs.Check == "slow" {
				slow = cs
			}
		}
		want := map[int64]string{s1.Ref: workflow.CheckPassed, s2.Ref: workflow.CheckStale}[s.Ref]
		if slow.Status != want {
			t.Errorf("session %d: slow = %+v, want %s", s.Ref, slow, want)
		}
	}
}

func TestValidationWorktree(t *testing.T) { stores.Each(t, testValidationWorktree) }

// A worktree-mode session's check runs in its worktree; a checkout-mode
// session's in the project root; a closed session runs nothing.
func testValidationWorktree(t *testing.T) {
	f, root, _ := validationFixture(t)
	w, err := f.wf.WorkOnProject(f.ctx, f.caller, workflow.WorkOn{Project: "demo", Instruction: "x", Mode: continuo.ModeWorktree})
	if err != nil {
		t.Fatal(err)
	}
	plain := f.start(t)
	for sid, dir := range map[string]string{w.Session.ID: w.Worktree, plain.ID: root} {
		v, err := f.wf.RunValidation(f.ctx, f.caller, sid, "where", 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		o, err := f.runs.Observe(f.ctx, f.caller, v.Run.ID, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		for _, e := range o.Events {
			out.WriteString(e.Text)
		}
		real, _ := filepath.EvalSymlinks(dir)
		if v.Run.State != continuo.RunSucceeded || !strings.Contains(out.String(), real+"\n") {
			t.Errorf("session %s: ran in %q (%s), want %s", sid, out.String(), v.Run.State, real)
		}
	}
	if _, _, err := f.wf.CloseSession(f.ctx, f.caller, plain.ID, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := f.wf.RunValidation(f.ctx, f.caller, plain.ID, "where", 0); code(err) != continuo.CodeSessionClosed {
		t.Errorf("a closed session's check: %v", err)
	}
}
