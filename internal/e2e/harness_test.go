package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/continuo-dev/continuo/internal/store/pgtest"
	"github.com/continuo-dev/continuo/internal/syncbuf"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// binary is the continuo binary built once for the package's tests.
var binary string

// buildFlags are the flags binary is built with (race_test.go adds -race).
var buildFlags []string

func TestMain(m *testing.M) {
	if os.Getenv(carrierEnv) != "" {
		// TestContinuityStress started this binary as one of its carrier
		// processes: it is that carrier, and nothing else.
		os.Exit(carrierMain())
	}
	// A race-instrumented binary sleeps a second at exit by default, which
	// every CLI command of every test would pay; a race is reported when it
	// happens, not at exit. Every process the tests start inherits this.
	os.Setenv("GORACE", "atexit_sleep_ms=0")
	dir, err := os.MkdirTemp("", "continuo-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "continuo")
	args := append(append([]string{"build"}, buildFlags...), "-o", binary, "github.com/continuo-dev/continuo/cmd/continuo")
	build := exec.Command("go", args...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build continuo:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is a running `continuo serve` process.
type server struct {
	t       *testing.T
	dataDir string
	cmd     *exec.Cmd
	URL     string          // the MCP endpoint
	Base    string          // http://host:port
	Admin   string          // the admin token, on the first start only
	Project string          // the project this start registered (its checkout), if any
	Hint    string          // how to register the checkout this start could not
	SignIn  string          // the admin's dashboard sign-in link, on the first start only
	Dash    string          // the dashboard's URL ("" when it is off)
	Issuer  string          // the OAuth issuer ("" when OAuth is off)
	stderr  *syncbuf.Buffer // safe to read while the process runs
}

// announcement is what `serve --json` prints first.
type announcement struct {
	MCPURL     string `json:"mcp_url"`
	Listen     string `json:"listen"`
	AdminToken string `json:"admin_token"`
	ProjectID  string `json:"project_id"`
	Hint       string `json:"project_hint"`
	SignIn     string `json:"sign_in_url"`
	Dash       string `json:"dashboard_url"`
	Issuer     string `json:"oauth_issuer"`
}

// databases maps a data directory to the PostgreSQL database its commands
// use (none: the data directory's own SQLite file).
var databases sync.Map // data dir → database URL

// dataDir returns a new data directory for engine: "sqlite" (its own
// database file) or "postgres" (a fresh database, shared by every server
// and command started with the returned directory — and by other data
// directories bound to it with useDatabase).
func dataDir(t *testing.T, engine string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	if engine == "postgres" {
		useDatabase(dir, pgtest.Database(t))
	}
	return dir
}

// useDatabase binds a data directory to a PostgreSQL database.
func useDatabase(dir, url string) { databases.Store(dir, url) }

// databaseURL is the database of a data directory ("" for SQLite).
func databaseURL(dir string) string {
	if v, ok := databases.Load(dir); ok {
		return v.(string)
	}
	return ""
}

// command runs the continuo binary on dataDir (and its database).
func command(dataDir string, args ...string) *exec.Cmd {
	cmd := exec.Command(binary, append(args, "--data-dir", dataDir)...)
	cmd.Env = append(os.Environ(), databaseEnv(dataDir)...)
	return cmd
}

// engines are the store engines the e2e tests that concern storage run on.
var engines = []string{"sqlite", "postgres"}

// eachEngine runs fn as a subtest per engine; PostgreSQL is skipped
// without CONTINUO_TEST_POSTGRES_URL (and fails without it under CI=true).
func eachEngine(t *testing.T, fn func(t *testing.T, engine string)) {
	for _, e := range engines {
		t.Run(e, func(t *testing.T) {
			if e == "postgres" {
				pgtest.BaseURL(t)
			}
			fn(t, e)
		})
	}
}

// start runs `continuo serve` on dataDir, from workDir (which decides the
// bootstrapped project), with extra flags, and waits until it has announced
// itself.
func start(t *testing.T, dataDir, workDir string, extra ...string) *server {
	t.Helper()
	return startEnv(t, dataDir, workDir, nil, extra...)
}

// startEnv is start with extra environment variables (NAME=value).
func startEnv(t *testing.T, dataDir, workDir string, env []string, extra ...string) *server {
	t.Helper()
	cmd := command(dataDir, append([]string{"serve", "--json", "--listen", "127.0.0.1:0"}, extra...)...)
	cmd.Env = append(cmd.Env, env...)
	cmd.Dir = workDir
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, dataDir: dataDir, cmd: cmd, stderr: &stderr}
	t.Cleanup(func() {
		s.kill()
		noRace(t, "continuo serve", stderr.String())
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		for sc.Scan() { // keep draining so the process never blocks on stdout
		}
	}()
	select {
	case l, ok := <-line:
		if !ok {
			t.Fatalf("continuo serve exited before announcing itself: %s", stderr.String())
		}
		var a announcement
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			t.Fatalf("announcement %q: %v", l, err)
		}
		s.URL, s.Base, s.Admin, s.Project, s.Hint, s.Issuer = a.MCPURL, "http://"+a.Listen, a.AdminToken, a.ProjectID, a.Hint, a.Issuer
		s.SignIn, s.Dash = a.SignIn, a.Dash
	case <-time.After(60 * time.Second):
		t.Fatalf("continuo serve did not announce itself: %s", stderr.String())
	}
	return s
}

// startFails runs `continuo serve` on dataDir where it must refuse to
// start, and returns its exit status and stderr.
func startFails(t *testing.T, dataDir, workDir string, extra ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append([]string{"serve", "--json", "--listen", "127.0.0.1:0", "--data-dir", dataDir}, extra...)
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), databaseEnv(dataDir)...)
	cmd.Dir = workDir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || ctx.Err() != nil {
		t.Fatalf("continuo serve should have refused to start: %v\nstdout %s\nstderr %s", err, out, stderr.String())
	}
	return exit.ExitCode(), stderr.String()
}

// databaseEnv is the environment that binds a command to dataDir's
// PostgreSQL database, if it has one.
func databaseEnv(dataDir string) []string {
	if u := databaseURL(dataDir); u != "" {
		return []string{"CONTINUO_DATABASE_URL=" + u}
	}
	return nil
}

// kill stops the process with SIGKILL: no shutdown code runs.
func (s *server) kill() {
	if s.cmd.Process != nil && s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		_ = s.cmd.Wait()
	}
}

// stop stops the process gracefully.
func (s *server) stop() {
	if s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		_ = s.cmd.Wait()
	}
}

// cli runs a continuo CLI command on dataDir and returns its stdout.
func cli(t *testing.T, dataDir string, args ...string) string {
	t.Helper()
	cmd := command(dataDir, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("continuo %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}

// cliJSON runs a CLI command with --json and decodes its output.
func cliJSON(t *testing.T, dataDir string, args ...string) map[string]any {
	t.Helper()
	var v map[string]any
	out := cli(t, dataDir, append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("continuo %v: output %q: %v", args, out, err)
	}
	return v
}

// token makes a token for principal with scopes, returning the secret.
func token(t *testing.T, dataDir, principal, scopes string) string {
	t.Helper()
	return cliJSON(t, dataDir, "token", "create", "--principal", principal, "--scopes", scopes)["token"].(string)
}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// at is the endpoint of one toolset under the MCP endpoint url
// (CONTRACT.md §4): url itself lists continuity, the default.
func at(url, toolset string) string { return url + "/x/" + toolset }

// connect opens an MCP client session over streamable HTTP.
func connect(t *testing.T, url, tok string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearerTransport{tok}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// connectStdio starts `continuo stdio` and opens an MCP client session on it.
func connectStdio(t *testing.T, dataDir, workDir string, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := command(dataDir, append([]string{"stdio"}, args...)...)
	cmd.Dir = workDir
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e-stdio", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect stdio: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		noRace(t, "continuo stdio", stderr.String())
	})
	return cs
}

// noRace fails the test when a race-instrumented server reported a race.
func noRace(t *testing.T, what, stderr string) {
	t.Helper()
	if strings.Contains(stderr, "WARNING: DATA RACE") {
		t.Errorf("%s reported a data race:\n%s", what, stderr)
	}
}

// result is a decoded tool result.
type result struct {
	IsError bool
	Data    map[string]any
}

// code is the error code of a failed call ("" on success).
func (r result) code() string {
	if !r.IsError {
		return ""
	}
	e, _ := r.Data["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// reason is the error's details.reason, or "".
func (r result) reason() string {
	e, _ := r.Data["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	s, _ := d["reason"].(string)
	return s
}

// call invokes a tool and decodes its structured result.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) result {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var r result
	r.IsError = res.IsError
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r.Data); err != nil {
		t.Fatalf("%s: structured content %s: %v", tool, b, err)
	}
	return r
}

// must calls a tool that must succeed.
func must(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) map[string]any {
	t.Helper()
	r := call(t, cs, tool, args)
	if r.IsError {
		t.Fatalf("%s(%v) failed: %v", tool, args, r.Data)
	}
	return r.Data
}

// gitRepo makes a git checkout with one commit and returns its path.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "demo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) { gitIn(t, dir, args...) }
	run("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# demo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("add", ".")
	run("commit", "-q", "-m", "first")
	return dir
}
