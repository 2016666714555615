// Package workflow holds Workflow Sessions: the task, its instructions, the
// notes (decisions, progress, todos, risks, questions, guidance, answers),
// and the deterministic handoff brief that lets a new conversation continue
// where the last one stopped.
//
// Every rule lives here, once; the MCP layer only decodes arguments and maps
// errors, and the store only translates. Every read of a session checks both
// ownership (the caller's group owns it) and project access (the group still
// holds a grant on its project); a failure of either is not_found, so a
// caller cannot tell another group's session from one that does not exist.
package workflow

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/run"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/workspace"
)

// Service implements the session tools.
type Service struct {
	store    store.Store
	auth     *auth.Service
	now      func() time.Time
	worktree string // directory under which worktree-mode sessions get their checkouts
	git      Git
	runs     *run.Service // nil: no validation runs
	runners  []Runner     // the configured providers
}

// Git is what the service needs from a project's checkout. The default uses
// the git binary (internal/workspace); tests may substitute it.
type Git struct {
	// Probe lists up to n changed paths (the brief 20, the working set 500).
	Probe          func(ctx context.Context, root string, n int) (workspace.State, error)
	Fingerprint    func(root string) (string, error)
	AddWorktree    func(ctx context.Context, root, path, branch string) error
	RemoveWorktree func(ctx context.Context, root, path string) error
	Head           func(ctx context.Context, dir string) (string, error)
	// Since names up to n commits' subjects.
	Since  func(ctx context.Context, dir, base string, n int) (workspace.Commits, error)
	Source func(ctx context.Context, dir string) (workspace.Source, error)
}

// Options configures a Service.
type Options struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// WorktreeDir is where worktree-mode sessions are checked out; required
	// for worktree mode.
	WorktreeDir string
	// Git overrides the git access; zero fields use internal/workspace.
	Git Git
	// Runs runs validation checks and delegated models; nil means
	// run_validation and start_coding_agent are refused.
	Runs *run.Service
	// Runners are the configured providers.
	Runners []Runner
}

// New returns a Service.
func New(s store.Store, a *auth.Service, opts *Options) *Service {
	if opts == nil {
		opts = &Options{}
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	g := opts.Git
	if g.Probe == nil {
		g.Probe = workspace.ProbeUpTo
	}
	if g.Fingerprint == nil {
		g.Fingerprint = workspace.Fingerprint
	}
	if g.AddWorktree == nil {
		g.AddWorktree = workspace.AddWorktree
	}
	if g.RemoveWorktree == nil {
		g.RemoveWorktree = workspace.RemoveWorktree
	}
	if g.Head == nil {
		g.Head = workspace.Head
	}
	if g.Since == nil {
		g.Since = workspace.SinceUpTo
	}
	if g.Source == nil {
		g.Source = workspace.SourceOf
	}
	return &Service{store: s, auth: a, now: func() time.Time { return now().UTC() }, worktree: opts.WorktreeDir, git: g, runs: opts.Runs,
		runners: slices.Clone(opts.Runners)}
}

// resolveSession finds a session the caller may see, by ID or by "~sN".
func (s *Service) resolveSession(ctx context.Context, tx store.Tx, c *continuo.Caller, ref string) (*continuo.Session, error) {
	var sess *continuo.Session
	var err error
	switch {
	case continuo.ValidID(continuo.PrefixSession, ref):
		sess, err = tx.SessionGet(ctx, ref)
		if err == nil && sess.GroupID != c.GroupID {
			err = store.ErrNotFound
		}
	case strings.HasPrefix(ref, "~s"):
		n, perr := strconv.ParseInt(ref[2:], 10, 64)
		if perr != nil || n <= 0 || ref[2] == '0' || ref[2] == '+' {
			return nil, continuo.Invalid("session_id", "must be a ses_… id or a ~sN reference")
		}
		sess, err = tx.SessionGetByRef(ctx, c.GroupID, n)
	default:
		return nil, continuo.Invalid("session_id", "must be a ses_… id or a ~sN reference")
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, continuo.NotFound("session", ref)
	} else if err != nil {
		return nil, err
	}
	access, err := s.auth.Access(ctx, tx, c, sess.ProjectID)
	if err != nil {
		return nil, err
	}
	if access == "" {
		return nil, continuo.NotFound("session", ref)
	}
	return sess, nil
}

// resolveWithProject is resolveSession for callers that need the project too.
func (s *Service) resolveWithProject(ctx context.Context, tx store.Tx, c *continuo.Caller, ref string) (*continuo.Session, *continuo.Project, error) {
	sess, err := s.resolveSession(ctx, tx, c, ref)
	if err != nil {
		return nil, nil, err
	}
	p, err := tx.ProjectGet(ctx, sess.ProjectID)
	if err != nil {
		return nil, nil, err
	}
	return sess, p, nil
}

// checkProject verifies that an explicit project argument names the
// session's own project.
func checkProject(arg string, p *continuo.Project) error {
	if arg != "" && arg != p.ID && arg != p.Name {
		return continuo.Invalid("project", "the session belongs to project %q, not %q", p.Name, arg).With("project_id", p.ID)
	}
	return nil
}

// bump records a change to a session.
func (s *Service) bump(sess *continuo.Session) {
	sess.Revision++
	now := s.now()
	if now.Before(sess.UpdatedAt) { // keep updated_at monotonic across clock steps
		now = sess.UpdatedAt
	}
	sess.UpdatedAt = now
}

// worktreePath is where a worktree-mode session's checkout lives.
func (s *Service) worktreePath(projectID string, ref int64) string {
	return filepath.Join(s.worktree, projectID, "s"+strconv.FormatInt(ref, 10))
}
