// Package mcpserver exposes Continuo's services as MCP tools. It is a thin
// edge: it decodes and bounds arguments, resolves the caller, calls a
// service, and maps the result or error to the tool contract (CONTRACT.md
// §1, §9). It is the only package that imports the MCP SDK.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/metrics"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/rpcwire"
	"github.com/continuo-dev/continuo/internal/run"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/swarm"
	"github.com/continuo-dev/continuo/internal/workflow"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Version is reported to clients in serverInfo.
var Version = "0.1.0"

// CallerKey is the TokenInfo.Extra key under which the HTTP layer puts the
// authenticated *continuo.Caller.
const CallerKey = "continuo.caller"

// Options configures the tool server.
type Options struct {
	Workflow *workflow.Service
	// Runs observes and cancels runs.
	Runs *run.Service
	// Caller, when set, is the fixed identity of every call (stdio). When
	// nil, the caller comes from the bearer token of the HTTP request.
	Caller *continuo.Caller
	// Metrics, when set, receives per-tool counts and latencies.
	Metrics *metrics.Registry
	Logger  *slog.Logger
	// Swarm serves Chat Swarm.
	Swarm *swarm.Service
	// TrustedCarrierMeta, when set, is the request _meta key whose value a
	// host sets to its conversation's ID, trusted as the swarm carrier
	// (CONTRACT.md §2): only for hosts the operator knows set it.
	TrustedCarrierMeta string
	// SessionID, when set, issues the IDs of stateful HTTP sessions (see
	// web.MCPSessions).
	SessionID func() string
	// Toolsets are what an endpoint that names none lists (0: Continuity).
	Toolsets Toolsets
	// MCPURL, when known, is the URL clients reach the MCP endpoint at
	// (http://host:port/mcp): a swarm's invite names the worker endpoint
	// under it. Without it the invite names the path /mcp/x/worker.
	MCPURL string
}

// core is what every endpoint of one process shares: the services, the
// stdio connection's carrier and the metrics.
type core struct {
	opts         Options
	stdioCarrier string // the carrier of a stdio server's one connection
	calls        *metrics.Counter
	duration     *metrics.Histogram
}

// server is one endpoint's registration: its toolsets, over the shared
// core.
type server struct {
	*core
	sets Toolsets
}

// Endpoints are a process's MCP servers, one per combination of toolsets,
// each made when first asked for and then kept: an endpoint's tools/list
// is the same for every caller (CONTRACT.md §4).
type Endpoints struct {
	core    *core
	servers [AllToolsets + 1]struct {
		once  sync.Once
		srv   *mcp.Server
		ready atomic.Bool // srv is set
	}
}

// New returns the MCP endpoints of one process. Each tool, prompt and
// resource is served by the endpoints of its toolsets (toolsets.go).
func New(opts Options) *Endpoints {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Toolsets == 0 {
		opts.Toolsets = DefaultToolsets
	}
	c := &core{opts: opts}
	if opts.Caller != nil {
		c.stdioCarrier = newStdioCarrier()
	}
	if opts.Metrics != nil {
		c.calls = opts.Metrics.Counter("continuo_tool_calls_total", "Tool calls by tool and outcome (ok or an error code).", "tool", "outcome")
		c.duration = opts.Metrics.Histogram("continuo_tool_duration_seconds", "Tool call latency.", metrics.DefBuckets, "tool")
	}
	return &Endpoints{core: c}
}

// Server returns the MCP server of an endpoint listing the toolsets sets;
// 0 means the default.
func (e *Endpoints) Server(sets Toolsets) *mcp.Server {
	sets &= AllToolsets
	if sets == 0 {
		sets = e.core.opts.Toolsets
	}
	x := &e.servers[sets]
	x.once.Do(func() { x.srv = e.core.build(sets); x.ready.Store(true) })
	return x.srv
}

// SessionIDs returns the IDs of the stateful sessions every endpoint made
// so far holds now.
func (e *Endpoints) SessionIDs() map[string]bool {
	ids := map[string]bool{}
	for i := range e.servers {
		x := &e.servers[i]
		if !x.ready.Load() {
			continue
		}
		for ss := range x.srv.Sessions() {
			if id := ss.ID(); id != "" {
				ids[id] = true
			}
		}
	}
	return ids
}

// build makes the MCP server of the toolsets sets.
func (c *core) build(sets Toolsets) *mcp.Server {
	s := &server{core: c, sets: sets}
	prompts, resources := anyServed(promptToolsets, sets), anyServed(resourceToolsets, sets)
	// Declared is what is served: tools, and the prompts and resources of
	// the endpoint's toolsets, whose lists never change (no listChanged,
	// no subscriptions). The SDK would also declare logging, which we
	// never send.
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}
	undeclared := maps.Clone(alwaysUndeclared)
	if prompts {
		caps.Prompts = &mcp.PromptCapabilities{}
	} else {
		undeclared["prompts/list"], undeclared["prompts/get"] = true, true
	}
	if resources {
		caps.Resources = &mcp.ResourceCapabilities{}
	} else {
		undeclared["resources/list"], undeclared["resources/read"], undeclared["resources/templates/list"] = true, true, true
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "continuo", Title: "Continuo", Version: Version}, &mcp.ServerOptions{
		Instructions: Instructions(sets),
		Logger:       protocolLogger(c.opts.Logger),
		GetSessionID: c.opts.SessionID,
		Capabilities: caps,
		SetCacheable: cacheScope,
	})
	mw := []mcp.Middleware{onlyDeclared(undeclared)}
	if resources {
		mw = append(mw, s.resourceList)
	}
	srv.AddReceivingMiddleware(mw...)
	s.registerSessionTools(srv)
	s.registerGoalTools(srv)
	s.registerRunTools(srv)
	s.registerSwarmTools(srv)
	s.registerPrompts(srv)
	s.registerResources(srv)
	return srv
}

// cacheScope settles the cache fields (ttlMs, cacheScope) of the results
// that carry them, after their handler: whatever a resource holds — a
// session's brief, its working set — is one group's, so every
// resources/read is private and stale at once, never left to the
// protocol's default, which is public (a shared cache could serve one
// group's brief to another). resources/list is the caller's own list
// (resourceList marks it private itself). The lists of tools, prompts and
// resource templates are the same for every caller: public.
func cacheScope(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	if _, ok := req.(*mcp.ReadResourceRequest); ok {
		c.TTLMs, c.CacheScope = 0, cachePrivate
	}
}

// cachePrivate is the cacheScope of what only the requesting user's client
// may cache.
const cachePrivate = "private"

// alwaysUndeclared are the methods the SDK answers whatever the
// capabilities say (empty lists, "unknown prompt"), of the capabilities no
// endpoint declares; an endpoint without prompts or resources adds theirs.
var alwaysUndeclared = map[string]bool{
	"logging/setLevel": true, "completion/complete": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
}

// onlyDeclared answers a method of an undeclared capability "method not
// found", so that nothing looks served that is not.
func onlyDeclared(undeclared map[string]bool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if undeclared[method] {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method not found: %q (not a capability of this endpoint)", method)}
			}
			return next(ctx, method, req)
		}
	}
}

// caller returns the identity of a call.
func (s *server) caller(req *mcp.CallToolRequest) (*continuo.Caller, error) {
	return s.callerOf(req.Extra)
}

// callerOf returns the identity behind a request's extra (tools, prompts,
// resources alike).
func (s *server) callerOf(extra *mcp.RequestExtra) (*continuo.Caller, error) {
	if s.opts.Caller != nil {
		return s.opts.Caller, nil
	}
	var ti *auth.TokenInfo
	if extra != nil {
		ti = extra.TokenInfo
	}
	if ti != nil {
		if c, ok := ti.Extra[CallerKey].(*continuo.Caller); ok {
			return c, nil
		}
	}
	return nil, continuo.Errorf(continuo.CodeUnauthorized, "no authenticated caller")
}

// tool describes one tool for registration.
type tool struct {
	name, title, desc string
	readOnly          bool
	idempotent        bool
	destructive       bool
}

// add registers a tool whose handler takes decoded, validated arguments.
// Every result carries structuredContent and a JSON text mirror; every error
// is the structured error of CONTRACT.md §1.
//
// A tool is registered only on the endpoints of its toolsets
// (toolToolsets); one that is in no toolset panics.
func add[In, Out any](s *server, srv *mcp.Server, t tool, h func(ctx context.Context, c *continuo.Caller, in *In) (*Out, error)) {
	if !serves(toolToolsets, "tool", t.name, s.sets) {
		return
	}
	scopes := scopesOf(t.name)
	destructive := t.destructive
	openWorld := false
	srv.AddTool(&mcp.Tool{
		Name:         t.name,
		Title:        t.title,
		Description:  t.desc,
		InputSchema:  inputSchema[In](),
		OutputSchema: outputSchema[Out](),
		// The title is the tool's own; annotations carry only the hints.
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: t.readOnly, IdempotentHint: t.idempotent,
			DestructiveHint: &destructive, OpenWorldHint: &openWorld},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		start := time.Now()
		ctx = withRequest(ctx, req)
		var out *Out
		c, err := s.caller(req)
		if err == nil {
			err = requireScopes(c, scopes)
		}
		if err == nil {
			var in *In
			if in, err = decode[In](rawArgs(req)); err == nil {
				out, err = h(ctx, c, in)
			}
		}
		cancelled := err != nil && ctx.Err() != nil
		outcome := "ok"
		switch {
		case cancelled:
			outcome = "cancelled"
		case err != nil:
			outcome = string(continuo.AsError(err).Code)
		}
		took := time.Since(start)
		if s.calls != nil {
			s.calls.Inc(t.name, outcome)
			s.duration.Observe(took.Seconds(), t.name)
		}
		s.logCall(ctx, t.name, c, took, outcome)
		if cancelled {
			return nil, s.cancelled(ctx, t.name, err)
		}
		if err != nil {
			return s.errorResult(ctx, t.name, err), nil
		}
		return okResult(out), nil
	})
}

// cancelled ends a call that failed because its context ended: the client
// cancelled it (notifications/cancelled, or on 2026-07-28 by closing the
// request) or went away. A write that had not committed is rolled back; one
// that committed before stays, as a client that cancels must expect (a
// keyed retry is safe either way). It is no failure of the server, so it is
// neither logged as an error nor shown as internal. The SDK answers every
// request, so this returns the least wrong answer, a JSON-RPC error
// "request cancelled"; the edges (ServeStdio, web) drop the answer to a
// request the client cancelled, and on 2026-07-28 nobody is left to read it.
func (s *server) cancelled(ctx context.Context, name string, err error) error {
	s.opts.Logger.DebugContext(ctx, "tool call cancelled", "tool", name, "err", err)
	return &jsonrpc.Error{Code: rpcwire.CodeRequestCancelled, Message: "request cancelled"}
}

func rawArgs(req *mcp.CallToolRequest) json.RawMessage {
	if req.Params == nil {
		return nil
	}
	return req.Params.Arguments
}

// okResult wraps a success: structuredContent plus its JSON as text, for
// hosts that show only text.
func okResult(out any) *mcp.CallToolResult {
	b, err := json.Marshal(out)
	if err != nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "internal: encode result"}}}
	}
	return &mcp.CallToolResult{StructuredContent: json.RawMessage(b), Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

// ErrorBody is the structured error of every failed call.
type ErrorBody struct {
	Code    continuo.Code  `json:"code"`
	Message string         `json:"message"`
	Retry   continuo.Retry `json:"retry"`
	Details map[string]any `json:"details,omitempty"`
}

func (s *server) errorResult(ctx context.Context, name string, err error) *mcp.CallToolResult {
	body := s.errorBody(ctx, name, err)
	b, _ := json.Marshal(map[string]ErrorBody{"error": body})
	return &mcp.CallToolResult{IsError: true, StructuredContent: json.RawMessage(b),
		Content: []mcp.Content{&mcp.TextContent{Text: string(body.Code) + ": " + body.Message}}}
}

// errorBody is err as a failed call's structuredContent.error (or a
// result's nested error, as submit's next_error), logged as errorResult
// logs it.
func (s *server) errorBody(ctx context.Context, name string, err error) ErrorBody {
	e := continuo.AsError(err)
	retry := continuo.RetryFor(e.Code)
	if errors.Is(err, store.ErrAmbiguous) {
		// The database connection broke while the commit was in flight: the
		// change may or may not be there. A keyed mutation is safe to retry
		// with its key; anything else must look before it writes again.
		e = &continuo.Error{Code: continuo.CodeInternal,
			Message: "the database connection was lost while committing: the change may or may not have been made; check, or retry with the same idempotency key"}
		retry = continuo.RetryReconcile
	}
	switch {
	case e.Code == continuo.CodeInternal:
		// The cause is logged here, once, and never shown to the client: it
		// may hold paths or driver messages.
		s.opts.Logger.ErrorContext(ctx, "tool failed", "tool", name, "err", err)
	case e.Cause != nil:
		s.opts.Logger.WarnContext(ctx, "tool refused", "tool", name, "code", string(e.Code), "cause", e.Cause)
	}
	// Messages may quote an argument back (a project name, say); whatever a
	// caller sent, no credential is echoed.
	msg, _ := redact.String(e.Message)
	var details map[string]any
	if e.Details != nil {
		d, _ := redact.Value(e.Details) // a field name or value quoted back is redacted too
		details, _ = d.(map[string]any)
	}
	return ErrorBody{Code: e.Code, Message: msg, Retry: retry, Details: details}
}

// errorSchema is the shape of every failed call's structuredContent.error.
// The closed set of codes is not enumerated in every tool's schema (it would
// be a third of a small tool's bytes, in every model's context): the server
// instructions and CONTRACT.md §9 list it once.
var errorSchema = &jsonschema.Schema{Type: "object", Required: []string{"code", "message", "retry"},
	Description: "on failure only: {code, message, retry (what to do next), details?}"}

// nestedErrorSchema is an error carried inside a success (submit's
// next_error: the submit stands, its next half failed).
var nestedErrorSchema = &jsonschema.Schema{Type: "object", Description: "as error, when next failed"}

// outputSchema infers Out's schema. A failed call carries only "error", so
// the schema lists it as an alternative property and requires nothing at
// the top level beyond what every success has in common: clients that
// validate structuredContent of error results must not reject them.
func outputSchema[Out any]() *jsonschema.Schema {
	fixed := map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage]():      briefSchema,
		reflect.TypeFor[workflow.Diagnostic]():  diagnosticSchema,
		reflect.TypeFor[Message]():              messageSchema,
		reflect.TypeFor[workflow.Material]():    materialSchema,
		reflect.TypeFor[Provider]():             {Type: "object", Description: "provider_id, kind, model, description, available"},
		reflect.TypeFor[Goal]():                 goalSchema,
		reflect.TypeFor[Run]():                  runSchema,
		reflect.TypeFor[RunEvent]():             runEventSchema,
		reflect.TypeFor[GoalSummary]():          goalSummarySchema,
		reflect.TypeFor[workflow.PlanHistory](): planHistorySchema,
		reflect.TypeFor[workflow.GoalContext](): goalContextSchema,
		reflect.TypeFor[workflow.WorkingSet]():  workingSetSchema,
		reflect.TypeFor[Swarm]():                swarmSchema,
		reflect.TypeFor[Continuation]():         continuationSchema,
		reflect.TypeFor[JSONValue]():            {Description: "any JSON value"},
		reflect.TypeFor[JSONObject]():           capsuleSchema,
		reflect.TypeFor[Worker]():               workerSchema,
		reflect.TypeFor[Task]():                 taskSchema,
		reflect.TypeFor[ErrorBody]():            nestedErrorSchema,
		reflect.TypeFor[ListedTask]():           listedTaskSchema,
	}
	s, err := jsonschema.For[Out](&jsonschema.ForOptions{TypeSchemas: fixed})
	if err != nil {
		panic(err)
	}
	withTags(s, reflect.TypeFor[Out](), false, fixed)
	s.Properties["error"] = errorSchema
	s.Required = nil
	portable(s, true)
	compact(s)
	return s
}

// described stands for a result object in output schemas: desc names its
// fields (a typed schema of each would cost every tool that returns one
// most of its bytes) — all of them, or ("also: …") those besides its
// properties — and each field with a closed set of values has it as the
// enum of its property (CONTRACT.md §1: never prose only). A set's name
// "a[].b" is field b of the items of array a.
func described(desc string, sets map[string][]string) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", Description: desc, Properties: map[string]*jsonschema.Schema{}}
	for name, values := range sets {
		p := &jsonschema.Schema{}
		for _, v := range values {
			p.Enum = append(p.Enum, v)
		}
		if array, item, ok := strings.Cut(name, "[]."); ok {
			s.Properties[array] = &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{Type: "object",
				Properties: map[string]*jsonschema.Schema{item: p}}}
			continue
		}
		s.Properties[name] = p
	}
	return s
}

// briefSchema stands for the handoff brief in output schemas. Its full
// inferred schema was 7.6 KB — more than all other tools' schemas — in
// every conversation's tool list; the brief documents itself (section
// names, {total, returned, truncated} on every cut list, basis).
var briefSchema = &jsonschema.Schema{Type: "object",
	Description: "deterministic handoff brief (at most 8 KiB): session, task, constraints, goal, open work, validation, workspace, next_actions, basis"}

// goalContextSchema stands for read_session_handoff's goal_context.
var goalContextSchema = &jsonschema.Schema{Type: "object",
	Description: "only with an active goal: status available (goal: goal_id, title, revision, objective, completion_conditions, steps, current_step_id) or selection_required (candidates: goal_id, title, revision)"}

// workingSetSchema stands for one page of the working set, which documents
// itself as the brief does (section names, totals over every page).
var workingSetSchema = &jsonschema.Schema{Type: "object",
	Description: "one page (≤ 32 KiB) of what is in force, in full: task, current_state, constraints, goals, decisions, answered, questions, todos, risks, workspace, changed_files, commit_subjects, validation; totals over all pages; not_in_force only counted; basis; next_cursor (null on the last page)"}

// messageSchema names a message's fields rather than typing each: three
// tools return messages, and a model reads the names.
var messageSchema = &jsonschema.Schema{Type: "object",
	Description: "message_id, session_id, seq, kind, text, redacted?, status, priority, tags, reply_to?, supersedes?, superseded_by?, resolution?, resolved_by?, created_at, resolved_at?"}

var materialSchema = described("key, status, source?, text?, truncated?, redacted?",
	map[string][]string{"status": {"available", "not_found", "unavailable"}})

var diagnosticSchema = &jsonschema.Schema{Type: "object",
	Description: "with diagnostic=true: the session's full tallies and more of its open work"}

// compact drops what tells a model nothing about a result and costs bytes
// on every object of every tool: "additionalProperties": false and the
// required lists of nested objects (a result's fields are described; which
// are always there is plain from the results themselves).
func compact(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if a := s.AdditionalProperties; a != nil && a.Not != nil {
		s.AdditionalProperties = nil
	}
	if s.Type == "object" && s.Description == "" {
		s.Required = nil
	}
	for _, p := range s.Properties {
		compact(p)
	}
	compact(s.Items)
	for _, x := range s.AnyOf {
		compact(x)
	}
}
