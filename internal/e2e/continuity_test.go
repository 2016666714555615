package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestContinuity is the whole story of CONTRACT.md §3–§4 across processes:
// one conversation records its work, the server restarts, a second
// conversation with another credential of the same group, over the other
// transport, finds the session, reads the brief and resumes it, and another
// group sees nothing. It runs once with the first conversation on HTTP and
// once on stdio.
func TestContinuity(t *testing.T) {
	for _, first := range []string{"http", "stdio"} {
		t.Run(first, func(t *testing.T) { continuity(t, first) })
	}
}

func continuity(t *testing.T, first string) {
	repo := gitRepo(t)
	data := filepath.Join(t.TempDir(), "data")
	srv := start(t, data, repo)
	if !strings.HasPrefix(srv.Admin, "cto_pat_") || srv.Project == "" {
		t.Fatalf("first start: admin token %q, project %q", srv.Admin, srv.Project)
	}

	cli(t, data, "group", "create", "team")
	cli(t, data, "group", "create", "rivals")
	cli(t, data, "principal", "create", "alice", "--group", "team")
	cli(t, data, "principal", "create", "bob", "--group", "team")
	cli(t, data, "principal", "create", "mallory", "--group", "rivals")
	cli(t, data, "project", "grant", "demo", "team:write")
	cli(t, data, "project", "grant", "demo", "rivals:write")
	alice := token(t, data, "alice", "sessions:read,sessions:write")
	mallory := token(t, data, "mallory", "sessions:read,sessions:write")

	// conversation connects a principal over one transport.
	conversation := func(transport, principal, tok string) *mcp.ClientSession {
		if transport == "http" {
			return connect(t, srv.URL, tok)
		}
		return connectStdio(t, data, repo, "--principal", principal, "--scopes", "sessions:read,sessions:write")
	}
	second := map[string]string{"http": "stdio", "stdio": "http"}[first]
	bobToken := token(t, data, "bob", "sessions:read,sessions:write")

	a := conversation(first, "alice", alice)
	projects := must(t, a, "list_projects", nil)["projects"].([]any)
	if len(projects) != 1 || projects[0].(map[string]any)["name"] != "demo" {
		t.Fatalf("list_projects: %v", projects)
	}
	started := must(t, a, "work_on_project", map[string]any{"project": "demo", "instruction": "Migrate the store to SQLite WAL"})
	sid, ref := started["session_id"].(string), started["session_ref"].(string)
	if started["resumed"] != false || ref != "~s1" {
		t.Fatalf("work_on_project: %v", started)
	}
	dec := must(t, a, "post_session_message", map[string]any{"session_id": sid, "kind": "decision",
		"text": "Use WAL with synchronous=FULL", "delivery_key": "d1"})["message"].(map[string]any)
	must(t, a, "post_session_message", map[string]any{"session_id": ref, "kind": "progress", "text": "schema written", "delivery_key": "p1"})
	todo := must(t, a, "post_session_message", map[string]any{"session_id": sid, "kind": "todo", "text": "write the crash test"})["message"].(map[string]any)
	must(t, a, "post_session_message", map[string]any{"session_id": sid, "kind": "risk", "text": "fsync cost on slow disks"})
	must(t, a, "post_session_message", map[string]any{"session_id": sid, "kind": "note",
		"text": "deploy with OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx please"})
	repl := must(t, a, "post_session_message", map[string]any{"session_id": sid, "kind": "decision",
		"text": "Use WAL with synchronous=FULL and group commit", "supersedes": dec["message_id"], "delivery_key": "d2"})
	if r := call(t, a, "post_session_message", map[string]any{"session_id": sid, "kind": "decision", "text": "other", "delivery_key": "d1"}); r.code() != "conflict" {
		t.Fatalf("changed payload under a used key: %v", r.Data)
	}

	// Restart: a real process restart on the same data directory.
	srv.stop()
	srv = start(t, data, repo)
	if srv.Admin != "" {
		t.Fatal("second start printed a new admin token")
	}
	a = conversation(first, "alice", alice)
	again := must(t, a, "post_session_message", map[string]any{"session_id": sid, "kind": "decision",
		"text": "Use WAL with synchronous=FULL and group commit", "supersedes": dec["message_id"], "delivery_key": "d2"})
	if again["replayed"] != true || again["message"].(map[string]any)["message_id"] != repl["message"].(map[string]any)["message_id"] {
		t.Fatalf("replay after restart: %v", again)
	}

	// Bob, same group, another credential and the other transport.
	b := conversation(second, "bob", bobToken)
	list := must(t, b, "list_sessions", map[string]any{"project": "demo"})
	if list["total_count"].(float64) != 1 {
		t.Fatalf("bob list_sessions: %v", list)
	}
	h1 := must(t, b, "read_session_handoff", map[string]any{"session_id": sid})
	h2 := must(t, b, "read_session_handoff", map[string]any{"session_id": ref, "project": "demo"})
	b1, _ := json.Marshal(h1["handoff_brief"])
	b2, _ := json.Marshal(h2["handoff_brief"])
	if string(b1) != string(b2) || len(b1) > 8192 {
		t.Fatalf("brief not deterministic or too large (%d bytes)", len(b1))
	}
	brief := string(b1)
	for _, want := range []string{"group commit", "schema written", "write the crash test", "fsync cost", `"superseded"`, `"branch":"main"`, `"complete":true`} {
		if !strings.Contains(brief, want) {
			t.Errorf("brief lacks %q: %s", want, brief)
		}
	}
	if strings.Contains(brief, "sk-proj-abcdef") {
		t.Fatalf("secret in brief: %s", brief)
	}
	msgs := must(t, b, "list_session_messages", map[string]any{"session_id": sid, "kinds": []string{"note"}})
	if s, _ := json.Marshal(msgs); strings.Contains(string(s), "sk-proj-abcdef") {
		t.Fatalf("secret in list_session_messages: %s", s)
	}
	resumed := must(t, b, "work_on_project", map[string]any{"session_id": ref, "instruction": "Finish the crash test"})
	if resumed["resumed"] != true || resumed["session_id"] != sid || resumed["handoff_brief"] == nil {
		t.Fatalf("resume: %v", resumed)
	}
	must(t, b, "resolve_session_message", map[string]any{"session_id": sid, "message_id": todo["message_id"], "resolution": "done"})

	// A dirty checkout shows in the brief.
	if err := os.WriteFile(filepath.Join(repo, "new.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	h3 := must(t, a, "read_session_handoff", map[string]any{"session_id": sid})
	ws := h3["handoff_brief"].(map[string]any)["workspace"].(map[string]any)
	if ws["dirty"] != true || ws["status"] != "available" {
		t.Fatalf("workspace after an edit: %v", ws)
	}
	latest := h3["handoff_brief"].(map[string]any)["task"].(map[string]any)["latest_instruction"].(map[string]any)["excerpt"]
	if latest != "Finish the crash test" {
		t.Fatalf("latest instruction: %v", latest)
	}

	// Another group sees nothing, not even counts.
	m := connect(t, srv.URL, mallory)
	if l := must(t, m, "list_sessions", map[string]any{"project": "demo"}); l["total_count"].(float64) != 0 {
		t.Fatalf("rival list_sessions: %v", l)
	}
	for _, id := range []string{sid, ref} {
		if r := call(t, m, "read_session_handoff", map[string]any{"session_id": id}); r.code() != "not_found" {
			t.Fatalf("rival read_session_handoff(%s): %v", id, r.Data)
		}
	}

	// Closing: idempotent, readable afterwards, never resumed.
	c1 := must(t, a, "close_session", map[string]any{"session_id": sid, "summary": "done"})
	c2 := must(t, a, "close_session", map[string]any{"session_id": sid})
	if c1["changed"] != true || c2["changed"] != false {
		t.Fatalf("close twice: %v %v", c1, c2)
	}
	if r := call(t, a, "post_session_message", map[string]any{"session_id": sid, "kind": "note", "text": "late"}); r.code() != "session_closed" {
		t.Fatalf("post to closed: %v", r.Data)
	}
	if r := call(t, a, "work_on_project", map[string]any{"session_id": sid, "instruction": "more"}); r.code() != "session_closed" {
		t.Fatalf("resume closed: %v", r.Data)
	}
	must(t, a, "read_session_handoff", map[string]any{"session_id": sid})

	// The probes and the metrics endpoint.
	for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ready", "/metrics": "continuo_tool_calls_total"} {
		resp, err := http.Get(srv.Base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d %s", path, resp.StatusCode, body)
		}
	}
}

// TestUnauthorized: /mcp without a valid token is 401 with a challenge.
func TestUnauthorized(t *testing.T) {
	srv := start(t, filepath.Join(t.TempDir(), "data"), t.TempDir())
	for _, auth := range []string{"", "Bearer cto_pat_nope", "Basic abc"} {
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") || !strings.Contains(string(body), `"unauthorized"`) {
			t.Errorf("auth %q: %d %q %s", auth, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
		}
	}
	// A revoked token stops working. On SQLite the CLI is another process,
	// whose revocation the server does not hear of: its bearer cache
	// trusts an entry for a second at most (docs/OPERATIONS.md), so poll,
	// with a deadline, until the server refuses.
	tokID := cliJSON(t, srv.dataDir, "token", "create", "--principal", "eve", "--scopes", "sessions:read")
	c := connect(t, srv.URL, tokID["token"].(string))
	must(t, c, "list_projects", nil)
	cli(t, srv.dataDir, "token", "revoke", tokID["token_id"].(string))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := c.ListTools(t.Context(), nil); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("calls with a revoked token still succeed")
		}
		time.Sleep(20 * time.Millisecond) // a poll tick: nothing signals an entry's expiry
	}
}
