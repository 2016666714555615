package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/datadir"
	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/continuo-dev/continuo/internal/metrics"
	"github.com/continuo-dev/continuo/internal/oauth"
	"github.com/continuo-dev/continuo/internal/provider"
	runs "github.com/continuo-dev/continuo/internal/run"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/swarm"
	"github.com/continuo-dev/continuo/internal/web"
	"github.com/continuo-dev/continuo/internal/workflow"
	"github.com/continuo-dev/continuo/internal/workspace"
)

// app is the wired server: store and services.
type app struct {
	store    store.Store
	auth     *auth.Service
	workflow *workflow.Service
	runs     *runs.Service
	agents   *runs.Agents
	swarm    *swarm.Service
	metrics  *metrics.Registry
}

// wire opens the store and builds the services. With prepare, the store
// may be created (serve, stdio, init) and prepare runs under the init lock.
func (e *env) wire(o openOptions) (*app, error) {
	reg := metrics.NewRegistry()
	commits := reg.Histogram("continuo_db_commit_seconds", "Duration of database commits (one commit may carry several writes).", metrics.DefBuckets)
	writes := reg.Counter("continuo_db_commit_writes_total", "Writes committed (group commit: several per commit).")
	o.onCommit = func(d time.Duration, n int) {
		commits.Observe(d.Seconds())
		writes.Add(float64(n))
	}
	s, err := e.open(o)
	if err != nil {
		return nil, err
	}
	a := e.services(s, reg)
	// A serving process runs validation checks: it owns the runs it
	// starts, renews their leases and interrupts what a dead one left.
	key, err := a.auth.SessionKey(e.ctx)
	if err != nil {
		s.Close()
		return nil, err
	}
	set, err := buildProviders(e.cfg.Providers, os.Getenv)
	if err != nil {
		s.Close()
		return nil, err
	}
	agents := &runs.Agents{Providers: set.providers, Limits: set.limits}
	a.runs = runs.New(s, a.auth, runs.Options{Logger: e.log, Key: key,
		Executors: map[continuo.RunKind]runs.Executor{continuo.RunValidation: runs.Commands{}, continuo.RunAgent: agents}})
	a.workflow = workflow.New(s, a.auth, &workflow.Options{WorktreeDir: filepath.Join(e.dataDir, "worktrees"), Runs: a.runs,
		Runners: set.runners})
	agents.Record = a.workflow.RecordAnswer
	a.agents = agents
	if err := a.runs.Start(); err != nil {
		s.Close()
		return nil, err
	}
	// It delivers swarm tasks: its reaper settles lost leases and what a
	// dead server delivered.
	sopts := swarm.Options{Logger: e.log, Metrics: a.metrics}
	if sc := e.cfg.Swarm; sc.Runtime == "process" && o.mcpURL == "" {
		// A carrier needs a URL to reach: a `continuo serve` on the same
		// database starts them; this process only says so.
		e.log.Warn("swarm: runtime \"process\" starts carriers only in `continuo serve`; this process starts none")
	} else if sc.Runtime == "process" {
		// Auto Compact starts replacement carriers itself.
		sopts.Runtime = &swarm.ProcessRuntime{Argv: sc.ProcessCommand, EnvNames: sc.ProcessEnv, Server: o.mcpURL, Dir: e.dataDir,
			LogDir: filepath.Join(e.dataDir, "carriers")}
		sopts.Minter = carrierMinter{a.auth}
	}
	a.swarm = swarm.New(s, sopts)
	if err := a.swarm.Start(); err != nil {
		a.runs.Close()
		s.Close()
		return nil, err
	}
	return a, nil
}

// close stops the runs this process executes (they end interrupted) and
// closes the store.
func (a *app) close() {
	if a.swarm != nil {
		a.swarm.Close()
	}
	if a.runs != nil {
		a.runs.Close()
	}
	a.store.Close()
}

// services builds the services on an open store, without runs (for the
// operator's commands).
func (e *env) services(s store.Store, reg *metrics.Registry) *app {
	a := auth.New(s, nil)
	wf := workflow.New(s, a, &workflow.Options{WorktreeDir: filepath.Join(e.dataDir, "worktrees")})
	return &app{store: s, auth: a, workflow: wf, metrics: reg}
}

// firstStart is what a first start made: the admin token (when asked for
// one) and the project it registered, with the reason it chose that one.
type firstStart struct {
	token   *auth.IssuedToken
	project *continuo.Project
	fromCwd bool // the project is the checkout the command ran in (no --project)
	fresh   bool // this start bootstrapped the database
	// hint is one line saying how to register the checkout a later start
	// could not register itself.
	hint string
	// signIn is the admin's single-use dashboard sign-in link, made by a
	// first start that serves the dashboard.
	signIn *auth.LoginLinkInfo
}

// firstSignInTTL is how long a first start's sign-in link stays valid.
const firstSignInTTL = time.Hour

// bootstrapper returns an openOptions.prepare that bootstraps a fresh
// database into *out: the admin identity and a first project — the
// checkout named by --project (projectFlag), none for --project none, else
// the git checkout the command runs in, if any.
func (e *env) bootstrapper(projectFlag string, issueToken bool, out *firstStart) func(store.Store) error {
	return func(s store.Store) error {
		a := auth.New(s, nil)
		done, err := a.Bootstrapped(e.ctx)
		if err != nil {
			return err
		}
		if !done {
			if err := e.bootstrap(a, projectFlag, issueToken, out); err != nil {
				return err
			}
		}
		return e.configureProjects(a)
	}
}

// configureProjects applies the configuration's [projects] tables.
func (e *env) configureProjects(a *auth.Service) error {
	specs := e.cfg.projectSpecs()
	for i, spec := range specs {
		if spec.Root == "" {
			continue
		}
		top, err := workspace.CheckoutRoot(e.ctx, spec.Root)
		if err != nil {
			return continuo.Invalid("root", "projects.%s.root: %v", spec.Name, err)
		}
		specs[i].Root = top
	}
	changed, err := a.ConfigureProjects(e.ctx, specs)
	for _, name := range changed {
		e.log.Info("project configured from the config file", "project", name)
	}
	return err
}

// bootstrap makes a fresh database's admin, token and first project.
func (e *env) bootstrap(a *auth.Service, projectFlag string, issueToken bool, out *firstStart) error {
	var first *auth.ProjectSpec
	switch projectFlag {
	case "none":
	case "":
		if cwd, err := os.Getwd(); err == nil && workspace.IsRepo(e.ctx, cwd) {
			if top, err := workspace.CheckoutRoot(e.ctx, cwd); err == nil {
				first = &auth.ProjectSpec{Name: workspace.ProjectName(filepath.Base(top)), Root: top, Writable: true}
				out.fromCwd = true
			}
		}
	default:
		top, err := workspace.CheckoutRoot(e.ctx, projectFlag)
		if err != nil {
			return continuo.Invalid("project", "--project: %v (or --project none)", err)
		}
		first = &auth.ProjectSpec{Name: workspace.ProjectName(filepath.Base(top)), Root: top, Writable: true}
	}
	var err error
	out.token, out.project, err = a.Bootstrap(e.ctx, first, issueToken)
	// Another replica on the same PostgreSQL database may have won:
	// then Bootstrap made nothing and issued no token.
	out.fresh = err == nil && (out.token != nil || !issueToken)
	if out.project == nil {
		out.fromCwd = false
	}
	return err
}

// tuneGC trades a little memory for CPU: the default GOGC=100 spent a
// seventh of the server's CPU in the collector under write load (see
// docs/PERFORMANCE.md). A soft memory limit keeps the larger heap goal from
// growing the process past what a small machine expects. Either setting
// given in the environment wins.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(200)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(48 << 20)
	}
}

func runServe(e *env, args []string) error {
	fs := e.flags("serve", "serve [--listen 127.0.0.1:7300] [--database-url sqlite://PATH | postgres://USER@HOST/DB] [--project DIR|none] [--toolsets T1,T2] [--init]")
	listen := fs.String("listen", "", "`address` to listen on (default 127.0.0.1:7300)")
	dbURL := fs.String("database-url", "", "database `url`: sqlite://PATH (default DATA_DIR/continuo.db) or postgres://USER@HOST/DB")
	project := fs.String("project", "", "on a first start, register the git checkout `DIR` as the first project (none: no project; default: the checkout the command runs in)")
	reinit := fs.Bool("init", false, "create a new, empty database even though this data directory's database was lost")
	toolsets := toolsetsFlag(fs)
	if _, err := e.parse(fs, args, 0); err != nil {
		return err
	}
	if *listen != "" {
		e.cfg.Server.Listen = *listen
	}
	if *dbURL != "" {
		e.cfg.Database.URL = *dbURL
	}
	if err := e.applyToolsets(*toolsets); err != nil {
		return err
	}
	tuneGC()
	// One server per data directory: a second one would share its
	// worktrees and, on SQLite, its database with the first.
	if err := e.prepareDataDir(true); err != nil {
		return err
	}
	lock, err := datadir.TryLock(filepath.Join(e.dataDir, serveLockName))
	var locked *datadir.LockedError
	if errors.As(err, &locked) {
		who := "another continuo serve"
		if locked.PID > 0 {
			who += fmt.Sprintf(" (pid %d)", locked.PID)
		}
		return continuo.Errorf(continuo.CodeConflict, "%s is already serving the data directory %s; stop it first, or give this server its own --data-dir", who, e.dataDir)
	} else if err != nil {
		return e.dataDirError(err)
	}
	defer lock.Unlock()
	// Bind before anything is created: a first start that cannot listen
	// must not make the database and print its admin token into a failure.
	ln, err := net.Listen("tcp", e.cfg.Server.Listen)
	if err != nil {
		return err
	}
	defer ln.Close()
	var first firstStart
	a, err := e.wire(openOptions{create: true, reinit: *reinit, prepare: e.bootstrapper(*project, true, &first),
		mcpURL: "http://" + ln.Addr().String() + "/mcp"})
	if err != nil {
		return err
	}
	defer a.close()
	if !first.fresh {
		e.registerCheckout(a.auth, *project, &first)
	}
	key, err := a.auth.SessionKey(e.ctx)
	if err != nil {
		return err
	}
	// The bearer cache is used only while this process hears revocations.
	// The watcher outlives the shutdown's requests in flight and ends
	// before the store closes.
	watch, stopWatch := context.WithCancel(context.WithoutCancel(e.ctx))
	watched := a.auth.WatchRevocations(watch)
	defer func() { stopWatch(); <-watched }()
	sessions := web.NewMCPSessions(key)
	// Tests serve client metadata documents from loopback with their own
	// CA; nothing else relaxes the fetcher's rules.
	testCA := os.Getenv("CONTINUO_TEST_CLIENT_METADATA_CA")
	fetcher, err := oauth.NewClientDocFetcher(oauth.FetcherOptions{TestCAFile: testCA})
	if err != nil {
		return err
	}
	if testCA != "" {
		e.log.Warn("CONTINUO_TEST_CLIENT_METADATA_CA is set: client metadata documents on loopback addresses are allowed (tests only)")
	}
	a.auth.EnableOAuth(auth.OAuthOptions{Issuer: oauthIssuer(e.cfg.Server.PublicURL, ln.Addr())})
	authorization := oauth.New(a.auth, a.store, nil, oauth.Options{Fetcher: fetcher})
	base := e.cfg.Server.PublicURL
	if base == "" {
		base = "http://" + ln.Addr().String()
	}
	mcpURL := strings.TrimSuffix(base, "/") + "/mcp"
	mcpSrv := mcpserver.New(mcpserver.Options{Workflow: a.workflow, Runs: a.runs, Swarm: a.swarm,
		TrustedCarrierMeta: e.cfg.Swarm.TrustedCarrierMeta, Metrics: a.metrics, Logger: e.log, SessionID: sessions.NewID,
		Toolsets: e.cfg.DefaultToolsets(), MCPURL: mcpURL})
	var publicHost string
	if u, err := url.Parse(e.cfg.Server.PublicURL); err == nil {
		publicHost = u.Host
	}
	streams, closeStreams := context.WithCancel(context.WithoutCancel(e.ctx))
	defer closeStreams()
	srv := &http.Server{
		Handler: endStreams(streams, web.Handler(web.Options{MCP: mcpSrv, Auth: a.auth, Ready: a.store.Ping, Metrics: a.metrics, Logger: e.log,
			PublicHost: publicHost, PublicURL: e.cfg.Server.PublicURL, MCPSessions: sessions, OAuth: a.auth, OAuthServer: authorization, Key: key,
			Dashboard:      &web.Dashboard{Workflow: a.workflow, Runs: a.runs, Swarm: a.swarm, Auth: a.auth},
			AllowedOrigins: e.cfg.Server.AllowedOrigins, Limits: web.Limits{MaxMCPSessions: e.cfg.Server.MaxSessions,
				MaxMCPSessionsPerPrincipal: e.cfg.Server.MaxSessionsPerPrincipal,
				MCPSessionIdle:             time.Duration(e.cfg.Server.SessionIdleSecs) * time.Second,
				BodyTimeout:                time.Duration(e.cfg.Server.BodyTimeoutSecs) * time.Second}})),
		// Bounded header reads (and, in web's handler, bounded body reads
		// on every route); no write timeout, because MCP streams
		// (server-sent events) legitimately stay open.
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	a.agents.Attach = attachContinuo(a.auth, mcpURL)
	if first.fresh && a.auth.Issuer() != "" {
		// The admin's way into the dashboard, beside its token.
		if first.signIn, err = a.auth.CreateLoginLink(e.ctx, auth.AdminName, firstSignInTTL, []continuo.Scope{continuo.ScopeAdmin}); err != nil {
			return err
		}
	}
	e.announce(mcpURL, ln.Addr().String(), a.auth.Issuer(), &first)
	// Other commands on this data directory (hook install, login-link)
	// name the address this server really has.
	if err := datadir.WriteServing(e.dataDir, datadir.Serving{URL: strings.TrimSuffix(base, "/"), MCPURL: mcpURL, Issuer: a.auth.Issuer(), PID: os.Getpid()}); err != nil {
		e.log.Warn("could not record the server's address in the data directory", "err", err)
	}
	defer datadir.RemoveServing(e.dataDir)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-e.ctx.Done():
	}
	e.log.Info("shutting down")
	// Shutdown waits for requests in flight (tool calls finish), but a
	// server-sent event stream never finishes by itself: end those at once.
	closeStreams()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(e.ctx), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// oauthIssuer is the server's one OAuth issuer: the public URL, else the
// bound loopback address over http (a server on this machine only), else
// none — a server reachable from elsewhere without a public URL would have
// to guess the name its clients use, so it serves personal access tokens
// only.
func oauthIssuer(publicURL string, bound net.Addr) string {
	if publicURL != "" {
		return strings.TrimSuffix(publicURL, "/")
	}
	if tcp, ok := bound.(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		return "http://" + tcp.String()
	}
	return ""
}

// endStreams ends GET requests — the server-sent event streams a client
// keeps open to hear from the server — when done ends, so that a shutdown
// does not wait for clients to hang up. Other requests keep their own
// context and finish.
func endStreams(done context.Context, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			stop := context.AfterFunc(done, cancel)
			defer stop()
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// runInit creates and bootstraps a data directory without serving: the
// database, the admin group, principal and token (printed once), and a
// first project. On an initialised directory it changes nothing and prints
// no secret.
func runInit(e *env, args []string) error {
	fs := e.flags("init", "init [--database-url sqlite://PATH | postgres://USER@HOST/DB] [--project DIR|none] [--init]")
	dbURL := fs.String("database-url", "", "database `url`: sqlite://PATH (default DATA_DIR/continuo.db) or postgres://USER@HOST/DB")
	project := fs.String("project", "", "register the git checkout `DIR` as the first project (none: no project; default: the checkout the command runs in)")
	reinit := fs.Bool("init", false, "create a new, empty database even though this data directory's database was lost")
	if _, err := e.parse(fs, args, 0); err != nil {
		return err
	}
	if *dbURL != "" {
		e.cfg.Database.URL = *dbURL
	}
	var first firstStart
	s, err := e.open(openOptions{create: true, reinit: *reinit, prepare: e.bootstrapper(*project, true, &first)})
	if err != nil {
		return err
	}
	defer s.Close()
	if e.json {
		v := map[string]any{"data_dir": e.dataDir, "created": first.fresh}
		if first.token != nil {
			v["admin_token"], v["admin_token_id"] = first.token.Token, first.token.TokenID
		}
		if first.project != nil {
			v["project"], v["project_id"], v["project_root"] = first.project.Name, first.project.ID, first.project.Root
		}
		e.out(v, "")
		return nil
	}
	w := e.stdout
	if !first.fresh {
		fmt.Fprintf(w, "The data directory %s is initialised already; nothing changed.\n", e.dataDir)
		if *project != "" {
			fmt.Fprintf(w, "(--project applies to a first start only: use `continuo project add NAME --root DIR --grant admin:write`.)\n")
		}
		return nil
	}
	fmt.Fprintf(w, "Initialised the Continuo data directory %s.\n", e.dataDir)
	e.printFirstStart(&first)
	return nil
}

// announce tells the operator how to connect. With --json it prints one
// JSON object (scripts and tests read it); otherwise a short text.
func (e *env) announce(mcpURL, addr, issuer string, first *firstStart) {
	if e.json {
		v := map[string]any{"mcp_url": mcpURL, "listen": addr, "data_dir": e.dataDir, "config": e.config, "toolsets": e.cfg.DefaultToolsets().Names()}
		if issuer != "" {
			v["oauth_issuer"] = issuer
			v["dashboard_url"] = issuer + "/"
		}
		if first.signIn != nil {
			v["sign_in_url"] = first.signIn.URL
		}
		if first.token != nil {
			v["admin_token"] = first.token.Token
			v["admin_token_id"] = first.token.TokenID
		}
		if first.project != nil {
			v["project_id"] = first.project.ID
			v["project"] = first.project.Name
			v["project_root"] = first.project.Root
		}
		if first.hint != "" {
			v["project_hint"] = first.hint
		}
		e.out(v, "")
		return
	}
	w := e.stdout
	fmt.Fprintf(w, "Continuo is running.\n  MCP endpoint:   %s (toolsets: %s)\n  Other toolsets: %s/x/TOOLSET (%s)\n  Data directory: %s\n  Config file:    %s\n",
		mcpURL, e.cfg.DefaultToolsets(), mcpURL, strings.Join(mcpserver.ToolsetNames(), ", "), e.dataDir, e.configShown())
	if issuer != "" {
		fmt.Fprintf(w, "  Dashboard:      %s/\n  OAuth issuer:   %s\n", issuer, issuer)
	} else {
		fmt.Fprintf(w, "  Dashboard:      off (listen on a loopback address, or set server.public_url)\n")
		fmt.Fprintf(w, "  OAuth:          off (set server.public_url to its https:// URL to turn it on); tokens only\n")
	}
	secret := "<TOKEN>"
	dd := ""
	if e.dataDirFlagged() {
		dd = " --data-dir " + e.dataDir
	}
	if first.fresh {
		e.printFirstStart(first)
		if first.token != nil {
			secret = first.token.Token
		}
		if first.signIn != nil {
			fmt.Fprintf(w, "\nOpen the dashboard (single-use sign-in link for admin, valid for %v; keep it secret):\n  %s\n"+
				"Another: continuo login-link --principal admin --scopes %s%s\n", firstSignInTTL, first.signIn.URL, dashboardScopes, dd)
		}
	} else {
		if p := first.project; p != nil {
			fmt.Fprintf(w, "  Project:        %s (%s) registered for %s, granted to admin\n", p.Name, p.ID, p.Root)
		}
		if first.hint != "" {
			fmt.Fprintf(w, "  Project:        %s\n", first.hint)
		}
		fmt.Fprintf(w, "\nThe admin token was shown at first start. Make another with:\n  continuo token create --principal admin --scopes admin%s\n", dd)
		if issuer != "" {
			fmt.Fprintf(w, "Sign in to the dashboard with a link:\n  continuo login-link --principal admin --scopes %s%s\n", dashboardScopes, dd)
		}
	}
	fmt.Fprintf(w, "\nConnect Claude Code:\n  claude mcp add --transport http continuo %s --header \"Authorization: Bearer %s\"\n", mcpURL, secret)
	fmt.Fprintf(w, "Connect Codex CLI (~/.codex/config.toml):\n  [mcp_servers.continuo]\n  url = %q\n  bearer_token_env_var = \"CONTINUO_TOKEN\"\n", mcpURL)
}

// dashboardScopes are what a person needs on every dashboard page (reading
// sessions and runs) and to act there.
const dashboardScopes = "sessions:read,sessions:write,runtime:read,swarm:own"

// configShown names the configuration file in use, or where one would be
// read from.
func (e *env) configShown() string {
	if e.config != "" {
		return e.config
	}
	return "none (defaults; write " + filepath.Join(e.dataDir, DefaultConfigName) + " or pass --config FILE)"
}

// dataDirFlagged reports whether the data directory is not the default
// one, so that printed commands must name it.
func (e *env) dataDirFlagged() bool {
	def, err := datadir.Default(os.Getenv, os.UserHomeDir)
	return err != nil || def != e.dataDir
}

// printFirstStart says what a first start made, and the exact commands
// that give another person or assistant a token that sees the project.
func (e *env) printFirstStart(first *firstStart) {
	w := e.stdout
	dd := ""
	if e.dataDirFlagged() {
		dd = " --data-dir " + e.dataDir
	}
	grant, grantTo := "PROJECT", "once a project exists, --grant lets the token see it"
	if p := first.project; p != nil {
		grant, grantTo = p.Name, "--grant lets it see "+p.Name
		fmt.Fprintf(w, "  Project:        %s (%s) registered for %s\n", p.Name, p.ID, p.Root)
		if first.fromCwd {
			fmt.Fprintf(w, "                  (the git checkout this first start ran in; remove it with\n"+
				"                  `continuo project remove %s%s`; a first start takes --project DIR|none to choose)\n", p.Name, dd)
		}
	} else {
		fmt.Fprintf(w, "  Project:        none (add one: continuo project add NAME --root DIR --grant admin:write%s)\n", dd)
	}
	if first.token != nil {
		fmt.Fprintf(w, "\nAdmin token (shown once; keep it secret):\n  %s\n", first.token.Token)
	}
	fmt.Fprintf(w, "\nGive each person or assistant its own token (tokens of one group share sessions); %s:\n"+
		"  continuo token create --principal alice --scopes sessions:read,sessions:write,project:write --grant %s:write%s\n", grantTo, grant, dd)
}

// attachContinuo gives an ACP agent this server as an MCP server for one
// run: a token of the run's group, scoped to reading and recording in
// sessions, that expires a minute after the run's timeout and is revoked
// when the run ends.
func attachContinuo(a *auth.Service, mcpURL string) func(ctx context.Context, r *continuo.Run) (*provider.MCPServer, func(), error) {
	return func(ctx context.Context, r *continuo.Run) (*provider.MCPServer, func(), error) {
		var spec runs.AgentSpec
		if err := json.Unmarshal([]byte(r.Spec), &spec); err != nil {
			return nil, nil, err
		}
		tok, err := a.IssueRunToken(ctx, r.GroupID, time.Duration(spec.TimeoutSecs)*time.Second+time.Minute)
		if err != nil {
			return nil, nil, err
		}
		revoke := func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = a.RevokeToken(ctx, tok.TokenID) // it expires anyway
		}
		return &provider.MCPServer{Name: "continuo", URL: mcpURL, Token: tok.Token}, revoke, nil
	}
}

// carrierMinter mints the tokens of the carriers the process runtime
// starts.
type carrierMinter struct{ a *auth.Service }

func (m carrierMinter) Mint(ctx context.Context, principalID string, ttl time.Duration) (string, string, error) {
	t, err := m.a.IssueCarrierToken(ctx, principalID, ttl)
	if err != nil {
		return "", "", err
	}
	return t.Token, t.TokenID, nil
}

func (m carrierMinter) Revoke(ctx context.Context, id string) error { return m.a.RevokeToken(ctx, id) }
