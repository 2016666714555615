// Package modelstub is a scripted model for driving real AI clients (Claude
// Code, Codex CLI) in tests, offline: an HTTP server on 127.0.0.1 that
// answers the Anthropic Messages API (POST /v1/messages, streamed as
// Anthropic streams it) and the OpenAI Responses API (POST /v1/responses,
// streamed as OpenAI streams it) with the replies a test scripts, tool calls
// included. It records every request, parsed into one shape for both wire
// APIs, so that a test can say what the client sent the model: the system
// prompt and the MCP server's instructions, the tools listed, the tool
// results, the context a hook injected.
//
// A conversation follows a Plan: the newest user prompt that contains the
// plan's marker selects it, and the k-th tool call the model has made since
// that prompt decides the next reply (Plan.Steps[k]; past the end, a final
// text). A reply is therefore a pure function of the request, so a client's
// retries, resumed conversations and side requests get the same answer.
//
// Claude Code lists MCP tools by name only until the model loads their
// schemas with its ToolSearch tool; the stub does that first, on its own,
// whenever a step calls a tool the request does not define yet — as a
// model would, and without counting it as a step.
package modelstub

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Dialect is the wire API of a request.
type Dialect string

// The wire APIs the stub speaks.
const (
	Anthropic Dialect = "anthropic" // POST /v1/messages
	Responses Dialect = "responses" // POST /v1/responses
)

// Request is one request a client sent, parsed.
type Request struct {
	Dialect Dialect
	Path    string
	Body    []byte // as received
	Stream  bool
	// System is the system prompt (Anthropic) or the instructions
	// (Responses), with every system and developer message of the
	// conversation after it, in order.
	System string
	// Tools are the names of the tools the request lists (deferred ones
	// too): a namespaced
	// Responses tool as NAMESPACE + NAME ("mcp__continuo__list_projects"),
	// as Claude Code names MCP tools.
	Tools []string
	// ToolDocs is every tool's and namespace's description, one per line
	// group: Codex gives an MCP server's instructions as its namespace's
	// description.
	ToolDocs string
	Items    []Item // the conversation, oldest first

	// Claude Code lists MCP tools as deferred (defer_loading) until a
	// ToolSearch result references them (a tool_reference block); Codex
	// leaves them out until a tool_search_output brings them.
	deferred, loaded []string
}

// Item is one element of a conversation.
type Item struct {
	Role   string // user, assistant, system, developer (for text items)
	Text   string
	Call   *Call   // a tool call the model made
	Result *Result // a tool's result, given back to the model
}

// Call is a tool call.
type Call struct {
	ID   string
	Name string // as in Request.Tools
	Args json.RawMessage
}

// Result is a tool result.
type Result struct {
	CallID  string
	Text    string
	IsError bool
}

// Reply is what the model answers: one tool call, or a final text.
type Reply struct {
	Call *ToolCall
	Text string
	// InputTokens is the input token count the reply's usage reports
	// (default 100): a large one makes Codex compact its context.
	InputTokens int
}

// ToolCall is a call a reply makes. Name is an MCP tool's name on the
// client's side ("mcp__continuo__work_on_project") or a client tool's.
type ToolCall struct {
	Name string
	Args map[string]any
}

// Step decides a reply from the request.
type Step func(r *Request) Reply

// Plan is a scripted conversation.
type Plan struct {
	Marker string // selects the plan: the newest user prompt contains it
	Steps  []Step
	Final  string // the text after the last step (default "done")
}

// Server is a running stub.
type Server struct {
	URL string // http://127.0.0.1:PORT
	// Logf, when set, is told of every request and its reply.
	Logf func(format string, args ...any)

	srv   *http.Server
	mu    sync.Mutex
	plans []Plan
	reqs  []*Request
	errs  []string
}

// New starts a stub following plans; it stops when the test ends.
func New(t testing.TB, plans ...Plan) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), plans: plans}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve)}
	go s.srv.Serve(ln)
	t.Cleanup(func() { s.srv.Close() })
	return s
}

// SetPlans replaces the plans.
func (s *Server) SetPlans(plans ...Plan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.plans = plans
}

// Requests returns the requests received so far, oldest first.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.reqs...)
}

// Errors returns what the stub could not answer (unknown paths, bodies it
// could not parse): a test fails on any.
func (s *Server) Errors() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.errs...)
}

func (s *Server) fail(w http.ResponseWriter, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.mu.Lock()
	s.errs = append(s.errs, msg)
	s.mu.Unlock()
	http.Error(w, msg, http.StatusNotFound)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		s.fail(w, "read %s: %v", r.URL.Path, err)
		return
	}
	var req *Request
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/messages/count_tokens"):
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"input_tokens":%d}`, len(body)/4)
		return
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/messages"):
		req, err = parseAnthropic(body)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/responses"):
		req, err = parseResponses(body)
	default:
		s.fail(w, "no such endpoint: %s %s", r.Method, r.URL.Path)
		return
	}
	if err != nil {
		s.fail(w, "parse %s: %v", r.URL.Path, err)
		return
	}
	req.Path = r.URL.Path
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	plans := s.plans
	s.mu.Unlock()
	reply := decide(req, plans)
	if reply.InputTokens == 0 {
		reply.InputTokens = 100
	}
	if s.Logf != nil {
		what := "text " + reply.Text
		if reply.Call != nil {
			what = "call " + reply.Call.Name
		}
		last := ""
		if n := len(req.Items); n > 0 {
			it := req.Items[n-1]
			last = it.Role + ": " + it.Text
			if it.Result != nil {
				last = "result: " + it.Result.Text
			}
			if it.Call != nil {
				last = "call: " + it.Call.Name
			}
		}
		if len(last) > 200 {
			last = last[:200]
		}
		s.Logf("modelstub: %s %s, %d items, %d tools, last %q → %s", req.Dialect, req.Path, len(req.Items), len(req.Tools), last, what)
	}
	switch req.Dialect {
	case Anthropic:
		writeAnthropic(w, req, reply, len(s.Requests()))
	case Responses:
		writeResponses(w, req, reply, len(s.Requests()))
	}
}

// Compaction prompts: what each client sends when it asks the model to
// summarise the conversation (read from the requests they sent).
var compactionPrompts = []string{
	"CONTEXT CHECKPOINT COMPACTION",       // Codex CLI
	"Respond with TEXT ONLY. Do NOT call", // Claude Code
}

// decide is the reply to a request: a compaction gets a summary, a plan's
// conversation its next step, anything else a short text.
func decide(r *Request, plans []Plan) Reply {
	plan, step := r.position(plans)
	for _, p := range compactionPrompts {
		if strings.Contains(r.lastUser(), p) {
			// The summary carries how far the plan had come, since a
			// compacted history no longer holds the calls that tell.
			return Reply{Text: fmt.Sprintf("Summary of the conversation so far (by the scripted model). %s%d]]", stepsMark, step), InputTokens: 50}
		}
	}
	if plan == nil {
		return Reply{Text: "ok"}
	}
	if step >= len(plan.Steps) {
		final := plan.Final
		if final == "" {
			final = "done"
		}
		return Reply{Text: final}
	}
	reply := plan.Steps[step](r)
	if c := reply.Call; c != nil && strings.HasPrefix(c.Name, "mcp__") && !r.defines(c.Name) {
		// The client defers MCP tools: find the tool first, as a model
		// would. Claude Code's ToolSearch selects by name; Codex's
		// tool_search ranks tools (BM25) for a query.
		switch {
		case r.Dialect == Anthropic:
			return Reply{Call: &ToolCall{Name: toolSearch, Args: map[string]any{"query": "select:" + c.Name}}}
		case slices.Contains(r.Tools, toolSearchCodex):
			bare := c.Name[strings.LastIndex(c.Name, "__")+2:]
			return Reply{Call: &ToolCall{Name: toolSearchCodex, Args: map[string]any{"query": bare + " " + strings.ReplaceAll(bare, "_", " "), "limit": 8}}}
		}
	}
	return reply
}

// stepsMark, followed by a number and "]]", is how a compaction summary
// says how many steps of the plan were done.
const stepsMark = "[[steps:"

// position finds the plan the conversation follows (nil: none) and how many
// of its steps are done: the tool calls since the newest user prompt with
// the plan's marker (ToolSearch calls not counted), plus what a compaction
// summary since then says was done before it.
func (r *Request) position(plans []Plan) (*Plan, int) {
	for i := len(r.Items) - 1; i >= 0; i-- {
		it := &r.Items[i]
		if it.Role != "user" || it.Text == "" {
			continue
		}
		for j := range plans {
			if plans[j].Marker == "" || !strings.Contains(it.Text, plans[j].Marker) {
				continue
			}
			step := 0
			for _, it := range r.Items[i+1:] {
				if it.Call != nil && it.Call.Name != toolSearch && it.Call.Name != toolSearchCodex {
					step++
				}
				if k := strings.LastIndex(it.Text, stepsMark); k >= 0 {
					n, _ := strconv.Atoi(strings.TrimSuffix(strings.Fields(it.Text[k+len(stepsMark):] + " ")[0], "]]"))
					step += n
				}
			}
			return &plans[j], step
		}
	}
	return nil, 0
}

// The clients' tools that load deferred tools: Claude Code's ToolSearch,
// Codex's tool_search (a Responses API tool of type tool_search, run by the
// client).
const (
	toolSearch      = "ToolSearch"
	toolSearchCodex = "tool_search"
)

func (r *Request) lastUser() string {
	for i := len(r.Items) - 1; i >= 0; i-- {
		if r.Items[i].Role == "user" && r.Items[i].Text != "" {
			return r.Items[i].Text
		}
	}
	return ""
}

// defines reports whether the model may call a tool: loaded by a tool
// search, or listed and not deferred.
func (r *Request) defines(name string) bool {
	return slices.Contains(r.loaded, name) || slices.Contains(r.Tools, name) && !slices.Contains(r.deferred, name)
}

// LastCall is the newest tool call the model made, tool searches aside;
// nil when none.
func (r *Request) LastCall() *Call {
	for i := len(r.Items) - 1; i >= 0; i-- {
		if c := r.Items[i].Call; c != nil && c.Name != toolSearch && c.Name != toolSearchCodex {
			return c
		}
	}
	return nil
}

// Loaded is the tools a tool search brought into the conversation.
func (r *Request) Loaded() []string { return r.loaded }

// Results returns the results of the calls to tool (by its client-side
// name, or its bare MCP name), oldest first.
func (r *Request) Results(tool string) []Result {
	calls := map[string]bool{}
	var out []Result
	for _, it := range r.Items {
		if c := it.Call; c != nil && (c.Name == tool || strings.HasSuffix(c.Name, "__"+tool)) {
			calls[c.ID] = true
		}
		if res := it.Result; res != nil && calls[res.CallID] {
			out = append(out, *res)
		}
	}
	return out
}

// LastJSON decodes the newest result of tool as a JSON object (the text of
// an MCP tool result, after any preamble the client adds); nil when there
// is none or it is not JSON.
func (r *Request) LastJSON(tool string) map[string]any {
	res := r.Results(tool)
	if len(res) == 0 {
		return nil
	}
	text := res[len(res)-1].Text
	if i := strings.Index(text, "{"); i >= 0 {
		text = text[i:]
	}
	var v map[string]any
	if json.Unmarshal([]byte(text), &v) != nil {
		return nil
	}
	return v
}

// Text is every text of the conversation (prompts, injected context,
// results), one after the other: what the model has read.
func (r *Request) Text() string {
	var b strings.Builder
	b.WriteString(r.System)
	for _, it := range r.Items {
		b.WriteString("\n")
		b.WriteString(it.Text)
		if it.Result != nil {
			b.WriteString(it.Result.Text)
		}
	}
	return b.String()
}
