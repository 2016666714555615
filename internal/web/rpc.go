package web

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/rpcwire"
)

// The MCP SDK (go-sdk v1.8.0) answers HTTP-level errors with http.Error:
// plain text, whatever the request. Two small pieces here make every error
// JSON and mend the SDK's answers at our edge (docs/DECISIONS.md, "MCP"):
//
//   - jsonErrors, around every route, replaces a plain-text error body with
//     the contract's error object, or, for a JSON-RPC request to /mcp, with
//     a JSON-RPC error response carrying the request's id.
//   - rpcEdge, on /mcp after authentication and bodies, checks the body of
//     a POST: a body that is not a JSON-RPC message (or an unwanted batch)
//     is answered with a JSON-RPC parse error or invalid request before the
//     SDK sees it. It remembers the requests in flight on each session, so
//     that the answer to one the client cancelled is dropped from the
//     response stream (a receiver of notifications/cancelled should not
//     answer), and gives code-0 errors on the stream a JSON-RPC code.

// errShape says how an error of one request is written; rpcEdge fills it
// in for JSON-RPC requests.
type errShape struct {
	rpc bool
	id  json.RawMessage // of the single request, if any
}

type shapeKey struct{}

// writeProblem writes an HTTP error: for a JSON-RPC request a JSON-RPC
// error response (rpcCode, e's message, and data, by default e's code,
// retry and details), otherwise the contract's error object e.
func writeProblem(w http.ResponseWriter, ctx context.Context, status int, rpcCode int64, e *continuo.Error, data any) {
	msg, _ := redact.String(e.Message) // it may quote a header or a method name back
	if shape, _ := ctx.Value(shapeKey{}).(*errShape); shape != nil && shape.rpc {
		if data == nil {
			data = rpcData{Code: e.Code, Retry: continuo.RetryFor(e.Code), Details: e.Details}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		_, _ = w.Write((&rpcwire.Error{ID: shape.id, Code: rpcCode, Message: msg, Data: data}).Response())
		return
	}
	writeError(w, status, &continuo.Error{Code: e.Code, Message: msg, Details: e.Details})
}

// rpcData is the data of a JSON-RPC error of ours: the contract's code.
type rpcData struct {
	Code    continuo.Code  `json:"code"`
	Retry   continuo.Retry `json:"retry"`
	Details map[string]any `json:"details,omitempty"`
}

func codeForStatus(status int) continuo.Code {
	switch {
	case status == http.StatusNotFound:
		return continuo.CodeNotFound
	case status == http.StatusForbidden:
		return continuo.CodeForbidden
	case status == http.StatusUnauthorized:
		return continuo.CodeUnauthorized
	case status == http.StatusRequestEntityTooLarge:
		return continuo.CodeTooLarge
	case status >= 500:
		return continuo.CodeInternal
	}
	return continuo.CodeInvalidInput
}

// codeSessionNotFound is the JSON-RPC code of "no such session" (404), as
// the TypeScript SDK's server sends it.
const codeSessionNotFound = -32001

// rpcCodeFor is the JSON-RPC code of a plain-text error of the SDK's.
func rpcCodeFor(status int, text string) int64 {
	switch {
	case strings.Contains(text, "JSON RPC not handled"): // jsonrpc2.ErrNotHandled: an unknown method
		return rpcwire.CodeMethodNotFound
	case status == http.StatusNotFound:
		return codeSessionNotFound
	case status >= 500:
		return rpcwire.CodeInternalError
	}
	return rpcwire.CodeInvalidRequest
}

// jsonErrors makes every error response below it JSON.
func jsonErrors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Whatever its body, a POST to /mcp means to be JSON-RPC; rpcEdge
		// adds the request's id once it has read the body.
		shape := &errShape{rpc: r.Method == http.MethodPost && mcpPath(r.URL.Path)}
		r = r.WithContext(context.WithValue(r.Context(), shapeKey{}, shape))
		ew := &errorWriter{ResponseWriter: w, ctx: r.Context()}
		next.ServeHTTP(ew, r)
		ew.finish()
	})
}

// errorWriter holds back a plain-text error (http.Error's) and writes it
// as JSON when the handler is done.
type errorWriter struct {
	http.ResponseWriter
	ctx    context.Context
	wrote  bool
	status int
	text   *bytes.Buffer // non-nil while a text error is held back
}

func (w *errorWriter) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	if code >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.status, w.text = code, &bytes.Buffer{}
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *errorWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.text != nil {
		if w.text.Len() < 1024 {
			w.text.Write(p)
		}
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

func (w *errorWriter) finish() {
	if w.text == nil {
		return
	}
	text := strings.TrimSpace(w.text.String())
	w.Header().Del("X-Content-Type-Options")
	writeProblem(w.ResponseWriter, w.ctx, w.status, rpcCodeFor(w.status, text), &continuo.Error{Code: codeForStatus(w.status), Message: text}, nil)
}

func (w *errorWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && w.text == nil {
		f.Flush()
	}
}

func (w *errorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// rpcEdge checks the JSON-RPC framing of POST /mcp; see the top of the file.
// It comes after bodies, which has read the body (bounded) into memory.
type rpcEdge struct {
	next  http.Handler
	calls rpcwire.Calls // keyed by session ID + "\x00" + request key
}

func (e *rpcEdge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		e.next.ServeHTTP(w, r)
		return
	}
	shape, _ := r.Context().Value(shapeKey{}).(*errShape)
	if shape == nil {
		shape = &errShape{rpc: true}
		r = r.WithContext(context.WithValue(r.Context(), shapeKey{}, shape))
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeProblem(w, r.Context(), http.StatusBadRequest, rpcwire.CodeParseError,
			continuo.Errorf(continuo.CodeInvalidInput, "parse error: the body could not be read"), nil)
		return
	}
	// Like the SDK: without the header, the request is of 2025-03-26, which
	// still has batches.
	version := r.Header.Get("Mcp-Protocol-Version")
	msgs, batch, perr := rpcwire.Parse(body, version == "" || version < "2025-06-18")
	if perr != nil {
		shape.id = perr.ID
		writeProblem(w, r.Context(), http.StatusBadRequest, perr.Code, &continuo.Error{Code: continuo.CodeInvalidInput, Message: perr.Message}, nil)
		return
	}
	if !batch {
		shape.id = msgs[0].ID
		if msgs[0].Progress {
			r = r.WithContext(context.WithValue(r.Context(), progressKey{}, true))
		}
	}
	sid := r.Header.Get(mcpSessionHeader)
	f := &streamFilter{ResponseWriter: w, edge: e, sid: sid}
	if sid != "" {
		for _, m := range msgs {
			if m.Cancels != "" {
				e.calls.Cancel(sid + "\x00" + m.Cancels)
			}
			if m.IsCall() && !batch {
				if c := e.calls.Start(sid + "\x00" + m.Key); c != nil {
					f.started = append(f.started, started{m.Key, m.ID, c})
				}
			}
		}
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	e.next.ServeHTTP(f, r)
	if sid != "" && r.Context().Err() != nil {
		for _, s := range f.started {
			e.abandon(r, s)
		}
	}
	if len(f.buf) > 0 { // an unfinished event: passed on as it is
		_, _ = f.ResponseWriter.Write(f.buf)
	}
	for _, s := range f.started { // never answered here (the stream broke)
		e.calls.End(sid+"\x00"+s.key, s.call)
	}
}

// progressKey marks a request whose one message carries a progress token.
type progressKey struct{}

// wantsProgress reports whether r's client asked to hear progress.
func wantsProgress(r *http.Request) bool {
	v, _ := r.Context().Value(progressKey{}).(bool)
	return v
}

type started struct {
	key  string
	id   json.RawMessage // as sent
	call *rpcwire.Call
}

// abandon tells r's session that its client gave up on the call s: it
// closed the request without notifications/cancelled (a CLI killed
// mid-call does). The SDK (go-sdk v1.8.0) ties a handler to its request
// only in the stateless protocol, so a waiting call of a stateful session
// would run to its end, answering nobody, and hold the session meanwhile:
// its DELETE waits for it. The notification, sent as the client would have
// sent it, cancels the call.
func (e *rpcEdge) abandon(r *http.Request, s started) {
	body := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + string(s.id) + `,"reason":"the client closed the request"}}`
	req := r.Clone(context.WithoutCancel(r.Context()))
	req.Body, req.ContentLength = io.NopCloser(strings.NewReader(body)), int64(len(body))
	e.next.ServeHTTP(discard{http.Header{}}, req)
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{ h http.Header }

func (d discard) Header() http.Header         { return d.h }
func (d discard) Write(p []byte) (int, error) { return len(p), nil }
func (d discard) WriteHeader(int)             {}

// streamFilter passes a server-sent event stream on event by event,
// dropping the answer to a request cancelled meanwhile and giving code-0
// errors a JSON-RPC code. Anything else is passed on as it is.
type streamFilter struct {
	http.ResponseWriter
	edge    *rpcEdge
	sid     string
	started []started
	checked bool // whether the content type was looked at
	sse     bool
	buf     []byte
}

func (f *streamFilter) Write(p []byte) (int, error) {
	if !f.checked {
		f.checked = true
		f.sse = strings.HasPrefix(f.Header().Get("Content-Type"), "text/event-stream")
	}
	if !f.sse {
		return f.ResponseWriter.Write(p)
	}
	f.buf = append(f.buf, p...)
	for {
		i := bytes.Index(f.buf, []byte("\n\n"))
		if i < 0 {
			return len(p), nil
		}
		ev := f.buf[:i+2]
		f.buf = f.buf[i+2:]
		if ev = f.event(ev); ev != nil {
			if _, err := f.ResponseWriter.Write(ev); err != nil {
				return 0, err
			}
		}
	}
}

// event returns the event to send in place of ev (nil: none).
func (f *streamFilter) event(ev []byte) []byte {
	lines := bytes.Split(bytes.TrimSuffix(ev, []byte("\n\n")), []byte("\n"))
	for i, l := range lines {
		data, ok := bytes.CutPrefix(l, []byte("data: "))
		if !ok {
			continue
		}
		o := rpcwire.Inspect(data)
		for j, s := range f.started {
			if s.key == o.Key {
				f.started = append(f.started[:j], f.started[j+1:]...)
				if f.edge.calls.End(f.sid+"\x00"+s.key, s.call) {
					return nil // cancelled: not answered
				}
				break
			}
		}
		if !bytes.Equal(o.Msg, data) {
			lines[i] = append([]byte("data: "), o.Msg...)
			return append(bytes.Join(lines, []byte("\n")), "\n\n"...)
		}
	}
	return ev
}

func (f *streamFilter) Flush() {
	if fl, ok := f.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}

func (f *streamFilter) Unwrap() http.ResponseWriter { return f.ResponseWriter }
