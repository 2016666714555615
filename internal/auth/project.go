package auth

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// ProjectSpec describes a project to register.
type ProjectSpec struct {
	Name     string
	Root     string                    // absolute path of a git checkout, or ""
	Checks   map[string]continuo.Check // check name → command, run only by name
	Writable bool
}

var checkName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ValidChecks checks a project's named checks: at most continuo.MaxChecks,
// each name of [A-Za-z0-9_.-] (1..64, not starting with a punctuation
// mark), each check within its bounds.
func ValidChecks(checks map[string]continuo.Check) error {
	if len(checks) > continuo.MaxChecks {
		return continuo.Invalid("check", "at most %d checks", continuo.MaxChecks)
	}
	for name, c := range checks {
		if !checkName.MatchString(name) {
			return continuo.Invalid("check", "name %q must match %s", name, checkName)
		}
		if err := c.Validate(); err != nil {
			return continuo.Invalid("check", "check %q: %v", name, err)
		}
	}
	return nil
}

// AddProject registers a project and applies grants (group name → access).
func (s *Service) AddProject(ctx context.Context, spec ProjectSpec, grants map[string]continuo.Access) (*continuo.Project, error) {
	if err := validName("name", spec.Name); err != nil {
		return nil, err
	}
	if spec.Root != "" {
		if !filepath.IsAbs(spec.Root) || len(spec.Root) > 4096 {
			return nil, continuo.Invalid("root", "must be an absolute path of at most 4096 bytes")
		}
		spec.Root = filepath.Clean(spec.Root)
	}
	if err := ValidChecks(spec.Checks); err != nil {
		return nil, err
	}
	now := s.now()
	p := &continuo.Project{ID: continuo.NewID(continuo.PrefixProject, now), Name: spec.Name, Root: spec.Root,
		Checks: spec.Checks, Writable: spec.Writable, CreatedAt: now}
	err := s.store.Write(ctx, func(tx store.Tx) error {
		err := tx.ProjectCreate(ctx, p)
		if errors.Is(err, store.ErrConflict) {
			// Its checks change in place: say how.
			return continuo.Errorf(continuo.CodeConflict, "project %q already exists; change its checks with `continuo project check add %s CHECK -- CMD [ARG…]` (and `project check list|remove`), its grants with `continuo project grant`",
				spec.Name, spec.Name).With("project", spec.Name)
		} else if err != nil {
			return err
		}
		for group, access := range grants {
			if err := grant(ctx, tx, p.ID, group, access); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("add project %s: %w", spec.Name, err)
	}
	return p, nil
}

// projectByRef finds a project by ID or name; not_found otherwise.
func projectByRef(ctx context.Context, tx store.Tx, ref string) (*continuo.Project, error) {
	var p *continuo.Project
	var err error
	if continuo.ValidID(continuo.PrefixProject, ref) {
		p, err = tx.ProjectGet(ctx, ref)
	} else {
		p, err = tx.ProjectGetByName(ctx, ref)
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, continuo.NotFound("project", ref)
	}
	return p, err
}

// Grant gives a group access to a project (by ID or name), replacing an
// earlier grant.
func (s *Service) Grant(ctx context.Context, project, group string, access continuo.Access) error {
	return s.store.Write(ctx, func(tx store.Tx) error {
		p, err := projectByRef(ctx, tx, project)
		if err != nil {
			return err
		}
		return grant(ctx, tx, p.ID, group, access)
	})
}

// Revoke takes a group's grant on a project (by ID or name) away. The
// group's sessions in the project stay, unseen by it, until it is granted
// the project again.
func (s *Service) Revoke(ctx context.Context, project, group string) error {
	return s.store.Write(ctx, func(tx store.Tx) error {
		p, err := projectByRef(ctx, tx, project)
		if err != nil {
			return err
		}
		g, err := groupByName(ctx, tx, group)
		if err != nil {
			return err
		}
		err = tx.GrantDelete(ctx, p.ID, g.ID)
		if errors.Is(err, store.ErrNotFound) {
			return continuo.Errorf(continuo.CodeNotFound, "group %q has no grant on project %q", group, project)
		}
		return err
	})
}

func grant(ctx context.Context, tx store.Tx, projectID, group string, access continuo.Access) error {
	if !access.Valid() {
		return continuo.Invalid("grant", "access must be read or write, not %q", access)
	}
	g, err := groupByName(ctx, tx, group)
	if err != nil {
		return err
	}
	return tx.GrantSet(ctx, continuo.Grant{ProjectID: projectID, GroupID: g.ID, Access: access})
}

// raiseGrant gives a group at least the access on a named project.
func raiseGrant(ctx context.Context, tx store.Tx, project, groupID string, access continuo.Access) error {
	if !access.Valid() {
		return continuo.Invalid("grant", "access must be read or write, not %q", access)
	}
	p, err := tx.ProjectGetByName(ctx, project)
	if errors.Is(err, store.ErrNotFound) {
		return continuo.NotFound("project", project)
	} else if err != nil {
		return err
	}
	had, err := tx.GrantGet(ctx, p.ID, groupID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if had == continuo.AccessWrite || had == access {
		return nil
	}
	return tx.GrantSet(ctx, continuo.Grant{ProjectID: p.ID, GroupID: groupID, Access: access})
}

// Visible is a project as one group sees it.
type Visible struct {
	Project continuo.Project
	Access  continuo.Access
}

// Projects lists the projects the caller's group has a grant on.
func (s *Service) Projects(ctx context.Context, tx store.Tx, c *continuo.Caller) ([]Visible, error) {
	grants, err := tx.GrantList(ctx, c.GroupID)
	if err != nil {
		return nil, err
	}
	out := make([]Visible, 0, len(grants))
	for _, g := range grants {
		p, err := tx.ProjectGet(ctx, g.ProjectID)
		if err != nil {
			return nil, err
		}
		out = append(out, Visible{Project: *p, Access: g.Access})
	}
	return out, nil
}

// ProjectsOf lists the projects the caller's group has a grant on, in a
// read of its own: for the consent page, which has no transaction.
func (s *Service) ProjectsOf(ctx context.Context, c *continuo.Caller) ([]Visible, error) {
	var out []Visible
	err := s.store.Read(ctx, func(tx store.Tx) (err error) { out, err = s.Projects(ctx, tx, c); return err })
	return out, err
}

// ResolveProject finds a project by ID or name that the caller's group may
// reach with at least the given access. A project the group has no grant on
// is reported exactly like one that does not exist.
func (s *Service) ResolveProject(ctx context.Context, tx store.Tx, c *continuo.Caller, ref string, need continuo.Access) (*continuo.Project, continuo.Access, error) {
	p, err := projectByRef(ctx, tx, ref)
	if err != nil {
		return nil, "", err
	}
	access, err := s.Access(ctx, tx, c, p.ID)
	if err != nil {
		return nil, "", err
	}
	if access == "" {
		return nil, "", continuo.NotFound("project", ref)
	}
	if need == continuo.AccessWrite && access != continuo.AccessWrite {
		return nil, "", continuo.Errorf(continuo.CodeForbidden, "project %q is granted read-only to your group", ref)
	}
	return p, access, nil
}

// Access returns the caller group's access to a project, or "" for none.
func (s *Service) Access(ctx context.Context, tx store.Tx, c *continuo.Caller, projectID string) (continuo.Access, error) {
	a, err := tx.GrantGet(ctx, projectID, c.GroupID)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	return a, err
}

// AllProjects lists every registered project, for the operator.
func (s *Service) AllProjects(ctx context.Context) ([]continuo.Project, error) {
	var out []continuo.Project
	err := s.store.Read(ctx, func(tx store.Tx) (err error) { out, err = tx.ProjectList(ctx); return err })
	if out == nil {
		out = []continuo.Project{}
	}
	return out, err
}

// ConfigureProjects applies the projects a configuration file declares:
// each one's checks replace the stored ones (nothing is written when they
// are equal), and a project the database does not have is registered when
// the spec has a root (writable, with write access for the admin group);
// without one it is an error naming the command that registers it. A spec
// whose root differs from the stored project's is an error: moving a
// project is not something a start does silently. It returns the names of
// the projects it changed.
func (s *Service) ConfigureProjects(ctx context.Context, specs []ProjectSpec) ([]string, error) {
	var changed []string
	for _, spec := range specs {
		if err := validName("name", spec.Name); err != nil {
			return changed, err
		}
		if err := ValidChecks(spec.Checks); err != nil {
			return changed, fmt.Errorf("project %s: %w", spec.Name, err)
		}
		var did bool
		err := s.store.Write(ctx, func(tx store.Tx) error {
			did = false
			p, err := tx.ProjectGetByName(ctx, spec.Name)
			if errors.Is(err, store.ErrNotFound) {
				if spec.Root == "" {
					return continuo.Errorf(continuo.CodeNotFound, "project %q is configured but not registered; give it a root in the configuration or run: continuo project add %s --root DIR", spec.Name, spec.Name)
				}
				admin, err := tx.PrincipalGetByName(ctx, AdminName)
				if err != nil {
					return fmt.Errorf("find the admin principal: %w", err)
				}
				now := s.now()
				p = &continuo.Project{ID: continuo.NewID(continuo.PrefixProject, now), Name: spec.Name, Root: filepath.Clean(spec.Root),
					Checks: spec.Checks, Writable: true, CreatedAt: now}
				if err := tx.ProjectCreate(ctx, p); err != nil {
					return err
				}
				did = true
				return tx.GrantSet(ctx, continuo.Grant{ProjectID: p.ID, GroupID: admin.GroupID, Access: continuo.AccessWrite})
			} else if err != nil {
				return err
			}
			if spec.Root != "" && filepath.Clean(spec.Root) != p.Root {
				return continuo.Invalid("root", "project %q is registered at %q, not at %q", spec.Name, p.Root, spec.Root)
			}
			if sameChecks(p.Checks, spec.Checks) {
				return nil
			}
			did = true
			return tx.ProjectSetChecks(ctx, p.ID, spec.Checks)
		})
		if err != nil {
			return changed, fmt.Errorf("configure project %s: %w", spec.Name, err)
		}
		if did {
			changed = append(changed, spec.Name)
		}
	}
	return changed, nil
}

func sameChecks(a, b map[string]continuo.Check) bool {
	if len(a) != len(b) {
		return false
	}
	for name, x := range a {
		y, ok := b[name]
		if !ok || x.TimeoutSecs != y.TimeoutSecs || !slices.Equal(x.Command, y.Command) || !slices.Equal(x.Env, y.Env) {
			return false
		}
	}
	return true
}
