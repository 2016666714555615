// Package cli is the continuo command: configuration (file, environment,
// flags), wiring of the store and services, and the subcommands of
// CONTRACT.md §10. It is the only package that picks a concrete store
// driver or reads the process environment.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/postgres"
	"github.com/continuo-dev/continuo/internal/store/sqlite"
)

// errUsage marks a command-line mistake (exit status 2).
var errUsage = errors.New("usage")

// reported is a failure whose result the command already printed (exit
// status 1, no second JSON object).
type reported string

func (r reported) Error() string { return string(r) }

// env is one invocation: its streams and the common flags.
type env struct {
	ctx     context.Context
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
	config  string
	dataDir string
	json    bool
	cfg     Config
	log     *slog.Logger
}

type command struct {
	name  string
	usage string
	run   func(e *env, args []string) error
}

func commands() []command {
	return []command{
		{"serve", "serve [--listen ADDR] [--database-url URL]   run the HTTP server (MCP at /mcp)", runServe},
		{"stdio", "stdio [--principal NAME] [--scopes S1,S2]   serve MCP over stdin/stdout", runStdio},
		{"migrate", "migrate up                                   apply database migrations", runMigrate},
		{"export", "export FILE                                  write every row to a file (JSON lines)", runExport},
		{"import", "import FILE                                  load an export into an empty data directory", runImport},
		{"group", "group create NAME                            create an authority group", runGroup},
		{"principal", "principal create NAME --group GROUP          create a principal", runPrincipal},
		{"token", "token create|revoke|list                     manage personal access tokens", runToken},
		{"project", "project add|grant|list                       manage projects and grants", runProject},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: continuo COMMAND [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintln(w, "  "+c.usage)
	}
	fmt.Fprintln(w, "\nEvery command takes --config FILE, --data-dir DIR (default ./continuo-data) and --json.\nRun 'continuo COMMAND --help' for a command's flags.")
}

// Main runs the continuo command and returns its exit status.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		e := &env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr,
			log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))}
		err := c.run(e, args[1:])
		if err == nil {
			return 0
		}
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		var rep reported
		if errors.As(err, &rep) {
			fmt.Fprintln(stderr, "continuo:", err)
			return 1 // the command printed its result (with --json, the one object)
		}
		if errors.Is(err, errUsage) {
			fmt.Fprintln(stderr, "continuo:", strings.TrimPrefix(err.Error(), "usage: "))
			return 2
		}
		e.fail(err)
		return 1
	}
	fmt.Fprintf(stderr, "continuo: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

// fail reports an error on stderr, and as JSON on stdout with --json.
func (e *env) fail(err error) {
	ce := continuo.AsError(err)
	msg := err.Error()
	if ce.Code != continuo.CodeInternal {
		msg = ce.Message
	}
	fmt.Fprintln(e.stderr, "continuo:", msg)
	if e.json {
		_ = json.NewEncoder(e.stdout).Encode(map[string]any{"error": map[string]any{"code": ce.Code, "message": msg}})
	}
}

// flags returns a flag set with the common flags registered.
func (e *env) flags(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.StringVar(&e.config, "config", "", "TOML configuration `file`")
	fs.StringVar(&e.dataDir, "data-dir", "continuo-data", "data `directory` (created on first use)")
	fs.BoolVar(&e.json, "json", false, "print one JSON object on stdout")
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: continuo %s\n\nFlags:\n", usage)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags that may come before, between or after positional
// arguments (`project add NAME --root PATH`), which the flag package alone
// does not allow. It returns the positional arguments.
func (e *env) parse(fs *flag.FlagSet, args []string, wantPos int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if len(pos) != wantPos {
		fs.Usage()
		return nil, fmt.Errorf("%w: want %d argument(s), got %d", errUsage, wantPos, len(pos))
	}
	cfg, err := LoadConfig(e.config)
	if err != nil {
		return nil, err
	}
	cfg.ApplyEnv(os.Getenv)
	e.cfg = cfg
	return pos, nil
}

// openOptions are what every driver may be asked.
type openOptions struct {
	migrate  store.MigrateMode
	onCommit func(d time.Duration, writes int)
}

// open opens the configured store, creating the data directory.
func (e *env) open(o openOptions) (store.Store, error) {
	if err := os.MkdirAll(e.dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	if err := e.cfg.Validate(); err != nil {
		return nil, err
	}
	driver, target, err := ParseDatabaseURL(e.cfg.DatabaseURL(e.dataDir))
	if err != nil {
		return nil, err
	}
	switch driver {
	case "sqlite":
		return sqlite.Open(e.ctx, target, &sqlite.Options{Migrate: o.migrate, OnCommit: o.onCommit})
	case "postgres":
		return postgres.Open(e.ctx, target, &postgres.Options{Migrate: o.migrate, OnCommit: o.onCommit})
	}
	return nil, fmt.Errorf("unsupported database driver %q", driver)
}

// out prints v as JSON with --json, or the text otherwise.
func (e *env) out(v any, text string) {
	if e.json {
		enc := json.NewEncoder(e.stdout)
		_ = enc.Encode(v)
		return
	}
	fmt.Fprintln(e.stdout, text)
}

func runMigrate(e *env, args []string) error {
	fs := e.flags("migrate", "migrate up [--database-url URL]")
	dbURL := fs.String("database-url", "", "database `url` (sqlite://PATH or postgres://USER@HOST/DB)")
	pos, err := e.parse(fs, args, 1)
	if err != nil {
		return err
	}
	if pos[0] != "up" {
		return fmt.Errorf("%w: migrate takes 'up'", errUsage)
	}
	if *dbURL != "" {
		e.cfg.Database.URL = *dbURL
	}
	s, err := e.open(openOptions{migrate: store.MigrateUp}) // opening applies every pending migration
	if err != nil {
		return err
	}
	defer s.Close()
	e.out(map[string]any{"schema_version": store.SchemaVersion}, fmt.Sprintf("schema is at version %d", store.SchemaVersion))
	return nil
}

// withAuth opens the store and runs fn with an auth service.
func (e *env) withAuth(fn func(a *auth.Service) error) error {
	s, err := e.open(openOptions{})
	if err != nil {
		return err
	}
	defer s.Close()
	return fn(auth.New(s, nil))
}

func runGroup(e *env, args []string) error {
	fs := e.flags("group", "group create NAME")
	pos, err := e.parse(fs, args, 2)
	if err != nil {
		return err
	}
	if pos[0] != "create" {
		return fmt.Errorf("%w: group takes 'create NAME'", errUsage)
	}
	return e.withAuth(func(a *auth.Service) error {
		g, err := a.CreateGroup(e.ctx, pos[1])
		if err != nil {
			return err
		}
		e.out(map[string]string{"group_id": g.ID, "name": g.Name}, "created group "+g.Name+" ("+g.ID+")")
		return nil
	})
}

func runPrincipal(e *env, args []string) error {
	fs := e.flags("principal", "principal create NAME --group GROUP")
	group := fs.String("group", "", "the principal's authority `group` (required)")
	pos, err := e.parse(fs, args, 2)
	if err != nil {
		return err
	}
	if pos[0] != "create" || *group == "" {
		return fmt.Errorf("%w: principal takes 'create NAME --group GROUP'", errUsage)
	}
	return e.withAuth(func(a *auth.Service) error {
		p, err := a.CreatePrincipal(e.ctx, pos[1], *group)
		if err != nil {
			return err
		}
		e.out(map[string]string{"principal_id": p.ID, "name": p.Name, "group_id": p.GroupID}, "created principal "+p.Name+" ("+p.ID+")")
		return nil
	})
}

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func absPath(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	return filepath.Abs(p)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
