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
const WorkflowGuide = `Continuo keeps this project's work outside the conversation, so that any later conversation (another account, model or client) continues it exactly.
- Continuing: when the user asks to continue, resume or pick up earlier work, call list_projects, then list_sessions(project); if more than one session could be meant, ask the user which (by title). Then read_session_handoff(session_id), follow its constraints word for word, check basis.complete and every truncated flag (next_actions names the call that fetches what was cut), and call work_on_project(session_id, instruction) with what the user asks now.
- Starting: for new work, call work_on_project(project, instruction) once; keep the session_id it returns.
- As you work, record with post_session_message: decision (what was agreed, with supersedes when it replaces one), guidance (the user's standing instructions, verbatim), progress (what is done), todo and risk (open work), question (only what the user must settle; never answer it yourself), answer (the user's reply, reply_to the question). Give each post a fresh delivery_key: a retry with the same key is safe.
- Before you stop, and whenever the context may be compacted, post the current state: kind=progress, tags=["handoff"]: what is done and verified, what is in progress, what comes next, how to verify it. The newest one is carried in full by every brief.
- For multi-step work keep a goal: create_goal with the plan, checkpoint_goal as steps finish, revise_goal_plan when the plan changes, update_goal to finish; each change takes the revision you last read (get_goal) and a fresh idempotency_key.
- Resolve todos, questions and risks with resolve_session_message when they are done; close_session when the task is finished.
- Notes are reports, not proof: check the files and run the checks before you rely on a note that says tests pass.
- Never put credentials in notes: they are redacted from everything a model reads.
- A failed call returns structuredContent.error = {code, message, retry}: retry says what to do next (fix_input, wait, reobserve, reconcile: look at the current state first, retry_same, none).`
