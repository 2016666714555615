package modelstub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The Anthropic Messages API, as Claude Code sends it: system a string or a
// list of text blocks; messages of role user or assistant whose content is
// a string or a list of blocks (text, tool_use, tool_result, …).

type anthropicRequest struct {
	Model    string          `json:"model"`
	System   json.RawMessage `json:"system"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Defer       bool   `json:"defer_loading"`
	} `json:"tools"`
	Stream bool `json:"stream"`
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	ToolName  string          `json:"tool_name"` // tool_reference
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func parseAnthropic(body []byte) (*Request, error) {
	var in anthropicRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, err
	}
	r := &Request{Dialect: Anthropic, Body: body, Stream: in.Stream}
	sys, err := blocks(in.System)
	if err != nil {
		return nil, fmt.Errorf("system: %w", err)
	}
	var parts []string
	for _, b := range sys {
		parts = append(parts, b.Text)
	}
	r.System = strings.Join(parts, "\n")
	var docs []string
	for _, t := range in.Tools {
		r.Tools = append(r.Tools, t.Name)
		if t.Defer {
			r.deferred = append(r.deferred, t.Name)
		}
		docs = append(docs, t.Description)
	}
	r.ToolDocs = strings.Join(docs, "\n\n")
	for i, m := range in.Messages {
		bs, err := blocks(m.Content)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		for _, b := range bs {
			switch b.Type {
			case "text":
				r.Items = append(r.Items, Item{Role: m.Role, Text: b.Text})
			case "tool_use":
				r.Items = append(r.Items, Item{Role: m.Role, Call: &Call{ID: b.ID, Name: b.Name, Args: b.Input}})
			case "tool_result":
				res, err := blocks(b.Content)
				if err != nil {
					return nil, fmt.Errorf("message %d: tool_result: %w", i, err)
				}
				var text []string
				for _, rb := range res {
					text = append(text, rb.Text)
					if rb.Type == "tool_reference" {
						r.loaded = append(r.loaded, rb.ToolName)
					}
				}
				r.Items = append(r.Items, Item{Role: m.Role, Result: &Result{CallID: b.ToolUseID, Text: strings.Join(text, "\n"), IsError: b.IsError}})
			}
		}
	}
	return r, nil
}

// blocks reads content that is a string, a list of blocks, or absent.
func blocks(raw json.RawMessage) ([]anthropicBlock, error) {
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []anthropicBlock{{Type: "text", Text: s}}, nil
	}
	var bs []anthropicBlock
	err := json.Unmarshal(raw, &bs)
	return bs, err
}

// writeAnthropic answers as the Messages API does: a message, streamed
// (message_start, a content block with its deltas, message_delta with the
// stop reason and usage, message_stop) when the request asked for a stream.
func writeAnthropic(w http.ResponseWriter, r *Request, reply Reply, n int) {
	id := fmt.Sprintf("msg_stub%06d", n)
	var block map[string]any
	stop := "end_turn"
	if c := reply.Call; c != nil {
		block = map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_stub%06d", n), "name": c.Name, "input": argsOf(c)}
		stop = "tool_use"
	} else {
		block = map[string]any{"type": "text", "text": reply.Text}
	}
	usage := map[string]any{"input_tokens": reply.InputTokens, "output_tokens": 10}
	if !r.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": id, "type": "message", "role": "assistant", "model": "stub",
			"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(name string, data map[string]any) {
		data["type"] = name
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	ev("message_start", map[string]any{"message": map[string]any{"id": id, "type": "message", "role": "assistant", "model": "stub",
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": reply.InputTokens, "output_tokens": 1}}})
	if c := reply.Call; c != nil {
		ev("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "tool_use", "id": block["id"], "name": c.Name, "input": map[string]any{}}})
		args, _ := json.Marshal(argsOf(c))
		ev("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(args)}})
	} else {
		ev("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		ev("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": reply.Text}})
	}
	ev("content_block_stop", map[string]any{"index": 0})
	ev("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 10}})
	ev("message_stop", map[string]any{})
}

func argsOf(c *ToolCall) map[string]any {
	if c.Args == nil {
		return map[string]any{}
	}
	return c.Args
}
