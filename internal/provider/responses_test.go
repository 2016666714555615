package provider_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo/internal/provider"
	"github.com/continuo-dev/continuo/internal/provider/providertest"
)

// TestResponsesRequest: the one request a turn sends, field by field.
func TestResponsesRequest(t *testing.T) {
	for _, c := range []struct {
		max  int
		want map[string]any
	}{
		{0, map[string]any{"model": "test-model", "input": "Say hello.", "stream": true}},
		{50, map[string]any{"model": "test-model", "input": "Say hello.", "stream": true, "max_output_tokens": 50.0}},
	} {
		wantRequest(t, provider.KindResponses, "/v1/responses", c.max, c.want)
	}
}

// sse frames events as the Responses API does: "event:" and "data:".
func sse(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		var typ struct {
			Type string `json:"type"`
		}
		json.Unmarshal([]byte(e), &typ)
		b.WriteString("event: " + typ.Type + "\ndata: " + e + "\n\n")
	}
	return b.String()
}

const (
	rDelta     = `{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"hi","sequence_number":4}`
	rCompleted = `{"type":"response.completed","sequence_number":9,"response":{"id":"resp_1","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}],"usage":{"input_tokens":3,"output_tokens":1,"total_tokens":4}}}`
)

// TestResponsesDialects: streams as other servers (and odd ones) send
// them, through Script.Raw.
func TestResponsesDialects(t *testing.T) {
	usage := &provider.Usage{InputTokens: 3, OutputTokens: 1, TotalTokens: 4}
	runDialects(t, provider.KindResponses, "/v1/responses", []dialect{
		{name: "the real framing", raw: sse(rDelta, rCompleted), want: provider.Result{Usage: usage}, text: "hi"},
		{name: "no event lines", raw: "data: " + rDelta + "\n\ndata: " + rCompleted + "\n\n", want: provider.Result{Usage: usage}, text: "hi"},
		{name: "event names only", raw: "event: response.output_text.delta\ndata: {\"delta\":\"hi\"}\n\nevent: response.completed\ndata: {}\n\n",
			want: provider.Result{}, text: "hi"},
		{name: "type wins over the event name", raw: "event: response.completed\ndata: " + rDelta + "\n\n" + sse(rCompleted), want: provider.Result{Usage: usage}, text: "hi"},
		{name: "unknown events and shapes ignored",
			raw: sse(`{"type":"response.output_text.annotation.added","annotation":{"type":"url_citation"},"delta":{"odd":1}}`,
				`{"type":"response.custom.thing","delta":[1,2]}`, rDelta, rCompleted),
			want: provider.Result{Usage: usage}, text: "hi"},
		{name: "reasoning is a thought", raw: sse(`{"type":"response.reasoning_summary_text.delta","delta":"thinking"}`, rDelta, rCompleted),
			want: provider.Result{Usage: usage}, text: "hi", events: [][2]string{{"thought", "thinking"}}},
		{name: "odd usage is no usage",
			raw:  sse(rDelta, `{"type":"response.completed","response":{"usage":{"input_tokens":"many"}}}`),
			want: provider.Result{}, text: "hi"},
		{name: "total tokens summed when absent",
			raw:  sse(rDelta, `{"type":"response.completed","response":{"usage":{"input_tokens":3,"output_tokens":1}}}`),
			want: provider.Result{Usage: usage}, text: "hi"},
		{name: "what follows completed is not read", raw: sse(rDelta, rCompleted) + "data: {cut\n\n", end: providertest.EndHang,
			want: provider.Result{Usage: usage}, text: "hi"},
		{name: "refusal only in the completed output",
			raw:  sse(`{"type":"response.completed","response":{"output":[{"type":"message","content":[{"type":"refusal","refusal":"no"}]}],"usage":{"input_tokens":3,"output_tokens":1,"total_tokens":4}}}`),
			want: provider.Result{ErrorKind: "refusal", Usage: usage}},
		{name: "refusal then failed", raw: sse(`{"type":"response.refusal.delta","delta":"no"}`, `{"type":"response.failed","response":{}}`),
			want: provider.Result{ErrorKind: "refusal"}, text: "no"},
		{name: "refusal then a cut", raw: sse(`{"type":"response.refusal.delta","delta":"no"}`), end: providertest.EndDrop,
			want: provider.Result{ErrorKind: "refusal"}, text: "no"},
		{name: "failed with usage", raw: sse(rDelta, `{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error"},"usage":{"input_tokens":3,"output_tokens":1,"total_tokens":4}}}`),
			want: provider.Result{ErrorKind: "stream_error", Usage: usage}, text: "hi"},
		{name: "done marker without completion", raw: sse(rDelta) + "data: [DONE]\n\n", end: providertest.EndHang,
			want: provider.Result{ErrorKind: "no_completion"}, text: "hi"},
		{name: "data not json", raw: "data: hello\n\n", want: provider.Result{ErrorKind: "malformed_stream"}},
		{name: "type not a string", raw: "data: {\"type\":7}\n\n", want: provider.Result{ErrorKind: "malformed_stream"}},
		{name: "delta not a string", raw: sse(`{"type":"response.output_text.delta","delta":{"text":"hi"}}`), want: provider.Result{ErrorKind: "malformed_stream"}},
		{name: "a line over 1 MiB", raw: "data: {\"type\":\"response.output_text.delta\",\"delta\":\"" + strings.Repeat("x", 1<<20) + "\"}\n\n" + sse(rCompleted),
			want: provider.Result{ErrorKind: "malformed_stream"}},
		{name: "an event without its blank line", raw: sse(rDelta) + "data: " + rCompleted + "\n", want: provider.Result{ErrorKind: "no_completion"}, text: "hi"},
		{name: "empty body", raw: "\n", want: provider.Result{ErrorKind: "no_completion"}},
	})
}
