package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestContinuationWorkspace: the continuation story with a real git
// checkout. A conversation starts a session, leaves its current state and a
// constraint, commits once and leaves a half-done change; a new
// conversation reads a brief that says where the checkout is, which files
// changed, the head the session started from and the commit made since, and
// carries the constraint and the current state word for word.
func TestContinuationWorkspace(t *testing.T) {
	repo := gitRepo(t)
	s := start(t, dataDir(t, "sqlite"), repo)
	a := connect(t, s.URL, s.Admin)
	sid := must(t, a, "work_on_project", map[string]any{"project": s.Project, "instruction": "Add --json output to the list command"})["session_id"].(string)
	must(t, a, "post_session_message", map[string]any{"session_id": sid, "kind": "guidance", "text": "Never change the text output format.", "priority": "high"})
	state := "Done: the JSON encoder. In progress: wiring --json into list. Next: tests. Verify: go test ./..."
	must(t, a, "post_session_message", map[string]any{"session_id": sid, "kind": "progress", "text": state, "tags": []any{"handoff"}})

	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("encode.go", "package main\n")
	git("add", "encode.go")
	git("commit", "-q", "-m", "add the JSON encoder")
	write("README.md", "# demo\n\n--json prints JSON.\n")
	write("list.go", "package main // half done\n")

	b := connect(t, s.URL, token(t, s.dataDir, "admin", "sessions:read,sessions:write"))
	raw := must(t, b, "read_session_handoff", map[string]any{"session_id": sid})["handoff_brief"]
	js, _ := json.Marshal(raw)
	var brief struct {
		Task struct {
			CurrentState struct {
				Text    string `json:"text"`
				Handoff bool   `json:"handoff"`
			} `json:"current_state"`
		} `json:"task"`
		Constraints struct {
			Items []struct {
				Text string `json:"text"`
			} `json:"items"`
		} `json:"constraints"`
		Workspace struct {
			Path    string `json:"path"`
			Dirty   bool   `json:"dirty"`
			Changes struct {
				Items []struct{ Path, Status string } `json:"items"`
				Total int                             `json:"total"`
			} `json:"changes"`
			StartHead  string `json:"start_head"`
			Head       string `json:"head"`
			SinceStart struct {
				Count    int      `json:"count"`
				Subjects []string `json:"subjects"`
			} `json:"commits_since_start"`
		} `json:"workspace"`
		NextActions []string `json:"next_actions"`
	}
	if err := json.Unmarshal(js, &brief); err != nil {
		t.Fatalf("brief %s: %v", js, err)
	}
	w := brief.Workspace
	if w.Path != repo || !w.Dirty || w.StartHead == "" || w.StartHead == w.Head {
		t.Errorf("workspace path %q dirty %v start %q head %q", w.Path, w.Dirty, w.StartHead, w.Head)
	}
	changed := map[string]string{}
	for _, c := range w.Changes.Items {
		changed[c.Path] = c.Status
	}
	if w.Changes.Total != 2 || changed["list.go"] != "??" || !strings.Contains(changed["README.md"], "M") {
		t.Errorf("changed files %v (total %d), want README.md modified and list.go untracked", changed, w.Changes.Total)
	}
	if w.SinceStart.Count != 1 || len(w.SinceStart.Subjects) != 1 || w.SinceStart.Subjects[0] != "add the JSON encoder" {
		t.Errorf("commits since start %+v", w.SinceStart)
	}
	if brief.Task.CurrentState.Text != state || !brief.Task.CurrentState.Handoff {
		t.Errorf("current state %q, want the handoff note in full", brief.Task.CurrentState.Text)
	}
	if len(brief.Constraints.Items) != 1 || brief.Constraints.Items[0].Text != "Never change the text output format." {
		t.Errorf("constraints %+v", brief.Constraints.Items)
	}
	if !strings.Contains(strings.Join(brief.NextActions, "\n"), "uncommitted") {
		t.Errorf("next_actions do not mention the uncommitted changes: %v", brief.NextActions)
	}
}
