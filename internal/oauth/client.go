package oauth

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// errUnknownClient is the answer for a client_id nobody registered, a
// revoked client and a document that cannot be used alike: an error page
// at the authorization endpoint, invalid_client at the token endpoint.
func errUnknownClient() *OAuthError {
	return oauthErr("invalid_client", "unknown or revoked client")
}

// isDocumentURL reports whether a client_id names a Client ID Metadata
// Document. The fetcher checks the URL's every rule; this only routes.
func isDocumentURL(clientID string) bool { return strings.HasPrefix(clientID, "https://") }

// clientByID reads a client by what the client sends as client_id.
func (s *Server) clientByID(ctx context.Context, clientID string) (*continuo.OAuthClient, error) {
	var c *continuo.OAuthClient
	err := s.store.Read(ctx, func(tx store.Tx) (err error) {
		c, err = tx.OAuthClientGetByClientID(ctx, clientID)
		return err
	})
	return c, err
}

// authorizeClient finds the client of an authorization request: a
// registered one, or a metadata-document client whose document it fetches
// the first time and again once its cache lifetime passed. The fetch
// happens outside any transaction (it may take seconds); the row it
// produces is shared by every replica. A client that is unknown, revoked,
// or whose document cannot be fetched is refused with an error page.
func (s *Server) authorizeClient(ctx context.Context, clientID string) (*continuo.OAuthClient, error) {
	if clientID == "" || len(clientID) > continuo.MaxClientIDBytes {
		return nil, errUnknownClient()
	}
	c, err := s.clientByID(ctx, clientID)
	switch {
	case errors.Is(err, store.ErrNotFound) && isDocumentURL(clientID):
		c = nil // first sight of this document: fetch it
	case errors.Is(err, store.ErrNotFound):
		return nil, errUnknownClient()
	case err != nil:
		return nil, fmt.Errorf("read client: %w", err)
	case c.RevokedAt != nil:
		return nil, errUnknownClient()
	case c.Kind != continuo.ClientMetadata || (c.RefreshAt != nil && s.now().Before(*c.RefreshAt)):
		return c, nil
	}
	return s.fetchClient(ctx, clientID)
}

// fetchClient fetches a metadata document and stores it: a new client, or
// the refreshed document of a known one (same row, same grants). Another
// replica may create the row meanwhile: the unique client_id then says
// ErrConflict and the row it stored is as fresh as ours, so it is read.
func (s *Server) fetchClient(ctx context.Context, clientID string) (*continuo.OAuthClient, error) {
	doc, err := s.opts.Fetcher.Fetch(ctx, clientID)
	if err != nil {
		// A cached client whose refetch fails is refused too: the document
		// may have been withdrawn, or changed its redirect URIs. The
		// fetcher's *OAuthError says which rule failed, for the user.
		var oe *OAuthError
		if errors.As(err, &oe) {
			return nil, oe
		}
		return nil, fmt.Errorf("fetch client metadata document: %w", err)
	}
	now := s.now()
	refresh := now.Add(doc.MaxAge)
	scopes := doc.Scopes
	if len(scopes) == 0 {
		scopes = continuo.OAuthScopes()
	}
	var out *continuo.OAuthClient
	err = s.store.Write(ctx, func(tx store.Tx) error {
		c, err := tx.OAuthClientGetByClientID(ctx, clientID)
		found := err == nil
		if errors.Is(err, store.ErrNotFound) {
			c = &continuo.OAuthClient{ID: continuo.NewID(continuo.PrefixOAuthClient, now), ClientID: clientID,
				Kind: continuo.ClientMetadata, CreatedAt: now}
		} else if err != nil {
			return err
		}
		if c.RevokedAt != nil {
			out = c
			return nil
		}
		if c.Kind != continuo.ClientMetadata {
			return errUnknownClient() // cannot happen: registered IDs are ocl_…
		}
		c.Name, c.RedirectURIs, c.AuthMethod, c.Scopes = doc.Name, doc.RedirectURIs, doc.AuthMethod, scopes
		c.Metadata, c.FetchedAt, c.RefreshAt = string(doc.Raw), &now, &refresh
		if c.AuthMethod == "" {
			c.AuthMethod = continuo.AuthMethodNone
		}
		if found {
			err = tx.OAuthClientUpdate(ctx, c)
		} else {
			err = tx.OAuthClientCreate(ctx, c)
		}
		out = c
		return err
	})
	if errors.Is(err, store.ErrConflict) {
		out, err = s.clientByID(ctx, clientID)
	}
	if err != nil {
		var oe *OAuthError
		if errors.As(err, &oe) {
			return nil, oe
		}
		return nil, fmt.Errorf("store client %s: %w", clientID, err)
	}
	if out.RevokedAt != nil {
		return nil, errUnknownClient()
	}
	return out, nil
}
