package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coder/acp-go-sdk"

	"github.com/continuo-dev/continuo/internal/proc"
)

// An ACP turn is one process: the agent is started for the turn, in the
// turn's directory and with exactly Config.Env, and the client side of the
// Agent Client Protocol (v1, newline-delimited JSON-RPC on its stdin and
// stdout, github.com/coder/acp-go-sdk) runs initialize, session/new and one
// session/prompt; the process group is stopped when the turn ends, however
// it ends. The client offers the agent no file system and no terminal: a
// delegated agent works in its directory with its own tools, and asks
// permission for them, which AllowTools decides (acpclient.go). Its stderr
// is read and discarded: it may print anything, its environment included.

// The error kinds of an ACP turn (Result.ErrorKind).
const (
	acpIncomplete    = "incomplete"
	acpRefusal       = "refusal"
	acpProcessExited = "process_exited"
	acpProtocolError = "protocol_error"
)

// acpCancelWait is how long a cancelled turn waits, after session/cancel,
// for the prompt to end with stopReason cancelled before the process group
// is stopped; acpStopGrace is the grace Stop gives the group between
// SIGTERM and SIGKILL. Variables for the tests.
var (
	acpCancelWait = 5 * time.Second
	acpStopGrace  = time.Second
)

// acpToolKinds are the tool kinds of ACP v1: what AllowTools may name.
var acpToolKinds = []acp.ToolKind{
	acp.ToolKindRead, acp.ToolKindEdit, acp.ToolKindDelete, acp.ToolKindMove, acp.ToolKindSearch,
	acp.ToolKindExecute, acp.ToolKindThink, acp.ToolKindFetch, acp.ToolKindSwitchMode, acp.ToolKindOther,
}

type acpProvider struct {
	cfg   Config
	allow map[string]bool
}

// newACP checks an acp provider's configuration: a command to start, and
// tool kinds of ACP v1 in AllowTools.
func newACP(cfg Config) (Provider, error) {
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, fmt.Errorf("provider %q: acp: command is empty", cfg.ID)
	}
	allow := map[string]bool{}
	for _, k := range cfg.AllowTools {
		if !slices.Contains(acpToolKinds, acp.ToolKind(k)) {
			return nil, fmt.Errorf("provider %q: acp: allow_tools: %q is not an ACP tool kind (%s)", cfg.ID, k, acpKindList())
		}
		allow[k] = true
	}
	cfg.Command = slices.Clone(cfg.Command)
	cfg.Env = slices.Clone(cfg.Env)
	cfg.AllowTools = slices.Clone(cfg.AllowTools)
	return &acpProvider{cfg: cfg, allow: allow}, nil
}

func acpKindList() string {
	s := make([]string, len(acpToolKinds))
	for i, k := range acpToolKinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

func (a *acpProvider) Config() Config {
	c := a.cfg
	c.Command = slices.Clone(c.Command)
	c.Env = slices.Clone(c.Env)
	c.AllowTools = slices.Clone(c.AllowTools)
	return c
}

// acpProcess is a started agent and the client's connection to it.
type acpProcess struct {
	p      *proc.Process
	stdin  *acpStdin
	stdout io.ReadCloser
	conn   *acp.ClientSideConnection
}

// acpStdin is the agent's stdin; it remembers that a write failed, which
// means the agent is gone.
type acpStdin struct {
	w      io.WriteCloser
	failed atomic.Bool
}

func (s *acpStdin) Write(b []byte) (int, error) {
	n, err := s.w.Write(b)
	if err != nil {
		s.failed.Store(true)
	}
	return n, err
}

// acpGate is a reader that reads once open is closed.
type acpGate struct {
	r    io.Reader
	open chan struct{}
}

func (g *acpGate) Read(b []byte) (int, error) {
	<-g.open
	return g.r.Read(b)
}

// acpDiscardLog takes the SDK's diagnostics, which quote what the agent sent.
var acpDiscardLog = slog.New(slog.DiscardHandler)

// start starts the agent in dir with exactly cfg.Env, its stderr drained
// and discarded.
func (a *acpProvider) start(dir string, c *acpClient) (*acpProcess, error) {
	p, stdin, stdout, err := proc.StartPipes(proc.Spec{Argv: a.cfg.Command, Dir: dir, Env: a.cfg.Env})
	if err != nil {
		return nil, err
	}
	in := &acpStdin{w: stdin}
	// The SDK's reader starts with the connection and logs through the
	// logger SetLogger sets afterwards, unsynchronized: it reads nothing
	// until the logger is set.
	gate := &acpGate{r: stdout, open: make(chan struct{})}
	conn := acp.NewClientSideConnection(c, in, gate)
	conn.SetLogger(acpDiscardLog)
	close(gate.open)
	return &acpProcess{p: p, stdin: in, stdout: stdout, conn: conn}, nil
}

// stop stops the agent's process group and closes the pipes, which ends
// the connection's reader even if something outside the group holds the
// agent's stdout.
func (t *acpProcess) stop() (exitCode int) {
	t.stdin.w.Close()
	t.p.Stop(acpStopGrace)
	code, _ := t.p.Wait()
	t.stdout.Close()
	<-t.conn.Done()
	return code
}

// broken reports whether err means the connection to the agent broke (it
// exited, closed its stdout, or its stdin could not be written) rather
// than an error the agent answered with. The SDK fails a request whose
// peer disconnected with its own internal error, told apart by its data.
func (t *acpProcess) broken(err error) bool {
	if t.stdin.failed.Load() {
		return true
	}
	select {
	case <-t.conn.Done():
	default:
		return false
	}
	var re *acp.RequestError
	if !errors.As(err, &re) {
		return true // not from the wire at all
	}
	m, _ := re.Data.(map[string]any)
	s, _ := m["error"].(string)
	return re.Code == -32603 && strings.HasPrefix(s, "peer disconnected")
}

func acpInitialize() acp.InitializeRequest {
	version := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		version = bi.Main.Version
	}
	return acp.InitializeRequest{
		ProtocolVersion: acp.ProtocolVersionNumber,
		// No fs, no terminal: the agent reads and writes nothing through us.
		ClientCapabilities: acp.ClientCapabilities{
			Fs:       acp.FileSystemCapabilities{ReadTextFile: false, WriteTextFile: false},
			Terminal: false,
		},
		ClientInfo: &acp.Implementation{Name: "continuo", Version: version},
	}
}

// acpOutcome is how the calls of a turn ended.
type acpOutcome struct {
	resp    acp.PromptResponse
	err     error
	broken  bool   // the connection broke
	badWire string // a protocol violation we found ourselves
}

// Run runs one turn: start the agent, initialize, session/new, one
// session/prompt; then stop its process group.
func (a *acpProvider) Run(ctx context.Context, req Request, sink Sink) Result {
	if req.Dir == "" {
		return Result{ErrorKind: acpProcessExited} // nowhere to start it
	}
	dir, err := filepath.Abs(req.Dir)
	if err != nil {
		return Result{ErrorKind: acpProcessExited}
	}
	c := newACPClient(a.allow)
	t, err := a.start(dir, c)
	if err != nil {
		// The agent could not be started (Check says why).
		close(c.done)
		return Result{ErrorKind: acpProcessExited}
	}
	stopped := false
	defer func() {
		close(c.done) // what the agent still sends is dropped
		if !stopped {
			t.stop()
		}
	}()

	// The calls run on their own goroutine with a context that only ends
	// when Run does: the SDK would answer a cancelled context with
	// $/cancel_request, and ACP cancels a turn with session/cancel.
	callCtx, endCalls := context.WithCancel(context.WithoutCancel(ctx))
	defer endCalls()
	outcome := make(chan acpOutcome, 1)
	go func() { outcome <- a.turn(callCtx, t, c, req, dir) }()

	// This goroutine is the Sink's: every update and decision comes here.
	var (
		cancelling bool
		waitCancel <-chan time.Time
	)
	ctxDone := ctx.Done()
	for {
		select {
		case e := <-c.out:
			e.deliver(sink)
		case <-ctxDone:
			ctxDone = nil
			cancelling = true
			c.cancelling.Store(true)
			if sid := c.session(); sid != "" {
				// Not on this goroutine: a write to an agent that does not
				// read its stdin blocks, and only the timer below ends that.
				go func() { _ = t.conn.Cancel(callCtx, acp.CancelNotification{SessionId: acp.SessionId(sid)}) }()
				tm := time.NewTimer(acpCancelWait)
				defer tm.Stop() // once: ctxDone is nil from here on
				waitCancel = tm.C
			} else {
				// No turn to cancel yet: stop the agent.
				t.stop()
				stopped = true
			}
		case <-waitCancel:
			waitCancel = nil
			t.stop() // the calls now fail: the connection is gone
			stopped = true
		case o := <-outcome:
			return acpResult(o, cancelling)
		}
	}
}

// turn runs initialize, session/new and session/prompt.
func (a *acpProvider) turn(ctx context.Context, t *acpProcess, c *acpClient, req Request, dir string) acpOutcome {
	fail := func(err error) acpOutcome { return acpOutcome{err: err, broken: t.broken(err)} }
	init, err := t.conn.Initialize(ctx, acpInitialize())
	if err != nil {
		return fail(err)
	}
	if init.ProtocolVersion != acp.ProtocolVersionNumber {
		return acpOutcome{badWire: "protocol version"}
	}
	servers := []acp.McpServer{}
	if m := req.MCP; m != nil {
		if init.AgentCapabilities.McpCapabilities.Http {
			servers = append(servers, acp.McpServer{Http: &acp.McpServerHttpInline{
				Type:    "http",
				Name:    m.Name,
				Url:     m.URL,
				Headers: []acp.HttpHeader{{Name: "Authorization", Value: "Bearer " + m.Token}},
			}})
			c.emit(acpEvent{kind: "tool", text: acpOneLine("MCP server " + m.Name + " attached")})
		} else {
			c.emit(acpEvent{kind: "tool", text: acpOneLine("MCP server " + m.Name + " not attached: the agent does not take HTTP MCP servers")})
		}
	}
	sess, err := t.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: dir, McpServers: servers})
	if err != nil {
		return fail(err)
	}
	if sess.SessionId == "" {
		return acpOutcome{badWire: "no session id"}
	}
	c.setSession(string(sess.SessionId))
	resp, err := t.conn.Prompt(ctx, acp.PromptRequest{
		SessionId: sess.SessionId,
		Prompt:    []acp.ContentBlock{acp.TextBlock(req.Prompt)},
	})
	if err != nil {
		return fail(err)
	}
	return acpOutcome{resp: resp}
}

// acpResult maps how the calls ended to a Result. After a cancel, a turn
// that ended by itself (end_turn, max_tokens, refusal…) keeps its own
// outcome; one that ended cancelled, with an error or with the agent gone
// was stopped.
func acpResult(o acpOutcome, cancelling bool) Result {
	if o.err != nil || o.badWire != "" {
		switch {
		case cancelling:
			return Result{Stopped: true}
		case o.broken:
			return Result{ErrorKind: acpProcessExited}
		default:
			// A JSON-RPC error from the agent, or a violation: its
			// message is never shown (it may hold anything).
			return Result{ErrorKind: acpProtocolError}
		}
	}
	r := Result{Usage: acpUsage(o.resp.Usage)}
	switch o.resp.StopReason {
	case acp.StopReasonEndTurn:
	case acp.StopReasonMaxTokens, acp.StopReasonMaxTurnRequests:
		r.ErrorKind = acpIncomplete
	case acp.StopReasonRefusal:
		r.ErrorKind = acpRefusal
	case acp.StopReasonCancelled:
		if cancelling {
			r.Stopped = true
		} else {
			r.ErrorKind = acpProtocolError // cancelled without being asked
		}
	default:
		r.ErrorKind = acpProtocolError
	}
	return r
}

func acpUsage(u *acp.Usage) *Usage {
	if u == nil {
		return nil
	}
	return &Usage{InputTokens: int64(u.InputTokens), OutputTokens: int64(u.OutputTokens), TotalTokens: int64(u.TotalTokens)}
}

// Check starts the agent in an empty temporary directory, initializes it
// and stops it. Its error names the command, never an environment value
// or what the agent answered.
func (a *acpProvider) Check(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "continuo-acp-check-")
	if err != nil {
		return fmt.Errorf("provider %q: %w", a.cfg.ID, err)
	}
	defer os.RemoveAll(dir)
	c := newACPClient(a.allow)
	close(c.done) // nobody listens: updates and decisions are dropped
	c.cancelling.Store(true)
	t, err := a.start(dir, c)
	if err != nil {
		return fmt.Errorf("provider %q: acp agent %q could not be started: %w", a.cfg.ID, a.cfg.Command[0], err)
	}
	init, err := t.conn.Initialize(ctx, acpInitialize())
	broken := err != nil && t.broken(err)
	code := t.stop()
	name := a.cfg.Command[0]
	var re *acp.RequestError
	switch {
	case err == nil && init.ProtocolVersion != acp.ProtocolVersionNumber:
		return fmt.Errorf("provider %q: acp agent %q speaks ACP protocol version %d, not %d", a.cfg.ID, name, init.ProtocolVersion, acp.ProtocolVersionNumber)
	case err == nil:
	case ctx.Err() != nil:
		return fmt.Errorf("provider %q: acp agent %q: %w", a.cfg.ID, name, ctx.Err())
	case broken:
		return fmt.Errorf("provider %q: acp agent %q exited before it answered initialize (exit code %d)", a.cfg.ID, name, code)
	case errors.As(err, &re):
		// Only the code: the message may hold anything.
		return fmt.Errorf("provider %q: acp agent %q answered initialize with JSON-RPC error %d", a.cfg.ID, name, re.Code)
	default:
		return fmt.Errorf("provider %q: acp agent %q: initialize failed", a.cfg.ID, name)
	}
	return nil
}
