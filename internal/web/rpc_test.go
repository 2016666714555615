package web_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// rawMCP sends raw requests to /mcp with the good token.
type rawMCP struct {
	t   *testing.T
	url string
}

func (c rawMCP) do(method, body string, header map[string]string) (*http.Response, string) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.url+"/mcp", strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer good")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return get(c.t, req)
}

// session initializes a stateful session and returns its headers.
func (c rawMCP) session() map[string]string {
	c.t.Helper()
	resp, body := c.do("POST", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		c.t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	return map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
}

// rpcError is a JSON-RPC error response body.
type rpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// TestMCPErrorsAreJSONRPC: every HTTP error of /mcp for a JSON-RPC request
// is a JSON-RPC error response (application/json, the request's id when
// known, the JSON-RPC code), never plain text; an unknown protocol version
// is refused, not routed by string comparison.
func TestMCPErrorsAreJSONRPC(t *testing.T) {
	s := serve(t, nil)
	c := rawMCP{t, s.URL}
	h := c.session()
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range h {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	big := `{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":"` + strings.Repeat("x", 5<<20) + `"}}`
	for _, tc := range []struct {
		name, body string
		header     map[string]string
		status     int
		code       int64
		id         string
	}{
		{"unknown method", `{"jsonrpc":"2.0","id":2,"method":"no/such/method"}`, h, 400, -32601, "2"},
		{"invalid JSON", `{"jsonrpc":`, h, 400, -32700, "null"},
		{"empty body", ``, h, 400, -32700, "null"},
		{"missing jsonrpc", `{"id":3,"method":"ping"}`, h, 400, -32600, "3"},
		{"bad id", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, h, 400, -32600, "null"},
		{"batch under 2025-11-25", `[{"jsonrpc":"2.0","id":4,"method":"ping"}]`, h, 400, -32600, "null"},
		{"notification with id", `{"jsonrpc":"2.0","id":5,"method":"notifications/initialized"}`, h, 400, -32600, "5"},
		{"garbage protocol version", `{"jsonrpc":"2.0","id":6,"method":"ping"}`, with(map[string]string{"Mcp-Protocol-Version": "garbage"}), 400, -32022, "6"},
		{"future protocol version", `{"jsonrpc":"2.0","id":7,"method":"ping"}`, map[string]string{"Mcp-Protocol-Version": "2099-01-01"}, 400, -32022, "7"},
		{"unknown session", `{"jsonrpc":"2.0","id":8,"method":"ping"}`, with(map[string]string{"Mcp-Session-Id": "nope"}), 404, -32001, "8"},
		{"too large", big, h, 413, -32600, "null"},
		{"wrong content type", `{"jsonrpc":"2.0","id":10,"method":"ping"}`, with(map[string]string{"Content-Type": "text/plain"}), 415, -32600, "10"},
		{"wrong accept", `{"jsonrpc":"2.0","id":11,"method":"ping"}`, with(map[string]string{"Accept": "text/html"}), 400, -32600, "11"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := c.do("POST", tc.body, tc.header)
			var e rpcError
			if resp.StatusCode != tc.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
				json.Unmarshal([]byte(body), &e) != nil || e.JSONRPC != "2.0" || e.Error == nil {
				t.Fatalf("%d %s %q, want %d with a JSON-RPC error", resp.StatusCode, resp.Header.Get("Content-Type"), body, tc.status)
			}
			if e.Error.Code != tc.code || string(e.ID) != tc.id || e.Error.Message == "" {
				t.Errorf("%s, want code %d with id %s", body, tc.code, tc.id)
			}
			if tc.code == -32022 && !strings.Contains(string(e.Error.Data), `"2025-11-25"`) {
				t.Errorf("unsupported version: data %s does not list the supported versions", e.Error.Data)
			}
		})
	}
	// The session still works after all that.
	if resp, body := c.do("POST", `{"jsonrpc":"2.0","id":20,"method":"ping"}`, h); resp.StatusCode != 200 || !strings.Contains(body, `"result"`) {
		t.Errorf("ping after the errors: %d %s", resp.StatusCode, body)
	}
}

// TestHTTPErrorsAreJSON: the errors of requests that are not JSON-RPC (GET
// and DELETE on /mcp, unknown routes, wrong methods) carry the contract's
// error object, as 401 does.
func TestHTTPErrorsAreJSON(t *testing.T) {
	s := serve(t, nil)
	for _, tc := range []struct {
		name, method, path string
		header             map[string]string
		status             int
		code               string
	}{
		{"GET /mcp without Accept", "GET", "/mcp", map[string]string{"Accept": "application/json"}, 400, "invalid_input"},
		{"GET /mcp without a session", "GET", "/mcp", map[string]string{"Accept": "text/event-stream"}, 400, "invalid_input"},
		{"DELETE unknown session", "DELETE", "/mcp", map[string]string{"Mcp-Session-Id": "nope"}, 404, "not_found"},
		{"PUT /mcp", "PUT", "/mcp", nil, 405, "invalid_input"},
		{"unknown route", "GET", "/nope", nil, 404, "not_found"},
		{"wrong method", "POST", "/healthz", nil, 405, "invalid_input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, s.URL+tc.path, nil)
			req.Header.Set("Authorization", "Bearer good")
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, body := get(t, req)
			var e struct {
				Error struct{ Code, Message, Retry string } `json:"error"`
			}
			if resp.StatusCode != tc.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
				json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != tc.code || e.Error.Message == "" || e.Error.Retry == "" {
				t.Errorf("%d %s %q, want %d with error code %s", resp.StatusCode, resp.Header.Get("Content-Type"), body, tc.status, tc.code)
			}
		})
	}
}

// TestSSEErrorCodes: an error the SDK answers with code 0 (no JSON-RPC
// code) reaches the client with one: a request other than initialize
// without a session is an invalid request.
func TestSSEErrorCodes(t *testing.T) {
	s := serve(t, nil)
	c := rawMCP{t, s.URL}
	resp, body := c.do("POST", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, nil)
	data, ok := strings.CutPrefix(strings.TrimSpace(body[strings.Index(body, "data: "):]), "data: ")
	var e rpcError
	if resp.StatusCode != 200 || !ok || json.Unmarshal([]byte(data), &e) != nil || e.Error == nil {
		t.Fatalf("tools/list before initialized: %d %q", resp.StatusCode, body)
	}
	if e.Error.Code != -32600 {
		t.Errorf("error code %d (%s), want -32600", e.Error.Code, e.Error.Message)
	}
}
