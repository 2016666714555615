package store

import (
	"context"

	"github.com/continuo-dev/continuo"
)

// AuthTx holds identities: groups, principals and their tokens.
type AuthTx interface {
	AdminTx // the operator's listings, a page at a time

	GroupCreate(ctx context.Context, g *continuo.Group) error
	GroupGet(ctx context.Context, id string) (*continuo.Group, error)
	GroupGetByName(ctx context.Context, name string) (*continuo.Group, error)
	// GroupList lists every group by name.
	GroupList(ctx context.Context) ([]continuo.Group, error)

	PrincipalCreate(ctx context.Context, p *continuo.Principal) error
	PrincipalGet(ctx context.Context, id string) (*continuo.Principal, error)
	PrincipalGetByName(ctx context.Context, name string) (*continuo.Principal, error)
	// PrincipalList lists every principal by name.
	PrincipalList(ctx context.Context) ([]continuo.Principal, error)

	TokenCreate(ctx context.Context, t *continuo.Token) error
	TokenGet(ctx context.Context, id string) (*continuo.Token, error)
	TokenGetByHash(ctx context.Context, hash string) (*continuo.Token, error)
	// TokenRevoke sets revoked_at once; revoking a revoked token keeps the
	// first time. An unknown ID is ErrNotFound.
	TokenRevoke(ctx context.Context, p TokenRevokeParams) error
	// TokenList lists every token by ID.
	TokenList(ctx context.Context) ([]continuo.Token, error)
}
