// Package hook is `continuo hook EVENT`: the lifecycle hooks of Claude Code
// and Codex CLI (JSON on stdin, hook output on stdout). Before compaction
// (and when a conversation stops or ends) it keeps the newest user
// instruction as a progress note of the Continuo session the conversation
// works on; when a conversation starts again after compaction, resume or
// clear, it gives the model that session's brief, or the project's
// candidate sessions without choosing among them. It is deterministic,
// bounded in time and bytes, and fails open: an error is a one-line note
// on stderr, never output that blocks the client.
package hook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/workspace"
)

// Bounds.
const (
	MaxInputBytes       = 1 << 20 // hook input on stdin
	MaxInstructionBytes = 4000    // the instruction kept in the note (the note's text is ≤ 8,000)
	MaxContextBytes     = 10_000  // additional context: the ≤ 8 KiB brief and a header
	DefaultTimeout      = 5 * time.Second
	maxCandidates       = 20
)

// Input is the hook input both clients send on stdin (the fields read).
type Input struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	HookEventName  string `json:"hook_event_name"`
	Source         string `json:"source"`  // SessionStart: startup | resume | clear | compact
	Trigger        string `json:"trigger"` // PreCompact: manual | auto
}

// Options configure a run.
type Options struct {
	Event   string // the EVENT argument (the input's hook_event_name when empty)
	Project string // --project: the project whose sessions are candidates
	Timeout time.Duration
	// Dial connects to the server; it is called only when the event needs
	// the server.
	Dial func(ctx context.Context) (Caller, error)
}

// Output is the hook output written on stdout (nothing when nil).
type Output struct {
	HookSpecificOutput *SpecificOutput `json:"hookSpecificOutput,omitempty"`
}

// SpecificOutput is the event-specific part of the output.
type SpecificOutput struct {
	HookEventName     string `json:"hookEventName"`
	AdditionalContext string `json:"additionalContext,omitempty"`
}

// Main runs the hook and never fails: it writes valid hook JSON on stdout
// or nothing, and a one-line note on stderr when something went wrong. It
// returns the note ("" when none).
func Main(ctx context.Context, o Options, stdin io.Reader, stdout, stderr io.Writer) (note string) {
	defer func() {
		if r := recover(); r != nil {
			note = fmt.Sprintf("internal error: %v", r)
		}
		if note != "" {
			fmt.Fprintf(stderr, "continuo hook %s: %s (the client continues)\n", oneLine(o.Event), oneLine(note))
		}
	}()
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	// The timeout is a hard bound: a call that does not return when its
	// context ends (the SDK's client waits for its connection to close when
	// a connect fails) is left behind, and the process exits without it.
	type result struct {
		out *Output
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{err: fmt.Errorf("internal error: %v", r)}
			}
		}()
		out, err := Run(ctx, o, stdin)
		done <- result{out, err}
	}()
	var out *Output
	var err error
	select {
	case r := <-done:
		out, err = r.out, r.err
	case <-ctx.Done():
		select {
		case r := <-done:
			out, err = r.out, r.err
		case <-time.After(100 * time.Millisecond):
			err = ctx.Err()
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Sprintf("gave up after %v: %v", o.Timeout, err)
		}
		return err.Error()
	}
	if out != nil {
		b, err := json.Marshal(out)
		if err != nil {
			return err.Error()
		}
		if _, err := stdout.Write(append(b, '\n')); err != nil {
			return err.Error()
		}
	}
	return ""
}

// Run does the event's work and returns the output to print (nil: none).
func Run(ctx context.Context, o Options, stdin io.Reader) (*Output, error) {
	raw, err := io.ReadAll(io.LimitReader(stdin, MaxInputBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read hook input: %w", err)
	}
	if len(raw) > MaxInputBytes {
		return nil, fmt.Errorf("hook input is over %d bytes", MaxInputBytes)
	}
	var in Input
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("hook input is not a JSON object: %v", err)
	}
	event := o.Event
	if event == "" {
		event = in.HookEventName
	}
	switch event {
	case "PreCompact", "Stop", "SessionEnd":
		return nil, keepInstruction(ctx, o, in)
	case "SessionStart":
		switch in.Source {
		case "compact", "resume", "clear":
			return resume(ctx, o, in)
		}
		return nil, nil // a new conversation: the user says what to work on
	}
	return nil, nil // an event the hook has nothing to do for
}

// transcript reads the hook's transcript; without one, or in a format not
// understood, nothing is bound.
func transcript(in Input) (Transcript, error) {
	if in.TranscriptPath == "" {
		return Transcript{}, nil
	}
	t, err := ReadTranscript(in.TranscriptPath)
	if errors.Is(err, os.ErrNotExist) {
		return Transcript{}, nil
	}
	return t, err
}

// NoteTag tags the notes the hook posts.
const NoteTag = "compaction"

// NoteText is the note kept for an instruction: the same for every event,
// so that the note of PreCompact and of a later Stop are one message.
func NoteText(instruction string) string {
	text, _ := redact.String(instruction)
	return "Newest user instruction in the conversation, kept before the client compacts or ends it:\n" +
		truncate(text, MaxInstructionBytes)
}

// DeliveryKey identifies an instruction by its conversation and position
// in the transcript, so that running the hook again on it posts nothing
// new.
func DeliveryKey(conversation string, in *Instruction) string {
	h := sha256.Sum256([]byte(conversation + "\x00" + strconv.FormatInt(in.Offset, 10) + "\x00" + in.Text))
	return "hook-" + hex.EncodeToString(h[:20])
}

func keepInstruction(ctx context.Context, o Options, in Input) error {
	t, err := transcript(in)
	if err != nil {
		return err
	}
	if t.Binding == nil || t.Instruction == nil {
		return nil // no session bound, or nothing to keep
	}
	c, err := o.Dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Call(ctx, "post_session_message", map[string]any{
		"session_id":   t.Binding.SessionID,
		"kind":         "progress",
		"text":         NoteText(t.Instruction.Text),
		"tags":         []string{NoteTag},
		"delivery_key": DeliveryKey(in.SessionID+"\x00"+in.TranscriptPath, t.Instruction),
	}, nil)
}

func resume(ctx context.Context, o Options, in Input) (*Output, error) {
	t, err := transcript(in)
	if err != nil {
		return nil, err
	}
	c, err := o.Dial(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var text string
	if t.Binding != nil {
		text, err = brief(ctx, c, t.Binding)
		if IsCode(err, "not_found") {
			text, err = "", nil // another server's session, or no longer readable: fall back to the candidates
		}
		if err != nil {
			return nil, err
		}
	}
	if text == "" {
		project := o.Project
		if project == "" && t.Binding != nil {
			project = t.Binding.ProjectID
		}
		if text, err = candidates(ctx, c, project, in.Cwd); err != nil {
			return nil, err
		}
	}
	if text == "" {
		return nil, nil
	}
	return &Output{HookSpecificOutput: &SpecificOutput{HookEventName: "SessionStart", AdditionalContext: text}}, nil
}

func brief(ctx context.Context, c Caller, b *Binding) (string, error) {
	var res struct {
		SessionID    string          `json:"session_id"`
		ProjectID    string          `json:"project_id"`
		HandoffBrief json.RawMessage `json:"handoff_brief"`
	}
	if err := c.Call(ctx, "read_session_handoff", map[string]any{"session_id": b.SessionID}, &res); err != nil {
		return "", err
	}
	ref := ""
	if b.SessionRef != "" {
		ref = " (" + b.SessionRef + ")"
	}
	head := fmt.Sprintf("Continuo: this conversation works on session %s%s of project %s. Its handoff brief follows; "+
		"continue from it. To resume the session, pass session_id %q to work_on_project; read_session_handoff gives a fresh brief.\n",
		res.SessionID, ref, res.ProjectID, res.SessionID)
	body := string(res.HandoffBrief)
	if len(head)+len(body) > MaxContextBytes {
		body = `{"truncated": true, "note": "the brief is too large to inject; call read_session_handoff"}`
	}
	return head + body, nil
}

type project struct {
	ProjectID string `json:"project_id"`
	Name      string `json:"name"`
	HasRoot   bool   `json:"has_root"`
}

// candidates lists the active sessions of the project: the one named, else
// the one named like the git checkout (or directory) of cwd, else the only
// project the caller can see. With several projects and none of them
// chosen, it lists the projects. It never picks a session.
func candidates(ctx context.Context, c Caller, name, cwd string) (string, error) {
	var lp struct {
		Projects []project `json:"projects"`
	}
	if err := c.Call(ctx, "list_projects", map[string]any{}, &lp); err != nil {
		return "", err
	}
	if len(lp.Projects) == 0 {
		return "", nil
	}
	var p *project
	for i := range lp.Projects {
		q := &lp.Projects[i]
		if name != "" && (q.ProjectID == name || q.Name == name) {
			p = q
		}
	}
	if p == nil && name == "" {
		if base := checkoutName(cwd); base != "" {
			for i := range lp.Projects {
				if lp.Projects[i].Name == base {
					p = &lp.Projects[i]
				}
			}
		}
	}
	if p == nil && name == "" && len(lp.Projects) == 1 {
		p = &lp.Projects[0]
	}
	if p == nil {
		var b strings.Builder
		fmt.Fprintf(&b, "Continuo: no Continuo session is bound to this conversation, and no project matches %s. Projects you can reach:", cwd)
		for i, q := range lp.Projects {
			if i == maxCandidates {
				fmt.Fprintf(&b, "\n- … and %d more (list_projects)", len(lp.Projects)-i)
				break
			}
			fmt.Fprintf(&b, "\n- %s (%s)", q.Name, q.ProjectID)
		}
		b.WriteString("\nTo continue earlier work, call list_sessions for the project; ask the user which session to continue, never pick one yourself.")
		return b.String(), nil
	}
	var ls struct {
		TotalCount int `json:"total_count"`
		Sessions   []struct {
			SessionID  string `json:"session_id"`
			SessionRef string `json:"session_ref"`
			Title      string `json:"title"`
			UpdatedAt  string `json:"updated_at"`
			OpenTodos  int    `json:"open_todos"`
			OpenRisks  int    `json:"open_risks"`
		} `json:"sessions"`
	}
	if err := c.Call(ctx, "list_sessions", map[string]any{"project": p.ProjectID, "lifecycle": "active", "limit": maxCandidates}, &ls); err != nil {
		return "", err
	}
	if len(ls.Sessions) == 0 {
		return "", nil
	}
	sort.SliceStable(ls.Sessions, func(i, j int) bool { return ls.Sessions[i].UpdatedAt > ls.Sessions[j].UpdatedAt })
	var b strings.Builder
	fmt.Fprintf(&b, "Continuo: no Continuo session is bound to this conversation. Project %s (%s) has %d active session(s):",
		p.Name, p.ProjectID, ls.TotalCount)
	for _, s := range ls.Sessions {
		title, _ := redact.String(s.Title)
		fmt.Fprintf(&b, "\n- %s %s %q (updated %s; open todos %d, risks %d)", s.SessionRef, s.SessionID, title, s.UpdatedAt, s.OpenTodos, s.OpenRisks)
	}
	if ls.TotalCount > len(ls.Sessions) {
		fmt.Fprintf(&b, "\n- … and %d more (list_sessions)", ls.TotalCount-len(ls.Sessions))
	}
	b.WriteString("\nNone was chosen. If the user wants to continue one, ask which; then call read_session_handoff and work_on_project with its session_id. Never pick one yourself.")
	return truncate(b.String(), MaxContextBytes), nil
}

// checkoutName is the project name `continuo serve` gives a checkout: the
// base name of cwd's git top level (the nearest directory with .git), else
// of cwd itself.
func checkoutName(cwd string) string {
	if cwd == "" || !filepath.IsAbs(cwd) {
		return ""
	}
	dir := filepath.Clean(cwd)
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			dir = d
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	return workspace.ProjectName(filepath.Base(dir))
}

// truncate cuts s to at most n bytes at a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = " […]"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r, _ := redact.String(s); r != "" {
		s = r
	}
	return truncate(s, 300)
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
