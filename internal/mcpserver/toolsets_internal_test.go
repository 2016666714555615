package mcpserver

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/continuo-dev/continuo/internal/workflow"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Model-visible bounds of CONTRACT.md §4: what a client that sends the whole
// list puts in a model's context (name, description, input schema).
const (
	maxContinuityBytes = 12 << 10
	maxWorkerBytes     = 6 << 10
)

// endpoint is what one endpoint serves, listed through an MCP client.
type endpoint struct {
	init      *mcp.InitializeResult
	tools     []*mcp.Tool
	prompts   []string
	templates []string
}

// listEndpoint builds the server of sets (a panic of registration is the
// test's failure) and lists it over an in-memory connection.
func listEndpoint(t *testing.T, sets Toolsets) endpoint {
	t.Helper()
	var srv *mcp.Server
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("the %s endpoint does not start: %v", sets, r)
			}
		}()
		srv = New(Options{}).core.build(sets)
	}()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "toolsets-test", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	e := endpoint{init: cs.InitializeResult()}
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	e.tools = res.Tools
	if e.init.Capabilities.Prompts != nil {
		ps, err := cs.ListPrompts(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps.Prompts {
			e.prompts = append(e.prompts, p.Name)
		}
	}
	if e.init.Capabilities.Resources != nil {
		rs, err := cs.ListResourceTemplates(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs.ResourceTemplates {
			e.templates = append(e.templates, r.Name)
		}
	}
	return e
}

// placed returns the names of table under any of sets, sorted.
func placed(table map[string]Toolsets, sets Toolsets) []string {
	var out []string
	for name, in := range table {
		if in&sets != 0 {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func names(tools []*mcp.Tool) []string {
	var out []string
	for _, tl := range tools {
		out = append(out, tl.Name)
	}
	return out
}

// modelBytes is what a model reads of a tool: its name, description and
// input schema as the list serializes it.
func modelBytes(t *testing.T, tl *mcp.Tool) int {
	b, err := json.Marshal(tl.InputSchema)
	if err != nil {
		t.Fatal(err)
	}
	return len(tl.Name) + len(tl.Description) + len(b)
}

// listBytes is the tool's line of tools/list, output schema and all.
func listBytes(t *testing.T, tl *mcp.Tool) int {
	b, err := json.Marshal(tl)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// TestToolsetTable: every tool, prompt and resource template the server
// registers is in a toolset and every line of the table names one, so the
// endpoint of all the toolsets serves exactly the table, and each endpoint
// exactly its toolsets' part of it, sorted. It prints each toolset's size
// (docs/PERFORMANCE.md) and holds continuity and worker to their bounds.
func TestToolsetTable(t *testing.T) {
	for name, in := range toolToolsets {
		if in == 0 || in&^AllToolsets != 0 {
			t.Errorf("tool %s: toolsets %08b are not toolsets", name, in)
		}
	}
	all := listEndpoint(t, AllToolsets)
	if got, want := names(all.tools), placed(toolToolsets, AllToolsets); !slices.Equal(got, want) {
		t.Errorf("the table names tools no one registers, or misses some:\nserved %v\ntable  %v", got, want)
	}
	if got, want := all.prompts, placed(promptToolsets, AllToolsets); !slices.Equal(got, want) {
		t.Errorf("prompts: served %v, table %v", got, want)
	}
	slices.Sort(all.templates)
	if got, want := all.templates, placed(resourceToolsets, AllToolsets); !slices.Equal(got, want) {
		t.Errorf("resource templates: served %v, table %v", got, want)
	}

	t.Logf("%-11s %5s %14s %11s", "toolset", "tools", "model-visible", "tools/list")
	sum := 0
	for _, n := range append(slices.Clone(toolsetNames), struct {
		name string
		set  Toolsets
	}{allName, AllToolsets}) {
		e := listEndpoint(t, n.set)
		if got, want := names(e.tools), placed(toolToolsets, n.set); !slices.Equal(got, want) {
			t.Errorf("%s lists %v, want %v", n.name, got, want)
		}
		model, list := 0, 0
		for _, tl := range e.tools {
			model += modelBytes(t, tl)
			list += listBytes(t, tl)
		}
		if n.set != AllToolsets {
			sum += len(e.tools)
		}
		t.Logf("%-11s %5d %14d %11d", n.name, len(e.tools), model, list)
		switch {
		case n.set == ToolsetContinuity && model > maxContinuityBytes:
			t.Errorf("continuity is %d model-visible bytes, over %d", model, maxContinuityBytes)
		case n.set == ToolsetWorker && model > maxWorkerBytes:
			t.Errorf("worker is %d model-visible bytes, over %d", model, maxWorkerBytes)
		}
	}
	if sum != len(all.tools) {
		t.Logf("%d tools are in more than one toolset", sum-len(all.tools))
	}
}

// TestToolInNoToolset: a tool registered without a line in the table
// stops every endpoint from starting, naming the tool — so no tool can be
// left out of every toolset (and so unreachable) unnoticed.
func TestToolInNoToolset(t *testing.T) {
	saved := toolToolsets
	t.Cleanup(func() { toolToolsets = saved })
	toolToolsets = maps.Clone(saved)
	delete(toolToolsets, "chat_swarm_next")
	for _, sets := range []Toolsets{ToolsetContinuity, AllToolsets} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), `"chat_swarm_next"`) {
					t.Errorf("%s: a tool in no toolset: %v, want a panic naming it", sets, r)
				}
			}()
			New(Options{}).core.build(sets)
		}()
	}
}

// TestParseToolsets: names, lists, spaces and "all"; an unknown name is
// invalid_input naming it and every known name.
func TestParseToolsets(t *testing.T) {
	for in, want := range map[string]Toolsets{
		"":                      0,
		"continuity":            ToolsetContinuity,
		" worker , delegation ": ToolsetWorker | ToolsetDelegation,
		"swarm,swarm":           ToolsetSwarm,
		"all":                   AllToolsets,
		"worker,all":            AllToolsets,
	} {
		if got, err := ParseToolsets(in); err != nil || got != want {
			t.Errorf("ParseToolsets(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	if got, err := ParseToolsets("worker", "swarm"); err != nil || got != ToolsetWorker|ToolsetSwarm {
		t.Errorf("ParseToolsets(worker, swarm) = %s, %v", got, err)
	}
	for _, bad := range []string{"Continuity", "continuity,bogus", "default", "*"} {
		_, err := ParseToolsets(bad)
		if err == nil || !strings.Contains(err.Error(), "unknown toolset") || !strings.Contains(err.Error(), "continuity, delegation, swarm, worker, all") {
			t.Errorf("ParseToolsets(%q): %v, want an error naming the toolsets", bad, err)
		}
	}
	if s := (ToolsetWorker | ToolsetContinuity).String(); s != "continuity,worker" {
		t.Errorf("String = %q", s)
	}
	if s := AllToolsets.String(); s != "all" {
		t.Errorf("String = %q", s)
	}
}

// TestInstructionsPerToolsets: the instructions of every combination of
// toolsets are at most 2,048 characters and name only tools of its
// toolsets; with the session tools the recovery sequence comes first and
// Continuo's goal tools are named as such; every toolset is pointed to by
// at least one of its tools, and the owner's and the worker's name the
// worker endpoint too.
func TestInstructionsPerToolsets(t *testing.T) {
	every := placed(toolToolsets, AllToolsets)
	// Longest first: a name is not found inside a longer one
	// (chat_swarm_reconcile in chat_swarm_reconcile_continuation).
	slices.SortFunc(every, func(a, b string) int { return len(b) - len(a) })
	mention := regexp.MustCompile(`\b(` + strings.Join(every, "|") + `)\b`)
	for sets := Toolsets(1); sets <= AllToolsets; sets++ {
		ins := Instructions(sets)
		if n := utf8.RuneCountInString(ins); n > workflow.MaxGuideChars {
			t.Errorf("%s: instructions of %d characters, over %d", sets, n, workflow.MaxGuideChars)
		}
		named := map[Toolsets]bool{}
		for _, m := range mention.FindAllString(ins, -1) {
			if toolToolsets[m]&sets == 0 {
				t.Errorf("%s: the instructions name %s, which this endpoint does not list", sets, m)
			}
			named[toolToolsets[m]&sets] = true
		}
		for _, n := range toolsetNames {
			if sets&n.set != 0 && !named[n.set] {
				t.Errorf("%s: the instructions name no tool of %s", sets, n.name)
			}
		}
		if sets&(ToolsetSwarm|ToolsetWorker) != 0 && !strings.Contains(ins, "/mcp/x/worker") {
			t.Errorf("%s: the instructions do not name the worker endpoint", sets)
		}
		if !strings.HasSuffix(ins, workflow.ErrorsGuide) {
			t.Errorf("%s: the instructions do not end with the line on errors", sets)
		}
		if sets&ToolsetContinuity == 0 {
			continue
		}
		last := -1
		for _, step := range []string{"list_projects", "list_sessions", "ask the user which", "read_session_handoff", "read_session_working_set",
			"work_on_project(session_id", "post_session_message"} {
			i := strings.Index(ins, step)
			if i <= last {
				t.Errorf("%s: %q is out of the recovery sequence's order (it comes first):\n%s", sets, step, ins)
			}
			last = i
		}
		for _, name := range []string{"create_goal", "get_goal", "update_goal"} {
			if !strings.Contains(ins, "Continuo's "+name) && !strings.Contains(ins, "Continuo's create_goal, checkpoint_goal, revise_goal_plan and "+name) {
				t.Errorf("%s: the instructions do not name %s as Continuo's", sets, name)
			}
		}
	}
	if Instructions(ToolsetContinuity) != workflow.WorkflowGuide {
		t.Error("the default endpoint's instructions are not the workflow guide")
	}
}
