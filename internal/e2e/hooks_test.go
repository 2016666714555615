package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hookRun is one run of `continuo hook`.
type hookRun struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// runHook runs the real binary's `continuo hook ARGS` with input on stdin
// and the token in CONTINUO_TOKEN.
func runHook(t *testing.T, tok string, input []byte, args ...string) hookRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"hook"}, args...)...)
	cmd.Env = append(os.Environ(), "CONTINUO_TOKEN="+tok)
	cmd.Stdin = bytes.NewReader(input)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := hookRun{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("continuo hook %v: %v", args, err)
	}
	noRace(t, "continuo hook", r.stderr)
	return r
}

// hookFixture reads internal/hook/testdata/NAME with its placeholders filled.
func hookFixture(t *testing.T, name string, vars map[string]string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "hook", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for k, v := range vars {
		s = strings.ReplaceAll(s, "{{"+k+"}}", v)
	}
	return []byte(s)
}

// additionalContext decodes the hook output of SessionStart.
func additionalContext(t *testing.T, r hookRun) string {
	t.Helper()
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	var o struct {
		HookSpecificOutput struct {
			HookEventName     string `json:"hookEventName"`
			AdditionalContext string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &o); err != nil {
		t.Fatalf("stdout %q is not hook JSON: %v", r.stdout, err)
	}
	if o.HookSpecificOutput.HookEventName != "SessionStart" {
		t.Fatalf("output %s", r.stdout)
	}
	return o.HookSpecificOutput.AdditionalContext
}

const hookInstruction = "Keep the flag name exactly --verbose and never touch the CI config."

func TestHookAgainstServer(t *testing.T) {
	repo := gitRepo(t) // the checkout "demo": serve makes it the project
	s := start(t, dataDir(t, "sqlite"), repo)
	cs := connect(t, s.URL, s.Admin)
	old := must(t, cs, "work_on_project", map[string]any{"project": s.Project, "title": "Old parser task", "instruction": "Pick up the old parser task"})
	cur := must(t, cs, "work_on_project", map[string]any{"project": s.Project, "title": "Verbose flag", "instruction": "Add a --verbose flag to the CLI"})
	curID := cur["session_id"].(string)

	for i, client := range []string{"claude", "codex"} {
		t.Run(client, func(t *testing.T) {
			dir := t.TempDir()
			tr := filepath.Join(dir, "transcript.jsonl")
			vars := map[string]string{"SESSION_ID": curID, "SESSION_REF": cur["session_ref"].(string),
				"PROJECT_ID": s.Project, "OTHER_SESSION_ID": old["session_id"].(string), "CWD": repo, "TRANSCRIPT": tr}
			if err := os.WriteFile(tr, hookFixture(t, client+"/transcript.jsonl", vars), 0o600); err != nil {
				t.Fatal(err)
			}

			// PreCompact keeps the newest instruction, redacted, tagged compaction; once.
			pre := hookFixture(t, client+"/pre-compact.json", vars)
			for range 2 {
				if r := runHook(t, s.Admin, pre, "PreCompact", "--server", s.URL); r.code != 0 || r.stdout != "" || r.stderr != "" {
					t.Fatalf("PreCompact: %+v", r)
				}
			}
			msgs := must(t, cs, "list_session_messages", map[string]any{"session_id": curID, "kinds": []string{"progress"}, "query": "verbose CI config"})
			list, _ := msgs["messages"].([]any)
			var notes []map[string]any
			for _, m := range list {
				m := m.(map[string]any)
				if strings.Contains(m["text"].(string), hookInstruction) {
					notes = append(notes, m)
				}
			}
			// One note per conversation (this one, and claude's before it), however often the hook runs.
			if len(notes) != i+1 {
				t.Fatalf("want %d compaction note(s) on %s, got %d: %v", i+1, curID, len(notes), msgs)
			}
			n := notes[0] // newest first
			if tags, _ := n["tags"].([]any); len(tags) != 1 || tags[0] != "compaction" {
				t.Errorf("tags %v", n["tags"])
			}
			if strings.Contains(n["text"].(string), "cto_pat_abcdefghijklmnop") {
				t.Errorf("the note keeps a secret: %q", n["text"])
			}
			if got := must(t, cs, "list_session_messages", map[string]any{"session_id": old["session_id"], "kinds": []string{"progress"}}); got["total_count"] != float64(0) {
				t.Errorf("the older session got a note: %v", got)
			}

			// SessionStart after compact: the brief of the bound (newest) session.
			ctx := additionalContext(t, runHook(t, s.Admin, hookFixture(t, client+"/session-start-compact.json", vars), "SessionStart", "--server", s.URL))
			if !strings.Contains(ctx, curID) || !strings.Contains(ctx, "Verbose flag") || !strings.Contains(ctx, "never touch the CI config") {
				t.Errorf("context lacks the session's brief: %s", ctx)
			}
			if strings.Contains(ctx, old["session_id"].(string)) || len(ctx) > 10_000 {
				t.Errorf("context names the other session or is too big (%d bytes)", len(ctx))
			}

			// SessionStart after clear (no bound session), cwd in the project's
			// checkout: both candidates listed, neither chosen.
			vars["TRANSCRIPT"] = filepath.Join(dir, "new.jsonl")
			ctx = additionalContext(t, runHook(t, s.Admin, hookFixture(t, client+"/session-start-clear.json", vars), "SessionStart", "--server", s.URL))
			if !strings.Contains(ctx, curID) || !strings.Contains(ctx, old["session_id"].(string)) || !strings.Contains(ctx, "None was chosen") {
				t.Errorf("candidates: %s", ctx)
			}
			if strings.Contains(ctx, "handoff brief follows") {
				t.Errorf("a candidate was chosen: %s", ctx)
			}
		})
	}

	// Server down: exit 0 quickly, nothing on stdout, one line on stderr.
	url := s.URL
	s.kill()
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	os.WriteFile(tr, hookFixture(t, "claude/transcript.jsonl", map[string]string{"SESSION_ID": curID, "SESSION_REF": "~s2", "PROJECT_ID": s.Project}), 0o600)
	pre := hookFixture(t, "claude/pre-compact.json", map[string]string{"TRANSCRIPT": tr, "CWD": repo})
	for _, ev := range []string{"PreCompact", "SessionStart"} {
		in := pre
		if ev == "SessionStart" {
			in = hookFixture(t, "claude/session-start-compact.json", map[string]string{"TRANSCRIPT": tr, "CWD": repo})
		}
		r := runHook(t, s.Admin, in, ev, "--server", url, "--timeout", "3s")
		if r.code != 0 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "the client continues") {
			t.Errorf("%s with the server down: %+v", ev, r)
		}
		if r.took > 5*time.Second {
			t.Errorf("%s took %v", ev, r.took)
		}
	}
}

// A server that accepts connections and never answers: the hook gives up
// within its timeout, exit 0.
func TestHookServerHangs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	dir := t.TempDir()
	tr := filepath.Join(dir, "t.jsonl")
	os.WriteFile(tr, hookFixture(t, "codex/transcript.jsonl", map[string]string{"SESSION_ID": "ses_x", "SESSION_REF": "~s1", "PROJECT_ID": "prj_x"}), 0o600)
	in := hookFixture(t, "codex/pre-compact.json", map[string]string{"TRANSCRIPT": tr, "CWD": dir})
	r := runHook(t, "cto_pat_x", in, "PreCompact", "--server", "http://"+ln.Addr().String()+"/mcp", "--timeout", "1s")
	if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "gave up after 1s") {
		t.Errorf("hanging server: %+v", r)
	}
	if r.took > 5*time.Second {
		t.Errorf("took %v: %+v", r.took, r)
	}
	// A mistake in the hook's command line never blocks the client either.
	if r := runHook(t, "", in, "PreCompact", "--no-such-flag"); r.code != 0 || r.stdout != "" || r.stderr == "" {
		t.Errorf("bad flag: %+v", r)
	}
}

func TestHookInstall(t *testing.T) {
	for _, c := range []struct{ client, file string }{{"claude", ".claude/settings.json"}, {"codex", ".codex/hooks.json"}} {
		t.Run(c.client, func(t *testing.T) {
			proj := t.TempDir()
			path := filepath.Join(proj, c.file)
			os.MkdirAll(filepath.Dir(path), 0o755)
			orig := `{"permissions":{"allow":["Bash(go test:*)"]},"hooks":{"Stop":[{"hooks":[{"type":"command","command":"say done"}]}]}}`
			if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"install", c.client, "--project-dir", proj, "--server", "http://127.0.0.1:7300/mcp", "--json"}
			r := runHook(t, "", nil, args...)
			var res map[string]any
			if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || res["changed"] != true {
				t.Fatalf("install: %+v", r)
			}
			if b, _ := os.ReadFile(res["backup"].(string)); string(b) != orig {
				t.Errorf("backup %q", b)
			}
			b, _ := os.ReadFile(path)
			var s struct {
				Permissions map[string]any
				Hooks       map[string][]struct {
					Matcher string
					Hooks   []struct{ Type, Command string }
				}
			}
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			if s.Permissions == nil || !strings.Contains(string(b), "say done") {
				t.Errorf("the user's settings were not kept: %s", b)
			}
			ss := s.Hooks["SessionStart"]
			if len(ss) != 1 || ss[0].Matcher != "compact|resume|clear" || !strings.HasSuffix(ss[0].Hooks[0].Command, "hook SessionStart --server http://127.0.0.1:7300/mcp") {
				t.Errorf("SessionStart: %s", b)
			}
			if len(s.Hooks["PreCompact"]) != 1 {
				t.Errorf("PreCompact: %s", b)
			}
			// Again: unchanged, no second backup.
			r = runHook(t, "", nil, args...)
			res = nil
			if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || res["changed"] != false {
				t.Errorf("second install: %+v", r)
			}
			if b2, _ := os.ReadFile(path); string(b2) != string(b) {
				t.Errorf("second install changed the file")
			}
			backups, _ := filepath.Glob(path + ".bak-*")
			if len(backups) != 1 {
				t.Errorf("backups %v", backups)
			}
		})
	}
}

// TestHookLocal: with --local the hook needs no server: it runs `continuo
// stdio` on the data directory, records the compaction note and injects the
// brief the same way.
func TestHookLocal(t *testing.T) {
	repo := gitRepo(t)
	data := dataDir(t, "sqlite")
	s := start(t, data, repo)
	cs := connect(t, s.URL, s.Admin)
	cur := must(t, cs, "work_on_project", map[string]any{"project": s.Project, "title": "Verbose flag", "instruction": "Add a --verbose flag to the CLI"})
	curID := cur["session_id"].(string)
	s.stop() // nothing serves the data directory now

	dir := t.TempDir()
	tr := filepath.Join(dir, "transcript.jsonl")
	vars := map[string]string{"SESSION_ID": curID, "SESSION_REF": cur["session_ref"].(string), "PROJECT_ID": s.Project,
		"OTHER_SESSION_ID": "ses_01M8MM26XKEYJ9TMV42AY22V6A", "CWD": repo, "TRANSCRIPT": tr}
	if err := os.WriteFile(tr, hookFixture(t, "claude/transcript.jsonl", vars), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runHook(t, "", hookFixture(t, "claude/pre-compact.json", vars), "PreCompact", "--local", "--data-dir", data); r.code != 0 || r.stderr != "" {
		t.Fatalf("PreCompact --local: %+v", r)
	}
	ctx := additionalContext(t, runHook(t, "", hookFixture(t, "claude/session-start-compact.json", vars), "SessionStart", "--local", "--data-dir", data))
	if !strings.Contains(ctx, curID) || !strings.Contains(ctx, "never touch the CI config") {
		t.Errorf("context lacks the session's brief with the recorded instruction: %s", ctx)
	}
	none := filepath.Join(dir, "none")
	if r := runHook(t, "", hookFixture(t, "claude/pre-compact.json", vars), "PreCompact", "--local", "--data-dir", none); r.code != 0 ||
		!strings.Contains(r.stderr, "no Continuo data directory") {
		t.Errorf("--local on a directory without a database: %+v", r)
	}
	if _, err := os.Stat(none); !os.IsNotExist(err) {
		t.Errorf("the hook made a data directory at %s (%v)", none, err)
	}
}
