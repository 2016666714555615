package hook

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recording is one client's fixtures, recorded from the real client by
// internal/e2e's TestRealClients (testdata/README.md).
type recording struct {
	client string
	Expect struct {
		SessionID   string `json:"session_id"`
		SessionRef  string `json:"session_ref"`
		ProjectID   string `json:"project_id"`
		Instruction string `json:"instruction"`
	}
}

var clients = []string{ClientClaude, ClientCodex}

func recorded(t *testing.T, client string) *recording {
	t.Helper()
	r := &recording{client: client}
	b, err := os.ReadFile(filepath.Join("testdata", client, "expect.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r.Expect); err != nil {
		t.Fatal(err)
	}
	return r
}

// transcriptData is the recorded transcript (rollout file for Codex).
func (r *recording) transcriptData(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", r.client, "transcript.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// transcript writes the recorded transcript to a file of its own.
func (r *recording) transcript(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "transcript.jsonl")
	if err := os.WriteFile(path, r.transcriptData(t), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// input is the recorded hook input name (EVENT or EVENT-SOURCE) pointed at
// transcript.
func (r *recording) input(t *testing.T, name, transcript string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", r.client, "hooks", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var in map[string]any
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	in["transcript_path"], in["cwd"] = transcript, filepath.Dir(transcript)
	out, _ := json.Marshal(in)
	return out
}

func TestTranscriptRecorded(t *testing.T) {
	for _, client := range clients {
		t.Run(client, func(t *testing.T) {
			r := recorded(t, client)
			data := r.transcriptData(t)
			tr := parse(data, 0)
			if tr.Format != Format(client) {
				t.Errorf("format %q, want %q", tr.Format, client)
			}
			want := Binding{SessionID: r.Expect.SessionID, SessionRef: r.Expect.SessionRef, ProjectID: r.Expect.ProjectID}
			if tr.Binding == nil || *tr.Binding != want {
				t.Errorf("binding %+v, want %+v (the work_on_project result)", tr.Binding, want)
			}
			if tr.Instruction == nil || tr.Instruction.Text != r.Expect.Instruction {
				t.Fatalf("instruction %+v, want %q", tr.Instruction, r.Expect.Instruction)
			}
			line := data[tr.Instruction.Offset:]
			if i := bytes.IndexByte(line, '\n'); i >= 0 {
				line = line[:i]
			}
			if !bytes.Contains(line, []byte(strings.TrimPrefix(r.Expect.Instruction, "[[after]]"))) {
				t.Errorf("offset %d is not the instruction's line: %.120s", tr.Instruction.Offset, line)
			}
			if tr.Skipped != 0 {
				t.Errorf("skipped %d lines of a real transcript", tr.Skipped)
			}
			// What the client writes besides may change: unknown lines and
			// broken ones degrade, they never stop the reading.
			noise := "not json\n" + `{"type":"brand_new_line","payload":{"x":1}}` + "\n" + `{"type":"user","message":{"content":42}}` + "\n"
			tr2 := parse(append([]byte(noise), data...), 0)
			if tr2.Binding == nil || *tr2.Binding != want || tr2.Instruction == nil || tr2.Instruction.Text != r.Expect.Instruction {
				t.Errorf("with noise: %+v %+v", tr2.Binding, tr2.Instruction)
			}
		})
	}
}

func TestTranscriptTailIsBounded(t *testing.T) {
	r := recorded(t, ClientClaude)
	data := r.transcriptData(t)
	// Padding before the transcript: beyond the tail read, it is never parsed.
	pad := bytes.Repeat([]byte(`{"type":"user","message":{"role":"user","content":"old"}}`+"\n"), 1000)
	all := append(append([]byte{}, pad...), data...)
	tr, err := readTail(bytes.NewReader(all), int64(len(all)), int64(len(data)+10))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Binding == nil || tr.Binding.SessionID != r.Expect.SessionID || tr.Instruction == nil {
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

// TestTranscriptErrorResultBindsNothing: a work_on_project call that
// failed binds nothing, nor does another tool's result with a session id.
// The lines are the recorded ones with the result turned into an error.
func TestTranscriptErrorResultBindsNothing(t *testing.T) {
	for _, client := range clients {
		t.Run(client, func(t *testing.T) {
			r := recorded(t, client)
			var lines []string
			for _, l := range strings.Split(string(r.transcriptData(t)), "\n") {
				if strings.Contains(l, `\"session_id\":\"`+r.Expect.SessionID) && strings.Contains(l, `\"resumed\"`) {
					// The result of work_on_project: make it the error a
					// closed session gives.
					l = strings.ReplaceAll(l, `\"session_id\":\"`+r.Expect.SessionID+`\"`, `\"error\":{\"code\":\"session_closed\"},\"session_id\":\"`+r.Expect.SessionID+`\"`)
					l = strings.ReplaceAll(l, `"session_id":"`+r.Expect.SessionID+`"`, `"error":{"code":"session_closed"},"session_id":"`+r.Expect.SessionID+`"`)
				}
				lines = append(lines, l)
			}
			if tr := parse([]byte(strings.Join(lines, "\n")), 0); tr.Binding != nil {
				t.Errorf("bound %+v", tr.Binding)
			}
		})
	}
}
