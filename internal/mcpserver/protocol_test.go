package mcpserver_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/continuo-dev/continuo"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCapabilities: the server declares what it serves and nothing else.
// Tools, prompts and resources are served and their lists never change (no
// listChanged, no subscriptions); no log message is ever sent, and there are
// no completions. A method of a capability that is not declared is "method
// not found", not an empty answer that looks like support.
func TestCapabilities(t *testing.T) {
	f := newFixture(t)
	tok := f.token("cap", sessionScopes...)
	for _, v := range []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"} {
		t.Run(v, func(t *testing.T) {
			c := f.connectAt(tok, v)
			if got := c.cs.InitializeResult().ProtocolVersion; got != v {
				t.Fatalf("negotiated %s, want %s", got, v)
			}
			caps, err := json.Marshal(c.cs.InitializeResult().Capabilities)
			if err != nil {
				t.Fatal(err)
			}
			if string(caps) != `{"prompts":{},"resources":{},"tools":{}}` {
				t.Errorf("capabilities = %s, want prompts, resources and tools, nothing else", caps)
			}
			if ps, err := c.cs.ListPrompts(f.ctx, nil); err != nil || len(ps.Prompts) != 2 {
				t.Errorf("prompts/list: %v %v, want continue_work and save_handoff", ps, err)
			}
			if rt, err := c.cs.ListResourceTemplates(f.ctx, nil); err != nil || len(rt.ResourceTemplates) != 2 ||
				rt.ResourceTemplates[0].Name != "handoff" || rt.ResourceTemplates[1].Name != "working-set" {
				t.Errorf("resources/templates/list: %v %v, want the handoff and working-set templates", rt, err)
			}
			for _, m := range []struct {
				method string
				call   func() error
			}{
				{"resources/subscribe", func() error {
					if v >= "2026-07-28" { // subscriptions are another method there
						return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound}
					}
					return c.cs.Subscribe(f.ctx, &mcp.SubscribeParams{URI: "continuo://sessions/x/handoff"})
				}},
				{"completion/complete", func() error {
					_, err := c.cs.Complete(f.ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "x"},
						Argument: mcp.CompleteParamsArgument{Name: "a", Value: "b"}})
					return err
				}},
			} {
				var je *jsonrpc.Error
				if err := m.call(); !errors.As(err, &je) || je.Code != jsonrpc.CodeMethodNotFound {
					t.Errorf("%s: %v, want JSON-RPC error %d (method not found)", m.method, err, jsonrpc.CodeMethodNotFound)
				}
			}
			if _, err := c.cs.ListTools(f.ctx, nil); err != nil {
				t.Errorf("tools/list: %v", err)
			}
			if v >= "2026-07-28" {
				return // logging/setLevel and ping are not part of the stateless protocol
			}
			var je *jsonrpc.Error
			//lint:ignore SA1019 what is tested is that the deprecated logging is not served
			err = c.cs.SetLoggingLevel(f.ctx, &mcp.SetLoggingLevelParams{Level: "debug"})
			if !errors.As(err, &je) || je.Code != jsonrpc.CodeMethodNotFound {
				t.Errorf("logging/setLevel: %v, want JSON-RPC error %d (method not found)", err, jsonrpc.CodeMethodNotFound)
			}
			if err := c.cs.Ping(f.ctx, nil); err != nil {
				t.Errorf("ping: %v", err)
			}
		})
	}
}

// TestSchemasPublished: the published schemas say what the decoder
// enforces, in the most portable form. A bound of 1..N is published as
// minimum 1 (not 0), and no schema gives a property a list of types
// (["null","array"]): clients that map tool schemas onto a single-type
// dialect reject or weaken those.
func TestSchemasPublished(t *testing.T) {
	f := newFixture(t)
	c := f.connect(f.token("sch", sessionScopes...))
	res, err := c.cs.ListTools(f.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	bounds := map[string][2]float64{"list_sessions": {1, 50}, "list_session_messages": {1, 100}}
	for _, tl := range res.Tools {
		var in, out any
		if err := json.Unmarshal([]byte(mustJSON(t, tl.InputSchema)), &in); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(mustJSON(t, tl.OutputSchema)), &out); err != nil {
			t.Fatal(err)
		}
		for _, bad := range typeLists(in, "inputSchema") {
			t.Errorf("%s: %s", tl.Name, bad)
		}
		for _, bad := range typeLists(out, "outputSchema") {
			t.Errorf("%s: %s", tl.Name, bad)
		}
		if b, ok := bounds[tl.Name]; ok {
			lo, hi := dig(in, "properties", "limit", "minimum"), dig(in, "properties", "limit", "maximum")
			if lo != b[0] || hi != b[1] {
				t.Errorf("%s: limit is published as %v..%v, want %v..%v", tl.Name, lo, hi, b[0], b[1])
			}
			if dig(in, "properties", "limit", "type") != "integer" {
				t.Errorf("%s: limit type = %v, want integer", tl.Name, dig(in, "properties", "limit", "type"))
			}
		}
	}
}

// typeLists returns the paths in schema s whose "type" is a list.
func typeLists(s any, path string) []string {
	var out []string
	switch v := s.(type) {
	case map[string]any:
		if ts, ok := v["type"].([]any); ok {
			out = append(out, fmt.Sprintf("%s.type is a list %v", path, ts))
		}
		for k, x := range v {
			out = append(out, typeLists(x, path+"."+k)...)
		}
	case []any:
		for i, x := range v {
			out = append(out, typeLists(x, fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return out
}

// TestLimitDefault: an omitted limit takes the contract's default (20
// sessions, 50 messages); only an explicit 0 is refused.
func TestLimitDefault(t *testing.T) {
	f := newFixture(t)
	c := f.connect(f.token("lim", sessionScopes...))
	pID := f.project("proj", map[string]continuo.Access{"lim": continuo.AccessWrite})
	var sID string
	for i := range 21 {
		sID = c.ok("work_on_project", obj{"project": pID, "instruction": fmt.Sprintf("task %d", i)}).str("session_id")
	}
	for i := range 51 {
		c.ok("post_session_message", obj{"session_id": sID, "kind": "note", "text": fmt.Sprintf("n%d", i)})
	}
	if r := c.ok("list_sessions", obj{"project": pID}); len(r.Data["sessions"].([]any)) != 20 || r.num("next_offset") != 20 {
		t.Errorf("list_sessions without limit: %d sessions, next_offset %v; want 20, 20", len(r.Data["sessions"].([]any)), r.Data["next_offset"])
	}
	if r := c.ok("list_session_messages", obj{"session_id": sID}); len(r.Data["messages"].([]any)) != 50 || r.Data["next_cursor"] == nil {
		t.Errorf("list_session_messages without limit: %d messages, next_cursor %v; want 50 and a cursor", len(r.Data["messages"].([]any)), r.Data["next_cursor"])
	}
}
