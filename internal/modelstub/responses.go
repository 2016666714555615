package modelstub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The OpenAI Responses API, as Codex CLI sends it: instructions, input
// items (message with role and content parts, function_call,
// function_call_output, …) and tools, an MCP server's tools grouped in a
// namespace tool ("mcp__SERVER") whose description is the server's
// instructions; a namespaced call names its namespace.

type responsesRequest struct {
	Instructions string          `json:"instructions"`
	Input        json.RawMessage `json:"input"`
	Tools        []responsesTool `json:"tools"`
	Stream       bool            `json:"stream"`
}

type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Tools       []responsesTool `json:"tools"`
}

type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	Arguments json.RawMessage `json:"arguments"` // a string (function_call) or an object (tool_search_call)
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Tools     []responsesTool `json:"tools"` // tool_search_output
}

func parseResponses(body []byte) (*Request, error) {
	var in responsesRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, err
	}
	r := &Request{Dialect: Responses, Body: body, Stream: in.Stream, System: in.Instructions}
	var docs []string
	add := func(tools []responsesTool, loaded bool) {
		for _, t := range tools {
			docs = append(docs, t.Description)
			var names []string
			switch {
			case t.Type == "namespace":
				for _, sub := range t.Tools {
					names = append(names, t.Name+"__"+sub.Name)
					docs = append(docs, sub.Description)
				}
			case t.Type == toolSearchCodex:
				names = append(names, toolSearchCodex)
			case t.Name != "":
				names = append(names, t.Name)
			}
			if loaded {
				r.loaded = append(r.loaded, names...)
			} else {
				r.Tools = append(r.Tools, names...)
			}
		}
	}
	add(in.Tools, false)
	var items []responsesItem
	if s := strings.TrimSpace(string(in.Input)); strings.HasPrefix(s, `"`) {
		var text string
		if err := json.Unmarshal(in.Input, &text); err != nil {
			return nil, err
		}
		items = []responsesItem{{Type: "message", Role: "user", Content: in.Input}}
	} else if err := json.Unmarshal(in.Input, &items); err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	var sys []string
	if r.System != "" {
		sys = append(sys, r.System)
	}
	for i, it := range items {
		switch it.Type {
		case "message":
			text, err := partsText(it.Content)
			if err != nil {
				return nil, fmt.Errorf("input %d: %w", i, err)
			}
			if it.Role == "system" || it.Role == "developer" {
				sys = append(sys, text)
			}
			r.Items = append(r.Items, Item{Role: it.Role, Text: text})
		case "function_call":
			name := it.Name
			if it.Namespace != "" {
				name = it.Namespace + "__" + it.Name
			}
			var args string
			if json.Unmarshal(it.Arguments, &args) != nil {
				return nil, fmt.Errorf("input %d: function_call arguments are not a string", i)
			}
			r.Items = append(r.Items, Item{Role: "assistant", Call: &Call{ID: it.CallID, Name: name, Args: json.RawMessage(args)}})
		case "tool_search_call":
			r.Items = append(r.Items, Item{Role: "assistant", Call: &Call{ID: it.CallID, Name: toolSearchCodex, Args: it.Arguments}})
		case "tool_search_output":
			// Codex's tool search loaded these tools (and a namespace's
			// description: the MCP server's instructions).
			add(it.Tools, true)
		case "function_call_output":
			text, err := partsText(it.Output)
			if err != nil {
				return nil, fmt.Errorf("input %d: output: %w", i, err)
			}
			r.Items = append(r.Items, Item{Role: "tool", Result: &Result{CallID: it.CallID, Text: text}})
		}
	}
	r.System = strings.Join(sys, "\n")
	r.ToolDocs = strings.Join(docs, "\n\n")
	return r, nil
}

// partsText reads content that is a string or a list of parts with text.
func partsText(raw json.RawMessage) (string, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return "", nil
	}
	if strings.HasPrefix(s, `"`) {
		var text string
		err := json.Unmarshal(raw, &text)
		return text, err
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", err
	}
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, "\n"), nil
}

// writeResponses answers as the Responses API streams: response.created,
// the output item added and done (with the text's delta between),
// response.completed with the usage.
func writeResponses(w http.ResponseWriter, r *Request, reply Reply, n int) {
	respID := fmt.Sprintf("resp_stub%06d", n)
	var item map[string]any
	if c := reply.Call; c != nil && c.Name == toolSearchCodex {
		item = map[string]any{"type": "tool_search_call", "id": fmt.Sprintf("ts_stub%06d", n), "status": "completed",
			"call_id": fmt.Sprintf("call_stub%06d", n), "execution": "client", "arguments": argsOf(c)}
	} else if c != nil {
		args, _ := json.Marshal(argsOf(c))
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_stub%06d", n), "status": "completed",
			"call_id": fmt.Sprintf("call_stub%06d", n), "arguments": string(args)}
		if ns, name, ok := strings.Cut(strings.TrimPrefix(c.Name, "mcp__"), "__"); ok && strings.HasPrefix(c.Name, "mcp__") {
			item["namespace"], item["name"] = "mcp__"+ns, name
		} else {
			item["name"] = c.Name
		}
	} else {
		item = map[string]any{"type": "message", "id": fmt.Sprintf("msg_stub%06d", n), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": reply.Text, "annotations": []any{}}}}
	}
	usage := map[string]any{"input_tokens": reply.InputTokens, "output_tokens": 10, "total_tokens": reply.InputTokens + 10,
		"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
	resp := func(status string, output []any) map[string]any {
		m := map[string]any{"id": respID, "object": "response", "created_at": 1, "status": status, "model": "stub", "output": output}
		if status == "completed" {
			m["usage"] = usage
		}
		return m
	}
	if !r.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp("completed", []any{item}))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	seq := 0
	ev := func(name string, data map[string]any) {
		data["type"], data["sequence_number"] = name, seq
		seq++
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	ev("response.created", map[string]any{"response": resp("in_progress", []any{})})
	ev("response.output_item.added", map[string]any{"output_index": 0, "item": item})
	if reply.Call == nil {
		ev("response.output_text.delta", map[string]any{"item_id": item["id"], "output_index": 0, "content_index": 0, "delta": reply.Text})
	}
	ev("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	ev("response.completed", map[string]any{"response": resp("completed", []any{item})})
}
