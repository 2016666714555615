package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeMCP is a stateful streamable-HTTP MCP endpoint just good enough for
// the lean client: it answers tools/call as SSE (with a notification event
// first) or as JSON, and fails posts whose text is "fail".
func fakeMCP(t *testing.T, sse bool) (*httptest.Server, *atomic.Int64, *atomic.Int64) {
	var deleted, conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodDelete {
			if r.Header.Get("Mcp-Session-Id") != "sess-1" {
				w.WriteHeader(http.StatusNotFound)
				return
			}
			deleted.Add(1)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string         `json:"protocolVersion"`
				Name            string         `json:"name"`
				Arguments       map[string]any `json:"arguments"`
			} `json:"params"`
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &req); err != nil {
			t.Errorf("request %q: %v", b, err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		reply := func(result string) {
			msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, result)
			if !sse {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, msg)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n")
			io.WriteString(w, "event: message\nid: 1\ndata: "+msg+"\n\n")
		}
		switch req.Method {
		case "initialize":
			if req.Params.ProtocolVersion != leanProtocol {
				t.Errorf("initialize asks for %q", req.Params.ProtocolVersion)
			}
			w.Header().Set("Mcp-Session-Id", "sess-1")
			reply(`{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"fake","version":"1"}}`)
		case "notifications/initialized":
			w.WriteHeader(http.StatusAccepted)
		case "ping":
			if r.Header.Get("Mcp-Session-Id") != "sess-1" || r.Header.Get("Mcp-Protocol-Version") != leanProtocol {
				t.Errorf("ping headers %v", r.Header)
			}
			reply(`{}`)
		case "tools/call":
			if r.Header.Get("Mcp-Session-Id") != "sess-1" || r.Header.Get("Mcp-Protocol-Version") != leanProtocol {
				t.Errorf("tools/call headers %v", r.Header)
			}
			switch {
			case req.Params.Name == "boom":
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"unknown tool"}}`, req.ID)
			case req.Params.Arguments["text"] == "fail":
				reply(`{"content":[{"type":"text","text":"{\"error\":{}}"}],"structuredContent":{"error":{"code":"invalid"}},"isError":true}`)
			default:
				a, _ := json.Marshal(req.Params.Arguments)
				reply(`{"content":[{"type":"text","text":"ok"}],"structuredContent":` + string(a) + `}`)
			}
		default:
			t.Errorf("unexpected method %q", req.Method)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	return srv, &deleted, &conns
}

func TestLeanClient(t *testing.T) {
	for _, sse := range []bool{true, false} {
		t.Run(fmt.Sprintf("sse=%v", sse), func(t *testing.T) {
			srv, deleted, conns := fakeMCP(t, sse)
			defer srv.Close()
			c, err := dialLean(srv.URL, "tok")
			if err != nil {
				t.Fatal(err)
			}
			if c.protocol() != "2025-11-25" {
				t.Fatalf("protocol %q", c.protocol())
			}
			ctx := context.Background()
			got, err := c.call(ctx, "echo", map[string]any{"text": `quote " and \ newline` + "\n"})
			if err != nil {
				t.Fatal(err)
			}
			if got["text"] != `quote " and \ newline`+"\n" {
				t.Fatalf("echo: %v", got)
			}
			big := strings.Repeat("0123456789", 5000) // an SSE data line far longer than the reader's buffer
			if got, err = c.call(ctx, "echo", map[string]any{"text": big}); err != nil || got["text"] != big {
				t.Fatalf("echo of 50 kB: %v", err)
			}
			if err := c.post(ctx, "s", "progress", "hello \"x\"\t\x01", "k-1"); err != nil {
				t.Fatal(err)
			}
			var ce *callError
			if err := c.post(ctx, "s", "progress", "fail", "k-2"); !errors.As(err, &ce) || ce.What != "isError" {
				t.Fatalf("isError post: %v", err)
			}
			if err := c.callFast(ctx, "boom", nil); !errors.As(err, &ce) || ce.What != "jsonrpc" {
				t.Fatalf("JSON-RPC error: %v", err)
			}
			for i := range 50 {
				if err := c.post(ctx, "s", "progress", "again", fmt.Sprint("k-r", i)); err != nil {
					t.Fatal(err)
				}
			}
			for range 5 {
				if err := c.ping(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if n := conns.Load(); n != 1 {
				t.Errorf("%d connections for 60 sequential requests, want 1 (keep-alive)", n)
			}
			c.close()
			if deleted.Load() != 1 {
				t.Fatal("session not deleted")
			}
		})
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", `a"b\c`, "tab\tnl\ncr\r\x00\x1f\x7f", "ünïcode ✓"} {
		var back string
		if err := json.Unmarshal(appendJSONString(nil, s), &back); err != nil || back != s {
			t.Errorf("%q: %q %v", s, back, err)
		}
	}
	if !strings.HasPrefix(string(appendJSONString(nil, "x")), `"`) {
		t.Fatal("not quoted")
	}
}

// flaky fails every third post, or every post once broken.
type flaky struct {
	n      atomic.Int64
	broken bool
}

func (f *flaky) call(context.Context, string, map[string]any) (map[string]any, error) {
	return nil, nil
}
func (f *flaky) callFast(context.Context, string, map[string]any) error { return nil }
func (f *flaky) protocol() string                                       { return leanProtocol }
func (f *flaky) close()                                                 {}
func (f *flaky) ping(context.Context) error                             { return nil }
func (f *flaky) post(context.Context, string, string, string, string) error {
	if f.n.Add(1)%3 == 0 || f.broken {
		return &callError{What: "isError", Msg: "no"}
	}
	return nil
}

func TestPostLoopCountsFailures(t *testing.T) {
	f := &flaky{}
	r, err := postLoop([]mcpClient{f, f}, []string{"a", "b"}, 0, 30, "k", progressKind)
	if err != nil || r.N != 20 || r.Failed != 10 || r.FirstFail == nil {
		t.Fatalf("N %d failed %d first %v err %v", r.N, r.Failed, r.FirstFail, err)
	}
	if _, err := postAll([]mcpClient{f}, []string{"a"}, 30, "k", progressKind); err == nil {
		t.Fatal("postAll: no error for failed posts")
	}
	if _, err := postLoop([]mcpClient{&flaky{broken: true}}, []string{"a"}, 0, 1000, "k", progressKind); err == nil {
		t.Fatal("no error after consecutive failures")
	}
}

func TestPingLoop(t *testing.T) {
	srv, _, _ := fakeMCP(t, true)
	defer srv.Close()
	c, err := dialLean(srv.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	r, err := pingLoop([]mcpClient{c}, 50*time.Millisecond)
	if err != nil || r.N == 0 || r.Failed != 0 {
		t.Fatalf("N %d failed %d err %v", r.N, r.Failed, err)
	}
}

func TestPGLogCount(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pg.log")
	if err := os.WriteFile(path, []byte("2026-12-01 09:40:02.1 UTC [1] postgres@db1 ERROR:  could not serialize access due to read/write dependencies among transactions\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := openPGLog(path, "", "db1")
	if l == nil {
		t.Fatal("log not opened")
	}
	defer l.close()
	if n := l.count(); n != 0 {
		t.Fatalf("%d errors before anything was appended, want 0 (the log is read from its end)", n)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(f, "2026-12-01 09:40:03.1 UTC [2] postgres@db1 ERROR:  could not serialize access due to concurrent update\n",
		"2026-12-01 09:40:03.2 UTC [2] postgres@db1 HINT:  The transaction might succeed if retried.\n",
		"2026-12-01 09:40:03.3 UTC [3] postgres@db2 ERROR:  could not serialize access due to concurrent update\n",
		"2026-12-01 09:40:03.4 UTC [4] postgres@db1 ERROR:  deadlock detected\n",
		"2026-12-01 09:40:03.5 UTC [4] postgres@db1 ERROR:  duplicate key value violates unique constraint\n")
	f.Close()
	if n := l.count(); n != 2 {
		t.Fatalf("%d retried errors of db1, want 2", n)
	}
	if n := l.count(); n != 0 {
		t.Fatalf("%d on a second read, want 0", n)
	}
	if openPGLog("", "", "db1") != nil || openPGLog("auto", "postgres://u@db.example.com/x", "db1") != nil {
		t.Fatal("a log for an empty path or a remote server")
	}
}
