package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/continuo-dev/continuo/internal/syncbuf"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// One data directory has one `continuo serve`: a second one refuses at
// once, naming the directory and the first one's pid; once the first has
// stopped, a new one starts.
func TestSecondServeRefused(t *testing.T) {
	data := dataDir(t, "sqlite")
	first := start(t, data, t.TempDir())
	code, stderr := startFails(t, data, t.TempDir())
	want := fmt.Sprintf("another continuo serve (pid %d) is already serving the data directory %s", first.cmd.Process.Pid, data)
	if code != 1 || !strings.Contains(stderr, want) {
		t.Fatalf("second serve: exit %d, stderr %q; want exit 1 and %q", code, stderr, want)
	}
	first.stop()
	start(t, data, t.TempDir())
}

// Clients start several `continuo stdio` at once on one data directory
// (one per conversation). They share it, and even their first starts,
// which create, migrate and bootstrap the database, all come up and answer.
func TestConcurrentStdioFirstStarts(t *testing.T) {
	data := dataDir(t, "sqlite")
	repo := gitRepo(t)
	const n = 8
	errs := make([]error, n)
	projects := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			cmd := command(data, "stdio")
			cmd.Dir = repo
			var stderr syncbuf.Buffer
			cmd.Stderr = &stderr
			c := mcp.NewClient(&mcp.Implementation{Name: "e2e-stdio", Version: "1"}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				errs[i] = fmt.Errorf("stdio %d: connect: %v\n%s", i, err, stderr.String())
				return
			}
			defer cs.Close()
			r, err := tryCall(ctx, cs, "list_projects", map[string]any{})
			if err != nil || r.IsError {
				errs[i] = fmt.Errorf("stdio %d: list_projects: %v %v\n%s", i, err, r.Data, stderr.String())
				return
			}
			projects[i] = len(r.Data["projects"].([]any))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Error(err)
		} else if projects[i] != 1 {
			t.Errorf("stdio %d sees %d projects, want the one checkout", i, projects[i])
		}
	}
}

// A database deleted under a running server is noticed: /readyz fails and
// writes are refused, not acknowledged into a file nobody will open again.
// The next start refuses to make a new, empty database in its place (the
// tokens, projects and sessions would be silently gone), saying how to
// restore; --init starts over on purpose.
func TestDeletedDatabase(t *testing.T) {
	data := dataDir(t, "sqlite")
	repo := gitRepo(t)
	srv := start(t, data, repo)
	cs := connect(t, srv.URL, srv.Admin)
	sess := must(t, cs, "work_on_project", map[string]any{"instruction": "keep this"})
	ready := func() int {
		resp, err := http.Get(srv.Base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := ready(); got != http.StatusOK {
		t.Fatalf("/readyz = %d before the deletion", got)
	}
	gone, _ := filepath.Glob(filepath.Join(data, "continuo.db*"))
	if len(gone) == 0 {
		t.Fatal("no database files")
	}
	for _, f := range gone {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	if got := ready(); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz = %d after continuo.db* was deleted, want 503", got)
	}
	r := call(t, cs, "post_session_message", map[string]any{"session_id": sess["session_id"], "kind": "note", "text": "lost?"})
	if !r.IsError {
		t.Errorf("a write after the deletion was acknowledged: %v", r.Data)
	}
	srv.stop()

	code, stderr := startFails(t, data, repo)
	for _, want := range []string{"had a Continuo database", "is gone", "continuo import FILE --data-dir " + data, "--init"} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("restart: exit %d, stderr %q; want exit 1 and %q", code, stderr, want)
		}
	}
	if _, err := os.Stat(filepath.Join(data, "continuo.db")); !os.IsNotExist(err) {
		t.Fatalf("the refused restart made a database: %v", err)
	}
	again := start(t, data, repo, "--init")
	if again.Admin == "" {
		t.Fatal("serve --init made no admin token")
	}
}

// A shutdown does not wait for clients to close their server-sent event
// streams: with a GET stream open, SIGTERM ends the server promptly.
func TestShutdownEndsStreams(t *testing.T) {
	srv := start(t, dataDir(t, "sqlite"), t.TempDir())
	post := func(session, body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+srv.Admin)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	init := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	session := init.Header.Get("Mcp-Session-Id")
	if session == "" {
		t.Fatalf("initialize: %d, no session", init.StatusCode)
	}
	post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("Authorization", "Bearer "+srv.Admin)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	stream, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK || !strings.HasPrefix(stream.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET stream: %d %s", stream.StatusCode, stream.Header.Get("Content-Type"))
	}
	began := time.Now()
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := srv.cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, srv.stderr.String())
	}
	// The shutdown timeout is 10 s; a stream that kept the server waiting
	// would take all of it.
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("SIGTERM with an open stream took %v to exit", took)
	}
}

// readmeCommand returns the first command line in README.md's section
// (under "## section") that starts with prefix, without its trailing
// comment, as arguments after "continuo".
func readmeCommand(t *testing.T, section, prefix string) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "## ") {
			in = line == "## "+section
		}
		line = strings.TrimSpace(line)
		if !in || !strings.HasPrefix(line, prefix) {
			continue
		}
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if f[0] == "continuo" {
			f = f[1:]
		}
		return f
	}
	t.Fatalf("README.md's section %q has no line starting with %q", section, prefix)
	return nil
}

// The first hour exactly as README.md gives it, on a fresh machine (an
// empty HOME, no data directory flag): `continuo serve` inside a checkout,
// the README's `project check add` beside the running server, the token
// command of "Connect a client", then a client over HTTP (the official Go
// SDK) that lists the project, starts a session, posts its progress and
// runs the check; the printed sign-in link opens the dashboard, signed
// in; and a client over stdio sees the project too. Every command is read
// from README.md, so the test fails when they drift.
func TestREADMEFirstHour(t *testing.T) {
	home := t.TempDir()
	repo := filepath.Join(t.TempDir(), "myrepo")
	if err := os.Rename(gitRepo(t), repo); err != nil {
		t.Fatal(err)
	}
	// The project's tests, which README's check runs.
	if err := os.WriteFile(filepath.Join(repo, "Makefile"), []byte("test:\n\t@echo all 3 tests pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "-q", "-m", "tests")
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME", "XDG_DATA_HOME", "CONTINUO_DATA_DIR", "CONTINUO_DATABASE_URL", "CONTINUO_LISTEN":
			continue
		}
		env = append(env, kv)
	}
	// Only the port differs from the README: tests must not need 7300.
	env = append(env, "HOME="+home, "CONTINUO_LISTEN=127.0.0.1:0")
	run := func(args []string) *exec.Cmd {
		cmd := exec.Command(binary, args...)
		cmd.Env, cmd.Dir = env, repo
		return cmd
	}

	serveArgs := readmeCommand(t, "Install and run", "continuo serve ")
	if strings.Join(serveArgs, " ") != "serve" {
		t.Fatalf("README's run command is %v", serveArgs)
	}
	serve := run(serveArgs)
	var stderr syncbuf.Buffer
	serve.Stderr = &stderr
	out, err := serve.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		serve.Process.Signal(syscall.SIGKILL)
		serve.Wait()
		noRace(t, "continuo serve", stderr.String())
	})
	// The text announcement, up to the Codex snippet, its last part.
	var text strings.Builder
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		text.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "bearer_token_env_var") {
			break
		}
	}
	go io.Copy(io.Discard, out)
	announce := text.String()
	mcpURL := regexp.MustCompile(`MCP endpoint:\s+(\S+)`).FindStringSubmatch(announce)
	dataLine := regexp.MustCompile(`Data directory:\s+(\S+)`).FindStringSubmatch(announce)
	if mcpURL == nil || dataLine == nil {
		t.Fatalf("announcement:\n%s\nstderr: %s", announce, stderr.String())
	}
	if want := filepath.Join(home, ".local", "share", "continuo"); dataLine[1] != want {
		t.Errorf("data directory %s, want %s", dataLine[1], want)
	}
	for _, want := range []string{"MCP endpoint:   " + mcpURL[1] + " (toolsets: continuity)", "Other toolsets: " + mcpURL[1] + "/x/TOOLSET",
		"Project:        myrepo", "Admin token (shown once", "continuo project remove myrepo",
		"continuo token create --principal alice --scopes sessions:read,sessions:write,project:write --grant myrepo:write",
		"Open the dashboard"} {
		if !strings.Contains(announce, want) {
			t.Errorf("the first start does not say %q:\n%s", want, announce)
		}
	}

	signIn := regexp.MustCompile(`(?m)^\s+(http://\S+/login\?code=\S+)$`).FindStringSubmatch(announce)
	if signIn == nil || !strings.HasPrefix(signIn[1], strings.TrimSuffix(mcpURL[1], "/mcp")+"/") {
		t.Fatalf("no sign-in link for %s in the announcement:\n%s", mcpURL[1], announce)
	}

	// README's check, added beside the running server.
	checkArgs := readmeCommand(t, "Install and run", "continuo project check add")
	if out, err := run(checkArgs).CombinedOutput(); err != nil {
		t.Fatalf("continuo %v: %v\n%s", checkArgs, err, out)
	}
	checkName := checkArgs[4] // project check add PROJECT CHECK -- …

	tokenArgs := readmeCommand(t, "Connect a client", "continuo token create --principal alice")
	tokOut, err := run(tokenArgs).Output()
	if err != nil {
		t.Fatalf("continuo %v: %v", tokenArgs, err)
	}
	var tok struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(tokOut, &tok); err != nil || tok.Token == "" {
		t.Fatalf("continuo %v printed %q (the README's command must print JSON): %v", tokenArgs, tokOut, err)
	}
	check := func(what string, cs *mcp.ClientSession) {
		ps := must(t, cs, "list_projects", map[string]any{})["projects"].([]any)
		if len(ps) != 1 || ps[0].(map[string]any)["name"] != "myrepo" {
			t.Errorf("%s: list_projects = %v, want myrepo", what, ps)
		}
	}
	alice := connect(t, mcpURL[1], tok.Token)
	check("HTTP client with the README's token", alice)

	// Work as "Working with sessions" says: a session, its progress, the check.
	w := must(t, alice, "work_on_project", map[string]any{"project": "myrepo", "instruction": "Make the tests pass."})
	sid := w["session_id"].(string)
	must(t, alice, "post_session_message", map[string]any{"session_id": sid, "kind": "progress", "tags": []string{"handoff"},
		"text": "Done: nothing yet. Next: run the tests. Verify: run_validation test."})
	v := must(t, alice, "run_validation", map[string]any{"session_id": sid, "check": checkName, "wait_secs": 60})
	vr := v["run"].(map[string]any)
	if vr["state"] != "succeeded" || vr["output"].(map[string]any)["bytes"] != float64(len("all 3 tests pass\n")) {
		t.Fatalf("run_validation %s: %v", checkName, v)
	}
	brief := must(t, alice, "read_session_handoff", map[string]any{"session_id": sid})["handoff_brief"].(map[string]any)
	if st := brief["validation"].(map[string]any)["status"]; st != "passed" {
		t.Errorf("the brief's validation after the check passed: %v", brief["validation"])
	}

	// The printed link signs a browser in to the dashboard, which shows the
	// project, the session and the run.
	if page := signInWith(t, signIn[1]); !strings.Contains(page, `class="who">admin<`) || !strings.Contains(page, "myrepo") {
		t.Errorf("the dashboard after the printed sign-in link:\n%s", page)
	}

	// stderr: one line per tool call (five so far), no protocol noise.
	logs := stderr.String()
	if n := strings.Count(logs, `msg="tool call"`); n != 5 || strings.Contains(logs, "session connected") || strings.Contains(logs, "session initialized") {
		t.Errorf("serve's stderr after five tool calls (%d tool call lines):\n%s", n, logs)
	}
	// Claude Code's stdio line: `claude mcp add continuo -- /path/to/continuo stdio …`.
	line := readmeCommand(t, "Connect a client", "claude mcp add continuo --")
	i := 0
	for i < len(line) && line[i] != "stdio" {
		i++
	}
	if i == len(line) {
		t.Fatalf("README's stdio line: %v", line)
	}
	stdio := run(line[i:])
	var stdioErr syncbuf.Buffer
	stdio.Stderr = &stdioErr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-readme", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: stdio}, nil)
	if err != nil {
		t.Fatalf("continuo %v: %v\n%s", line[i:], err, stdioErr.String())
	}
	defer cs.Close()
	check("stdio as in the README", cs)
	if !strings.Contains(stdioErr.String(), "data_dir="+strconv.Quote(dataLine[1])) && !strings.Contains(stdioErr.String(), "data_dir="+dataLine[1]) {
		t.Errorf("stdio does not print its data directory: %s", stdioErr.String())
	}
}

// With nothing granted, list_projects says why, instead of an empty list
// that tells the model nothing.
func TestListProjectsHint(t *testing.T) {
	data := dataDir(t, "sqlite")
	srv := start(t, data, t.TempDir())
	cs := connect(t, srv.URL, token(t, data, "alice", "sessions:read"))
	r := must(t, cs, "list_projects", map[string]any{})
	hint, _ := r["hint"].(string)
	if len(r["projects"].([]any)) != 0 || !strings.Contains(hint, "continuo project grant PROJECT alice:write") {
		t.Fatalf("list_projects without a grant: %v", r)
	}
}
