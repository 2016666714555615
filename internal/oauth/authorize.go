package oauth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/store"
)

// AuthorizeRequest is an authorization request's parameters (RFC 6749
// §4.1.1, RFC 7636 §4.3, RFC 8707 §2).
type AuthorizeRequest struct {
	ClientID, RedirectURI, ResponseType, Scope, State, CodeChallenge, CodeChallengeMethod, Resource string
}

// Authorization is a validated authorization request, waiting for the
// user's consent.
type Authorization struct {
	Client      *continuo.OAuthClient
	RedirectURI string
	Scopes      []continuo.Scope // what the client asked for: the consent page's checkboxes
	State       string
	// CodeChallenge is the PKCE S256 challenge the code's exchange must answer.
	CodeChallenge string
	Resource      string
}

// CheckAuthorize validates an authorization request, fetching or
// refreshing the client's metadata document when it has one. An
// *OAuthError with Redirect false is for the user alone (unknown or revoked
// client, a redirect URI that is not the client's): show it, never
// redirect. With Redirect true the redirect URI is the client's, so the
// error goes back to it: AuthorizeErrorURL(req.RedirectURI, req.State, e).
func (s *Server) CheckAuthorize(ctx context.Context, req AuthorizeRequest) (*Authorization, error) {
	if s.Issuer() == "" {
		return nil, errOAuthOff
	}
	c, err := s.authorizeClient(ctx, req.ClientID)
	if err != nil {
		return nil, err
	}
	// RFC 6749 §3.1.2.3: with a registered redirect URI the request must
	// name one; without one there is nowhere safe to send anything.
	if req.RedirectURI == "" {
		return nil, oauthErr("invalid_request", "redirect_uri is required")
	}
	if !MatchRedirectURI(c.RedirectURIs, req.RedirectURI) {
		return nil, oauthErr("invalid_request", "redirect_uri is not registered for this client")
	}
	redirect := func(code, description string) (*Authorization, error) {
		e := oauthErr(code, description)
		e.Redirect = true
		return nil, e
	}
	if req.ResponseType != "code" {
		return redirect("unsupported_response_type", "response_type must be code")
	}
	if req.CodeChallengeMethod != "S256" {
		return redirect("invalid_request", "PKCE is required: code_challenge_method must be S256")
	}
	if !validChallenge(req.CodeChallenge) {
		return redirect("invalid_request", "code_challenge must be 43 characters of base64url (S256)")
	}
	if req.Resource != "" && !s.sameResource(req.Resource) {
		return redirect("invalid_target", "resource must be "+s.Resource())
	}
	scopes := c.Scopes
	if req.Scope != "" {
		asked, ok := parseScopeParam(req.Scope)
		if !ok || !subset(asked, c.Scopes) {
			return redirect("invalid_scope", "scope must be a subset of: "+joinScopes(c.Scopes))
		}
		if len(asked) > 0 {
			scopes = asked
		}
	}
	return &Authorization{Client: c, RedirectURI: req.RedirectURI, Scopes: scopes, State: req.State,
		CodeChallenge: req.CodeChallenge, Resource: s.Resource()}, nil
}

// IssueCode records the user's consent to a (scopes ⊆ a.Scopes, at least
// one) for the principal and returns where to send the browser: the
// redirect URI with code, state and iss (RFC 9207). Other scopes, or a
// client revoked while the user read the page, are an *OAuthError with
// Redirect false: show it.
func (s *Server) IssueCode(ctx context.Context, a *Authorization, principalID string, scopes []continuo.Scope) (string, error) {
	if s.Issuer() == "" {
		return "", errOAuthOff
	}
	scopes = normScopes(scopes)
	if len(scopes) == 0 || !subset(scopes, a.Scopes) {
		return "", oauthErr("invalid_scope", "choose at least one of the requested scopes")
	}
	secret := auth.CodeSecret.New()
	now := s.now()
	code := &continuo.OAuthCode{ID: continuo.NewID(continuo.PrefixOAuthCode, now), Hash: auth.CodeSecret.Hash(secret),
		ClientID: a.Client.ID, PrincipalID: principalID, Scopes: scopes, RedirectURI: a.RedirectURI,
		CodeChallenge: a.CodeChallenge, Resource: a.Resource, CreatedAt: now, ExpiresAt: now.Add(s.opts.CodeTTL)}
	err := s.store.Write(ctx, func(tx store.Tx) error {
		// The client may have been revoked while the user read the page.
		c, err := tx.OAuthClientGet(ctx, a.Client.ID)
		if errors.Is(err, store.ErrNotFound) {
			return errUnknownClient()
		} else if err != nil {
			return err
		}
		if c.RevokedAt != nil {
			return errUnknownClient()
		}
		if _, err := tx.PrincipalGet(ctx, principalID); err != nil {
			return fmt.Errorf("principal %s: %w", principalID, err)
		}
		return tx.OAuthCodeCreate(ctx, code)
	})
	var oe *OAuthError
	if errors.As(err, &oe) {
		return "", oe
	}
	if err != nil {
		return "", fmt.Errorf("issue code: %w", err)
	}
	return withQuery(a.RedirectURI, url.Values{"code": {secret}, "state": nonEmpty(a.State), "iss": {s.Issuer()}}), nil
}

// AuthorizeErrorURL is where to send an authorization error once the
// redirect URI is known to be the client's (RFC 6749 §4.1.2.1, RFC 9207):
// the redirect URI with error, error_description, state and iss. Deny on
// the consent page is e = {Code: "access_denied"}.
func (s *Server) AuthorizeErrorURL(redirectURI, state string, e *OAuthError) string {
	v := url.Values{"error": {e.Code}, "state": nonEmpty(state), "iss": {s.Issuer()}}
	if e.Description != "" {
		v.Set("error_description", e.Description)
	}
	return withQuery(redirectURI, v)
}

// withQuery appends parameters to a redirect URI, keeping its own query
// byte for byte (RFC 6749 §3.1.2: it must be retained).
func withQuery(uri string, v url.Values) string {
	sep := "?"
	if strings.Contains(uri, "?") {
		sep = "&"
	}
	return uri + sep + v.Encode()
}

// nonEmpty is a parameter that is sent only when it has a value.
func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// normScopes sorts and deduplicates scopes.
func normScopes(scopes []continuo.Scope) []continuo.Scope {
	out, _ := parseScopeParam(joinScopes(scopes))
	return out
}

// validChallenge: an S256 challenge is base64url (no padding) of 32 bytes.
func validChallenge(c string) bool {
	b, err := base64.RawURLEncoding.DecodeString(c)
	return len(c) == 43 && err == nil && len(b) == sha256.Size
}

// verifyPKCE checks a code verifier (RFC 7636 §4.1: 43..128 characters of
// [A-Za-z0-9-._~]) against the S256 challenge, in constant time.
func verifyPKCE(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 {
		return false
	}
	for i := 0; i < len(verifier); i++ {
		c := verifier[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	sum := sha256.Sum256([]byte(verifier))
	return subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(challenge)) == 1
}
