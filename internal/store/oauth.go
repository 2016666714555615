package store

import (
	"context"
	"time"

	"github.com/continuo-dev/continuo"
)

// OAuthTx holds Continuo's OAuth 2.1 authorization server state: clients,
// authorization codes, grants and their tokens. Secrets (codes, tokens,
// client secrets) are stored only as hashes.
type OAuthTx interface {
	// OAuthClientCreate inserts a client; an existing ClientID is ErrConflict.
	OAuthClientCreate(ctx context.Context, c *continuo.OAuthClient) error
	OAuthClientGet(ctx context.Context, id string) (*continuo.OAuthClient, error)
	OAuthClientGetByClientID(ctx context.Context, clientID string) (*continuo.OAuthClient, error)
	// OAuthClientUpdate stores a refreshed metadata document: name,
	// redirect URIs, auth method, scopes, metadata, fetched_at and
	// refresh_at. ErrNotFound for an unknown ID.
	OAuthClientUpdate(ctx context.Context, c *continuo.OAuthClient) error
	// OAuthClientUse sets used_at once (the first completed authorization).
	OAuthClientUse(ctx context.Context, id string, at time.Time) error
	// OAuthClientRevoke sets revoked_at once; ErrNotFound for an unknown ID.
	OAuthClientRevoke(ctx context.Context, id string, at time.Time) error
	// OAuthClientList lists every client by ID.
	OAuthClientList(ctx context.Context) ([]continuo.OAuthClient, error)
	// OAuthClientCountUnused counts registered clients that never completed
	// an authorization and are not revoked.
	OAuthClientCountUnused(ctx context.Context) (int, error)
	// OAuthClientPruneUnused deletes registered clients created before
	// before that never completed an authorization (they have no codes
	// that were used, and no grants); it returns how many it deleted.
	OAuthClientPruneUnused(ctx context.Context, before time.Time) (int, error)

	OAuthCodeCreate(ctx context.Context, c *continuo.OAuthCode) error
	OAuthCodeGetByHash(ctx context.Context, hash string) (*continuo.OAuthCode, error)
	// OAuthCodeUse marks an unused code used and records the grant its
	// exchange created. A used code is ErrStale: the caller lost the race
	// (or replays it).
	OAuthCodeUse(ctx context.Context, id, grantID string, at time.Time) error

	OAuthGrantCreate(ctx context.Context, g *continuo.OAuthGrant) error
	OAuthGrantGet(ctx context.Context, id string) (*continuo.OAuthGrant, error)
	// OAuthGrantRevoke sets revoked_at once; ErrNotFound for an unknown ID.
	OAuthGrantRevoke(ctx context.Context, id string, at time.Time) error
	// OAuthGrantRevokeClient revokes every unrevoked grant of a client
	// (OAuthClient.ID) and returns how many.
	OAuthGrantRevokeClient(ctx context.Context, clientID string, at time.Time) (int, error)
	// OAuthGrantList lists every grant by ID.
	OAuthGrantList(ctx context.Context) ([]continuo.OAuthGrant, error)

	OAuthTokenCreate(ctx context.Context, t *continuo.OAuthToken) error
	OAuthTokenGetByHash(ctx context.Context, hash string) (*continuo.OAuthToken, error)
	// OAuthTokenUse marks an unspent refresh token spent; a spent one is
	// ErrStale (a replay: the caller revokes the family).
	OAuthTokenUse(ctx context.Context, id string, at time.Time) error
	// OAuthTokenRevoke sets revoked_at once; ErrNotFound for an unknown ID.
	OAuthTokenRevoke(ctx context.Context, id string, at time.Time) error
}

// SignInTx holds browser sign-in: the operator's single-use login links
// and the sessions of signed-in browsers. Only hashes are stored.
type SignInTx interface {
	LoginLinkCreate(ctx context.Context, l *continuo.LoginLink) error
	LoginLinkGetByHash(ctx context.Context, hash string) (*continuo.LoginLink, error)
	// LoginLinkUse marks an unused link used; a used one is ErrStale.
	LoginLinkUse(ctx context.Context, id string, at time.Time) error

	WebSessionCreate(ctx context.Context, s *continuo.WebSession) error
	WebSessionGetByHash(ctx context.Context, hash string) (*continuo.WebSession, error)
	// WebSessionRevoke sets revoked_at once; ErrNotFound for an unknown ID.
	WebSessionRevoke(ctx context.Context, id string, at time.Time) error
}
