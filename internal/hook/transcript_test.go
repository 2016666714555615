package hook

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture reads a testdata file with its placeholders filled in.
func fixture(t *testing.T, name string, vars map[string]string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for k, v := range vars {
		s = strings.ReplaceAll(s, "{{"+k+"}}", v)
	}
	return []byte(s)
}

var ids = map[string]string{"SESSION_ID": "ses_new1", "SESSION_REF": "~s2", "PROJECT_ID": "prj_1",
	"OTHER_SESSION_ID": "ses_old1", "CWD": "/home/me/demo"}

const newest = "Keep the flag name exactly --verbose and never touch the CI config."

func TestTranscriptFixtures(t *testing.T) {
	for _, c := range []struct {
		client  string
		format  Format
		skipped int
	}{{"claude", FormatClaude, 1}, {"codex", FormatCodex, 1}} {
		t.Run(c.client, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.jsonl")
			data := fixture(t, c.client+"/transcript.jsonl", ids)
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			tr, err := ReadTranscript(path)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Format != c.format {
				t.Errorf("format %q, want %q", tr.Format, c.format)
			}
			if tr.Binding == nil || *tr.Binding != (Binding{SessionID: "ses_new1", SessionRef: "~s2", ProjectID: "prj_1"}) {
				t.Errorf("binding %+v: want the newest work_on_project result", tr.Binding)
			}
			if tr.Instruction == nil || !strings.HasPrefix(tr.Instruction.Text, newest) {
				t.Fatalf("instruction %+v", tr.Instruction)
			}
			if got := string(data[tr.Instruction.Offset:]); !strings.Contains(got[:bytes.IndexByte([]byte(got), '\n')], newest) {
				t.Errorf("offset %d is not the instruction's line: %.80s", tr.Instruction.Offset, got)
			}
			if tr.Skipped != c.skipped {
				t.Errorf("skipped %d lines, want %d (the malformed one)", tr.Skipped, c.skipped)
			}
		})
	}
}

func TestTranscriptTailIsBounded(t *testing.T) {
	data := fixture(t, "claude/transcript.jsonl", ids)
	// Padding before the transcript: beyond the tail read, it is never parsed.
	pad := bytes.Repeat([]byte(`{"type":"user","message":{"role":"user","content":"old"}}`+"\n"), 1000)
	all := append(append([]byte{}, pad...), data...)
	tr, err := readTail(bytes.NewReader(all), int64(len(all)), int64(len(data)+10))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Binding == nil || tr.Binding.SessionID != "ses_new1" || tr.Instruction == nil {
		t.Fatalf("tail: %+v", tr)
	}
	if want := int64(len(pad)); tr.Instruction.Offset < want {
		t.Errorf("offset %d is not absolute (tail starts at %d)", tr.Instruction.Offset, want)
	}
	// A tail too short to hold the work_on_project result binds nothing.
	tr, _ = readTail(bytes.NewReader(all), int64(len(all)), 300)
	if tr.Binding != nil {
		t.Errorf("short tail bound %+v", tr.Binding)
	}
	// A tail cut inside one line holds nothing.
	tr, _ = readTail(bytes.NewReader(pad), int64(len(pad)), 20)
	if tr.Instruction != nil || tr.Format != FormatUnknown {
		t.Errorf("cut line read as %+v", tr)
	}
}

func TestTranscriptUnknownAndMalformed(t *testing.T) {
	for name, data := range map[string]string{
		"empty":         "",
		"not json":      "hello\nworld\n",
		"other jsonl":   `{"event":"x"}` + "\n" + `{"type":"weird","x":1}` + "\n",
		"truncated":     `{"type":"user","message":{"role":"user","content":"a`,
		"binary":        "\x00\x01\x02\n\xff\xfe",
		"wrong shapes":  `{"type":"user","message":{"role":"user","content":42}}` + "\n" + `{"type":"assistant","message":{"content":{"x":1}}}` + "\n",
		"codex unknown": `{"timestamp":"t","type":"session_meta","payload":{}}` + "\n" + `{"timestamp":"t","type":"new_kind","payload":[1,2]}` + "\n" + `{"timestamp":"t","type":"event_msg","payload":"str"}` + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			tr := parse([]byte(data), 0)
			if tr.Binding != nil || tr.Instruction != nil {
				t.Errorf("bound %+v / %+v from %q", tr.Binding, tr.Instruction, data)
			}
		})
	}
	// A long line is skipped, not read.
	long := `{"type":"user","message":{"role":"user","content":"` + strings.Repeat("x", MaxLineBytes) + `"}}`
	if tr := parse([]byte(long+"\n"), 0); tr.Instruction != nil || tr.Skipped != 1 {
		t.Errorf("long line: %+v", tr)
	}
}

func TestTranscriptErrorResultBindsNothing(t *testing.T) {
	data := `{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"mcp__c__work_on_project","input":{}}]}}
{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","is_error":true,"content":"session_closed"}]}}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"mcp__c__work_on_project","input":{}}]}}
{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t2","type":"tool_result","content":"{\"error\":{\"code\":\"not_found\"},\"session_id\":\"ses_x\"}"}]}}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"t3","name":"mcp__c__read_session_handoff","input":{}}]}}
{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t3","type":"tool_result","content":"{\"session_id\":\"ses_y\"}"}]}}
`
	if tr := parse([]byte(data), 0); tr.Binding != nil {
		t.Errorf("bound %+v", tr.Binding)
	}
}
