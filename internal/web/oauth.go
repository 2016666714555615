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

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/oauth"
)

// BrowserSignIn is what the browser pages ask of the auth service
// (auth.Service, after EnableOAuth): the issuer, and sign-in by login
// link or personal access token into a browser session.
type BrowserSignIn interface {
	Issuer() string // "" when OAuth is off
	LoginLinkPrincipal(ctx context.Context, code string) (*continuo.Principal, error)
	SignIn(ctx context.Context, secret string) (string, *continuo.Principal, error)
	WebSession(ctx context.Context, sessionSecret string) (*continuo.Caller, error)
	SignOut(ctx context.Context, sessionSecret string) error
	// ProjectsOf lists what the signed-in user's group can reach, for the
	// consent page.
	ProjectsOf(ctx context.Context, c *continuo.Caller) ([]auth.Visible, error)
}

// oauthEdge serves the browser's pages for one issuer: sign-in, and the
// consent page of the authorization server (internal/oauth), whose own
// endpoints it mounts; the dashboard signs in through it.
type oauthEdge struct {
	svc     BrowserSignIn
	srv     *oauth.Server // nil: no authorization server, sign-in only
	issuer  string        // scheme://host[:port], no trailing slash
	origin  string        // the issuer as a browser's Origin header names it
	secure  bool          // https: __Host- cookies with Secure
	csrfKey []byte
	log     *slog.Logger
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
	return &oauthEdge{svc: o.OAuth, srv: o.OAuthServer, issuer: issuer, origin: originOf(issuer),
		secure: strings.HasPrefix(issuer, "https://"), csrfKey: m.Sum(nil), log: o.Logger}
}

// routes adds the authorization server's routes and the sign-in pages to
// mux, each behind guard (the loopback host check of /mcp).
func (e *oauthEdge) routes(mux *routes, guard func(http.Handler) http.Handler) {
	handle := func(pattern string, h http.HandlerFunc) { mux.Handle(pattern, guard(h)) }
	if e.srv != nil {
		e.srv.Routes(handle, e.log)
		handle("GET /oauth/authorize", e.authorize)
		handle("POST /oauth/authorize", e.consent)
	}
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
