package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/store"
)

// MaxRegistrationBytes bounds a dynamic registration request's body.
const MaxRegistrationBytes = 16 << 10

// unusedClientAge is how old an unused registered client must be before a
// full registry prunes it: a client that registers and then sends its user
// to the consent page finishes well within it.
const unusedClientAge = 24 * time.Hour

// registryGuard is the meta row every registration updates first, so that
// two concurrent registrations are ordered (PostgreSQL retries one of
// them) and the cap on unused clients is exact rather than write-skewed.
const registryGuard = "oauth_registered_at"

// Registration is a dynamically registered client: its row, its secret
// (confidential clients; shown once, stored hashed) and the RFC 7591 §3.2.1
// response body.
type Registration struct {
	Client   *continuo.OAuthClient
	Secret   string
	Response map[string]any
}

// RegisterClient registers a client (RFC 7591). Errors are *OAuthError:
// invalid_client_metadata or invalid_redirect_uri (400), or 429
// rate_limited when the unused clients are at their cap even after the
// ones older than a day were pruned.
func (s *Server) RegisterClient(ctx context.Context, body []byte) (*Registration, error) {
	if s.Issuer() == "" {
		return nil, errOAuthOff
	}
	if len(body) > MaxRegistrationBytes {
		return nil, oauthErr("invalid_client_metadata", "the registration must be at most 16 KiB")
	}
	doc, err := ParseRegistration(body)
	if err != nil {
		var oe *OAuthError
		if errors.As(err, &oe) {
			return nil, oe
		}
		return nil, oauthErr("invalid_client_metadata", err.Error())
	}
	now := s.now()
	c := &continuo.OAuthClient{Kind: continuo.ClientRegistered, Name: doc.Name, RedirectURIs: doc.RedirectURIs,
		AuthMethod: doc.AuthMethod, Scopes: doc.Scopes, Metadata: string(doc.Raw), CreatedAt: now}
	c.ID = continuo.NewID(continuo.PrefixOAuthClient, now)
	c.ClientID = c.ID
	if c.Name == "" {
		c.Name = "Unnamed client"
	}
	if c.AuthMethod == "" {
		c.AuthMethod = continuo.AuthMethodBasic // RFC 7591 §2's default
	}
	if len(c.Scopes) == 0 {
		c.Scopes = continuo.OAuthScopes()
	}
	var secret string
	if c.AuthMethod != continuo.AuthMethodNone {
		secret = auth.ClientSecret.New()
		c.SecretHash = auth.ClientSecret.Hash(secret)
	}
	var full bool
	err = s.store.Write(ctx, func(tx store.Tx) error {
		if err := tx.MetaSet(ctx, registryGuard, now.Format(continuo.TimeFormat)); err != nil {
			return err
		}
		n, err := tx.OAuthClientCountUnused(ctx)
		if err != nil {
			return err
		}
		if n >= s.opts.MaxUnusedClients {
			pruned, err := tx.OAuthClientPruneUnused(ctx, now.Add(-unusedClientAge))
			if err != nil {
				return err
			}
			n -= pruned
		}
		// Still full: keep what was pruned, register nothing.
		full = n >= s.opts.MaxUnusedClients
		if full {
			return nil
		}
		return tx.OAuthClientCreate(ctx, c)
	})
	if err != nil {
		return nil, fmt.Errorf("register client: %w", err)
	}
	if full {
		return nil, &OAuthError{Status: http.StatusTooManyRequests, Code: "rate_limited",
			Description: "too many clients registered and never used; try again later"}
	}
	resp := map[string]any{
		"client_id":                  c.ClientID,
		"client_id_issued_at":        now.Unix(),
		"client_secret_expires_at":   0,
		"redirect_uris":              c.RedirectURIs,
		"client_name":                c.Name,
		"token_endpoint_auth_method": c.AuthMethod,
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"scope":                      joinScopes(c.Scopes),
	}
	if secret != "" {
		resp["client_secret"] = secret
	}
	return &Registration{Client: c, Secret: secret, Response: resp}, nil
}
