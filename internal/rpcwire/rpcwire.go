// Package rpcwire checks JSON-RPC 2.0 framing at Continuo's two MCP edges
// (stdio lines, HTTP bodies) before the MCP SDK reads it, and mends what the
// SDK writes back. It exists for what go-sdk v1.8.0 gets wrong at the wire
// (docs/DECISIONS.md, "MCP"): one malformed stdio line ends the connection;
// HTTP framing errors are answered in plain text; some errors carry code 0;
// and a request the client cancelled is still answered, where the spec says
// a receiver should not. It knows JSON-RPC only, not MCP.
package rpcwire

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"sync"
)

// JSON-RPC error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeRequestCancelled is the code LSP gives a request that ended
	// because it was cancelled; JSON-RPC and MCP define none.
	CodeRequestCancelled = -32800
)

// Message is what the edges need to know of one incoming message.
type Message struct {
	ID     json.RawMessage // as sent; nil when absent
	Key    string          // canonical form of ID ("" when absent): 1, 1.0 and 1e0 are one request
	Method string          // "" for a response
	// Cancels is, for notifications/cancelled, the Key of the request it
	// cancels ("" when the notification names none that is valid).
	Cancels string
	// Version is, for initialize, the protocol version the client asks for.
	Version string
	// Progress reports whether a request carries a progress token
	// (params._meta.progressToken): its client wants to hear progress.
	Progress bool
}

// IsCall reports whether m is a request that expects an answer.
func (m Message) IsCall() bool { return m.Method != "" && m.Key != "" }

// Error is a JSON-RPC error response.
type Error struct {
	ID      json.RawMessage // nil: the id is unknown (null)
	Code    int64
	Message string
	Data    any
}

func (e *Error) Error() string { return e.Message }

// Response encodes e as a JSON-RPC response object.
func (e *Error) Response() []byte {
	id := e.ID
	if id == nil {
		id = json.RawMessage("null")
	}
	type body struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   body            `json:"error"`
	}{"2.0", id, body{e.Code, e.Message, e.Data}})
	return b
}

func invalid(id json.RawMessage, msg string) *Error {
	return &Error{ID: id, Code: CodeInvalidRequest, Message: "invalid request: " + msg}
}

// Parse checks one frame (a stdio line, an HTTP body): one JSON-RPC message,
// or, when batchOK, a non-empty batch of them. It accepts only what the SDK
// reads without failing the connection, and refuses ids the SDK would
// change (a fraction, a number past 2^53).
func Parse(frame []byte, batchOK bool) (msgs []Message, batch bool, err *Error) {
	frame = bytes.TrimSpace(frame)
	if len(frame) == 0 {
		return nil, false, &Error{Code: CodeParseError, Message: "parse error: empty message"}
	}
	if !json.Valid(frame) {
		return nil, false, &Error{Code: CodeParseError, Message: "parse error: not one valid JSON value"}
	}
	switch frame[0] {
	case '{':
		m, err := parseOne(frame)
		if err != nil {
			return nil, false, err
		}
		return []Message{m}, false, nil
	case '[':
		if !batchOK {
			return nil, true, invalid(nil, "JSON-RPC batches are not part of this protocol version (from 2025-06-18 on)")
		}
		var raws []json.RawMessage
		_ = json.Unmarshal(frame, &raws)
		if len(raws) == 0 {
			return nil, true, invalid(nil, "empty batch")
		}
		// One bad message fails the whole batch with one answer (id null):
		// the SDK would fail the connection on it.
		seen := map[string]bool{}
		for _, raw := range raws {
			m, err := parseOne(raw)
			if err != nil {
				err.ID = nil
				return nil, true, err
			}
			if m.Key != "" && m.Method != "" {
				if seen[m.Key] {
					return nil, true, invalid(nil, "a batch holds two requests with one id")
				}
				seen[m.Key] = true
			}
			msgs = append(msgs, m)
		}
		return msgs, true, nil
	}
	return nil, false, invalid(nil, "a JSON-RPC message is an object")
}

func parseOne(raw []byte) (Message, *Error) {
	var f map[string]json.RawMessage
	if json.Unmarshal(raw, &f) != nil || f == nil {
		return Message{}, invalid(nil, "a JSON-RPC message is an object")
	}
	var m Message
	if idRaw, ok := f["id"]; ok {
		key, ok := idKey(idRaw)
		if !ok {
			return m, invalid(nil, "id must be a string or an integer")
		}
		m.ID, m.Key = idRaw, key
	}
	if v, ok := f["jsonrpc"]; !ok || string(bytes.TrimSpace(v)) != `"2.0"` {
		return m, invalid(m.ID, `"jsonrpc" must be "2.0"`)
	}
	if raw, ok := f["method"]; ok {
		if json.Unmarshal(raw, &m.Method) != nil || m.Method == "" {
			return m, invalid(m.ID, "method must be a non-empty string")
		}
		var p struct {
			RequestID       json.RawMessage `json:"requestId"`
			ProtocolVersion string          `json:"protocolVersion"`
			Meta            struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		}
		_ = json.Unmarshal(f["params"], &p)
		if t := bytes.TrimSpace(p.Meta.ProgressToken); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
			m.Progress = m.Key != ""
		}
		switch m.Method {
		case "notifications/cancelled":
			if p.RequestID != nil {
				m.Cancels, _ = idKey(p.RequestID)
			}
		case "initialize":
			m.Version = p.ProtocolVersion
		}
		return m, nil
	}
	// A response (to a request of the server's).
	if m.Key == "" {
		return m, invalid(nil, "a message without a method is a response and needs an id")
	}
	_, hasResult := f["result"]
	errRaw, hasError := f["error"]
	if hasResult == hasError {
		return m, invalid(m.ID, "a response has exactly one of result and error")
	}
	if hasError {
		var e struct {
			Code    *json.Number `json:"code"`
			Message *string      `json:"message"`
		}
		if json.Unmarshal(errRaw, &e) != nil || e.Code == nil || e.Message == nil {
			return m, invalid(m.ID, "error must be an object with a code and a message")
		}
		if _, err := e.Code.Int64(); err != nil {
			return m, invalid(m.ID, "error code must be an integer")
		}
	}
	return m, nil
}

// idKey returns the canonical key of a JSON-RPC id: a string, or a number
// that is an integer of at most 2^53 in magnitude (the SDK reads numbers as
// float64 and keeps their integer part).
func idKey(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return "s" + s, true
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return "", false
		}
		return "n" + strconv.FormatInt(int64(f), 10), true
	}
	return "", false
}

// Outgoing is what the edges need to know of a message the SDK writes.
type Outgoing struct {
	Key string // of the request it answers; "" unless it is a response
	// ProtocolVersion is result.protocolVersion, which only the answer to
	// initialize (or server/discover) carries.
	ProtocolVersion string
	Msg             []byte // the message, an error with code 0 given a code
}

// Inspect reads one message the SDK writes. A batch, or anything that is
// not a response object, is passed on as it is.
func Inspect(msg []byte) Outgoing {
	out := Outgoing{Msg: msg}
	t := bytes.TrimSpace(msg)
	if len(t) == 0 || t[0] != '{' {
		return out
	}
	var f map[string]json.RawMessage
	if json.Unmarshal(t, &f) != nil {
		return out
	}
	if _, ok := f["method"]; ok {
		return out
	}
	out.Key, _ = idKey(f["id"])
	if r, ok := f["result"]; ok {
		var v struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if json.Unmarshal(r, &v) == nil {
			out.ProtocolVersion = v.ProtocolVersion
		}
	}
	e, ok := f["error"]
	if !ok {
		return out
	}
	var we struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	}
	if json.Unmarshal(e, &we) != nil || we.Code != 0 {
		return out
	}
	// Code 0 is no JSON-RPC code: the SDK passes a plain Go error through.
	switch {
	case we.Message == "context canceled":
		we.Code = CodeRequestCancelled
	case strings.Contains(we.Message, "invalid during session initialization"):
		we.Code = CodeInvalidRequest // a request before notifications/initialized
	default:
		we.Code = CodeInternalError
	}
	f["error"], _ = json.Marshal(we)
	out.Msg, _ = json.Marshal(f)
	return out
}

// Calls tracks requests in flight, so that the answer to one the client
// cancelled is not sent: a receiver of notifications/cancelled SHOULD NOT
// answer the request (MCP, "Cancellation"). The SDK answers it anyway.
// Keys are the callers' (a request Key, on HTTP prefixed with the session).
type Calls struct {
	mu sync.Mutex
	m  map[string]*Call
}

// Call is one tracked request.
type Call struct{ cancelled bool }

// Start tracks the request key; nil when it is already in flight (a client
// reusing an id), which is then not tracked.
func (c *Calls) Start(key string) *Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; ok {
		return nil
	}
	if c.m == nil {
		c.m = map[string]*Call{}
	}
	call := &Call{}
	c.m[key] = call
	return call
}

// Cancel marks the request key cancelled, if it is in flight.
func (c *Calls) Cancel(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if call, ok := c.m[key]; ok {
		call.cancelled = true
	}
}

// End stops tracking key and reports whether it was cancelled: its answer is
// then dropped. With a non-nil call, only that call is ended (an HTTP
// request ending after its answer went out must not end a newer request
// that reuses the id).
func (c *Calls) End(key string, call *Call) (cancelled bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, ok := c.m[key]
	if !ok || (call != nil && cur != call) {
		return false
	}
	delete(c.m, key)
	return cur.cancelled
}
