package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/continuo-dev/continuo/internal/metrics"
	"github.com/continuo-dev/continuo/internal/run"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/sqlite"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/swarm"
	"github.com/continuo-dev/continuo/internal/web"
	"github.com/continuo-dev/continuo/internal/workflow"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ---- fixture: a real store, real auth, the real MCP server over real HTTP ----

type fixture struct {
	t    *testing.T
	ctx  context.Context
	db   store.Store
	auth *auth.Service
	wf   *workflow.Service
	runs *run.Service
	sw   *swarm.Service
	url  string
	base string // http://host:port
}

func newFixture(t *testing.T) *fixture { return newFixtureWith(t, fixtureOptions{}) }

// fixtureOptions vary the fixture.
type fixtureOptions struct {
	store   func(store.Store) store.Store // wraps the store the services use
	logger  *slog.Logger                  // of the MCP server and the HTTP handler
	metrics *metrics.Registry
	// trustedMeta is the _meta key trusted as a swarm carrier.
	trustedMeta string
	// engines: the store is the engine of the stores.Each subtest the
	// test runs in (SQLite or PostgreSQL), not always SQLite.
	engines bool
	// git replaces the workflow's git access (its zero fields keep theirs).
	git workflow.Git
}

func newFixtureWith(t *testing.T, o fixtureOptions) *fixture {
	t.Helper()
	ctx := context.Background()
	var db store.Store
	if o.engines {
		db = stores.Open(t)
	} else {
		sq, err := sqlite.Open(ctx, stores.SQLiteFile(t), nil) // a migrated copy: migrating is slow under -race
		if err != nil {
			t.Fatalf("sqlite.Open: %v", err)
		}
		t.Cleanup(func() { sq.Close() })
		db = sq
	}
	st := db
	if o.store != nil {
		st = o.store(db)
	}
	authSvc := auth.New(st, nil)
	runs := run.New(st, authSvc, run.Options{Key: []byte("test"), Executors: map[continuo.RunKind]run.Executor{continuo.RunValidation: run.Commands{}}})
	if err := runs.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(runs.Close)
	wf := workflow.New(st, authSvc, &workflow.Options{Runs: runs, Git: o.git})
	sw := swarm.New(st, swarm.Options{})
	if err := sw.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sw.Close)
	srv := mcpserver.New(mcpserver.Options{Workflow: wf, Runs: runs, Swarm: sw, TrustedCarrierMeta: o.trustedMeta, Logger: o.logger, Metrics: o.metrics})
	hs := httptest.NewServer(web.Handler(web.Options{MCP: srv, Auth: authSvc, Ready: db.Ping, Logger: o.logger, Metrics: o.metrics}))
	t.Cleanup(hs.Close)
	// The tests of the tools' behaviour reach every tool; the toolsets'
	// own tests name their endpoints.
	return &fixture{t: t, ctx: ctx, db: db, auth: authSvc, wf: wf, runs: runs, sw: sw, url: hs.URL + "/mcp/x/all", base: hs.URL}
}

var sessionScopes = []continuo.Scope{continuo.ScopeSessionsRead, continuo.ScopeSessionsWrite}

// token issues a token for principal (creating it, and a group of the same
// name, when missing).
func (f *fixture) token(principal string, scopes ...continuo.Scope) string {
	f.t.Helper()
	tok, err := f.auth.CreateToken(f.ctx, principal, scopes, 0)
	if err != nil {
		f.t.Fatalf("CreateToken(%s): %v", principal, err)
	}
	return tok.Token
}

// project registers a project with grants (group name → access).
func (f *fixture) project(name string, grants map[string]continuo.Access) string {
	f.t.Helper()
	p, err := f.auth.AddProject(f.ctx, auth.ProjectSpec{Name: name}, grants)
	if err != nil {
		f.t.Fatalf("AddProject(%s): %v", name, err)
	}
	return p.ID
}

// fingerprint summarises every session in the database (all groups, all
// projects): id, revision, lifecycle, instructions and tallies. Any write
// the tools can make changes it.
func (f *fixture) fingerprint() string {
	f.t.Helper()
	var lines []string
	err := f.db.Read(f.ctx, func(tx store.Tx) error {
		groups, err := tx.GroupList(f.ctx)
		if err != nil {
			return err
		}
		projects, err := tx.ProjectList(f.ctx)
		if err != nil {
			return err
		}
		for _, g := range groups {
			for _, p := range projects {
				ss, total, err := tx.SessionList(f.ctx, store.SessionListParams{GroupID: g.ID, ProjectID: p.ID, Limit: 1000})
				if err != nil {
					return err
				}
				lines = append(lines, fmt.Sprintf("%s/%s total=%d", g.Name, p.Name, total))
				for _, s := range ss {
					lines = append(lines, fmt.Sprintf("  %s ~s%d rev=%d %s instr=%d seq=%d %+v", s.ID, s.Ref, s.Revision,
						s.Lifecycle, s.Instructions, s.MessageSeq, s.Counts))
				}
			}
		}
		return nil
	})
	if err != nil {
		f.t.Fatalf("fingerprint: %v", err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// client is an MCP client session of one token.
type client struct {
	t       *testing.T
	cs      *mcp.ClientSession
	schemas *outputSchemas
}

// outputSchemas are the published output schemas, by tool, resolved for
// validation: every result of every test is checked against its schema.
type outputSchemas struct {
	once sync.Once
	m    map[string]*jsonschema.Resolved
	err  error
}

func (c *client) outputSchema(tool string) *jsonschema.Resolved {
	c.t.Helper()
	c.schemas.once.Do(func() {
		c.schemas.m = map[string]*jsonschema.Resolved{}
		res, err := c.cs.ListTools(context.Background(), nil)
		if err != nil {
			c.schemas.err = err
			return
		}
		for _, tl := range res.Tools {
			var s jsonschema.Schema
			if err := json.Unmarshal([]byte(mustJSON(c.t, tl.OutputSchema)), &s); err != nil {
				c.schemas.err = fmt.Errorf("%s: %w", tl.Name, err)
				return
			}
			if c.schemas.m[tl.Name], err = s.Resolve(nil); err != nil {
				c.schemas.err = fmt.Errorf("%s: %w", tl.Name, err)
				return
			}
		}
	})
	if c.schemas.err != nil {
		c.t.Fatalf("output schemas: %v", c.schemas.err)
	}
	return c.schemas.m[tool]
}

// connect opens a client session at the newest protocol version (the Go
// client's default: 2026-07-28, stateless).
func (f *fixture) connect(tok string) *client { return f.connectAt(tok, "") }

// connectAt opens a client session at protocol version v ("" for the
// newest); versions before 2026-07-28 get a stateful session.
func (f *fixture) connectAt(tok, v string) *client {
	f.t.Helper()
	return f.connectWith(tok, v, nil)
}

// connectWith opens a client session at protocol version v with client
// options (handlers of server notifications).
func (f *fixture) connectWith(tok, v string, opts *mcp.ClientOptions) *client {
	f.t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpserver-test", Version: "1"}, opts)
	cs, err := c.Connect(f.ctx, &mcp.StreamableClientTransport{Endpoint: f.url,
		HTTPClient: &http.Client{Transport: bearerTransport{tok}}, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: v})
	if err != nil {
		f.t.Fatalf("connect: %v", err)
	}
	f.t.Cleanup(func() { cs.Close() })
	return &client{t: f.t, cs: cs, schemas: &outputSchemas{}}
}

// at returns the client reporting to t (a subtest).
func (c *client) at(t *testing.T) *client { return &client{t: t, cs: c.cs, schemas: c.schemas} }

// result is a decoded tool result.
type result struct {
	IsError bool
	Data    map[string]any // structuredContent
	Text    string
}

func (r result) err() map[string]any {
	e, _ := r.Data["error"].(map[string]any)
	return e
}

func (r result) code() string {
	if !r.IsError {
		return ""
	}
	c, _ := r.err()["code"].(string)
	return c
}

func (r result) details() map[string]any {
	d, _ := r.err()["details"].(map[string]any)
	return d
}

func (r result) str(path ...string) string {
	v, _ := dig(r.Data, path...).(string)
	return v
}

func (r result) num(path ...string) float64 {
	v, _ := dig(r.Data, path...).(float64)
	return v
}

func dig(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// call calls a tool; args may be any JSON-marshalable value, including a
// json.RawMessage that is not an object.
func (c *client) call(name string, args any) result {
	c.t.Helper()
	return c.callWith(&mcp.CallToolParams{Name: name, Arguments: args})
}

// callWith calls a tool with whole params (_meta, a progress token).
func (c *client) callWith(p *mcp.CallToolParams) result {
	c.t.Helper()
	res, err := c.cs.CallTool(context.Background(), p)
	return c.result(p.Name, res, err)
}

// result checks and decodes the outcome of a call of tool name (made on
// another goroutine, say).
func (c *client) result(name string, res *mcp.CallToolResult, err error) result {
	c.t.Helper()
	if err != nil {
		c.t.Fatalf("call %s: protocol error: %v", name, err)
	}
	out := result{IsError: res.IsError}
	if res.StructuredContent == nil {
		c.t.Fatalf("call %s: no structuredContent (isError=%v)", name, res.IsError)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := json.Unmarshal(b, &out.Data); err != nil {
		c.t.Fatalf("call %s: structuredContent is not an object: %s", name, b)
	}
	if rs := c.outputSchema(name); rs != nil {
		var v any
		_ = json.Unmarshal(b, &v)
		if err := rs.Validate(v); err != nil {
			c.t.Fatalf("call %s: result does not match the published output schema: %v\n%s", name, err, b)
		}
	}
	if len(res.Content) == 0 {
		c.t.Fatalf("call %s: no text mirror", name)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		out.Text = tc.Text
	}
	return out
}

// ok calls a tool that must succeed.
func (c *client) ok(name string, args any) result {
	c.t.Helper()
	r := c.call(name, args)
	if r.IsError {
		c.t.Fatalf("%s(%v) failed: %v", name, args, r.Data)
	}
	return r
}

// fails calls a tool that must fail with code.
func (c *client) fails(name string, args any, code string) result {
	c.t.Helper()
	return c.wantError(name, args, c.call(name, args), code)
}

// wantError fails unless r is the structured error code, with its retry
// and a message.
func (c *client) wantError(name string, args any, r result, code string) result {
	c.t.Helper()
	if r.code() != code {
		c.t.Fatalf("%s(%v) = %v, want error %s", name, args, r.Data, code)
	}
	if want := string(continuo.RetryFor(continuo.Code(code))); r.err()["retry"] != want {
		c.t.Fatalf("%s: retry = %v, want %s", name, r.err()["retry"], want)
	}
	if m, _ := r.err()["message"].(string); m == "" {
		c.t.Fatalf("%s: error without a message: %v", name, r.Data)
	}
	return r
}

type obj = map[string]any

// ---- TestIsolationMatrix ----

func TestIsolationMatrix(t *testing.T) {
	f := newFixture(t)
	allButAdmin := []continuo.Scope{continuo.ScopeSessionsRead, continuo.ScopeSessionsWrite, continuo.ScopeRuntimeRead,
		continuo.ScopeProjectWrite, continuo.ScopeCodingAgent, continuo.ScopeSwarmOwn, continuo.ScopeSwarmWork}
	tokA := f.token("alice", sessionScopes...)
	tokB := f.token("bob", allButAdmin...)
	pID := f.project("shared", map[string]continuo.Access{"alice": continuo.AccessWrite, "bob": continuo.AccessWrite})
	qID := f.project("bobs", map[string]continuo.Access{"bob": continuo.AccessWrite})
	rID := f.project("alices", map[string]continuo.Access{"alice": continuo.AccessWrite})
	a, b := f.connect(tokA), f.connect(tokB)

	// A's session in the shared project, with a decision and a todo.
	sa := a.ok("work_on_project", obj{"project": pID, "instruction": "A's secret plan", "title": "alpha work"})
	aID := sa.str("session_id")
	if sa.str("session_ref") != "~s1" {
		t.Fatalf("A's first session ref = %q", sa.str("session_ref"))
	}
	decision := a.ok("post_session_message", obj{"session_id": aID, "kind": "decision", "text": "use plan A"}).str("message", "message_id")
	todo := a.ok("post_session_message", obj{"session_id": aID, "kind": "todo", "text": "finish plan A"}).str("message", "message_id")
	_ = decision

	// B's own ~s1, in its own project Q, with one message.
	sb := b.ok("work_on_project", obj{"project": qID, "instruction": "B's own task"})
	bID := sb.str("session_id")
	if sb.str("session_ref") != "~s1" || bID == aID {
		t.Fatalf("B's first session: %v", sb.Data)
	}
	bTodo := b.ok("post_session_message", obj{"session_id": bID, "kind": "todo", "text": "B's todo"}).str("message", "message_id")

	aView := func() (rev float64, msgs float64, todos float64, lc string) {
		h := a.ok("read_session_handoff", obj{"session_id": aID})
		var brief map[string]any
		if err := json.Unmarshal([]byte(mustJSON(t, h.Data["handoff_brief"])), &brief); err != nil {
			t.Fatal(err)
		}
		l := a.ok("list_session_messages", obj{"session_id": aID})
		return dig(brief, "basis", "session_revision").(float64), l.num("total_count"),
			dig(brief, "open", "todos", "total").(float64), dig(brief, "session", "lifecycle").(string)
	}
	rev0, msgs0, todos0, lc0 := aView()
	if msgs0 != 3 || todos0 != 1 || lc0 != "active" { // 2 messages and the instruction
		t.Fatalf("A's session before: msgs=%v todos=%v lifecycle=%v", msgs0, todos0, lc0)
	}
	aFingerprintBefore := aSessionLine(f.fingerprint(), aID)

	t.Run("list_projects", func(t *testing.T) {
		b := b.at(t)
		r := b.ok("list_projects", obj{})
		var ids []string
		for _, p := range r.Data["projects"].([]any) {
			ids = append(ids, p.(map[string]any)["project_id"].(string))
		}
		if slices.Contains(ids, rID) {
			t.Fatalf("B sees A-only project R: %v", ids)
		}
		if !slices.Contains(ids, pID) || !slices.Contains(ids, qID) || len(ids) != 2 {
			t.Fatalf("B's projects = %v, want exactly P and Q", ids)
		}
		if strings.Contains(r.Text, "alices") {
			t.Fatalf("B's list_projects mentions R: %s", r.Text)
		}
	})

	t.Run("list_sessions", func(t *testing.T) {
		b := b.at(t)
		for _, args := range []obj{{"project": pID}, {"project": "shared"}, {"project": pID, "lifecycle": "active"}} {
			r := b.ok("list_sessions", args)
			if r.num("total_count") != 0 || len(r.Data["sessions"].([]any)) != 0 || r.Data["next_offset"] != nil {
				t.Fatalf("B's list_sessions(%v) = %v", args, r.Data)
			}
			if strings.Contains(r.Text, "alpha") || strings.Contains(r.Text, aID) {
				t.Fatalf("B's list_sessions leaks A's session: %s", r.Text)
			}
		}
		// B cannot list sessions of a project it has no grant on.
		b.fails("list_sessions", obj{"project": rID}, "not_found")
		b.fails("list_sessions", obj{"project": "alices"}, "not_found")
	})

	// Each tool on A's session id must be not_found; on "~s1" it must act on
	// B's own session.
	type tc struct {
		tool  string
		onA   obj
		onRef obj
		check func(t *testing.T, r result) // on the ~s1 result
	}
	isB := func(path ...string) func(t *testing.T, r result) {
		return func(t *testing.T, r result) {
			if got := r.str(path...); got != bID {
				t.Fatalf("~s1 resolved to %q, want B's %s (A's is %s): %v", got, bID, aID, r.Data)
			}
		}
	}
	cases := []tc{
		{tool: "read_session_handoff", onA: obj{"session_id": aID}, onRef: obj{"session_id": "~s1"},
			check: func(t *testing.T, r result) {
				isB("session_id")(t, r)
				if s := mustJSON(t, r.Data["handoff_brief"]); !strings.Contains(s, bID) || strings.Contains(s, aID) || strings.Contains(s, "plan A") {
					t.Fatalf("B's handoff of ~s1 is not B's: %s", s)
				}
			}},
		{tool: "read_session_handoff", onA: obj{"session_id": aID, "project": pID, "diagnostic": true}},
		{tool: "read_session_working_set", onA: obj{"session_id": aID}, onRef: obj{"session_id": "~s1"},
			check: func(t *testing.T, r result) {
				isB("working_set", "session_id")(t, r)
				if s := mustJSON(t, r.Data["working_set"]); !strings.Contains(s, "B's todo") || strings.Contains(s, aID) || strings.Contains(s, "plan A") {
					t.Fatalf("B's working set of ~s1 is not B's: %s", s)
				}
			}},
		{tool: "list_session_messages", onA: obj{"session_id": aID}, onRef: obj{"session_id": "~s1"},
			check: func(t *testing.T, r result) {
				msgs := r.Data["messages"].([]any)
				if len(msgs) == 0 {
					t.Fatalf("no messages in B's ~s1: %v", r.Data)
				}
				for _, m := range msgs {
					if sid := m.(map[string]any)["session_id"]; sid != bID {
						t.Fatalf("~s1 listed a message of %v, want B's %s", sid, bID)
					}
				}
			}},
		{tool: "list_session_messages", onA: obj{"session_id": aID, "kinds": []string{"todo"}, "status": "open"}},
		{tool: "post_session_message", onA: obj{"session_id": aID, "kind": "note", "text": "B was here"},
			onRef: obj{"session_id": "~s1", "kind": "note", "text": "B's note"}, check: isB("message", "session_id")},
		{tool: "post_session_message", onA: obj{"session_id": aID, "kind": "decision", "text": "override", "supersedes": decision}},
		{tool: "post_session_message", onA: obj{"session_id": aID, "kind": "answer", "text": "reply", "reply_to": todo, "delivery_key": "k1"}},
		{tool: "resolve_session_message", onA: obj{"session_id": aID, "message_id": todo},
			onRef: obj{"session_id": "~s1", "message_id": bTodo}, check: isB("message", "session_id")},
		{tool: "resolve_session_message", onA: obj{"session_id": "~s1", "message_id": todo}}, // A's todo via B's ~s1
		{tool: "work_on_project", onA: obj{"session_id": aID, "instruction": "hijack"},
			onRef: obj{"session_id": "~s1", "instruction": "continue B"},
			check: func(t *testing.T, r result) {
				isB("session_id")(t, r)
				if r.str("project_id") != qID || r.Data["resumed"] != true {
					t.Fatalf("resume of ~s1: %v", r.Data)
				}
			}},
		{tool: "work_on_project", onA: obj{"session_id": aID, "project": pID, "instruction": "hijack"}},
		{tool: "work_on_project", onA: obj{"project": rID, "instruction": "start in R"}},
		{tool: "work_on_project", onA: obj{"project": "alices", "instruction": "start in R"}},
		{tool: "close_session", onA: obj{"session_id": aID, "summary": "closed by B"},
			onRef: obj{"session_id": "~s1"}, check: isB("session_id")}, // last: closes B's own session
	}
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			b := b.at(t)
			r := b.fails(c.tool, c.onA, "not_found")
			if strings.Contains(r.Text, "plan A") || strings.Contains(mustJSON(t, r.Data), "alpha") {
				t.Fatalf("not_found leaks A's data: %v", r.Data)
			}
			if c.onRef != nil {
				c.check(t, b.ok(c.tool, c.onRef))
			}
		})
	}

	t.Run("A unchanged", func(t *testing.T) {
		a := a.at(t)
		rev, msgs, todos, lc := aView()
		if rev != rev0 || msgs != msgs0 || todos != todos0 || lc != lc0 {
			t.Fatalf("A's session changed: rev %v→%v msgs %v→%v todos %v→%v lifecycle %v→%v",
				rev0, rev, msgs0, msgs, todos0, todos, lc0, lc)
		}
		if got := aSessionLine(f.fingerprint(), aID); got != aFingerprintBefore {
			t.Fatalf("A's stored session changed:\n%s\n→\n%s", aFingerprintBefore, got)
		}
		l := a.ok("list_sessions", obj{"project": pID})
		if l.num("total_count") != 1 {
			t.Fatalf("A's sessions in P: %v", l.Data)
		}
		// Nothing of B's leaked into A's lists either.
		if r := a.ok("list_projects", obj{}); strings.Contains(r.Text, qID) {
			t.Fatalf("A sees B's project Q: %s", r.Text)
		}
		if r := a.ok("list_sessions", obj{"project": pID}); strings.Contains(r.Text, bID) {
			t.Fatalf("A sees B's session: %s", r.Text)
		}
	})
}

func aSessionLine(fp, id string) string {
	for _, l := range strings.Split(fp, "\n") {
		if strings.Contains(l, id) {
			return l
		}
	}
	return ""
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	if raw, ok := v.(json.RawMessage); ok {
		return string(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ---- TestMissingScope ----

func TestMissingScope(t *testing.T) {
	f := newFixture(t)
	full := f.connect(f.token("wen", sessionScopes...))
	reader := f.connect(f.token("wen", continuo.ScopeSessionsRead))
	writer := f.connect(f.token("wen", continuo.ScopeSessionsWrite))
	noProjectWrite := full
	pID := f.project("proj", map[string]continuo.Access{"wen": continuo.AccessWrite})

	sID := full.ok("work_on_project", obj{"project": pID, "instruction": "task"}).str("session_id")
	todo := full.ok("post_session_message", obj{"session_id": sID, "kind": "todo", "text": "t"}).str("message", "message_id")
	before := f.fingerprint()

	mutating := []struct {
		tool string
		args obj
	}{
		{"work_on_project", obj{"project": pID, "instruction": "new task"}},
		{"work_on_project", obj{"session_id": sID, "instruction": "resume"}},
		{"work_on_project", obj{"session_id": "~s1", "instruction": "resume"}},
		{"post_session_message", obj{"session_id": sID, "kind": "note", "text": "n"}},
		{"post_session_message", obj{"session_id": sID, "kind": "note", "text": "n", "delivery_key": "k"}},
		{"resolve_session_message", obj{"session_id": sID, "message_id": todo}},
		{"close_session", obj{"session_id": sID}},
	}
	for _, m := range mutating {
		t.Run("read-only/"+m.tool, func(t *testing.T) {
			r := reader.at(t).fails(m.tool, m.args, "forbidden")
			if r.details()["scope"] != "sessions:write" {
				t.Fatalf("details = %v, want scope sessions:write", r.details())
			}
		})
	}
	if after := f.fingerprint(); after != before {
		t.Fatalf("a forbidden call wrote:\n%s\n→\n%s", before, after)
	}

	reads := []struct {
		tool string
		args obj
	}{
		{"list_projects", obj{}},
		{"list_sessions", obj{"project": pID}},
		{"list_session_messages", obj{"session_id": sID}},
		{"read_session_handoff", obj{"session_id": sID}},
		{"read_session_working_set", obj{"session_id": sID}},
	}
	for _, m := range reads {
		t.Run("write-only/"+m.tool, func(t *testing.T) {
			r := writer.at(t).fails(m.tool, m.args, "forbidden")
			if r.details()["scope"] != "sessions:read" {
				t.Fatalf("details = %v, want scope sessions:read", r.details())
			}
			if strings.Contains(r.Text, "task") {
				t.Fatalf("forbidden read leaks data: %s", r.Text)
			}
		})
	}

	t.Run("worktree without project:write", func(t *testing.T) {
		r := noProjectWrite.at(t).fails("work_on_project", obj{"project": pID, "instruction": "wt", "mode": "worktree"}, "forbidden")
		if r.details()["scope"] != "project:write" {
			t.Fatalf("details = %v, want scope project:write", r.details())
		}
	})
	if after := f.fingerprint(); after != before {
		t.Fatalf("a forbidden call wrote:\n%s\n→\n%s", before, after)
	}

	// The same group's full token still works: the scopes, not the group,
	// were the problem.
	full.ok("post_session_message", obj{"session_id": sID, "kind": "note", "text": "fine"})
}

// ---- TestBadInput ----

func TestBadInput(t *testing.T) {
	f := newFixture(t)
	c := f.connect(f.token("ann", sessionScopes...))
	pID := f.project("proj", map[string]continuo.Access{"ann": continuo.AccessWrite})
	otherID := f.project("other", map[string]continuo.Access{"ann": continuo.AccessRead})

	sID := c.ok("work_on_project", obj{"project": pID, "instruction": "task"}).str("session_id")
	c.ok("post_session_message", obj{"session_id": sID, "kind": "decision", "text": "d1"})
	todo := c.ok("post_session_message", obj{"session_id": sID, "kind": "todo", "text": "t1"}).str("message", "message_id")
	c.ok("post_session_message", obj{"session_id": sID, "kind": "progress", "text": "p1"})

	// A second session with enough messages to have a cursor.
	s2 := c.ok("work_on_project", obj{"project": pID, "instruction": "second"}).str("session_id")
	for i := range 3 {
		c.ok("post_session_message", obj{"session_id": s2, "kind": "note", "text": fmt.Sprintf("n%d", i)})
	}
	page := c.ok("list_session_messages", obj{"session_id": s2, "limit": 1})
	foreignCursor := page.str("next_cursor")
	if foreignCursor == "" {
		t.Fatalf("no cursor: %v", page.Data)
	}
	ownCursor := c.ok("list_session_messages", obj{"session_id": sID, "limit": 1}).str("next_cursor")
	if ownCursor == "" {
		t.Fatal("no own cursor")
	}

	// The session tag of a cursor changed: refused.
	last := byte('0')
	if ownCursor[len(ownCursor)-1] == '0' {
		last = '1'
	}
	tampered := ownCursor[:len(ownCursor)-1] + string(last)
	euro := strings.Repeat("€", 2667) // 8001 bytes, 2667 characters
	if len(euro) != 8001 || len([]rune(euro)) >= 8000 {
		t.Fatal("bad fixture")
	}
	tags17 := make([]string, 17)
	for i := range tags17 {
		tags17[i] = fmt.Sprintf("t%d", i)
	}
	tag65 := []string{"a", "b", "c", strings.Repeat("x", 65)}
	array := json.RawMessage(`["session_id", 1]`)

	type bad struct {
		name  string
		args  any
		field string // "" when the error is about the whole arguments
		code  string // default invalid_input
	}
	badSessionIDs := func(extra obj) []bad {
		var out []bad
		for _, id := range []string{"~s0", "~sabc", "ses_bad", "~s", "~s-1", "~s+1", "ses_" + strings.Repeat("0", 27), strings.Repeat("x", 65)} {
			a := obj{"session_id": id}
			for k, v := range extra {
				a[k] = v
			}
			out = append(out, bad{name: "session_id " + id[:min(len(id), 12)], args: a, field: "session_id"})
		}
		if _, optional := extra["instruction"]; !optional { // work_on_project: "" means "start a new session"
			a := obj{"session_id": ""}
			for k, v := range extra {
				a[k] = v
			}
			out = append(out, bad{name: "empty session_id", args: a, field: "session_id"})
		}
		b := obj{"session_id": 5}
		for k, v := range extra {
			b[k] = v
		}
		out = append(out, bad{name: "session_id number", args: b, field: "session_id"})
		return out
	}
	common := func(valid obj) []bad {
		withBogus := obj{"bogus": 1}
		for k, v := range valid {
			withBogus[k] = v
		}
		return []bad{
			{name: "unknown argument", args: withBogus, field: "bogus"},
			{name: "array", args: array},
			{name: "string", args: json.RawMessage(`"hello"`)},
			{name: "number", args: json.RawMessage(`42`)},
		}
	}

	tables := map[string][]bad{
		"list_projects": common(obj{}),
		"work_on_project": append(append([]bad{
			{name: "missing instruction", args: obj{"project": pID}, field: "instruction"},
			{name: "empty instruction", args: obj{"project": pID, "instruction": ""}, field: "instruction"},
			{name: "null instruction", args: obj{"project": pID, "instruction": nil}, field: "instruction"},
			{name: "instruction 16385", args: obj{"project": pID, "instruction": strings.Repeat("i", 16385)}, field: "instruction"},
			{name: "instruction number", args: obj{"project": pID, "instruction": 5}, field: "instruction"},
			{name: "title 241", args: obj{"project": pID, "instruction": "x", "title": strings.Repeat("t", 241)}, field: "title"},
			{name: "idempotency_key 129", args: obj{"project": pID, "instruction": "x", "idempotency_key": strings.Repeat("k", 129)}, field: "idempotency_key"},
			{name: "title number", args: obj{"project": pID, "instruction": "x", "title": 1}, field: "title"},
			{name: "project 129", args: obj{"project": strings.Repeat("p", 129), "instruction": "x"}, field: "project"},
			{name: "mode", args: obj{"project": pID, "instruction": "x", "mode": "sandbox"}, field: "mode"},
			{name: "mode case", args: obj{"project": pID, "instruction": "x", "mode": "Worktree"}, field: "mode"},
			{name: "context enum", args: obj{"project": pID, "instruction": "x", "context": []string{"workflow.guide", "secrets"}}, field: "context[1]"},
			{name: "context empty item", args: obj{"project": pID, "instruction": "x", "context": []string{""}}, field: "context[0]"},
			{name: "context 3", args: obj{"project": pID, "instruction": "x", "context": []string{"workflow.guide", "workflow.guide", "workflow.guide"}}, field: "context"},
			{name: "context string", args: obj{"project": pID, "instruction": "x", "context": "workflow.guide"}, field: "context"},
			{name: "resume other project", args: obj{"session_id": sID, "project": otherID, "instruction": "x"}, field: "project"},
			{name: "resume other mode", args: obj{"session_id": sID, "mode": "worktree", "instruction": "x"}, field: "mode"},
			{name: "no project, two reachable", args: obj{"instruction": "x"}, field: "project"},
		}, badSessionIDs(obj{"instruction": "x"})...), common(obj{"project": pID, "instruction": "x"})...),
		"close_session": append(append([]bad{
			{name: "missing session_id", args: obj{}, field: "session_id"},
			{name: "summary 8001", args: obj{"session_id": sID, "summary": euro}, field: "summary"},
			{name: "summary number", args: obj{"session_id": sID, "summary": 5}, field: "summary"},
		}, badSessionIDs(nil)...), common(obj{"session_id": sID})...),
		"list_sessions": append([]bad{
			{name: "missing project", args: obj{}, field: "project"},
			{name: "empty project", args: obj{"project": ""}, field: "project"},
			{name: "project 129", args: obj{"project": strings.Repeat("p", 129)}, field: "project"},
			{name: "lifecycle", args: obj{"project": pID, "lifecycle": "open"}, field: "lifecycle"},
			{name: "limit 51", args: obj{"project": pID, "limit": 51}, field: "limit"},
			{name: "limit 0", args: obj{"project": pID, "limit": 0}, field: "limit"},
			{name: "limit -1", args: obj{"project": pID, "limit": -1}, field: "limit"},
			{name: "limit fraction", args: obj{"project": pID, "limit": 1.5}, field: "limit"},
			{name: "limit string", args: obj{"project": pID, "limit": "10"}, field: "limit"},
			{name: "offset -1", args: obj{"project": pID, "offset": -1}, field: "offset"},
			{name: "offset huge", args: obj{"project": pID, "offset": 1e12}, field: "offset"},
			{name: "offset bool", args: obj{"project": pID, "offset": true}, field: "offset"},
		}, common(obj{"project": pID})...),
		"post_session_message": append(append([]bad{
			{name: "missing all", args: obj{}, field: "session_id"},
			{name: "missing kind", args: obj{"session_id": sID, "text": "x"}, field: "kind"},
			{name: "kind enum", args: obj{"session_id": sID, "kind": "opinion", "text": "x"}, field: "kind"},
			{name: "kind case", args: obj{"session_id": sID, "kind": "Decision", "text": "x"}, field: "kind"},
			{name: "missing text", args: obj{"session_id": sID, "kind": "note"}, field: "text"},
			{name: "empty text", args: obj{"session_id": sID, "kind": "note", "text": ""}, field: "text"},
			{name: "text 8001 bytes", args: obj{"session_id": sID, "kind": "note", "text": euro}, field: "text"},
			{name: "text number", args: obj{"session_id": sID, "kind": "note", "text": 5}, field: "text"},
			{name: "text object", args: obj{"session_id": sID, "kind": "note", "text": obj{"a": 1}}, field: "text"},
			{name: "tags 17", args: obj{"session_id": sID, "kind": "note", "text": "x", "tags": tags17}, field: "tags"},
			{name: "tag 65", args: obj{"session_id": sID, "kind": "note", "text": "x", "tags": tag65}, field: "tags[3]"},
			{name: "empty tag", args: obj{"session_id": sID, "kind": "note", "text": "x", "tags": []string{""}}, field: "tags[0]"},
			{name: "tags string", args: obj{"session_id": sID, "kind": "note", "text": "x", "tags": "a,b"}, field: "tags"},
			{name: "priority", args: obj{"session_id": sID, "kind": "note", "text": "x", "priority": "urgent"}, field: "priority"},
			{name: "delivery_key 129", args: obj{"session_id": sID, "kind": "note", "text": "x", "delivery_key": strings.Repeat("k", 129)}, field: "delivery_key"},
			{name: "supersedes malformed", args: obj{"session_id": sID, "kind": "decision", "text": "x", "supersedes": "msg_bad"}, field: "supersedes"},
			{name: "supersedes 65", args: obj{"session_id": sID, "kind": "decision", "text": "x", "supersedes": strings.Repeat("m", 65)}, field: "supersedes"},
			{name: "arguments over 1 MiB", args: obj{"session_id": sID, "kind": "note", "text": strings.Repeat("x", 1<<20)}, code: "too_large"},
			{name: "reply_to malformed", args: obj{"session_id": sID, "kind": "answer", "text": "x", "reply_to": sID}, field: "reply_to"},
		}, badSessionIDs(obj{"kind": "note", "text": "x"})...), common(obj{"session_id": sID, "kind": "note", "text": "x"})...),
		"resolve_session_message": append(append([]bad{
			{name: "missing all", args: obj{}, field: "session_id"},
			{name: "missing message_id", args: obj{"session_id": sID}, field: "message_id"},
			{name: "malformed message_id", args: obj{"session_id": sID, "message_id": "msg_bad"}, field: "message_id"},
			{name: "session id as message_id", args: obj{"session_id": sID, "message_id": sID}, field: "message_id"},
			{name: "resolution 8001", args: obj{"session_id": sID, "message_id": todo, "resolution": euro}, field: "resolution"},
			{name: "resolution array", args: obj{"session_id": sID, "message_id": todo, "resolution": []string{"a"}}, field: "resolution"},
		}, badSessionIDs(obj{"message_id": todo})...), common(obj{"session_id": sID, "message_id": todo})...),
		"list_session_messages": append(append([]bad{
			{name: "missing session_id", args: obj{}, field: "session_id"},
			{name: "kinds enum", args: obj{"session_id": sID, "kinds": []string{"todo", "opinion"}}, field: "kinds[1]"},
			{name: "kinds 9", args: obj{"session_id": sID, "kinds": []string{"todo", "todo", "todo", "todo", "todo", "todo", "todo", "todo", "todo"}}, field: "kinds"},
			{name: "status enum", args: obj{"session_id": sID, "status": "closed"}, field: "status"},
			{name: "limit 101", args: obj{"session_id": sID, "limit": 101}, field: "limit"},
			{name: "limit 0", args: obj{"session_id": sID, "limit": 0}, field: "limit"},
			{name: "limit -5", args: obj{"session_id": sID, "limit": -5}, field: "limit"},
			{name: "foreign cursor", args: obj{"session_id": sID, "cursor": foreignCursor}, field: "cursor"},
			{name: "garbage cursor", args: obj{"session_id": sID, "cursor": "c1.deadbeef"}, field: "cursor"},
			{name: "tampered cursor", args: obj{"session_id": sID, "cursor": tampered}, field: "cursor"},
			{name: "cursor seq 0", args: obj{"session_id": sID, "cursor": "c0" + ownCursor[strings.Index(ownCursor, "."):]}, field: "cursor"},
			{name: "cursor 65", args: obj{"session_id": sID, "cursor": strings.Repeat("c", 65)}, field: "cursor"},
			{name: "cursor number", args: obj{"session_id": sID, "cursor": 3}, field: "cursor"},
		}, badSessionIDs(nil)...), common(obj{"session_id": sID})...),
		"read_session_handoff": append(append([]bad{
			{name: "missing session_id", args: obj{}, field: "session_id"},
			{name: "project 129", args: obj{"session_id": sID, "project": strings.Repeat("p", 129)}, field: "project"},
			{name: "other project", args: obj{"session_id": sID, "project": otherID}, field: "project"},
			{name: "diagnostic string", args: obj{"session_id": sID, "diagnostic": "yes"}, field: "diagnostic"},
		}, badSessionIDs(nil)...), common(obj{"session_id": sID})...),
		"read_session_working_set": append(append([]bad{
			{name: "missing session_id", args: obj{}, field: "session_id"},
			{name: "a listing's cursor", args: obj{"session_id": sID, "cursor": ownCursor}, field: "cursor"},
			{name: "garbage cursor", args: obj{"session_id": sID, "cursor": "w1.2.deadbeef.0123456789ab"}, field: "cursor"},
			{name: "cursor 129", args: obj{"session_id": sID, "cursor": strings.Repeat("w", 129)}, field: "cursor"},
			{name: "cursor number", args: obj{"session_id": sID, "cursor": 3}, field: "cursor"},
		}, badSessionIDs(nil)...), common(obj{"session_id": sID})...),
	}

	tools, err := c.cs.ListTools(f.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if _, ok := tables[tl.Name]; !ok && !slices.Contains(goalTools, tl.Name) && !slices.Contains(runTools, tl.Name) &&
			!slices.Contains(swarmTools, tl.Name) { // TestGoalBadInput, TestRunBadInput and TestSwarmBadInput have theirs
			t.Errorf("tool %s has no bad-input table", tl.Name)
		}
	}

	before := f.fingerprint()
	for tool, cases := range tables {
		for _, bc := range cases {
			t.Run(tool+"/"+bc.name, func(t *testing.T) {
				code := bc.code
				if code == "" {
					code = "invalid_input"
				}
				r := c.at(t).fails(tool, bc.args, code)
				if r.err()["retry"] != "fix_input" {
					t.Fatalf("retry = %v", r.err()["retry"])
				}
				if bc.field != "" && r.details()["field"] != bc.field {
					t.Fatalf("details.field = %v, want %q (%v)", r.details()["field"], bc.field, r.Data)
				}
				if !strings.HasPrefix(r.Text, code+": ") {
					t.Fatalf("text mirror = %q", r.Text)
				}
				if after := f.fingerprint(); after != before {
					t.Fatalf("a rejected call wrote:\n%s\n→\n%s", before, after)
				}
			})
		}
	}

	// The bounds are exact: the largest valid values are accepted.
	t.Run("bounds accepted", func(t *testing.T) {
		c := c.at(t)
		text := strings.Repeat("€", 2666) + "xx" // 8000 bytes
		tags := make([]string, 16)
		for i := range tags {
			tags[i] = strings.Repeat(string(rune('a'+i)), 64)
		}
		r := c.ok("post_session_message", obj{"session_id": sID, "kind": "note", "text": text, "tags": tags,
			"delivery_key": strings.Repeat("k", 128), "priority": "high"})
		if r.str("message", "text") != text || len(r.Data["message"].(map[string]any)["tags"].([]any)) != 16 {
			t.Fatalf("post at the bounds: %v", r.Data)
		}
		c.ok("list_session_messages", obj{"session_id": sID, "limit": 100, "cursor": ownCursor})
		c.ok("list_sessions", obj{"project": pID, "limit": 50, "offset": 0})
		c.ok("list_sessions", obj{"project": pID, "limit": 1})
		c.ok("list_session_messages", obj{"session_id": sID, "limit": 1})
		c.ok("work_on_project", obj{"project": pID, "instruction": strings.Repeat("i", 16384), "title": strings.Repeat("t", 240),
			"context": []string{"workflow.guide", "project.instructions"}})
	})
}

// ---- TestToolsList ----

func TestToolsList(t *testing.T) {
	f := newFixture(t)
	c := f.connect(f.token("tim", sessionScopes...))
	res, err := c.cs.ListTools(f.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	readOnly := []string{"list_projects", "list_sessions", "list_session_messages", "read_session_handoff", "read_session_working_set", "get_goal", "list_goals", "observe_run",
		"observe_coding_agent", "list_runners", "chat_swarm_status", "chat_swarm_context_status"}
	// The goal mutations take a required key: a replay is inert. A second
	// cancel_run changes nothing.
	idempotent := append(slices.Clone(readOnly), "close_session", "resolve_session_message",
		"create_goal", "checkpoint_goal", "revise_goal_plan", "update_goal", "cancel_run", "cancel_coding_agent", "start_coding_agent",
		// A swarm call with the same key or content replays; an owner's
		// second collect, cancel, reconcile or close changes nothing.
		"chat_swarm_join", "chat_swarm_dispatch", "chat_swarm_ack", "chat_swarm_submit", "chat_swarm_fail",
		"chat_swarm_collect", "chat_swarm_cancel", "chat_swarm_reconcile", "chat_swarm_close",
		// Leaving or removing again returns the retired worker.
		"chat_swarm_leave", "chat_swarm_remove_worker",
		// The same request (carrier, worker, epoch) returns the same
		// continuation; a second approve, revoke or status read returns it
		// again (replayed); the same context report again stores nothing
		// (a report keeps its largest figure). Not prepare (each call mints
		// a ticket) nor reconcile_continuation (a continuation may come to
		// be in doubt again, and the call would act again).
		"chat_swarm_request_continuation", "chat_swarm_approve_continuation", "chat_swarm_revoke_continuation",
		"chat_swarm_continuation_status", "chat_swarm_report_context")
	want := []string{"cancel_coding_agent", "cancel_run", "chat_swarm_ack", "chat_swarm_approve_continuation", "chat_swarm_cancel",
		"chat_swarm_checkpoint", "chat_swarm_close", "chat_swarm_collect", "chat_swarm_context_status", "chat_swarm_continuation_status",
		"chat_swarm_create", "chat_swarm_dispatch", "chat_swarm_fail", "chat_swarm_invite", "chat_swarm_join", "chat_swarm_leave", "chat_swarm_next",
		"chat_swarm_prepare_continuation", "chat_swarm_reconcile", "chat_swarm_reconcile_continuation", "chat_swarm_remove_worker", "chat_swarm_report_context",
		"chat_swarm_request_continuation", "chat_swarm_revoke_continuation", "chat_swarm_status", "chat_swarm_submit", "checkpoint_goal", "close_session", "create_goal", "get_goal", "list_goals", "list_projects",
		"list_runners", "list_session_messages", "list_sessions", "observe_coding_agent", "observe_run", "post_session_message", "read_session_handoff",
		"read_session_working_set", "resolve_session_message", "revise_goal_plan", "run_validation", "start_coding_agent", "update_goal", "work_on_project"}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	sort.Strings(names)
	if !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	for _, tl := range res.Tools {
		t.Run(tl.Name, func(t *testing.T) {
			var in, out map[string]any
			if err := json.Unmarshal([]byte(mustJSON(t, tl.InputSchema)), &in); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(mustJSON(t, tl.OutputSchema)), &out); err != nil {
				t.Fatalf("outputSchema: %v", err)
			}
			if in["type"] != "object" || in["additionalProperties"] != false {
				t.Fatalf("inputSchema type=%v additionalProperties=%v", in["type"], in["additionalProperties"])
			}
			if out["type"] != "object" {
				t.Fatalf("outputSchema type = %v", out["type"])
			}
			props, _ := in["properties"].(map[string]any)
			for name, p := range props {
				pm := p.(map[string]any)
				if strings.Contains(mustJSON(t, pm["type"]), "array") {
					if pm["enum"] != nil {
						t.Errorf("property %s: enum on the array itself, not on its items: %v", name, pm)
					}
					if pm["maxItems"] == nil {
						t.Errorf("property %s: array without maxItems: %v", name, pm)
					}
				}
			}
			if req, _ := dig(out, "properties", "error", "required").([]any); len(req) != 3 || dig(out, "properties", "error", "type") != "object" {
				t.Fatalf("outputSchema lacks the error alternative {code, message, retry}: %v", out["properties"])
			}
			if tl.Description == "" || tl.Title == "" {
				t.Fatalf("tool without title/description")
			}
			a := tl.Annotations
			if a == nil {
				t.Fatal("no annotations")
			}
			if a.ReadOnlyHint != slices.Contains(readOnly, tl.Name) {
				t.Fatalf("readOnlyHint = %v", a.ReadOnlyHint)
			}
			if a.IdempotentHint != slices.Contains(idempotent, tl.Name) {
				t.Fatalf("idempotentHint = %v", a.IdempotentHint)
			}
			if a.DestructiveHint == nil || *a.DestructiveHint {
				t.Fatalf("destructiveHint = %v, want false (nothing is deleted)", a.DestructiveHint)
			}
			if a.OpenWorldHint == nil || *a.OpenWorldHint {
				t.Fatalf("openWorldHint = %v, want false", a.OpenWorldHint)
			}
		})
	}
	for _, tl := range res.Tools {
		if tl.Name == "chat_swarm_next" {
			var in map[string]any
			_ = json.Unmarshal([]byte(mustJSON(t, tl.InputSchema)), &in)
			if v := dig(in, "properties", "carrier_key", "minLength"); v != float64(continuo.MinCarrierKey) {
				t.Errorf("carrier_key.minLength = %v, want %d", v, continuo.MinCarrierKey)
			}
			if v := dig(in, "properties", "epoch", "maximum"); v != nil {
				t.Errorf("epoch.maximum = %v: a guard of the arithmetic is not published", v)
			}
		}
		if tl.Name != "post_session_message" {
			continue
		}
		var in map[string]any
		_ = json.Unmarshal([]byte(mustJSON(t, tl.InputSchema)), &in)
		if v := dig(in, "properties", "text", "maxLength"); v != float64(8000) {
			t.Errorf("text.maxLength = %v", v)
		}
		// A minimum of 1 is not published (an empty string is an absent
		// one); a larger one is (carrier_key, below).
		if v := dig(in, "properties", "text", "minLength"); v != nil {
			t.Errorf("text.minLength = %v", v)
		}
		if v := dig(in, "properties", "tags", "maxItems"); v != float64(16) {
			t.Errorf("tags.maxItems = %v", v)
		}
		if v := dig(in, "properties", "tags", "items", "maxLength"); v != float64(64) {
			t.Errorf("tags.items.maxLength = %v", v)
		}
		if v, _ := dig(in, "properties", "kind", "enum").([]any); len(v) != 8 {
			t.Errorf("kind.enum = %v", v)
		}
		if v := dig(in, "properties", "tags", "items", "minLength"); v != nil {
			t.Errorf("tags.items.minLength = %v", v)
		}
		req, _ := in["required"].([]any)
		var rs []string
		for _, x := range req {
			rs = append(rs, x.(string))
		}
		sort.Strings(rs)
		if !slices.Equal(rs, []string{"kind", "session_id", "text"}) {
			t.Errorf("required = %v", rs)
		}
	}
}

// An error that quotes an argument back never echoes a credential.
func TestErrorRedacted(t *testing.T) {
	f := newFixture(t)
	c := f.connect(f.token("alice", continuo.ScopeSessionsRead, continuo.ScopeSessionsWrite)).at(t)
	secret := "sk-proj-abcdefghijklmnopqrstuvwx"
	r := c.fails("work_on_project", obj{"project": secret, "instruction": "x"}, "not_found")
	if s := mustJSON(t, r); strings.Contains(s, "abcdefghijklmnop") {
		t.Fatalf("secret echoed in error: %s", s)
	}
}
