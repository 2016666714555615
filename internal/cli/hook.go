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

const (
	hookUsage        = "hook EVENT [--server URL --token-env VAR | --local [--principal NAME]] [--project NAME] [--timeout 5s]"
	hookInstallUsage = "hook install claude|codex [--project-dir DIR] [--server URL --token-env VAR | --local [--principal NAME]] [--project NAME]"
	// defaultTokenEnv is the variable a hook reads its token from.
	defaultTokenEnv = "CONTINUO_TOKEN"
	// hookToolsets are the toolsets of the tools a hook calls.
	hookToolsets = "continuity"
)

// runHook is `continuo hook EVENT` and `continuo hook install CLIENT`.
func runHook(e *env, args []string) error {
	if len(args) > 0 && args[0] == "install" {
		return runHookInstall(e, args[1:])
	}
	sub, rest, err := e.subcommand(args, hookUsage, hookInstallUsage)
	if err != nil {
		return err
	}
	event := sub
	fs := e.flags("hook", hookUsage+"   (a client lifecycle hook: JSON on stdin)")
	server := fs.String("server", "", "MCP `url` of the Continuo server (default $CONTINUO_SERVER, else the address the data directory's running server recorded)")
	tokenEnv := fs.String("token-env", defaultTokenEnv, "environment `variable` holding the token")
	project := fs.String("project", "", "`project` whose sessions are the candidates when none is bound (default: the one named like the checkout of the hook's cwd, or the only one)")
	timeout := fs.Duration("timeout", 0, "give up on the server after this `duration` (default 5s; 2.5s at SessionEnd, which Codex cuts at 3s)")
	local := fs.Bool("local", false, "use the data directory (--data-dir) through `continuo stdio` instead of a server: no token")
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
	if err := e.hookDataDir(); err != nil {
		fmt.Fprintf(e.stderr, "continuo hook %s: %v (the client continues)\n", event, err)
		return nil
	}
	o := hook.Options{Event: event, Project: *project, Timeout: *timeout}
	if *local {
		o.Server = "the local data directory " + e.dataDir
		o.Spool = hook.Spool{Dir: e.hookSpoolDir(), Target: "local:" + e.dataDir}
		o.Dial = func(ctx context.Context) (hook.Caller, error) { return e.dialLocal(ctx, *principal) }
	} else {
		url := *server
		if url == "" {
			url = os.Getenv("CONTINUO_SERVER")
		}
		if url == "" {
			if s, ok, _ := datadir.ReadServing(e.dataDir, serveLockName); ok {
				url = s.MCPURL
			}
		}
		tok := os.Getenv(*tokenEnv)
		o.Server, o.Spool = url, hook.Spool{Dir: e.hookSpoolDir(), Target: url}
		o.Dial = func(ctx context.Context) (hook.Caller, error) {
			switch {
			case url == "":
				return nil, errors.New("no server: pass --server URL (or --local), or set CONTINUO_SERVER")
			case tok == "":
				return nil, fmt.Errorf("no token: set %s", *tokenEnv)
			}
			// The hooks call session tools only: they ask for continuity,
			// whatever the server's default.
			return hook.Dial(ctx, url, tok, hookToolsets, mcpserver.Version)
		}
	}
	if f := openHookLog(o.Spool.Dir); f != nil {
		defer f.Close()
		o.Log = f
	}
	hook.Main(e.ctx, o, e.stdin, e.stdout, e.stderr)
	return nil
}

// hookLogMax bounds the hook log: past it, the log starts over (the
// previous one kept as hook.log.1).
const hookLogMax = 1 << 20

// openHookLog opens hook.log beside the spool: one line per hook run, so a
// user can see that the hooks run and what they did. nil when it cannot.
func openHookLog(spoolDir string) *os.File {
	if spoolDir == "" {
		return nil
	}
	dir := filepath.Dir(spoolDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil
	}
	path := filepath.Join(dir, "hook.log")
	if st, err := os.Stat(path); err == nil && st.Size() > hookLogMax {
		_ = os.Rename(path, path+".1")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil
	}
	return f
}

// hookDataDir settles the data directory a hook uses (for --local, and for
// its spool) without reading the configuration a bad file of which must not
// block a client.
func (e *env) hookDataDir() error {
	var err error
	if e.dataDir == "" {
		if e.dataDir, err = datadir.Default(os.Getenv, os.UserHomeDir); err != nil {
			return err
		}
	}
	e.dataDir, err = filepath.Abs(e.dataDir)
	return err
}

// hookSpoolDir is where hooks keep what they could not post: in the data
// directory when it holds a database, else in the user's state directory
// (a hook of a remote server never makes a data directory).
func (e *env) hookSpoolDir() string {
	if _, ok, err := datadir.ReadMarker(e.dataDir); err == nil && ok {
		return filepath.Join(e.dataDir, "hook-spool")
	}
	if s := os.Getenv("XDG_STATE_HOME"); s != "" && filepath.IsAbs(s) {
		return filepath.Join(s, "continuo", "hook-spool")
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return filepath.Join(h, ".local", "state", "continuo", "hook-spool")
	}
	return "" // nowhere: nothing is spooled
}

func runHookInstall(e *env, args []string) error {
	fs := e.flags("hook install", hookInstallUsage)
	projectDir := fs.String("project-dir", "", "write the project's settings under `dir` instead of the user's")
	server := fs.String("server", "", "MCP `url` the hooks call (default: the running server of the data directory)")
	tokenEnv := fs.String("token-env", "", "environment `variable` the hooks read the token from (default "+defaultTokenEnv+")")
	local := fs.Bool("local", false, "the hooks open the data directory as `continuo stdio` does: no server, no token")
	principal := fs.String("principal", "", "with --local: the principal the hooks act as (default: [stdio] principal, else admin)")
	project := fs.String("project", "", "`project` the hooks list candidate sessions of")
	settings := fs.String("settings", "", "settings `file` to write instead of the client's default")
	pos, err := e.parse(fs, args, 1)
	if err != nil {
		return err
	}
	client := pos[0]
	if *local && (*server != "" || *tokenEnv != "") {
		return fmt.Errorf("%w: --local needs no --server or --token-env (the hooks open the data directory)", errUsage)
	}
	if *principal != "" && !*local {
		return fmt.Errorf("%w: --principal goes with --local (a server knows the principal from the token)", errUsage)
	}
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
	exe, err := installedBinary()
	if err != nil {
		return err
	}
	extra, how, err := e.hookTarget(*server, *tokenEnv, *local, *principal)
	if err != nil {
		return err
	}
	if *project != "" {
		extra = append(extra, "--project", hook.ShellQuote(*project))
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
	text += "\n" + how
	if client == hook.ClientCodex {
		text += "\nCodex runs hooks only once you trust them: at its next start choose \"Trust all and continue\" (or review them); `codex exec` in automation takes --dangerously-bypass-hook-trust."
	}
	e.out(res, text)
	return nil
}

// hookTarget is the hook command's flags for where it posts, and a line
// that says so: the server given, else the data directory's running
// server, else (--local, or a data directory no server runs on) the data
// directory itself.
func (e *env) hookTarget(server, tokenEnv string, local bool, principal string) ([]string, string, error) {
	if tokenEnv == "" {
		tokenEnv = defaultTokenEnv
	}
	if !local && server == "" {
		if s, ok, _ := datadir.ReadServing(e.dataDir, serveLockName); ok {
			server = s.MCPURL
		}
	}
	if server != "" {
		return []string{"--server", hook.ShellQuote(server), "--token-env", hook.ShellQuote(tokenEnv)},
			fmt.Sprintf("The hooks call %s with the token in $%s: set it in the environment the client runs in.", server, tokenEnv), nil
	}
	if _, ok, err := datadir.ReadMarker(e.dataDir); err != nil || !ok {
		return nil, "", fmt.Errorf("%w: no server is running on %s and it holds no database: pass --server URL --token-env VAR, or run `continuo serve` (or init) first and --local", errUsage, e.dataDir)
	}
	flags := []string{"--local", "--data-dir", hook.ShellQuote(e.dataDir)}
	if e.config != "" {
		cfg, err := filepath.Abs(e.config)
		if err != nil {
			return nil, "", err
		}
		flags = append(flags, "--config", hook.ShellQuote(cfg))
	}
	if principal != "" {
		flags = append(flags, "--principal", hook.ShellQuote(principal))
	}
	return flags, fmt.Sprintf("The hooks open the data directory %s themselves (as `continuo stdio` does): no server, no token.", e.dataDir), nil
}

// installedBinary is the absolute path of the continuo binary the hooks
// run: this one, unless it is a temporary build of `go run`, which is gone
// when that command ends; then the continuo on PATH.
func installedBinary() (string, error) {
	exe, err := os.Executable()
	if err == nil {
		if resolved, rerr := filepath.EvalSymlinks(exe); rerr == nil {
			exe = resolved
		}
	}
	if err == nil && !isGoRunBuild(exe) {
		return exe, nil
	}
	p, lerr := exec.LookPath("continuo")
	if lerr == nil {
		if p, lerr = filepath.Abs(p); lerr == nil && !isGoRunBuild(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: this continuo is a temporary build of `go run` (%s), which the hooks could not run later; install it (go install ./cmd/continuo) and run `continuo hook install` from the installed binary", errUsage, exe)
}

// isGoRunBuild reports a binary that `go run` built in a temporary
// go-build directory.
func isGoRunBuild(path string) bool {
	for _, part := range strings.Split(filepath.ToSlash(path), "/") {
		if strings.HasPrefix(part, "go-build") {
			return true
		}
	}
	return false
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
	cfg, err := LoadConfig(e.config)
	if err != nil {
		return nil, err
	}
	if principal == "" {
		principal = cfg.Stdio.Principal
	}
	if principal == "" {
		principal = "admin"
	}
	args := []string{"stdio", "--data-dir", e.dataDir, "--principal", principal, "--scopes", "sessions:read,sessions:write", "--toolsets", hookToolsets}
	if e.config != "" {
		args = append(args, "--config", e.config)
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Stderr = io.Discard // the hook writes one line of its own on failure
	return hook.DialCommand(ctx, cmd, mcpserver.Version)
}
