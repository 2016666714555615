package modelstub

import (
	"strings"
	"testing"
)

// TestDecide: the plan's step follows the calls made since its prompt; a
// deferred tool is loaded first (not a step); a compaction's summary
// carries the count past the calls it replaced.
func TestDecide(t *testing.T) {
	plan := Plan{Marker: "[[go]]", Steps: []Step{
		func(*Request) Reply { return Reply{Call: &ToolCall{Name: "mcp__c__a"}} },
		func(*Request) Reply { return Reply{Call: &ToolCall{Name: "mcp__c__b"}} },
	}, Final: "end"}
	anth := func(body string) *Request {
		r, err := parseAnthropic([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	tools := `"tools":[{"name":"ToolSearch"},{"name":"mcp__c__a","defer_loading":true},{"name":"mcp__c__b"}]`
	r := anth(`{` + tools + `,"messages":[{"role":"user","content":"[[go]] now"}]}`)
	if got := decide(r, []Plan{plan}); got.Call == nil || got.Call.Name != toolSearch || got.Call.Args["query"] != "select:mcp__c__a" {
		t.Errorf("deferred tool: %+v", got)
	}
	r = anth(`{` + tools + `,"messages":[{"role":"user","content":"[[go]] now"},
		{"role":"assistant","content":[{"type":"tool_use","id":"1","name":"ToolSearch","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"1","content":[{"type":"tool_reference","tool_name":"mcp__c__a"}]}]}]}`)
	if got := decide(r, []Plan{plan}); got.Call == nil || got.Call.Name != "mcp__c__a" {
		t.Errorf("loaded tool: %+v", got)
	}
	r = anth(`{` + tools + `,"messages":[{"role":"user","content":"[[go]] now"},
		{"role":"assistant","content":[{"type":"tool_use","id":"2","name":"mcp__c__a","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"2","content":"{\"x\":1}"}]}]}`)
	if got := decide(r, []Plan{plan}); got.Call == nil || got.Call.Name != "mcp__c__b" {
		t.Errorf("second step: %+v", got)
	}
	if v := r.LastJSON("a"); v["x"] != float64(1) {
		t.Errorf("LastJSON %v", v)
	}
	resp := func(body string) *Request {
		r, err := parseResponses([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// Codex: a compaction keeps the prompt, drops the calls, adds the summary.
	r = resp(`{"tools":[{"type":"namespace","name":"mcp__c","description":"INSTR","tools":[{"type":"function","name":"a"}]}],
		"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"[[go]] now"}]},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"summary [[steps:2]]"}]}]}`)
	if got := decide(r, []Plan{plan}); got.Text != "end" {
		t.Errorf("after compaction: %+v", got)
	}
	if r.ToolDocs != "INSTR\n\n" || r.Tools[0] != "mcp__c__a" {
		t.Errorf("namespace: %q %v", r.ToolDocs, r.Tools)
	}
	// Codex with a model that searches tools: the namespace is not listed
	// until tool_search brings it.
	search := `"tools":[{"type":"tool_search","execution":"client"}]`
	r = resp(`{` + search + `,"input":[{"type":"message","role":"user","content":"[[go]] now"}]}`)
	if got := decide(r, []Plan{plan}); got.Call == nil || got.Call.Name != toolSearchCodex || !strings.HasPrefix(got.Call.Args["query"].(string), "a ") {
		t.Errorf("Codex deferred tool: %+v", got)
	}
	r = resp(`{` + search + `,"input":[{"type":"message","role":"user","content":"[[go]] now"},
		{"type":"tool_search_call","call_id":"s","execution":"client","arguments":{"query":"a"}},
		{"type":"tool_search_output","call_id":"s","execution":"client","tools":[{"type":"namespace","name":"mcp__c","description":"INSTR","tools":[{"type":"function","name":"a"}]}]}]}`)
	if got := decide(r, []Plan{plan}); got.Call == nil || got.Call.Name != "mcp__c__a" || !strings.Contains(r.ToolDocs, "INSTR") {
		t.Errorf("Codex loaded tool: %+v (docs %q)", got, r.ToolDocs)
	}
	r = resp(`{"input":[{"type":"message","role":"user","content":"You are performing a CONTEXT CHECKPOINT COMPACTION."}]}`)
	if got := decide(r, []Plan{plan}); !strings.Contains(got.Text, stepsMark+"0]]") {
		t.Errorf("compaction: %+v", got)
	}
	r = resp(`{"input":[{"type":"function_call","name":"a","namespace":"mcp__c","call_id":"k","arguments":"{}"},
		{"type":"function_call_output","call_id":"k","output":"Wall time: 0.01 seconds\nOutput:\n{\"y\":2}"}]}`)
	if v := r.LastJSON("a"); v["y"] != float64(2) {
		t.Errorf("Codex result: %v", r.Results("a"))
	}
}
