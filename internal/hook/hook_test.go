package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fake is a Caller that records calls and answers from a table.
type fake struct {
	calls   []string
	args    []map[string]any
	answers map[string]any
	errs    map[string]error
}

func (f *fake) Call(_ context.Context, tool string, args map[string]any, out any) error {
	f.calls = append(f.calls, tool)
	f.args = append(f.args, args)
	if err := f.errs[tool]; err != nil {
		return err
	}
	b, _ := json.Marshal(f.answers[tool])
	if out != nil && f.answers[tool] != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}
func (f *fake) Close() error { return nil }

// runFake runs the hook on input against f, with a spool and a log in a
// test directory unless o names its own.
func runFake(t *testing.T, f *fake, o Options, input []byte) (stdout, stderr string) {
	t.Helper()
	o.Dial = func(context.Context) (Caller, error) { return f, nil }
	if o.Spool.Dir == "" {
		o.Spool = Spool{Dir: filepath.Join(t.TempDir(), "spool"), Target: "http://test/mcp"}
	}
	var out, errb bytes.Buffer
	Main(context.Background(), o, bytes.NewReader(input), &out, &errb)
	return out.String(), errb.String()
}

func output(t *testing.T, stdout string) Output {
	t.Helper()
	var o Output
	if err := json.Unmarshal([]byte(stdout), &o); err != nil {
		t.Fatalf("stdout %q is not hook output: %v", stdout, err)
	}
	return o
}

// TestKeepsInstruction: PreCompact, Stop and SessionEnd post the newest
// instruction of the recorded conversation to the session it is bound to,
// as one note (the same key and text whichever event posts it).
func TestKeepsInstruction(t *testing.T) {
	for _, client := range clients {
		t.Run(client, func(t *testing.T) {
			r := recorded(t, client)
			tr := r.transcript(t)
			var first map[string]any
			for _, ev := range []string{"PreCompact", "Stop", "SessionEnd"} {
				f := &fake{}
				out, errs := runFake(t, f, Options{Event: ev}, r.input(t, ev, tr))
				if out != "" || errs != "" {
					t.Fatalf("%s: stdout %q stderr %q", ev, out, errs)
				}
				if len(f.calls) != 1 || f.calls[0] != "post_session_message" {
					t.Fatalf("%s: calls %v", ev, f.calls)
				}
				a := f.args[0]
				if a["session_id"] != r.Expect.SessionID || a["kind"] != "progress" || !strings.Contains(a["text"].(string), r.Expect.Instruction) {
					t.Errorf("%s: args %v", ev, a)
				}
				if tags := a["tags"].([]string); len(tags) != 1 || tags[0] != NoteTag {
					t.Errorf("%s: tags %v", ev, tags)
				}
				if first == nil {
					first = a
				} else if a["delivery_key"] != first["delivery_key"] || a["text"] != first["text"] {
					t.Errorf("%s posts another note than PreCompact: %v vs %v", ev, a, first)
				}
			}
		})
	}
}

func TestNoteIsRedacted(t *testing.T) {
	r := recorded(t, ClientClaude)
	data := strings.ReplaceAll(string(r.transcriptData(t)), r.Expect.Instruction, r.Expect.Instruction+" token cto_pat_abcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqrst")
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	os.WriteFile(tr, []byte(data), 0o600)
	f := &fake{}
	runFake(t, f, Options{Event: "PreCompact"}, r.input(t, "PreCompact", tr))
	if len(f.args) != 1 || strings.Contains(f.args[0]["text"].(string), "cto_pat_abc") {
		t.Errorf("the secret reached the note: %v", f.args)
	}
}

// TestSessionStartInjectsBrief: after compaction and on resume, the model
// gets the brief of the session the conversation is bound to.
func TestSessionStartInjectsBrief(t *testing.T) {
	for _, client := range clients {
		for _, source := range []string{"compact", "resume"} {
			t.Run(client+"/"+source, func(t *testing.T) {
				r := recorded(t, client)
				f := &fake{answers: map[string]any{"read_session_handoff": map[string]any{
					"session_id": r.Expect.SessionID, "project_id": r.Expect.ProjectID, "handoff_brief": map[string]any{"marker": "the brief"}}}}
				out, errs := runFake(t, f, Options{Event: "SessionStart"}, r.input(t, "SessionStart-"+source, r.transcript(t)))
				if errs != "" {
					t.Fatal(errs)
				}
				o := output(t, out)
				if o.HookSpecificOutput == nil || o.HookSpecificOutput.HookEventName != "SessionStart" ||
					!strings.Contains(o.HookSpecificOutput.AdditionalContext, `{"marker":"the brief"}`) ||
					!strings.Contains(o.HookSpecificOutput.AdditionalContext, r.Expect.SessionID) {
					t.Errorf("output %s", out)
				}
				if len(f.args) != 1 || f.args[0]["session_id"] != r.Expect.SessionID {
					t.Errorf("read %v", f.args)
				}
			})
		}
	}
}

// TestSessionStartCandidates: a conversation bound to no session (a fresh
// transcript) gets the project's active sessions, none chosen.
func TestSessionStartCandidates(t *testing.T) {
	projects := map[string]any{"projects": []any{
		map[string]any{"project_id": "prj_a", "name": "alpha"}, map[string]any{"project_id": "prj_b", "name": "beta"}}}
	sessions := map[string]any{"total_count": 2, "sessions": []any{
		map[string]any{"session_id": "ses_1", "session_ref": "~s1", "title": "one", "updated_at": "2026-07-01T10:00:00Z"},
		map[string]any{"session_id": "ses_2", "session_ref": "~s2", "title": "two", "updated_at": "2026-07-02T10:00:00Z"}}}
	empty := filepath.Join(t.TempDir(), "new.jsonl") // not written yet
	for _, client := range clients {
		t.Run(client, func(t *testing.T) {
			r := recorded(t, client)
			f := &fake{answers: map[string]any{"list_projects": projects, "list_sessions": sessions}}
			out, errs := runFake(t, f, Options{Event: "SessionStart", Project: "beta"}, r.input(t, "SessionStart-resume", empty))
			if errs != "" {
				t.Fatal(errs)
			}
			ctx := output(t, out).HookSpecificOutput.AdditionalContext
			for _, want := range []string{"ses_1", "ses_2", "None was chosen", "beta"} {
				if !strings.Contains(ctx, want) {
					t.Errorf("context lacks %q: %s", want, ctx)
				}
			}
			if f.args[1]["project"] != "prj_b" {
				t.Errorf("list_sessions %v", f.args[1])
			}
			// Several projects, none named, none like the cwd: the projects
			// are listed, no session.
			f = &fake{answers: map[string]any{"list_projects": projects}}
			out, _ = runFake(t, f, Options{Event: "SessionStart"}, r.input(t, "SessionStart-resume", empty))
			if !strings.Contains(out, "alpha") || !strings.Contains(out, "beta") || len(f.calls) != 1 {
				t.Errorf("projects: %s (calls %v)", out, f.calls)
			}
		})
	}
}

func TestFailsOpen(t *testing.T) {
	r := recorded(t, ClientClaude)
	in := r.input(t, "PreCompact", r.transcript(t))
	for name, o := range map[string]Options{
		"error": {Event: "PreCompact", Dial: func(context.Context) (Caller, error) {
			return &fake{errs: map[string]error{"post_session_message": &ToolError{"post_session_message", "session_closed", "closed"}}}, nil
		}},
		"panic": {Event: "PreCompact", Dial: func(context.Context) (Caller, error) { panic("boom") }},
	} {
		t.Run(name, func(t *testing.T) {
			var out, errb bytes.Buffer
			Main(context.Background(), o, bytes.NewReader(in), &out, &errb)
			if out.Len() != 0 {
				t.Errorf("stdout %q", out.String())
			}
			if n := strings.Count(errb.String(), "\n"); n != 1 || !strings.Contains(errb.String(), "continuo hook PreCompact") {
				t.Errorf("stderr %q: want one line", errb.String())
			}
		})
	}
	// Garbage on stdin, and an event with nothing to do.
	var out, errb bytes.Buffer
	Main(context.Background(), Options{Event: "PreCompact"}, strings.NewReader("not json"), &out, &errb)
	if out.Len() != 0 || !strings.Contains(errb.String(), "not a JSON object") {
		t.Errorf("garbage: %q %q", out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	Main(context.Background(), Options{Event: "UserPromptSubmit"}, strings.NewReader(`{}`), &out, &errb)
	if out.Len() != 0 || errb.Len() != 0 {
		t.Errorf("no-op event: %q %q", out.String(), errb.String())
	}
}

// TestUnreachableSpoolsAndSays: a server that does not answer — refused,
// or too slow for the event's budget — loses no note: it waits in the
// spool, the user is told (systemMessage), and the next hook that reaches
// the server posts it before its own work. A SessionStart that cannot
// reach the server tells the model.
func TestUnreachableSpoolsAndSays(t *testing.T) {
	r := recorded(t, ClientCodex)
	tr := r.transcript(t)
	spool := Spool{Dir: filepath.Join(t.TempDir(), "spool"), Target: "http://test/mcp"}
	refused := func(context.Context) (Caller, error) { return nil, errors.New("connection refused") }
	hang := func(ctx context.Context) (Caller, error) { <-ctx.Done(); return nil, ctx.Err() }
	for name, dial := range map[string]func(context.Context) (Caller, error){"refused": refused, "hangs": hang} {
		t.Run(name, func(t *testing.T) {
			for _, ev := range []string{"PreCompact", "SessionEnd"} {
				var out, errb bytes.Buffer
				start := time.Now()
				Main(context.Background(), Options{Event: ev, Timeout: 200 * time.Millisecond, Dial: dial, Spool: spool, Server: "http://test/mcp"},
					bytes.NewReader(r.input(t, ev, tr)), &out, &errb)
				if took := time.Since(start); took > 2*time.Second {
					t.Errorf("%s took %v", ev, took)
				}
				o := output(t, out.String())
				if !strings.Contains(o.SystemMessage, "http://test/mcp") || !strings.Contains(o.SystemMessage, spool.Dir) {
					t.Errorf("%s: systemMessage %q", ev, o.SystemMessage)
				}
				if errb.Len() == 0 {
					t.Errorf("%s: no stderr line", ev)
				}
			}
			if n := len(spool.Pending()); n != 1 {
				t.Fatalf("%d spooled, want 1 (two events, one note)", n)
			}
			var out, errb bytes.Buffer
			Main(context.Background(), Options{Event: "SessionStart", Timeout: 200 * time.Millisecond, Dial: dial, Spool: spool, Server: "http://test/mcp"},
				bytes.NewReader(r.input(t, "SessionStart-resume", tr)), &out, &errb)
			ctx := output(t, out.String()).HookSpecificOutput.AdditionalContext
			for _, want := range []string{"could not be reached", r.Expect.SessionID, "1 note(s)", "Tell the user"} {
				if !strings.Contains(ctx, want) {
					t.Errorf("SessionStart context lacks %q: %s", want, ctx)
				}
			}
		})
	}
	// The server is back: a new conversation's SessionStart posts what
	// waits (and nothing else happens at startup).
	f := &fake{}
	out, errs := runFake(t, f, Options{Event: "SessionStart", Spool: spool}, r.input(t, "SessionStart-startup", tr))
	if out != "" || errs != "" || len(f.calls) != 1 || f.calls[0] != "post_session_message" || f.args[0]["session_id"] != r.Expect.SessionID {
		t.Errorf("startup drain: %q %q %v %v", out, errs, f.calls, f.args)
	}
	if n := len(spool.Pending()); n != 0 {
		t.Errorf("%d still spooled", n)
	}
	// Nothing spooled: startup calls nobody.
	f = &fake{}
	if out, errs := runFake(t, f, Options{Event: "SessionStart", Spool: spool}, r.input(t, "SessionStart-startup", tr)); out != "" || errs != "" || len(f.calls) != 0 {
		t.Errorf("startup: %q %q %v", out, errs, f.calls)
	}
}

// TestSpoolDropsWhatIsRefused: a spooled note the server refuses for good
// is dropped; one it cannot take now stays, with those after it.
func TestSpoolDropsWhatIsRefused(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s := Spool{Dir: t.TempDir(), Target: "a"}
	other := Spool{Dir: s.Dir, Target: "b"}
	for i, key := range []string{"k1", "k2", "k3"} {
		if _, err := s.Add("post_session_message", map[string]any{"delivery_key": key, "session_id": key}, now.Add(time.Duration(i))); err != nil {
			t.Fatal(err)
		}
	}
	other.Add("post_session_message", map[string]any{"delivery_key": "k9"}, now)
	// Spooling the same note again is the same entry.
	s.Add("post_session_message", map[string]any{"delivery_key": "k1", "session_id": "k1"}, now.Add(time.Hour))
	if n := len(s.Pending()); n != 3 {
		t.Fatalf("%d pending, want 3", n)
	}
	f := &fake{errs: map[string]error{}}
	calls := 0
	c := callerFunc(func(args map[string]any) error {
		calls++
		switch args["session_id"] {
		case "k1":
			return &ToolError{Code: "session_closed"}
		case "k2":
			return errors.New("connection reset")
		}
		return nil
	})
	_ = f
	posted, dropped, err := s.Drain(context.Background(), c)
	if posted != 0 || dropped != 1 || err == nil || calls != 2 {
		t.Errorf("drain: posted %d dropped %d err %v calls %d", posted, dropped, err, calls)
	}
	if n := len(s.Pending()); n != 2 {
		t.Errorf("%d pending, want 2 (k2, k3)", n)
	}
	if n := len(other.Pending()); n != 1 {
		t.Errorf("another target's entry: %d", n)
	}
	// Old entries go.
	s.Add("post_session_message", map[string]any{"delivery_key": "k4"}, now.Add(31*24*time.Hour))
	if n := len(s.Pending()); n != 1 {
		t.Errorf("after 31 days: %d pending, want 1", n)
	}
}

type callerFunc func(args map[string]any) error

func (c callerFunc) Call(_ context.Context, _ string, args map[string]any, _ any) error {
	return c(args)
}
func (c callerFunc) Close() error { return nil }

// TestBudget: SessionEnd answers within what Codex gives it (3 s).
func TestBudget(t *testing.T) {
	if b := Budget("SessionEnd", 0); b >= 3*time.Second {
		t.Errorf("SessionEnd budget %v", b)
	}
	if b := Budget("SessionEnd", 10*time.Second); b >= 3*time.Second {
		t.Errorf("SessionEnd budget with --timeout 10s: %v", b)
	}
	if b := Budget("PreCompact", 0); b != DefaultTimeout {
		t.Errorf("PreCompact budget %v", b)
	}
}

// TestLog: each run writes one line that says what it did.
func TestLog(t *testing.T) {
	r := recorded(t, ClientClaude)
	var log bytes.Buffer
	runFake(t, &fake{}, Options{Event: "PreCompact", Log: &log}, r.input(t, "PreCompact", r.transcript(t)))
	var rep Report
	if err := json.Unmarshal(log.Bytes(), &rep); err != nil || strings.Count(log.String(), "\n") != 1 {
		t.Fatalf("log %q: %v", log.String(), err)
	}
	if rep.Event != "PreCompact" || rep.Session != r.Expect.SessionID || rep.Did != "posted the note" || rep.Error != "" || rep.Conversation == "" {
		t.Errorf("report %+v", rep)
	}
}
