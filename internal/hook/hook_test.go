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
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}
func (f *fake) Close() error { return nil }

// setup writes the client's transcript and returns the hook input of name.
func setup(t *testing.T, client, name string) []byte {
	t.Helper()
	dir := t.TempDir()
	tr := filepath.Join(dir, "transcript.jsonl")
	if err := os.WriteFile(tr, fixture(t, client+"/transcript.jsonl", ids), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"TRANSCRIPT": tr, "CWD": dir}
	if strings.Contains(name, "clear") {
		vars["TRANSCRIPT"] = filepath.Join(dir, "new.jsonl") // a fresh conversation: not written yet
	}
	return fixture(t, client+"/"+name, vars)
}

func run(t *testing.T, f *fake, o Options, input []byte) (stdout, stderr string) {
	t.Helper()
	o.Dial = func(context.Context) (Caller, error) { return f, nil }
	var out, errb bytes.Buffer
	Main(context.Background(), o, bytes.NewReader(input), &out, &errb)
	return out.String(), errb.String()
}

func TestPreCompactPostsInstruction(t *testing.T) {
	for _, client := range []string{"claude", "codex"} {
		t.Run(client, func(t *testing.T) {
			f := &fake{}
			in := setup(t, client, "pre-compact.json")
			out, errs := run(t, f, Options{Event: "PreCompact"}, in)
			if out != "" || errs != "" {
				t.Fatalf("stdout %q stderr %q", out, errs)
			}
			if len(f.calls) != 1 || f.calls[0] != "post_session_message" {
				t.Fatalf("calls %v", f.calls)
			}
			a := f.args[0]
			text := a["text"].(string)
			if a["session_id"] != "ses_new1" || a["kind"] != "progress" || !strings.Contains(text, newest) {
				t.Errorf("args %v", a)
			}
			if strings.Contains(text, "cto_pat_abc") {
				t.Errorf("secret not redacted: %q", text)
			}
			if tags := a["tags"].([]string); len(tags) != 1 || tags[0] != "compaction" {
				t.Errorf("tags %v", tags)
			}
			// The same hook again: the same key and text (the server replays it).
			f2 := &fake{}
			run(t, f2, Options{Event: "PreCompact"}, in)
			if f2.args[0]["delivery_key"] != a["delivery_key"] || f2.args[0]["text"] != text {
				t.Errorf("not deterministic: %v vs %v", f2.args[0], a)
			}
			// Stop on the same instruction is the same message.
			f3 := &fake{}
			run(t, f3, Options{Event: "Stop"}, in)
			if f3.args[0]["delivery_key"] != a["delivery_key"] || f3.args[0]["text"] != text {
				t.Errorf("Stop differs: %v vs %v", f3.args[0], a)
			}
		})
	}
}

func TestSessionStartInjectsBrief(t *testing.T) {
	for _, client := range []string{"claude", "codex"} {
		t.Run(client, func(t *testing.T) {
			f := &fake{answers: map[string]any{"read_session_handoff": map[string]any{
				"session_id": "ses_new1", "project_id": "prj_1", "handoff_brief": map[string]any{"session": map[string]any{"id": "ses_new1"}}}}}
			out, errs := run(t, f, Options{Event: "SessionStart"}, setup(t, client, "session-start-compact.json"))
			if errs != "" {
				t.Fatal(errs)
			}
			var o Output
			if err := json.Unmarshal([]byte(out), &o); err != nil || o.HookSpecificOutput == nil {
				t.Fatalf("output %q: %v", out, err)
			}
			if o.HookSpecificOutput.HookEventName != "SessionStart" || !strings.Contains(o.HookSpecificOutput.AdditionalContext, `{"session":{"id":"ses_new1"}}`) {
				t.Errorf("context %q", o.HookSpecificOutput.AdditionalContext)
			}
			if f.args[0]["session_id"] != "ses_new1" {
				t.Errorf("read %v", f.args[0])
			}
		})
	}
}

func TestSessionStartCandidates(t *testing.T) {
	projects := map[string]any{"projects": []any{
		map[string]any{"project_id": "prj_a", "name": "alpha"}, map[string]any{"project_id": "prj_b", "name": "beta"}}}
	sessions := map[string]any{"total_count": 2, "sessions": []any{
		map[string]any{"session_id": "ses_1", "session_ref": "~s1", "title": "one", "updated_at": "2026-07-01T10:00:00Z"},
		map[string]any{"session_id": "ses_2", "session_ref": "~s2", "title": "two", "updated_at": "2026-07-02T10:00:00Z"}}}
	f := &fake{answers: map[string]any{"list_projects": projects, "list_sessions": sessions}}
	out, errs := run(t, f, Options{Event: "SessionStart", Project: "beta"}, setup(t, "claude", "session-start-clear.json"))
	if errs != "" {
		t.Fatal(errs)
	}
	var o Output
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		t.Fatal(err)
	}
	ctx := o.HookSpecificOutput.AdditionalContext
	for _, want := range []string{"ses_1", "ses_2", "None was chosen", "beta"} {
		if !strings.Contains(ctx, want) {
			t.Errorf("context lacks %q: %s", want, ctx)
		}
	}
	if f.args[1]["project"] != "prj_b" {
		t.Errorf("list_sessions %v", f.args[1])
	}
	// Several projects, none named, none like the cwd: the projects are listed, no session.
	f = &fake{answers: map[string]any{"list_projects": projects}}
	out, _ = run(t, f, Options{Event: "SessionStart"}, setup(t, "codex", "session-start-clear.json"))
	if !strings.Contains(out, "alpha") || !strings.Contains(out, "beta") || len(f.calls) != 1 {
		t.Errorf("projects: %s (calls %v)", out, f.calls)
	}
}

func TestFailsOpen(t *testing.T) {
	in := setup(t, "claude", "pre-compact.json")
	for name, o := range map[string]Options{
		"dial": {Event: "PreCompact", Dial: func(context.Context) (Caller, error) { return nil, errors.New("connection refused") }},
		"error": {Event: "PreCompact", Dial: func(context.Context) (Caller, error) {
			return &fake{errs: map[string]error{"post_session_message": &ToolError{"post_session_message", "session_closed", "closed"}}}, nil
		}},
		"slow": {Event: "PreCompact", Timeout: 50 * time.Millisecond, Dial: func(ctx context.Context) (Caller, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}},
		"panic": {Event: "PreCompact", Dial: func(context.Context) (Caller, error) { panic("boom") }},
	} {
		t.Run(name, func(t *testing.T) {
			var out, errb bytes.Buffer
			start := time.Now()
			Main(context.Background(), o, bytes.NewReader(in), &out, &errb)
			if out.Len() != 0 {
				t.Errorf("stdout %q", out.String())
			}
			if n := strings.Count(errb.String(), "\n"); n != 1 || !strings.Contains(errb.String(), "continuo hook PreCompact") {
				t.Errorf("stderr %q: want one line", errb.String())
			}
			if time.Since(start) > 2*time.Second {
				t.Errorf("took %v", time.Since(start))
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

func TestSessionStartupDoesNothing(t *testing.T) {
	f := &fake{}
	out, errs := run(t, f, Options{Event: "SessionStart"}, []byte(`{"hook_event_name":"SessionStart","source":"startup","cwd":"/"}`))
	if out != "" || errs != "" || len(f.calls) != 0 {
		t.Errorf("startup: %q %q %v", out, errs, f.calls)
	}
}
