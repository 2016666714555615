package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/store"
)

// ClientAuth is how a client authenticated at the token or revocation
// endpoint: client_id and client_secret from the form, or from an
// Authorization: Basic header (Basic set), as clientRequest reads it.
type ClientAuth struct {
	ID, Secret string
	Basic      bool
}

// TokenResponse is a successful token response (RFC 6749 §5.1).
type TokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	RefreshToken string `json:"refresh_token,omitempty"`
	Scope        string `json:"scope,omitempty"`
	ExpiresIn    int64  `json:"expires_in"`
}

func errInvalidClient(description string) *OAuthError {
	return &OAuthError{Status: http.StatusUnauthorized, Code: "invalid_client", Description: description}
}

// errBadGrant covers every code or refresh token that cannot be used
// (unknown, expired, spent, revoked, another client's, wrong redirect URI
// or verifier): the reasons are not told apart.
var errBadGrant = oauthErr("invalid_grant", "the authorization code or refresh token is invalid, expired or revoked")

// errLostRace says a guarded update of a code or refresh token found it
// spent by a concurrent request: the exchange runs again and sees a replay.
var errLostRace = errors.New("auth: code or refresh token spent concurrently")

// Token answers the token endpoint (RFC 6749 §3.2): grant_type
// authorization_code (with PKCE) or refresh_token (rotating). Errors are
// *OAuthError, ready for a §5.2 response.
func (s *Server) Token(ctx context.Context, form url.Values, c ClientAuth) (*TokenResponse, error) {
	if s.Issuer() == "" {
		return nil, errOAuthOff
	}
	if e := singleParams(form); e != nil {
		return nil, e
	}
	grantType := form.Get("grant_type")
	switch grantType {
	case "authorization_code", "refresh_token":
	case "":
		return nil, oauthErr("invalid_request", "grant_type is required")
	default:
		return nil, oauthErr("unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
	}
	if r := form.Get("resource"); r != "" && !s.sameResource(r) {
		return nil, oauthErr("invalid_target", "resource must be "+s.Resource())
	}
	client, err := s.authenticateClient(ctx, form, c)
	if err != nil {
		return nil, err
	}
	var resp *TokenResponse
	// A lost race is retried once: the second attempt finds the code or
	// token spent and treats it as the replay it is (RFC 9700 §4.14.2).
	for range 2 {
		if grantType == "authorization_code" {
			resp, err = s.exchangeCode(ctx, form, client)
		} else {
			resp, err = s.refresh(ctx, form, client)
		}
		if !errors.Is(err, errLostRace) {
			break
		}
	}
	var oe *OAuthError
	if errors.As(err, &oe) {
		return nil, oe
	}
	if err != nil {
		return nil, fmt.Errorf("token: %w", err)
	}
	return resp, nil
}

// singleParams refuses a repeated parameter (RFC 6749 §3.2: parameters
// must not be included more than once), which could smuggle a second value
// past one check to another.
func singleParams(form url.Values) *OAuthError {
	for k, v := range form {
		if len(v) > 1 {
			return oauthErr("invalid_request", "parameter "+k+" is repeated")
		}
	}
	return nil
}

// authenticateClient identifies the client at the token and revocation
// endpoints. Public clients (none) send only client_id and must not send a
// secret; confidential ones must present theirs, by either method (RFC
// 6749 §2.3.1 lets the server accept both), compared in constant time.
func (s *Server) authenticateClient(ctx context.Context, form url.Values, c ClientAuth) (*continuo.OAuthClient, error) {
	if c.ID == "" && !c.Basic {
		c.ID, c.Secret = form.Get("client_id"), form.Get("client_secret")
	} else if id := form.Get("client_id"); id != "" && id != c.ID {
		return nil, oauthErr("invalid_request", "client_id differs from the authenticated client")
	}
	if c.ID == "" {
		return nil, errInvalidClient("client authentication is required")
	}
	if len(c.ID) > continuo.MaxClientIDBytes {
		return nil, errInvalidClient("unknown or revoked client")
	}
	client, err := s.clientByID(ctx, c.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errInvalidClient("unknown or revoked client")
	} else if err != nil {
		return nil, fmt.Errorf("read client: %w", err)
	}
	if client.RevokedAt != nil {
		return nil, errInvalidClient("unknown or revoked client")
	}
	if client.AuthMethod == continuo.AuthMethodNone {
		if c.Secret != "" {
			return nil, errInvalidClient("a public client has no secret")
		}
		return client, nil
	}
	if c.Secret == "" || !auth.ClientSecret.Matches(c.Secret, client.SecretHash) {
		return nil, errInvalidClient("client authentication failed")
	}
	return client, nil
}

// exchangeCode redeems an authorization code (RFC 6749 §4.1.3, RFC 7636
// §4.6): one grant, one access token, one refresh token. A code presented
// again revokes the grant its first exchange created (§4.1.2: the code
// leaked), and the revocation commits even though the request fails.
func (s *Server) exchangeCode(ctx context.Context, form url.Values, client *continuo.OAuthClient) (*TokenResponse, error) {
	secret, verifier := form.Get("code"), form.Get("code_verifier")
	if secret == "" {
		return nil, oauthErr("invalid_request", "code is required")
	}
	if verifier == "" {
		return nil, oauthErr("invalid_request", "code_verifier is required (PKCE)")
	}
	if !auth.CodeSecret.Is(secret) {
		return nil, errBadGrant
	}
	var resp *TokenResponse
	var replayed bool
	// Through revokeWrite: a replay revokes inside this Write, and every
	// bearer cache must hear of it.
	err := s.auth.RevokeWrite(ctx, func(tx store.Tx) (bool, error) {
		now := s.now()
		code, err := tx.OAuthCodeGetByHash(ctx, auth.CodeSecret.Hash(secret))
		if errors.Is(err, store.ErrNotFound) {
			return false, errBadGrant
		} else if err != nil {
			return false, err
		}
		if code.UsedAt != nil {
			resp, replayed = nil, true
			return auth.RevokeGrant(ctx, tx, code.GrantID, now)
		}
		if code.ClientID != client.ID || !now.Before(code.ExpiresAt) || form.Get("redirect_uri") != code.RedirectURI ||
			!verifyPKCE(verifier, code.CodeChallenge) || !s.sameResource(code.Resource) {
			return false, errBadGrant
		}
		live, err := liveClient(ctx, tx, client.ID)
		if err != nil {
			return false, err
		}
		g := &continuo.OAuthGrant{ID: continuo.NewID(continuo.PrefixOAuthGrant, now), ClientID: client.ID,
			PrincipalID: code.PrincipalID, Scopes: code.Scopes, Resource: code.Resource, CreatedAt: now}
		// The grant goes in before the code is marked: the code's row
		// names it. Two exchanges of one code collide on that guarded
		// update, never on a unique key (grant IDs are new).
		if err := tx.OAuthGrantCreate(ctx, g); err != nil {
			return false, err
		}
		if err := tx.OAuthCodeUse(ctx, code.ID, g.ID, now); errors.Is(err, store.ErrStale) {
			return false, errLostRace
		} else if err != nil {
			return false, err
		}
		if live.UsedAt == nil {
			// No longer unused: the registration flood bound skips it.
			if err := tx.OAuthClientUse(ctx, client.ID, now); err != nil {
				return false, err
			}
		}
		r, err := s.issueTokens(ctx, tx, g, nil, now)
		resp, replayed = r, false
		return false, err
	})
	if err != nil {
		return nil, err
	}
	if replayed {
		return nil, oauthErr("invalid_grant", "the authorization code was already used; the tokens it gave are revoked")
	}
	return resp, nil
}

// refresh rotates a refresh token (RFC 6749 §6, OAuth 2.1 §4.3.1): the
// presented one is spent, a new access and refresh token take its place in
// the same grant. A spent one presented again — a replay, or the loser of
// two concurrent refreshes — revokes the grant: every token of the family
// stops working (RFC 9700 §4.14.2).
func (s *Server) refresh(ctx context.Context, form url.Values, client *continuo.OAuthClient) (*TokenResponse, error) {
	secret := form.Get("refresh_token")
	if secret == "" {
		return nil, oauthErr("invalid_request", "refresh_token is required")
	}
	if !auth.RefreshSecret.Is(secret) {
		return nil, errBadGrant
	}
	var asked []continuo.Scope
	if sc := form.Get("scope"); sc != "" {
		var ok bool
		if asked, ok = parseScopeParam(sc); !ok {
			return nil, oauthErr("invalid_scope", "unknown scope")
		}
		if len(asked) == 0 {
			return nil, oauthErr("invalid_scope", "scope names no scope")
		}
	}
	var resp *TokenResponse
	var reused bool
	err := s.auth.RevokeWrite(ctx, func(tx store.Tx) (bool, error) {
		now := s.now()
		t, err := tx.OAuthTokenGetByHash(ctx, auth.RefreshSecret.Hash(secret))
		if errors.Is(err, store.ErrNotFound) {
			return false, errBadGrant
		} else if err != nil {
			return false, err
		}
		g, err := tx.OAuthGrantGet(ctx, t.GrantID)
		if err != nil {
			return false, err
		}
		if t.Kind != continuo.TokenRefresh || g.ClientID != client.ID || g.RevokedAt != nil || t.RevokedAt != nil {
			return false, errBadGrant
		}
		if t.UsedAt != nil {
			resp, reused = nil, true
			return auth.RevokeGrant(ctx, tx, g.ID, now)
		}
		if !now.Before(t.ExpiresAt) || !s.sameResource(g.Resource) {
			return false, errBadGrant
		}
		// Never wider than the user consented to; a fresh consent (a new
		// authorization) is the only way to more.
		if !subset(asked, g.Scopes) {
			return false, oauthErr("invalid_scope", "scope must be a subset of the grant's: "+joinScopes(g.Scopes))
		}
		if subset(g.Scopes, asked) {
			asked = nil // all of the grant's: what no scope asks for
		}
		if _, err := liveClient(ctx, tx, client.ID); err != nil {
			return false, err
		}
		if err := tx.OAuthTokenUse(ctx, t.ID, now); errors.Is(err, store.ErrStale) {
			return false, errLostRace
		} else if err != nil {
			return false, err
		}
		r, err := s.issueTokens(ctx, tx, g, asked, now)
		resp, reused = r, false
		return false, err
	})
	if err != nil {
		return nil, err
	}
	if reused {
		return nil, oauthErr("invalid_grant", "the refresh token was already used; its grant is revoked")
	}
	return resp, nil
}

// liveClient re-reads the client inside the exchange's transaction: a
// revocation that committed after the client authenticated still wins.
func liveClient(ctx context.Context, tx store.Tx, id string) (*continuo.OAuthClient, error) {
	c, err := tx.OAuthClientGet(ctx, id)
	if err != nil {
		return nil, err
	}
	if c.RevokedAt != nil {
		return nil, errInvalidClient("unknown or revoked client")
	}
	return c, nil
}

// issueTokens adds an access and a refresh token to a grant. The access
// token holds narrowed, the subset of the grant's scopes a refresh asked
// for (RFC 6749 §6), or, when nil, the grant's; the response states the
// scope it holds (§5.1). The refresh token's ceiling stays the grant's: a
// later refresh may ask for any of the grant's scopes again (§6: never
// more than "originally granted by the resource owner").
func (s *Server) issueTokens(ctx context.Context, tx store.Tx, g *continuo.OAuthGrant, narrowed []continuo.Scope, now time.Time) (*TokenResponse, error) {
	scopes := g.Scopes
	if narrowed != nil {
		scopes = narrowed
	}
	access, refresh := auth.AccessSecret.New(), auth.RefreshSecret.New()
	for _, t := range []*continuo.OAuthToken{
		{ID: continuo.NewID(continuo.PrefixOAuthToken, now), Hash: auth.AccessSecret.Hash(access), GrantID: g.ID,
			Kind: continuo.TokenAccess, CreatedAt: now, ExpiresAt: now.Add(s.opts.AccessTTL), Scopes: narrowed},
		{ID: continuo.NewID(continuo.PrefixOAuthToken, now), Hash: auth.RefreshSecret.Hash(refresh), GrantID: g.ID,
			Kind: continuo.TokenRefresh, CreatedAt: now, ExpiresAt: now.Add(s.opts.RefreshTTL)},
	} {
		if err := tx.OAuthTokenCreate(ctx, t); err != nil {
			return nil, err
		}
	}
	return &TokenResponse{AccessToken: access, TokenType: "Bearer", RefreshToken: refresh, Scope: joinScopes(scopes),
		ExpiresIn: int64(s.opts.AccessTTL.Seconds())}, nil
}

// RevokeOAuthToken answers the revocation endpoint (RFC 7009): an access
// token is revoked, a refresh token revokes its grant (the family). The
// client authenticates as at the token endpoint. An unknown token, or one
// of another client, is not an error (§2.2) and changes nothing.
func (s *Server) RevokeOAuthToken(ctx context.Context, form url.Values, c ClientAuth) error {
	if s.Issuer() == "" {
		return errOAuthOff
	}
	if e := singleParams(form); e != nil {
		return e
	}
	client, err := s.authenticateClient(ctx, form, c)
	if err != nil {
		return err
	}
	secret := form.Get("token")
	if secret == "" {
		return oauthErr("invalid_request", "token is required")
	}
	// token_type_hint is only a hint (§2.1): the prefix tells for sure.
	var kind auth.SecretKind
	switch {
	case auth.AccessSecret.Is(secret):
		kind = auth.AccessSecret
	case auth.RefreshSecret.Is(secret):
		kind = auth.RefreshSecret
	default:
		return nil
	}
	err = s.auth.RevokeWrite(ctx, func(tx store.Tx) (bool, error) {
		now := s.now()
		t, err := tx.OAuthTokenGetByHash(ctx, kind.Hash(secret))
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		} else if err != nil {
			return false, err
		}
		g, err := tx.OAuthGrantGet(ctx, t.GrantID)
		if err != nil {
			return false, err
		}
		if g.ClientID != client.ID {
			return false, nil
		}
		if t.Kind == continuo.TokenRefresh {
			return auth.RevokeGrant(ctx, tx, g.ID, now)
		}
		if t.RevokedAt != nil {
			return false, nil
		}
		return true, tx.OAuthTokenRevoke(ctx, t.ID, now)
	})
	if err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	return nil
}
