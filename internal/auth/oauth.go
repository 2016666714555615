package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/continuo-dev/continuo"
)

// OAuthOptions configure Continuo's OAuth 2.1 authorization server.
type OAuthOptions struct {
	// Issuer is the server's one public URL (no trailing slash, no path):
	// server.public_url, else http://<loopback listen address>. "" leaves
	// OAuth off: only personal access tokens work.
	Issuer string
	// Lifetimes; 0 means the default (access 1 h, refresh 30 d, code
	// 2 min, login link 10 min, browser session 12 h).
	AccessTTL, RefreshTTL, CodeTTL, LoginTTL, SessionTTL time.Duration
	// Fetcher fetches Client ID Metadata Documents; nil means
	// NewClientDocFetcher(FetcherOptions{}), the real rules.
	Fetcher *ClientDocFetcher
	// MaxUnusedClients bounds the dynamically registered clients that
	// never completed an authorization; 0 means 1000.
	MaxUnusedClients int
}

// The defaults of OAuthOptions.
const (
	defaultAccessTTL        = time.Hour
	defaultRefreshTTL       = 30 * 24 * time.Hour
	defaultCodeTTL          = 2 * time.Minute
	defaultLoginTTL         = 10 * time.Minute
	defaultSessionTTL       = 12 * time.Hour
	defaultMaxUnusedClients = 1000
)

// EnableOAuth turns the authorization server on. serve calls it once,
// before serving; it is not safe to call while requests are served.
func (s *Service) EnableOAuth(o OAuthOptions) {
	o.Issuer = strings.TrimSuffix(o.Issuer, "/")
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.AccessTTL, defaultAccessTTL)
	def(&o.RefreshTTL, defaultRefreshTTL)
	def(&o.CodeTTL, defaultCodeTTL)
	def(&o.LoginTTL, defaultLoginTTL)
	def(&o.SessionTTL, defaultSessionTTL)
	if o.MaxUnusedClients <= 0 {
		o.MaxUnusedClients = defaultMaxUnusedClients
	}
	if o.Fetcher == nil {
		o.Fetcher, _ = NewClientDocFetcher(FetcherOptions{}) // fails only on a TestCAFile
	}
	s.oauth = o
}

// Issuer is the authorization server's issuer URL, "" when OAuth is off.
func (s *Service) Issuer() string { return s.oauth.Issuer }

// Resource is the protected resource (RFC 8707, RFC 9728) every OAuth
// token is for: the MCP endpoint. "" when OAuth is off.
func (s *Service) Resource() string {
	if s.oauth.Issuer == "" {
		return ""
	}
	return s.oauth.Issuer + "/mcp"
}

// ttl returns d, or def when d is unset: sign-in works without OAuth (a
// personal access token opens a browser session), so its lifetimes must
// not depend on EnableOAuth having run.
func ttl(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// errOAuthOff answers every OAuth request while OAuth is off.
var errOAuthOff = &OAuthError{Status: http.StatusNotFound, Code: "invalid_request",
	Description: "OAuth is not enabled on this server (set server.public_url)"}

// secretKind is one kind of secret Continuo hands out: its prefix, which
// names it (and which the redactor recognises), and the domain that
// separates its hashes from every other kind's, so that a secret of one
// kind never matches a stored hash of another.
type secretKind struct{ prefix, domain string }

// The secret kinds of OAuth and browser sign-in.
var (
	accessSecret  = secretKind{"cto_oat_", "continuo/oauth-access/v1\x00"}
	refreshSecret = secretKind{"cto_ort_", "continuo/oauth-refresh/v1\x00"}
	codeSecret    = secretKind{"cto_ocd_", "continuo/oauth-code/v1\x00"}
	clientSecret  = secretKind{"cto_ocs_", "continuo/oauth-client-secret/v1\x00"}
	loginSecret   = secretKind{"cto_lnk_", "continuo/login-link/v1\x00"}
	sessionSecret = secretKind{"cto_wss_", "continuo/web-session/v1\x00"}
)

func (k secretKind) new() string { return randomSecret(k.prefix) }

// hash is the stored form of a secret of this kind. Secrets carry 256
// random bits, so a fast hash is enough (as hashToken says).
func (k secretKind) hash(secret string) string {
	h := sha256.Sum256([]byte(k.domain + secret))
	return hex.EncodeToString(h[:])
}

// is reports whether secret looks like one of this kind: worth a lookup.
func (k secretKind) is(secret string) bool {
	return strings.HasPrefix(secret, k.prefix) && len(secret) <= 128
}

// matches compares a presented secret with a stored hash in constant time.
func (k secretKind) matches(secret, hash string) bool {
	return hash != "" && subtle.ConstantTimeCompare([]byte(k.hash(secret)), []byte(hash)) == 1
}

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
func (s *Service) sameResource(r string) bool {
	return s.Resource() != "" && strings.TrimSuffix(r, "/") == s.Resource()
}
