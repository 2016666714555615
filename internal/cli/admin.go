package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/workspace"
)

func runToken(e *env, args []string) error {
	sub, args, err := e.subcommand(args, "token create --principal NAME --scopes S1,S2 [--expires 720h] [--grant PROJECT:read|write …]",
		"token revoke TOKEN_ID", "token list")
	if err != nil {
		return err
	}
	switch sub {
	case "create":
		fs := e.flags("token create", "token create --principal NAME --scopes S1,S2 [--expires 720h]")
		principal := fs.String("principal", "", "principal `name` (created with a group of the same name if missing)")
		scopes := fs.String("scopes", "", "comma-separated `scopes`: "+scopeList())
		expires := fs.Duration("expires", 0, "lifetime, e.g. 720h (0: never expires)")
		var grants listFlag
		fs.Var(&grants, "grant", "give the principal's group `PROJECT:read|write` (repeatable; never lowers a grant it has)")
		if _, err := e.parse(fs, args, 0); err != nil {
			return err
		}
		if *principal == "" || *scopes == "" {
			return fmt.Errorf("%w: token create needs --principal and --scopes", errUsage)
		}
		sc, err := continuo.ParseScopes(*scopes)
		if err != nil {
			return err
		}
		gm := map[string]continuo.Access{}
		for _, g := range grants {
			project, access, err := parseAccess(g, "PROJECT")
			if err != nil {
				return err
			}
			gm[project] = access
		}
		return e.withAuth(func(a *auth.Service) error {
			t, err := a.IssueToken(e.ctx, auth.TokenSpec{Principal: *principal, Scopes: sc, TTL: *expires, Grants: gm})
			if err != nil {
				return err
			}
			out := map[string]any{"token": t.Token, "token_id": t.TokenID, "principal_id": t.PrincipalID, "group_id": t.GroupID, "scopes": t.Scopes}
			if t.ExpiresAt != nil {
				out["expires_at"] = t.ExpiresAt.Format(time.RFC3339)
			}
			e.out(out, fmt.Sprintf("token %s for %s (shown once, keep it secret):\n%s", t.TokenID, *principal, t.Token))
			return nil
		})
	case "revoke":
		fs := e.flags("token revoke", "token revoke TOKEN_ID")
		pos, err := e.parse(fs, args, 1)
		if err != nil {
			return err
		}
		return e.withAuth(func(a *auth.Service) error {
			defer e.hearRevocations(a)()
			if err := a.RevokeToken(e.ctx, pos[0]); err != nil {
				return err
			}
			e.out(map[string]any{"token_id": pos[0], "revoked": true}, "revoked "+pos[0])
			return nil
		})
	case "list":
		fs := e.flags("token list", "token list")
		if _, err := e.parse(fs, args, 0); err != nil {
			return err
		}
		return e.withAuth(func(a *auth.Service) error {
			toks, err := a.Tokens(e.ctx)
			if err != nil {
				return err
			}
			day := func(t *time.Time) string {
				if t == nil {
					return "never"
				}
				return t.Format(time.DateOnly)
			}
			var rows [][]string
			for _, t := range toks {
				rows = append(rows, []string{t.TokenID, t.Principal, t.Group, t.State, t.CreatedAt.Format(time.DateOnly), day(t.ExpiresAt), scopeText(t.Scopes)})
			}
			e.out(map[string]any{"tokens": toks}, table([]string{"TOKEN_ID", "PRINCIPAL", "GROUP", "STATE", "CREATED", "EXPIRES", "SCOPES"}, rows))
			return nil
		})
	}
	return fmt.Errorf("%w: token takes create, revoke or list", errUsage)
}

// hearRevocations makes a revoking command listen for revocations until
// the returned stop is called: a revocation then waits until this process
// heard its own notification, and every replica has been sent it.
func (e *env) hearRevocations(a *auth.Service) (stop func()) {
	ctx, cancel := context.WithCancel(e.ctx)
	watched := a.WatchRevocations(ctx)
	return func() { cancel(); <-watched }
}

func scopeList() string {
	var s []string
	for _, x := range continuo.AllScopes() {
		s = append(s, string(x))
	}
	return strings.Join(s, ", ")
}

// parseGrant parses GROUP:read|write.
func parseGrant(s string) (string, continuo.Access, error) { return parseAccess(s, "GROUP") }

// parseAccess parses NAME:read|write; what names NAME in the error.
func parseAccess(s, what string) (string, continuo.Access, error) {
	g, a, ok := strings.Cut(s, ":")
	acc := continuo.Access(a)
	if !ok || g == "" || (acc != continuo.AccessRead && acc != continuo.AccessWrite) {
		return "", "", fmt.Errorf("%w: grant %q: want %s:read or %s:write", errUsage, s, what, what)
	}
	return g, acc, nil
}

func runProject(e *env, args []string) error {
	sub, args, err := e.subcommand(args, "project add NAME [--root DIR] [--check name=cmd …] [--grant GROUP:read|write …] [--writable=false]",
		"project grant NAME GROUP:read|write", "project revoke NAME GROUP", "project remove NAME [--force]", "project list",
		"project check add NAME CHECK [--timeout SECS] -- CMD [ARG…]", "project check remove NAME CHECK", "project check list NAME")
	if err != nil {
		return err
	}
	switch sub {
	case "check":
		return runProjectCheck(e, args)
	case "add":
		fs := e.flags("project add", "project add NAME [--root PATH] [--check name=cmd …] [--grant GROUP:read|write …] [--writable]")
		root := fs.String("root", "", "`path` of the project's git checkout (its top level, or a directory inside it)")
		writable := fs.Bool("writable", true, "the server may write to the checkout (worktrees, validation runs)")
		var checks, grants listFlag
		fs.Var(&checks, "check", "named check `name=command` (repeatable)")
		fs.Var(&grants, "grant", "grant `GROUP:read|write` (repeatable)")
		pos, err := e.parse(fs, args, 1)
		if err != nil {
			return err
		}
		spec := auth.ProjectSpec{Name: pos[0], Checks: map[string]continuo.Check{}, Writable: *writable}
		if *root != "" {
			// A root that is not a checkout would give every brief an
			// unreadable workspace (basis.complete false) forever.
			if spec.Root, err = workspace.CheckoutRoot(e.ctx, *root); err != nil {
				return continuo.Invalid("root", "--root: %v", err)
			}
		}
		for _, c := range checks {
			name, cmd, ok := strings.Cut(c, "=")
			if !ok {
				return fmt.Errorf("%w: check %q: want name=command", errUsage, c)
			}
			argv, err := continuo.SplitCommand(cmd)
			if err != nil {
				return continuo.Invalid("check", "check %q: %v", name, err)
			}
			spec.Checks[name] = continuo.Check{Command: argv}
		}
		gm := map[string]continuo.Access{}
		for _, g := range grants {
			group, access, err := parseGrant(g)
			if err != nil {
				return err
			}
			gm[group] = access
		}
		return e.withAuth(func(a *auth.Service) error {
			p, err := a.AddProject(e.ctx, spec, gm)
			if err != nil {
				return err
			}
			e.out(map[string]string{"project_id": p.ID, "name": p.Name}, "added project "+p.Name+" ("+p.ID+")")
			return nil
		})
	case "grant":
		fs := e.flags("project grant", "project grant NAME GROUP:read|write")
		pos, err := e.parse(fs, args, 2)
		if err != nil {
			return err
		}
		group, access, err := parseGrant(pos[1])
		if err != nil {
			return err
		}
		return e.withAuth(func(a *auth.Service) error {
			if err := a.Grant(e.ctx, pos[0], group, access); err != nil {
				return err
			}
			e.out(map[string]string{"project": pos[0], "group": group, "access": string(access)},
				fmt.Sprintf("granted %s %s access to %s", group, access, pos[0]))
			return nil
		})
	case "revoke":
		fs := e.flags("project revoke", "project revoke NAME GROUP")
		pos, err := e.parse(fs, args, 2)
		if err != nil {
			return err
		}
		return e.withAuth(func(a *auth.Service) error {
			if err := a.Revoke(e.ctx, pos[0], pos[1]); err != nil {
				return err
			}
			e.out(map[string]any{"project": pos[0], "group": pos[1], "revoked": true},
				fmt.Sprintf("revoked %s's access to %s (its sessions there stay, unseen, until a new grant)", pos[1], pos[0]))
			return nil
		})
	case "remove":
		fs := e.flags("project remove", "project remove NAME [--force]")
		force := fs.Bool("force", false, "also delete the project's sessions (with their messages); without it, a project with sessions is refused")
		pos, err := e.parse(fs, args, 1)
		if err != nil {
			return err
		}
		s, err := e.open(openOptions{})
		if err != nil {
			return err
		}
		defer s.Close()
		r, err := e.services(s, nil).workflow.RemoveProject(e.ctx, pos[0], *force)
		if err != nil {
			return err
		}
		text := fmt.Sprintf("removed project %s (%s)", r.Project.Name, r.Project.ID)
		if r.Sessions > 0 {
			text += fmt.Sprintf(" and its %d session(s)", r.Sessions)
		}
		for _, w := range r.Worktrees {
			text += "\nleft on disk (may hold uncommitted work): " + w
		}
		e.out(map[string]any{"project_id": r.Project.ID, "name": r.Project.Name, "removed": true, "sessions": r.Sessions, "worktrees": r.Worktrees}, text)
		return nil
	case "list":
		fs := e.flags("project list", "project list")
		if _, err := e.parse(fs, args, 0); err != nil {
			return err
		}
		return e.withAuth(func(a *auth.Service) error {
			ps, err := a.AllProjects(e.ctx)
			if err != nil {
				return err
			}
			var b strings.Builder
			for _, p := range ps {
				fmt.Fprintf(&b, "%s  %-20s  %s  checks=%v\n", p.ID, p.Name, p.Root, sortedKeys(p.Checks))
			}
			e.out(map[string]any{"projects": ps}, strings.TrimSuffix(b.String(), "\n"))
			return nil
		})
	}
	return fmt.Errorf("%w: project takes add, grant, revoke, remove, list or check", errUsage)
}
