package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Recording: with CONTINUO_RECORD_CLIENTS=1, TestRealClients (its HTTP run
// of each client) writes what the real client wrote into
// internal/hook/testdata/CLIENT: the conversation's transcript (Claude
// Code) or rollout file (Codex CLI) and every hook input it gave, by event
// and source, with expect.json (the session they bind to and the newest
// instruction). The hook package's tests read them. Paths of this machine
// are replaced with /home/dev/… and the binary with
// /usr/local/bin/continuo; nothing else is changed.
//
//	cd interop/clients && npm ci && cd ../..
//	CONTINUO_RECORD_CLIENTS=1 go test -run 'TestRealClients/.*/http' ./internal/e2e

// recordDir is where the hook inputs of this run go ("" when not
// recording).
func recordDir(t *testing.T, client string) string {
	if os.Getenv("CONTINUO_RECORD_CLIENTS") == "" || !strings.HasSuffix(t.Name(), "/http") {
		return ""
	}
	return t.TempDir()
}

// recordHooks makes every hook command of the settings file save its input
// before it runs `continuo hook` on it.
func (st *story) recordHooks(path string, settings []byte) {
	t := st.t
	script := filepath.Join(st.recordDir, "record-hook")
	body := "#!/bin/sh\nf=\"" + st.recordDir + "/$1-$(date +%s%N).json\"\ncat > \"$f\"\nexec '" + binary + "' hook \"$@\" < \"$f\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	rewritten := strings.ReplaceAll(string(settings), binary+" hook ", script+" ")
	if err := os.WriteFile(path, []byte(rewritten), 0o600); err != nil {
		t.Fatal(err)
	}
}

// record writes the fixtures of the conversation conv, bound to session.
func (st *story) record(conv, session string) {
	if st.recordDir == "" {
		return
	}
	t, c := st.t, st.client
	out := filepath.Join("..", "hook", "testdata", c.name)
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(out, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(c.home)
	normalize := func(b []byte) []byte {
		s := strings.ReplaceAll(string(b), binary, "/usr/local/bin/continuo")
		s = strings.ReplaceAll(s, filepath.Join(st.recordDir, "record-hook"), "/usr/local/bin/continuo hook")
		s = strings.ReplaceAll(s, root, "/home/dev")
		// Claude Code names a project's directory after its path.
		return []byte(strings.ReplaceAll(s, strings.ReplaceAll(root, "/", "-"), "-home-dev"))
	}
	pattern := map[string]string{
		"claude": filepath.Join(c.home, ".claude", "projects", "*", conv+".jsonl"),
		"codex":  filepath.Join(c.home, ".codex", "sessions", "*", "*", "*", "rollout-*-"+conv+".jsonl"),
	}[c.name]
	files, _ := filepath.Glob(pattern)
	if len(files) != 1 {
		t.Fatalf("transcript of %s: %v", conv, files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "transcript.jsonl"), normalize(b), 0o644); err != nil {
		t.Fatal(err)
	}
	// The newest input of each event and source.
	inputs, _ := filepath.Glob(filepath.Join(st.recordDir, "*.json"))
	sort.Strings(inputs)
	newest := map[string][]byte{}
	for _, f := range inputs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var in struct {
			Event  string `json:"hook_event_name"`
			Source string `json:"source"`
		}
		if json.Unmarshal(b, &in) != nil || in.Event == "" {
			t.Fatalf("hook input %s: %s", f, b)
		}
		name := in.Event
		if in.Source != "" {
			name += "-" + in.Source
		}
		newest[name] = b
	}
	for name, b := range newest {
		if err := os.WriteFile(filepath.Join(out, "hooks", name+".json"), normalize(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := must(t, st.cs, "list_sessions", map[string]any{"project": st.project})
	ref := ""
	for _, x := range anyList(s["sessions"]) {
		if x["session_id"] == session {
			ref, _ = x["session_ref"].(string)
		}
	}
	expect, _ := json.MarshalIndent(map[string]string{"session_id": session, "session_ref": ref, "project_id": st.project,
		"instruction": promptAfter, "recorded_with": st.clientVersion()}, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "expect.json"), append(expect, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %s fixtures in %s (%d hook inputs)", c.name, out, len(newest))
}

func (st *story) clientVersion() string {
	return strings.TrimSpace(st.client.run("--version").out)
}
