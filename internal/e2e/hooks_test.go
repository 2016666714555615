package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The hook's own process against servers that are down, hang, or come
// back; TestRealClients runs it under the real clients.

// hookRun is one run of `continuo hook`.
type hookRun struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// runHook runs the real binary's `continuo hook ARGS` with input on stdin,
// the token in CONTINUO_TOKEN and env added.
func runHook(t *testing.T, tok string, input []byte, env []string, args ...string) hookRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"hook"}, args...)...)
	cmd.Env = append(append(os.Environ(), "CONTINUO_TOKEN="+tok), env...)
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

// hookOutput decodes a hook's stdout.
func hookOutput(t *testing.T, r hookRun) (context, systemMessage string) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d: %+v", r.code, r)
	}
	var o struct {
		HookSpecificOutput struct {
			HookEventName     string `json:"hookEventName"`
			AdditionalContext string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
		SystemMessage string `json:"systemMessage"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &o); err != nil {
		t.Fatalf("stdout %q is not hook JSON: %v", r.stdout, err)
	}
	return o.HookSpecificOutput.AdditionalContext, o.SystemMessage
}

// recordedClient is a client's recorded transcript and hook inputs
// (internal/hook/testdata), bound to a live session instead of the one it
// was recorded with.
type recordedClient struct {
	dir        string
	transcript string
	expect     struct {
		SessionID, SessionRef, ProjectID, Instruction string
	}
}

func recordedFor(t *testing.T, client, session, ref, project string) *recordedClient {
	t.Helper()
	rc := &recordedClient{dir: filepath.Join("..", "hook", "testdata", client)}
	b, err := os.ReadFile(filepath.Join(rc.dir, "expect.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		SessionID   string `json:"session_id"`
		SessionRef  string `json:"session_ref"`
		ProjectID   string `json:"project_id"`
		Instruction string `json:"instruction"`
	}
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	rc.expect.Instruction = e.Instruction
	data, err := os.ReadFile(filepath.Join(rc.dir, "transcript.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.NewReplacer(e.SessionID, session, e.ProjectID, project, `"`+e.SessionRef+`"`, `"`+ref+`"`,
		`\"`+e.SessionRef+`\"`, `\"`+ref+`\"`).Replace(string(data))
	rc.transcript = filepath.Join(t.TempDir(), "transcript.jsonl")
	if err := os.WriteFile(rc.transcript, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return rc
}

// input is the recorded hook input name, pointed at the transcript.
func (rc *recordedClient) input(t *testing.T, name, cwd string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(rc.dir, "hooks", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var in map[string]any
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	in["transcript_path"], in["cwd"] = rc.transcript, cwd
	out, _ := json.Marshal(in)
	return out
}

// freePort returns a loopback address nothing listens on.
func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestHookServerDownThenBack: with the server down, PreCompact and
// SessionEnd exit 0 within their budgets, keep the note in the spool and
// tell the user; SessionStart tells the model. Once the server is back,
// the next hook (a new conversation's SessionStart) posts the note — on
// the same URL, though the server came back listing another toolset by
// default: the hooks ask for continuity.
func TestHookServerDownThenBack(t *testing.T) {
	repo := gitRepo(t)
	data := dataDir(t, "sqlite")
	addr := freePort(t)
	s := start(t, data, repo, "--listen", addr)
	cs := connect(t, s.URL, s.Admin)
	cur := must(t, cs, "work_on_project", map[string]any{"project": s.Project, "title": "Verbose flag", "instruction": "Add a --verbose flag"})
	id := cur["session_id"].(string)
	rc := recordedFor(t, "codex", id, cur["session_ref"].(string), s.Project)
	state := t.TempDir()
	env := []string{"XDG_STATE_HOME=" + state, "HOME=" + t.TempDir()}
	s.kill()

	for _, ev := range []string{"PreCompact", "SessionEnd"} {
		r := runHook(t, s.Admin, rc.input(t, ev, repo), env, ev, "--server", s.URL)
		_, msg := hookOutput(t, r)
		if !strings.Contains(msg, s.URL) || !strings.Contains(msg, filepath.Join(state, "continuo", "hook-spool")) {
			t.Errorf("%s: systemMessage %q", ev, msg)
		}
		if strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "the client continues") {
			t.Errorf("%s: stderr %q", ev, r.stderr)
		}
		if ev == "SessionEnd" && r.took > 3*time.Second {
			t.Errorf("SessionEnd took %v; Codex stops waiting at 3 s", r.took)
		}
	}
	spooled, _ := filepath.Glob(filepath.Join(state, "continuo", "hook-spool", "*.json"))
	if len(spooled) != 1 {
		t.Fatalf("spool holds %v, want one note", spooled)
	}
	ctx, _ := hookOutput(t, runHook(t, s.Admin, rc.input(t, "SessionStart-resume", repo), env, "SessionStart", "--server", s.URL))
	if !strings.Contains(ctx, "could not be reached") || !strings.Contains(ctx, id) {
		t.Errorf("SessionStart with the server down told the model: %q", ctx)
	}

	s2 := start(t, data, repo, "--listen", addr, "--toolsets", "swarm")
	cs = connect(t, at(s2.URL, "continuity"), s.Admin)
	if r := runHook(t, s.Admin, rc.input(t, "SessionStart-startup", repo), env, "SessionStart", "--server", s.URL); r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Errorf("startup with the server back: %+v", r)
	}
	msgs := must(t, cs, "list_session_messages", map[string]any{"session_id": id, "kinds": []string{"progress"}})
	if msgs["total_count"] != float64(1) || !strings.Contains(fmt.Sprint(msgs), rc.expect.Instruction) {
		t.Errorf("the spooled note was not posted once: %v", msgs)
	}
	if spooled, _ := filepath.Glob(filepath.Join(state, "continuo", "hook-spool", "*.json")); len(spooled) != 0 {
		t.Errorf("spool still holds %v", spooled)
	}
	b, _ := os.ReadFile(filepath.Join(state, "continuo", "hook.log"))
	if n := strings.Count(string(b), "\n"); n != 4 {
		t.Errorf("hook log has %d lines, want one per run:\n%s", n, b)
	}
}

// A server that accepts connections and never answers: the hook gives up
// within its timeout, exit 0, and says so.
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
	rc := recordedFor(t, "claude", "ses_x", "~s1", "prj_x")
	in := rc.input(t, "PreCompact", dir)
	env := []string{"XDG_STATE_HOME=" + dir, "HOME=" + dir}
	r := runHook(t, "cto_pat_x", in, env, "PreCompact", "--server", "http://"+ln.Addr().String()+"/mcp", "--timeout", "1s")
	if _, msg := hookOutput(t, r); msg == "" || !strings.Contains(r.stderr, "gave up after 1s") {
		t.Errorf("hanging server: %+v", r)
	}
	if r.took > 5*time.Second {
		t.Errorf("took %v: %+v", r.took, r)
	}
	// A mistake in the hook's command line never blocks the client either.
	if r := runHook(t, "", in, env, "PreCompact", "--no-such-flag"); r.code != 0 || r.stdout != "" || r.stderr == "" {
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
			args := []string{"install", c.client, "--project-dir", proj, "--server", "http://127.0.0.1:7300/mcp", "--token-env", "MY_TOKEN", "--json"}
			r := runHook(t, "", nil, nil, args...)
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
					Hooks   []struct {
						Type, Command string
						Timeout       int
					}
				}
			}
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			if s.Permissions == nil || !strings.Contains(string(b), "say done") {
				t.Errorf("the user's settings were not kept: %s", b)
			}
			for _, ev := range []string{"SessionStart", "PreCompact", "Stop", "SessionEnd"} {
				var ours int
				for _, g := range s.Hooks[ev] {
					for _, h := range g.Hooks {
						if strings.HasPrefix(h.Command, binary+" hook "+ev+" ") {
							ours++
							if !strings.HasSuffix(h.Command, "--server http://127.0.0.1:7300/mcp --token-env MY_TOKEN") || h.Timeout < 5 {
								t.Errorf("%s: %+v", ev, h)
							}
						}
					}
				}
				if ours != 1 {
					t.Errorf("%s: %d hooks of ours in %s", ev, ours, b)
				}
			}
			// Again: unchanged, no second backup.
			r = runHook(t, "", nil, nil, args...)
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
			// Neither a server given nor a data directory: refused, saying
			// what to pass.
			r = runHook(t, "", nil, nil, "install", c.client, "--project-dir", proj, "--data-dir", filepath.Join(proj, "none"))
			if r.code == 0 || !strings.Contains(r.stderr, "--server URL --token-env VAR") {
				t.Errorf("no target: %+v", r)
			}
		})
	}
}
