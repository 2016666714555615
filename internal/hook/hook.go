// Package hook is `continuo hook EVENT`: the lifecycle hooks of Claude Code
// and Codex CLI (JSON on stdin, hook output on stdout), read from what the
// clients really write (testdata holds recordings of both). Before
// compaction, and when a conversation stops or ends, it keeps the newest
// user instruction as a progress note of the Continuo session the
// conversation works on; when a conversation starts again after
// compaction, resume or clear, it gives the model that session's brief, or
// the project's candidate sessions without choosing among them.
//
// It is deterministic, bounded in time and bytes, and fails open: an error
// is a one-line note on stderr, never output that blocks the client. What
// it could not post in time waits in a spool and is posted by the next
// hook; a hook that cannot reach the server says so (to the model when the
// client lets a hook speak to it, at SessionStart; to the user otherwise).
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
	MaxContextBytes     = 10_000  // additional context: the ≤ 8 KiB brief and a header (Claude Code moves more than 10,000 characters to a file)
	DefaultTimeout      = 5 * time.Second
	// SessionEndTimeout is the budget at SessionEnd: Codex CLI gives a
	// SessionEnd hook 3 s, whatever its configured timeout.
	SessionEndTimeout = 2500 * time.Millisecond
	maxCandidates     = 20
)

// Budget is how long a hook for event may take: the given timeout, at most
// what the client allows for the event.
func Budget(event string, timeout time.Duration) time.Duration {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if event == "SessionEnd" {
		timeout = min(timeout, SessionEndTimeout)
	}
	return timeout
}

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
	Event   string        // the EVENT argument (the input's hook_event_name when empty)
	Project string        // --project: the project whose sessions are candidates
	Timeout time.Duration // 0: the event's own budget (Budget)
	// Dial connects to the server; it is called only when the event needs
	// the server.
	Dial func(ctx context.Context) (Caller, error)
	// Server names the server in what the hook says when it cannot reach
	// it (a URL, or "the local data directory DIR").
	Server string
	Spool  Spool
	Now    func() time.Time // default time.Now
	// Log, when set, gets one JSON line per run (Report): what a user
	// reads to see that the hooks run and what they did.
	Log io.Writer
}

// Report is what one run did, as the log line says it.
type Report struct {
	At           string `json:"at"`
	Event        string `json:"event"`
	Source       string `json:"source,omitempty"`       // SessionStart's
	Conversation string `json:"conversation,omitempty"` // the client's own id for the conversation
	Session      string `json:"session,omitempty"`      // the Continuo session it works on
	Did          string `json:"did"`
	Spooled      int    `json:"spooled,omitempty"` // notes still waiting after it
	Error        string `json:"error,omitempty"`
}

// Output is the hook output written on stdout (nothing when nil).
type Output struct {
	HookSpecificOutput *SpecificOutput `json:"hookSpecificOutput,omitempty"`
	// SystemMessage is shown to the user (both clients), not the model.
	SystemMessage string `json:"systemMessage,omitempty"`
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
	if o.Now == nil {
		o.Now = time.Now
	}
	o.Timeout = Budget(o.Event, o.Timeout)
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	// The timeout is a hard bound: a call that does not return when its
	// context ends (the SDK's client waits for its connection to close when
	// a connect fails) is left behind, and the process exits without it.
	type result struct {
		out *Output
		rep Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		var rep Report
		defer func() {
			if r := recover(); r != nil {
				done <- result{rep: rep, err: fmt.Errorf("internal error: %v", r)}
			}
		}()
		out, err := run(ctx, o, stdin, &rep)
		done <- result{out, rep, err}
	}()
	var out *Output
	var err error
	rep := Report{Event: o.Event, Did: "gave up"}
	select {
	case r := <-done:
		out, rep, err = r.out, r.rep, r.err
	case <-ctx.Done():
		select {
		case r := <-done:
			out, rep, err = r.out, r.rep, r.err
		case <-time.After(100 * time.Millisecond):
			err = ctx.Err()
		}
	}
	defer func() { o.log(rep, note) }()
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("gave up after %v: %w", o.Timeout, err)
		if out == nil {
			out = timedOut(o, err)
		}
	}
	if out != nil {
		b, merr := json.Marshal(out)
		if merr != nil {
			return merr.Error()
		}
		if _, werr := stdout.Write(append(b, '\n')); werr != nil {
			return werr.Error()
		}
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// timedOut is what a hook that ran out of time says: the server did not
// answer in time, so SessionStart tells the model and the others the user.
func timedOut(o Options, err error) *Output {
	switch o.Event {
	case "SessionStart":
		return startContext(unreachableContext(o, nil, err))
	case "PreCompact", "Stop", "SessionEnd":
		out, _ := unreachable(o, err, len(o.Spool.Pending()) > 0, nil)
		return out
	}
	return nil
}

// log writes the run's line to o.Log.
func (o Options) log(rep Report, note string) {
	if o.Log == nil {
		return
	}
	rep.At = o.Now().UTC().Format(time.RFC3339Nano)
	if rep.Event == "" {
		rep.Event = o.Event
	}
	rep.Error = oneLine(note)
	rep.Spooled = len(o.Spool.Pending())
	b, _ := json.Marshal(rep)
	o.Log.Write(append(b, '\n'))
}

// run does the event's work and returns the output to print (nil: none);
// rep says what it did, for the log.
func run(ctx context.Context, o Options, stdin io.Reader, rep *Report) (*Output, error) {
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
	*rep = Report{Event: event, Source: in.Source, Conversation: oneLine(in.SessionID), Did: "nothing"}
	switch event {
	case "PreCompact", "Stop", "SessionEnd":
		return keepInstruction(ctx, o, in, rep)
	case "SessionStart":
		switch in.Source {
		case "compact", "resume", "clear":
			return resume(ctx, o, in, rep)
		}
		// A new conversation: the user says what to work on. Only what
		// earlier hooks left in the spool is posted.
		return drainOnly(ctx, o, rep)
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

// keepInstruction posts the newest user instruction as a note of the bound
// session. The note is spooled first and unspooled once posted, so that a
// hook the client stops at its timeout loses nothing; then what earlier
// hooks left in the spool is posted too.
func keepInstruction(ctx context.Context, o Options, in Input, rep *Report) (*Output, error) {
	t, err := transcript(in)
	if err != nil {
		return nil, err
	}
	if t.Binding == nil || t.Instruction == nil {
		rep.Did = "nothing to keep: no session bound"
		if t.Binding != nil {
			rep.Session, rep.Did = t.Binding.SessionID, "nothing to keep: no instruction"
		}
		return drainOnly(ctx, o, rep)
	}
	rep.Session = t.Binding.SessionID
	args := map[string]any{
		"session_id":   t.Binding.SessionID,
		"kind":         "progress",
		"text":         NoteText(t.Instruction.Text),
		"tags":         []string{NoteTag},
		"delivery_key": DeliveryKey(in.SessionID+"\x00"+in.TranscriptPath, t.Instruction),
	}
	pending, serr := o.Spool.Add("post_session_message", args, o.Now())
	rep.Did = "spooled the note"
	c, err := o.Dial(ctx)
	if err != nil {
		return unreachable(o, err, pending != "", serr)
	}
	defer c.Close()
	var res struct {
		Replayed bool `json:"replayed"`
	}
	if err := c.Call(ctx, "post_session_message", args, &res); err != nil {
		if Permanent(err) {
			o.Spool.Remove(pending)
			rep.Did = "note refused"
			return nil, err
		}
		return unreachable(o, err, pending != "", serr)
	}
	o.Spool.Remove(pending)
	rep.Did = "posted the note"
	if res.Replayed {
		rep.Did = "the note was posted already"
	}
	_, _, err = o.Spool.Drain(ctx, c)
	return nil, err
}

// drainOnly posts what the spool holds for this target, when it holds
// anything (no server is dialled otherwise).
func drainOnly(ctx context.Context, o Options, rep *Report) (*Output, error) {
	if len(o.Spool.Pending()) == 0 {
		return nil, nil
	}
	c, err := o.Dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("%d spooled note(s) not posted: %w", len(o.Spool.Pending()), err)
	}
	defer c.Close()
	posted, _, err := o.Spool.Drain(ctx, c)
	rep.Did += fmt.Sprintf("; posted %d spooled note(s)", posted)
	return nil, err
}

// unreachable is what a hook that could not post says: to the user (the
// clients show a hook's systemMessage), and as its one stderr line.
func unreachable(o Options, cause error, spooled bool, spoolErr error) (*Output, error) {
	where := o.Server
	if where == "" {
		where = "the Continuo server"
	}
	msg := fmt.Sprintf("Continuo could not record this conversation's newest instruction: %s did not answer (%s).", where, oneLine(cause.Error()))
	if spooled {
		msg += " It is kept in " + o.Spool.Dir + " and posted by the next hook that reaches the server."
	} else if spoolErr != nil {
		msg += " It could not be kept either: " + oneLine(spoolErr.Error())
	}
	return &Output{SystemMessage: msg}, errors.New(msg)
}

// resume gives the model the brief of the session the conversation works
// on (or the candidates to choose from), after posting what the spool
// holds, so that the brief includes it. When the server cannot be reached
// it says so to the model rather than nothing.
func resume(ctx context.Context, o Options, in Input, rep *Report) (*Output, error) {
	t, err := transcript(in)
	if err != nil {
		return nil, err
	}
	if t.Binding != nil {
		rep.Session = t.Binding.SessionID
	}
	rep.Did = "told the model the server is unreachable"
	c, err := o.Dial(ctx)
	if err != nil {
		return startContext(unreachableContext(o, t.Binding, err)), err
	}
	defer c.Close()
	// Half the budget at most for the spool: the brief matters more.
	dctx := ctx
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		dctx, cancel = context.WithDeadline(ctx, time.Now().Add(time.Until(d)/2))
		defer cancel()
	}
	if _, _, derr := o.Spool.Drain(dctx, c); derr != nil && ctx.Err() == nil && dctx.Err() == nil {
		return startContext(unreachableContext(o, t.Binding, derr)), derr
	}
	var text string
	if t.Binding != nil {
		rep.Did = "gave the brief"
		text, err = brief(ctx, c, t.Binding)
		if IsCode(err, "not_found") {
			text, err = "", nil // another server's session, or no longer readable: fall back to the candidates
		}
		if err != nil {
			return startContext(unreachableContext(o, t.Binding, err)), err
		}
	}
	if text == "" {
		project := o.Project
		if project == "" && t.Binding != nil {
			project = t.Binding.ProjectID
		}
		rep.Did = "listed the candidate sessions"
		if text, err = candidates(ctx, c, project, in.Cwd); err != nil {
			return startContext(unreachableContext(o, t.Binding, err)), err
		}
	}
	if text == "" {
		rep.Did = "nothing to give: no session bound, none to choose from"
		return nil, nil
	}
	return startContext(text), nil
}

func startContext(text string) *Output {
	return &Output{HookSpecificOutput: &SpecificOutput{HookEventName: "SessionStart", AdditionalContext: text}}
}

// unreachableContext tells the model that its session could not be loaded.
func unreachableContext(o Options, b *Binding, cause error) string {
	where := o.Server
	if where == "" {
		where = "the Continuo server"
	}
	msg := fmt.Sprintf("Continuo: %s could not be reached (%s), so this conversation's Continuo session was not loaded.", where, oneLine(cause.Error()))
	if b != nil {
		msg += fmt.Sprintf(" It works on session %s: once the server answers, call read_session_handoff(session_id=%q) before relying on earlier work.", b.SessionID, b.SessionID)
	}
	if n := len(o.Spool.Pending()); n > 0 {
		msg += fmt.Sprintf(" %d note(s) from earlier hooks wait in %s and are posted once it answers.", n, o.Spool.Dir)
	}
	return msg + " Tell the user that Continuo is unreachable."
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
