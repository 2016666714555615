package store

import (
	"context"

	"github.com/continuo-dev/continuo"
)

// ProjectTx holds projects and the grants that let groups reach them.
type ProjectTx interface {
	ProjectCreate(ctx context.Context, p *continuo.Project) error
	ProjectGet(ctx context.Context, id string) (*continuo.Project, error)
	ProjectGetByName(ctx context.Context, name string) (*continuo.Project, error)
	// ProjectSetChecks replaces a project's checks; ErrNotFound for an
	// unknown ID.
	ProjectSetChecks(ctx context.Context, id string, checks map[string]continuo.Check) error
	// ProjectList lists every project by name.
	ProjectList(ctx context.Context) ([]continuo.Project, error)

	// GrantSet creates or replaces a group's grant on a project.
	GrantSet(ctx context.Context, g continuo.Grant) error
	GrantGet(ctx context.Context, projectID, groupID string) (continuo.Access, error)
	// GrantList lists a group's grants by project ID.
	GrantList(ctx context.Context, groupID string) ([]continuo.Grant, error)
	// GrantDelete takes a group's grant on a project away; ErrNotFound when
	// it had none.
	GrantDelete(ctx context.Context, projectID, groupID string) error
	// ProjectDelete deletes a project, its grants and its runs with their
	// logs and every session's evidence of them; ErrNotFound for an
	// unknown ID. Its sessions must be deleted first.
	ProjectDelete(ctx context.Context, id string) error
}
