package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/continuo-dev/continuo/internal/metrics"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/pgtest"
	"github.com/continuo-dev/continuo/internal/store/postgres"
	"github.com/continuo-dev/continuo/internal/store/sqlite"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/web"
	"github.com/continuo-dev/continuo/internal/workflow"
)

// BenchmarkBearer measures what bearer authentication costs next to the
// cheapest MCP request, a ping on a stateful (2025-11-25) session, on each
// engine (docs/PERFORMANCE.md, "Bearer authentication"):
//
//	go test -run '^$' -bench Bearer -benchtime 2s ./internal/web/
//
// Every case reports cpu-ns/op: the process's user+system CPU over the
// loop (getrusage) divided by the iterations — every goroutine's CPU, the
// garbage collector's included, not only the loop's wall time.
//
//   - ping/http: a raw JSON-RPC POST through the real handler, MCP server
//     and store over loopback TCP (httptest): client and server in one
//     process, so its CPU is the whole round trip's.
//   - ping/handler: the same request handed to the handler's ServeHTTP with
//     a recorder: no client, no TCP, no HTTP parsing — a lower bound on
//     the server's CPU per ping, so a ratio against it is an upper bound.
//   - ping/handler-fixed: the same with an Authenticator that is a map
//     lookup: what the request costs with (almost) no authentication.
//   - authenticate/cached, authenticate/uncached: auth.Service.Authenticate
//     of one PAT with the cache live (the process listens for revocations)
//     and without it (every call reads the database).
//
// The -uncached ping cases use a Service that does not listen, as every
// request did before the cache.
func BenchmarkBearer(b *testing.B) {
	for _, engine := range stores.Engines {
		b.Run(engine, func(b *testing.B) {
			if engine == "postgres" {
				pgtest.BaseURL(b)
			}
			f := newBearerFixture(b, engine)
			b.Run("ping/http", func(b *testing.B) { f.pingHTTP(b, f.cached) })
			b.Run("ping/http-uncached", func(b *testing.B) { f.pingHTTP(b, f.uncached) })
			b.Run("ping/handler", func(b *testing.B) { f.pingHandler(b, f.cached) })
			b.Run("ping/handler-uncached", func(b *testing.B) { f.pingHandler(b, f.uncached) })
			b.Run("ping/handler-fixed", func(b *testing.B) { f.pingHandler(b, f.fixed) })
			b.Run("authenticate/cached", func(b *testing.B) { f.authenticate(b, f.cached) })
			b.Run("authenticate/uncached", func(b *testing.B) { f.authenticate(b, f.uncached) })
		})
	}
}

type bearerFixture struct {
	token                   string
	cached, uncached, fixed *handlerUnder
}

// handlerUnder is the server's handler with one way of authenticating, and
// an initialized stateful MCP session on it.
type handlerUnder struct {
	auth    web.Authenticator
	handler http.Handler
	session string
}

func newBearerFixture(b *testing.B, engine string) *bearerFixture {
	b.Helper()
	ctx := context.Background()
	var s store.Store
	var err error
	if engine == "postgres" {
		s, err = postgres.Open(ctx, pgtest.Schema(b), nil)
	} else {
		s, err = sqlite.Open(ctx, filepath.Join(b.TempDir(), "c.db"), nil)
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	watched := auth.New(s, nil)
	wctx, stop := context.WithCancel(ctx)
	done := watched.WatchRevocations(wctx)
	b.Cleanup(func() { stop(); <-done })
	tok, err := watched.CreateToken(ctx, "bench", []continuo.Scope{continuo.ScopeAdmin}, 0)
	if err != nil {
		b.Fatal(err)
	}
	caller, err := watched.Authenticate(ctx, tok.Token)
	if err != nil {
		b.Fatal(err)
	}
	key, err := watched.SessionKey(ctx)
	if err != nil {
		b.Fatal(err)
	}
	f := &bearerFixture{token: tok.Token}
	for _, h := range []**handlerUnder{&f.cached, &f.uncached, &f.fixed} {
		var a web.Authenticator
		switch h {
		case &f.cached:
			a = watched
		case &f.uncached:
			a = auth.New(s, nil) // not listening: no cache
		default:
			a = tokens{tok.Token: caller}
		}
		wf := workflow.New(s, watched, &workflow.Options{WorktreeDir: b.TempDir()})
		sessions := web.NewMCPSessions(key)
		reg := metrics.NewRegistry()
		mcpSrv := mcpserver.New(mcpserver.Options{Workflow: wf, Metrics: reg, SessionID: sessions.NewID})
		*h = &handlerUnder{auth: a, handler: web.Handler(web.Options{MCP: mcpSrv, Auth: a, Metrics: reg, MCPSessions: sessions})}
		(*h).initialize(b, tok.Token)
	}
	return f
}

const pingBody = `{"jsonrpc":"2.0","id":1,"method":"ping"}`

func rpcRequest(target, token, session, body string) *http.Request {
	r := httptest.NewRequest("POST", target, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Authorization", "Bearer "+token)
	if session != "" {
		r.Header.Set("Mcp-Session-Id", session)
		r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	return r
}

// initialize opens the stateful session the pings go to.
func (h *handlerUnder) initialize(b *testing.B, token string) {
	b.Helper()
	w := httptest.NewRecorder()
	h.handler.ServeHTTP(w, rpcRequest("/mcp", token, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`))
	h.session = w.Header().Get("Mcp-Session-Id")
	if w.Code != http.StatusOK || h.session == "" {
		b.Fatalf("initialize: %d %s", w.Code, w.Body)
	}
	w = httptest.NewRecorder()
	h.handler.ServeHTTP(w, rpcRequest("/mcp", token, h.session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if w.Code != http.StatusAccepted {
		b.Fatalf("initialized: %d %s", w.Code, w.Body)
	}
}

// cpu is the process's user and system CPU time so far.
func cpu(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measure runs op b.N times and reports the process CPU per op.
func measure(b *testing.B, op func()) {
	b.ReportAllocs()
	b.ResetTimer()
	start := cpu(b)
	for i := 0; i < b.N; i++ {
		op()
	}
	used := cpu(b) - start
	b.StopTimer()
	b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

func pingOK(b *testing.B, status int, body string) {
	if status != http.StatusOK || !strings.Contains(body, `"result":{}`) {
		b.Fatalf("ping: %d %s", status, body)
	}
}

func (f *bearerFixture) pingHandler(b *testing.B, h *handlerUnder) {
	measure(b, func() {
		w := httptest.NewRecorder()
		h.handler.ServeHTTP(w, rpcRequest("/mcp", f.token, h.session, pingBody))
		pingOK(b, w.Code, w.Body.String())
	})
}

func (f *bearerFixture) pingHTTP(b *testing.B, h *handlerUnder) {
	srv := httptest.NewServer(h.handler)
	defer srv.Close()
	client := srv.Client()
	measure(b, func() {
		req := rpcRequest(srv.URL+"/mcp", f.token, h.session, pingBody)
		req.RequestURI = ""
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			b.Fatal(err)
		}
		pingOK(b, resp.StatusCode, string(body))
	})
}

func (f *bearerFixture) authenticate(b *testing.B, h *handlerUnder) {
	ctx := context.Background()
	measure(b, func() {
		if _, err := h.auth.Authenticate(ctx, f.token); err != nil {
			b.Fatal(err)
		}
	})
}
