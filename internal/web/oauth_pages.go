package web

import (
	"bytes"
	"embed"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/continuo-dev/continuo"
)

// The pages a person sees during sign-in and consent: html/template (every
// value escaped for its context), one embedded stylesheet, no scripts.

//go:embed templates
var templateFS embed.FS

var pages = map[string]*template.Template{}

func init() {
	for _, name := range []string{"signin", "login", "consent", "error"} {
		pages[name] = template.Must(template.ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html"))
	}
}

var style = func() []byte {
	b, err := templateFS.ReadFile("templates/style.css")
	if err != nil {
		panic(err)
	}
	return b
}()

func serveStyle(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(style)
}

// scopeMeanings says in plain language what each OAuth scope lets a client
// do, for the consent page (a test checks every OAuth scope has one).
var scopeMeanings = map[continuo.Scope]string{
	continuo.ScopeSessionsRead:  "Read your Workflow Sessions and their handoff briefs",
	continuo.ScopeSessionsWrite: "Start Workflow Sessions and add notes, decisions and handoffs to them",
	continuo.ScopeRuntimeRead:   "Read the handoffs and evidence of your other tools, and watch runs",
	continuo.ScopeProjectWrite:  "Create worktrees and start validation runs in your projects",
	continuo.ScopeCodingAgent:   "Start coding agents on your projects",
	continuo.ScopeSwarmOwn:      "Create swarms and direct their workers",
	continuo.ScopeSwarmWork:     "Take and complete tasks as a swarm worker",
}

// render writes a page with the headers every page carries. formAction
// lists the sources beyond 'self' a form on it may send the browser to:
// Chromium applies form-action to the redirect after a post, so the consent
// page must allow the client's redirect origin.
func render(w http.ResponseWriter, status int, name string, data any, formAction ...string) {
	var buf bytes.Buffer
	if err := pages[name].ExecuteTemplate(&buf, "layout", data); err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError) // a bug of ours; jsonErrors makes it JSON
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action "+
		strings.Join(append([]string{"'self'"}, formAction...), " ")+"; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: under no-referrer a browser sends
	// "Origin: null" with our own form posts, and the Origin check could
	// not tell them from a sandboxed attacker's. Other origins (the
	// client's redirect URI) get no Referer either way.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

type errorView struct {
	Title, Heading, Message, Hint string
}

func renderError(w http.ResponseWriter, status int, heading, message, hint string) {
	render(w, status, "error", errorView{Title: heading, Heading: heading, Message: message, Hint: hint})
}

func renderForbidden(w http.ResponseWriter) {
	renderError(w, http.StatusForbidden, "This form cannot be used",
		"It has expired, or it did not come from this site.", "Go back, reload the page and try again.")
}

func renderUnavailable(w http.ResponseWriter) {
	renderError(w, http.StatusServiceUnavailable, "Something went wrong",
		"The server could not complete this request.", "Try again in a moment.")
}

type signInView struct {
	Title, Action, ForClient, Error, Next, CSRF string
}

type loginView struct {
	Title, Principal, Code, Next, CSRF string
}

type consentView struct {
	Title                               string
	ClientName, ClientKind, RedirectsTo string
	Error                               string
	Hidden                              []field
	Scopes                              []scopeChoice
	Projects                            []projectLine
	Principal, Next, CSRF, LogoutCSRF   string
}

type field struct{ Name, Value string }

type scopeChoice struct {
	ID, Name, Meaning string
	Checked           bool
}

type projectLine struct{ Name, Access string }

// redirectsTo names where the client's redirect URI sends the browser, for
// a person: its host, "this computer" for loopback, or the app of a
// private-use scheme.
func redirectsTo(redirectURI string) string {
	u, err := url.Parse(redirectURI)
	if err != nil {
		return "an unknown place"
	}
	switch u.Scheme {
	case "http", "https":
		if loopbackHost(u.Hostname()) {
			return "this computer"
		}
		return u.Host
	}
	return "the app that opens " + u.Scheme + ": links"
}

var (
	schemeRE = regexp.MustCompile(`^[a-z][a-z0-9+.-]*$`)
	hostRE   = regexp.MustCompile(`^[A-Za-z0-9.:\[\]-]+$`)
)

// formActionSource is the CSP source of a redirect URI's origin, or "" if
// it cannot be written safely (internal/oauth validated the URI; this
// only keeps anything odd out of the header).
func formActionSource(redirectURI string) string {
	u, err := url.Parse(redirectURI)
	if err != nil || !schemeRE.MatchString(u.Scheme) {
		return ""
	}
	switch u.Scheme {
	case "http", "https":
		if !hostRE.MatchString(u.Host) {
			return ""
		}
		return u.Scheme + "://" + u.Host
	}
	return u.Scheme + ":"
}
