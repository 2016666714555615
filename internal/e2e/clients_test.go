package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/continuo-dev/continuo/internal/modelstub"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRealClients drives Claude Code and Codex CLI — the real binaries,
// installed from npm at pinned versions — non-interactively against a
// scripted model stub, with Continuo connected over HTTP (a token) and
// over stdio, and its hooks installed by `continuo hook install`. It
// checks, from the server's state and from what the model was sent: the
// tools were listed and called; the instructions reached the model uncut;
// after compaction and on resume SessionStart gave the model the brief of
// the session the conversation works on (not a decoy's); PreCompact, Stop
// and SessionEnd kept the newest instruction in that session; and a second
// conversation in the project found the session, read the working set
// because the brief was cut, and resumed it. Over HTTP the clients use the
// default endpoint (continuity); over stdio every tool (--toolsets all),
// so that both lists, and both sets of instructions, reach real clients.
func TestRealClients(t *testing.T) {
	for _, client := range []string{"claude", "codex"} {
		for _, transport := range []string{"http", "stdio"} {
			t.Run(client+"/"+transport, func(t *testing.T) { clientStory(t, client, transport) })
		}
	}
}

// story is the state one client's run shares with its scripted model.
type story struct {
	t         *testing.T
	client    *realClient
	stub      *modelstub.Server
	cs        *mcp.ClientSession // the test's own client, on the same data
	project   string
	decoys    []string
	logPath   string // the hooks' log
	recordDir string // CONTINUO_RECORD_CLIENTS: where the hook inputs go
	toolsets  mcpserver.Toolsets
}

// Prompts of the story, each selecting a plan of the scripted model.
const (
	promptStart    = "[[start]] Add a --verbose flag to the CLI; keep the CI config untouched."
	promptMore     = "[[more]] Also accept -v as a shorthand for --verbose."
	promptAfter    = "[[after]] Where do we stand on the verbose flag?"
	promptContinue = "[[continue]] Continue the verbose flag work from where the last conversation stopped."
	sessionTitle   = "Verbose flag"
)

func clientStory(t *testing.T, name, transport string) {
	repo := gitRepo(t)
	data := dataDir(t, "sqlite")
	st := &story{t: t, recordDir: recordDir(t, name)}
	st.stub = modelstub.New(t)
	st.stub.Logf = t.Logf
	var mcpAdd []string
	var env []string
	switch transport {
	case "http":
		st.toolsets = mcpserver.DefaultToolsets
		s := start(t, data, repo)
		st.project, st.cs = s.Project, connect(t, s.URL, s.Admin)
		env = append(env, "CONTINUO_TOKEN="+s.Admin)
		if name == "claude" {
			mcpAdd = []string{"mcp", "add", "--transport", "http", "continuo", s.URL, "--header", "Authorization: Bearer " + s.Admin}
		} else {
			mcpAdd = []string{"mcp", "add", "continuo", "--url", s.URL, "--bearer-token-env-var", "CONTINUO_TOKEN"}
		}
	case "stdio":
		cmd := command(data, "init", "--json")
		cmd.Dir = repo
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("continuo init: %v", err)
		}
		var init struct {
			ProjectID string `json:"project_id"`
		}
		if err := json.Unmarshal(out, &init); err != nil || init.ProjectID == "" {
			t.Fatalf("continuo init: %s (%v)", out, err)
		}
		st.toolsets = mcpserver.AllToolsets
		st.project, st.cs = init.ProjectID, connectStdio(t, data, repo, "--principal", "admin", "--toolsets", "all")
		mcpAdd = []string{"mcp", "add", "continuo", "--", binary, "stdio", "--data-dir", data, "--principal", "admin", "--toolsets", "all"}
	}
	st.client = newClient(t, name, repo, st.stub, env...)
	st.client.run(mcpAdd...)
	st.install(data, transport)
	for _, title := range []string{"Old parser rewrite", "Docs typo sweep"} {
		d := must(t, st.cs, "work_on_project", map[string]any{"project": st.project, "title": title, "instruction": "Decoy: " + title})
		st.decoys = append(st.decoys, d["session_id"].(string))
	}

	// 1. A new conversation starts the work: the tools are listed and
	// called, and the instructions reach the model whole.
	var sessionID string
	st.stub.SetPlans(modelstub.Plan{Marker: "[[start]]", Steps: []modelstub.Step{
		mcpCall("list_projects", nil),
		mcpCall("work_on_project", map[string]any{"project": st.project, "instruction": promptStart, "title": sessionTitle}),
		func(r *modelstub.Request) modelstub.Reply {
			sessionID, _ = r.LastJSON("work_on_project")["session_id"].(string)
			return toolReply("post_session_message", map[string]any{"session_id": sessionID, "kind": "guidance",
				"text": "Never touch the CI config.", "delivery_key": "g1"})
		},
		func(r *modelstub.Request) modelstub.Reply {
			return toolReply("post_session_message", map[string]any{"session_id": sessionID, "kind": "decision",
				"text": "The flag is --verbose, parsed with the standard flag package.", "delivery_key": "d1"})
		},
		func(r *modelstub.Request) modelstub.Reply {
			return toolReply("post_session_message", map[string]any{"session_id": sessionID, "kind": "progress", "tags": []string{"handoff"},
				"text": "Done: --verbose parses. Next: route it to the logger. Verify: go test ./...", "delivery_key": "h1"})
		},
	}})
	conv := st.client.prompt("", promptStart)
	if sessionID == "" {
		t.Fatalf("the model never got a session from work_on_project")
	}
	st.checkFirstTurn()
	st.wantNote(sessionID, promptStart, "Stop", "SessionEnd")

	// 2. The conversation goes on, then compacts: PreCompact keeps the
	// newest instruction, SessionStart(compact) gives the brief.
	st.stub.SetPlans(modelstub.Plan{Marker: "[[more]]", Steps: []modelstub.Step{
		func(r *modelstub.Request) modelstub.Reply {
			reply := toolReply("post_session_message", map[string]any{"session_id": sessionID, "kind": "progress",
				"text": "-v is accepted too.", "delivery_key": "p2"})
			if name == "codex" {
				// Codex compacts on its own when a turn's usage passes
				// model_auto_compact_token_limit (newClient sets 50,000).
				reply.InputTokens = 60_000
			}
			return reply
		},
	}})
	before := len(st.stub.Requests())
	st.client.prompt(conv.session, promptMore)
	if name == "claude" {
		st.client.prompt(conv.session, "/compact")
	}
	st.wantLog("PreCompact", sessionID, "posted the note", "the note was posted already")
	st.wantLog("SessionStart", sessionID, "gave the brief")
	if name == "codex" {
		// The request after the compaction carries what SessionStart gave.
		st.wantBriefSent(before, sessionID)
	}
	st.wantNote(sessionID, promptMore, "PreCompact", "Stop", "SessionEnd")

	// 3. The conversation is resumed: SessionStart(resume) gives the brief
	// of its session, not a decoy's.
	st.stub.SetPlans(modelstub.Plan{Marker: "[[after]]", Final: "We stand at: --verbose and -v parse."})
	before = len(st.stub.Requests())
	st.client.prompt(conv.session, promptAfter)
	st.wantBriefSent(before, sessionID)
	st.wantNote(sessionID, promptAfter, "Stop", "SessionEnd")
	st.record(conv.session, sessionID)

	// 4. A second conversation in the project: the session's brief is cut
	// (a long history), so the model reads the working set — two pages,
	// each of which must reach it whole (Codex cuts the middle out of a
	// tool result over about 40 KB) — before it resumes the session.
	const decisions = 120
	for i := range decisions {
		must(t, st.cs, "post_session_message", map[string]any{"session_id": sessionID, "kind": "decision",
			"text":         fmt.Sprintf("Decision %03d: %s", i, strings.Repeat("the logger takes the level from the flag and keeps the format stable; ", 5)),
			"delivery_key": fmt.Sprintf("bulk-%d", i)})
	}
	var cut bool
	seen := map[string]bool{}
	pages := 0
	// next is the model's next move after the brief: follow its first
	// action to the working set, every page of it, then resume.
	next := func(r *modelstub.Request) modelstub.Reply {
		h := r.LastJSON("read_session_handoff")
		last := r.LastCall()
		switch {
		case last != nil && strings.HasSuffix(last.Name, "__read_session_handoff"):
			brief, _ := h["handoff_brief"].(map[string]any)
			if actions := anyStrings(brief["next_actions"]); len(actions) > 0 && strings.HasPrefix(actions[0], "read_session_working_set(") {
				cut = true
				return toolReply("read_session_working_set", map[string]any{"session_id": h["session_id"]})
			}
		case last != nil && strings.HasSuffix(last.Name, "__read_session_working_set"):
			res := r.Results("read_session_working_set")
			ws, _ := r.LastJSON("read_session_working_set")["working_set"].(map[string]any)
			if ws == nil {
				t.Errorf("working set page %d did not reach the model whole: %d bytes", len(res), len(res[len(res)-1].Text))
				return modelstub.Reply{Text: "The working set was cut."}
			}
			pages++
			for _, d := range anyList(ws["decisions"]) {
				if text, _ := d["text"].(string); len(text) > 12 {
					seen[text[:12]] = true
				}
			}
			if c, _ := ws["next_cursor"].(string); c != "" {
				return toolReply("read_session_working_set", map[string]any{"session_id": h["session_id"], "cursor": c})
			}
		default:
			return modelstub.Reply{Text: "Resumed the session."}
		}
		return toolReply("work_on_project", map[string]any{"session_id": h["session_id"], "instruction": promptContinue})
	}
	st.stub.SetPlans(modelstub.Plan{Marker: "[[continue]]", Steps: []modelstub.Step{
		mcpCall("list_projects", nil),
		mcpCall("list_sessions", map[string]any{"project": st.project, "lifecycle": "active"}),
		func(r *modelstub.Request) modelstub.Reply {
			var id string
			for _, s := range anyList(r.LastJSON("list_sessions")["sessions"]) {
				if s["title"] == sessionTitle {
					id, _ = s["session_id"].(string)
				}
			}
			return toolReply("read_session_handoff", map[string]any{"session_id": id})
		},
		next, next, next, next, next,
	}})
	st.client.prompt("", promptContinue)
	if !cut || pages < 2 || !seen["Decision 000"] || !seen[fmt.Sprintf("Decision %03d", decisions-1)] {
		t.Errorf("second conversation: brief cut %v, %d working-set page(s) read, first and last decision seen %v %v",
			cut, pages, seen["Decision 000"], seen[fmt.Sprintf("Decision %03d", decisions-1)])
	}
	msgs := must(t, st.cs, "list_session_messages", map[string]any{"session_id": sessionID, "kinds": []string{"instruction"}})
	if n, _ := msgs["total_count"].(float64); n != 2 {
		t.Errorf("the second conversation did not resume the session: %v instruction(s)", msgs["total_count"])
	}
	for _, e := range st.stub.Errors() {
		t.Errorf("model stub: %s", e)
	}
}

func mcpCall(tool string, args map[string]any) modelstub.Step {
	return func(*modelstub.Request) modelstub.Reply { return toolReply(tool, args) }
}

func toolReply(tool string, args map[string]any) modelstub.Reply {
	return modelstub.Reply{Call: &modelstub.ToolCall{Name: "mcp__continuo__" + tool, Args: args}}
}

// install runs `continuo hook install` as a user would; the clients then
// run the hooks it wrote. For HTTP it finds the data directory's running
// server by itself; for stdio, no server runs, so the hooks open the data
// directory (--local).
func (st *story) install(data, transport string) {
	t, c := st.t, st.client
	args := []string{"hook", "install", c.name, "--data-dir", data, "--json"}
	if c.name == "claude" {
		args = append(args, "--project-dir", c.work)
	}
	cmd := command(data, args...)
	cmd.Env = append(cmd.Env, "HOME="+c.home, "CODEX_HOME="+filepath.Join(c.home, ".codex"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hook install: %v\n%s", err, out)
	}
	var res struct{ Path string }
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("hook install: %s: %v", out, err)
	}
	b, _ := os.ReadFile(res.Path)
	want := map[string]string{"http": "--server http://", "stdio": "--local --data-dir " + data}[transport]
	if !strings.Contains(string(b), binary+" hook SessionStart "+want) {
		t.Fatalf("hook install wrote %s:\n%s", res.Path, b)
	}
	st.logPath = filepath.Join(c.home, ".local", "state", "continuo", "hook.log")
	if transport == "stdio" {
		st.logPath = filepath.Join(data, "hook.log")
	}
	if st.recordDir != "" {
		st.recordHooks(res.Path, b)
	}
}

// checkFirstTurn: the model was told of every Continuo tool — by name
// (Claude Code lists deferred tools by name in a system message until the
// model loads them with ToolSearch), or as the namespace a tool search
// reaches (Codex with a model that searches tools lists the server once,
// with the first line of its instructions) — and the server's instructions
// reached it whole (Claude Code: in the system prompt; Codex: the
// namespace's description in the tool list or in a tool search's output).
func (st *story) checkFirstTurn() {
	t := st.t
	tools, err := st.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	reqs := st.stub.Requests()
	var first *modelstub.Request
	for _, r := range reqs {
		if strings.Contains(r.Text(), "[[start]]") {
			first = r
			break
		}
	}
	if first == nil {
		t.Fatal("no request carried the first prompt")
	}
	seen := first.Text() + "\n" + strings.Join(first.Tools, "\n")
	if !strings.Contains(seen, "mcp__continuo__") {
		if !strings.Contains(first.Text(), "- mcp__continuo: ") {
			t.Errorf("the model was not told of Continuo's tools")
		}
	} else {
		for _, tool := range tools.Tools {
			if !strings.Contains(seen, "mcp__continuo__"+tool.Name) {
				t.Errorf("tool %s was not listed to the model", tool.Name)
			}
		}
	}
	last := reqs[len(reqs)-1]
	if ins := mcpserver.Instructions(st.toolsets); !strings.Contains(last.Text()+last.ToolDocs, ins) {
		t.Errorf("the server's instructions (%s: %d characters) did not reach the model whole", st.toolsets, len([]rune(ins)))
	}
	for _, tool := range []string{"list_projects", "work_on_project", "post_session_message"} {
		if len(last.Results(tool)) == 0 {
			t.Errorf("the model's call of %s got no result", tool)
		}
	}
}

// wantNote: the hooks kept instruction as a note of session (once,
// however many events posted it), and none in a decoy; each event named
// ran for the session.
func (st *story) wantNote(session, instruction string, events ...string) {
	t := st.t
	t.Helper()
	for _, ev := range events {
		st.wantLog(ev, session, "posted the note", "the note was posted already")
	}
	for _, id := range append([]string{session}, st.decoys...) {
		msgs := must(t, st.cs, "list_session_messages", map[string]any{"session_id": id, "kinds": []string{"progress"}, "limit": 100})
		n := 0
		for _, m := range anyList(msgs["messages"]) {
			if text, _ := m["text"].(string); strings.Contains(text, instruction) && slices.Contains(anyStrings(m["tags"]), "compaction") {
				n++
			}
		}
		if want := map[bool]int{true: 1, false: 0}[id == session]; n != want {
			t.Errorf("session %s holds %d note(s) of %q, want %d", id, n, instruction, want)
		}
	}
}

// wantLog: the hooks' log has a run of event for session that did one of
// dids.
func (st *story) wantLog(event, session string, dids ...string) {
	t := st.t
	t.Helper()
	f, err := os.Open(st.logPath)
	if err != nil {
		t.Fatalf("hook log: %v", err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct{ Event, Session, Did, Error string }
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			t.Fatalf("hook log line %q is not JSON", sc.Text())
		}
		if r.Event == event && r.Session == session && slices.Contains(dids, r.Did) && r.Error == "" {
			return
		}
		lines = append(lines, sc.Text())
	}
	t.Errorf("no %s hook for %s that did %q; the log:\n%s", event, session, dids, strings.Join(lines, "\n"))
}

// wantBriefSent: a request since the first `from` carried SessionStart's
// brief of session, and none named a decoy.
func (st *story) wantBriefSent(from int, session string) {
	t := st.t
	t.Helper()
	head := "this conversation works on session " + session
	for _, r := range st.stub.Requests()[from:] {
		text := r.Text()
		for _, d := range st.decoys {
			if strings.Contains(text, "works on session "+d) {
				t.Errorf("the model was given decoy %s's brief", d)
			}
		}
		if strings.Contains(text, head) && strings.Contains(text, "Never touch the CI config.") {
			return
		}
	}
	t.Errorf("no request since #%d carried the brief of %s", from, session)
}

func anyList(v any) []map[string]any {
	var out []map[string]any
	l, _ := v.([]any)
	for _, x := range l {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func anyStrings(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
