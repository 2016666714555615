// Package web serves Continuo over HTTP: the MCP endpoint behind bearer
// authentication, the browser's sign-in and the consent page of the OAuth
// 2.1 authorization server (internal/oauth, whose metadata, token,
// revocation and registration endpoints it mounts), health and readiness
// probes, Prometheus metrics, and the landing page.
package web

import (
	"context"
	"encoding/json"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/continuo-dev/continuo/internal/metrics"
	"github.com/continuo-dev/continuo/internal/oauth"
	"github.com/continuo-dev/continuo/internal/rpcwire"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Authenticator resolves a bearer token to a caller.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (*continuo.Caller, error)
}

// Options configures the HTTP handler.
type Options struct {
	// MCP serves /mcp (the default toolsets) and /mcp/x/{toolset}: one MCP
	// server per combination of toolsets.
	MCP     *mcpserver.Endpoints
	Auth    Authenticator
	Ready   func(ctx context.Context) error // readiness probe, e.g. a database ping
	Metrics *metrics.Registry
	Logger  *slog.Logger
	// Limits bound bodies and sessions; zero fields take their defaults.
	Limits Limits
	// PublicURL is the configured public URL; its origin may call /mcp from
	// a browser, as may loopback origins and AllowedOrigins, and the landing
	// page shows the MCP endpoint under it.
	PublicURL      string
	AllowedOrigins []string
	// PublicHost is the host (and port) of the configured public URL. A
	// reverse proxy on the same machine forwards requests for it to a
	// loopback listener; they are allowed like requests for localhost.
	PublicHost string
	// Sessions issues the MCP session IDs (the same as the MCP server's
	// GetSessionID) and lets every replica serve every session; nil means
	// sessions live only in this process.
	Sessions *Sessions
	// OAuth is the auth service after EnableOAuth: with an issuer, the
	// browser signs in (the dashboard's and the consent page's sign-in);
	// nil or no issuer: OAuth is off, its routes answer 404 and /mcp takes
	// personal access tokens only.
	OAuth BrowserSignIn
	// OAuthServer is the authorization server of OAuth's issuer: its
	// endpoints and consent page are served when OAuth is on; nil: none.
	OAuthServer *oauth.Server
	// Key is the secret all replicas share (auth.SessionKey); the CSRF key
	// of the OAuth pages derives from it. nil: a key of this process only.
	Key []byte
	// Dashboard serves the dashboard at / (with OAuth's sign-in); nil:
	// only the landing page.
	Dashboard *Dashboard
}

// statelessFrom is the first MCP protocol version without sessions. Requests
// that announce it (or a newer one the SDK serves) go to the stateless
// handler; older versions get stateful sessions with Mcp-Session-Id.
const statelessFrom = "2026-07-28"

// Handler returns the server's HTTP handler.
func Handler(o Options) http.Handler {
	h, _ := handler(o)
	return h
}

// handler returns the server's HTTP handler and the pattern of each of its
// routes.
func handler(o Options) (http.Handler, []string) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Limits = o.Limits.withDefaults()
	lim := o.Limits
	// The endpoint's toolsets were read from the path and header by
	// toolsets, before the SDK asks.
	getServer := func(r *http.Request) *mcp.Server {
		sets, _ := r.Context().Value(toolsetsKey{}).(mcpserver.Toolsets)
		return o.MCP.Server(sets)
	}
	// DNS-rebinding protection is ours (hostGuard), not the SDK's, so that
	// the public host of a same-machine reverse proxy can be allowed too.
	stateful := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Logger: o.Logger, MaxRequestBodyBytes: lim.MaxBodyBytes, SessionTimeout: lim.SessionIdle, DisableLocalhostProtection: true})
	// On 2026-07-28 a request is its own lifetime: a client cancels by
	// closing it, and the tool call stops.
	stateless := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Logger: o.Logger, MaxRequestBodyBytes: lim.MaxBodyBytes, Stateless: true, JSONResponse: true, DisableLocalhostProtection: true,
		PropagateRequestCancellation: true})
	// A stateless request with a progress token is answered as a stream
	// of server-sent events, so that its progress notifications (a
	// waiting chat_swarm_next) reach the client before the answer.
	streaming := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Logger: o.Logger, MaxRequestBodyBytes: lim.MaxBodyBytes, Stateless: true, DisableLocalhostProtection: true,
		PropagateRequestCancellation: true})
	// The fallback serves sessions of other replicas statelessly, with
	// server-sent event responses as their own replica would give.
	fallback := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Logger: o.Logger, MaxRequestBodyBytes: lim.MaxBodyBytes, Stateless: true, DisableLocalhostProtection: true})
	// Both protocols live at /mcp. A client of the stateless protocol names
	// its version in a header on every request; everything else
	// (initialize, and requests of an established session) is stateful.
	sessions := o.Sessions
	if sessions == nil {
		sessions = NewSessions(make([]byte, 32)) // signatures nobody else shares: only local sessions
	}
	sessions.limit(lim)
	sessions.track(o.MCP)
	route := sessions.route(stateful, stateless, streaming, fallback)
	// The SDK's middleware puts TokenInfo where tool handlers find it; the
	// token was already checked by bearer() just before, so the verifier
	// only hands the caller over.
	withInfo := sdkauth.RequireBearerToken(func(ctx context.Context, _ string, r *http.Request) (*sdkauth.TokenInfo, error) {
		c, _ := r.Context().Value(callerKey{}).(*continuo.Caller)
		if c == nil {
			return nil, sdkauth.ErrInvalidToken
		}
		return &sdkauth.TokenInfo{Scopes: scopeStrings(c.Scopes), UserID: c.PrincipalID,
			Extra: map[string]any{mcpserver.CallerKey: c}}, nil
	}, &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: true})

	mux := &routes{ServeMux: http.NewServeMux()}
	guard := func(h http.Handler) http.Handler { return hostGuard(o.PublicHost, h) }
	challenge := `Bearer realm="continuo"`
	landingPage := true
	if o.OAuth != nil && o.OAuth.Issuer() != "" {
		edge := newOAuthEdge(o)
		edge.routes(mux, guard)
		if o.Dashboard != nil {
			(&dash{edge: edge, svc: o.Dashboard, log: o.Logger, publicURL: o.PublicURL}).routes(mux, guard)
			landingPage = false
		}
		// RFC 9728 §5.1: the challenge names the metadata that says where
		// to get a token.
		challenge = `Bearer resource_metadata="` + edge.resourceMetadata() + `"`
	}
	// /mcp lists the default toolsets, /mcp/x/{toolset} one toolset, and
	// the X-MCP-Toolsets header adds toolsets to either (CONTRACT.md §4).
	// Both are one endpoint to the sessions: a session keeps the server it
	// was made with, whatever path its later requests take.
	endpoint := guard(originGuard(o.PublicURL, o.AllowedOrigins,
		bearer(o.Auth, challenge, bodies(lim, &rpcEdge{next: toolsets(withInfo(route))}))))
	mux.Handle("/mcp", endpoint)
	mux.Handle("/mcp/x/{toolset}", endpoint)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if o.Ready != nil {
			if err := o.Ready(ctx); err != nil {
				o.Logger.WarnContext(ctx, "not ready", "err", err)
				writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable"})
				return
			}
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	if o.Metrics != nil {
		mux.Handle("GET /metrics", o.Metrics.Handler())
		o.Metrics.GaugeFunc("continuo_mcp_sessions", "Stateful MCP sessions this process holds.", func() float64 { return float64(sessions.Count()) })
	}
	if landingPage {
		mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_ = landing.Execute(w, map[string]string{"MCP": mcpURL(o.PublicURL, r), "Version": mcpserver.Version})
		})
	}
	h := jsonErrors(bounded(lim, mux))
	if o.Metrics != nil {
		h = instrument(o.Metrics, h)
	}
	return h, mux.patterns
}

// routes is the server's mux. It remembers the pattern of every route, so
// that a test can walk them all (TestBodyDeadlines).
type routes struct {
	*http.ServeMux
	patterns []string
}

func (m *routes) Handle(pattern string, h http.Handler) {
	m.patterns = append(m.patterns, pattern)
	m.ServeMux.Handle(pattern, h)
}

func (m *routes) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.Handle(pattern, http.HandlerFunc(h))
}

// landing is the page at / for anyone not signed in: what Continuo is,
// how to connect a client, and (with the dashboard on) how to sign in. It
// wears the dashboard's stylesheet when the dashboard serves one, and a
// system font otherwise.
var landing = template.Must(template.New("landing").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Continuo</title>{{if .SignIn}}<link rel="stylesheet" href="/ui/dash.css">{{end}}</head>
<body class="landing"{{if not .SignIn}} style="font-family: system-ui, sans-serif; max-width: 48em; margin: 2em auto; padding: 0 1em"{{end}}>
<header class="top"><nav><a class="brand" href="/">Continuo</a> <span class="muted">{{.Version}}</span></nav>
{{if .SignIn}}<a class="button" href="{{.SignIn}}">Sign in</a>{{end}}</header>
<main>
<h1>Durable continuity for AI work</h1>
<p class="lead">Sessions, decisions, open questions and validation evidence that outlive any one conversation: the next model reads a brief and carries on.</p>
{{if .SignIn}}<p><a href="{{.SignIn}}">Sign in to the dashboard</a> with a sign-in link (<code>continuo login-link --principal NAME</code>) or a personal access token.</p>{{end}}
<div class="grid">
<section><h2>Connect an MCP client</h2>
<p>The endpoint is <code>{{.MCP}}</code>, with a bearer token:</p>
<pre>continuo token create --principal NAME --scopes sessions:read,sessions:write --grant PROJECT:write --json</pre></section>
<section><h2>ChatGPT or Claude</h2>
<p>Add <code>{{.MCP}}</code> as a connector: it signs in with OAuth, and you approve it here.</p></section>
</div>
<p class="muted small"><a href="/healthz">healthz</a> · <a href="/readyz">readyz</a> · <a href="/metrics">metrics</a></p>
</main>
</body></html>
`))

// mcpURL is the absolute URL of the MCP endpoint as a client should use
// it: under the public URL when one is configured, else on the host the
// request named, over https when the request came over TLS.
func mcpURL(publicURL string, r *http.Request) string {
	if publicURL != "" {
		return strings.TrimSuffix(publicURL, "/") + "/mcp"
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/mcp"
}

type callerKey struct{}

// toolsetsKey is the request context key of the toolsets a request names.
type toolsetsKey struct{}

// toolsets reads the toolsets a request to the MCP endpoint names — the
// one of the path /mcp/x/{toolset}, and those of the X-MCP-Toolsets header
// — for getServer; none means the default. An unknown name is a 400 that
// lists the known ones.
func toolsets(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sets, err := mcpserver.ParseToolsets(r.Header.Values(mcpserver.ToolsetsHeader)...)
		if name := r.PathValue("toolset"); err == nil && name != "" {
			// A path names exactly one toolset: one spelling per endpoint.
			one, ok := mcpserver.ToolsetNamed(name)
			if !ok {
				// An unknown name: the parser's error names it and the
				// known ones; a list or spaces: say what a path takes.
				if _, err = mcpserver.ParseToolsets(name); err == nil {
					err = continuo.Errorf(continuo.CodeInvalidInput, "the path /mcp/x/{toolset} names exactly one toolset; name several in the %s header",
						mcpserver.ToolsetsHeader)
				}
			}
			sets |= one
		}
		if err != nil {
			writeProblem(w, r.Context(), http.StatusBadRequest, rpcwire.CodeInvalidRequest, continuo.AsError(err), nil)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), toolsetsKey{}, sets)))
	})
}

// hostGuard refuses requests that reach a loopback listener under a name
// that is neither a loopback name nor the configured public host: a web
// page whose DNS name was rebound to 127.0.0.1 must not drive the MCP
// endpoint from the user's browser.
func hostGuard(publicHost string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		if local != nil && loopback(local.String()) && !loopback(r.Host) && !strings.EqualFold(r.Host, publicHost) {
			writeError(w, http.StatusForbidden, continuo.Errorf(continuo.CodeForbidden, "host %q is not served here", r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopback reports whether a host or host:port names the loopback interface.
func loopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// bearer authenticates every request with a bearer token. Missing or bad
// tokens get 401 with the WWW-Authenticate challenge (RFC 6750; a bad
// token adds error="invalid_token") and a structured error body; the token
// itself never appears in a log.
func bearer(a Authenticator, challenge string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "bearer") || strings.TrimSpace(token) == "" {
			w.Header().Set("WWW-Authenticate", challenge)
			writeError(w, http.StatusUnauthorized, continuo.Errorf(continuo.CodeUnauthorized, "a bearer token is required"))
			return
		}
		c, err := a.Authenticate(r.Context(), strings.TrimSpace(token))
		if err != nil {
			e := continuo.AsError(err)
			status := http.StatusUnauthorized
			if e.Code != continuo.CodeUnauthorized {
				status = http.StatusServiceUnavailable
			}
			w.Header().Set("WWW-Authenticate", challenge+`, error="invalid_token", error_description="invalid or expired token"`)
			writeError(w, status, e)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

func scopeStrings(s []continuo.Scope) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = string(x)
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, e *continuo.Error) {
	v := map[string]any{"code": e.Code, "message": e.Message, "retry": continuo.RetryFor(e.Code)}
	if len(e.Details) > 0 {
		v["details"] = e.Details
	}
	writeJSON(w, status, map[string]any{"error": v})
}

// instrument counts requests by route and status.
func instrument(m *metrics.Registry, next http.Handler) http.Handler {
	requests := m.Counter("continuo_http_requests_total", "HTTP requests by route and status code.", "route", "code")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		requests.Inc(route(r.URL.Path), strconv.Itoa(rec.status))
	})
}

// route bounds the label values to the known routes.
func route(path string) string {
	if name, ok := strings.CutPrefix(path, "/mcp/x/"); ok {
		if _, ok := mcpserver.ToolsetNamed(name); ok {
			return path
		}
		return "other"
	}
	switch path {
	case "/mcp", "/healthz", "/readyz", "/metrics", "/",
		"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server",
		"/oauth/authorize", "/oauth/login", "/oauth/token", "/oauth/revoke", "/oauth/register", "/login", "/logout":
		return path
	}
	return "other"
}

// recorder remembers the status code. It passes Flush through, which the
// MCP handler needs for server-sent events.
type recorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
