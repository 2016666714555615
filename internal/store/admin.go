package store

import (
	"context"
	"time"

	"github.com/continuo-dev/continuo"
)

// AdminTx pages through what the operator's pages list: identities,
// credentials, projects and their grants. Each page is at most Limit rows
// (Limit ≥ 1) from a keyset cursor, From, that is inclusive — the first
// key of the page, "" for the start — so that a page costs the same
// however many rows there are, and a caller that asks for Limit+1 rows
// has the next page's From in the last one.
type AdminTx interface {
	// GroupPage lists groups by name, from From.
	GroupPage(ctx context.Context, p NamePage) ([]continuo.Group, error)
	// PrincipalPage lists principals by name, from From; only those of
	// GroupID when it is set.
	PrincipalPage(ctx context.Context, p PrincipalPage) ([]continuo.Principal, error)
	// ProjectPage lists projects by name, from From.
	ProjectPage(ctx context.Context, p NamePage) ([]continuo.Project, error)
	// GrantListProject lists a project's grants by group ID.
	GrantListProject(ctx context.Context, projectID string) ([]continuo.Grant, error)
	// TokenPage lists tokens newest first (by ID, descending), from From;
	// only PrincipalID's when it is set, and only those neither revoked nor
	// expired at LiveAt when it is set.
	TokenPage(ctx context.Context, p TokenPage) ([]continuo.Token, error)
	// OAuthClientPage lists OAuth clients newest first (by ID, descending),
	// from From, each with the number of its grants not revoked.
	OAuthClientPage(ctx context.Context, p IDPage) ([]OAuthClientGrants, error)
	// OAuthGrantPage lists OAuth grants newest first (by ID, descending),
	// from From; only those of ClientID (an OAuthClient.ID) when it is set.
	OAuthGrantPage(ctx context.Context, p OAuthGrantPage) ([]continuo.OAuthGrant, error)
}

// NamePage is a page of a list ordered by name.
type NamePage struct {
	From  string
	Limit int
}

// IDPage is a page of a list ordered by ID, newest first.
type IDPage struct {
	From  string
	Limit int
}

// PrincipalPage is a page of principals, of one group or of all.
type PrincipalPage struct {
	From    string
	GroupID string
	Limit   int
}

// TokenPage is a page of tokens, of one principal or of all, live or any.
type TokenPage struct {
	From        string
	PrincipalID string
	LiveAt      *time.Time
	Limit       int
}

// OAuthGrantPage is a page of OAuth grants, of one client or of all.
type OAuthGrantPage struct {
	From     string
	ClientID string
	Limit    int
}

// OAuthClientGrants is a client and how many of its grants are not
// revoked (whether or not the client itself is).
type OAuthClientGrants struct {
	Client       continuo.OAuthClient
	ActiveGrants int
}
