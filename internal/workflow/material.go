package workflow

import (
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/continuo-dev/continuo/internal/redact"
)

// Context material keys that work_on_project can attach.
const (
	MaterialProjectInstructions = "project.instructions"
	MaterialWorkflowGuide       = "workflow.guide"
)

// Material is one piece of context attached to a work_on_project result.
type Material struct {
	Key       string `json:"key"`
	Status    string `json:"status"` // available | not_found | unavailable
	Source    string `json:"source,omitempty"`
	Text      string `json:"text,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	Redacted  bool   `json:"redacted,omitempty"`
}

const maxMaterial = 16 << 10

// instructionFiles are read in this order; the first that exists wins.
var instructionFiles = []string{"AGENTS.md", "CLAUDE.md", ".continuo/instructions.md"}

// Materials returns the requested context materials for a session's
// project. A material that cannot be read says so; it never fails the call.
func (s *Service) Materials(r *WorkResult, keys []string) []Material {
	out := make([]Material, 0, len(keys))
	for _, k := range keys {
		switch k {
		case MaterialWorkflowGuide:
			out = append(out, Material{Key: k, Status: "available", Text: WorkflowGuide})
		case MaterialProjectInstructions:
			out = append(out, projectInstructions(r))
		}
	}
	return out
}

func projectInstructions(r *WorkResult) Material {
	m := Material{Key: MaterialProjectInstructions, Status: "not_found"}
	root := r.Project.Root
	if r.Worktree != "" {
		root = r.Worktree
	}
	if root == "" {
		return m
	}
	// The checkout is the project's, not the server's: a committed
	// AGENTS.md may be a symlink to /etc/passwd, or a FIFO that blocks any
	// reader forever. os.Root refuses any path that leaves the root
	// (symlinks included); O_NONBLOCK keeps a FIFO's open from waiting for
	// a writer; only a regular file is read, and at most maxMaterial+1
	// bytes of it.
	dir, err := os.OpenRoot(root)
	if err != nil {
		return Material{Key: m.Key, Status: "unavailable"}
	}
	defer dir.Close()
	for _, name := range instructionFiles {
		text, status := readContained(dir, name)
		switch status {
		case "not_found":
			continue
		case "available":
			red, changed := redact.String(text)
			short := cut(red, maxMaterial)
			return Material{Key: m.Key, Status: "available", Source: name, Text: short, Truncated: len(short) < len(red), Redacted: changed}
		default:
			return Material{Key: m.Key, Status: status, Source: name}
		}
	}
	return m
}

// readContained reads a regular file inside dir: "available" with its text,
// "not_found", or "unavailable" (outside the root, not a regular file, not
// readable).
func readContained(dir *os.Root, name string) (string, string) {
	f, err := dir.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return "", "not_found"
	}
	if err != nil {
		return "", "unavailable"
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return "", "unavailable"
	}
	b, err := io.ReadAll(io.LimitReader(f, maxMaterial+1))
	if err != nil {
		return "", "unavailable"
	}
	return string(b), "available"
}

// WorkflowGuide tells a model how to keep its work in Continuo.
const WorkflowGuide = `Continuo keeps this project's work outside the conversation.
- Record what matters as you go with post_session_message: kind=decision for agreed decisions, progress for what is done and what remains, todo/risk/question for open work, guidance for standing instructions. Give each post a stable delivery_key so that a retry after an uncertain response is safe.
- Use supersedes when a decision or progress note replaces an older one; the old one stays, marked superseded.
- Resolve todos, questions and risks with resolve_session_message when they are done.
- Before the conversation ends or the account changes, post a concise progress note with what remains.
- A new conversation continues with: list_projects, list_sessions(project), read_session_handoff(session_id), then work_on_project(session_id, instruction). Check basis.complete and each section's truncated flag before relying on the brief, and check the current files and tests: a note saying tests pass is a report, not proof.
- Never put credentials in notes: they are redacted from everything a model reads.
- A failed call returns structuredContent.error = {code, message, retry}: retry says what to do next (fix_input, wait, reobserve, reconcile: look at the current state first, retry_same, none).`
