package auth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// maxLoginTTL bounds a login link's lifetime: it is a bearer secret that
// travels through chats and mail, meant to be used within minutes.
const maxLoginTTL = 24 * time.Hour

// LoginLinkInfo is a new single-use sign-in link; the code is shown once.
type LoginLinkInfo struct {
	URL       string    `json:"url"`
	Code      string    `json:"code"`
	ExpiresAt time.Time `json:"expires_at"`
}

// CreateLoginLink makes a single-use sign-in link for an existing
// principal, valid for ttl (0: the default, 10 min; at most 24 h), whose
// browser session may do what scopes say (none: sessions:read). The link
// points at the issuer, so OAuth must be on.
func (s *Service) CreateLoginLink(ctx context.Context, principal string, ttl time.Duration, scopes []continuo.Scope) (*LoginLinkInfo, error) {
	if s.Issuer() == "" {
		return nil, continuo.Errorf(continuo.CodeInvalidState,
			"sign-in links need the server's public URL: set server.public_url, or listen on a loopback address")
	}
	if ttl < 0 || ttl > maxLoginTTL {
		return nil, continuo.Invalid("ttl", "must be between 0 and 24h")
	}
	if ttl == 0 {
		ttl = s.oauth.LoginTTL
	}
	if len(scopes) == 0 {
		scopes = []continuo.Scope{continuo.ScopeSessionsRead}
	}
	for _, sc := range scopes {
		if !slices.Contains(continuo.AllScopes(), sc) {
			return nil, continuo.Invalid("scopes", "unknown scope %q", sc)
		}
	}
	secret := loginSecret.New()
	now := s.now()
	link := &continuo.LoginLink{ID: continuo.NewID(continuo.PrefixLoginLink, now), Hash: loginSecret.Hash(secret),
		CreatedAt: now, ExpiresAt: now.Add(ttl), Scopes: scopes}
	err := s.store.Write(ctx, func(tx store.Tx) error {
		p, err := tx.PrincipalGetByName(ctx, principal)
		if errors.Is(err, store.ErrNotFound) {
			return continuo.NotFound("principal", principal)
		} else if err != nil {
			return err
		}
		l := *link
		l.PrincipalID = p.ID
		return tx.LoginLinkCreate(ctx, &l)
	})
	if err != nil {
		return nil, fmt.Errorf("create login link for %s: %w", principal, err)
	}
	return &LoginLinkInfo{URL: s.Issuer() + "/login?" + url.Values{"code": {secret}}.Encode(), Code: secret,
		ExpiresAt: link.ExpiresAt}, nil
}

// usableLink reads a login link that is still good: unused, unexpired.
func (s *Service) usableLink(ctx context.Context, tx store.Tx, code string) (*continuo.LoginLink, error) {
	if !loginSecret.Is(code) {
		return nil, ErrBadToken
	}
	l, err := tx.LoginLinkGetByHash(ctx, loginSecret.Hash(code))
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrBadToken
	} else if err != nil {
		return nil, err
	}
	if l.UsedAt != nil || !s.now().Before(l.ExpiresAt) {
		return nil, ErrBadToken
	}
	return l, nil
}

// LoginLinkPrincipal says whose a login link is, without using it: for
// the confirmation page that GET shows (link previewers fetch links, and
// must not burn them). ErrBadToken when it is unknown, used or expired.
func (s *Service) LoginLinkPrincipal(ctx context.Context, code string) (*continuo.Principal, error) {
	var p *continuo.Principal
	err := s.store.Read(ctx, func(tx store.Tx) error {
		l, err := s.usableLink(ctx, tx, code)
		if err != nil {
			return err
		}
		p, err = tx.PrincipalGet(ctx, l.PrincipalID)
		return err
	})
	if err != nil {
		return nil, signInErr(err)
	}
	return p, nil
}

// SignIn opens a browser session with a login link's code (used up here,
// once) or a personal access token (unexpired, unrevoked, holding
// sessions:read or admin). It returns the session's secret, for the
// cookie, and whose session it is.
func (s *Service) SignIn(ctx context.Context, secret string) (string, *continuo.Principal, error) {
	var session string
	var principal *continuo.Principal
	err := s.store.Write(ctx, func(tx store.Tx) error {
		now := s.now()
		var pid, tokenID string
		var scopes []continuo.Scope
		switch {
		case loginSecret.Is(secret):
			l, err := s.usableLink(ctx, tx, secret)
			if err != nil {
				return err
			}
			// Guarded: of two concurrent uses one wins, the other is refused.
			if err := tx.LoginLinkUse(ctx, l.ID, now); errors.Is(err, store.ErrStale) {
				return ErrBadToken
			} else if err != nil {
				return err
			}
			pid, scopes = l.PrincipalID, l.Scopes
		case strings.HasPrefix(secret, TokenPrefix) && len(secret) <= 128:
			k, err := tx.TokenGetByHash(ctx, hashToken(secret))
			if errors.Is(err, store.ErrNotFound) {
				return ErrBadToken
			} else if err != nil {
				return err
			}
			if tokenState(k, now) != "active" {
				return ErrBadToken
			}
			if !slices.Contains(k.Scopes, continuo.ScopeSessionsRead) && !slices.Contains(k.Scopes, continuo.ScopeAdmin) {
				return continuo.Errorf(continuo.CodeForbidden, "this token cannot sign in: it needs sessions:read or admin")
			}
			pid, scopes, tokenID = k.PrincipalID, k.Scopes, k.ID
		default:
			return ErrBadToken
		}
		p, err := tx.PrincipalGet(ctx, pid)
		if err != nil {
			return err
		}
		sec := sessionSecret.New()
		if err := tx.WebSessionCreate(ctx, &continuo.WebSession{ID: continuo.NewID(continuo.PrefixWebSession, now),
			Hash: sessionSecret.Hash(sec), PrincipalID: p.ID, CreatedAt: now,
			ExpiresAt: now.Add(ttl(s.oauth.SessionTTL, defaultSessionTTL)), Scopes: scopes, TokenID: tokenID}); err != nil {
			return err
		}
		session, principal = sec, p
		return nil
	})
	if err != nil {
		return "", nil, signInErr(err)
	}
	return session, principal, nil
}

// signInErr keeps ErrBadToken and the forbidden answer as they are and
// wraps anything else.
func signInErr(err error) error {
	var e *continuo.Error
	if errors.As(err, &e) {
		return e
	}
	return fmt.Errorf("sign in: %w", err)
}

// WebSession resolves a browser session's cookie to its caller, who holds
// the scopes the session signed in with (sessions:read for a session from
// before they were recorded); its TokenID is the session's wss_… ID.
// ErrBadToken when it is missing, expired or revoked, or the token it
// signed in with is.
func (s *Service) WebSession(ctx context.Context, secret string) (*continuo.Caller, error) {
	if !sessionSecret.Is(secret) {
		return nil, ErrBadToken
	}
	var c *continuo.Caller
	err := s.store.Read(ctx, func(tx store.Tx) error {
		w, err := tx.WebSessionGetByHash(ctx, sessionSecret.Hash(secret))
		if err != nil {
			return err
		}
		now := s.now()
		if w.RevokedAt != nil || !now.Before(w.ExpiresAt) {
			return ErrBadToken
		}
		if w.TokenID != "" {
			k, err := tx.TokenGet(ctx, w.TokenID)
			if err != nil {
				return err
			}
			if tokenState(k, now) != "active" {
				return ErrBadToken
			}
		}
		p, err := tx.PrincipalGet(ctx, w.PrincipalID)
		if err != nil {
			return err
		}
		scopes := w.Scopes
		if len(scopes) == 0 {
			scopes = []continuo.Scope{continuo.ScopeSessionsRead}
		}
		c = &continuo.Caller{PrincipalID: p.ID, Principal: p.Name, GroupID: p.GroupID, Scopes: scopes, TokenID: w.ID}
		return nil
	})
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, ErrBadToken) {
		return nil, ErrBadToken
	}
	if err != nil {
		return nil, fmt.Errorf("web session: %w", err)
	}
	return c, nil
}

// SignOut revokes a browser session. An unknown or revoked one is not an
// error: signing out twice is signing out.
func (s *Service) SignOut(ctx context.Context, secret string) error {
	if !sessionSecret.Is(secret) {
		return nil
	}
	err := s.RevokeWrite(ctx, func(tx store.Tx) (bool, error) {
		w, err := tx.WebSessionGetByHash(ctx, sessionSecret.Hash(secret))
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		} else if err != nil {
			return false, err
		}
		if w.RevokedAt != nil {
			return false, nil
		}
		return true, tx.WebSessionRevoke(ctx, w.ID, s.now())
	})
	if err != nil {
		return fmt.Errorf("sign out: %w", err)
	}
	return nil
}
