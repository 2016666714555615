package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
)

// OAuthServer is what the HTTP edge of the authorization server asks of
// the auth service (auth.Service, after EnableOAuth): the protocol rules
// live there, this package only reads requests and writes responses.
type OAuthServer interface {
	Issuer() string // "" when OAuth is off
	Resource() string

	CheckAuthorize(ctx context.Context, req auth.AuthorizeRequest) (*auth.Authorization, error)
	IssueCode(ctx context.Context, a *auth.Authorization, principalID string, scopes []continuo.Scope) (string, error)
	AuthorizeErrorURL(redirectURI, state string, e *auth.OAuthError) string

	Token(ctx context.Context, form url.Values, c auth.ClientAuth) (*auth.TokenResponse, error)
	RevokeOAuthToken(ctx context.Context, form url.Values, c auth.ClientAuth) error
	RegisterClient(ctx context.Context, body []byte) (*auth.Registration, error)

	LoginLinkPrincipal(ctx context.Context, code string) (*continuo.Principal, error)
	SignIn(ctx context.Context, secret string) (string, *continuo.Principal, error)
	WebSession(ctx context.Context, sessionSecret string) (*continuo.Caller, error)
	SignOut(ctx context.Context, sessionSecret string) error
	// ProjectsOf lists what the signed-in user's group can reach, for the
	// consent page.
	ProjectsOf(ctx context.Context, c *continuo.Caller) ([]auth.Visible, error)
}

// oauthEdge serves the authorization server's routes for one issuer.
type oauthEdge struct {
	svc     OAuthServer
	issuer  string // scheme://host[:port], no trailing slash
	origin  string // the issuer as a browser's Origin header names it
	secure  bool   // https: __Host- cookies with Secure
	csrfKey []byte
	log     *slog.Logger
	// register bounds dynamic registrations per remote address and in all.
	register *limiter
}

func newOAuthEdge(o Options) *oauthEdge {
	issuer := strings.TrimSuffix(o.OAuth.Issuer(), "/")
	key := o.Key
	if len(key) == 0 {
		key = make([]byte, 32)
		_, _ = rand.Read(key) // a key of this process only: its forms are not valid on another replica
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("continuo/csrf/v1"))
	now := o.Now
	if now == nil {
		now = time.Now
	}
	return &oauthEdge{svc: o.OAuth, issuer: issuer, origin: originOf(issuer), secure: strings.HasPrefix(issuer, "https://"), csrfKey: m.Sum(nil),
		log: o.Logger, register: newLimiter(now, registerPerAddr, registerGlobal)}
}

// routes adds the authorization server's routes to mux, each behind
// guard (the loopback host check of /mcp).
func (e *oauthEdge) routes(mux *routes, guard func(http.Handler) http.Handler) {
	handle := func(pattern string, h http.HandlerFunc) { mux.Handle(pattern, guard(h)) }
	meta := func(path string, h http.HandlerFunc) {
		handle("GET "+path, cors(h))
		handle("OPTIONS "+path, preflight("GET"))
	}
	meta("/.well-known/oauth-protected-resource", e.protectedResource)
	meta("/.well-known/oauth-protected-resource/mcp", e.protectedResource)
	meta("/.well-known/oauth-authorization-server", e.authorizationServer)
	api := func(path string, h http.HandlerFunc) {
		handle("POST "+path, cors(h))
		handle("OPTIONS "+path, preflight("POST"))
	}
	api("/oauth/token", e.token)
	api("/oauth/revoke", e.revoke)
	api("/oauth/register", e.registerClient)

	handle("GET /oauth/authorize", e.authorize)
	handle("POST /oauth/authorize", e.consent)
	handle("POST /oauth/login", e.signIn)
	handle("GET /login", e.loginPage)
	handle("POST /login", e.signIn)
	handle("POST /logout", e.signOut)
	handle("GET /oauth/static/style.css", serveStyle)
}

// resourceMetadata is the URL of the protected resource metadata of /mcp,
// which a 401 from /mcp points clients to (RFC 9728 §5.1).
func (e *oauthEdge) resourceMetadata() string {
	return e.issuer + "/.well-known/oauth-protected-resource/mcp"
}

// originOf is the origin of an http(s) URL as browsers serialize it:
// lower-case scheme and host, without the scheme's default port.
func originOf(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return ""
	}
	host := strings.ToLower(p.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	scheme := strings.ToLower(p.Scheme)
	if port := p.Port(); port != "" && !(scheme == "http" && port == "80" || scheme == "https" && port == "443") {
		host += ":" + port
	}
	return scheme + "://" + host
}
