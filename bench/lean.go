package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// leanProtocol is the only protocol the lean client speaks: the stateful
// streamable-HTTP protocol of Claude Code, Codex and Claude Desktop.
const leanProtocol = "2025-11-25"

// leanClient is a minimal, real MCP client over streamable HTTP: initialize
// (protocol 2025-11-25), the Mcp-Session-Id it gets back, the initialized
// notification, then one tools/call at a time on a keep-alive connection,
// and DELETE of the session at the end. It parses a response whether the
// server sends it as application/json or as a server-sent event stream.
//
// It exists so that the throughput phases measure the server, as wrk would:
// it costs this process about 0.1–0.2 ms of CPU per call (most of it
// net/http and the kernel), where the official Go SDK client costs
// 0.3–0.45 ms on the same two cores. Requests are pre-encoded where
// possible, but every call is a complete HTTP request with its own
// JSON-RPC id and, for posts, its own delivery_key, and a client has one
// request in flight at a time.
type leanClient struct {
	hc       *http.Client
	tr       *http.Transport
	u        *url.URL
	token    string
	session  string      // Mcp-Session-Id
	version  string      // negotiated protocol version
	hdr      http.Header // headers of every request after initialize (read-only)
	nextID   int64
	br       *bufio.Reader // reused for SSE bodies (one request in flight)
	postHead []byte        // pre-encoded tools/call post_session_message arguments up to session_id
	meter    callMeter     // tool calls through toolCall, and their model-context bytes
}

// callMeter counts a client's tool calls and the bytes a model would
// hold in its context for them: the arguments it writes (the JSON of
// params.arguments) and the text it reads back (content[].text). A client
// has one caller at a time; read it after that caller is done.
type callMeter struct {
	Calls, ArgBytes, ResultBytes int64
}

// callError is a call that the server answered with a failure: a JSON-RPC
// error, a tool result with isError, or an unexpected HTTP status.
type callError struct {
	What string // "isError", "jsonrpc", "http"
	Msg  string
}

func (e *callError) Error() string { return e.What + ": " + e.Msg }

func dialLean(endpoint, token string) (*leanClient, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 2
	c := &leanClient{hc: &http.Client{Transport: tr}, tr: tr, u: u, token: token, br: bufio.NewReaderSize(nil, 8<<10)}

	init := fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},`+
		`"clientInfo":{"name":"continuo-bench-lean","version":"1"}}}`, leanProtocol)
	h := http.Header{
		"Authorization": {"Bearer " + token},
		"Content-Type":  {"application/json"},
		"Accept":        {"application/json, text/event-stream"},
	}
	resp, err := c.do(context.Background(), http.MethodPost, h, []byte(init))
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	c.session = resp.Header.Get("Mcp-Session-Id")
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := c.readResponse(resp, "0", &res); err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if c.session == "" {
		return nil, errors.New("initialize: no Mcp-Session-Id in the response (stateless server?)")
	}
	if res.ProtocolVersion == "" {
		return nil, errors.New("initialize: no protocolVersion in the result")
	}
	c.version = res.ProtocolVersion
	c.hdr = http.Header{
		"Authorization":        {"Bearer " + token},
		"Mcp-Session-Id":       {c.session},
		"Mcp-Protocol-Version": {c.version},
		"Content-Type":         {"application/json"},
		"Accept":               {"application/json, text/event-stream"},
	}
	resp, err = c.do(context.Background(), http.MethodPost, c.hdr, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err != nil {
		return nil, fmt.Errorf("notifications/initialized: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("notifications/initialized: HTTP %s", resp.Status)
	}
	c.postHead = []byte(`,"method":"tools/call","params":{"name":"post_session_message","arguments":{"session_id":`)
	return c, nil
}

func (c *leanClient) protocol() string { return c.version }

// do sends one request and returns the response (status not checked).
func (c *leanClient) do(ctx context.Context, method string, h http.Header, body []byte) (*http.Response, error) {
	req := &http.Request{Method: method, URL: c.u, Header: h, Host: c.u.Host}
	if body != nil {
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	return c.hc.Do(req.WithContext(ctx))
}

// rpcMessage is a JSON-RPC message as the lean client reads it: Result
// points at the caller's result value, so a response is decoded in one pass.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result any             `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// readResponse reads the JSON-RPC response with the given id from resp
// (application/json, or text/event-stream where events that carry requests
// or notifications are skipped), decodes its result into result, and
// closes the body. A JSON-RPC error or an HTTP error status is a
// *callError.
func (c *leanClient) readResponse(resp *http.Response, id string, result any) error {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return &callError{What: "http", Msg: resp.Status + ": " + string(bytes.TrimSpace(b))}
	}
	m := rpcMessage{Result: result}
	ct := resp.Header.Get("Content-Type")
	switch {
	case hasPrefixFold(ct, "application/json"):
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("response %q: %w", b, err)
		}
		if m.Method != "" || string(m.ID) != id {
			return fmt.Errorf("got %q, want the response with id %s", b, id)
		}
	case hasPrefixFold(ct, "text/event-stream"):
		c.br.Reset(resp.Body)
		if err := readSSE(c.br, id, &m); err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, c.br) // the server ends the stream after the response: keep the connection
	default:
		return fmt.Errorf("unexpected Content-Type %q", ct)
	}
	if m.Error != nil {
		return &callError{What: "jsonrpc", Msg: fmt.Sprintf("%d %s", m.Error.Code, m.Error.Message)}
	}
	if m.Result == nil {
		return errors.New("response without result")
	}
	return nil
}

// readSSE reads server-sent events until the one whose data is the JSON-RPC
// response with the given id, decoded into m. Events that carry requests
// or notifications are skipped.
func readSSE(br *bufio.Reader, id string, m *rpcMessage) error {
	var data []byte
	result := m.Result
	var long []byte // a line longer than br's buffer
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, line...)
			continue
		}
		if long != nil {
			line, long = append(long, line...), nil
		}
		if err != nil && !(err == io.EOF && len(line) > 0) {
			if err == io.EOF {
				return errors.New("SSE stream ended without the response")
			}
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 { // end of an event
			if len(data) > 0 {
				*m = rpcMessage{Result: result}
				if err := json.Unmarshal(data, m); err != nil {
					return fmt.Errorf("SSE event %q: %w", data, err)
				}
				if m.Method == "" && string(m.ID) == id {
					return nil
				}
			}
			data = data[:0]
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			v = bytes.TrimPrefix(v, []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		} // event:, id:, retry: and comments are ignored
	}
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && bytes.EqualFold([]byte(s[:len(prefix)]), []byte(prefix))
}

// toolResult is the part of a CallToolResult the bench looks at.
type toolResult struct {
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	Content           json.RawMessage `json:"content"`
}

// roundTrip sends one complete JSON-RPC request (body without its id,
// starting with ",") and returns the tool result.
func (c *leanClient) roundTrip(ctx context.Context, rest []byte) (*toolResult, error) {
	c.nextID++
	id := strconv.FormatInt(c.nextID, 10)
	body := make([]byte, 0, len(rest)+32)
	body = append(body, `{"jsonrpc":"2.0","id":`...)
	body = append(body, id...)
	body = append(body, rest...)
	resp, err := c.do(ctx, http.MethodPost, c.hdr, body)
	if err != nil {
		return nil, err
	}
	var tr toolResult
	if err := c.readResponse(resp, id, &tr); err != nil {
		return nil, err
	}
	if len(tr.Content) == 0 {
		return nil, errors.New("tool result without content")
	}
	if tr.IsError {
		msg := string(tr.StructuredContent)
		if msg == "" {
			msg = string(tr.Content)
		}
		return &tr, &callError{What: "isError", Msg: msg}
	}
	return &tr, nil
}

func (c *leanClient) toolCall(ctx context.Context, tool string, args map[string]any) (*toolResult, error) {
	a, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	rest := make([]byte, 0, len(a)+96)
	rest = append(rest, `,"method":"tools/call","params":{"name":`...)
	rest = appendJSONString(rest, tool)
	rest = append(rest, `,"arguments":`...)
	rest = append(rest, a...)
	rest = append(rest, "}}"...)
	tr, err := c.roundTrip(ctx, rest)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	var content []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(tr.Content, &content); err != nil {
		return nil, fmt.Errorf("%s: content: %w", tool, err)
	}
	c.meter.Calls++
	c.meter.ArgBytes += int64(len(a))
	for _, t := range content {
		c.meter.ResultBytes += int64(len(t.Text))
	}
	return tr, nil
}

func (c *leanClient) call(ctx context.Context, tool string, args map[string]any) (map[string]any, error) {
	tr, err := c.toolCall(ctx, tool, args)
	if err != nil {
		return nil, err
	}
	var data map[string]any
	if len(tr.StructuredContent) > 0 {
		if err := json.Unmarshal(tr.StructuredContent, &data); err != nil {
			return nil, fmt.Errorf("%s: structured content: %w", tool, err)
		}
	}
	return data, nil
}

func (c *leanClient) callFast(ctx context.Context, tool string, args map[string]any) error {
	_, err := c.toolCall(ctx, tool, args)
	return err
}

// post is a keyed post_session_message with a pre-encoded request.
func (c *leanClient) post(ctx context.Context, session, kind, text, key string) error {
	rest := make([]byte, 0, len(c.postHead)+len(session)+len(text)+len(key)+64)
	rest = append(rest, c.postHead...)
	rest = appendJSONString(rest, session)
	rest = append(rest, `,"kind":`...)
	rest = appendJSONString(rest, kind)
	rest = append(rest, `,"text":`...)
	rest = appendJSONString(rest, text)
	rest = append(rest, `,"delivery_key":`...)
	rest = appendJSONString(rest, key)
	rest = append(rest, "}}}"...)
	if _, err := c.roundTrip(ctx, rest); err != nil {
		return fmt.Errorf("post_session_message: %w", err)
	}
	return nil
}

// ping sends a JSON-RPC ping on the session (the same headers, bearer
// token and Mcp-Session-Id as a tool call) and checks that the result is
// an object: the cost of the MCP stack without a tool or the database
// behind it (but with bearer auth, which the HTTP layer does for every
// request).
func (c *leanClient) ping(ctx context.Context) error {
	c.nextID++
	id := strconv.FormatInt(c.nextID, 10)
	body := make([]byte, 0, 48)
	body = append(body, `{"jsonrpc":"2.0","id":`...)
	body = append(body, id...)
	body = append(body, `,"method":"ping"}`...)
	resp, err := c.do(ctx, http.MethodPost, c.hdr, body)
	if err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	var res json.RawMessage
	if err := c.readResponse(resp, id, &res); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	if len(res) == 0 || res[0] != '{' {
		return fmt.Errorf("ping: result %q, want an object", res)
	}
	return nil
}

// close deletes the session (DELETE with Mcp-Session-Id) and drops the
// idle connections.
func (c *leanClient) close() {
	defer c.tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.do(ctx, http.MethodDelete, c.hdr, nil)
	if err != nil {
		logf("lean client: DELETE session: %v", err)
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		logf("lean client: DELETE session: HTTP %s", resp.Status)
	}
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch >= 0x20 && ch != '"' && ch != '\\' && ch < 0x7f {
			continue
		}
		if ch >= 0x80 { // UTF-8 passes through; encoding/json validates it on the server
			continue
		}
		b = append(b, s[start:i]...)
		switch ch {
		case '"', '\\':
			b = append(b, '\\', ch)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[ch>>4], hex[ch&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
