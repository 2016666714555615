package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// buildBinary builds pkg (./cmd/continuo, or ./bench/profserver when
// profiling) into dir and returns the binary's path.
func buildBinary(dir, pkg string) (string, error) {
	bin := filepath.Join(dir, "continuo")
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s: %w (run the bench from the module root)", pkg, err)
	}
	return bin, nil
}

// lockedBuffer collects a child's stderr for error messages.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 1<<20 { // keep the tail bounded
		l.b.Reset()
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// childEnv is this process's environment without CONTINUO_DATABASE_URL:
// the engine of a child is chosen by the bench (--database-url, or the
// variable set explicitly), never inherited by accident.
func childEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CONTINUO_DATABASE_URL=") {
			out = append(out, kv)
		}
	}
	return out
}

// server is a running `continuo serve` process.
type server struct {
	cmd    *exec.Cmd
	URL    string // MCP endpoint
	Base   string // http://host:port
	Token  string // admin token (first start only)
	stderr *lockedBuffer
}

type announcement struct {
	MCPURL     string `json:"mcp_url"`
	Listen     string `json:"listen"`
	AdminToken string `json:"admin_token"`
}

// startServer runs `continuo serve --json` on dataDir from workDir (which
// must not be a git checkout, so that no project is bootstrapped) and waits
// for its announcement line.
// A non-empty cpuprofile is passed to a profserver binary; extra arguments
// (--database-url URL) are appended to the command line. Its /mcp lists
// every tool (--toolsets all), as it did before toolsets: the bench
// measures the server, and its swarm phases call the owner's and the
// worker's tools on one endpoint.
func startServer(bin, dataDir, workDir, cpuprofile string, extra ...string) (*server, error) {
	cmd := exec.Command(bin, append([]string{"serve", "--json", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--toolsets", "all"}, extra...)...)
	cmd.Dir = workDir
	cmd.Env = childEnv()
	if serverGOGC != "" {
		cmd.Env = append(cmd.Env, "GOGC="+serverGOGC)
	}
	if cpuprofile != "" {
		cmd.Env = append(cmd.Env, "CONTINUO_BENCH_CPUPROFILE="+cpuprofile,
			"CONTINUO_BENCH_MEMPROFILE="+strings.TrimSuffix(cpuprofile, ".pprof")+".allocs")
	}
	s := &server{cmd: cmd, stderr: &lockedBuffer{}}
	cmd.Stderr = s.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case l, ok := <-line:
		if !ok {
			_ = cmd.Wait()
			return nil, fmt.Errorf("continuo serve exited before announcing itself: %s", s.stderr.String())
		}
		var a announcement
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			s.kill()
			return nil, fmt.Errorf("announcement %q: %w", l, err)
		}
		s.URL, s.Base, s.Token = a.MCPURL, "http://"+a.Listen, a.AdminToken
	case <-time.After(60 * time.Second):
		s.kill()
		return nil, fmt.Errorf("continuo serve did not announce itself: %s", s.stderr.String())
	}
	return s, nil
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// stop shuts the server down gracefully (SIGTERM), killing it after 20 s.
func (s *server) stop() {
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

func (s *server) kill() {
	if s.cmd.Process != nil && s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

// memory is a process's resident set size and its peak, from /proc.
type memory struct {
	RSS, HWM int64 // bytes
}

func readMemory(pid int) (memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	var m memory
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch name {
		case "VmRSS":
			m.RSS = v * 1024
		case "VmHWM":
			m.HWM = v * 1024
		}
	}
	if m.RSS == 0 {
		return m, errors.New("no VmRSS in /proc status")
	}
	return m, nil
}

// scrape reads /metrics and returns every sample by its series name
// (name, or name{labels} exactly as rendered).
func (s *server) scrape() (map[string]float64, error) {
	resp, err := http.Get(s.Base + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out, sc.Err()
}

// cliJSON runs a continuo CLI command with --json and decodes its output.
func cliJSON(bin, dataDir, workDir string, args ...string) (map[string]any, error) {
	return cliJSONEnv(bin, dataDir, workDir, nil, args...)
}

// cliJSONEnv is cliJSON with extra environment variables
// (CONTINUO_DATABASE_URL=…).
func cliJSONEnv(bin, dataDir, workDir string, env []string, args ...string) (map[string]any, error) {
	cmd := exec.Command(bin, append(args, "--json", "--data-dir", dataDir)...)
	cmd.Dir = workDir
	cmd.Env = append(childEnv(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("continuo %v: %w: %s", args, err, stderr.String())
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, fmt.Errorf("continuo %v: output %q: %w", args, out, err)
	}
	return v, nil
}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct {
	token string
	next  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// mcpClient is one MCP client session: the lean client (lean.go) or the
// official Go SDK client (sdkClient).
type mcpClient interface {
	// call invokes a tool and decodes its structured result; a tool error
	// (isError) or a JSON-RPC error is returned as an error.
	call(ctx context.Context, tool string, args map[string]any) (map[string]any, error)
	// callFast invokes a tool and only checks that it succeeded.
	callFast(ctx context.Context, tool string, args map[string]any) error
	// post is a keyed post_session_message.
	post(ctx context.Context, session, kind, text, key string) error
	// ping is a JSON-RPC ping on the session.
	ping(ctx context.Context) error
	// protocol is the negotiated MCP protocol version.
	protocol() string
	close()
}

// Client kinds (-client).
const (
	kindLean = "lean"
	kindSDK  = "sdk"
)

// dial opens an MCP client session of the given kind.
func dial(kind, url, token string) (mcpClient, error) {
	switch kind {
	case kindLean:
		return dialLean(url, token)
	case kindSDK:
		return connect(url, token)
	}
	return nil, fmt.Errorf("unknown client kind %q", kind)
}

// clientLabel names a client kind and its protocol in the report.
func clientLabel(kind, protocol string) string {
	mode := "stateful"
	if protocol >= "2026-07-28" {
		mode = "stateless"
	}
	if kind == kindSDK {
		return fmt.Sprintf("SDK client, %s %s", protocol, mode)
	}
	return fmt.Sprintf("lean client, %s %s", protocol, mode)
}

// sdkClient is one MCP client session of the official Go SDK over
// streamable HTTP, with its own HTTP transport (connection pool), as a
// separate agent process would have.
type sdkClient struct {
	cs *mcp.ClientSession
}

// serverGOGC, when set (-server-gogc), is the GOGC of the server process.
var serverGOGC string

// protocolVersion (-protocol) is the MCP protocol version the SDK clients
// ask for: 2025-11-25 (stateful sessions, what Claude Code, Codex and
// Claude Desktop speak) unless told otherwise; 2026-07-28, the SDK's own
// default, is stateless.
var protocolVersion string

func connect(url, token string) (*sdkClient, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 8
	c := mcp.NewClient(&mcp.Implementation{Name: "continuo-bench", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearerTransport{token: token, next: tr}}, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", url, err)
	}
	return &sdkClient{cs: cs}, nil
}

func (c *sdkClient) close() { _ = c.cs.Close() }

func (c *sdkClient) protocol() string {
	if ir := c.cs.InitializeResult(); ir != nil {
		return ir.ProtocolVersion
	}
	return "?"
}

// call invokes a tool; a tool error (isError) is returned as an error.
func (c *sdkClient) call(ctx context.Context, tool string, args map[string]any) (map[string]any, error) {
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	var data map[string]any
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &data); err != nil {
			return nil, fmt.Errorf("%s: structured content: %w", tool, err)
		}
	}
	if res.IsError {
		return data, fmt.Errorf("%s: %w", tool, &callError{What: "isError", Msg: fmt.Sprint(data["error"])})
	}
	return data, nil
}

// callFast invokes a tool and only checks that it succeeded (no decoding of
// the structured result, to keep the client's own CPU use low).
func (c *sdkClient) callFast(ctx context.Context, tool string, args map[string]any) error {
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	if res.IsError {
		return fmt.Errorf("%s: %w", tool, &callError{What: "isError", Msg: fmt.Sprint(res.StructuredContent)})
	}
	return nil
}

func (c *sdkClient) post(ctx context.Context, session, kind, text, key string) error {
	return c.callFast(ctx, "post_session_message", map[string]any{
		"session_id": session, "kind": kind, "text": text, "delivery_key": key})
}

func (c *sdkClient) ping(ctx context.Context) error {
	if err := c.cs.Ping(ctx, &mcp.PingParams{}); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

// procCPU is the user+system CPU time a process has used so far.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may contain spaces; fields after it are
	// counted from the closing parenthesis. utime and stime are fields 14
	// and 15, in clock ticks (USER_HZ, 100 on Linux).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("bad /proc stat")
	}
	return time.Duration(ut+st) * (time.Second / 100), nil
}

// selfCPU is the user+system CPU time this process has used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuMeter measures the CPU used by the server and by this process
// between start and stop.
type cpuMeter struct {
	pid          int
	server, self time.Duration
}

func startCPU(pid int) cpuMeter {
	s, _ := procCPU(pid)
	return cpuMeter{pid: pid, server: s, self: selfCPU()}
}

// used returns the CPU the server and this process used since start.
func (m cpuMeter) used() (server, self time.Duration) {
	s, _ := procCPU(m.pid)
	return s - m.server, selfCPU() - m.self
}
