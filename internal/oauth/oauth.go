// Package oauth is Continuo's OAuth 2.1 authorization server: its clients
// (registered by RFC 7591 dynamic registration, or named by the URL of a
// Client ID Metadata Document, fetched and cached), the authorization
// endpoint's rules and codes (PKCE), the token endpoint (codes and
// rotating refresh tokens) and revocation (RFC 7009). Identities, the
// secrets' kinds, the bearer check of OAuth access tokens and the grants'
// revocation are internal/auth's; the HTTP edge is internal/web's.
package oauth

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/store"
)

// Options configure the authorization server.
type Options struct {
	// Lifetimes; 0 means the default (access 1 h, refresh 30 d, code
	// 2 min).
	AccessTTL, RefreshTTL, CodeTTL time.Duration
	// Fetcher fetches Client ID Metadata Documents; nil means
	// NewClientDocFetcher(FetcherOptions{}), the real rules.
	Fetcher *ClientDocFetcher
	// MaxUnusedClients bounds the dynamically registered clients that
	// never completed an authorization; 0 means 1000.
	MaxUnusedClients int
}

// The defaults of Options.
const (
	defaultAccessTTL        = time.Hour
	defaultRefreshTTL       = 30 * 24 * time.Hour
	defaultCodeTTL          = 2 * time.Minute
	defaultMaxUnusedClients = 1000
)

// Server is the authorization server of one issuer: the auth service's,
// after its EnableOAuth.
type Server struct {
	auth  *auth.Service
	store store.Store
	now   func() time.Time
	opts  Options
}

// New returns the authorization server of a's issuer over s. now may be
// nil (time.Now); it is a's clock.
func New(a *auth.Service, s store.Store, now func() time.Time, o Options) *Server {
	if now == nil {
		now = time.Now
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.AccessTTL, defaultAccessTTL)
	def(&o.RefreshTTL, defaultRefreshTTL)
	def(&o.CodeTTL, defaultCodeTTL)
	if o.MaxUnusedClients <= 0 {
		o.MaxUnusedClients = defaultMaxUnusedClients
	}
	if o.Fetcher == nil {
		o.Fetcher, _ = NewClientDocFetcher(FetcherOptions{}) // fails only on a TestCAFile
	}
	return &Server{auth: a, store: s, now: func() time.Time { return now().UTC() }, opts: o}
}

// Issuer is the issuer URL, "" when OAuth is off.
func (s *Server) Issuer() string { return s.auth.Issuer() }

// Resource is the protected resource every token is for: the MCP
// endpoint. "" when OAuth is off.
func (s *Server) Resource() string { return s.auth.Resource() }

// errOAuthOff answers every OAuth request while OAuth is off.
var errOAuthOff = &OAuthError{Status: http.StatusNotFound, Code: "invalid_request",
	Description: "OAuth is not enabled on this server (set server.public_url)"}

// joinScopes is the space-separated scope parameter of OAuth (RFC 6749 §3.3).
func joinScopes(scopes []continuo.Scope) string {
	out := make([]string, len(scopes))
	for i, sc := range scopes {
		out[i] = string(sc)
	}
	return strings.Join(out, " ")
}

// parseScopeParam parses a request's scope parameter: OAuth scopes only
// (admin never), each once, in continuo.OAuthScopes order (as client
// ceilings are). ok is false for anything else.
func parseScopeParam(s string) (scopes []continuo.Scope, ok bool) {
	asked := strings.Split(s, " ") // RFC 6749 §3.3 says one space; extra ones are empty fields
	for _, f := range asked {
		if f != "" && !slices.Contains(continuo.OAuthScopes(), continuo.Scope(f)) {
			return nil, false
		}
	}
	for _, sc := range continuo.OAuthScopes() {
		if slices.Contains(asked, string(sc)) {
			scopes = append(scopes, sc)
		}
	}
	return scopes, true
}

// subset reports whether every scope of a is in b.
func subset(a, b []continuo.Scope) bool {
	for _, sc := range a {
		if !slices.Contains(b, sc) {
			return false
		}
	}
	return true
}

// sameResource reports whether a client's resource parameter names this
// server's resource; a trailing "/" is tolerated (RFC 8707 clients differ).
func (s *Server) sameResource(r string) bool {
	return s.Resource() != "" && strings.TrimSuffix(r, "/") == s.Resource()
}
