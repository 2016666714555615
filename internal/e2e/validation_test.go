package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// validationConfig writes a config file naming the checks of project
// "demo" (the checkout the first start registers): "test" passes while
// state.txt says good, "leaky" prints a credential from its environment
// (start the server with leakEnv), "slow" starts a
// background child (its pid written to pidFile) and waits for it.
func validationConfig(t *testing.T, pidFile string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "continuo.toml")
	body := fmt.Sprintf(`
[projects.demo.checks.test]
command = ["sh", "-c", "echo checking; grep -q good state.txt"]
timeout_secs = 60

[projects.demo.checks.leaky]
command = ["sh", "-c", "echo AWS_SECRET_ACCESS_KEY=$LEAK; echo done"]
env = ["LEAK"]

[projects.demo.checks.slow]
command = ["sh", "-c", "sleep 300 & echo $! > %s; echo started; wait"]
`, pidFile)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// leakedSecret is what the leaky check prints (from $LEAK, which the
// server passes to it): it must be stored nowhere.
const leakedSecret = "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEYzz"

// briefValidation reads the session's brief: each check's status and the
// workspace's source_changed_since_evidence, and the next actions.
func briefValidation(t *testing.T, cs *mcp.ClientSession, sid string) (map[string]string, *bool, []string) {
	t.Helper()
	raw := must(t, cs, "read_session_handoff", map[string]any{"session_id": sid})["handoff_brief"]
	js, _ := json.Marshal(raw)
	var b struct {
		Validation struct {
			Checks []struct{ Check, Status string } `json:"checks"`
		} `json:"validation"`
		Workspace struct {
			Changed *bool `json:"source_changed_since_evidence"`
		} `json:"workspace"`
		NextActions []string `json:"next_actions"`
	}
	if err := json.Unmarshal(js, &b); err != nil {
		t.Fatal(err)
	}
	st := map[string]string{}
	for _, c := range b.Validation.Checks {
		st[c.Check] = c.Status
	}
	return st, b.Workspace.Changed, b.NextActions
}

func runValidation(t *testing.T, cs *mcp.ClientSession, sid, check string, wait int) map[string]any {
	t.Helper()
	return must(t, cs, "run_validation", map[string]any{"session_id": sid, "check": check, "wait_secs": wait})["run"].(map[string]any)
}

// TestValidationEvidence is the evidence story over MCP: a check passes,
// an edit makes the evidence stale (a note saying the tests pass changes
// nothing), a re-run fails on the broken source, a fix passes again. A
// credential a check prints is in no result, log or export. Bad input on
// every run tool is a structured error and writes nothing.
func TestValidationEvidence(t *testing.T) { eachEngine(t, validationEvidence) }

func validationEvidence(t *testing.T, engine string) {
	repo := gitRepo(t)
	write := func(text string) {
		if err := os.WriteFile(filepath.Join(repo, "state.txt"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("good\n")
	dd := dataDir(t, engine)
	srv := startEnv(t, dd, repo, []string{"LEAK=" + leakedSecret}, "--config", validationConfig(t, filepath.Join(t.TempDir(), "pid")))
	cs := connect(t, at(srv.URL, "all"), srv.Admin)
	sid := must(t, cs, "work_on_project", map[string]any{"project": "demo", "instruction": "keep state.txt good"})["session_id"].(string)

	st, _, next := briefValidation(t, cs, sid)
	if st["test"] != "not_run" || !strings.Contains(strings.Join(next, "\n"), `run_validation(session_id=`) {
		t.Fatalf("before any run: %v %v", st, next)
	}
	r := runValidation(t, cs, sid, "test", 30)
	if r["state"] != "succeeded" || r["exit_code"] != float64(0) {
		t.Fatalf("first run = %v", r)
	}
	st, changed, _ := briefValidation(t, cs, sid)
	if st["test"] != "passed" || changed == nil || *changed {
		t.Fatalf("after the pass: %v changed=%v", st, changed)
	}

	write("bad\n")
	must(t, cs, "post_session_message", map[string]any{"session_id": sid, "kind": "progress", "text": "all tests pass"})
	st, changed, next = briefValidation(t, cs, sid)
	if st["test"] != "stale" || changed == nil || !*changed || !strings.Contains(strings.Join(next, "\n"), `check="test") (stale)`) {
		t.Fatalf("after the edit: %v changed=%v next=%v", st, changed, next)
	}
	r = runValidation(t, cs, sid, "test", 30)
	if r["state"] != "failed" || r["exit_code"] != float64(1) || r["error_kind"] != "exit_status" {
		t.Fatalf("run on the broken source = %v", r)
	}
	if st, _, _ = briefValidation(t, cs, sid); st["test"] != "failed" {
		t.Fatalf("after the failing run: %v", st)
	}
	write("good again\n")
	r = runValidation(t, cs, sid, "test", 30)
	if st, _, _ = briefValidation(t, cs, sid); r["state"] != "succeeded" || st["test"] != "passed" {
		t.Fatalf("after the fix: %v %v", r, st)
	}
	// The whole output, through observe_run.
	o := must(t, cs, "observe_run", map[string]any{"run_id": r["run_id"]})
	if txt := eventText(o); !strings.Contains(txt, "checking\n") || !strings.Contains(txt, "succeeded (exit status 0)") {
		t.Errorf("output of the last run: %q", txt)
	}

	// A credential a check prints.
	leak := runValidation(t, cs, sid, "leaky", 30)
	o = must(t, cs, "observe_run", map[string]any{"run_id": leak["run_id"]})
	if txt := eventText(o); strings.Contains(txt, leakedSecret) || !strings.Contains(txt, "AWS_SECRET_ACCESS_KEY=[redacted]\ndone") {
		t.Errorf("leaky output: %q", txt)
	}

	// Bad input: a structured error, and no run is made.
	before := tableRows(t, dd, "runs")
	readOnly := connect(t, at(srv.URL, "all"), token(t, dd, "admin", "sessions:read,runtime:read"))
	for _, bad := range []struct {
		cs   *mcp.ClientSession
		tool string
		args map[string]any
		code string
	}{
		{cs, "run_validation", map[string]any{"session_id": sid, "check": "nope"}, "invalid_input"},
		{cs, "run_validation", map[string]any{"session_id": sid, "check": "test", "wait_secs": 61}, "invalid_input"},
		{cs, "run_validation", map[string]any{"session_id": sid}, "invalid_input"},
		{cs, "run_validation", map[string]any{"session_id": "~s999", "check": "test"}, "not_found"},
		{cs, "run_validation", map[string]any{"session_id": sid, "check": "test", "extra": 1}, "invalid_input"},
		{readOnly, "run_validation", map[string]any{"session_id": sid, "check": "test"}, "forbidden"},
		{cs, "observe_run", map[string]any{"run_id": "run_nope"}, "invalid_input"},
		{cs, "observe_run", map[string]any{"run_id": r["run_id"], "observation_token": "forged"}, "invalid_input"},
		{cs, "observe_run", map[string]any{"run_id": r["run_id"], "wait_secs": -1}, "invalid_input"},
		{cs, "cancel_run", map[string]any{"run_id": "run_00000000000000000000000000"}, "not_found"},
		{readOnly, "cancel_run", map[string]any{"run_id": r["run_id"]}, "forbidden"},
	} {
		if got := call(t, bad.cs, bad.tool, bad.args); got.code() != bad.code {
			t.Errorf("%s(%v) = %v, want %s", bad.tool, bad.args, got.Data, bad.code)
		}
	}
	if after := tableRows(t, dd, "runs"); after != before {
		t.Errorf("bad input wrote runs: %d before, %d after", before, after)
	}

	srv.stop()
	nowhere(t, srv, leakedSecret, "the credential a check printed")
}

// nowhere checks, once srv has stopped, that secret is neither in its log
// nor in an export of its data directory.
func nowhere(t *testing.T, srv *server, secret, what string) {
	t.Helper()
	export := filepath.Join(t.TempDir(), "export.jsonl")
	cli(t, srv.dataDir, "export", export)
	b, err := os.ReadFile(export)
	if err != nil {
		t.Fatal(err)
	}
	for where, text := range map[string]string{"server log": srv.stderr.String(), "export": string(b)} {
		if strings.Contains(text, secret) {
			t.Errorf("%s is in the %s", what, where)
		}
	}
}

func eventText(o map[string]any) string {
	var b strings.Builder
	evs, _ := o["events"].([]any)
	for _, e := range evs {
		b.WriteString(e.(map[string]any)["text"].(string))
	}
	return b.String()
}

// tableRows counts a table's rows through `continuo export -`.
func tableRows(t *testing.T, dataDir, table string) int {
	t.Helper()
	n := 0
	for _, line := range strings.Split(cli(t, dataDir, "export", "-"), "\n") {
		if strings.HasPrefix(line, `{"table":"`+table+`"`) {
			n++
		}
	}
	return n
}

// TestValidationCancelAndCrash: cancel_run stops a long check and its
// whole process group; a server killed with SIGKILL while a check runs
// leaves the run interrupted after the restart (never re-run), the check's
// processes gone, and an observation token from before still valid.
func TestValidationCancelAndCrash(t *testing.T) { eachEngine(t, validationCancelAndCrash) }

func validationCancelAndCrash(t *testing.T, engine string) {
	repo := gitRepo(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	dd := dataDir(t, engine)
	config := validationConfig(t, pidFile)
	srv := start(t, dd, repo, "--config", config)
	cs := connect(t, at(srv.URL, "all"), srv.Admin)
	sid := must(t, cs, "work_on_project", map[string]any{"project": "demo", "instruction": "run the slow check"})["session_id"].(string)

	slow := func() (string, string, int) {
		os.Remove(pidFile)
		res := must(t, cs, "run_validation", map[string]any{"session_id": sid, "check": "slow"})
		id := res["run"].(map[string]any)["run_id"].(string)
		tok := res["observation_token"].(string)
		waitOutput(t, cs, id, &tok, "started")
		pid, err := readPid(pidFile)
		if err != nil {
			t.Fatal(err)
		}
		return id, tok, pid
	}
	id, _, child := slow()
	c := must(t, cs, "cancel_run", map[string]any{"run_id": id})["run"].(map[string]any)
	if c["state"] != "cancelled" {
		t.Fatalf("cancelled run = %v", c)
	}
	waitGone(t, child)

	id, tok, child2 := slow()
	srv.kill()
	admin := srv.Admin
	srv = start(t, dd, repo, "--config", config)
	cs = connect(t, at(srv.URL, "all"), admin)
	r := untilNotRunning(t, cs, id, tok, 30*time.Second)
	if r["state"] != "interrupted" {
		t.Fatalf("after the restart the run is %v", r)
	}
	waitGone(t, child2)
	st, _, _ := briefValidation(t, cs, sid)
	if st["slow"] != "not_run" {
		t.Errorf("an interrupted run is evidence: %v", st)
	}
}

// untilNotRunning long-polls a run until it is no longer running (or
// within has passed) and returns it.
func untilNotRunning(t *testing.T, cs *mcp.ClientSession, id, tok string, within time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		o := must(t, cs, "observe_run", map[string]any{"run_id": id, "observation_token": tok, "wait_secs": 5})
		r := o["run"].(map[string]any)
		if r["state"] != "running" || time.Now().After(deadline) {
			return r
		}
		tok = o["observation_token"].(string)
	}
}

// waitOutput long-polls a run, advancing the token, until its output
// holds text; it fails the test if the run ends first or 30 s pass.
func waitOutput(t *testing.T, cs *mcp.ClientSession, id string, tok *string, text string) {
	t.Helper()
	var seen strings.Builder
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(seen.String(), text) {
		o := must(t, cs, "observe_run", map[string]any{"run_id": id, "observation_token": *tok, "wait_secs": 10})
		*tok = o["observation_token"].(string)
		seen.WriteString(eventText(o))
		if r := o["run"].(map[string]any); r["state"] != "running" && r["state"] != "queued" && !strings.Contains(seen.String(), text) ||
			time.Now().After(deadline) {
			t.Fatalf("run %s (%v) did not print %q: %q", id, r["state"], text, seen.String())
		}
	}
}

func readPid(file string) (int, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(file)
		if err == nil && strings.HasSuffix(string(b), "\n") {
			return strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no pid in %s: %v", file, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitGone waits until a process is gone (or a zombie), failing after a
// deadline.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(st), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d of the check is still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
