package mcpserver_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var update = flag.Bool("update", false, "rewrite testdata/tools_list_*.json from the server")

// maxToolBytes is the contract's bound on the average serialized size of a
// tool in tools/list, schemas included (CONTRACT.md §4): every byte sits in
// a model's context.
const maxToolBytes = 1536

// toolsetsTransport adds a bearer token and, when set, the toolsets header
// to every request.
type toolsetsTransport struct{ token, toolsets string }

func (h toolsetsTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+h.token)
	if h.toolsets != "" {
		r.Header.Set(mcpserver.ToolsetsHeader, h.toolsets)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// connectEndpoint opens a client session on the endpoint path ("/mcp",
// "/mcp/x/worker") with the toolsets header (none when "") at protocol
// version v ("" for the newest).
func (f *fixture) connectEndpoint(tok, path, toolsets, v string) *client {
	f.t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcpserver-test", Version: "1"}, nil).Connect(f.ctx,
		&mcp.StreamableClientTransport{Endpoint: f.base + path, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: toolsetsTransport{token: tok, toolsets: toolsets}}},
		&mcp.ClientSessionOptions{ProtocolVersion: v})
	if err != nil {
		f.t.Fatalf("connect %s (%s): %v", path, toolsets, err)
	}
	f.t.Cleanup(func() { cs.Close() })
	return &client{t: f.t, cs: cs, schemas: &outputSchemas{}}
}

// listOf returns tools/list as c sees it, one tool per line.
func listOf(t *testing.T, c *client) []byte {
	t.Helper()
	res, err := c.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, tl := range res.Tools {
		line, err := json.Marshal(tl)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// toolsList returns tools/list of the endpoint path as one caller with
// scopes sees it.
func toolsList(t *testing.T, f *fixture, path string, scopes ...continuo.Scope) []byte {
	t.Helper()
	return listOf(t, f.connectEndpoint(f.token("lister", scopes...), path, "", ""))
}

// lineNames returns the tool names of a tools/list of one tool per line.
func lineNames(t *testing.T, list []byte) []string {
	t.Helper()
	var out []string
	for line := range bytes.Lines(list) {
		var tl struct{ Name string }
		if err := json.Unmarshal(line, &tl); err != nil {
			t.Fatal(err)
		}
		out = append(out, tl.Name)
	}
	return out
}

// TestToolsListGolden: each toolset's tools/list is checked in
// (testdata/tools_list_TOOLSET.json, one tool per line; `go test -run
// TestToolsListGolden -update` rewrites them); each is sorted, the same for
// every caller whatever its scopes and from a second server, holds exactly
// the tools of its toolset, and is small: at most maxToolBytes per tool on
// average. The default endpoint /mcp lists continuity's.
func TestToolsListGolden(t *testing.T) {
	f, other := newFixture(t), newFixture(t)
	for _, name := range mcpserver.ToolsetNames() {
		t.Run(name, func(t *testing.T) {
			path := "/mcp/x/" + name
			got := toolsList(t, f, path, continuo.ScopeSessionsRead)
			golden := filepath.Join("testdata", "tools_list_"+name+".json")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("tools/list of %s differs from %s (run with -update if the change is meant):\n%s", path, golden, got)
			}
			if again := toolsList(t, f, path, continuo.ScopeAdmin); !bytes.Equal(again, got) {
				t.Error("tools/list depends on the caller's scopes")
			}
			if again := toolsList(t, other, path, continuo.ScopeSwarmWork); !bytes.Equal(again, got) {
				t.Error("tools/list differs between two servers")
			}
			sets, _ := mcpserver.ParseToolsets(name)
			listed := lineNames(t, got)
			if !slices.IsSorted(listed) {
				t.Errorf("tools/list is not sorted: %v", listed)
			}
			for _, tool := range lineNames(t, mustRead(t, filepath.Join("testdata", "tools_list_all.json"))) {
				if in := mcpserver.ToolsetsOf(tool)&sets != 0; in != slices.Contains(listed, tool) {
					t.Errorf("%s: %s listed %v, in the toolset %v", path, tool, !in, in)
				}
			}
			lines := len(listed)
			avg := (len(got) - lines) / lines
			t.Logf("%s: %d tools, %d bytes, %d bytes per tool on average (bound %d)", path, lines, len(got)-lines, avg, maxToolBytes)
			if avg > maxToolBytes {
				t.Errorf("tools/list averages %d bytes per tool, over the bound of %d", avg, maxToolBytes)
			}
		})
	}
	if def := toolsList(t, f, "/mcp", continuo.ScopeSessionsRead); !bytes.Equal(def, mustRead(t, filepath.Join("testdata", "tools_list_continuity.json"))) {
		t.Error("/mcp does not list the continuity toolset")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestToolsetsHeader: the X-MCP-Toolsets header names several toolsets, on
// /mcp and added to a path's one; the list is the sorted union of theirs,
// over both protocols (a stateful session's list is the one it was made
// with).
func TestToolsetsHeader(t *testing.T) {
	f := newFixture(t)
	tok := f.token("hal", continuo.ScopeSessionsRead)
	union := func(names ...string) []byte {
		var lines [][]byte
		for _, n := range names {
			lines = append(lines, bytes.SplitAfter(mustRead(t, filepath.Join("testdata", "tools_list_"+n+".json")), []byte("\n"))...)
		}
		lines = slices.DeleteFunc(lines, func(l []byte) bool { return len(l) == 0 })
		slices.SortFunc(lines, func(a, b []byte) int { return strings.Compare(lineNames(t, a)[0], lineNames(t, b)[0]) })
		return bytes.Join(lines, nil)
	}
	for _, c := range []struct {
		path, header string
		want         []string
	}{
		{"/mcp", "continuity,swarm", []string{"continuity", "swarm"}},
		{"/mcp", " worker , delegation ", []string{"delegation", "worker"}},
		{"/mcp/x/worker", "delegation", []string{"delegation", "worker"}},
		{"/mcp/x/continuity", "continuity", []string{"continuity"}},
		{"/mcp", "all", []string{"all"}},
		{"/mcp", "", []string{"continuity"}},
	} {
		for _, v := range []string{"", "2025-11-25"} {
			got := listOf(t, f.connectEndpoint(tok, c.path, c.header, v))
			if want := union(c.want...); !bytes.Equal(got, want) {
				t.Errorf("%s with %s %q at %q: tools %v, want those of %v", c.path, mcpserver.ToolsetsHeader, c.header, v,
					lineNames(t, got), c.want)
			}
		}
	}
}

// TestUnknownToolset: an unknown toolset in the path or the header is a
// 400 whose JSON body names it and every known toolset — before any
// session or tool; so is a path that names more than one.
func TestUnknownToolset(t *testing.T) {
	f := newFixture(t)
	tok := f.token("ursula", continuo.ScopeAdmin)
	body := `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, c := range []struct{ path, header, named string }{
		{"/mcp/x/bogus", "", "bogus"},
		{"/mcp", "continuity,bogus", "bogus"},
		{"/mcp/x/worker", "Swarm", "Swarm"},
		{"/mcp/x/continuity,swarm", "", "exactly one toolset"},
		{"/mcp/x/%20worker", "", "exactly one toolset"},
	} {
		for _, method := range []string{http.MethodPost, http.MethodGet} {
			req, _ := http.NewRequest(method, f.base+c.path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if c.header != "" {
				req.Header.Set(mcpserver.ToolsetsHeader, c.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var out map[string]any
			err = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || err != nil || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%s %s %q: %d %s (%v), want a 400 of JSON", method, c.path, c.header, resp.StatusCode, resp.Header.Get("Content-Type"), err)
				continue
			}
			msg, _ := dig(out, "error", "message").(string)
			if method == http.MethodPost { // a JSON-RPC error, with the request's id
				if out["id"] != float64(7) || dig(out, "error", "data", "code") != "invalid_input" {
					t.Errorf("%s %q: %v, want a JSON-RPC error for id 7 with code invalid_input", c.path, c.header, out)
				}
			} else if dig(out, "error", "code") != "invalid_input" {
				t.Errorf("GET %s %q: %v, want the error object with code invalid_input", c.path, c.header, out)
			}
			if !strings.Contains(msg, c.named) || (c.named != "exactly one toolset" && !strings.Contains(msg, "continuity, delegation, swarm, worker, all")) {
				t.Errorf("%s %s %q: message %q names neither %q nor the toolsets", method, c.path, c.header, msg, c.named)
			}
		}
	}
}

// TestToolOutsideToolsets: a tool outside an endpoint's toolsets is
// unknown to its sessions — the SDK's unknown-tool error, and nothing
// happens — however wide the caller's scopes (scopes never widen a
// toolset); and a toolset never grants a scope: the same tool on an
// endpoint that lists it is forbidden to a caller without its scope.
func TestToolOutsideToolsets(t *testing.T) {
	f := newFixture(t)
	admin := f.token("ada", continuo.ScopeAdmin)
	reader := f.token("rita", continuo.ScopeSessionsRead)
	pID := f.project("proj", map[string]continuo.Access{"ada": continuo.AccessWrite, "rita": continuo.AccessWrite})
	before := f.swarmFingerprint()
	for _, c := range []struct {
		path, header, tool string
		args               map[string]any
	}{
		{"/mcp", "", "chat_swarm_create", map[string]any{"worker_limit": 1}},
		{"/mcp/x/worker", "", "chat_swarm_create", map[string]any{"worker_limit": 1}},
		{"/mcp/x/worker", "", "work_on_project", map[string]any{"project": pID, "instruction": "x"}},
		{"/mcp/x/swarm", "", "post_session_message", map[string]any{"session_id": "~s1", "kind": "note", "text": "x"}},
		{"/mcp", "delegation", "chat_swarm_join", map[string]any{"swarm_id": "swm_x", "invite": "x", "label": "x"}},
	} {
		for _, v := range []string{"", "2025-11-25"} {
			cs := f.connectEndpoint(admin, c.path, c.header, v).cs
			_, err := cs.CallTool(f.ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
			if err == nil || !strings.Contains(err.Error(), "unknown tool") {
				t.Errorf("%s (%s) at %q: %s with every scope: %v, want the unknown-tool error", c.path, c.header, v, c.tool, err)
			}
		}
	}
	if f.swarmFingerprint() != before {
		t.Error("a call of a tool outside the endpoint's toolsets changed something")
	}
	// Every scope on the narrowest endpoint lists what any caller sees there.
	if a, r := listOf(t, f.connectEndpoint(admin, "/mcp/x/worker", "", "")), listOf(t, f.connectEndpoint(reader, "/mcp/x/worker", "", "")); !bytes.Equal(a, r) {
		t.Error("the worker endpoint lists more to a caller with more scopes")
	}

	// The other way round: the endpoint lists the tool, the caller lacks
	// its scope.
	for _, c := range []struct {
		path, tool string
		args       map[string]any
	}{
		{"/mcp/x/swarm", "chat_swarm_create", map[string]any{"worker_limit": 1}},
		{"/mcp/x/all", "chat_swarm_create", map[string]any{"worker_limit": 1}},
		{"/mcp", "work_on_project", map[string]any{"project": pID, "instruction": "x"}},
		{"/mcp/x/delegation", "start_coding_agent", map[string]any{"project": pID, "provider_id": "p", "idempotency_key": "k", "instruction": "x"}},
	} {
		f.connectEndpoint(reader, c.path, "", "").fails(c.tool, c.args, "forbidden")
	}
	if f.swarmFingerprint() != before {
		t.Error("a call without its scope changed something")
	}
}

// TestToolsetPromptsAndResources: prompts and resources follow their
// toolset (continuity): an endpoint without it declares neither and
// answers their methods "method not found"; one with it serves both.
func TestToolsetPromptsAndResources(t *testing.T) {
	f := newFixture(t)
	tok := f.token("pam", sessionScopes...)
	for _, c := range []struct {
		path, header string
		served       bool
	}{
		{"/mcp", "", true},
		{"/mcp/x/worker", "", false},
		{"/mcp/x/swarm", "delegation", false},
		{"/mcp/x/worker", "continuity", true},
		{"/mcp/x/all", "", true},
	} {
		cs := f.connectEndpoint(tok, c.path, c.header, "").cs
		caps := cs.InitializeResult().Capabilities
		if (caps.Prompts != nil) != c.served || (caps.Resources != nil) != c.served {
			t.Errorf("%s (%s): prompts %v, resources %v declared; want %v", c.path, c.header, caps.Prompts != nil, caps.Resources != nil, c.served)
		}
		ps, perr := cs.ListPrompts(f.ctx, nil)
		rs, rerr := cs.ListResourceTemplates(f.ctx, nil)
		if !c.served {
			for what, err := range map[string]error{"prompts/list": perr, "resources/templates/list": rerr} {
				if err == nil || !strings.Contains(err.Error(), "method not found") {
					t.Errorf("%s (%s): %s: %v, want method not found", c.path, c.header, what, err)
				}
			}
			continue
		}
		if perr != nil || rerr != nil || len(ps.Prompts) != 2 || len(rs.ResourceTemplates) != 2 {
			t.Errorf("%s (%s): prompts %v (%v), templates %v (%v); want 2 and 2", c.path, c.header, ps, perr, rs, rerr)
		}
	}
}

// TestInviteNamesWorkerEndpoint: a swarm's invite comes with the worker
// endpoint, where a worker conversation joins and loops with the worker
// toolset alone; an owner's endpoint lists none of the worker's tools.
func TestInviteNamesWorkerEndpoint(t *testing.T) {
	f := newFixture(t)
	owner := f.connectEndpoint(f.token("olga", ownerScopes...), "/mcp/x/swarm", "", stateful)
	created := owner.ok("chat_swarm_create", obj{"worker_limit": 1})
	endpoint := created.str("worker_endpoint")
	if endpoint != "/mcp/x/worker" {
		t.Fatalf("worker_endpoint = %q, want /mcp/x/worker (the server does not know its URL here)", endpoint)
	}
	again := owner.ok("chat_swarm_invite", obj{"swarm_id": created.str("swarm", "swarm_id")})
	if again.str("worker_endpoint") != endpoint {
		t.Errorf("chat_swarm_invite: worker_endpoint = %q", again.str("worker_endpoint"))
	}
	w := f.connectEndpoint(f.token("olga", workerScopes...), endpoint, "", stateful)
	joined := w.ok("chat_swarm_join", obj{"swarm_id": created.str("swarm", "swarm_id"), "invite": again.str("invite"), "label": "w"})
	owner.ok("chat_swarm_dispatch", obj{"swarm_id": created.str("swarm", "swarm_id"), "task_key": "k", "prompt": "p"})
	next := w.ok("chat_swarm_next", obj{"worker_id": joined.str("worker", "worker_id"), "epoch": 0, "wait_secs": 0})
	if next.str("state") != "task" {
		t.Errorf("the worker at %s got %v, want its task", endpoint, next.Data)
	}
	// Leaving is the one worker tool the owner's endpoint lists too.
	for _, tool := range lineNames(t, listOf(t, owner)) {
		if mcpserver.ToolsetsOf(tool)&mcpserver.ToolsetWorker != 0 && tool != "chat_swarm_leave" {
			t.Errorf("the owner's endpoint lists the worker's %s", tool)
		}
	}
}

// closedSetRE finds a closed set written out in prose: two or more
// lower-case names joined by "|" ("none|unknown", "task|idle|closed").
var closedSetRE = regexp.MustCompile(`\b[a-z][a-z0-9_]*(?:\|[a-z][a-z0-9_]*)+\b`)

// proseSets returns what in one tool's description and schemas is a
// closed set written only in prose (CONTRACT.md §1: every closed set is a
// JSON Schema enum): a set "a|b|c" in the tool's description or in a
// description anywhere in its input or output schema whose values are not
// all in one enum of those schemas, and a string property whose
// description says "one of" without an enum of its own.
func proseSets(desc string, schemas ...any) []string {
	var enums [][]string
	type text struct{ path, desc string }
	texts := []text{{"description", desc}}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			var enum []string
			if e, ok := x["enum"].([]any); ok {
				for _, v := range e {
					s, _ := v.(string)
					enum = append(enum, s)
				}
				enums = append(enums, enum)
			}
			if d, ok := x["description"].(string); ok {
				texts = append(texts, text{path, d})
				if x["type"] == "string" && enum == nil && strings.Contains(d, "one of") {
					texts = append(texts, text{path, "one of, without an enum"})
				}
			}
			for k, e := range x {
				walk(path+"."+k, e)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		}
	}
	for i, s := range schemas {
		walk(fmt.Sprintf("schema%d", i), s)
	}
	var out []string
	for _, t := range texts {
		if t.desc == "one of, without an enum" {
			out = append(out, t.path+": a string property says \"one of\" without an enum")
			continue
		}
		for _, set := range closedSetRE.FindAllString(t.desc, -1) {
			values := strings.Split(set, "|")
			if !slices.ContainsFunc(enums, func(e []string) bool {
				return !slices.ContainsFunc(values, func(v string) bool { return !slices.Contains(e, v) })
			}) {
				out = append(out, fmt.Sprintf("%s: %q is a closed set in prose, in no enum", t.path, set))
			}
		}
	}
	return out
}

// TestClosedSetsAreEnums walks tools/list: no closed set of values is
// written only in prose, in any tool's description or schema; each is an
// enum (CONTRACT.md §1). The checker itself is held to a tool that breaks
// the rule both ways.
func TestClosedSetsAreEnums(t *testing.T) {
	bad := proseSets("Worker: state: task|idle|closed.",
		map[string]any{"type": "object", "properties": map[string]any{
			"disposition": map[string]any{"type": "string", "description": "no_effect|applied|unknown: what it did"},
			"code":        map[string]any{"type": "string", "description": "one of the codes"}}},
		map[string]any{"type": "object", "properties": map[string]any{"state": map[string]any{"enum": []any{"task", "idle"}}}})
	if len(bad) != 3 {
		t.Fatalf("the checker found %d prose sets in a tool with three: %v", len(bad), bad)
	}
	f := newFixture(t)
	res, err := f.connect(f.token("lister", continuo.ScopeSessionsRead)).cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		b, err := json.Marshal(map[string]any{"in": tl.InputSchema, "out": tl.OutputSchema})
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		for _, p := range proseSets(tl.Description, v["in"], v["out"]) {
			t.Errorf("%s: %s", tl.Name, p)
		}
	}
}
