package web_test

import (
	"bytes"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/continuo-dev/continuo/internal/oauth"
	"github.com/continuo-dev/continuo/internal/run"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/swarm"
	"github.com/continuo-dev/continuo/internal/web"
	"github.com/continuo-dev/continuo/internal/web/webtest"
	"github.com/continuo-dev/continuo/internal/workflow"
)

// The dashboard tests drive the real services on a real store (the
// engine of the stores.Each subtest, SQLite outside one) through the real
// handler over HTTP, as a browser would: signed in with a personal access
// token on the sign-in form, following our pages' own forms (their hidden
// CSRF fields) with the Origin header a browser sends.

// dashServer is a running server with the dashboard and the MCP endpoint.
type dashServer struct {
	t     *testing.T
	url   string // the issuer: scheme://host:port
	store store.Store
	auth  *auth.Service
	wf    *workflow.Service
	runs  *run.Service
	swarm *swarm.Service
	opts  web.Options // what the handler was made with
}

// dashOptions change the services a dashServer runs.
type dashOptions struct {
	runs  run.Options // Key is set when empty; Executors default to validation checks
	swarm swarm.Options
	wf    workflow.Options // Runs is set
	web   web.Limits
	// connState, when set, hears the server's connections change state.
	connState func(net.Conn, http.ConnState)
}

func newDashServer(t *testing.T, opts ...func(*dashOptions)) *dashServer {
	t.Helper()
	ctx := t.Context()
	o := dashOptions{}
	for _, f := range opts {
		f(&o)
	}
	st := stores.Open(t)
	a := auth.New(st, nil)
	if len(o.runs.Key) == 0 {
		o.runs.Key = []byte("dashboard test key")
	}
	if o.runs.Executors == nil {
		o.runs.Executors = map[continuo.RunKind]run.Executor{continuo.RunValidation: run.Commands{}}
	}
	runs := run.New(st, a, o.runs)
	if err := runs.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(runs.Close)
	o.wf.Runs = runs
	wf := workflow.New(st, a, &o.wf)
	sw := swarm.New(st, o.swarm)
	if err := sw.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sw.Close)
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.ConnState = o.connState
	s := &dashServer{t: t, url: "http://" + srv.Listener.Addr().String(), store: st, auth: a, wf: wf, runs: runs, swarm: sw}
	a.EnableOAuth(auth.OAuthOptions{Issuer: s.url})
	key, err := a.SessionKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := mcpserver.New(mcpserver.Options{Workflow: wf, Runs: runs, Swarm: sw})
	s.opts = web.Options{MCP: m, Auth: a, OAuth: a, OAuthServer: oauth.New(a, st, nil, oauth.Options{}), Key: key, Limits: o.web,
		Dashboard: &web.Dashboard{Workflow: wf, Runs: runs, Swarm: sw, Auth: a}}
	srv.Config.Handler = web.Handler(s.opts)
	srv.Start()
	t.Cleanup(srv.Close)
	return s
}

// token issues a token for principal (created, with a group of its own
// name, when missing).
func (s *dashServer) token(principal string, scopes ...continuo.Scope) *auth.IssuedToken {
	s.t.Helper()
	tok, err := s.auth.CreateToken(s.t.Context(), principal, scopes, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	return tok
}

// export is every row of every table as continuo export writes it: equal
// exports are the same database, byte for byte.
func (s *dashServer) export() []byte {
	s.t.Helper()
	var b bytes.Buffer
	if _, err := store.Export(s.t.Context(), s.store, store.SchemaVersion, &b); err != nil {
		s.t.Fatal(err)
	}
	return b.Bytes()
}

// member issues a token for a new principal of an existing group.
func (s *dashServer) member(principal, group string, scopes ...continuo.Scope) *auth.IssuedToken {
	s.t.Helper()
	if _, err := s.auth.CreatePrincipal(s.t.Context(), principal, group); err != nil {
		s.t.Fatal(err)
	}
	return s.token(principal, scopes...)
}

// caller is the caller a token authenticates as, for setting up data
// through the services.
func (s *dashServer) caller(tok *auth.IssuedToken) *continuo.Caller {
	s.t.Helper()
	c, err := s.auth.Authenticate(s.t.Context(), tok.Token)
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// project registers a project that groups may reach (group → access).
func (s *dashServer) project(name string, grants map[string]continuo.Access) *continuo.Project {
	s.t.Helper()
	p, err := s.auth.AddProject(s.t.Context(), auth.ProjectSpec{Name: name}, grants)
	if err != nil {
		s.t.Fatal(err)
	}
	return p
}

// dashBrowser is a person's browser: cookies, no redirects followed.
type dashBrowser struct {
	s *dashServer
	c *http.Client
}

// browser returns a browser signed in with tok on the sign-in form.
func (s *dashServer) browser(tok *auth.IssuedToken) *dashBrowser {
	s.t.Helper()
	b := s.anonymous()
	b.signIn(tok)
	return b
}

// signIn signs this browser in with tok (as whoever it was signed in as
// before, if anyone: its CSRF cookie stays, so the forms of a page it
// loaded before still carry a good field).
func (b *dashBrowser) signIn(tok *auth.IssuedToken) {
	s := b.s
	s.t.Helper()
	page := b.get("/login")
	fields, ok := webtest.FormFields(page.body, "signin")
	if !ok {
		s.t.Fatalf("no sign-in form: %s", page.body)
	}
	fields.Set("secret", tok.Token)
	r := b.post("/login", fields)
	if r.StatusCode != http.StatusSeeOther {
		s.t.Fatalf("sign in: %d %s", r.StatusCode, r.body)
	}
}

// anonymous returns a browser that has not signed in.
func (s *dashServer) anonymous() *dashBrowser {
	jar, _ := cookiejar.New(nil)
	return &dashBrowser{s: s, c: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *dashBrowser) get(path string) response {
	b.s.t.Helper()
	req, _ := http.NewRequest("GET", b.s.url+path, nil)
	return do(b.s.t, b.c, req)
}

// page gets path, which must answer 200 with a page.
func (b *dashBrowser) page(path string) response {
	b.s.t.Helper()
	r := b.get(path)
	if r.StatusCode != http.StatusOK || !strings.Contains(r.Header.Get("Content-Type"), "text/html") {
		b.s.t.Fatalf("GET %s: %d %s", path, r.StatusCode, r.body)
	}
	return r
}

// post posts a form as a page of ours would (with our Origin).
func (b *dashBrowser) post(path string, form url.Values) response {
	b.s.t.Helper()
	req, _ := http.NewRequest("POST", b.s.url+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.s.url)
	return do(b.s.t, b.c, req)
}

// submit submits the form with the given id of page, its hidden fields
// and set (set's values replace the form's), to the form's action.
func (b *dashBrowser) submit(page response, id string, set url.Values) response {
	b.s.t.Helper()
	fields, ok := webtest.FormFields(page.body, id)
	if !ok {
		b.s.t.Fatalf("no form %q on the page:\n%s", id, page.body)
	}
	action, _ := webtest.FormAction(page.body, id)
	for k, v := range set {
		fields[k] = v
	}
	return b.post(action, fields)
}
