// Package providertest is a fake OpenAI API for tests: an HTTP server on
// 127.0.0.1 that answers POST /v1/responses and POST /v1/chat/completions
// with event streams framed as OpenAI frames them, and GET /v1/models,
// following a Script: the deltas to send, how fast, and how to end. It
// records every request it receives, so that a test can say how many
// reached it and what they carried (the credential included).
//
// Every failure it is told to produce that has a text carries the
// Authorization header it received in it (the error body of an HTTP error
// or a wrong key, the message of a failed response, of an error event, of
// an error chunk): a test that finds the key nowhere in what a provider
// returns has proved that none of that text leaks.
//
// It does not import internal/provider, so that package's own tests can
// use it.
package providertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// echo is how a failure quotes the Authorization header it received.
func (sc Script) echo(auth string) string {
	if sc.EchoBareKey {
		return "you sent " + strings.TrimPrefix(auth, "Bearer ")
	}
	return "Authorization: " + auth
}

// End is how a stream ends, once its deltas are sent.
type End int

const (
	// EndCompleted ends normally. Responses: response.completed with the
	// usage. Chat: a chunk with finish_reason "stop", the usage chunk (when
	// the request asked for it: stream_options.include_usage) and
	// "data: [DONE]" (see Script.OmitUsage, Script.OmitDone).
	EndCompleted End = iota
	// EndIncomplete: Responses: response.incomplete with reason
	// max_output_tokens; Chat: finish_reason "length", usage, [DONE].
	EndIncomplete
	// EndContentFilter: Responses: response.incomplete with reason
	// content_filter; Chat: finish_reason "content_filter", usage, [DONE].
	EndContentFilter
	// EndRefusal sends the deltas as refusal text, then ends as
	// EndCompleted would (Responses: the completed output holds the
	// refusal content part; Chat: finish_reason "stop").
	EndRefusal
	// EndFailed: Responses: response.failed with an error object; Chat:
	// a `data: {"error": …}` chunk. The connection then ends cleanly.
	EndFailed
	// EndError: Responses: an "error" event; Chat: the error chunk under
	// "event: error".
	EndError
	// EndStatus answers the request with Script.Status (default 500) and
	// a JSON error body, before any stream.
	EndStatus
	// EndDrop cuts the connection after the deltas, without ending the
	// response (the client reads an unexpected EOF).
	EndDrop
	// EndMalformed sends an event whose JSON is cut short, then ends the
	// body cleanly.
	EndMalformed
	// EndNone ends the body cleanly after the deltas, with no terminal
	// event (Chat: no finish reason, no usage, no [DONE]).
	EndNone
	// EndHang sends the deltas and then nothing, until the client goes
	// away (or the server closes).
	EndHang
)

// Usage is the usage a stream reports, in the Responses API's names (Chat
// sends them as prompt_tokens, completion_tokens, total_tokens).
type Usage struct {
	InputTokens  int64
	OutputTokens int64
	TotalTokens  int64
}

// Script says what the server answers to every turn request (and what it
// does with GET /v1/models).
type Script struct {
	// Deltas are the text pieces, one event each.
	Deltas []string
	// Delay paces the deltas: delta i leaves at the stream's start plus
	// i×Delay (so a slow consumer does not slow the schedule). 0: at once.
	// Rate gives a Delay for a token rate.
	Delay time.Duration
	End   End
	// Status is EndStatus's HTTP status (default 500), and Location its
	// Location header (for a 3xx).
	Status   int
	Location string
	// Usage is what the end reports; nil: 7 in, one per delta out.
	Usage *Usage
	// OmitUsage and OmitDone (Chat) leave out the usage chunk and the
	// final "data: [DONE]".
	OmitUsage bool
	OmitDone  bool
	// CRLF ends lines with "\r\n"; Comments sends a ": keep-alive"
	// comment before every delta.
	CRLF     bool
	Comments bool
	// APIKey, when set, is the key requests must carry ("Bearer APIKey");
	// others are answered 401 (with the header they sent echoed).
	APIKey string
	// HoldHeaders sends nothing at all, not even the status line, until
	// the client goes away: for timeouts on the response headers.
	HoldHeaders bool
	// EchoBareKey makes every failure quote the key it received alone,
	// without its scheme or a name before it ("you sent KEY"), as APIs do
	// that say "Incorrect API key provided: …": text in which nothing but
	// the key's value tells it is one.
	EchoBareKey bool
	// Raw, when set, is the whole stream's body, sent as is after the
	// stream's headers: for dialects and broken streams. End then says
	// only whether the connection is cut (EndDrop), hangs (EndHang) or
	// ends cleanly (anything else but EndStatus, which still answers with
	// its status).
	Raw string
	// ContentType replaces the stream's "text/event-stream; charset=utf-8".
	ContentType string
	// Before, when set, is called before delta i is paced and sent; it may
	// block (ctx ends when the client goes away or the server closes).
	Before func(ctx context.Context, i int)
	// Sent, when set, is called once delta i has been written and flushed;
	// at is when its write began.
	Sent func(i int, at time.Time)
}

// Rate is the Delay that sends tokensPerSecond deltas a second.
func Rate(tokensPerSecond float64) time.Duration {
	return time.Duration(float64(time.Second) / tokensPerSecond)
}

// Tokens returns n deltas: word, word, … (a space before all but the
// first), for throughput tests.
func Tokens(n int, word string) []string {
	out := make([]string, n)
	for i := range out {
		if i == 0 {
			out[i] = word
		} else {
			out[i] = " " + word
		}
	}
	return out
}

// Request is one request the server received.
type Request struct {
	Method        string
	Path          string
	Header        http.Header
	Authorization string // the Authorization header, as received
	Body          []byte
	// Gone is closed when the client went away (or the server closed)
	// while the server was still answering: the proof that a cancelled
	// turn closed its connection.
	Gone <-chan struct{}
}

// Server is a running fake. Its URL is the root; BaseURL is what a
// provider is configured with.
type Server struct {
	*httptest.Server
	script Script
	mu     sync.Mutex
	reqs   []Request
}

// NewServer starts a server on 127.0.0.1 that follows script, closed when
// the test ends.
func NewServer(t testing.TB, script Script) *Server {
	t.Helper()
	s := &Server{script: script}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("providertest: listen: %v", err)
	}
	s.Listener.Close()
	s.Listener = l
	s.Start()
	t.Cleanup(func() {
		// A hanging stream's handler waits for its client: cut them all,
		// or Close would wait for them.
		s.CloseClientConnections()
		s.Close()
	})
	return s
}

// BaseURL is the URL a provider is configured with ("…/v1").
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	gone := make(chan struct{})
	// The client is gone when the request's context ends while the
	// handler runs, or when a write to it fails (which can come first: a
	// handler that then returns would stop the context's notice).
	lost := sync.OnceFunc(func() { close(gone) })
	stop := context.AfterFunc(r.Context(), lost)
	defer func() {
		// The server ends a request's context only after its handler has
		// returned, so a context already done here means the client went
		// away. Say so before stop: a handler woken by the context's Done
		// can get here before the AfterFunc has started, and stop would
		// then keep it from ever running (a loaded CI machine saw that as
		// "the connection was not closed").
		if r.Context().Err() != nil {
			lost()
		}
		stop() // a handler that finished did not see its client go
	}()
	s.mu.Lock()
	s.reqs = append(s.reqs, Request{
		Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(),
		Authorization: r.Header.Get("Authorization"), Body: body, Gone: gone,
	})
	s.mu.Unlock()

	sc := s.script
	auth := r.Header.Get("Authorization")
	if sc.HoldHeaders {
		<-r.Context().Done()
		return
	}
	var api string
	switch {
	case r.URL.Path == "/v1/models" && r.Method == http.MethodGet:
		api = "models"
	case r.URL.Path == "/v1/responses" && r.Method == http.MethodPost:
		api = "responses"
	case r.URL.Path == "/v1/chat/completions" && r.Method == http.MethodPost:
		api = "chat"
	default:
		writeError(w, http.StatusNotFound, "not_found", "no route "+r.Method+" "+r.URL.Path+"; "+sc.echo(auth))
		return
	}
	if sc.APIKey != "" && auth != "Bearer "+sc.APIKey {
		writeError(w, http.StatusUnauthorized, "invalid_api_key", "Incorrect API key provided: "+auth)
		return
	}
	if sc.End == EndStatus {
		status := sc.Status
		if status == 0 {
			status = http.StatusInternalServerError
		}
		if sc.Location != "" {
			w.Header().Set("Location", sc.Location)
		}
		writeError(w, status, codeOf(status), "scripted failure; "+sc.echo(auth))
		return
	}
	if api == "models" {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","data":[{"id":"providertest-model","object":"model","created":%d,"owned_by":"providertest"}]}`, time.Now().Unix())
		return
	}

	var req struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err := json.Unmarshal(body, &req); err != nil || !req.Stream {
		writeError(w, http.StatusBadRequest, "invalid_request", "providertest serves streams only: \"stream\": true")
		return
	}
	ct := sc.ContentType
	if ct == "" {
		ct = "text/event-stream; charset=utf-8"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	st := &stream{w: w, rc: http.NewResponseController(w), ctx: r.Context(), sc: sc, eol: "\n", model: req.Model, auth: auth, lost: lost}
	if sc.CRLF {
		st.eol = "\r\n"
	}
	st.flush()
	if sc.Raw != "" {
		st.write(sc.Raw)
		st.flush()
	} else if api == "responses" {
		st.responses()
	} else {
		st.chat(req.StreamOptions.IncludeUsage)
	}
	switch sc.End {
	case EndDrop:
		// Ends the handler without ending the response: the server closes
		// the connection with the chunked body unfinished.
		panic(http.ErrAbortHandler)
	case EndHang:
		<-r.Context().Done()
	}
}

// writeError writes an OpenAI-style JSON error.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": msg, "type": "invalid_request_error", "param": nil, "code": code,
	}})
	w.Write(b)
}

func codeOf(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "invalid_api_key"
	case http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	default:
		return "server_error"
	}
}

// stream writes one response's events.
type stream struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	ctx   context.Context
	sc    Script
	eol   string
	model string
	auth  string
	seq   int
	lost  func() // the client is gone
}

func (st *stream) write(s string) {
	if _, err := io.WriteString(st.w, s); err != nil {
		st.lost()
	}
}

func (st *stream) flush() {
	if err := st.rc.Flush(); err != nil {
		st.lost()
	}
}

// event writes one event (name "" for Chat's unnamed ones) and flushes it.
func (st *stream) event(name string, data any) {
	var b []byte
	switch d := data.(type) {
	case string:
		b = []byte(d)
	default:
		var err error
		if b, err = json.Marshal(d); err != nil {
			panic(err)
		}
	}
	var buf bytes.Buffer
	if name != "" {
		buf.WriteString("event: " + name + st.eol)
	}
	buf.WriteString("data: ")
	buf.Write(b)
	buf.WriteString(st.eol + st.eol)
	st.write(buf.String())
	st.flush()
}

// deltas paces and sends the deltas through send; false when the client
// went away.
func (st *stream) deltas(send func(i int, d string)) bool {
	start := time.Now()
	for i, d := range st.sc.Deltas {
		if st.sc.Before != nil {
			st.sc.Before(st.ctx, i)
		}
		if wait := time.Until(start.Add(time.Duration(i) * st.sc.Delay)); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-st.ctx.Done():
				t.Stop()
				return false
			}
		}
		if st.ctx.Err() != nil {
			return false
		}
		if st.sc.Comments {
			st.write(": keep-alive" + st.eol + st.eol)
		}
		at := time.Now()
		send(i, d)
		if st.sc.Sent != nil {
			st.sc.Sent(i, at)
		}
	}
	return true
}

func (st *stream) usage() Usage {
	if st.sc.Usage != nil {
		return *st.sc.Usage
	}
	n := int64(len(st.sc.Deltas))
	return Usage{InputTokens: 7, OutputTokens: n, TotalTokens: 7 + n}
}

const (
	respID = "resp_providertest"
	itemID = "msg_providertest"
)

// ev is a Responses event: its type, a sequence number, and fields.
func (st *stream) ev(typ string, fields map[string]any) {
	m := map[string]any{"type": typ, "sequence_number": st.seq}
	for k, v := range fields {
		m[k] = v
	}
	st.seq++
	st.event(typ, m)
}

func (st *stream) responseObject(status string, output []any, usage *Usage, extra map[string]any) map[string]any {
	var u any
	if usage != nil {
		u = map[string]any{
			"input_tokens": usage.InputTokens, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": usage.OutputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": usage.TotalTokens,
		}
	}
	m := map[string]any{
		"id": respID, "object": "response", "created_at": time.Now().Unix(), "status": status,
		"model": st.model, "output": output, "usage": u, "error": nil, "incomplete_details": nil,
		"max_output_tokens": nil, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{},
		"text": map[string]any{"format": map[string]any{"type": "text"}},
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// responses writes a Responses API stream: created, in_progress, the
// message item and its content part, the deltas, and the script's end.
func (st *stream) responses() {
	sc := st.sc
	partType, deltaType, doneType, textKey := "output_text", "response.output_text.delta", "response.output_text.done", "text"
	if sc.End == EndRefusal {
		partType, deltaType, doneType, textKey = "refusal", "response.refusal.delta", "response.refusal.done", "refusal"
	}
	st.ev("response.created", map[string]any{"response": st.responseObject("in_progress", []any{}, nil, nil)})
	st.ev("response.in_progress", map[string]any{"response": st.responseObject("in_progress", []any{}, nil, nil)})
	item := func(status string, content []any) map[string]any {
		return map[string]any{"id": itemID, "type": "message", "status": status, "role": "assistant", "content": content}
	}
	part := func(text string) map[string]any {
		p := map[string]any{"type": partType, textKey: text}
		if partType == "output_text" {
			p["annotations"] = []any{}
		}
		return p
	}
	st.ev("response.output_item.added", map[string]any{"output_index": 0, "item": item("in_progress", []any{})})
	st.ev("response.content_part.added", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "part": part("")})
	var text strings.Builder
	ok := st.deltas(func(i int, d string) {
		text.WriteString(d)
		st.ev(deltaType, map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "delta": d})
	})
	if !ok {
		return
	}
	u := st.usage()
	full := text.String()
	switch sc.End {
	case EndCompleted, EndRefusal, EndIncomplete, EndContentFilter:
		st.ev(doneType, map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, textKey: full})
		st.ev("response.content_part.done", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "part": part(full)})
		st.ev("response.output_item.done", map[string]any{"output_index": 0, "item": item("completed", []any{part(full)})})
		output := []any{item("completed", []any{part(full)})}
		switch sc.End {
		case EndIncomplete, EndContentFilter:
			reason := "max_output_tokens"
			if sc.End == EndContentFilter {
				reason = "content_filter"
			}
			st.ev("response.incomplete", map[string]any{"response": st.responseObject("incomplete", output, &u,
				map[string]any{"incomplete_details": map[string]any{"reason": reason}})})
		default:
			st.ev("response.completed", map[string]any{"response": st.responseObject("completed", output, &u, nil)})
		}
	case EndFailed:
		st.ev("response.failed", map[string]any{"response": st.responseObject("failed", []any{}, nil, map[string]any{
			"error": map[string]any{"code": "server_error", "message": "scripted failure; " + st.sc.echo(st.auth)},
		})})
	case EndError:
		st.ev("error", map[string]any{"code": "server_error", "message": "scripted error; " + st.sc.echo(st.auth), "param": nil})
	case EndMalformed:
		st.event("response.output_text.delta", `{"type":"response.output_text.delta","delta":"cut`)
	}
}

// chunk writes one Chat Completions chunk.
func (st *stream) chunk(choices []any, withUsageField bool, usage any) {
	m := map[string]any{
		"id": "chatcmpl-providertest", "object": "chat.completion.chunk", "created": time.Now().Unix(),
		"model": st.model, "system_fingerprint": "fp_providertest", "choices": choices,
	}
	if withUsageField {
		m["usage"] = usage // null on every chunk but the last, as OpenAI sends it
	}
	st.event("", m)
}

func choice(delta map[string]any, finish any) []any {
	return []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}
}

// chat writes a Chat Completions stream: a role chunk, the deltas, and the
// script's end.
func (st *stream) chat(includeUsage bool) {
	sc := st.sc
	key := "content"
	first := map[string]any{"role": "assistant", "content": "", "refusal": nil}
	if sc.End == EndRefusal {
		key = "refusal"
		first = map[string]any{"role": "assistant", "content": nil, "refusal": ""}
	}
	st.chunk(choice(first, nil), includeUsage, nil)
	ok := st.deltas(func(i int, d string) {
		st.chunk(choice(map[string]any{key: d}, nil), includeUsage, nil)
	})
	if !ok {
		return
	}
	errorChunk := map[string]any{"error": map[string]any{
		"message": "scripted failure; " + st.sc.echo(st.auth), "type": "server_error", "param": nil, "code": nil,
	}}
	finish := ""
	switch sc.End {
	case EndCompleted, EndRefusal:
		finish = "stop"
	case EndIncomplete:
		finish = "length"
	case EndContentFilter:
		finish = "content_filter"
	case EndFailed:
		st.event("", errorChunk)
	case EndError:
		st.event("error", errorChunk)
	case EndMalformed:
		st.event("", `{"choices":[{"index":0,"delta":{"content":"cut`)
	}
	if finish == "" {
		return
	}
	st.chunk(choice(map[string]any{}, finish), includeUsage, nil)
	if includeUsage && !sc.OmitUsage {
		u := st.usage()
		st.chunk([]any{}, true, map[string]any{
			"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens, "total_tokens": u.TotalTokens,
			"prompt_tokens_details":     map[string]any{"cached_tokens": 0},
			"completion_tokens_details": map[string]any{"reasoning_tokens": 0},
		})
	}
	if !sc.OmitDone {
		st.event("", "[DONE]")
	}
}

// ErrNoRequest is WaitGone's error when the server has received no
// request.
var ErrNoRequest = errors.New("providertest: no request received")

// WaitGone waits until the client of the newest request went away while
// the server was answering it (Request.Gone), or ctx ends.
func (s *Server) WaitGone(ctx context.Context) error {
	reqs := s.Requests()
	if len(reqs) == 0 {
		return ErrNoRequest
	}
	select {
	case <-reqs[len(reqs)-1].Gone:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
