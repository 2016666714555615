package auth

import (
	"context"
	"fmt"
	"maps"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// SetCheck adds the named check to a project (by ID or name), or replaces
// the check of that name. The project's checks stay within ValidChecks'
// bounds; a running server uses the new check at its next run.
func (s *Service) SetCheck(ctx context.Context, project, name string, c continuo.Check) (*continuo.Project, error) {
	return s.editChecks(ctx, project, func(checks map[string]continuo.Check) error {
		checks[name] = c
		return nil
	})
}

// RemoveCheck removes the named check from a project: not_found when it
// has none of that name.
func (s *Service) RemoveCheck(ctx context.Context, project, name string) (*continuo.Project, error) {
	return s.editChecks(ctx, project, func(checks map[string]continuo.Check) error {
		if _, ok := checks[name]; !ok {
			return continuo.NotFound("check", name)
		}
		delete(checks, name)
		return nil
	})
}

// editChecks changes a project's checks in one write: validated as a
// whole, nothing written when the edit is refused.
func (s *Service) editChecks(ctx context.Context, project string, edit func(map[string]continuo.Check) error) (*continuo.Project, error) {
	var out *continuo.Project
	err := s.store.Write(ctx, func(tx store.Tx) error {
		p, err := projectByRef(ctx, tx, project)
		if err != nil {
			return err
		}
		checks := maps.Clone(p.Checks)
		if checks == nil {
			checks = map[string]continuo.Check{}
		}
		if err := edit(checks); err != nil {
			return err
		}
		if err := ValidChecks(checks); err != nil {
			return err
		}
		if err := tx.ProjectSetChecks(ctx, p.ID, checks); err != nil {
			return err
		}
		p.Checks = checks
		out = p
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("project %s: %w", project, err)
	}
	return out, nil
}

// ProjectByRef returns a registered project by ID or name, for the
// operator.
func (s *Service) ProjectByRef(ctx context.Context, ref string) (*continuo.Project, error) {
	var p *continuo.Project
	err := s.store.Read(ctx, func(tx store.Tx) (err error) { p, err = projectByRef(ctx, tx, ref); return err })
	return p, err
}
