package cli

import (
	"flag"
	"fmt"
	"strings"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/datadir"
	"github.com/continuo-dev/continuo/internal/mcpserver"
)

// toolsetsFlag defines --toolsets, which overrides [server] toolsets.
func toolsetsFlag(fs *flag.FlagSet) *string {
	return fs.String("toolsets", "", "comma-separated `toolsets` to list: continuity (the default), delegation, swarm, worker, or all (default: [server] toolsets)")
}

// applyToolsets puts a --toolsets value into the configuration and checks
// it with the rest.
func (e *env) applyToolsets(flagValue string) error {
	if flagValue != "" {
		e.cfg.Server.Toolsets = strings.Split(flagValue, ",")
	}
	return e.cfg.Validate()
}

// runStdio serves MCP on stdin/stdout as one principal. stdout belongs to
// the protocol: every log line goes to stderr.
func runStdio(e *env, args []string) error {
	fs := e.flags("stdio", "stdio [--principal NAME] [--scopes S1,S2] [--toolsets T1,T2]")
	principal := fs.String("principal", "", "the `name` of the principal this connection acts as (default: [stdio] principal, else admin)")
	scopes := fs.String("scopes", "", "comma-separated `scopes` of the connection (default: every scope)")
	project := fs.String("project", "", "on a first start, register the git checkout `DIR` as the first project (none: no project; default: the checkout the command runs in)")
	reinit := fs.Bool("init", false, "create a new, empty database even though this data directory's database was lost")
	toolsets := toolsetsFlag(fs)
	if _, err := e.parse(fs, args, 0); err != nil {
		return err
	}
	if err := e.applyToolsets(*toolsets); err != nil {
		return err
	}
	if e.json {
		return fmt.Errorf("%w: stdio speaks MCP on stdout; --json does not apply", errUsage)
	}
	name := *principal
	if name == "" {
		name = e.cfg.Stdio.Principal
	}
	if name == "" {
		name = "admin"
	}
	sc := continuo.AllScopes()
	if *scopes != "" {
		var err error
		if sc, err = continuo.ParseScopes(*scopes); err != nil {
			return err
		}
	}
	tuneGC()
	// Several stdio servers may share a data directory (a client starts
	// one per conversation): SQLite serializes their writes. The init lock
	// makes their first starts, which create and migrate the database,
	// take turns.
	var first firstStart
	a, err := e.wire(openOptions{create: true, reinit: *reinit, prepare: e.bootstrapper(*project, false, &first)})
	if err != nil {
		return err
	}
	defer a.close()
	if first.project != nil {
		e.log.Info("first start: registered a project", "project", first.project.Name, "root", first.project.Root)
	}
	caller, err := a.auth.Principal(e.ctx, name, sc)
	if err != nil {
		return err
	}
	e.log.Info("serving MCP on stdio", "principal", name, "data_dir", e.dataDir, "toolsets", e.cfg.DefaultToolsets().String())
	// A swarm's invite names the worker endpoint of the server running on
	// this data directory, if one does.
	var mcpURL string
	if s, ok, _ := datadir.ReadServing(e.dataDir, serveLockName); ok {
		mcpURL = s.MCPURL
	}
	srv := mcpserver.New(mcpserver.Options{Workflow: a.workflow, Runs: a.runs, Swarm: a.swarm,
		TrustedCarrierMeta: e.cfg.Swarm.TrustedCarrierMeta, Caller: caller, Metrics: a.metrics, Logger: e.log,
		Toolsets: e.cfg.DefaultToolsets(), MCPURL: mcpURL})
	return mcpserver.ServeStdio(e.ctx, srv.Server(0), e.stdin, e.stdout)
}
