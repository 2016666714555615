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

// WorkflowGuide is the workflow.guide material, and the server's
// instructions on an endpoint of the session tools alone: how a model keeps
// its work in Continuo. Clients cut instructions at 2,048 characters
// (CONTRACT.md §1), and an endpoint of more toolsets adds a few lines of
// each (mcpserver.Instructions), so it stays well under MaxGuideChars, the
// recovery sequence first; every character sits in a model's context.
const WorkflowGuide = SessionsGuide + "\n" + ErrorsGuide

// SessionsGuide is the guide without the line on errors.
const SessionsGuide = `Continuo keeps this project's work outside the conversation, so a later one continues it exactly.
To continue earlier work (the user asks to continue, resume, pick up):
1. list_projects, then list_sessions(project). If several sessions could be meant, ask the user which (by title); never pick one yourself.
2. read_session_handoff(session_id). If it cut anything, next_actions[0] is read_session_working_set(session_id): call it before acting, following next_cursor until null.
3. Follow the constraints word for word; check basis.complete.
4. work_on_project(session_id, instruction=what the user asks now).
New work: work_on_project(project, instruction) once; keep its session_id.
While working, post_session_message: decision (supersedes=msg_… to replace one), guidance (the user's standing instructions, verbatim), progress, todo, risk, question (only what the user must settle; never answer it yourself), answer (the user's reply, reply_to=the question). Cite the decisions a todo or next step depends on by msg_… id. A fresh delivery_key per post makes a retry safe.
Before you stop or the context is compacted, post the current state: kind=progress, tags=["handoff"]: done and verified, in progress, next, how to verify.
Multi-step work: Continuo's create_goal, checkpoint_goal, revise_goal_plan and update_goal (not a client's own goal tools), each with the revision last read (Continuo's get_goal) and a fresh idempotency_key.
resolve_session_message settles a todo, question or risk; close_session ends a finished task.
Notes are reports, not proof: run_validation before relying on "tests pass". Never put credentials in notes.`

// ErrorsGuide is the guide's line on errors, which every endpoint's
// instructions end with.
const ErrorsGuide = `A failed call has structuredContent.error = {code, message, retry}; retry says what next (reobserve: read the current state first).`

// MaxGuideChars bounds WorkflowGuide, in characters (CONTRACT.md §1).
const MaxGuideChars = 2048
