package workflow_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/workflow"
)

func TestEvidence(t *testing.T) { stores.Each(t, testEvidence) }

// Evidence judges every check of every session of a page as the brief
// does: passed on the source it passed on, stale once the source changed,
// failed, running while under way, not_run never run; and only the
// caller group's sessions, in a project it reaches.
func testEvidence(t *testing.T) {
	f, root, gate := validationFixture(t)
	err := f.store.Write(f.ctx, func(tx store.Tx) error {
		p, err := tx.ProjectGet(f.ctx, f.project.ID)
		if err != nil {
			return err
		}
		p.Checks["fails"] = continuo.Check{Command: []string{"sh", "-c", "exit 3"}}
		return tx.ProjectSetChecks(f.ctx, p.ID, p.Checks)
	})
	if err != nil {
		t.Fatal(err)
	}
	s1, s2 := f.start(t), f.start(t)
	for _, check := range []string{"where", "fails"} {
		if _, err := f.wf.RunValidation(f.ctx, f.caller, s1.ID, check, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	statuses := func(se workflow.SessionEvidence) map[string]string {
		m := map[string]string{}
		for _, ce := range se.Checks {
			m[ce.Check] = ce.Status
		}
		return m
	}
	find := func(ev *workflow.ProjectEvidence, id string) workflow.SessionEvidence {
		t.Helper()
		for _, se := range ev.Sessions {
			if se.SessionID == id {
				return se
			}
		}
		t.Fatalf("session %s not on the page", id)
		return workflow.SessionEvidence{}
	}
	ev, err := f.wf.Evidence(f.ctx, f.caller, "demo", "", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Total != 2 || len(ev.Sessions) != 2 || ev.NextOffset != nil || len(ev.Project.Checks) != 3 {
		t.Fatalf("page: %+v", ev)
	}
	one := find(ev, s1.ID)
	if got := statuses(one); got["where"] != workflow.CheckPassed || got["fails"] != workflow.CheckFailed || got["slow"] != workflow.CheckNotRun || one.Status != workflow.CheckFailed {
		t.Errorf("s1: %v, status %s", got, one.Status)
	}
	if one.Current == nil || !one.Current.Clean || one.Dir != root {
		t.Errorf("s1's checkout: %+v in %s", one.Current, one.Dir)
	}
	for _, ce := range one.Checks {
		if ce.Check == "where" && (ce.Run == nil || ce.Source == nil || ce.Source.Head != one.Current.Head || !ce.Source.Clean || ce.At().IsZero()) {
			t.Errorf("where's evidence: %+v", ce)
		}
	}
	two := find(ev, s2.ID)
	if got := statuses(two); got["where"] != workflow.CheckNotRun || two.Current != nil || two.Checks[0].Run != nil {
		t.Errorf("s2 (no evidence): %v, current %+v", got, two.Current)
	}

	// The source changes: every finished check of s1 is stale.
	if err := os.WriteFile(filepath.Join(root, "new.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := f.wf.RunValidation(f.ctx, f.caller, s2.ID, "slow", 0)
	if err != nil {
		t.Fatal(err)
	}
	ev, err = f.wf.Evidence(f.ctx, f.caller, f.project.ID, continuo.LifecycleActive, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	one, two = find(ev, s1.ID), find(ev, s2.ID)
	if got := statuses(one); got["where"] != workflow.CheckStale || got["fails"] != workflow.CheckStale || one.Current.Clean {
		t.Errorf("after an edit, s1: %v, current %+v", got, one.Current)
	}
	if got := statuses(two); got["slow"] != workflow.CheckRunning || two.Checks[1].Run == nil || two.Checks[1].Run.ID != v.Run.ID {
		t.Errorf("s2 with slow under way: %v", got)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.runs.Wait(f.ctx, f.caller, v.Run.ID, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	// Paging, and filters.
	page, err := f.wf.Evidence(f.ctx, f.caller, "demo", "", 0, 1)
	if err != nil || len(page.Sessions) != 1 || page.NextOffset == nil || *page.NextOffset != 1 {
		t.Fatalf("limit 1: %+v, %v", page, err)
	}
	if page, err := f.wf.Evidence(f.ctx, f.caller, "demo", continuo.LifecycleClosed, 0, 0); err != nil || page.Total != 0 {
		t.Errorf("closed sessions: %+v, %v", page, err)
	}
	for _, bad := range []struct {
		lc            continuo.Lifecycle
		offset, limit int
	}{{"open", 0, 0}, {"", -1, 0}, {"", 0, 51}} {
		if _, err := f.wf.Evidence(f.ctx, f.caller, "demo", bad.lc, bad.offset, bad.limit); code(err) != continuo.CodeInvalidInput {
			t.Errorf("Evidence(%+v): %v", bad, err)
		}
	}

	// Another group sees no such project; without sessions:read, forbidden.
	tok, err := f.auth.CreateToken(f.ctx, "bob", continuo.AllScopes(), 0)
	if err != nil {
		t.Fatal(err)
	}
	bob, err := f.auth.Authenticate(f.ctx, tok.Token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.wf.Evidence(f.ctx, bob, "demo", "", 0, 0); code(err) != continuo.CodeNotFound {
		t.Errorf("bob: %v", err)
	}
	runner := &continuo.Caller{PrincipalID: f.caller.PrincipalID, GroupID: f.caller.GroupID, Scopes: []continuo.Scope{continuo.ScopeRuntimeRead}}
	if _, err := f.wf.Evidence(f.ctx, runner, "demo", "", 0, 0); code(err) != continuo.CodeForbidden {
		t.Errorf("without sessions:read: %v", err)
	}
}
