package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
)

// TestAbandonedWaitFreesSession: a client of a stateful session that gives
// up on a waiting call by closing its request (as a CLI killed mid-call
// does, without notifications/cancelled) gets the session back at once —
// the call is cancelled, and the next request is answered long before the
// wait would have ended. Before, the session answered nothing else (not
// even DELETE) until the abandoned wait ran out.
func TestAbandonedWaitFreesSession(t *testing.T) {
	s := newDashServer(t)
	tok := s.token("owner", continuo.ScopeSwarmOwn)
	post := func(ctx context.Context, hdr map[string]string, body string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, "POST", s.url+"/mcp/x/swarm", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok.Token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		return http.DefaultClient.Do(req)
	}
	// call posts body and returns the answer's result; the answer of a
	// request after the abandoned one must come well within the 25 s the
	// abandoned wait would hold the session.
	call := func(hdr map[string]string, body string) json.RawMessage {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
		defer cancel()
		resp, err := post(ctx, hdr, body)
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s: %d %s", body, resp.StatusCode, b)
		}
		i := strings.LastIndex(string(b), "data: ")
		if i < 0 {
			return nil // a notification's 202
		}
		var msg struct {
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(string(b[i+6:]))), &msg); err != nil || msg.Result == nil {
			t.Fatalf("%s: %s (%v)", body, b, err)
		}
		return msg.Result
	}

	resp, err := post(t.Context(), nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"cli","version":"1"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: %d, no session", resp.StatusCode)
	}
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	call(hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	var created struct {
		StructuredContent struct {
			Swarm struct {
				ID string `json:"swarm_id"`
			} `json:"swarm"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(call(hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"chat_swarm_create","arguments":{"worker_limit":2}}}`), &created); err != nil || created.StructuredContent.Swarm.ID == "" {
		t.Fatalf("chat_swarm_create: %+v %v", created, err)
	}

	// The waiting collect sends nothing for up to 25 s; the client hangs
	// up meanwhile (whether the call has begun by then or not, the server
	// has its request: either way it must not hold the session).
	ctx, hangUp := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		resp, err := post(ctx, hdr, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"chat_swarm_collect","arguments":{"swarm_id":"`+created.StructuredContent.Swarm.ID+`","wait_secs":25}}}`)
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	hangUp()
	if err := <-done; err == nil {
		t.Fatal("the waiting collect answered before the client hung up")
	}

	// Another call on the session is answered, and so is its end.
	if got := call(hdr, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"chat_swarm_collect","arguments":{"swarm_id":"`+created.StructuredContent.Swarm.ID+`","wait_secs":0}}}`); !strings.Contains(string(got), `"structuredContent"`) {
		t.Fatalf("collect after the abandoned wait: %s", got)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "DELETE", s.url+"/mcp/x/swarm", nil)
	req.Header.Set("Authorization", "Bearer "+tok.Token)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("DELETE after the abandoned wait: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("DELETE after the abandoned wait: %d", resp.StatusCode)
	}
}
