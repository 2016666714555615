package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
)

// runProjectCheck is `project check add|remove|list`: a registered
// project's checks, changed in the database, in force at once on a running
// server (each run reads its check when it starts).
func runProjectCheck(e *env, args []string) error {
	sub, args, err := e.subcommand(args, "project check add NAME CHECK [--timeout SECS] [--env VAR …] -- CMD [ARG…]",
		"project check remove NAME CHECK", "project check list NAME")
	if err != nil {
		return err
	}
	switch sub {
	case "add":
		// Everything after -- is the command, flags included.
		i := slices.Index(args, "--")
		if i < 0 || i == len(args)-1 {
			return fmt.Errorf("%w: project check add NAME CHECK -- CMD [ARG…]: the command follows --", errUsage)
		}
		argv := slices.Clone(args[i+1:])
		fs := e.flags("project check add", "project check add NAME CHECK [--timeout SECS] [--env VAR …] -- CMD [ARG…]")
		timeout := fs.Int("timeout", 0, "the check's timeout in `seconds` (0: the server's default)")
		var envs listFlag
		fs.Var(&envs, "env", "name of an environment `variable` passed through to the check (repeatable)")
		pos, err := e.parse(fs, args[:i], 2)
		if err != nil {
			return err
		}
		c := continuo.Check{Command: argv, TimeoutSecs: *timeout, Env: envs}
		return e.withAuth(func(a *auth.Service) error {
			p, err := a.SetCheck(e.ctx, pos[0], pos[1], c)
			if err != nil {
				return err
			}
			e.out(map[string]any{"project_id": p.ID, "project": p.Name, "check": pos[1], "command": argv},
				fmt.Sprintf("project %s: check %s = %s", p.Name, pos[1], joinCommand(argv)))
			return nil
		})
	case "remove":
		fs := e.flags("project check remove", "project check remove NAME CHECK")
		pos, err := e.parse(fs, args, 2)
		if err != nil {
			return err
		}
		return e.withAuth(func(a *auth.Service) error {
			p, err := a.RemoveCheck(e.ctx, pos[0], pos[1])
			if err != nil {
				return err
			}
			e.out(map[string]any{"project_id": p.ID, "project": p.Name, "check": pos[1], "removed": true},
				fmt.Sprintf("project %s: removed check %s", p.Name, pos[1]))
			return nil
		})
	case "list":
		fs := e.flags("project check list", "project check list NAME")
		pos, err := e.parse(fs, args, 1)
		if err != nil {
			return err
		}
		return e.withAuth(func(a *auth.Service) error {
			p, err := a.ProjectByRef(e.ctx, pos[0])
			if err != nil {
				return err
			}
			checks := p.Checks
			if checks == nil {
				checks = map[string]continuo.Check{}
			}
			var b strings.Builder
			for _, name := range sortedKeys(checks) {
				fmt.Fprintf(&b, "%-20s  %s\n", name, joinCommand(checks[name].Command))
			}
			if len(checks) == 0 {
				b.WriteString("(no checks: add one with `continuo project check add " + p.Name + " CHECK -- CMD [ARG…]`)\n")
			}
			e.out(map[string]any{"project_id": p.ID, "project": p.Name, "checks": checks}, strings.TrimSuffix(b.String(), "\n"))
			return nil
		})
	}
	return fmt.Errorf("%w: project check takes add, remove or list", errUsage)
}

// joinCommand shows argv as one line, quoting the words a shell would split.
func joinCommand(argv []string) string {
	words := make([]string, len(argv))
	for i, w := range argv {
		if w == "" || strings.ContainsAny(w, " \t\n'\"\\$`|&;<>()*?[#~{}") {
			w = strconv.Quote(w)
		}
		words[i] = w
	}
	return strings.Join(words, " ")
}
