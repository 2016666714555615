// Package cli is the continuo command: configuration (file, environment,
// flags), wiring of the store and services, and the subcommands of
// CONTRACT.md §10. It is the only package that picks a concrete store
// driver or reads the process environment.
package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/datadir"
	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/continuo-dev/continuo/internal/redact"
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
	// --log-level and --log-format ("": the configuration's, else info, text)
	logLevel, logFormat string
	flagOut             bytes.Buffer // what the flag package prints: help goes to stdout, errors to stderr
}

type command struct {
	name  string
	usage string
	run   func(e *env, args []string) error
}

func commands() []command {
	return []command{
		{"init", "init [--project DIR|none] [--database-url URL]   create a data directory and its admin token, without serving", runInit},
		{"serve", "serve [--listen ADDR] [--database-url URL]   run the HTTP server (MCP at /mcp)", runServe},
		{"stdio", "stdio [--principal NAME] [--scopes S1,S2]   serve MCP over stdin/stdout", runStdio},
		{"migrate", "migrate up                                   apply database migrations", runMigrate},
		{"export", "export FILE                                  write every row to a file (JSON lines)", runExport},
		{"import", "import FILE                                  load an export into an empty data directory", runImport},
		{"group", "group create NAME                            create an authority group", runGroup},
		{"principal", "principal create NAME --group GROUP          create a principal", runPrincipal},
		{"token", "token create|revoke|list                     manage personal access tokens", runToken},
		{"project", "project add|grant|revoke|remove|list|check  manage projects, grants and checks", runProject},
		{"login-link", "login-link --principal NAME [--ttl 10m]      a single-use sign-in link (OAuth consent page, dashboard)", runLoginLink},
		{"oauth", "oauth clients|grants|revoke ID               list and revoke OAuth clients and grants", runOAuth},
		{"providers", "providers check                              check the configured model providers (no secret printed)", runProviders},
		{"hook", "hook EVENT | hook install claude|codex      Claude Code / Codex CLI lifecycle hooks (never block the client)", runHook},
		{"worker", "worker --swarm ID --provider P --project P   carry one Chat Swarm worker (invite, token, ticket from the environment)", runWorker},
		{"version", "version                                      print the version", runVersion},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: continuo COMMAND [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintln(w, "  "+c.usage)
	}
	fmt.Fprintln(w, "\nEvery command takes --config FILE, --data-dir DIR and --json. The data directory defaults to\n$CONTINUO_DATA_DIR, else $XDG_DATA_HOME/continuo, else ~/.local/share/continuo; the\nconfiguration file to DATA_DIR/continuo.toml, when it exists.\nRun 'continuo COMMAND --help' for a command's flags; 'continuo --version' for the version.")
}

// Main runs the continuo command and returns its exit status.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	case "-version", "--version":
		args = append([]string{"version"}, args[1:]...)
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		e := &env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr,
			log: slog.New(redact.Handler(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo})))}
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
		v := map[string]any{"code": ce.Code, "message": msg}
		if len(ce.Details) > 0 {
			v["details"] = ce.Details
		}
		_ = json.NewEncoder(e.stdout).Encode(map[string]any{"error": v})
	}
}

// flags returns a flag set with the common flags registered.
func (e *env) flags(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(&e.flagOut)
	fs.StringVar(&e.config, "config", "", "TOML configuration `file` (default DATA_DIR/continuo.toml, when it exists)")
	fs.StringVar(&e.dataDir, "data-dir", "", "data `directory` (default $CONTINUO_DATA_DIR, else $XDG_DATA_HOME/continuo, else ~/.local/share/continuo)")
	fs.BoolVar(&e.json, "json", false, "print one JSON object on stdout")
	fs.StringVar(&e.logLevel, "log-level", "", "log `level` on stderr: debug, info, warn or error (default [log] level, else info)")
	fs.StringVar(&e.logFormat, "log-format", "", "log `format` on stderr: text or json (default [log] format, else text)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: continuo %s\n\nFlags:\n", usage)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags that may come before, between or after positional
// arguments (`project add NAME --root PATH`), which the flag package alone
// does not allow. It returns the positional arguments. Help asked for goes
// to stdout (exit 0); usage printed for a mistake goes to stderr.
func (e *env) parse(fs *flag.FlagSet, args []string, wantPos int) ([]string, error) {
	pos, err := e.parseFlags(fs, args, wantPos)
	if err != nil {
		return nil, err
	}
	if e.dataDir == "" {
		if e.dataDir, err = datadir.Default(os.Getenv, os.UserHomeDir); err != nil {
			return nil, err
		}
	}
	if e.dataDir, err = filepath.Abs(e.dataDir); err != nil {
		return nil, err
	}
	// Without --config, the data directory's continuo.toml, when there is one.
	if e.config != "" {
		if e.config, err = filepath.Abs(e.config); err != nil {
			return nil, err
		}
	} else {
		if def := filepath.Join(e.dataDir, DefaultConfigName); fileExists(def) {
			e.config = def
		}
	}
	cfg, err := LoadConfig(e.config)
	if err != nil {
		return nil, err
	}
	cfg.ApplyEnv(os.Getenv)
	e.cfg = cfg
	if err := e.setLogger(); err != nil {
		return nil, err
	}
	return pos, nil
}

// DefaultConfigName is the configuration file a command reads from its data
// directory when --config names none.
const DefaultConfigName = "continuo.toml"

func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// parseFlags is parse without the configuration: flags and positional
// arguments only.
func (e *env) parseFlags(fs *flag.FlagSet, args []string, wantPos int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				_, _ = e.flagOut.WriteTo(e.stdout)
				return nil, err
			}
			_, _ = e.flagOut.WriteTo(e.stderr)
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
		_, _ = e.flagOut.WriteTo(e.stderr)
		if len(pos) > wantPos {
			return nil, fmt.Errorf("%w: unexpected argument %q", errUsage, pos[wantPos])
		}
		return nil, fmt.Errorf("%w: want %d argument(s), got %d", errUsage, wantPos, len(pos))
	}
	return pos, nil
}

// openOptions are what every driver may be asked.
type openOptions struct {
	migrate  store.MigrateMode
	onCommit func(d time.Duration, writes int)
	// create lets the command make a new database (serve, stdio, init,
	// import); every other command refuses to run without one.
	create bool
	// reinit lets it make a new database even where the data directory's
	// marker says one existed and is gone (--init; import, which restores).
	reinit bool
	// prepare runs on the opened store under the data directory's init
	// lock, so that first starts at once (several stdio servers launched by
	// one client) migrate and bootstrap one after the other.
	prepare func(store.Store) error
	// mcpURL is where this server serves MCP (serve only): the process
	// carrier runtime tells the carriers it starts.
	mcpURL string
}

// The files of a data directory, besides the database.
const (
	serveLockName = "serve.lock" // held by the one `continuo serve` of the directory
	initLockName  = "init.lock"  // held while a database is opened, created, migrated, bootstrapped
)

// initLockWait bounds how long a start waits for another one's first start.
const initLockWait = 2 * time.Minute

// open opens the configured store. Only commands given o.create make a new
// database, and then under the data directory's init lock.
func (e *env) open(o openOptions) (store.Store, error) {
	if err := e.cfg.Validate(); err != nil {
		return nil, err
	}
	driver, target, err := ParseDatabaseURL(e.cfg.DatabaseURL(e.dataDir))
	if err != nil {
		return nil, err
	}
	ident := databaseIdentity(driver, target)
	// Only serve, stdio, init and import make the data directory; every
	// command tightens one that is open to other users.
	if err := e.prepareDataDir(o.create); err != nil {
		return nil, err
	}
	if driver == "sqlite" && filepath.Dir(target) != e.dataDir {
		if err := e.secureDatabase(target); err != nil {
			return nil, err
		}
	}
	if !o.create {
		s, err := e.openDriver(driver, target, o, true)
		if errors.Is(err, store.ErrNoDatabase) {
			if m, marked, _ := datadir.ReadMarker(e.dataDir); marked && m.Database == ident {
				return nil, e.lostDatabase(m, driver, target)
			}
			return nil, e.noDatabase(driver, target)
		}
		return s, err
	}
	ctx, cancel := context.WithTimeout(e.ctx, initLockWait)
	lock, err := datadir.WaitLock(ctx, filepath.Join(e.dataDir, initLockName))
	cancel()
	var locked *datadir.LockedError
	if errors.As(err, &locked) {
		return nil, fmt.Errorf("data directory %s: waited %v for another continuo to finish creating or opening its database: %w", e.dataDir, initLockWait, err)
	} else if err != nil {
		return nil, e.dataDirError(err) // it could not even try: say why
	}
	defer lock.Unlock()
	m, marked, err := datadir.ReadMarker(e.dataDir)
	if err != nil {
		return nil, e.dataDirError(err)
	}
	// A directory whose marker names this database must still have it.
	mustExist := marked && m.Database == ident && !o.reinit
	s, err := e.openDriver(driver, target, o, mustExist)
	if errors.Is(err, store.ErrNoDatabase) {
		return nil, e.lostDatabase(m, driver, target)
	}
	if err != nil {
		return nil, err
	}
	if o.prepare != nil {
		if err := o.prepare(s); err != nil {
			s.Close()
			return nil, err
		}
	}
	if !marked || m.Database != ident || o.reinit {
		if err := datadir.WriteMarker(e.dataDir, ident, time.Now()); err != nil {
			s.Close()
			return nil, e.dataDirError(fmt.Errorf("write %s: %w", filepath.Join(e.dataDir, datadir.MarkerName), err))
		}
	}
	return s, nil
}

// openDriver opens the database; existing refuses one without a schema.
func (e *env) openDriver(driver, target string, o openOptions, existing bool) (store.Store, error) {
	switch driver {
	case "sqlite":
		s, err := sqlite.Open(e.ctx, target, &sqlite.Options{Migrate: o.migrate, OnCommit: o.onCommit, Existing: existing})
		if err != nil {
			return nil, e.openError(target, err)
		}
		return s, nil
	case "postgres":
		return postgres.Open(e.ctx, target, &postgres.Options{Migrate: o.migrate, OnCommit: o.onCommit, Existing: existing})
	}
	return nil, fmt.Errorf("unsupported database driver %q", driver)
}

// databaseIdentity names a database in the data directory's marker: a
// SQLite file's absolute path, or a PostgreSQL URL's host, database and
// schema (never its user or password).
func databaseIdentity(driver, target string) string {
	if driver == "sqlite" {
		if abs, err := filepath.Abs(target); err == nil {
			return abs
		}
		return target
	}
	u, err := url.Parse(target)
	if err != nil {
		return "postgres"
	}
	id := "postgres://" + u.Host + u.Path
	if sp := u.Query().Get("search_path"); sp != "" {
		id += "?search_path=" + url.QueryEscape(sp)
	}
	return id
}

// noDatabase is the refusal of a command that does not create databases.
func (e *env) noDatabase(driver, target string) error {
	switch {
	case driver == "postgres":
		return continuo.Errorf(continuo.CodeNotFound, "the PostgreSQL database the database URL names has no Continuo schema; run `continuo init` with the same URL first, or check the URL")
	case target == filepath.Join(e.dataDir, "continuo.db"):
		return continuo.Errorf(continuo.CodeNotFound, "no Continuo data directory at %s; run `continuo init`, or pass --data-dir", e.dataDir)
	}
	return continuo.Errorf(continuo.CodeNotFound, "no Continuo database at %s; run `continuo init`, or check the database URL", target)
}

// lostDatabase is the refusal to start over in a data directory whose
// database disappeared.
func (e *env) lostDatabase(m datadir.Marker, driver, target string) error {
	what := fmt.Sprintf("its database %s is gone (deleted or moved)", target)
	restore := fmt.Sprintf("put back a copy of the database file (a backup taken with `sqlite3 %s \".backup FILE\"`, or a copy of the stopped directory)", target)
	if driver == "postgres" {
		what = "its PostgreSQL database has no Continuo schema any more (dropped, or --database-url names another database)"
		restore = "restore the database (pg_restore of a pg_dump, or your server's backups)"
	}
	return continuo.Errorf(continuo.CodeInvalidState, "the data directory %s had a Continuo database (created %s), but %s. "+
		"Continuo does not start over with an empty database by itself: its tokens, projects and sessions would be gone. To restore, %s, "+
		"or load an export into it: `continuo import FILE --data-dir %s`. To start over with a new, empty database instead, run again with --init.",
		e.dataDir, m.CreatedAt, what, restore, e.dataDir)
}

// table is text for out: a header and rows, in aligned columns.
func table(header []string, rows [][]string) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
	return strings.TrimSuffix(b.String(), "\n")
}

// scopeText joins scopes with commas, as the CLI takes them.
func scopeText(sc []continuo.Scope) string {
	s := make([]string, len(sc))
	for i, x := range sc {
		s[i] = string(x)
	}
	return strings.Join(s, ",")
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
	s, err := e.open(openOptions{migrate: store.MigrateUp}) // opening applies every pending migration (of an existing database)
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

// subcommand splits off a command's subcommand. Asking for help instead
// prints the command's forms on stdout and ends it (exit 0).
func (e *env) subcommand(args []string, forms ...string) (string, []string, error) {
	if len(args) == 0 {
		return "", nil, nil
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		cmd := strings.Fields(forms[0])[0]
		fmt.Fprintf(e.stdout, "Usage: continuo %s SUBCOMMAND\n\n", cmd)
		for _, f := range forms {
			fmt.Fprintln(e.stdout, "  continuo "+f)
		}
		fmt.Fprintf(e.stdout, "\nRun 'continuo %s SUBCOMMAND --help' for its flags.\n", cmd)
		return "", nil, flag.ErrHelp
	}
	return args[0], args[1:], nil
}

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// runVersion prints the version: Continuo's, and the Go toolchain's and the
// source revision's when the build recorded them.
func runVersion(e *env, args []string) error {
	fs := e.flags("version", "version")
	if _, err := e.parseFlags(fs, args, 0); err != nil {
		return err
	}
	v := map[string]string{"version": mcpserver.Version, "go": runtime.Version()}
	text := "continuo " + mcpserver.Version + " (" + runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v["revision"] = s.Value
				text += ", " + s.Value
			}
		}
	}
	e.out(v, text+")")
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
