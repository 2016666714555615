package mcpserver_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func promptText(t *testing.T, res *mcp.GetPromptResult) string {
	t.Helper()
	if len(res.Messages) != 1 {
		t.Fatalf("prompt has %d messages, want 1", len(res.Messages))
	}
	tc, ok := res.Messages[0].Content.(*mcp.TextContent)
	if !ok {
		t.Fatalf("prompt content is %T", res.Messages[0].Content)
	}
	return tc.Text
}

// TestPrompts: continue_work lists the caller's candidate sessions and
// never picks one among several; with a session it carries that session's
// brief; save_handoff asks for the handoff-tagged progress note. Another
// group's sessions appear nowhere.
func TestPrompts(t *testing.T) {
	f := newFixture(t)
	alice := f.token("alice", sessionScopes...)
	mallory := f.token("mallory", sessionScopes...)
	f.project("demo", map[string]continuo.Access{"alice": continuo.AccessWrite, "mallory": continuo.AccessWrite})
	a, m := f.connect(alice), f.connect(mallory)
	s1 := a.ok("work_on_project", map[string]any{"project": "demo", "instruction": "Port the parser", "title": "port the parser"})
	a.ok("work_on_project", map[string]any{"project": "demo", "instruction": "Fix the flaky test", "title": "fix the flaky test"})
	m.ok("work_on_project", map[string]any{"project": "demo", "instruction": "rival work", "title": "rival secret plan"})

	res, err := a.cs.GetPrompt(f.ctx, &mcp.GetPromptParams{Name: "continue_work", Arguments: map[string]string{"project": "demo"}})
	if err != nil {
		t.Fatal(err)
	}
	text := promptText(t, res)
	for _, want := range []string{"port the parser", "fix the flaky test", "2 active session(s)", "Do not pick one yourself"} {
		if !strings.Contains(text, want) {
			t.Errorf("continue_work lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "rival") {
		t.Errorf("continue_work shows another group's session:\n%s", text)
	}

	sid := s1.str("session_id")
	res, err = a.cs.GetPrompt(f.ctx, &mcp.GetPromptParams{Name: "continue_work", Arguments: map[string]string{"session": sid}})
	if err != nil {
		t.Fatal(err)
	}
	if text := promptText(t, res); !strings.Contains(text, `"session_id":"`+sid+`"`) || !strings.Contains(text, "work_on_project(session_id=") {
		t.Errorf("continue_work with a session lacks its brief or the resume call:\n%s", text)
	}
	if _, err := m.cs.GetPrompt(f.ctx, &mcp.GetPromptParams{Name: "continue_work", Arguments: map[string]string{"session": sid}}); err == nil ||
		!strings.Contains(err.Error(), "not_found") {
		t.Errorf("continue_work on another group's session: %v, want not_found", err)
	}

	res, err = a.cs.GetPrompt(f.ctx, &mcp.GetPromptParams{Name: "save_handoff", Arguments: map[string]string{"session": sid}})
	if err != nil {
		t.Fatal(err)
	}
	if text := promptText(t, res); !strings.Contains(text, `tags=["handoff"]`) || !strings.Contains(text, sid) {
		t.Errorf("save_handoff: %s", text)
	}
}

// TestHandoffResources: the brief of each session the caller can read is a
// resource; resources/list lists the caller's own active sessions, and a
// read returns exactly the brief read_session_handoff returns. Another
// group's session is not found.
func TestHandoffResources(t *testing.T) {
	f := newFixture(t)
	alice := f.token("alice", sessionScopes...)
	mallory := f.token("mallory", sessionScopes...)
	f.project("demo", map[string]continuo.Access{"alice": continuo.AccessWrite, "mallory": continuo.AccessRead})
	a, m := f.connect(alice), f.connect(mallory)
	sid := a.ok("work_on_project", map[string]any{"project": "demo", "instruction": "Port the parser"}).str("session_id")
	a.ok("post_session_message", map[string]any{"session_id": sid, "kind": "decision", "text": "use a table-driven lexer"})

	list, err := a.cs.ListResources(f.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	uri := "continuo://sessions/" + sid + "/handoff"
	if len(list.Resources) != 1 || list.Resources[0].URI != uri || list.Resources[0].Name != "~s1" {
		t.Fatalf("resources/list: %+v", list.Resources)
	}
	if ml, err := m.cs.ListResources(f.ctx, nil); err != nil || len(ml.Resources) != 0 {
		t.Errorf("another group lists %v (%v)", ml, err)
	}
	read, err := a.cs.ReadResource(f.ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatal(err)
	}
	brief := a.ok("read_session_handoff", map[string]any{"session_id": sid}).Data["handoff_brief"]
	want, _ := json.Marshal(brief)
	var got any
	if len(read.Contents) != 1 || read.Contents[0].MIMEType != "application/json" || json.Unmarshal([]byte(read.Contents[0].Text), &got) != nil {
		t.Fatalf("resources/read: %+v", read.Contents)
	}
	if g, _ := json.Marshal(got); string(g) != string(want) {
		t.Errorf("the resource is not the brief:\n%s\n%s", g, want)
	}
	if _, err := a.cs.ReadResource(f.ctx, &mcp.ReadResourceParams{URI: "continuo://sessions/~s1/handoff"}); err != nil {
		t.Errorf("read by ~sN: %v", err)
	}
	if _, err := m.cs.ReadResource(f.ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
		t.Error("another group read the brief")
	}
	if _, err := a.cs.ReadResource(f.ctx, &mcp.ReadResourceParams{URI: "continuo://sessions/" + sid + "/other"}); err == nil {
		t.Error("a URI outside the template was read")
	}
}

// TestAnswerResolvesQuestion: an answer with reply_to an open question
// resolves it, and the listing says which answer did.
func TestAnswerResolvesQuestion(t *testing.T) {
	f := newFixture(t)
	alice := f.token("alice", sessionScopes...)
	f.project("demo", map[string]continuo.Access{"alice": continuo.AccessWrite})
	a := f.connect(alice)
	sid := a.ok("work_on_project", map[string]any{"project": "demo", "instruction": "Port the parser"}).str("session_id")
	q := a.ok("post_session_message", map[string]any{"session_id": sid, "kind": "question", "text": "Keep the old flag?"}).str("message", "message_id")
	ans := a.ok("post_session_message", map[string]any{"session_id": sid, "kind": "answer", "text": "No, drop it.", "reply_to": q}).str("message", "message_id")
	list := a.ok("list_session_messages", map[string]any{"session_id": sid, "kinds": []string{"question"}})
	msgs := list.Data["messages"].([]any)
	m := msgs[0].(map[string]any)
	if m["status"] != "resolved" || m["resolved_by"] != ans || m["resolution"] != "No, drop it." {
		t.Errorf("the answered question: %v, want resolved by %s", m, ans)
	}
}
