package workflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// Removal is what removing a project took away.
type Removal struct {
	Project   continuo.Project
	Sessions  int      // sessions deleted with it
	Worktrees []string // the worktrees of those sessions, left on disk
}

// RemoveProject deletes a project and its grants, for the operator. A
// project that still has sessions, of any group, is refused: they are the
// work it holds, and revoking the grants hides the project without losing
// them. With force, its sessions go too, with their instructions, messages,
// goals, evidence and idempotency keys, in the same transaction. Their
// worktrees stay on disk (they may hold uncommitted work; the branches stay
// in the checkout): the Removal lists them. The project's runs and their
// logs always go with it (store.ProjectDelete). The rules live here rather
// than in auth because sessions go with the project.
func (s *Service) RemoveProject(ctx context.Context, name string, force bool) (*Removal, error) {
	var out *Removal
	err := s.store.Write(ctx, func(tx store.Tx) error {
		out = nil
		p, err := tx.ProjectGetByName(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			return continuo.NotFound("project", name)
		} else if err != nil {
			return err
		}
		sessions, err := tx.SessionListByProject(ctx, p.ID)
		if err != nil {
			return err
		}
		if len(sessions) > 0 && !force {
			active := 0
			for _, sess := range sessions {
				if sess.Lifecycle == continuo.LifecycleActive {
					active++
				}
			}
			return continuo.Errorf(continuo.CodeInvalidState, "project %q has %d session(s) (%d active); removing it would delete them. "+
				"To hide it and keep them, revoke its grants (continuo project revoke %s GROUP); to delete it with its sessions, add --force",
				name, len(sessions), active, name).With("sessions", len(sessions))
		}
		r := &Removal{Project: *p, Sessions: len(sessions), Worktrees: []string{}}
		for _, sess := range sessions {
			if err := s.deleteSession(ctx, tx, &sess); err != nil {
				return err
			}
			if sess.WorktreePath != "" {
				r.Worktrees = append(r.Worktrees, sess.WorktreePath)
			}
		}
		if err := tx.ProjectDelete(ctx, p.ID); err != nil {
			return err
		}
		out = r
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("remove project %s: %w", name, err)
	}
	return out, nil
}

// deleteSession deletes a session with everything that names it,
// including the keys that would replay it.
func (s *Service) deleteSession(ctx context.Context, tx store.Tx, sess *continuo.Session) error {
	if err := tx.IdempotencyDelete(ctx, store.IdempotencyDeleteParams{Scope: messageScope(sess.ID)}); err != nil {
		return err
	}
	if err := tx.IdempotencyDelete(ctx, store.IdempotencyDeleteParams{Scope: workScope(sess.GroupID), ResultID: sess.ID}); err != nil {
		return err
	}
	return tx.SessionDelete(ctx, sess.ID)
}
