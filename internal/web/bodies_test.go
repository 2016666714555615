package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/continuo-dev/continuo/internal/web"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The body bounds of every route (web.bounded): a client that sends its
// headers and then a body a byte at a time is answered or cut off within
// the body deadline, on every route the mux has, and its connection and
// goroutine are gone; a body over the cap is answered 413 with a
// structured error; and the MCP endpoint's event streams outlive the
// deadline (it bounds the body, not the response).

// conns follows the server's connections by the client's address.
type conns struct {
	mu     sync.Mutex
	closed map[string]bool
}

func (c *conns) state(conn net.Conn, s http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s == http.StateClosed || s == http.StateHijacked {
		c.closed[conn.RemoteAddr().String()] = true
	}
}

func (c *conns) isClosed(addr string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed[addr]
}

// routePath is a path the pattern matches: a toolset wildcard becomes a
// toolset's name, any other "x".
func routePath(pattern string) (method, path string) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		method, path = "", pattern
	}
	path = strings.ReplaceAll(path, "{$}", "")
	path = strings.ReplaceAll(path, "{toolset}", "continuity")
	return method, regexp.MustCompile(`\{[^}]*\}`).ReplaceAllString(path, "x")
}

// isMCP reports whether path is an MCP endpoint's (/mcp, /mcp/x/{toolset}).
func isMCP(path string) bool { return path == "/mcp" || strings.HasPrefix(path, "/mcp/x/") }

// trickle is one request whose body comes a byte per interval.
type trickle struct {
	name   string
	method string
	path   string
	header string // extra header lines
	want   int    // the status it must be answered with, 0: closed without one is as good
}

// trickleRequests are the requests TestBodyDeadlines sends: one per method
// and path of every route (a pattern without a method is tried with POST
// and GET), and on /mcp with and without a token.
func trickleRequests(t *testing.T, patterns []string, token string) []trickle {
	t.Helper()
	var out []trickle
	seen := map[string]bool{}
	posts := 0
	for _, p := range patterns {
		method, path := routePath(p)
		methods := []string{method}
		if method == "" {
			methods = []string{"POST", "GET"}
		}
		for _, m := range methods {
			if seen[m+" "+path] {
				continue
			}
			seen[m+" "+path] = true
			if m == "POST" {
				posts++
			}
			if isMCP(path) {
				out = append(out,
					trickle{name: m + " " + path + " with a token", method: m, path: path, want: http.StatusRequestTimeout,
						header: "Authorization: Bearer " + token + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"},
					trickle{name: m + " " + path + " without a token", method: m, path: path, want: http.StatusUnauthorized,
						header: "Content-Type: application/json\r\n"})
				continue
			}
			out = append(out, trickle{name: m + " " + path, method: m, path: path, want: http.StatusRequestTimeout,
				header: "Content-Type: application/x-www-form-urlencoded\r\n"})
		}
	}
	// The routes this test is about: if the mux lost them, the test would
	// pass without trying them.
	for _, must := range []string{"POST /login", "POST /oauth/login", "POST /logout", "POST /oauth/token", "POST /oauth/register",
		"POST /oauth/revoke", "POST /oauth/authorize", "POST /admin/tokens", "POST /p/x/evidence/run", "POST /w/x/reconcile", "POST /mcp",
		"POST /mcp/x/continuity"} {
		if !seen[must] {
			t.Fatalf("the mux has no route %s; routes: %v", must, patterns)
		}
	}
	if posts < 20 {
		t.Fatalf("only %d POST routes: %v", posts, patterns)
	}
	return out
}

// send opens a connection, sends req's headers and then its body a byte
// per interval until the server answers or closes. It returns the status
// (0 when closed without an answer) and the answer's body.
func (tr trickle) send(t *testing.T, addr string, interval time.Duration) (net.Conn, int, string, error) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\n%sContent-Length: 100000\r\n\r\n", tr.method, tr.path, addr, tr.header); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := conn.Write([]byte("a")); err != nil {
					return
				}
			}
		}
	}()
	// Generous: the deadline is 300 ms; a server that never cuts the body
	// off would keep this connection for 100,000 intervals.
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return conn, 0, "", fmt.Errorf("neither answered nor closed within 20 s")
		}
		return conn, 0, "", nil // closed without an answer
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// Then the server closes the connection: the rest of the body is not
	// read.
	if _, err := br.ReadByte(); err == nil {
		return conn, resp.StatusCode, string(b), fmt.Errorf("the connection stayed open after the answer")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return conn, resp.StatusCode, string(b), fmt.Errorf("the connection stayed open 20 s after the answer")
	}
	return conn, resp.StatusCode, string(b), nil
}

// serverConnGoroutines counts the goroutines serving a connection of an
// http.Server in this process.
func serverConnGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "net/http.(*conn).serve(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// waitFor waits, with a generous deadline, until ok holds.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("after 20 s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestBodyDeadlines: every route of the mux (the dashboard's and OAuth's
// included: sign-in, consent, token, registration, revocation, every
// dashboard form, the MCP endpoint), sent a body at a byte every 50 ms
// with a body deadline of 300 ms, answers 408 with a structured error (or,
// /mcp without a token, 401) and closes the connection; the goroutine that
// served it ends.
func TestBodyDeadlines(t *testing.T) {
	c := &conns{closed: map[string]bool{}}
	s := newDashServer(t, func(o *dashOptions) {
		o.web = web.Limits{BodyTimeout: 300 * time.Millisecond}
		o.connState = c.state
	})
	tok := s.token("alice", continuo.ScopeSessionsRead)
	addr := strings.TrimPrefix(s.url, "http://")
	base := serverConnGoroutines()
	for _, tr := range trickleRequests(t, web.Routes(s.opts), tok.Token) {
		t.Run(tr.name, func(t *testing.T) {
			conn, status, body, err := tr.send(t, addr, 50*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if status != tr.want {
				t.Fatalf("status %d %s, want %d", status, body, tr.want)
			}
			var e struct {
				Error any `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error == nil {
				t.Errorf("answer %q is not a structured error", body)
			}
			local := conn.LocalAddr().String()
			waitFor(t, "the server still holds the connection", func() bool { return c.isClosed(local) })
		})
	}
	waitFor(t, "goroutines still serve connections", func() bool { return serverConnGoroutines() <= base })
}

// TestBodyCaps: a body one byte over the cap is answered 413 with a
// structured error on every route that takes one: OAuth's error on the
// endpoints OAuth clients call, the contract's too_large (with the limit)
// elsewhere, a JSON-RPC error on /mcp.
func TestBodyCaps(t *testing.T) {
	s := newDashServer(t, func(o *dashOptions) { o.web = web.Limits{MaxFormBytes: 1024, MaxBodyBytes: 4096} })
	tok := s.token("alice", continuo.ScopeSessionsRead)
	for _, tr := range trickleRequests(t, web.Routes(s.opts), tok.Token) {
		if tr.method != "POST" || tr.want == http.StatusUnauthorized {
			continue
		}
		t.Run(tr.name, func(t *testing.T) {
			limit := 1024
			if isMCP(tr.path) {
				limit = 4096
			}
			req, _ := http.NewRequest("POST", s.url+tr.path, strings.NewReader("a="+strings.Repeat("b", limit-1)))
			for _, line := range strings.Split(strings.TrimSpace(tr.header), "\r\n") {
				k, v, _ := strings.Cut(line, ": ")
				req.Header.Set(k, v)
			}
			resp, body := get(t, req)
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("%d %s, want 413", resp.StatusCode, body)
			}
			var e struct {
				Error json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil {
				t.Fatalf("answer %q: %v", body, err)
			}
			switch tr.path {
			case "/oauth/token", "/oauth/revoke":
				if string(e.Error) != `"invalid_request"` {
					t.Errorf("OAuth error %s", body)
				}
			case "/oauth/register":
				if string(e.Error) != `"invalid_client_metadata"` {
					t.Errorf("OAuth error %s", body)
				}
			case "/mcp", "/mcp/x/continuity":
				if !strings.Contains(body, `"jsonrpc"`) || !strings.Contains(body, `"too_large"`) || !strings.Contains(body, `"limit":4096`) {
					t.Errorf("JSON-RPC error %s", body)
				}
			default:
				var ce struct {
					Code    string         `json:"code"`
					Retry   string         `json:"retry"`
					Details map[string]any `json:"details"`
				}
				if err := json.Unmarshal(e.Error, &ce); err != nil || ce.Code != "too_large" || ce.Retry != "fix_input" || ce.Details["limit"] != float64(1024) {
					t.Errorf("error %s, want too_large with the limit", body)
				}
			}
		})
	}
	// At the cap exactly, a body passes the bound (and reaches the form's
	// own checks: here, no CSRF field).
	req, _ := http.NewRequest("POST", s.url+"/login", strings.NewReader("a="+strings.Repeat("b", 1022)))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if resp, body := get(t, req); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a body at the cap: %d %s, want the form's own 403", resp.StatusCode, body)
	}
}

// TestStreamsOutliveBodyDeadline: with a body deadline of 200 ms, a tool
// call whose answer (a stream of server-sent events with progress) takes
// several times that arrives whole, on a stateful session and on the
// stateless 2026-07-28 (where the request's own context is the call's);
// and the stateful session's standalone event stream (GET), open since the
// session began, still carries a request of the server's (a ping) after
// it.
func TestStreamsOutliveBodyDeadline(t *testing.T) {
	const deadline = 200 * time.Millisecond
	eps := mcpserver.New(mcpserver.Options{})
	srv := eps.Server(0) // the default endpoint's server, with a tool of the test's
	sessions := make(chan *mcp.ServerSession, 2)
	mcp.AddTool(srv, &mcp.Tool{Name: "slow"}, func(ctx context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
		sessions <- req.Session
		for i := range 4 { // a progress event, then silence past the deadline, four times
			if tok := req.Params.GetProgressToken(); tok != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i)})
			}
			select {
			case <-time.After(deadline):
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	hs := httptest.NewServer(web.Handler(web.Options{MCP: eps, Limits: web.Limits{BodyTimeout: deadline},
		Auth: tokens{"good": {PrincipalID: "prn_x", GroupID: "grp_x", Scopes: []continuo.Scope{continuo.ScopeSessionsRead}}}}))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })

	for _, v := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(v, func(t *testing.T) {
			progress := make(chan struct{}, 8)
			pinged := make(chan error, 1)
			c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
				ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress <- struct{}{} },
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp",
				HTTPClient: &http.Client{Transport: bearer{"good"}}, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: v})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}}
			params.SetProgressToken("p1")
			res, err := cs.CallTool(ctx, params)
			if err != nil {
				t.Fatalf("a call answered over 4 body deadlines: %v", err)
			}
			if len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "done" {
				t.Fatalf("result %+v", res)
			}
			if len(progress) != 4 {
				t.Errorf("%d progress notifications arrived, want 4", len(progress))
			}
			ss := <-sessions
			if v != "2025-11-25" {
				return
			}
			// The standalone stream has been open since the session
			// began, longer than the deadline: a request of the server's,
			// outside any request of the client's, still reaches the client
			// on it, and its answer comes back.
			go func() { pinged <- ss.Ping(ctx, nil) }()
			select {
			case err := <-pinged:
				if err != nil {
					t.Fatalf("the server's ping on the GET event stream after the body deadline: %v", err)
				}
			case <-ctx.Done():
				t.Fatal("the GET event stream carried no request of the server's after the body deadline")
			}
		})
	}
}
