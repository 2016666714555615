package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/continuo-dev/continuo/internal/workflow"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestWorkingSet: read_session_working_set over MCP holds what is in force
// in full — constraints verbatim, decisions in force (naming what they
// supersede; the superseded one only counted), the answered question with
// its answer, open work, the current state — and nothing historical. A
// large working set comes in pages of at most 64 KiB whose cursors cover
// every entry exactly once, the same bytes on every read; a cursor of an
// earlier state is a conflict; the resource is the first page; another
// group gets not_found from the tool and the resource alike.
func TestWorkingSet(t *testing.T) {
	f := newFixture(t)
	alice := f.connect(f.token("alice", sessionScopes...))
	mallory := f.connect(f.token("mallory", sessionScopes...))
	f.project("demo", map[string]continuo.Access{"alice": continuo.AccessWrite, "mallory": continuo.AccessWrite})
	sid := alice.ok("work_on_project", obj{"project": "demo", "instruction": "Port the parser"}).str("session_id")
	post := func(args obj) string {
		args["session_id"] = sid
		return alice.ok("post_session_message", args).str("message", "message_id")
	}
	guidance := strings.Repeat("Never push to main; ", 40) + "keep the API."
	g := post(obj{"kind": "guidance", "text": guidance})
	old := post(obj{"kind": "decision", "text": "use JSON"})
	fix := post(obj{"kind": "decision", "text": "use JSON Lines instead", "supersedes": old})
	q := post(obj{"kind": "question", "text": "which port?"})
	ans := post(obj{"kind": "answer", "text": "8080", "reply_to": q})
	todo := post(obj{"kind": "todo", "text": "write the changelog per " + fix})
	for i := range 30 {
		post(obj{"kind": "progress", "text": fmt.Sprintf("progress %d", i)})
	}
	state := post(obj{"kind": "progress", "text": "DONE: lexer. NEXT: printer.", "tags": []string{"handoff"}})

	ws := alice.ok("read_session_working_set", obj{"session_id": "~s1"})
	text := ws.Text
	for _, want := range []string{guidance, "use JSON Lines instead", `"supersedes":"` + old + `"`, "which port?", `"message_id":"` + ans + `"`,
		`"text":"8080"`, todo, state, "DONE: lexer. NEXT: printer.", `"superseded_decisions":1`, `"next_cursor":null`, g} {
		if !strings.Contains(text, want) {
			t.Errorf("working set lacks %q:\n%s", want, text)
		}
	}
	for _, never := range []string{`"text":"use JSON"`, "progress 29"} {
		if strings.Contains(text, never) {
			t.Errorf("working set shows %q, which is not in force:\n%s", never, text)
		}
	}
	if ws.num("working_set", "not_in_force", "progress") != 30 || ws.num("working_set", "totals", "decisions") != 1 ||
		ws.num("working_set", "totals", "pages") != 1 {
		t.Errorf("counts: %s", text)
	}

	// The resource is the first page.
	uri := "continuo://sessions/" + sid + "/working-set"
	read, err := alice.cs.ReadResource(f.ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatal(err)
	}
	if want := mustJSON(t, ws.Data["working_set"]); len(read.Contents) != 1 || compactJSON(t, read.Contents[0].Text) != compactJSON(t, want) {
		t.Errorf("the resource is not the first page:\n%s\n%s", read.Contents[0].Text, want)
	}

	// Another group: not found, and nothing of alice's in the answer.
	for _, id := range []string{sid, "~s1"} {
		r := mallory.fails("read_session_working_set", obj{"session_id": id}, "not_found")
		if strings.Contains(r.Text, "parser") {
			t.Errorf("not_found leaks: %s", r.Text)
		}
	}
	if _, err := mallory.cs.ReadResource(f.ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
		t.Error("another group read the working set resource")
	}

	// Many long decisions: pages.
	var want []string
	for i := range 40 {
		want = append(want, post(obj{"kind": "decision", "text": fmt.Sprintf("decision %02d: ", i) + strings.Repeat("<&> ", 1900)}))
	}
	want = append(want, fix)
	pages := readAllPages(t, alice, sid)
	if len(pages) < 3 {
		t.Fatalf("%d pages for 41 decisions of 7.6 KB escaping to 40 KB", len(pages))
	}
	var seen []string
	for i, p := range pages {
		if len(p.Text) > workflow.MaxWorkingSetPage || !utf8.ValidString(p.Text) {
			t.Errorf("page %d: %d bytes", i+1, len(p.Text))
		}
		if int(p.num("working_set", "page")) != i+1 || int(p.num("working_set", "totals", "pages")) != len(pages) {
			t.Errorf("page %d says page %v of %v", i+1, p.num("working_set", "page"), p.num("working_set", "totals", "pages"))
		}
		ds, _ := dig(p.Data, "working_set", "decisions").([]any)
		for _, d := range ds {
			seen = append(seen, d.(map[string]any)["message_id"].(string))
		}
	}
	slices.Sort(seen)
	slices.Sort(want)
	if !slices.Equal(seen, want) {
		t.Fatalf("the pages hold decisions %v, want each of %v once", seen, want)
	}
	again := readAllPages(t, alice, sid)
	for i := range pages {
		if again[i].Text != pages[i].Text {
			t.Fatalf("page %d differs between two reads of one state", i+1)
		}
	}
	// The session moves on: the second page's cursor no longer fits.
	cursor := pages[0].str("working_set", "next_cursor")
	post(obj{"kind": "decision", "text": "a late decision"})
	if r := alice.fails("read_session_working_set", obj{"session_id": sid, "cursor": cursor}, "conflict"); r.details()["reason"] != "working_set_changed" {
		t.Errorf("stale cursor: %v", r.Data)
	}
	// Nor does a cursor of one session read another's.
	other := alice.ok("work_on_project", obj{"project": "demo", "instruction": "other"}).str("session_id")
	alice.fails("read_session_working_set", obj{"session_id": other, "cursor": cursor}, "invalid_input")
}

// readAllPages follows next_cursor from the first page to the last.
func readAllPages(t *testing.T, c *client, sid string) []result {
	t.Helper()
	var out []result
	args := obj{"session_id": sid}
	for len(out) < 100 {
		r := c.ok("read_session_working_set", args)
		out = append(out, r)
		next, _ := dig(r.Data, "working_set", "next_cursor").(string)
		if next == "" {
			return out
		}
		args = obj{"session_id": sid, "cursor": next}
	}
	t.Fatal("the working set does not end")
	return nil
}

func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TestWhatReachesTheModel (CONTRACT.md §1): the server's instructions and
// every tool's description arrive whole — at most 2,048 characters each,
// where clients cut — and lead with what a model must know first: the
// instructions with the recovery sequence (list_projects → list_sessions →
// ask which → read_session_handoff → the working set when the brief cut
// anything → work_on_project), each description with when to use the
// tool. Tool names a client also has built in (Codex CLI's create_goal,
// get_goal, update_goal) are named as Continuo's. Every combination of
// toolsets gets its own instructions (TestInstructionsPerToolsets checks
// what each says); /mcp gets the default's.
func TestWhatReachesTheModel(t *testing.T) {
	f := newFixture(t)
	tok := f.token("tim", sessionScopes...)
	c := f.connectEndpoint(tok, "/mcp", "", "")
	ins := c.cs.InitializeResult().Instructions
	if n := utf8.RuneCountInString(ins); n > workflow.MaxGuideChars || n == 0 {
		t.Errorf("instructions are %d characters, over %d", n, workflow.MaxGuideChars)
	}
	if ins != mcpserver.Instructions(mcpserver.DefaultToolsets) {
		t.Errorf("/mcp: the instructions are not the default toolsets':\n%s", ins)
	}
	for sets := mcpserver.Toolsets(1); sets <= mcpserver.AllToolsets; sets++ {
		got := f.connectEndpoint(tok, "/mcp", sets.String(), "2025-11-25").cs.InitializeResult().Instructions
		if got != mcpserver.Instructions(sets) || utf8.RuneCountInString(got) > workflow.MaxGuideChars {
			t.Errorf("%s: %d characters of instructions, not the toolsets' own:\n%s", sets, utf8.RuneCountInString(got), got)
		}
	}
	order := []string{"list_projects", "list_sessions", "ask the user which", "read_session_handoff", "read_session_working_set",
		"work_on_project(session_id", "post_session_message"}
	last := -1
	for _, step := range order {
		i := strings.Index(ins, step)
		if i <= last {
			t.Errorf("instructions: %q is not after %q (the recovery sequence comes first):\n%s", step, order[max(0, slices.Index(order, step)-1)], ins)
		}
		last = i
	}
	for _, name := range []string{"create_goal", "get_goal", "update_goal"} {
		if !strings.Contains(ins, "Continuo's "+name) && !strings.Contains(ins, "Continuo's create_goal, checkpoint_goal, revise_goal_plan and "+name) {
			t.Errorf("instructions do not name %s as Continuo's", name)
		}
	}
	res, err := f.connectEndpoint(tok, "/mcp/x/all", "", "").cs.ListTools(f.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The swarm's tools name who calls them (Owner:, Worker:, …): the
	// conversation that plays that part is when to use them. Clients that
	// defer schemas show a tool's name and first sentence: it carries the
	// choice.
	when := []string{"Use ", "Owner: ", "Worker: ", "New conversation: ", "Requesting conversation: "}
	for _, tl := range res.Tools {
		if n := utf8.RuneCountInString(tl.Description); n > 2048 {
			t.Errorf("%s: description of %d characters, over 2,048", tl.Name, n)
		}
		if !slices.ContainsFunc(when, func(p string) bool { return strings.HasPrefix(tl.Description, p) }) {
			t.Errorf("%s: the first sentence does not say when to use it: %q", tl.Name, tl.Description)
		}
		if slices.Contains([]string{"create_goal", "get_goal", "update_goal"}, tl.Name) && !strings.Contains(tl.Description, "Continuo") {
			t.Errorf("%s: shares its name with a client's built-in tool, and does not say it is Continuo's: %q", tl.Name, tl.Description)
		}
	}
}
