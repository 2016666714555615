package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo/internal/modelstub"
)

// The real clients, installed from npm at pinned versions by `cd
// interop/clients && npm ci` (.ci/run does it): Claude Code and Codex CLI,
// each driven non-interactively against a modelstub.Server.

// clientBinary is the path of a client's native binary in
// interop/clients/node_modules. Without it the test is skipped — and fails
// under CI=true, where a missing client is a broken setup.
func clientBinary(t *testing.T, client string) string {
	t.Helper()
	rel := map[string]string{
		"claude": "@anthropic-ai/claude-code-linux-x64/claude",
		"codex":  "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
	}[client]
	path, err := filepath.Abs(filepath.Join("..", "..", "interop", "clients", "node_modules", rel))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (cd interop/clients && npm ci): %v", client, err)
		}
		t.Skipf("%s is not installed (cd interop/clients && npm ci)", client)
	}
	return path
}

// realClient is one installed client with its own home directory, set up to
// talk to a model stub and to Continuo.
type realClient struct {
	t    *testing.T
	name string // claude | codex
	bin  string
	home string // HOME (and CODEX_HOME under it)
	work string // the directory the client runs in (the project's checkout)
	env  []string
}

// clientRun is what one non-interactive run of a client left.
type clientRun struct {
	out, stderr string
	session     string // the client's own conversation id
}

func newClient(t *testing.T, name, work string, stub *modelstub.Server, env ...string) *realClient {
	t.Helper()
	c := &realClient{t: t, name: name, bin: clientBinary(t, name), home: t.TempDir(), work: work}
	c.env = append([]string{"HOME=" + c.home, "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "TERM=dumb"}, env...)
	switch name {
	case "claude":
		c.env = append(c.env, "ANTHROPIC_BASE_URL="+stub.URL, "ANTHROPIC_API_KEY=sk-ant-stub-not-a-key",
			"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1")
	case "codex":
		codexHome := filepath.Join(c.home, ".codex")
		if err := os.MkdirAll(codexHome, 0o700); err != nil {
			t.Fatal(err)
		}
		c.env = append(c.env, "CODEX_HOME="+codexHome, "STUB_API_KEY=stub-not-a-key")
		cfg := `model = "gpt-5.5" # a model Codex knows: its real truncation policy and context window
model_provider = "stub"
# The scripted model's usage decides when Codex compacts (modelstub.Reply.InputTokens).
model_auto_compact_token_limit = 50000

[model_providers.stub]
name = "stub"
base_url = "` + stub.URL + `/v1"
wire_api = "responses"
env_key = "STUB_API_KEY"
`
		if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// run runs the client binary with args in the work directory.
func (c *realClient) run(args ...string) clientRun {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Dir, cmd.Env = c.work, c.env
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	r := clientRun{out: out.String(), stderr: stderr.String()}
	if err != nil {
		c.t.Fatalf("%s %v: %v\nstdout: %s\nstderr: %s", c.name, args, err, r.out, r.stderr)
	}
	return r
}

// prompt runs one non-interactive turn: a new conversation, or a resumed
// one when resume names it.
func (c *realClient) prompt(resume, text string) clientRun {
	c.t.Helper()
	switch c.name {
	case "claude":
		args := []string{"-p", "--output-format", "json", "--allowedTools", "mcp__continuo"}
		if resume != "" {
			args = append(args, "--resume", resume)
		}
		r := c.run(append(args, "--", text)...)
		var res struct {
			SessionID string `json:"session_id"`
			IsError   bool   `json:"is_error"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(lastLine(r.out))), &res); err != nil || res.IsError {
			c.t.Fatalf("claude: %v: %s\n%s", err, r.out, r.stderr)
		}
		r.session = res.SessionID
		return r
	default:
		args := []string{"exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-hook-trust", "--sandbox", "read-only"}
		if resume != "" {
			args = append(args, "resume", resume)
		}
		r := c.run(append(args, text)...)
		for _, l := range strings.Split(r.out, "\n") {
			var ev struct {
				Type     string `json:"type"`
				ThreadID string `json:"thread_id"`
			}
			if json.Unmarshal([]byte(l), &ev) == nil && ev.Type == "thread.started" {
				r.session = ev.ThreadID
			}
		}
		if r.session == "" {
			c.t.Fatalf("codex: no thread id in %s\n%s", r.out, r.stderr)
		}
		return r
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
