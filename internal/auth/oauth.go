package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// OAuthOptions configure what auth keeps of OAuth 2.1: the issuer whose
// access tokens Authenticate takes, and the lifetimes of browser sign-in.
// The authorization server itself (clients, authorize, token, revoke) is
// internal/oauth.
type OAuthOptions struct {
	// Issuer is the server's one public URL (no trailing slash, no path):
	// server.public_url, else http://<loopback listen address>. "" leaves
	// OAuth off: only personal access tokens work.
	Issuer string
	// Lifetimes; 0 means the default (login link 10 min, browser session
	// 12 h).
	LoginTTL, SessionTTL time.Duration
}

// The defaults of OAuthOptions.
const (
	defaultLoginTTL   = 10 * time.Minute
	defaultSessionTTL = 12 * time.Hour
)

// EnableOAuth turns OAuth on. serve calls it once, before serving; it is
// not safe to call while requests are served.
func (s *Service) EnableOAuth(o OAuthOptions) {
	o.Issuer = strings.TrimSuffix(o.Issuer, "/")
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.LoginTTL, defaultLoginTTL)
	def(&o.SessionTTL, defaultSessionTTL)
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

// SecretKind is one kind of secret Continuo hands out: its prefix, which
// names it (and which the redactor recognises), and the domain that
// separates its hashes from every other kind's, so that a secret of one
// kind never matches a stored hash of another.
type SecretKind struct{ prefix, domain string }

// The secret kinds of OAuth (minted by internal/oauth; access tokens are
// also read here, by Authenticate) and of browser sign-in.
var (
	AccessSecret  = SecretKind{"cto_oat_", "continuo/oauth-access/v1\x00"}
	RefreshSecret = SecretKind{"cto_ort_", "continuo/oauth-refresh/v1\x00"}
	CodeSecret    = SecretKind{"cto_ocd_", "continuo/oauth-code/v1\x00"}
	ClientSecret  = SecretKind{"cto_ocs_", "continuo/oauth-client-secret/v1\x00"}
	loginSecret   = SecretKind{"cto_lnk_", "continuo/login-link/v1\x00"}
	sessionSecret = SecretKind{"cto_wss_", "continuo/web-session/v1\x00"}
)

// New mints a secret of this kind (see randomSecret).
func (k SecretKind) New() string { return randomSecret(k.prefix) }

// Hash is the stored form of a secret of this kind. Secrets carry 256
// random bits, so a fast hash is enough (as hashToken says).
func (k SecretKind) Hash(secret string) string {
	h := sha256.Sum256([]byte(k.domain + secret))
	return hex.EncodeToString(h[:])
}

// Is reports whether secret looks like one of this kind: worth a lookup.
func (k SecretKind) Is(secret string) bool {
	return strings.HasPrefix(secret, k.prefix) && len(secret) <= 128
}

// Matches compares a presented secret with a stored hash in constant time.
func (k SecretKind) Matches(secret, hash string) bool {
	return hash != "" && subtle.ConstantTimeCompare([]byte(k.Hash(secret)), []byte(hash)) == 1
}

// RevokeGrant revokes a grant (every token of its family) unless it is
// revoked already, and reports whether it did. Its callers run it in a
// RevokeWrite, which tells every replica's bearer cache.
func RevokeGrant(ctx context.Context, tx store.Tx, id string, now time.Time) (bool, error) {
	if id == "" {
		return false, nil
	}
	g, err := tx.OAuthGrantGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if g.RevokedAt != nil {
		return false, nil
	}
	return true, tx.OAuthGrantRevoke(ctx, id, now)
}

// oauthCaller is the tokenLookup of OAuth access tokens: the token
// unexpired and unrevoked, its grant unrevoked and for this server's
// resource, its client unrevoked. The caller holds the token's scopes: its
// own when a refresh narrowed them, never more than its grant's (the grant
// is read again: scopes a narrowed token names that its grant lacks are
// not held), else the grant's.
func (s *Service) oauthCaller(ctx context.Context, tx store.Tx, hash string, now time.Time) (*continuo.Caller, *time.Time, error) {
	if s.Resource() == "" {
		return nil, nil, ErrBadToken
	}
	t, err := tx.OAuthTokenGetByHash(ctx, hash)
	if err != nil {
		return nil, nil, err
	}
	if t.Kind != continuo.TokenAccess || t.RevokedAt != nil || !now.Before(t.ExpiresAt) {
		return nil, nil, ErrBadToken
	}
	g, err := tx.OAuthGrantGet(ctx, t.GrantID)
	if err != nil {
		return nil, nil, err
	}
	if g.RevokedAt != nil || g.Resource != s.Resource() {
		return nil, nil, ErrBadToken
	}
	cl, err := tx.OAuthClientGet(ctx, g.ClientID)
	if err != nil {
		return nil, nil, err
	}
	if cl.RevokedAt != nil {
		return nil, nil, ErrBadToken
	}
	p, err := tx.PrincipalGet(ctx, g.PrincipalID)
	if err != nil {
		return nil, nil, err
	}
	scopes := g.Scopes
	if t.Scopes != nil {
		scopes = slices.DeleteFunc(slices.Clone(t.Scopes), func(sc continuo.Scope) bool { return !slices.Contains(g.Scopes, sc) })
	}
	return &continuo.Caller{PrincipalID: p.ID, Principal: p.Name, GroupID: p.GroupID, Scopes: scopes, TokenID: t.ID},
		&t.ExpiresAt, nil
}
