package provider_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo/internal/provider"
	"github.com/continuo-dev/continuo/internal/provider/providertest"
)

// TestChatRequest: the one request a turn sends, field by field.
func TestChatRequest(t *testing.T) {
	base := func() map[string]any {
		return map[string]any{
			"model":          "test-model",
			"messages":       []any{map[string]any{"role": "user", "content": "Say hello."}},
			"stream":         true,
			"stream_options": map[string]any{"include_usage": true},
		}
	}
	withMax := base()
	withMax["max_tokens"] = 50.0
	for _, c := range []struct {
		max  int
		want map[string]any
	}{{0, base()}, {50, withMax}} {
		wantRequest(t, provider.KindChat, "/v1/chat/completions", c.max, c.want)
	}
}

// TestChatEnd: how the end of a stopped stream decides success.
func TestChatEnd(t *testing.T) {
	usage := &provider.Usage{InputTokens: 7, OutputTokens: 1, TotalTokens: 8}
	for _, c := range []struct {
		name   string
		script providertest.Script
		want   provider.Result
	}{
		{"stop, usage, [DONE]", providertest.Script{}, provider.Result{Usage: usage}},
		{"stop, usage, clean end", providertest.Script{OmitDone: true}, provider.Result{Usage: usage}},
		{"stop, [DONE]", providertest.Script{OmitUsage: true}, provider.Result{}},
		{"stop, clean end", providertest.Script{OmitUsage: true, OmitDone: true}, provider.Result{ErrorKind: "no_completion"}},
		{"length, clean end", providertest.Script{End: providertest.EndIncomplete, OmitUsage: true, OmitDone: true}, provider.Result{ErrorKind: "incomplete"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.script.Deltas = []string{"hi"}
			srv := providertest.NewServer(t, c.script)
			rec := newRecorder()
			res := run(t, t.Context(), newProvider(t, provider.KindChat, srv.BaseURL()), rec)
			if !reflect.DeepEqual(res, c.want) || rec.text() != "hi" {
				t.Errorf("result %+v (usage %+v), text %q; want %+v (usage %+v)", res, res.Usage, rec.text(), c.want, c.want.Usage)
			}
		})
	}
}

// data frames chunks as Chat Completions streams do.
func data(chunks ...string) string {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString("data: " + c + "\n\n")
	}
	return b.String()
}

const (
	cDelta = `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`
	cStop  = `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	cUsage = `{"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`
)

// TestChatDialects: streams as OpenAI-compatible servers (and odd ones)
// send them, through Script.Raw.
func TestChatDialects(t *testing.T) {
	usage := &provider.Usage{InputTokens: 3, OutputTokens: 1, TotalTokens: 4}
	runDialects(t, provider.KindChat, "/v1/chat/completions", []dialect{
		{name: "the real framing", raw: data(cDelta, cStop, cUsage, "[DONE]"), want: provider.Result{Usage: usage}, text: "hi"},
		{name: "CRLF", raw: strings.ReplaceAll(data(cDelta, cStop, cUsage, "[DONE]"), "\n", "\r\n"), want: provider.Result{Usage: usage}, text: "hi"},
		{name: `finish_reason "" until the end, no ids`,
			raw:  data(`{"choices":[{"delta":{"content":"h"},"finish_reason":""}]}`, `{"choices":[{"delta":{"content":"i"},"finish_reason":"stop"}]}`, "[DONE]"),
			want: provider.Result{}, text: "hi"},
		{name: "usage with the stop, then a clean end",
			raw:  data(cDelta, `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`),
			want: provider.Result{Usage: usage}, text: "hi"},
		{name: "usage before the stop does not end it", raw: data(cUsage, cDelta, cStop),
			want: provider.Result{ErrorKind: "no_completion"}, text: "hi"},
		{name: "content as parts", raw: data(`{"choices":[{"index":0,"delta":{"content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"hi"}]}}]}`, cStop, "[DONE]"),
			want: provider.Result{}, text: "hi"},
		{name: "reasoning is a thought",
			raw:  data(`{"choices":[{"index":0,"delta":{"reasoning_content":"let me see"}}]}`, `{"choices":[{"index":0,"delta":{"reasoning":"so"}}]}`, `{"choices":[{"index":0,"delta":{"reasoning":{"odd":1}}}]}`, cDelta, cStop, "[DONE]"),
			want: provider.Result{}, text: "hi", events: [][2]string{{"thought", "let me see"}, {"thought", "so"}}},
		{name: "other choices ignored", raw: data(`{"choices":[{"index":1,"delta":{"content":"other"},"finish_reason":"length"}]}`, cDelta, cStop, "[DONE]"),
			want: provider.Result{}, text: "hi"},
		{name: "tool_calls is incomplete", raw: data(cDelta, `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0}]},"finish_reason":"tool_calls"}]}`, cUsage, "[DONE]"),
			want: provider.Result{ErrorKind: "incomplete", Usage: usage}, text: "hi"},
		{name: "only the first finish reason counts", raw: data(cDelta, cStop, `{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`, "[DONE]"),
			want: provider.Result{}, text: "hi"},
		{name: "an empty refusal is none", raw: data(`{"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":""}}]}`, cDelta, cStop, "[DONE]"),
			want: provider.Result{}, text: "hi"},
		{name: "refusal then length", raw: data(`{"choices":[{"index":0,"delta":{"refusal":"no"}}]}`, `{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`, "[DONE]"),
			want: provider.Result{ErrorKind: "refusal"}, text: "no"},
		{name: "error null is no error", raw: data(`{"choices":[{"index":0,"delta":{"content":"hi"}}],"error":null}`, cStop, "[DONE]"),
			want: provider.Result{}, text: "hi"},
		{name: "an error chunk after the stop", raw: data(cDelta, cStop, `{"error":{"message":"overloaded"}}`),
			want: provider.Result{ErrorKind: "stream_error"}, text: "hi"},
		{name: "[DONE] before a finish reason", raw: data(cDelta, "[DONE]"), end: providertest.EndHang,
			want: provider.Result{ErrorKind: "no_completion"}, text: "hi"},
		{name: "[DONE] ends the reading", raw: data(cDelta, cStop, "[DONE]", "{cut"), end: providertest.EndHang, want: provider.Result{}, text: "hi"},
		{name: "stop, usage, then a cut", raw: data(cDelta, cStop, cUsage), end: providertest.EndDrop,
			want: provider.Result{ErrorKind: "no_completion"}, text: "hi"},
		{name: "content not a string", raw: data(`{"choices":[{"index":0,"delta":{"content":7}}]}`), want: provider.Result{ErrorKind: "malformed_stream"}},
		{name: "finish reason not a string", raw: data(`{"choices":[{"index":0,"delta":{},"finish_reason":1}]}`), want: provider.Result{ErrorKind: "malformed_stream"}},
		{name: "choices not a list", raw: data(`{"choices":{}}`), want: provider.Result{ErrorKind: "malformed_stream"}},
		{name: "a line over 1 MiB", raw: data(`{"choices":[{"index":0,"delta":{"content":"`+strings.Repeat("x", 1<<20)+`"}}]}`, cStop, "[DONE]"),
			want: provider.Result{ErrorKind: "malformed_stream"}},
	})
}
