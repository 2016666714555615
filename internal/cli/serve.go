package cli

import (
	"context"
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
	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/continuo-dev/continuo/internal/metrics"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/web"
	"github.com/continuo-dev/continuo/internal/workflow"
	"github.com/continuo-dev/continuo/internal/workspace"
)

// app is the wired server: store and services.
type app struct {
	store    store.Store
	auth     *auth.Service
	workflow *workflow.Service
	metrics  *metrics.Registry
}

// wire opens the store and builds the services.
func (e *env) wire() (*app, error) {
	reg := metrics.NewRegistry()
	commits := reg.Histogram("continuo_db_commit_seconds", "Duration of database commits (one commit may carry several writes).", metrics.DefBuckets)
	writes := reg.Counter("continuo_db_commit_writes_total", "Writes committed (group commit: several per commit).")
	s, err := e.open(openOptions{onCommit: func(d time.Duration, n int) {
		commits.Observe(d.Seconds())
		writes.Add(float64(n))
	}})
	if err != nil {
		return nil, err
	}
	a := auth.New(s, nil)
	wf := workflow.New(s, a, &workflow.Options{WorktreeDir: filepath.Join(e.dataDir, "worktrees")})
	return &app{store: s, auth: a, workflow: wf, metrics: reg}, nil
}

// bootstrap prepares a fresh database: the admin identity and, when the
// current directory is a git checkout, a project for it.
func (e *env) bootstrap(a *app, issueToken bool) (*auth.IssuedToken, *continuo.Project, error) {
	var first *auth.ProjectSpec
	if cwd, err := os.Getwd(); err == nil && workspace.IsRepo(e.ctx, cwd) {
		if top, err := workspace.TopLevel(e.ctx, cwd); err == nil {
			first = &auth.ProjectSpec{Name: projectName(filepath.Base(top)), Root: top, Writable: true}
		}
	}
	return a.auth.Bootstrap(e.ctx, first, issueToken)
}

// projectName turns a directory name into a valid project name.
func projectName(dir string) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '-'
	}, dir)
	if len(name) > 64 {
		name = name[:64]
	}
	if name == "" || name == "." || name == ".." {
		return "project"
	}
	return name
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
	fs := e.flags("serve", "serve [--listen 127.0.0.1:7300] [--database-url sqlite://PATH | postgres://USER@HOST/DB]")
	listen := fs.String("listen", "", "`address` to listen on (default 127.0.0.1:7300)")
	dbURL := fs.String("database-url", "", "database `url`: sqlite://PATH (default DATA_DIR/continuo.db) or postgres://USER@HOST/DB")
	if _, err := e.parse(fs, args, 0); err != nil {
		return err
	}
	if *listen != "" {
		e.cfg.Server.Listen = *listen
	}
	if *dbURL != "" {
		e.cfg.Database.URL = *dbURL
	}
	tuneGC()
	a, err := e.wire()
	if err != nil {
		return err
	}
	defer a.store.Close()
	token, project, err := e.bootstrap(a, true)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", e.cfg.Server.Listen)
	if err != nil {
		return err
	}
	key, err := a.auth.SessionKey(e.ctx)
	if err != nil {
		return err
	}
	sessions := web.NewSessions(key)
	mcpSrv := mcpserver.New(mcpserver.Options{Workflow: a.workflow, Metrics: a.metrics, Logger: e.log, SessionID: sessions.NewID})
	var publicHost string
	if u, err := url.Parse(e.cfg.Server.PublicURL); err == nil {
		publicHost = u.Host
	}
	srv := &http.Server{
		Handler: web.Handler(web.Options{MCP: mcpSrv, Auth: a.auth, Ready: a.store.Ping, Metrics: a.metrics, Logger: e.log,
			PublicHost: publicHost, PublicURL: e.cfg.Server.PublicURL, Sessions: sessions}),
		// Bounded header reads; no write timeout, because MCP streams
		// (server-sent events) legitimately stay open.
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	base := e.cfg.Server.PublicURL
	if base == "" {
		base = "http://" + ln.Addr().String()
	}
	e.announce(strings.TrimSuffix(base, "/")+"/mcp", ln.Addr().String(), token, project)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-e.ctx.Done():
	}
	e.log.Info("shutting down")
	ctx, cancel := context.WithTimeout(context.WithoutCancel(e.ctx), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// announce tells the operator how to connect. With --json it prints one
// JSON object (scripts and tests read it); otherwise a short text.
func (e *env) announce(mcpURL, addr string, token *auth.IssuedToken, project *continuo.Project) {
	if e.json {
		v := map[string]any{"mcp_url": mcpURL, "listen": addr, "data_dir": e.dataDir}
		if token != nil {
			v["admin_token"] = token.Token
			v["admin_token_id"] = token.TokenID
		}
		if project != nil {
			v["project_id"] = project.ID
			v["project"] = project.Name
		}
		e.out(v, "")
		return
	}
	w := e.stdout
	fmt.Fprintf(w, "Continuo is running.\n  MCP endpoint:   %s\n  Data directory: %s\n", mcpURL, e.dataDir)
	if project != nil {
		fmt.Fprintf(w, "  Project:        %s (%s) registered for %s\n", project.Name, project.ID, project.Root)
	}
	secret := "<TOKEN>"
	if token != nil {
		secret = token.Token
		fmt.Fprintf(w, "\nAdmin token (shown once; keep it secret):\n  %s\n", token.Token)
	} else {
		fmt.Fprintf(w, "\nThe admin token was shown at first start. Make another with:\n  continuo token create --principal NAME --scopes sessions:read,sessions:write --data-dir %s\n", e.dataDir)
	}
	fmt.Fprintf(w, "\nConnect Claude Code:\n  claude mcp add --transport http continuo %s --header \"Authorization: Bearer %s\"\n", mcpURL, secret)
	fmt.Fprintf(w, "Connect Codex CLI (~/.codex/config.toml):\n  [mcp_servers.continuo]\n  url = %q\n  bearer_token_env_var = \"CONTINUO_TOKEN\"\n", mcpURL)
}
