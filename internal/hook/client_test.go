package hook

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestUnauthorized: a call the server refuses for its token — here a
// token revoked after the connection was made — fails with
// ErrUnauthorized, as does a connection with a wrong token. Every request
// names the toolsets the caller asked for.
func TestUnauthorized(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "ping"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, struct{}, error) {
		return nil, struct{}{}, nil
	})
	var revoked atomic.Bool
	var toolsets sync.Map // header value → seen
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		toolsets.Store(r.Header.Get(mcpserver.ToolsetsHeader), true)
		if r.Header.Get("Authorization") != "Bearer good" || revoked.Load() {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()

	c, err := Dial(t.Context(), ts.URL, "good", "continuity", "test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Call(t.Context(), "ping", map[string]any{}, nil); err != nil {
		t.Fatalf("ping with a good token: %v", err)
	}
	revoked.Store(true)
	if err := c.Call(t.Context(), "ping", map[string]any{}, nil); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("ping with a revoked token: %v, want ErrUnauthorized", err)
	}
	revoked.Store(false)
	if c, err := Dial(t.Context(), ts.URL, "wrong", "continuity", "test"); !errors.Is(err, ErrUnauthorized) {
		if c != nil {
			c.Close()
		}
		t.Errorf("connect with a wrong token: %v, want ErrUnauthorized", err)
	}
	if _, ok := toolsets.Load("continuity"); !ok {
		t.Error("no request named the toolsets")
	}
	toolsets.Range(func(v, _ any) bool {
		if v != "continuity" {
			t.Errorf("a request named the toolsets %q, want continuity", v)
		}
		return true
	})
}
