package provider

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/coder/acp-go-sdk"
)

// acpClient is the client side of a turn (acp.Client): it turns the
// agent's session updates into Sink calls and decides its permission
// requests. The SDK calls it from its own goroutines (updates in order on
// one, each request on another); every Sink call is handed to Run's
// goroutine through out, so that the Sink sees one goroutine, and an
// update is delivered before the SDK takes the next one.
type acpClient struct {
	allow map[string]bool
	out   chan acpEvent
	done  chan struct{} // closed when nobody reads out any more
	// cancelling: session/cancel was sent; a permission request is then
	// answered cancelled, as ACP asks.
	cancelling atomic.Bool

	mu  sync.Mutex
	sid string // the session, once session/new answered

	// titles and statuses of tool calls by id, for updates that omit them;
	// read and written by the SDK's update goroutine only.
	titles   map[acp.ToolCallId]string
	statuses map[acp.ToolCallId]acp.ToolCallStatus
}

func newACPClient(allow map[string]bool) *acpClient {
	return &acpClient{
		allow:    allow,
		out:      make(chan acpEvent),
		done:     make(chan struct{}),
		titles:   map[acp.ToolCallId]string{},
		statuses: map[acp.ToolCallId]acp.ToolCallStatus{},
	}
}

// acpEvent is one Sink call: Text when kind is "", else Event.
type acpEvent struct{ kind, text string }

func (e acpEvent) deliver(s Sink) {
	if e.kind == "" {
		s.Text(e.text)
		return
	}
	s.Event(e.kind, e.text)
}

func (c *acpClient) emit(e acpEvent) {
	select {
	case c.out <- e:
	case <-c.done:
	}
}

func (c *acpClient) setSession(id string) {
	c.mu.Lock()
	c.sid = id
	c.mu.Unlock()
}

func (c *acpClient) session() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sid
}

// SessionUpdate: agent_message_chunk text is the answer; a thought, a tool
// call and its updates, and a plan are events; the rest is ignored, as is
// anything for another session or before session/new answered.
func (c *acpClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	if sid := c.session(); sid == "" || string(n.SessionId) != sid {
		return nil
	}
	u := n.Update
	switch {
	case u.AgentMessageChunk != nil:
		if t := u.AgentMessageChunk.Content.Text; t != nil && t.Text != "" {
			c.emit(acpEvent{text: t.Text})
		}
	case u.AgentThoughtChunk != nil:
		if t := u.AgentThoughtChunk.Content.Text; t != nil && t.Text != "" {
			c.emit(acpEvent{kind: "thought", text: t.Text})
		}
	case u.ToolCall != nil:
		tc := u.ToolCall
		st := tc.Status
		if st == "" {
			st = acp.ToolCallStatusPending
		}
		c.titles[tc.ToolCallId], c.statuses[tc.ToolCallId] = tc.Title, st
		c.emit(acpEvent{kind: "tool", text: acpToolLine(tc.Title, st)})
	case u.ToolCallUpdate != nil:
		tu := u.ToolCallUpdate
		if tu.Title == nil && tu.Status == nil {
			return nil // content or locations only
		}
		if tu.Title != nil {
			c.titles[tu.ToolCallId] = *tu.Title
		}
		if tu.Status != nil {
			c.statuses[tu.ToolCallId] = *tu.Status
		}
		c.emit(acpEvent{kind: "tool", text: acpToolLine(c.titles[tu.ToolCallId], c.statuses[tu.ToolCallId])})
	case u.Plan != nil:
		c.emit(acpEvent{kind: "tool", text: acpPlanLine(u.Plan.Entries)})
	}
	return nil
}

func acpToolLine(title string, st acp.ToolCallStatus) string {
	if st == "" {
		st = acp.ToolCallStatusPending
	}
	return acpOneLine(acpTitleOr(title) + " " + string(st))
}

func acpTitleOr(title string) string {
	if strings.TrimSpace(title) == "" {
		return "(untitled)"
	}
	return title
}

// acpPlanLine: "plan: 3 entries, 1 completed, 1 in progress: <the first in
// progress>".
func acpPlanLine(entries []acp.PlanEntry) string {
	var done, doing int
	current := ""
	for _, e := range entries {
		switch e.Status {
		case acp.PlanEntryStatusCompleted:
			done++
		case acp.PlanEntryStatusInProgress:
			if doing == 0 {
				current = e.Content
			}
			doing++
		}
	}
	s := fmt.Sprintf("plan: %d entries, %d completed, %d in progress", len(entries), done, doing)
	if current != "" {
		s += ": " + current
	}
	return acpOneLine(s)
}

// acpMaxLine bounds the text of a tool or permission event.
const acpMaxLine = 200

// acpOneLine makes s one bounded line of valid UTF-8: control characters
// (newlines among them) become spaces, runs of spaces one, and a line
// longer than acpMaxLine bytes is cut at a rune boundary and ends with "…".
func acpOneLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	s = b.String()
	if len(s) <= acpMaxLine {
		return s
	}
	cut := acpMaxLine - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// RequestPermission allows a tool call only when its kind, as the request
// gives it, is one of AllowTools and an allow_once option is offered, by
// choosing that option; anything else is rejected (reject_once, else
// reject_always, else the cancelled outcome), and so is everything once
// the turn is being cancelled. Each decision is an event "permission":
// "<allowed|rejected> <kind> <title>".
func (c *acpClient) RequestPermission(_ context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	kind := ""
	if p.ToolCall.Kind != nil {
		kind = string(*p.ToolCall.Kind)
	}
	title := ""
	if p.ToolCall.Title != nil {
		title = *p.ToolCall.Title
	}
	var outcome acp.RequestPermissionOutcome
	allowed := false
	if c.allow[kind] && !c.cancelling.Load() {
		if id, ok := acpOption(p.Options, acp.PermissionOptionKindAllowOnce); ok {
			outcome, allowed = acp.NewRequestPermissionOutcomeSelected(id), true
		}
	}
	if !allowed {
		outcome = acp.NewRequestPermissionOutcomeCancelled()
		if !c.cancelling.Load() {
			if id, ok := acpOption(p.Options, acp.PermissionOptionKindRejectOnce, acp.PermissionOptionKindRejectAlways); ok {
				outcome = acp.NewRequestPermissionOutcomeSelected(id)
			}
		}
	}
	word := "rejected"
	if allowed {
		word = "allowed"
	}
	if kind == "" {
		kind = "(no kind)"
	}
	c.emit(acpEvent{kind: "permission", text: acpOneLine(word + " " + kind + " " + acpTitleOr(title))})
	return acp.RequestPermissionResponse{Outcome: outcome}, nil
}

// acpOption finds the first option of the first of kinds that is offered.
func acpOption(opts []acp.PermissionOption, kinds ...acp.PermissionOptionKind) (acp.PermissionOptionId, bool) {
	for _, k := range kinds {
		for _, o := range opts {
			if o.Kind == k && o.OptionId != "" {
				return o.OptionId, true
			}
		}
	}
	return "", false
}

// The file system and terminals are not offered (initialize says so); an
// agent that asks anyway is refused, and the refusal is shown.

func (c *acpClient) refuse(method string) error {
	c.emit(acpEvent{kind: "permission", text: "rejected " + method + " (not offered to the agent)"})
	return acp.NewMethodNotFound(method)
}

func (c *acpClient) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, c.refuse(acp.ClientMethodFsReadTextFile)
}

func (c *acpClient) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, c.refuse(acp.ClientMethodFsWriteTextFile)
}

func (c *acpClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, c.refuse(acp.ClientMethodTerminalCreate)
}

func (c *acpClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalKill)
}

func (c *acpClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalOutput)
}

func (c *acpClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalRelease)
}

func (c *acpClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalWaitForExit)
}

var _ acp.Client = (*acpClient)(nil)
