package providertest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// post sends body to path and returns the response's headers and body.
func post(t *testing.T, url, body string) (http.Header, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d, %v: %s", resp.StatusCode, err, b)
	}
	return resp.Header, string(b)
}

// frames splits a stream into its events' lines.
func frames(t *testing.T, body string) [][]string {
	t.Helper()
	if !strings.HasSuffix(body, "\n\n") {
		t.Fatalf("the stream does not end with a blank line: %q", body)
	}
	var out [][]string
	for _, ev := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		out = append(out, strings.Split(ev, "\n"))
	}
	return out
}

// TestResponsesFraming: "event: T\ndata: {"type": T, "sequence_number": n…}"
// per event, in OpenAI's order, ending with response.completed.
func TestResponsesFraming(t *testing.T) {
	s := NewServer(t, Script{Deltas: []string{"a", "b"}, APIKey: "k"})
	h, body := post(t, s.BaseURL()+"/responses", `{"model":"m","input":"x","stream":true}`)
	if ct := h.Get("Content-Type"); ct != "text/event-stream; charset=utf-8" {
		t.Fatalf("Content-Type %q", ct)
	}
	var types []string
	for i, f := range frames(t, body) {
		name, ok1 := strings.CutPrefix(f[0], "event: ")
		data, ok2 := strings.CutPrefix(f[len(f)-1], "data: ")
		var ev struct {
			Type string `json:"type"`
			Seq  int    `json:"sequence_number"`
		}
		if len(f) != 2 || !ok1 || !ok2 || json.Unmarshal([]byte(data), &ev) != nil || ev.Type != name || ev.Seq != i {
			t.Fatalf("event %d: %q", i, f)
		}
		types = append(types, name)
	}
	want := "response.created response.in_progress response.output_item.added response.content_part.added " +
		"response.output_text.delta response.output_text.delta response.output_text.done response.content_part.done " +
		"response.output_item.done response.completed"
	if got := strings.Join(types, " "); got != want {
		t.Fatalf("events %s", got)
	}
}

// TestChatFraming: "data: {chunk}" per event, the usage chunk only when the
// request asks for it, and "data: [DONE]" last.
func TestChatFraming(t *testing.T) {
	s := NewServer(t, Script{Deltas: []string{"a"}})
	for _, c := range []struct {
		body string
		want []string // each chunk's choices and usage
	}{
		{`{"model":"m","messages":[],"stream":true}`, []string{
			`[{"delta":{"content":"","refusal":null,"role":"assistant"},"finish_reason":null,"index":0,"logprobs":null}] <nil>`,
			`[{"delta":{"content":"a"},"finish_reason":null,"index":0,"logprobs":null}] <nil>`,
			`[{"delta":{},"finish_reason":"stop","index":0,"logprobs":null}] <nil>`,
		}},
		{`{"model":"m","messages":[],"stream":true,"stream_options":{"include_usage":true}}`, []string{
			`[{"delta":{"content":"","refusal":null,"role":"assistant"},"finish_reason":null,"index":0,"logprobs":null}] null`,
			`[{"delta":{"content":"a"},"finish_reason":null,"index":0,"logprobs":null}] null`,
			`[{"delta":{},"finish_reason":"stop","index":0,"logprobs":null}] null`,
			`[] {"completion_tokens":1,"completion_tokens_details":{"reasoning_tokens":0},"prompt_tokens":7,"prompt_tokens_details":{"cached_tokens":0},"total_tokens":8}`,
		}},
	} {
		h, body := post(t, s.BaseURL()+"/chat/completions", c.body)
		if ct := h.Get("Content-Type"); ct != "text/event-stream; charset=utf-8" {
			t.Fatalf("Content-Type %q", ct)
		}
		fs := frames(t, body)
		if last := fs[len(fs)-1]; len(last) != 1 || last[0] != "data: [DONE]" {
			t.Fatalf("last event %q", last)
		}
		var got []string
		for _, f := range fs[:len(fs)-1] {
			data, ok := strings.CutPrefix(f[0], "data: ")
			var ch map[string]json.RawMessage
			if len(f) != 1 || !ok || json.Unmarshal([]byte(data), &ch) != nil || string(ch["object"]) != `"chat.completion.chunk"` {
				t.Fatalf("event %q", f)
			}
			usage := "<nil>"
			if u, ok := ch["usage"]; ok {
				usage = string(u)
			}
			got = append(got, string(ch["choices"])+" "+usage)
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Fatalf("chunks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
	if n := len(s.Requests()); n != 2 {
		t.Fatalf("%d requests recorded", n)
	}
}

// TestStatus: a scripted status answers with an OpenAI error body that
// echoes the Authorization header (what tests prove never leaks).
func TestStatus(t *testing.T) {
	s := NewServer(t, Script{End: EndStatus, Status: 429})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.BaseURL()+"/responses", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer sk-echo")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Error struct{ Message, Code string }
	}
	if resp.StatusCode != 429 || json.Unmarshal(b, &e) != nil || e.Error.Code != "rate_limit_exceeded" || !strings.Contains(e.Error.Message, "Bearer sk-echo") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}
