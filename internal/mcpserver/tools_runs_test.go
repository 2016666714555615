package mcpserver_test

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/store"
)

// runTools are the run tools; TestRunBadInput holds their bad input.
var runTools = []string{"run_validation", "observe_run", "cancel_run", "observe_coding_agent", "cancel_coding_agent", "list_runners", "start_coding_agent"}

// checkedProject registers a project whose root is a fresh git checkout
// with the given checks, granting group write access.
func (f *fixture) checkedProject(name, group string, checks map[string]continuo.Check) (id, root string) {
	f.t.Helper()
	root = f.t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "first"}} {
		if out, err := exec.Command("git", append([]string{"-C", root}, args...)...).CombinedOutput(); err != nil {
			f.t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	p, err := f.auth.AddProject(f.ctx, auth.ProjectSpec{Name: name, Root: root, Writable: true, Checks: checks},
		map[string]continuo.Access{group: continuo.AccessWrite})
	if err != nil {
		f.t.Fatal(err)
	}
	return p.ID, root
}

// runsFingerprint lists every run with its state and log length, and every
// piece of evidence of a session: any write of a run tool changes it.
func (f *fixture) runsFingerprint(sessionID string) string {
	f.t.Helper()
	var b strings.Builder
	err := f.db.Read(f.ctx, func(tx store.Tx) error {
		runs, err := tx.RunList(f.ctx, store.RunListParams{Limit: 1000})
		if err != nil {
			return err
		}
		for _, r := range runs {
			fmt.Fprintf(&b, "%s %s rev=%d seq=%d cancel=%v\n", r.ID, r.State, r.Revision, r.EventSeq, r.CancelRequested)
		}
		ev, err := tx.EvidenceLatest(f.ctx, sessionID, 100)
		fmt.Fprintf(&b, "evidence=%d\n", len(ev))
		return err
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return b.String() + f.fingerprint()
}

// TestRunTools: a check run through the real client, its output read after
// a token, a long check cancelled, and the brief's evidence.
func TestRunTools(t *testing.T) {
	f := newFixture(t)
	c := f.connect(f.token("rae", continuo.ScopeSessionsRead, continuo.ScopeSessionsWrite, continuo.ScopeProjectWrite, continuo.ScopeRuntimeRead))
	pID, _ := f.checkedProject("proj", "rae", map[string]continuo.Check{
		"test": {Command: []string{"sh", "-c", "echo ok; echo more"}},
		"long": {Command: []string{"sleep", "300"}},
	})
	sID := c.ok("work_on_project", obj{"project": pID, "instruction": "task"}).str("session_id")

	r := c.ok("run_validation", obj{"session_id": sID, "check": "test", "wait_secs": 30})
	if r.str("run", "state") != "succeeded" || r.str("run", "check") != "test" || r.str("run", "source", "head") == "" || r.str("observation_token") == "" {
		t.Fatalf("run_validation = %v", r.Data)
	}
	runID := r.str("run", "run_id")
	all := c.ok("observe_run", obj{"run_id": runID})
	if evs, _ := all.Data["events"].([]any); len(evs) == 0 || all.Data["has_more"] != false || all.Data["history_lost"] != false {
		t.Fatalf("observe_run = %v", all.Data)
	}
	if again := c.ok("observe_run", obj{"run_id": runID, "observation_token": all.str("observation_token")}); len(again.Data["events"].([]any)) != 0 {
		t.Errorf("after the last token: %v", again.Data["events"])
	}
	brief := c.ok("read_session_handoff", obj{"session_id": sID})
	checks, _ := brief.Data["handoff_brief"].(map[string]any)["validation"].(map[string]any)["checks"].([]any)
	st := map[string]string{}
	for _, cs := range checks {
		m := cs.(map[string]any)
		st[m["check"].(string)] = m["status"].(string)
	}
	if st["test"] != "passed" || st["long"] != "not_run" {
		t.Errorf("brief validation = %v", st)
	}

	long := c.ok("run_validation", obj{"session_id": sID, "check": "long"}).str("run", "run_id")
	cancelled := c.ok("cancel_run", obj{"run_id": long})
	if s := cancelled.str("run", "state"); s != "cancelled" {
		t.Fatalf("cancel_run = %v", cancelled.Data)
	}
	if again := c.ok("cancel_run", obj{"run_id": long}); again.str("run", "state") != "cancelled" {
		t.Errorf("a second cancel = %v", again.Data)
	}
}

// TestRunBadInput: every run tool refuses bad input with a structured
// error and writes nothing; scopes and groups are enforced.
func TestRunBadInput(t *testing.T) {
	f := newFixture(t)
	tok := f.token("ray", continuo.ScopeSessionsRead, continuo.ScopeSessionsWrite, continuo.ScopeProjectWrite, continuo.ScopeRuntimeRead,
		continuo.ScopeCodingAgent)
	c := f.connect(tok)
	pID, _ := f.checkedProject("proj", "ray", map[string]continuo.Check{"test": {Command: []string{"true"}}})
	sID := c.ok("work_on_project", obj{"project": pID, "instruction": "task"}).str("session_id")
	runID := c.ok("run_validation", obj{"session_id": sID, "check": "test", "wait_secs": 30}).str("run", "run_id")

	agent := func(k string, v any) obj {
		a := obj{"project": pID, "provider_id": "nope", "idempotency_key": "k", "instruction": "review"}
		if v == nil {
			delete(a, k)
		} else {
			a[k] = v
		}
		return a
	}
	type bad struct {
		name, tool string
		args       obj
		field      string
	}
	cases := []bad{
		{"no session", "run_validation", obj{"check": "test"}, "session_id"},
		{"bad session", "run_validation", obj{"session_id": "ses_bad", "check": "test"}, "session_id"},
		{"no check", "run_validation", obj{"session_id": sID}, "check"},
		{"unknown check", "run_validation", obj{"session_id": sID, "check": "deploy"}, "check"},
		{"check 65", "run_validation", obj{"session_id": sID, "check": strings.Repeat("c", 65)}, "check"},
		{"wait 61", "run_validation", obj{"session_id": sID, "check": "test", "wait_secs": 61}, "wait_secs"},
		{"wait -1", "run_validation", obj{"session_id": sID, "check": "test", "wait_secs": -1}, "wait_secs"},
		{"unknown arg", "run_validation", obj{"session_id": sID, "check": "test", "command": "rm -rf /"}, "command"},
		{"no run", "observe_run", obj{}, "run_id"},
		{"bad run", "observe_run", obj{"run_id": sID}, "run_id"},
		{"forged token", "observe_run", obj{"run_id": runID, "observation_token": "AAAA"}, "observation_token"},
		{"token 129", "observe_run", obj{"run_id": runID, "observation_token": strings.Repeat("t", 129)}, "observation_token"},
		{"wait 61", "observe_run", obj{"run_id": runID, "wait_secs": 61}, "wait_secs"},
		{"no run", "cancel_run", obj{}, "run_id"},
		{"bad run", "cancel_run", obj{"run_id": "run_x"}, "run_id"},
		{"forged token", "observe_coding_agent", obj{"run_id": runID, "observation_token": "AAAA"}, "observation_token"},
		{"bad run", "cancel_coding_agent", obj{"run_id": "run_x"}, "run_id"},
		{"project 129", "list_runners", obj{"project": strings.Repeat("p", 129)}, "project"},
		{"no provider", "start_coding_agent", agent("provider_id", nil), "provider_id"},
		{"unknown provider", "start_coding_agent", agent("provider_id", "nope"), "provider_id"},
		{"no key", "start_coding_agent", agent("idempotency_key", nil), "idempotency_key"},
		{"key 129", "start_coding_agent", agent("idempotency_key", strings.Repeat("k", 129)), "idempotency_key"},
		{"no instruction", "start_coding_agent", agent("instruction", nil), "instruction"},
		{"instruction 65537", "start_coding_agent", agent("instruction", strings.Repeat("i", 65537)), "instruction"},
		{"timeout 0", "start_coding_agent", agent("timeout_secs", 0), "timeout_secs"},
		{"timeout 3601", "start_coding_agent", agent("timeout_secs", 3601), "timeout_secs"},
		{"unknown arg", "start_coding_agent", agent("model", "gpt"), "model"},
	}
	for _, tool := range runTools {
		if !slices.ContainsFunc(cases, func(b bad) bool { return b.tool == tool }) {
			t.Errorf("no bad input for %s", tool)
		}
	}
	before := f.runsFingerprint(sID)
	for _, bc := range cases {
		t.Run(bc.tool+"/"+bc.name, func(t *testing.T) {
			r := c.at(t).fails(bc.tool, bc.args, "invalid_input")
			if bc.field != "" && r.details()["field"] != bc.field {
				t.Fatalf("details.field = %v, want %q (%v)", r.details()["field"], bc.field, r.Data)
			}
			if after := f.runsFingerprint(sID); after != before {
				t.Fatalf("a rejected call wrote:\n%s\n→\n%s", before, after)
			}
		})
	}

	// Scopes, other groups, closed sessions: refused, nothing written.
	reader := f.connect(f.token("ray", continuo.ScopeSessionsRead, continuo.ScopeRuntimeRead))
	stranger := f.connect(f.token("sam", continuo.AllScopes()...))
	reader.fails("run_validation", obj{"session_id": sID, "check": "test"}, "forbidden")
	reader.fails("cancel_run", obj{"run_id": runID}, "forbidden")
	stranger.fails("observe_run", obj{"run_id": runID}, "not_found")
	stranger.fails("cancel_run", obj{"run_id": runID}, "not_found")
	stranger.fails("run_validation", obj{"session_id": sID, "check": "test"}, "not_found")
	c.ok("close_session", obj{"session_id": sID})
	before = f.runsFingerprint(sID)
	c.fails("run_validation", obj{"session_id": sID, "check": "test"}, "session_closed")
	if after := f.runsFingerprint(sID); after != before {
		t.Fatalf("a refused call wrote:\n%s\n→\n%s", before, after)
	}
}
