package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/continuo-dev/continuo/internal/datadir"

	"github.com/continuo-dev/continuo/internal/hook"
	"github.com/continuo-dev/continuo/internal/mcpserver"
)

// defaultHookServer is the MCP endpoint of a `continuo serve` with the
// default listen address.
const defaultHookServer = "http://127.0.0.1:7300/mcp"

// runHook is `continuo hook EVENT` and `continuo hook install CLIENT`.
func runHook(e *env, args []string) error {
	if len(args) > 0 && args[0] == "install" {
		return runHookInstall(e, args[1:])
	}
	sub, rest, err := e.subcommand(args, "hook EVENT [--server URL] [--token-env VAR] [--project NAME] [--timeout 5s]",
		"hook install claude|codex [--project-dir DIR] [--server URL] [--token-env VAR] [--project NAME]")
	if err != nil {
		return err
	}
	event := sub
	fs := e.flags("hook", "hook EVENT [--server URL] [--token-env VAR] [--project NAME] [--timeout 5s]   (a client lifecycle hook: JSON on stdin)")
	server := fs.String("server", "", "MCP `url` of the Continuo server (default $CONTINUO_SERVER, else "+defaultHookServer+")")
	tokenEnv := fs.String("token-env", "CONTINUO_TOKEN", "environment `variable` holding the token")
	project := fs.String("project", "", "`project` whose sessions are the candidates when none is bound (default: the one named like the checkout of the hook's cwd, or the only one)")
	timeout := fs.Duration("timeout", hook.DefaultTimeout, "give up on the server after this `duration`")
	local := fs.Bool("local", false, "use the local data directory (--data-dir) through `continuo stdio` instead of a server")
	principal := fs.String("principal", "", "with --local: the principal to act as (default: [stdio] principal, else admin)")
	if _, err := e.parseFlags(fs, rest, 0); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		// A hook never blocks the client: a mistake in its command line is
		// a note, and exit status 0.
		fmt.Fprintf(e.stderr, "continuo hook %s: %v (the client continues)\n", event, err)
		return nil
	}
	if event == "" {
		fmt.Fprintln(e.stderr, "continuo hook: no EVENT given (the client continues)")
		return nil
	}
	url := *server
	if url == "" {
		url = os.Getenv("CONTINUO_SERVER")
	}
	if url == "" {
		url = defaultHookServer
	}
	tok := os.Getenv(*tokenEnv)
	o := hook.Options{Event: event, Project: *project, Timeout: *timeout,
		Dial: func(ctx context.Context) (hook.Caller, error) {
			if *local {
				return e.dialLocal(ctx, *principal)
			}
			if tok == "" {
				return nil, fmt.Errorf("no token: set %s", *tokenEnv)
			}
			return hook.Dial(ctx, url, tok, mcpserver.Version)
		}}
	hook.Main(e.ctx, o, e.stdin, e.stdout, e.stderr)
	return nil
}

func runHookInstall(e *env, args []string) error {
	fs := e.flags("hook install", "hook install claude|codex [--project-dir DIR] [--server URL] [--token-env VAR] [--project NAME]")
	projectDir := fs.String("project-dir", "", "write the project's settings under `dir` instead of the user's")
	server := fs.String("server", "", "MCP `url` the hook calls (default: none in the command, so $CONTINUO_SERVER or "+defaultHookServer+")")
	tokenEnv := fs.String("token-env", "", "environment `variable` the hook reads the token from (default CONTINUO_TOKEN)")
	project := fs.String("project", "", "`project` the hook lists candidate sessions of")
	settings := fs.String("settings", "", "settings `file` to write instead of the client's default")
	pos, err := e.parseFlags(fs, args, 1)
	if err != nil {
		return err
	}
	client := pos[0]
	path := *settings
	if path == "" {
		home, _ := os.UserHomeDir()
		dir := *projectDir
		if dir != "" {
			if dir, err = filepath.Abs(dir); err != nil {
				return err
			}
		}
		if path, err = hook.SettingsPath(client, dir, home, os.Getenv); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		exe = "continuo"
	}
	var extra []string
	for _, f := range [][2]string{{"--server", *server}, {"--token-env", *tokenEnv}, {"--project", *project}} {
		if f[1] != "" {
			extra = append(extra, f[0], hook.ShellQuote(f[1]))
		}
	}
	res, err := hook.Install(client, path, hook.ShellQuote(exe)+" hook", strings.Join(extra, " "), time.Now())
	if err != nil {
		return err
	}
	text := fmt.Sprintf("%s: hooks %s for %s already installed; unchanged", res.Path, strings.Join(res.Events, ", "), client)
	if res.Changed {
		text = fmt.Sprintf("%s: installed hooks %s for %s", res.Path, strings.Join(res.Events, ", "), client)
		if res.Backup != "" {
			text += " (previous file kept as " + res.Backup + ")"
		}
	}
	e.out(res, text)
	return nil
}

// dialLocal runs this binary's `continuo stdio` on the data directory, as
// the principal a local MCP client would use, with the session scopes the
// hook needs.
func (e *env) dialLocal(ctx context.Context, principal string) (hook.Caller, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	// A hook reads and records; it never makes a data directory (stdio
	// would, on a fresh machine).
	if _, ok, err := datadir.ReadMarker(e.dataDir); err != nil || !ok {
		return nil, fmt.Errorf("no Continuo data directory at %s", e.dataDir)
	}
	if principal == "" {
		principal = e.cfg.Stdio.Principal
	}
	if principal == "" {
		principal = "admin"
	}
	args := []string{"stdio", "--data-dir", e.dataDir, "--principal", principal, "--scopes", "sessions:read,sessions:write"}
	if e.config != "" {
		args = append(args, "--config", e.config)
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Stderr = io.Discard // the hook writes one line of its own on failure
	return hook.DialCommand(ctx, cmd, mcpserver.Version)
}
