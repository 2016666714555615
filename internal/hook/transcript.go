package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
)

// Bounds of transcript reading: the hook reads only the newest TailBytes of
// the file, and skips a line longer than MaxLineBytes (a large tool output)
// without reading it as anything.
const (
	TailBytes    = 4 << 20
	MaxLineBytes = 1 << 20
)

// Format is a transcript format the hook understands.
type Format string

const (
	FormatUnknown Format = ""
	// FormatClaude is Claude Code's transcript: JSON lines, each with a
	// "type" (user, assistant, system, attachment, and many the hook
	// ignores) and, for user and assistant turns, a "message" in the
	// Messages API shape (content a string or a list of text / tool_use /
	// tool_result blocks; MCP tools named mcp__SERVER__TOOL).
	FormatClaude Format = "claude"
	// FormatCodex is Codex CLI's rollout file: JSON lines of {timestamp,
	// type, payload}: session_meta, turn_context, response_item (message,
	// function_call, function_call_output…), event_msg (item_completed of
	// UserMessage, McpToolCall, AgentMessage items; token_count…),
	// compacted, and others the hook ignores.
	FormatCodex Format = "codex"
)

// Binding is the Continuo session a conversation works on: the newest
// successful work_on_project result in its transcript.
type Binding struct {
	SessionID  string `json:"session_id"`
	SessionRef string `json:"session_ref,omitempty"`
	ProjectID  string `json:"project_id,omitempty"`
}

// Instruction is the newest user instruction of a transcript.
type Instruction struct {
	Text   string
	Offset int64 // byte offset of its line in the file: with the conversation id, its identity
}

// Transcript is what the hook reads from a transcript.
type Transcript struct {
	Format      Format
	Binding     *Binding     // nil: no work_on_project result in the tail read
	Instruction *Instruction // nil: no user instruction in the tail read
	Skipped     int          // lines skipped: malformed, too long, or of a known type but a shape not understood
}

// ReadTranscript reads the tail of the transcript at path. A missing path
// or unreadable file is an error; an unknown format is not (Format is
// FormatUnknown and nothing is bound).
func ReadTranscript(path string) (Transcript, error) {
	f, err := os.Open(path)
	if err != nil {
		return Transcript{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Transcript{}, err
	}
	if !st.Mode().IsRegular() {
		return Transcript{}, errors.New("transcript is not a regular file")
	}
	return readTail(f, st.Size(), TailBytes)
}

// readTail parses the last max bytes of r (size bytes long). The first,
// possibly partial, line of a cut tail is dropped.
func readTail(r io.ReaderAt, size, max int64) (Transcript, error) {
	start := int64(0)
	if size > max {
		start = size - max
	}
	buf := make([]byte, size-start)
	if _, err := r.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
		return Transcript{}, err
	}
	if start > 0 {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return Transcript{}, nil
		}
		buf, start = buf[i+1:], start+int64(i+1)
	}
	return parse(buf, start), nil
}

// parse reads the lines of data, whose first byte is at offset base of
// the file.
func parse(data []byte, base int64) Transcript {
	var t Transcript
	p := parser{calls: map[string]bool{}}
	off := base
	for len(data) > 0 {
		line := data
		n := len(data)
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, n = data[:i], i+1
		}
		data = data[n:]
		at := off
		off += int64(n)
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if len(line) > MaxLineBytes {
			t.Skipped++
			continue
		}
		var env struct {
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
			Message json.RawMessage `json:"message"`
		}
		if json.Unmarshal(line, &env) != nil || env.Type == "" {
			t.Skipped++
			continue
		}
		f := FormatClaude
		if env.Payload != nil {
			f = FormatCodex
		}
		if t.Format == FormatUnknown {
			if f == FormatClaude && !claudeTypes[env.Type] || f == FormatCodex && !codexTypes[env.Type] {
				continue // a line that tells no format, and nothing the hook reads
			}
		} else if f != t.Format {
			t.Skipped++
			continue
		}
		var ok bool
		if f == FormatCodex {
			ok = p.codex(env.Type, env.Payload, at)
		} else {
			ok = p.claude(env.Type, line, at)
		}
		switch {
		case !ok:
			t.Skipped++
		case t.Format == FormatUnknown:
			t.Format = f // the first line read as one format decides
		}
	}
	t.Binding, t.Instruction = p.binding, p.instruction
	return t
}

// claudeTypes are the line types of a Claude Code transcript that tell its
// format; it has many others (queue-operation, api-request, last-prompt,
// mode…), which the hook ignores.
var claudeTypes = map[string]bool{"user": true, "assistant": true, "summary": true, "system": true,
	"attachment": true, "file-history-snapshot": true}

// codexTypes are the line types of a Codex rollout file that tell its
// format.
var codexTypes = map[string]bool{"session_meta": true, "turn_context": true, "response_item": true, "event_msg": true, "compacted": true}

// parser keeps the newest binding and instruction seen, and the ids of the
// work_on_project calls whose results are still to come.
type parser struct {
	calls       map[string]bool
	binding     *Binding
	instruction *Instruction
}

func (p *parser) instruct(text string, at int64) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	p.instruction = &Instruction{Text: text, Offset: at}
}

func (p *parser) result(v any) {
	if b := findBinding(v, 0); b != nil {
		p.binding = b
	}
}

// isWorkOnProject reports whether a tool name is Continuo's
// work_on_project as the client names MCP tools (mcp__SERVER__TOOL, or the
// bare name with a namespace on the side).
func isWorkOnProject(name string) bool {
	return name == "work_on_project" || strings.HasSuffix(name, "__work_on_project")
}

// claude reads one line of a Claude Code transcript. Unknown line types
// and block types are ignored (true); a known type of an unexpected shape
// is reported (false).
func (p *parser) claude(typ string, line []byte, at int64) bool {
	if typ != "user" && typ != "assistant" {
		return true
	}
	var l struct {
		IsMeta           bool `json:"isMeta"`
		IsCompactSummary bool `json:"isCompactSummary"`
		Message          struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(line, &l) != nil || l.Message.Content == nil {
		return false
	}
	if typ == "user" {
		var s string
		if json.Unmarshal(l.Message.Content, &s) == nil {
			if !l.IsMeta && !l.IsCompactSummary && !isClientMarkup(s) {
				p.instruct(s, at)
			}
			return true
		}
	}
	var blocks []struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		ToolUseID string          `json:"tool_use_id"`
		IsError   bool            `json:"is_error"`
		Content   json.RawMessage `json:"content"`
	}
	if json.Unmarshal(l.Message.Content, &blocks) != nil {
		return false
	}
	var texts []string
	for _, b := range blocks {
		switch {
		case typ == "assistant" && b.Type == "tool_use" && isWorkOnProject(b.Name):
			p.calls[b.ID] = true
		case typ == "user" && b.Type == "tool_result" && p.calls[b.ToolUseID]:
			delete(p.calls, b.ToolUseID)
			if !b.IsError {
				p.result(rawValue(b.Content))
			}
		case typ == "user" && b.Type == "text" && !isClientMarkup(b.Text):
			texts = append(texts, b.Text)
		}
	}
	if len(texts) > 0 && !l.IsMeta && !l.IsCompactSummary {
		p.instruct(strings.Join(texts, "\n"), at)
	}
	return true
}

// isClientMarkup reports text that the client wrote into a user turn
// (slash-command records, command output, reminders), not the user.
func isClientMarkup(s string) bool {
	s = strings.TrimSpace(s)
	for _, p := range []string{"<command-", "<local-command-", "<system-reminder>", "<user-prompt-submit-hook>",
		"<environment_context>", "<user_instructions>", "# AGENTS.md", "Caveat: The messages below"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// codex reads one line of a Codex CLI rollout file, as Codex 0.171 writes
// them (recorded in testdata/codex): the user's input is an item_completed
// event of a UserMessage item; an MCP call is a function_call response item
// with the server's namespace, whose function_call_output text starts with
// a "Wall time: … Output:" preamble, and an item_completed event of an
// McpToolCall item with the tool's whole result. Every other line type is
// ignored (true); a known type of an unexpected shape is reported (false).
func (p *parser) codex(typ string, payload json.RawMessage, at int64) bool {
	if typ != "response_item" && typ != "event_msg" {
		return true
	}
	var pl struct {
		Type   string          `json:"type"`
		Name   string          `json:"name"`
		CallID string          `json:"call_id"`
		Output json.RawMessage `json:"output"`
		Item   *struct {
			Type    string `json:"type"`
			ID      string `json:"id"`
			Tool    string `json:"tool"`
			Status  string `json:"status"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		} `json:"item"`
	}
	if json.Unmarshal(payload, &pl) != nil {
		return false
	}
	switch {
	case typ == "event_msg" && pl.Type == "item_completed" && pl.Item != nil:
		it := pl.Item
		switch it.Type {
		case "UserMessage":
			var texts []string
			for _, c := range it.Content {
				if c.Type == "text" && !isClientMarkup(c.Text) {
					texts = append(texts, c.Text)
				}
			}
			p.instruct(strings.Join(texts, "\n"), at)
		case "McpToolCall":
			if isWorkOnProject(it.Tool) {
				delete(p.calls, it.ID)
				if it.Status == "completed" && isNull(it.Error) {
					p.result(rawValue(it.Result))
				}
			}
		}
	case typ == "response_item" && pl.Type == "function_call" && isWorkOnProject(pl.Name):
		p.calls[pl.CallID] = true
	case typ == "response_item" && pl.Type == "function_call_output" && p.calls[pl.CallID]:
		delete(p.calls, pl.CallID)
		var text string
		if json.Unmarshal(pl.Output, &text) == nil {
			p.result(withoutPreamble(text))
		} else {
			p.result(rawValue(pl.Output))
		}
	}
	return true
}

// withoutPreamble is a Codex function_call_output text without the lines
// Codex puts before the tool's own output ("Wall time: 0.01 seconds",
// "Output:").
func withoutPreamble(text string) string {
	if _, out, ok := strings.Cut(text, "\nOutput:\n"); ok && strings.HasPrefix(text, "Wall time:") {
		return out
	}
	return text
}

func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

func rawValue(raw json.RawMessage) any {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}

// findBinding finds a work_on_project result in a tool result as the
// client recorded it: the structured content itself, a content list whose
// text is its JSON mirror, or a string holding either. Breadth first, so
// that the result's own session_id wins over one nested in its brief. A
// result that is an error carries no session_id and binds nothing.
func findBinding(v any, depth int) *Binding {
	if depth > 6 {
		return nil
	}
	queue := []any{v}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		switch x := x.(type) {
		case map[string]any:
			if id, _ := x["session_id"].(string); strings.HasPrefix(id, "ses_") {
				if _, failed := x["error"]; failed {
					return nil
				}
				b := &Binding{SessionID: id}
				b.SessionRef, _ = x["session_ref"].(string)
				b.ProjectID, _ = x["project_id"].(string)
				return b
			}
			for _, k := range sortedKeys(x) {
				queue = append(queue, x[k])
			}
		case []any:
			queue = append(queue, x...)
		case string:
			if s := strings.TrimSpace(x); strings.HasPrefix(s, "{") || strings.HasPrefix(s, "[") {
				var inner any
				if json.Unmarshal([]byte(s), &inner) == nil {
					if b := findBinding(inner, depth+1); b != nil {
						return b
					}
				}
			}
		}
	}
	return nil
}
