package provider

import (
	"context"
	"encoding/json"
	"strings"
)

// responses is the openai-responses kind: POST {base}/responses, streamed.
type responses struct{ c *client }

// newResponses checks cfg and returns its Responses API provider.
func newResponses(cfg Config) (Provider, error) {
	c, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	return &responses{c: c}, nil
}

func (p *responses) Config() Config                  { return p.c.cfg }
func (p *responses) Check(ctx context.Context) error { return p.c.check(ctx) }

type responsesRequest struct {
	Model           string `json:"model"`
	Input           string `json:"input"`
	Stream          bool   `json:"stream"`
	MaxOutputTokens int    `json:"max_output_tokens,omitempty"`
}

// Run sends the prompt as the input of one response and streams its text.
//
// What is read: the event's "type" (the SSE event name when a dialect
// sends no type), text deltas (to sink.Text), refusal deltas (to
// sink.Text too: what the model said instead of an answer), reasoning
// deltas (sink.Event "thought"), and the terminal events with their usage.
// Every other event (output items, content parts, annotations, the *.done
// events that repeat the deltas) is ignored.
//
// The first failure decides the kind (a refusal, then a failed stream, is
// a refusal), and a turn succeeds only on response.completed without one.
func (p *responses) Run(ctx context.Context, req Request, sink Sink) Result {
	resp, res := p.c.post(ctx, "/responses", responsesRequest{
		Model:           p.c.cfg.Model,
		Input:           req.Prompt,
		Stream:          true,
		MaxOutputTokens: p.c.cfg.MaxOutputTokens,
	})
	if res != nil {
		return *res
	}
	t := &responsesTurn{sink: sink}
	err := events(ctx, resp, t.event)
	switch {
	case err == errStopped:
		return Result{Stopped: true}
	case t.ended:
		return Result{ErrorKind: t.fail, Usage: t.usage}
	case t.fail != "":
		return Result{ErrorKind: t.fail}
	case err == errSSETooLong:
		return Result{ErrorKind: failMalformed}
	default: // the end of the body, clean or cut, before a terminal event
		return Result{ErrorKind: failNoCompletion}
	}
}

// responsesTurn is the state of one Responses stream.
type responsesTurn struct {
	sink  Sink
	fail  string // the first failure seen
	ended bool   // a terminal event (or an unreadable one) ended the turn
	usage *Usage
}

func (t *responsesTurn) failed(kind string) {
	if t.fail == "" {
		t.fail = kind
	}
}

// event handles one event; true ends the stream.
func (t *responsesTurn) event(ev sseEvent) bool {
	if strings.TrimSpace(ev.data) == "[DONE]" {
		// Chat's end marker, which some Responses dialects send too: the
		// end of the stream, and without a terminal event no completion.
		return true
	}
	var e struct {
		Type     string          `json:"type"`
		Delta    json.RawMessage `json:"delta"`
		Response json.RawMessage `json:"response"`
	}
	if json.Unmarshal([]byte(ev.data), &e) != nil {
		t.failed(failMalformed)
		t.ended = true
		return true
	}
	if e.Type == "" {
		e.Type = ev.name
	}
	delta := func() (string, bool) {
		s, ok := jsonString(e.Delta)
		if !ok {
			t.failed(failMalformed)
			t.ended = true
		}
		return s, ok
	}
	switch e.Type {
	case "response.output_text.delta":
		s, ok := delta()
		if !ok {
			return true
		}
		if s != "" {
			t.sink.Text(s)
		}
	case "response.refusal.delta":
		s, ok := delta()
		if !ok {
			return true
		}
		t.failed(failRefusal)
		if s != "" {
			t.sink.Text(s)
		}
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		s, ok := delta()
		if !ok {
			return true
		}
		if s != "" {
			t.sink.Event("thought", s)
		}
	case "response.completed":
		r := readResponse(e.Response)
		t.usage = r.usage
		if r.refusal {
			t.failed(failRefusal) // a refusal sent only as content, without deltas
		}
		t.ended = true
		return true
	case "response.incomplete": // max_output_tokens or content_filter
		t.usage = readResponse(e.Response).usage
		t.failed(failIncomplete)
		t.ended = true
		return true
	case "response.failed", "error":
		t.usage = readResponse(e.Response).usage
		t.failed(failStreamError)
		t.ended = true
		return true
	}
	return false
}

// response is what a terminal event's response object tells us.
type response struct {
	usage   *Usage
	refusal bool // an output message has refusal content
}

// readResponse reads a terminal event's response object leniently: only
// its usage and whether it holds a refusal matter, the event's type has
// already said how the turn ended, and a dialect's odd shape of the rest
// must not fail a finished turn.
func readResponse(raw json.RawMessage) response {
	var r struct {
		Usage  json.RawMessage   `json:"usage"`
		Output []json.RawMessage `json:"output"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &r) != nil {
		return response{}
	}
	out := response{usage: parseUsage(r.Usage)}
	for _, item := range r.Output {
		var m struct {
			Content []struct {
				Type string `json:"type"`
			} `json:"content"`
		}
		if json.Unmarshal(item, &m) != nil {
			continue
		}
		for _, c := range m.Content {
			if c.Type == "refusal" {
				out.refusal = true
			}
		}
	}
	return out
}
