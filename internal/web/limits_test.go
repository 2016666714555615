package web_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/continuo-dev/continuo/internal/metrics"
	"github.com/continuo-dev/continuo/internal/web"
)

func serveLimits(t *testing.T, l web.Limits) (*httptest.Server, *metrics.Registry) {
	t.Helper()
	reg := metrics.NewRegistry()
	h := web.Handler(web.Options{
		MCP: mcpserver.New(mcpserver.Options{}),
		Auth: tokens{
			"good":  {PrincipalID: "prn_x", GroupID: "grp_x", Scopes: []continuo.Scope{continuo.ScopeSessionsRead}},
			"other": {PrincipalID: "prn_y", GroupID: "grp_x", Scopes: []continuo.Scope{continuo.ScopeSessionsRead}},
		},
		Metrics:        reg,
		Limits:         l,
		PublicURL:      "https://continuo.example.com",
		AllowedOrigins: []string{"https://app.example.org"},
	})
	s := httptest.NewServer(h)
	t.Cleanup(func() { s.CloseClientConnections(); s.Close() })
	return s, reg
}

// TestOriginGuard: a browser request from a foreign origin is refused with
// 403 (the streamable HTTP transport requires Origin validation); no
// Origin, loopback origins, the public URL's and configured origins pass.
func TestOriginGuard(t *testing.T) {
	s, _ := serveLimits(t, web.Limits{})
	for origin, want := range map[string]int{
		"":                             http.StatusOK,
		"http://localhost:3000":        http.StatusOK,
		"http://127.0.0.1":             http.StatusOK,
		"https://continuo.example.com": http.StatusOK,
		"https://app.example.org":      http.StatusOK,
		"https://evil.example":         http.StatusForbidden,
		"http://continuo.example.com":  http.StatusForbidden, // another scheme is another origin
		"null":                         http.StatusForbidden,
	} {
		req := mcpRequest(t, s.URL, "", "Bearer good")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, body := get(t, req)
		if resp.StatusCode != want {
			t.Errorf("Origin %q: %d %s, want %d", origin, resp.StatusCode, body, want)
		}
		if want == http.StatusForbidden && !strings.Contains(body, `"forbidden"`) {
			t.Errorf("Origin %q: body %s, want a structured forbidden error", origin, body)
		}
	}
}

// slowBody opens a connection and sends an MCP request whose body never
// completes; it returns the connection (to read the answer from).
func slowBody(t *testing.T, url string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer good\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{")
	return conn
}

func status(t *testing.T, conn net.Conn) int {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// TestSlowBody: a body that arrives too slowly is cut off with 408 instead
// of holding its connection.
func TestSlowBody(t *testing.T) {
	s, _ := serveLimits(t, web.Limits{BodyTimeout: 300 * time.Millisecond})
	if got := status(t, slowBody(t, s.URL)); got != http.StatusRequestTimeout {
		t.Errorf("stalled body: %d, want 408", got)
	}
}

// TestInFlightBodies: bodies being read at once are bounded; a request
// that finds every slot taken waits at most SlotWait, then gets 503 — and
// once the slots free, requests pass again.
func TestInFlightBodies(t *testing.T) {
	s, _ := serveLimits(t, web.Limits{BodyTimeout: time.Minute, MaxInFlightBodies: 2, SlotWait: 200 * time.Millisecond})
	a, b := slowBody(t, s.URL), slowBody(t, s.URL)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, body := get(t, mcpRequest(t, s.URL, "", "Bearer good"))
		if resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(body, `"rate_limited"`) {
			break
		}
		if time.Now().After(deadline) { // the stalled bodies never took their slots: they were not bounded
			t.Fatalf("with two stalled bodies and two slots: %d %s, want 503 rate_limited", resp.StatusCode, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	a.Close()
	b.Close()
	for {
		resp, body := get(t, mcpRequest(t, s.URL, "", "Bearer good"))
		if resp.StatusCode == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the stalled clients left: %d %s", resp.StatusCode, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func initialize(t *testing.T, url, token string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	return get(t, req)
}

// TestSessionCaps: stateful sessions are capped per principal and in all;
// over a cap, initialize is refused with a structured capacity_full error;
// the count is in /metrics; idle sessions expire.
func TestSessionCaps(t *testing.T) {
	s, _ := serveLimits(t, web.Limits{MaxMCPSessionsPerPrincipal: 2, MaxMCPSessions: 3})
	for i := range 2 {
		if resp, body := initialize(t, s.URL, "good"); resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
			t.Fatalf("session %d: %d %s", i, resp.StatusCode, body)
		}
	}
	resp, body := initialize(t, s.URL, "good")
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, `"capacity_full"`) {
		t.Errorf("third session of one principal: %d %s, want 429 capacity_full", resp.StatusCode, body)
	}
	if resp, body := initialize(t, s.URL, "other"); resp.StatusCode != http.StatusOK {
		t.Errorf("another principal's first session: %d %s", resp.StatusCode, body)
	}
	if resp, body := initialize(t, s.URL, "other"); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a session over the total cap: %d %s, want 429", resp.StatusCode, body)
	}
	req, _ := http.NewRequest("GET", s.URL+"/metrics", nil)
	if _, m := get(t, req); !strings.Contains(m, "continuo_mcp_sessions 3") {
		t.Errorf("/metrics does not count 3 sessions:\n%s", m)
	}
}

// TestSessionIdleExpiry: with a short idle time, sessions expire and free
// their place under the cap.
func TestSessionIdleExpiry(t *testing.T) {
	s, _ := serveLimits(t, web.Limits{MaxMCPSessionsPerPrincipal: 1, MCPSessionIdle: 200 * time.Millisecond})
	if resp, body := initialize(t, s.URL, "good"); resp.StatusCode != http.StatusOK {
		t.Fatalf("first session: %d %s", resp.StatusCode, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, body := initialize(t, s.URL, "good")
		if resp.StatusCode == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the idle session never expired: %d %s", resp.StatusCode, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
