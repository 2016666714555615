package workflow

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/run"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/workspace"
)

// Validation runs (CONTRACT.md §6): a check the operator named runs in the
// session's checkout or worktree, and the session records the run as
// evidence together with the source fingerprint taken before it ran. A run
// of the same check on the same source already under way in the same
// directory, for the same group, is shared instead of started twice; one on
// other source waits queued behind it (a unique index allows one running
// validation run per check and directory).

// ValidationRun is what run_validation returns.
type ValidationRun struct {
	Run    continuo.Run
	Shared bool // another session's run of the same check on the same source, under way
	Token  string
}

// RunValidation starts (or shares) a run of check for a session and waits
// up to wait for it to end.
func (s *Service) RunValidation(ctx context.Context, c *continuo.Caller, ref, check string, wait time.Duration) (*ValidationRun, error) {
	if err := c.Require(continuo.ScopeProjectWrite); err != nil {
		return nil, err
	}
	if s.runs == nil {
		return nil, continuo.Errorf(continuo.CodeInvalidState, "this server runs no validation checks")
	}
	if wait < 0 || wait > run.MaxWait {
		return nil, continuo.Invalid("wait_secs", "must be 0..%d", int(run.MaxWait.Seconds()))
	}
	// Where it runs and on what: read first, outside the write, since the
	// fingerprint reads the checkout.
	var dir string
	var spec run.CommandSpec
	err := s.store.Read(ctx, func(tx store.Tx) error {
		sess, p, err := s.resolveWithProject(ctx, tx, c, ref)
		if err != nil {
			return err
		}
		dir, spec, err = s.checkTarget(ctx, tx, c, sess, p, check)
		return err
	})
	if err != nil {
		return nil, err
	}
	// No lock is held while the checkout is read: other calls, and other
	// fingerprints, go on meanwhile.
	src, err := s.git.Source(ctx, dir)
	var over *workspace.BudgetError
	if errors.As(err, &over) {
		return nil, continuo.Errorf(continuo.CodeInvalidState, "fingerprinting the checkout %s took longer than its budget of %v (too many changed or untracked files to list and read); "+
			"the check was not started. Remove or ignore (.gitignore) what need not be there, then call again", dir, over.Budget).
			With("reason", "fingerprint_budget").With("budget_secs", over.Budget.Seconds()).Because(err)
	}
	if err != nil {
		return nil, continuo.Errorf(continuo.CodeInvalidState, "cannot read the checkout %s to fingerprint its source; the server log has the details", dir).Because(err)
	}

	var out *ValidationRun
	err = s.store.Write(ctx, func(tx store.Tx) error {
		out = nil
		sess, p, err := s.resolveWithProject(ctx, tx, c, ref)
		if err != nil {
			return err
		}
		if dir2, spec2, err := s.checkTarget(ctx, tx, c, sess, p, check); err != nil {
			return err
		} else if dir2 != dir || spec2.JSON() != spec.JSON() {
			return continuo.Errorf(continuo.CodeConflict, "check %q or the session's directory changed while the run was being set up; call again", check)
		}
		under, err := tx.RunList(ctx, store.RunListParams{Kind: continuo.RunValidation, Dir: dir, Check: check,
			States: []continuo.RunState{continuo.RunQueued, continuo.RunRunning}})
		if err != nil {
			return err
		}
		for i := range under {
			u := &under[i]
			if u.GroupID == c.GroupID && u.SourceHead == src.Head && u.SourceTree == src.Tree && u.Spec == spec.JSON() {
				err := tx.EvidenceAdd(ctx, continuo.Evidence{SessionID: sess.ID, Check: check, RunID: u.ID, CreatedAt: s.now()})
				if err != nil && !errors.Is(err, store.ErrConflict) {
					return err
				}
				out = &ValidationRun{Run: *u, Shared: true}
				return nil
			}
		}
		r, err := s.runs.Enqueue(ctx, tx, c, run.Draft{Kind: continuo.RunValidation, ProjectID: p.ID, SessionID: sess.ID, Check: check,
			Dir: dir, Spec: spec.JSON(), SourceHead: src.Head, SourceTree: src.Tree, SourceStat: sourceStat(src)})
		if err != nil {
			return err
		}
		if err := tx.EvidenceAdd(ctx, continuo.Evidence{SessionID: sess.ID, Check: check, RunID: r.ID, CreatedAt: r.CreatedAt}); err != nil {
			return err
		}
		out = &ValidationRun{Run: *r}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("run validation %s: %w", check, err)
	}
	s.runs.Kick()
	out.Token = s.runs.Token(c, out.Run.ID, 0)
	if wait > 0 {
		r, err := s.runs.Wait(ctx, c, out.Run.ID, wait)
		if err != nil {
			return nil, err
		}
		out.Run = *r
	}
	return out, nil
}

// checkTarget says where and what a session's check runs: the session must
// be active, its project writable with a root (or the session in a
// worktree), the check one the project names.
func (s *Service) checkTarget(ctx context.Context, tx store.Tx, c *continuo.Caller, sess *continuo.Session, p *continuo.Project, check string) (string, run.CommandSpec, error) {
	if sess.Lifecycle != continuo.LifecycleActive {
		return "", run.CommandSpec{}, continuo.Errorf(continuo.CodeSessionClosed, "session %s is closed", continuo.SessionRef(sess.Ref))
	}
	access, err := s.auth.Access(ctx, tx, c, p.ID)
	if err != nil {
		return "", run.CommandSpec{}, err
	}
	if access != continuo.AccessWrite {
		return "", run.CommandSpec{}, continuo.Errorf(continuo.CodeForbidden, "your group has read access to project %q; running checks needs write access", p.Name)
	}
	ck, ok := p.Checks[check]
	if !ok {
		return "", run.CommandSpec{}, continuo.Invalid("check", "project %q has no check %q", p.Name, check).
			With("checks", checkNames(p.Checks))
	}
	if err := ck.Validate(); err != nil {
		return "", run.CommandSpec{}, continuo.Errorf(continuo.CodeInvalidState, "check %q of project %q cannot run: %v; the operator must fix it", check, p.Name, err)
	}
	dir := p.Root
	if sess.WorktreePath != "" {
		dir = sess.WorktreePath
	}
	if dir == "" || !p.Writable {
		return "", run.CommandSpec{}, continuo.Errorf(continuo.CodeInvalidState, "project %q has no writable checkout on this server to run checks in", p.Name)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", run.CommandSpec{}, continuo.Errorf(continuo.CodeInvalidState, "the checkout %s of session %s is missing; resume the session with work_on_project to restore a worktree", dir, continuo.SessionRef(sess.Ref))
	}
	return dir, run.SpecOf(ck), nil
}
