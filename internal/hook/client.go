package hook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"time"

	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Caller calls a Continuo tool and returns its structured result; a tool
// error is returned as *ToolError.
type Caller interface {
	Call(ctx context.Context, tool string, args map[string]any, out any) error
	Close() error
}

// ToolError is a failed tool call (isError) with its contract error code.
type ToolError struct {
	Tool    string
	Code    string
	Message string
}

func (e *ToolError) Error() string { return fmt.Sprintf("%s: %s: %s", e.Tool, e.Code, e.Message) }

// IsCode reports whether err is a tool error with that code.
func IsCode(err error, code string) bool {
	var te *ToolError
	return errors.As(err, &te) && te.Code == code
}

// ErrUnauthorized is a request the server refused for its token (HTTP
// 401): a wrong, expired or revoked token, which no retry mends.
var ErrUnauthorized = errors.New("the server refused the token (401 Unauthorized)")

// bearer adds the token (and the toolsets the caller needs) to every
// request, and makes a 401 answer ErrUnauthorized (the SDK's own error for
// it says only "Unauthorized").
type bearer struct {
	token    string
	toolsets string
	next     http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	if b.toolsets != "" {
		r.Header.Set(mcpserver.ToolsetsHeader, b.toolsets)
	}
	resp, err := b.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		resp.Body.Close()
		return nil, ErrUnauthorized
	}
	return resp, err
}

// sdkCaller is an MCP client session over streamable HTTP (the official
// SDK's client, so protocol negotiation and SSE responses are the SDK's).
type sdkCaller struct{ cs *mcp.ClientSession }

// Dial connects to the MCP endpoint url with a bearer token, asking for
// the toolsets (comma-separated) whose tools it calls, whatever the
// server's default. ctx bounds the connection and every call made with it.
func Dial(ctx context.Context, url, token, toolsets, version string) (Caller, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "continuo-hook", Version: version}, nil)
	hc := &http.Client{Transport: bearer{token: token, toolsets: toolsets, next: http.DefaultTransport}}
	if d, ok := ctx.Deadline(); ok {
		hc.Timeout = time.Until(d)
	}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		return nil, err
	}
	return &sdkCaller{cs: cs}, nil
}

// DialCommand runs cmd (a `continuo stdio` on a local data directory) and
// speaks MCP with it over its stdin and stdout: the hook's local mode,
// without a server. ctx bounds the connection; Close stops the process.
func DialCommand(ctx context.Context, cmd *exec.Cmd, version string) (Caller, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "continuo-hook", Version: version}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, err
	}
	return &sdkCaller{cs: cs}, nil
}

func (s *sdkCaller) Close() error { return s.cs.Close() }

func (s *sdkCaller) Call(ctx context.Context, tool string, args map[string]any, out any) error {
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	if res.IsError {
		var e struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		if e.Error.Code == "" {
			e.Error.Code = "internal"
		}
		return &ToolError{Tool: tool, Code: e.Error.Code, Message: e.Error.Message}
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s: result: %w", tool, err)
		}
	}
	return nil
}
