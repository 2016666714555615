package workflow

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// ProjectView is a project as list_projects shows it.
type ProjectView struct {
	ProjectID string          `json:"project_id"`
	Name      string          `json:"name"`
	Access    continuo.Access `json:"access"`
	HasRoot   bool            `json:"has_root"`
	Writable  bool            `json:"writable"`
	Checks    []string        `json:"checks"`
}

// Projects lists the projects the caller's group may reach. When there
// are none, hint says why and what the operator runs to change that (the
// same words whether or not other groups have projects: a group learns
// nothing about others' projects).
func (s *Service) Projects(ctx context.Context, c *continuo.Caller) (projects []ProjectView, hint string, err error) {
	if err := c.Require(continuo.ScopeSessionsRead); err != nil {
		return nil, "", err
	}
	var out []ProjectView
	group := ""
	err = s.store.Read(ctx, func(tx store.Tx) error {
		vis, err := s.auth.Projects(ctx, tx, c)
		if err != nil {
			return err
		}
		out = make([]ProjectView, 0, len(vis))
		for _, v := range vis {
			out = append(out, ProjectView{ProjectID: v.Project.ID, Name: v.Project.Name, Access: v.Access,
				HasRoot: v.Project.Root != "", Writable: v.Project.Writable, Checks: checkNames(v.Project.Checks)})
		}
		if len(out) == 0 {
			g, err := tx.GroupGet(ctx, c.GroupID)
			if err != nil {
				return err
			}
			group = g.Name
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if len(out) == 0 {
		hint = noProjectsHint(group)
	}
	return out, hint, nil
}

// noProjectsHint explains an empty list_projects: projects are reached only
// through a grant to the caller's group, which the operator gives.
func noProjectsHint(group string) string {
	return fmt.Sprintf("Your group %q has no grant on any project, so there is nothing to work on yet. "+
		"Tell the user: the operator of this Continuo server gives access with "+
		"`continuo project grant PROJECT %s:write` (or registers a checkout with "+
		"`continuo project add NAME --root DIR --grant %s:write`, or makes your token with "+
		"`continuo token create --principal NAME --scopes sessions:read,sessions:write --grant PROJECT:write`).", group, group, group)
}

func checkNames(m map[string]continuo.Check) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// WorkOn is the input of work_on_project.
type WorkOn struct {
	Project     string
	SessionID   string
	Instruction string
	Title       string
	Mode        continuo.Mode
	// IdempotencyKey, when set, makes a retry after an uncertain response
	// safe: the same key and input return the original session (Replayed)
	// without starting another or appending the instruction again.
	IdempotencyKey string
}

func (in WorkOn) fingerprint() string {
	return fingerprint("work/v1", in.Project, in.SessionID, in.Instruction, in.Title, in.Mode)
}

// WorkResult is what work_on_project returns.
type WorkResult struct {
	Session  *continuo.Session
	Project  *continuo.Project
	Resumed  bool
	Replayed bool
	Worktree string // path of the session's worktree, if any
}

// WorkOnProject starts a new session, or resumes the exact active session
// named by SessionID, appending the instruction.
func (s *Service) WorkOnProject(ctx context.Context, c *continuo.Caller, in WorkOn) (*WorkResult, error) {
	if err := c.Require(continuo.ScopeSessionsWrite); err != nil {
		return nil, err
	}
	if in.SessionID != "" {
		return s.resume(ctx, c, in)
	}
	return s.start(ctx, c, in)
}

func (s *Service) resume(ctx context.Context, c *continuo.Caller, in WorkOn) (*WorkResult, error) {
	if err := s.restoreWorktree(ctx, c, in.SessionID); err != nil {
		return nil, err
	}
	var res *WorkResult
	scope := workScope(c.GroupID)
	err := s.store.Write(ctx, func(tx store.Tx) error {
		sess, p, err := s.resolveWithProject(ctx, tx, c, in.SessionID)
		if err != nil {
			return err
		}
		if err := checkProject(in.Project, p); err != nil {
			return err
		}
		if id, err := replay(ctx, tx, scope, in.IdempotencyKey, in.fingerprint()); err != nil || id != "" {
			res = &WorkResult{Session: sess, Project: p, Resumed: true, Replayed: true, Worktree: sess.WorktreePath}
			return err
		}
		prev := sess.Revision
		if sess.Lifecycle != continuo.LifecycleActive {
			return continuo.Errorf(continuo.CodeSessionClosed, "session %s is closed; start a new session to continue", continuo.SessionRef(sess.Ref))
		}
		if in.Mode != "" && in.Mode != sess.Mode {
			return continuo.Invalid("mode", "session %s works in %s mode; the mode is fixed when a session starts", continuo.SessionRef(sess.Ref), sess.Mode)
		}
		sess.Instructions++
		sess.LatestInstr = in.Instruction
		s.bump(sess)
		if err := tx.SessionUpdate(ctx, sess, prev); err != nil {
			return err
		}
		if err := tx.InstructionAppend(ctx, store.Instruction{SessionID: sess.ID, Seq: sess.Instructions, AfterSeq: sess.MessageSeq,
			Text: in.Instruction, CreatedAt: sess.UpdatedAt}); err != nil {
			return err
		}
		res = &WorkResult{Session: sess, Project: p, Resumed: true, Worktree: sess.WorktreePath}
		return remember(ctx, tx, scope, in.IdempotencyKey, in.fingerprint(), sess.ID, sess.UpdatedAt)
	})
	if err != nil {
		return nil, fmt.Errorf("resume session %s: %w", in.SessionID, err)
	}
	return res, nil
}

// restoreWorktree makes the worktree of an active worktree-mode session
// again when its directory was deleted, on the session's branch (which
// keeps its commits; uncommitted changes went with the directory), so that
// a resume never hands out a path that does not exist. It runs before the
// resume's write, because git must not run inside one; a session it cannot
// see is left to that write to report.
func (s *Service) restoreWorktree(ctx context.Context, c *continuo.Caller, ref string) error {
	var sess *continuo.Session
	var p *continuo.Project
	err := s.store.Read(ctx, func(tx store.Tx) (err error) {
		sess, p, err = s.resolveWithProject(ctx, tx, c, ref)
		return err
	})
	if err != nil || sess.Mode != continuo.ModeWorktree || sess.WorktreePath == "" || sess.Lifecycle != continuo.LifecycleActive {
		return nil
	}
	if _, err := os.Stat(sess.WorktreePath); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	// git still lists the deleted worktree, and refuses to add one at its
	// path (or to check its branch out elsewhere) until it forgets it.
	_ = s.git.RemoveWorktree(ctx, p.Root, sess.WorktreePath)
	if err := s.git.AddWorktree(ctx, p.Root, sess.WorktreePath, sess.WorktreeBranch); err != nil {
		return continuo.Errorf(continuo.CodeInvalidState, "the worktree of session %s was deleted and could not be made again on branch %s; the server log has the details",
			continuo.SessionRef(sess.Ref), sess.WorktreeBranch).Because(err)
	}
	return nil
}

func (s *Service) start(ctx context.Context, c *continuo.Caller, in WorkOn) (*WorkResult, error) {
	mode := in.Mode
	if mode == "" {
		mode = continuo.ModeCheckout
	}
	// Resolve the project first, outside the write: a worktree must exist
	// before the session that points at it is committed.
	var p *continuo.Project
	var ref int64
	var prior *WorkResult // a replay of a keyed start
	scope := workScope(c.GroupID)
	// replayed loads the session of an earlier start with the same key.
	// It is asked before anything is made (no worktree for a replay) and
	// again in the write (a concurrent start with the key may have won).
	replayed := func(tx store.Tx) (bool, error) {
		prior = nil
		id, err := replay(ctx, tx, scope, in.IdempotencyKey, in.fingerprint())
		if err != nil || id == "" {
			return false, err
		}
		sess, p, err := s.resolveWithProject(ctx, tx, c, id)
		if err == nil {
			prior = &WorkResult{Session: sess, Project: p, Replayed: true, Worktree: sess.WorktreePath}
		}
		return true, err
	}
	err := s.store.Read(ctx, func(tx store.Tx) error {
		if done, err := replayed(tx); done || err != nil {
			return err
		}
		var err error
		p, err = s.pickProject(ctx, tx, c, in.Project, mode)
		return err
	})
	if err != nil || prior != nil {
		return prior, err
	}
	now := s.now()
	sess := &continuo.Session{ID: continuo.NewID(continuo.PrefixSession, now), GroupID: c.GroupID, ProjectID: p.ID,
		Title: in.Title, Lifecycle: continuo.LifecycleActive, Mode: mode, RootInstr: in.Instruction, LatestInstr: in.Instruction,
		Instructions: 1, Revision: 1, CreatedAt: now, UpdatedAt: now}
	if sess.Title == "" {
		sess.Title = defaultTitle(in.Instruction)
	}
	if mode == continuo.ModeWorktree {
		// git must not run inside a write transaction (it would hold up every
		// other writer), so reserve the reference first, make the worktree,
		// then commit the session. A reference whose session never commits
		// is simply never seen; references are never reused.
		if err := s.store.Write(ctx, func(tx store.Tx) (err error) {
			ref, err = tx.SessionRefNext(ctx, c.GroupID)
			return err
		}); err != nil {
			return nil, fmt.Errorf("start session: %w", err)
		}
		sess.Ref = ref
		sess.WorktreeBranch = "continuo/s" + strconv.FormatInt(ref, 10)
		sess.WorktreePath = s.worktreePath(p.ID, ref)
		if err := s.git.AddWorktree(ctx, p.Root, sess.WorktreePath, sess.WorktreeBranch); err != nil {
			return nil, continuo.Errorf(continuo.CodeInvalidState, "could not create a git worktree for session %s in project %q; the server log has the details",
				continuo.SessionRef(ref), p.Name).Because(err)
		}
	}
	// The head the session starts from, so a later brief can say what was
	// committed since. A checkout git cannot read is not fatal: the brief
	// reports the workspace as unavailable then.
	if dir := p.Root; dir != "" {
		if sess.WorktreePath != "" {
			dir = sess.WorktreePath
		}
		if head, err := s.git.Head(ctx, dir); err == nil {
			sess.StartHead = head
		}
	}
	var created *continuo.Session
	err = s.store.Write(ctx, func(tx store.Tx) error {
		created = nil
		if done, err := replayed(tx); done || err != nil {
			return err
		}
		ns := *sess // sess stays as it was: Write may run this again
		if ns.Ref == 0 {
			var err error
			if ns.Ref, err = tx.SessionRefNext(ctx, c.GroupID); err != nil {
				return err
			}
		}
		if err := tx.SessionCreate(ctx, &ns); err != nil {
			return err
		}
		if err := tx.InstructionAppend(ctx, store.Instruction{SessionID: ns.ID, Seq: 1, Text: in.Instruction, CreatedAt: now}); err != nil {
			return err
		}
		if err := remember(ctx, tx, scope, in.IdempotencyKey, in.fingerprint(), ns.ID, now); err != nil {
			return err
		}
		created = &ns
		return nil
	})
	if err != nil || prior != nil {
		if sess.WorktreePath != "" {
			// The session was not committed: take its worktree away again so
			// that nothing is left half-made.
			_ = s.git.RemoveWorktree(context.WithoutCancel(ctx), p.Root, sess.WorktreePath)
		}
		if err != nil {
			return nil, fmt.Errorf("start session: %w", err)
		}
		return prior, nil
	}
	return &WorkResult{Session: created, Project: p, Worktree: created.WorktreePath}, nil
}

// pickProject resolves the project of a new session. Without a project
// argument, a caller who can reach exactly one project gets that one.
func (s *Service) pickProject(ctx context.Context, tx store.Tx, c *continuo.Caller, ref string, mode continuo.Mode) (*continuo.Project, error) {
	need := continuo.AccessRead
	if mode == continuo.ModeWorktree {
		if err := c.Require(continuo.ScopeProjectWrite); err != nil {
			return nil, err
		}
		need = continuo.AccessWrite
	}
	if ref == "" {
		vis, err := s.auth.Projects(ctx, tx, c)
		if err != nil {
			return nil, err
		}
		if len(vis) != 1 {
			return nil, continuo.Invalid("project", "required: your group can reach %d projects (see list_projects)", len(vis))
		}
		ref = vis[0].Project.ID
	}
	p, _, err := s.auth.ResolveProject(ctx, tx, c, ref, need)
	if err != nil {
		return nil, err
	}
	if mode == continuo.ModeWorktree {
		if p.Root == "" || !p.Writable {
			return nil, continuo.Errorf(continuo.CodeInvalidState, "project %q has no writable root; worktree mode needs one", p.Name)
		}
		if s.worktree == "" {
			return nil, continuo.Errorf(continuo.CodeInvalidState, "this server has no worktree directory configured")
		}
	}
	return p, nil
}

// defaultTitle is the first line of the instruction, cut to 120 bytes.
func defaultTitle(instr string) string { return cut(firstLine(instr), 120) }

// firstLine is instr up to its first line break.
func firstLine(instr string) string {
	if i := strings.IndexAny(instr, "\r\n"); i >= 0 {
		return instr[:i]
	}
	return instr
}

// cut shortens s to at most n bytes without splitting a UTF-8 sequence.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// CloseSession closes a session. Closing a closed session changes nothing.
func (s *Service) CloseSession(ctx context.Context, c *continuo.Caller, ref, summary string) (*continuo.Session, bool, error) {
	if err := c.Require(continuo.ScopeSessionsWrite); err != nil {
		return nil, false, err
	}
	var out *continuo.Session
	var changed bool
	err := s.store.Write(ctx, func(tx store.Tx) error {
		changed = false
		sess, err := s.resolveSession(ctx, tx, c, ref)
		if err != nil {
			return err
		}
		out = sess
		if sess.Lifecycle == continuo.LifecycleClosed {
			return nil
		}
		prev := sess.Revision
		s.bump(sess)
		sess.Lifecycle = continuo.LifecycleClosed
		at := sess.UpdatedAt
		sess.ClosedAt = &at
		sess.Summary = summary
		changed = true
		return tx.SessionUpdate(ctx, sess, prev)
	})
	if err != nil {
		return nil, false, fmt.Errorf("close session %s: %w", ref, err)
	}
	return out, changed, nil
}

// ListSessions lists the caller group's sessions in one project; other
// groups' sessions are filtered out before counting.
func (s *Service) ListSessions(ctx context.Context, c *continuo.Caller, project string, lc continuo.Lifecycle, offset, limit int) (*SessionPage, error) {
	return s.FindSessions(ctx, c, SessionQuery{Project: project, Lifecycle: lc, Offset: offset, Limit: limit})
}
