//go:build linux

package provider

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/continuo-dev/continuo/internal/proc"
)

// These tests run a real ACP agent, interop/acp-agent/agent.mjs on the
// official TypeScript SDK, as the provider's subprocess (and, for what that
// agent cannot do, a Go agent on acp-go-sdk's agent side: acp_agent_test.go).
// None sleeps to wait for something: they wait on Run, or poll /proc with a
// deadline.

// acpSkipOrFail skips a test whose prerequisites are missing, except under
// CI=true, which must never skip silently.
func acpSkipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format+" (CI=true: not skipping)", args...)
	}
	t.Skipf(format, args...)
}

// tsAgent is the argv of the TypeScript agent, or skips (fails under CI).
func tsAgent(t *testing.T) []string {
	t.Helper()
	interop, err := filepath.Abs(filepath.Join("..", "..", "interop"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(interop, "node_modules", "@agentclientprotocol", "sdk", "package.json")); err != nil {
		acpSkipOrFail(t, "%s/node_modules/@agentclientprotocol/sdk is missing: run `npm ci` in interop", interop)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		acpSkipOrFail(t, "node is not on PATH")
	}
	return []string{node, filepath.Join(interop, "acp-agent", "agent.mjs")}
}

// tsProvider is an acp provider running the TypeScript agent with PATH and
// extra as its whole environment.
func tsProvider(t *testing.T, allow []string, extra ...string) Provider {
	t.Helper()
	p, err := newACP(Config{
		ID:         "test-acp",
		Kind:       KindACP,
		Command:    tsAgent(t),
		Env:        append([]string{"PATH=" + os.Getenv("PATH")}, extra...),
		AllowTools: allow,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// acpCall is one Sink call: Text when kind is "".
type acpCall struct{ kind, text string }

// acpSink records the calls, and that every one came from the goroutine
// that called Run.
type acpSink struct {
	mu     sync.Mutex
	calls  []acpCall
	gid    uint64
	others int // calls from another goroutine
	onText func(string)
}

func acpGoid() uint64 {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	f := strings.Fields(string(b)) // "goroutine 42 [running]: ..."
	n, _ := strconv.ParseUint(f[1], 10, 64)
	return n
}

func (s *acpSink) add(c acpCall) {
	s.mu.Lock()
	s.calls = append(s.calls, c)
	if acpGoid() != s.gid {
		s.others++
	}
	s.mu.Unlock()
}

func (s *acpSink) Text(x string) {
	s.add(acpCall{text: x})
	if s.onText != nil {
		s.onText(x)
	}
}

func (s *acpSink) Event(kind, text string) { s.add(acpCall{kind: kind, text: text}) }

func (s *acpSink) text() string {
	var b strings.Builder
	for _, c := range s.calls {
		if c.kind == "" {
			b.WriteString(c.text)
		}
	}
	return b.String()
}

func (s *acpSink) events(kind string) []string {
	var out []string
	for _, c := range s.calls {
		if c.kind == kind {
			out = append(out, c.text)
		}
	}
	return out
}

// contains reports whether any call's text holds x.
func (s *acpSink) contains(x string) bool {
	for _, c := range s.calls {
		if strings.Contains(c.text, x) {
			return true
		}
	}
	return false
}

// acpTurnTimeout bounds a turn: generous, for a loaded machine under -race.
const acpTurnTimeout = 60 * time.Second

func acpRunTurn(t *testing.T, ctx context.Context, p Provider, req Request, sink *acpSink) Result {
	t.Helper()
	if req.Dir == "" {
		req.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(ctx, acpTurnTimeout)
	defer cancel()
	sink.gid = acpGoid()
	r := p.Run(ctx, req, sink)
	if sink.others != 0 {
		t.Errorf("%d Sink calls came from another goroutine than Run's", sink.others)
	}
	return r
}

func acpRun(t *testing.T, p Provider, prompt string) (Result, *acpSink) {
	t.Helper()
	s := &acpSink{}
	return acpRunTurn(t, context.Background(), p, Request{Prompt: prompt}, s), s
}

func TestACPStream(t *testing.T) {
	p := tsProvider(t, nil)
	r, s := acpRun(t, p, "stream")
	if r != (Result{}) {
		t.Fatalf("Result %+v, want success", r)
	}
	// Every update, in the order the agent sent them; the commands update
	// is ignored.
	want := []acpCall{
		{"", "Hello"},
		{"thought", "thinking about the greeting"},
		{"", ", "},
		{"tool", "List files in_progress"},
		{"tool", "List files completed"},
		{"tool", "plan: 3 entries, 1 completed, 1 in progress: wave"},
		{"", "world"},
		{"", "!"},
	}
	if !slices.Equal(s.calls, want) {
		t.Errorf("Sink calls\n%q\nwant\n%q", s.calls, want)
	}
}

func TestACPClientOffersNoFilesOrTerminal(t *testing.T) {
	p := tsProvider(t, nil)
	dir := t.TempDir()
	s := &acpSink{}
	r := acpRunTurn(t, context.Background(), p, Request{Prompt: "caps", Dir: dir}, s)
	if r != (Result{}) {
		t.Fatalf("Result %+v", r)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := "fs.read=false fs.write=false terminal=false\ncwd " + real + "\nsession-cwd " + dir + "\n"
	if s.text() != want {
		t.Errorf("agent saw\n%s\nwant\n%s", s.text(), want)
	}
}

// acpPidLine is the agent's first chunk in the slow scripts.
var acpPidLine = regexp.MustCompile(`^pid (\d+)\n$`)

func acpWaitGroupGone(t *testing.T, pgid int) {
	t.Helper()
	end := time.Now().Add(30 * time.Second)
	for {
		pids, err := proc.GroupMembers(pgid)
		if err != nil {
			t.Fatal(err)
		}
		if len(pids) == 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("group %d still has %v", pgid, pids)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// cancelAtFirstTick runs prompt and cancels its context at the first tick,
// once the agent's group (the agent and its sleeping child) is seen.
func cancelAtFirstTick(t *testing.T, p Provider, prompt string) (r Result, s *acpSink, pgid int, sinceCancel time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cancelled time.Time
	s = &acpSink{}
	s.onText = func(x string) {
		if m := acpPidLine.FindStringSubmatch(x); m != nil {
			pgid, _ = strconv.Atoi(m[1])
		}
		if x == "tick 0\n" && cancelled.IsZero() {
			if pgid == 0 {
				t.Error("no pid before the first tick")
			} else if pids, err := proc.GroupMembers(pgid); err != nil || len(pids) < 2 {
				t.Errorf("the agent's group has live processes %v (%v), want the agent and its child", pids, err)
			}
			cancelled = time.Now()
			cancel()
		}
	}
	r = acpRunTurn(t, ctx, p, Request{Prompt: prompt}, s)
	if cancelled.IsZero() {
		t.Fatalf("no tick: %+v, %q", r, s.calls)
	}
	return r, s, pgid, time.Since(cancelled)
}

func acpSetVar[T any](t *testing.T, v *T, x T) {
	old := *v
	*v = x
	t.Cleanup(func() { *v = old })
}

func TestACPCancel(t *testing.T) {
	// The agent answers session/cancel: the turn ends long before the
	// wait for it would have run out, and the whole group is gone.
	acpSetVar(t, &acpCancelWait, 10*time.Minute)
	p := tsProvider(t, nil)
	r, s, pgid, d := cancelAtFirstTick(t, p, "slow")
	if r != (Result{Stopped: true}) {
		t.Errorf("Result %+v, want Stopped", r)
	}
	// What the agent sent until it answered is all there.
	if !strings.HasSuffix(s.text(), "\nstopping: cancelled\n") {
		t.Errorf("the agent did not answer the cancel: %q", s.text())
	}
	if d > acpTurnTimeout/2 {
		t.Errorf("Run returned %v after the cancel", d)
	}
	acpWaitGroupGone(t, pgid)
}

func TestACPCancelIgnored(t *testing.T) {
	// The agent ignores session/cancel: after acpCancelWait its group is
	// stopped.
	const wait = 300 * time.Millisecond
	acpSetVar(t, &acpCancelWait, wait)
	p := tsProvider(t, nil)
	r, _, pgid, d := cancelAtFirstTick(t, p, "stubborn")
	if r != (Result{Stopped: true}) {
		t.Errorf("Result %+v, want Stopped", r)
	}
	if d < wait {
		t.Errorf("Run returned %v after the cancel, before acpCancelWait (%v)", d, wait)
	}
	acpWaitGroupGone(t, pgid)
}

func TestACPCancelAnswersPermissionCancelled(t *testing.T) {
	// Once session/cancel is sent, a permission request is answered with
	// the cancelled outcome, even for an allowed kind.
	acpSetVar(t, &acpCancelWait, 10*time.Minute)
	r, s, pgid, _ := cancelAtFirstTick(t, tsProvider(t, []string{"read"}), "cancelask")
	if r != (Result{Stopped: true}) {
		t.Errorf("Result %+v, want Stopped", r)
	}
	if !strings.HasSuffix(s.text(), "\nread: cancelled\n") {
		t.Errorf("the agent was told %q", s.text())
	}
	if got, want := s.events("permission"), []string{"rejected read Read late"}; !slices.Equal(got, want) {
		t.Errorf("permission events %q, want %q", got, want)
	}
	acpWaitGroupGone(t, pgid)
}

func TestACPStopsTheGroupAfterTheTurn(t *testing.T) {
	// A turn is one process group: what the agent started is stopped with
	// it when the turn ends, however it ends.
	r, s := acpRun(t, tsProvider(t, nil), "child")
	if r != (Result{}) {
		t.Fatalf("Result %+v", r)
	}
	m := acpPidLine.FindStringSubmatch(s.text())
	if m == nil {
		t.Fatalf("no pid: %q", s.text())
	}
	pgid, _ := strconv.Atoi(m[1])
	acpWaitGroupGone(t, pgid)
}

func TestACPCancelledBeforeTheTurn(t *testing.T) {
	p := tsProvider(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := &acpSink{}
	if r := acpRunTurn(t, ctx, p, Request{Prompt: "stream"}, s); r != (Result{Stopped: true}) {
		t.Errorf("Result %+v, want Stopped", r)
	}
	if s.contains("Hello") {
		t.Errorf("the turn ran: %q", s.calls)
	}
}

func TestACPPermissions(t *testing.T) {
	for _, tc := range []struct {
		name, prompt string
		allow        []string
		text         string
		decisions    []string
	}{
		{"read allowed, edit rejected", "permission", []string{"read"},
			"read: allow-once\nedit: reject-once\n",
			[]string{"allowed read Read README.md", "rejected edit Edit main.go"}},
		{"nothing allowed", "permission", nil,
			"read: reject-once\nedit: reject-once\n",
			[]string{"rejected read Read README.md", "rejected edit Edit main.go"}},
		{"no reject option", "noreject", []string{"read"},
			"edit: cancelled\n",
			[]string{"rejected edit Edit main.go"}},
		{"edit allowed", "noreject", []string{"read", "edit"},
			"edit: allow-once\n",
			[]string{"allowed edit Edit main.go"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, s := acpRun(t, tsProvider(t, tc.allow), tc.prompt)
			if r != (Result{}) {
				t.Fatalf("Result %+v", r)
			}
			if s.text() != tc.text {
				t.Errorf("the agent was told\n%s\nwant\n%s", s.text(), tc.text)
			}
			if got := s.events("permission"); !slices.Equal(got, tc.decisions) {
				t.Errorf("permission events %q, want %q", got, tc.decisions)
			}
		})
	}
}

func TestACPEndings(t *testing.T) {
	const secret = "hunter2-agent-secret"
	p := tsProvider(t, nil, "ACP_SECRET="+secret)
	for prompt, want := range map[string]Result{
		"crash":     {ErrorKind: "process_exited"},
		"refuse":    {ErrorKind: "refusal"},
		"maxtokens": {ErrorKind: "incomplete"},
		"maxturns":  {ErrorKind: "incomplete"},
		"cancelled": {ErrorKind: "protocol_error"}, // without a session/cancel
		"error":     {ErrorKind: "protocol_error"},
	} {
		t.Run(prompt, func(t *testing.T) {
			r, s := acpRun(t, p, prompt)
			if r != want {
				t.Errorf("Result %+v, want %+v", r, want)
			}
			if s.contains(secret) {
				t.Errorf("the agent's error reached the Sink: %q", s.calls)
			}
		})
	}
}

func TestACPEnvIsExactlyConfigEnv(t *testing.T) {
	// A variable of this process that the config does not map is not the
	// agent's; its stderr, where it prints every value, reaches nothing.
	t.Setenv("CONTINUO_TEST_UNMAPPED", "from-the-server")
	const secret = "s3cret-value-42"
	p := tsProvider(t, nil, "ACP_SECRET="+secret, "MAPPED=mapped value")
	r, s := acpRun(t, p, "echo-env MAPPED")
	if r != (Result{}) {
		t.Fatalf("Result %+v", r)
	}
	if want := "env ACP_SECRET,MAPPED,PATH\nMAPPED=mapped value\n"; s.text() != want {
		t.Errorf("agent's environment\n%s\nwant\n%s", s.text(), want)
	}
	if s.contains(secret) {
		t.Errorf("the agent's stderr reached the Sink: %q", s.calls)
	}
	if _, s := acpRun(t, p, "echo-env CONTINUO_TEST_UNMAPPED"); !strings.Contains(s.text(), "CONTINUO_TEST_UNMAPPED=(unset)\n") {
		t.Errorf("an unmapped variable reached the agent: %q", s.text())
	}
}

func TestACPMCPServer(t *testing.T) {
	mcp := &MCPServer{Name: "continuo", URL: "http://127.0.0.1:9/mcp", Token: "tok-very-secret"}
	for _, tc := range []struct {
		name   string
		http   bool
		mcp    *MCPServer
		text   string
		events []string
	}{
		{"attached", true, mcp, "mcp http continuo http://127.0.0.1:9/mcp with-authorization\n",
			[]string{"MCP server continuo attached"}},
		{"agent without http", false, mcp, "mcp none\n",
			[]string{"MCP server continuo not attached: the agent does not take HTTP MCP servers"}},
		{"none asked", true, nil, "mcp none\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var env []string
			if tc.http {
				env = append(env, "ACP_MCP_HTTP=1")
			}
			s := &acpSink{}
			r := acpRunTurn(t, context.Background(), tsProvider(t, nil, env...), Request{Prompt: "mcp", MCP: tc.mcp}, s)
			if r != (Result{}) {
				t.Fatalf("Result %+v", r)
			}
			if s.text() != tc.text {
				t.Errorf("agent was given\n%s\nwant\n%s", s.text(), tc.text)
			}
			if got := s.events("tool"); !slices.Equal(got, tc.events) {
				t.Errorf("tool events %q, want %q", got, tc.events)
			}
			if s.contains(mcp.Token) {
				t.Errorf("the token reached the Sink: %q", s.calls)
			}
		})
	}
}

func TestACPCheck(t *testing.T) {
	if err := tsProvider(t, nil).Check(context.Background()); err != nil {
		t.Errorf("Check: %v", err)
	}
	const secret = "check-secret-7"
	for _, tc := range []struct {
		name string
		p    Provider
		want string
	}{
		{"missing command", mustACP(t, Config{ID: "x", Command: []string{"continuo-no-such-agent"},
			Env: []string{"PATH=/usr/bin:/bin", "ACP_SECRET=" + secret}}),
			`acp agent "continuo-no-such-agent" could not be started`},
		{"initialize error", tsProvider(t, nil, "ACP_INIT=error", "ACP_SECRET="+secret),
			"answered initialize with JSON-RPC error -32603"},
		{"exits", tsProvider(t, nil, "ACP_INIT=exit", "ACP_SECRET="+secret),
			"exited before it answered initialize (exit code 4)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Check(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check: %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("Check's error names a secret: %v", err)
			}
		})
	}
}

func mustACP(t *testing.T, cfg Config) Provider {
	t.Helper()
	p, err := newACP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestACPRunWithoutAnAgent(t *testing.T) {
	p := mustACP(t, Config{ID: "x", Command: []string{"continuo-no-such-agent"}, Env: []string{"PATH=/usr/bin:/bin"}})
	if r, _ := acpRun(t, p, "stream"); r != (Result{ErrorKind: "process_exited"}) {
		t.Errorf("missing command: %+v", r)
	}
	s := &acpSink{}
	s.gid = acpGoid()
	if r := tsProvider(t, nil).Run(context.Background(), Request{Prompt: "stream"}, s); r != (Result{ErrorKind: "process_exited"}) {
		t.Errorf("no directory: %+v", r)
	}
}

func TestNewACP(t *testing.T) {
	for _, cfg := range []Config{
		{ID: "a"},
		{ID: "a", Command: []string{""}},
		{ID: "a", Command: []string{"agent"}, AllowTools: []string{"read", "reed"}},
	} {
		if _, err := newACP(cfg); err == nil {
			t.Errorf("newACP(%+v) accepted", cfg)
		}
	}
	cfg := Config{ID: "a", Kind: KindACP, Command: []string{"agent", "--acp"}, Env: []string{"A=1"}, AllowTools: []string{"read", "search"}}
	p, err := newACP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := p.Config()
	got.Command[0], got.Env[0], got.AllowTools[0] = "x", "x", "x"
	if c := p.Config(); c.Command[0] != "agent" || c.Env[0] != "A=1" || c.AllowTools[0] != "read" {
		t.Errorf("Config shares its slices: %+v", c)
	}
	cfg.Command[0] = "changed"
	if p.Config().Command[0] != "agent" {
		t.Error("newACP kept the caller's slice")
	}
}

func TestACPOneLine(t *testing.T) {
	long := strings.Repeat("é", 150) // 300 bytes
	for in, want := range map[string]string{
		"List\nfiles  now\t!":  "List files now !",
		"  trim \r\n":          "trim",
		"bad \xff byte":        "bad \uFFFD byte",
		"bell\a":               "bell",
		long:                   strings.Repeat("é", 98) + "…",
		strings.Repeat("a", 5): "aaaaa",
	} {
		got := acpOneLine(in)
		if got != want {
			t.Errorf("acpOneLine(%q) = %q, want %q", in, got, want)
		}
		if len(got) > acpMaxLine {
			t.Errorf("acpOneLine(%q) is %d bytes", in, len(got))
		}
	}
}
