package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/workspace"
)

// registerCheckout is what a start on an existing data directory does with
// the git checkout it runs in (or --project DIR; nothing for --project
// none): one that no project has as its root is registered, writable and
// granted to admin, as a first start does. When its name is taken it says,
// in first.hint, the one command that registers it.
func (e *env) registerCheckout(a *auth.Service, projectFlag string, first *firstStart) {
	dir := projectFlag
	switch projectFlag {
	case "none":
		return
	case "":
		cwd, err := os.Getwd()
		if err != nil || !workspace.IsRepo(e.ctx, cwd) {
			return
		}
		dir = cwd
	}
	top, err := workspace.CheckoutRoot(e.ctx, dir)
	if err != nil {
		first.hint = fmt.Sprintf("--project %s: %v", dir, err)
		return
	}
	ps, err := a.AllProjects(e.ctx)
	if err != nil {
		e.log.Warn("could not list the projects", "err", err)
		return
	}
	for _, p := range ps {
		if p.Root == top {
			return // registered already
		}
	}
	name := workspace.ProjectName(filepath.Base(top))
	p, err := a.AddProject(e.ctx, auth.ProjectSpec{Name: name, Root: top, Writable: true},
		map[string]continuo.Access{auth.AdminName: continuo.AccessWrite})
	if err != nil {
		var ce *continuo.Error
		how := fmt.Sprintf("continuo project add NAME --root %s --grant admin:write", top)
		if errors.As(err, &ce) && ce.Code == continuo.CodeConflict {
			if q, err := a.ProjectByRef(e.ctx, name); err == nil && q.Root == top {
				return // another replica registered it meanwhile
			}
			first.hint = fmt.Sprintf("%s is not registered (a project named %s exists); register it with: %s", top, name, how)
		} else {
			first.hint = fmt.Sprintf("%s is not registered (%v); register it with: %s", top, err, how)
		}
		return
	}
	first.project = p
}
