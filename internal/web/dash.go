package web

import (
	"bytes"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/continuo-dev/continuo/internal/run"
	"github.com/continuo-dev/continuo/internal/swarm"
	"github.com/continuo-dev/continuo/internal/workflow"
)

// The dashboard: pages for people at /, behind the browser session of the
// sign-in (a login link or a personal access token) and its CSRF
// protection. A page reads, and a form acts, through the same services as
// the MCP tools with the signed-in caller — the scopes of what it signed in
// with — so every rule, every authorization and every idempotency is the
// tools' own: there is no SQL here and no second copy of a rule.
//
// Pages are html/template (every value escaped for its context) with one
// embedded stylesheet and one small embedded script that only enhances
// (live run output): every page reads without JavaScript. Each area of
// the dashboard (sessions, runs, swarms, admin) lives in a dash_*.go file
// that adds its routes with dashArea in an init, and its pages as
// templates/dash/<page>.html.

// Dashboard is what the dashboard reads and acts through.
type Dashboard struct {
	Workflow *workflow.Service
	Runs     *run.Service
	Swarm    *swarm.Service
	Auth     *auth.Service
}

// dash serves the dashboard's routes.
type dash struct {
	edge      *oauthEdge
	svc       *Dashboard
	log       *slog.Logger
	publicURL string
}

// dashRoute adds one route of the dashboard.
type dashRoute func(pattern string, h http.HandlerFunc)

// dashAreas are the areas' route registrations (dashArea).
var dashAreas []func(d *dash, handle dashRoute)

// dashArea registers an area's routes; call it from an init.
func dashArea(f func(d *dash, handle dashRoute)) { dashAreas = append(dashAreas, f) }

func (d *dash) routes(mux *routes, guard func(http.Handler) http.Handler) {
	d.register(func(pattern string, h http.HandlerFunc) { mux.Handle(pattern, guard(h)) })
}

// register adds every route of the dashboard with handle: its assets, the
// home page and each area's routes. (A test lists them this way, to walk
// every page as another group's user.)
func (d *dash) register(handle dashRoute) {
	handle("GET /ui/dash.css", serveAsset("*.css", "text/css; charset=utf-8"))
	handle("GET /ui/dash.js", serveAsset("*.js", "text/javascript; charset=utf-8"))
	handle("GET /{$}", d.home)
	for _, area := range dashAreas {
		area(d, handle)
	}
}

// home is the signed-in user's start page (the projects their group
// reaches), or the landing page with a sign-in link for anyone else.
func (d *dash) home(w http.ResponseWriter, r *http.Request) {
	c, err := d.edge.signedIn(w, r)
	if err != nil {
		d.fail(w, r, nil, err)
		return
	}
	if c == nil {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = landing.Execute(w, map[string]string{"MCP": mcpURL(d.publicURL, r), "Version": mcpserver.Version, "SignIn": "/login"})
		return
	}
	d.page("home", func(r *http.Request, c *continuo.Caller) (string, any, error) {
		ps, _, err := d.svc.Workflow.Projects(r.Context(), c)
		return "Projects", ps, err
	})(w, r)
}

// ---- pages and actions ----

// view is what every dashboard page renders: the layout reads the frame,
// the page's own template Data.
type view struct {
	Title string
	User  string
	Admin bool   // the caller may open the admin pages
	Path  string // this page's path and query, to come back to
	Data  any
	csrf  func(form string) string
}

// CSRF is the hidden field value of a form of this page (see csrf.go):
// each action has a form name of its own.
func (v *view) CSRF(form string) string { return v.csrf(form) }

// loader reads what a page shows: its title and data.
type loader func(r *http.Request, c *continuo.Caller) (title string, data any, err error)

// page serves a page to a signed-in caller; anyone else is sent to sign
// in, and back here after.
func (d *dash) page(name string, load loader) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, ok := d.caller(w, r)
		if !ok {
			return
		}
		title, data, err := load(r, c)
		if err != nil {
			d.fail(w, r, c, err)
			return
		}
		d.render(w, r, c, http.StatusOK, name, title, data)
	}
}

// actor does what a form asks and says where to go next (a path of this
// site: the page that shows the result).
type actor func(r *http.Request, c *continuo.Caller) (next string, err error)

// action serves a form post of form (its CSRF name) from a signed-in
// caller: a post that did not come from a page of ours, or without a
// session, does nothing.
func (d *dash) action(form string, act actor) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, ok := d.posted(w, r, form)
		if !ok {
			return
		}
		next, err := act(r, c)
		if err != nil {
			d.fail(w, r, c, err)
			return
		}
		seeOther(w, safeNext(next))
	}
}

// posted is the prologue of every form post of the dashboard: it reads
// the form, refuses (403, nothing done) a post that did not come from a
// page of ours (csrf.go), and returns the signed-in caller, or sends the
// browser to sign in. On false the answer is written.
func (d *dash) posted(w http.ResponseWriter, r *http.Request, form string) (*continuo.Caller, bool) {
	if !d.edge.readForm(w, r) {
		return nil, false
	}
	if !d.edge.postAllowed(r, form) {
		renderForbidden(w)
		return nil, false
	}
	return d.caller(w, r)
}

// caller returns the signed-in caller, or sends the browser to sign in
// (and back to this page) and returns false.
func (d *dash) caller(w http.ResponseWriter, r *http.Request) (*continuo.Caller, bool) {
	c, err := d.edge.signedIn(w, r)
	if err != nil {
		d.fail(w, r, nil, err)
		return nil, false
	}
	if c == nil {
		back := r.URL.RequestURI()
		if r.Method != http.MethodGet {
			back = "/"
		}
		seeOther(w, "/login?"+url.Values{"next": {back}}.Encode())
		return nil, false
	}
	c.Via = continuo.ViaDashboard // what it writes records a person on the dashboard (Caller.Actor)
	return c, true
}

// fail answers with a page that says what went wrong: a contract error's
// own message (it never holds a secret), or, for anything else, that the
// server could not do it (the error is logged, not shown).
func (d *dash) fail(w http.ResponseWriter, r *http.Request, c *continuo.Caller, err error) {
	ce := continuo.AsError(err)
	if ce.Code == continuo.CodeUnauthorized {
		d.edge.clearSession(w)
		seeOther(w, "/login?"+url.Values{"next": {"/"}}.Encode())
		return
	}
	status := errorStatus(ce.Code)
	msg := ce.Message
	if status == http.StatusInternalServerError {
		d.log.ErrorContext(r.Context(), "dashboard", "path", r.URL.Path, "err", err)
		msg = "The server could not complete this request. Try again in a moment."
	}
	if c == nil {
		renderError(w, status, "Something went wrong", msg, "")
		return
	}
	d.render(w, r, c, status, "error", "Something went wrong", dashError{Code: string(ce.Code), Message: msg})
}

type dashError struct{ Code, Message string }

// errorStatus is the HTTP status a page answers a contract error with.
func errorStatus(code continuo.Code) int {
	switch code {
	case continuo.CodeNotFound:
		return http.StatusNotFound
	case continuo.CodeForbidden:
		return http.StatusForbidden
	case continuo.CodeInvalidInput, continuo.CodeTooLarge:
		return http.StatusBadRequest
	case continuo.CodeRateLimited:
		return http.StatusTooManyRequests
	case continuo.CodeInternal, "":
		return http.StatusInternalServerError
	}
	return http.StatusConflict // the state does not allow it now: reload and look
}

// render writes a dashboard page with the headers every page carries.
// Its script may only be ours, and may only talk to us.
func (d *dash) render(w http.ResponseWriter, r *http.Request, c *continuo.Caller, status int, name, title string, data any) {
	secret := d.edge.csrfSecret(w, r)
	v := &view{Title: title, User: c.Principal, Admin: c.Has(continuo.ScopeAdmin), Path: r.URL.RequestURI(), Data: data,
		csrf: func(form string) string { return d.edge.csrfMAC(secret, form) }}
	t, err := dashPage(name)
	var buf bytes.Buffer
	if err == nil {
		err = t.ExecuteTemplate(&buf, "layout", v)
	}
	if err != nil {
		d.log.ErrorContext(r.Context(), "dashboard template", "page", name, "err", err)
		renderUnavailable(w)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; script-src 'self'; connect-src 'self'; "+
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin") // see render
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// ---- templates ----

// dashFuncs are the functions every dashboard template may call. An area
// adds its own in an init (before the first page is parsed).
var dashFuncs = template.FuncMap{
	"short": shortHash,
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"query": func(kv ...string) string { // "?a=1&b=2" from pairs, empty values left out
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] != "" {
				v.Set(kv[i], kv[i+1])
			}
		}
		if len(v) == 0 {
			return ""
		}
		return "?" + v.Encode()
	},
}

var (
	dashOnce      sync.Once
	dashTemplates map[string]*template.Template
	dashErr       error
)

// dashPage returns the template of a page: the layout, every partial
// (templates/dash/parts*.html) and the page's own file, parsed once.
func dashPage(name string) (*template.Template, error) {
	dashOnce.Do(func() { dashTemplates, dashErr = parseDash() })
	if dashErr != nil {
		return nil, dashErr
	}
	t, ok := dashTemplates[name]
	if !ok {
		return nil, errors.New("web: no dashboard page " + name)
	}
	return t, nil
}

func parseDash() (map[string]*template.Template, error) {
	files, err := fs.Glob(templateFS, "templates/dash/*.html")
	if err != nil {
		return nil, err
	}
	var parts, pages []string
	for _, f := range files {
		base := strings.TrimSuffix(f[len("templates/dash/"):], ".html")
		switch {
		case base == "layout":
		case strings.HasPrefix(base, "parts"):
			parts = append(parts, f)
		default:
			pages = append(pages, f)
		}
	}
	sort.Strings(parts)
	out := map[string]*template.Template{}
	for _, p := range pages {
		t, err := template.New("").Funcs(dashFuncs).ParseFS(templateFS, slices.Concat([]string{"templates/dash/layout.html"}, parts, []string{p})...)
		if err != nil {
			return nil, err
		}
		out[strings.TrimSuffix(p[len("templates/dash/"):], ".html")] = t
	}
	return out, nil
}

// serveAsset serves the embedded files of templates/dash that match
// pattern, one after the other: the base file (dash.css) first, then the
// areas' own in name order (swarm.css).
func serveAsset(pattern, contentType string) http.HandlerFunc {
	files, err := fs.Glob(templateFS, "templates/dash/"+pattern)
	if err != nil || len(files) == 0 {
		panic("web: no dashboard asset " + pattern)
	}
	sort.Slice(files, func(i, j int) bool { // the base file (dash.css, dash.js) first
		bi, bj := strings.HasPrefix(files[i], "templates/dash/dash."), strings.HasPrefix(files[j], "templates/dash/dash.")
		if bi != bj {
			return bi
		}
		return files[i] < files[j]
	})
	var b []byte
	for _, f := range files {
		part, err := templateFS.ReadFile(f)
		if err != nil {
			panic(err)
		}
		b = append(append(b, part...), '\n')
	}
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "public, max-age=3600")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(b)
	}
}

// shortHash is the first characters of a hash (a commit, a tree
// fingerprint, a carrier, a capsule, a checkpoint): enough to tell them
// apart on a page, as people quote them.
func shortHash(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}
