package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/continuo-dev/continuo/internal/web"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearerRT adds a bearer token to a real client's requests.
type bearerRT string

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// TestSessionSlotsFreed (issue 23): a stateful session holds its place
// under the per-principal cap exactly while the SDK holds it. With a cap
// of one: an initialize the SDK refuses (it answers with a session ID,
// then closes that session) holds nothing, however often it is sent; a
// real client's session holds the place while it is open; and once the
// client ends it (its Close sends DELETE /mcp) the next one is admitted at
// once, not after the idle time. As in production, the session IDs are
// signed (web.MCPSessions) and the SDK issues them.
func TestSessionSlotsFreed(t *testing.T) {
	sessions := web.NewMCPSessions([]byte(strings.Repeat("k", 32)))
	h := web.Handler(web.Options{MCP: mcpserver.New(mcpserver.Options{SessionID: sessions.NewID}), MCPSessions: sessions, Limits: web.Limits{MaxMCPSessionsPerPrincipal: 1},
		Auth: tokens{"good": {PrincipalID: "prn_x", GroupID: "grp_x", Scopes: []continuo.Scope{continuo.ScopeSessionsRead}}}})
	s := httptest.NewServer(h)
	t.Cleanup(func() { s.CloseClientConnections(); s.Close() })

	refused := func() {
		t.Helper()
		req, _ := http.NewRequest("POST", s.URL+"/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5,"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Authorization", "Bearer good")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if resp, body := get(t, req); !strings.Contains(body, `"error"`) || strings.Contains(body, "capacity_full") {
			t.Fatalf("an initialize the SDK refuses: %d %s", resp.StatusCode, body)
		}
	}
	// A real client of the stateful protocol (the Go client's default is
	// the stateless 2026-07-28, which has no sessions to cap).
	connect := func() (*mcp.ClientSession, error) {
		c := mcp.NewClient(&mcp.Implementation{Name: "real", Version: "1"}, nil)
		return c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: s.URL + "/mcp",
			HTTPClient: &http.Client{Transport: bearerRT("good")}, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	}

	for range 3 {
		refused()
	}
	if n := sessions.Count(); n != 0 {
		t.Errorf("after three refused initializes the server holds %d sessions, want 0", n)
	}
	first, err := connect()
	if err != nil {
		t.Fatalf("a session after refused initializes: %v", err)
	}
	if _, err := connect(); err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
		t.Fatalf("a second session under a cap of one: %v, want 429", err)
	}
	if n := sessions.Count(); n != 1 {
		t.Errorf("with one open session the server holds %d", n)
	}
	if err := first.Close(); err != nil { // DELETE /mcp
		t.Fatal(err)
	}
	second, err := connect()
	if err != nil {
		t.Fatalf("a session right after the first one ended: %v", err)
	}
	if err := second.Ping(context.Background(), nil); err != nil {
		t.Fatalf("the new session: %v", err)
	}
	second.Close()
}
