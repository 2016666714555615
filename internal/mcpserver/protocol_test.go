package mcpserver_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCapabilities: the server declares what it serves and nothing else.
// Tools are served and their list never changes; no log message is ever
// sent, and there are no prompts, resources or completions. A method of a
// capability that is not declared is "method not found", not an empty
// answer that looks like support.
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
			if string(caps) != `{"tools":{}}` {
				t.Errorf("capabilities = %s, want {\"tools\":{}}", caps)
			}
			for _, m := range []struct {
				method string
				call   func() error
			}{
				{"prompts/list", func() error { _, err := c.cs.ListPrompts(f.ctx, nil); return err }},
				{"prompts/get", func() error { _, err := c.cs.GetPrompt(f.ctx, &mcp.GetPromptParams{Name: "x"}); return err }},
				{"resources/list", func() error { _, err := c.cs.ListResources(f.ctx, nil); return err }},
				{"resources/templates/list", func() error { _, err := c.cs.ListResourceTemplates(f.ctx, nil); return err }},
				{"resources/read", func() error {
					_, err := c.cs.ReadResource(f.ctx, &mcp.ReadResourceParams{URI: "continuo://x"})
					return err
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
