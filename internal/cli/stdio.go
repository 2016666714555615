package cli

import (
	"fmt"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runStdio serves MCP on stdin/stdout as one principal. stdout belongs to
// the protocol: every log line goes to stderr.
func runStdio(e *env, args []string) error {
	fs := e.flags("stdio", "stdio [--principal NAME] [--scopes S1,S2]")
	principal := fs.String("principal", "", "the `name` of the principal this connection acts as (default: [stdio] principal, else admin)")
	scopes := fs.String("scopes", "", "comma-separated `scopes` of the connection (default: every scope)")
	if _, err := e.parse(fs, args, 0); err != nil {
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
	a, err := e.wire()
	if err != nil {
		return err
	}
	defer a.store.Close()
	if _, _, err := e.bootstrap(a, false); err != nil {
		return err
	}
	caller, err := a.auth.Principal(e.ctx, name, sc)
	if err != nil {
		return err
	}
	e.log.Info("serving MCP on stdio", "principal", name)
	srv := mcpserver.New(mcpserver.Options{Workflow: a.workflow, Caller: caller, Metrics: a.metrics, Logger: e.log})
	return srv.Run(e.ctx, &mcp.StdioTransport{})
}
