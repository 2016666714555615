package provider

import (
	"context"
	"encoding/json"
	"io"
	"strings"
)

// chat is the openai-chat kind: POST {base}/chat/completions, streamed, on
// any OpenAI-compatible server.
type chat struct{ c *client }

// newChat checks cfg and returns its Chat Completions provider.
func newChat(cfg Config) (Provider, error) {
	c, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	return &chat{c: c}, nil
}

func (p *chat) Config() Config                  { return p.c.cfg }
func (p *chat) Check(ctx context.Context) error { return p.c.check(ctx) }

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
	Stream        bool          `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	// max_tokens, not max_completion_tokens: the name every compatible
	// server reads (OpenAI still accepts it for its non-reasoning models).
	MaxTokens int `json:"max_tokens,omitempty"`
}

// Run sends the prompt as one user message and streams the answer.
//
// What is read, of choice 0 (we ask for one): delta.content (a string, or
// a dialect's list of parts whose text parts count) to sink.Text,
// delta.refusal to sink.Text too, reasoning deltas of the dialects that
// send them (reasoning_content, reasoning) to sink.Event "thought", and
// finish_reason; a chunk's usage; an "error" chunk or event; "[DONE]".
// Tool calls, logprobs, roles and ids are ignored.
//
// A turn succeeds only when the finish reason is "stop" and the stream
// then ended properly: with "[DONE]", or at a clean end of the body after
// the usage chunk (servers that omit "[DONE]" still send the usage we ask
// for; a stop followed by a clean end and nothing else is no_completion,
// since on a connection without framing a cut looks the same). Any other
// finish reason (length, content_filter, tool_calls, …) is incomplete.
// The first failure decides the kind.
func (p *chat) Run(ctx context.Context, req Request, sink Sink) Result {
	body := chatRequest{
		Model:     p.c.cfg.Model,
		Messages:  []chatMessage{{Role: "user", Content: req.Prompt}},
		Stream:    true,
		MaxTokens: p.c.cfg.MaxOutputTokens,
	}
	body.StreamOptions.IncludeUsage = true
	resp, res := p.c.post(ctx, "/chat/completions", body)
	if res != nil {
		return *res
	}
	t := &chatTurn{sink: sink}
	err := events(ctx, resp, t.event)
	switch {
	case err == errStopped:
		return Result{Stopped: true}
	case t.fail != "":
		return Result{ErrorKind: t.fail, Usage: t.usage}
	case err == errSSETooLong:
		return Result{ErrorKind: failMalformed}
	case t.stop && (t.done || (err == io.EOF && t.usageAfterStop)):
		return Result{Usage: t.usage}
	default:
		return Result{ErrorKind: failNoCompletion}
	}
}

// chatTurn is the state of one Chat Completions stream.
type chatTurn struct {
	sink           Sink
	fail           string // the first failure seen
	finished       bool   // choice 0 had a finish reason
	stop           bool   // and it was "stop"
	usageAfterStop bool   // a usage chunk came with or after the stop
	done           bool   // "[DONE]" came
	usage          *Usage
}

func (t *chatTurn) failed(kind string) {
	if t.fail == "" {
		t.fail = kind
	}
}

type chatChunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content          json.RawMessage `json:"content"`
			Refusal          json.RawMessage `json:"refusal"`
			ReasoningContent json.RawMessage `json:"reasoning_content"`
			Reasoning        json.RawMessage `json:"reasoning"`
		} `json:"delta"`
		FinishReason json.RawMessage `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// event handles one event; true ends the stream.
func (t *chatTurn) event(ev sseEvent) bool {
	if ev.name == "error" { // some servers name their error event
		t.failed(failStreamError)
		return true
	}
	if strings.TrimSpace(ev.data) == "[DONE]" {
		t.done = true
		return true
	}
	var c chatChunk
	if json.Unmarshal([]byte(ev.data), &c) != nil {
		t.failed(failMalformed)
		return true
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		t.failed(failStreamError)
		return true
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		text, ok1 := chatContent(ch.Delta.Content)
		refusal, ok2 := jsonString(ch.Delta.Refusal)
		reason, ok3 := jsonString(ch.FinishReason)
		if !ok1 || !ok2 || !ok3 {
			t.failed(failMalformed)
			return true
		}
		// Reasoning is only shown: a dialect's other shape of it is skipped.
		for _, raw := range []json.RawMessage{ch.Delta.ReasoningContent, ch.Delta.Reasoning} {
			if s, _ := jsonString(raw); s != "" {
				t.sink.Event("thought", s)
			}
		}
		if text != "" {
			t.sink.Text(text)
		}
		if refusal != "" { // OpenAI opens every answer with "refusal": null or ""
			t.failed(failRefusal)
			t.sink.Text(refusal)
		}
		// Only the first finish reason counts; "" is a dialect's null.
		if reason != "" && !t.finished {
			t.finished = true
			if reason == "stop" {
				t.stop = true
			} else {
				t.failed(failIncomplete)
			}
		}
	}
	if u := parseUsage(c.Usage); u != nil {
		t.usage = u
		if t.finished {
			t.usageAfterStop = true
		}
	}
	return false
}

// chatContent decodes delta.content: a string, null, or (some dialects) a
// list of parts, of which the "text" parts are the answer.
func chatContent(raw json.RawMessage) (string, bool) {
	if s, ok := jsonString(raw); ok {
		return s, true
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), true
}
