package mcpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/workflow"
	"github.com/continuo-dev/continuo/internal/workspace"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The source fingerprint of run_validation is bounded (issue 23): a huge
// untracked file is taken by stat and the run says so; a fingerprint over
// its budget is a structured error; and nothing waits behind a
// fingerprint in progress.

// hugeFile makes a sparse file of 8 GiB (it occupies no disk).
func hugeFile(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 8<<30); err != nil {
		t.Fatal(err)
	}
}

// TestRunValidationHugeFile: with a sparse 8 GiB untracked file in the
// checkout, run_validation answers, and the run's source lists the file as
// fingerprinted by size and modification time (it was not read), in the
// answer and whenever the run is read again.
func TestRunValidationHugeFile(t *testing.T) {
	f := newFixture(t)
	c := f.connect(f.token("rae", continuo.ScopeSessionsRead, continuo.ScopeSessionsWrite, continuo.ScopeProjectWrite, continuo.ScopeRuntimeRead))
	pID, root := f.checkedProject("proj", "rae", map[string]continuo.Check{"test": {Command: []string{"true"}}})
	hugeFile(t, filepath.Join(root, "dump", "core.bin"))
	sID := c.ok("work_on_project", obj{"project": pID, "instruction": "task"}).str("session_id")

	start := time.Now()
	r := c.ok("run_validation", obj{"session_id": sID, "check": "test"})
	t.Logf("run_validation with an 8 GiB untracked file: %v", time.Since(start))
	byStat := func(r result) {
		t.Helper()
		bs, _ := dig(r.Data, "run", "source", "by_stat").(map[string]any)
		paths, _ := bs["paths"].([]any)
		if bs["total"] != float64(1) || len(paths) != 1 || paths[0] != "dump/core.bin" {
			t.Fatalf("run.source = %v, want by_stat naming dump/core.bin", dig(r.Data, "run", "source"))
		}
	}
	byStat(r)
	byStat(c.ok("observe_run", obj{"run_id": r.str("run", "run_id")}))

	// Without the file, every file is read: no by_stat.
	if err := os.RemoveAll(filepath.Join(root, "dump")); err != nil {
		t.Fatal(err)
	}
	r = c.ok("run_validation", obj{"session_id": sID, "check": "test", "wait_secs": 30})
	if bs := dig(r.Data, "run", "source", "by_stat"); bs != nil {
		t.Errorf("by_stat %v without a large file", bs)
	}
}

// TestRunValidationOverBudget: a fingerprint that did not end within its
// budget refuses the run with invalid_state (reason fingerprint_budget)
// and writes nothing.
func TestRunValidationOverBudget(t *testing.T) {
	f := newFixtureWith(t, fixtureOptions{git: workflow.Git{Source: func(context.Context, string) (workspace.Source, error) {
		return workspace.Source{}, &workspace.BudgetError{Budget: 10 * time.Second, Err: context.DeadlineExceeded}
	}}})
	c := f.connect(f.token("rae", continuo.ScopeSessionsRead, continuo.ScopeSessionsWrite, continuo.ScopeProjectWrite))
	pID, _ := f.checkedProject("proj", "rae", map[string]continuo.Check{"test": {Command: []string{"true"}}})
	sID := c.ok("work_on_project", obj{"project": pID, "instruction": "task"}).str("session_id")
	before := f.runsFingerprint(sID)
	r := c.call("run_validation", obj{"session_id": sID, "check": "test"})
	if r.code() != "invalid_state" || r.details()["reason"] != "fingerprint_budget" || r.details()["budget_secs"] != float64(10) {
		t.Fatalf("over budget: %v", r.Data)
	}
	if after := f.runsFingerprint(sID); after != before {
		t.Errorf("a refused run wrote:\n%s\n→\n%s", before, after)
	}
}

// TestFingerprintDoesNotBlock: while one run_validation's fingerprint is in
// progress, tools/list through a real client — on the same session and on
// another — and another run_validation (its own fingerprint) complete: no
// lock is held while a checkout is read.
func TestFingerprintDoesNotBlock(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var blocked string // the checkout whose fingerprint waits
	f := newFixtureWith(t, fixtureOptions{git: workflow.Git{Source: func(ctx context.Context, dir string) (workspace.Source, error) {
		if dir == blocked {
			once.Do(func() { close(entered) })
			select { // in progress until released
			case <-release:
			case <-ctx.Done():
				return workspace.Source{}, ctx.Err()
			}
		}
		return workspace.SourceOf(ctx, dir)
	}}})
	tok := f.token("rae", continuo.ScopeSessionsRead, continuo.ScopeSessionsWrite, continuo.ScopeProjectWrite)
	pID, root := f.checkedProject("proj", "rae", map[string]continuo.Check{"test": {Command: []string{"true"}}})
	otherID, _ := f.checkedProject("other", "rae", map[string]continuo.Check{"test": {Command: []string{"true"}}})
	blocked = root
	for _, v := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(v, func(t *testing.T) {
			c := f.connectAt(tok, v).at(t)
			sID := c.ok("work_on_project", obj{"project": pID, "instruction": "task"}).str("session_id")
			otherSID := c.ok("work_on_project", obj{"project": otherID, "instruction": "task"}).str("session_id")
			entered, release = make(chan struct{}), make(chan struct{})
			once = sync.Once{}
			done := make(chan error, 1)
			go func() {
				_, err := c.cs.CallTool(f.ctx, &mcp.CallToolParams{Name: "run_validation", Arguments: obj{"session_id": sID, "check": "test"}})
				done <- err
			}()
			select {
			case <-entered:
			case <-time.After(20 * time.Second):
				t.Fatal("the fingerprint never started")
			}
			ctx, cancel := context.WithTimeout(f.ctx, 20*time.Second)
			defer cancel()
			other := f.connectAt(tok, v)
			for name, cs := range map[string]*mcp.ClientSession{"the same session": c.cs, "another session": other.cs} {
				start := time.Now()
				res, err := cs.ListTools(ctx, nil)
				if err != nil || len(res.Tools) == 0 {
					t.Fatalf("tools/list on %s while a fingerprint is in progress: %v", name, err)
				}
				t.Logf("tools/list on %s while a fingerprint is in progress: %v", name, time.Since(start))
			}
			if r := c.ok("run_validation", obj{"session_id": otherSID, "check": "test", "wait_secs": 30}); r.str("run", "state") != "succeeded" {
				t.Fatalf("another checkout's run while a fingerprint is in progress: %v", r.Data)
			}
			select {
			case err := <-done:
				t.Fatalf("the blocked run_validation ended early: %v", err)
			default:
			}
			close(release)
			if err := <-done; err != nil {
				t.Fatalf("the released run_validation: %v", err)
			}
		})
	}
}
