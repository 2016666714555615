package continuo

import (
	"slices"
	"time"
)

// OAuthScopes are the scopes an OAuth client may ask for: every scope but
// admin, which only a personal access token carries.
func OAuthScopes() []Scope {
	return slices.DeleteFunc(AllScopes(), func(s Scope) bool { return s == ScopeAdmin })
}

// ClientKind says how an OAuth client identified itself.
type ClientKind string

// The client kinds.
const (
	// ClientMetadata: the client_id is an HTTPS URL whose JSON document
	// (a Client ID Metadata Document) the server fetched and caches.
	ClientMetadata ClientKind = "metadata"
	// ClientRegistered: the client registered dynamically (RFC 7591) and
	// was issued its client_id.
	ClientRegistered ClientKind = "registered"
)

var clientKinds = []ClientKind{ClientMetadata, ClientRegistered}

// ClientKinds lists every client kind, in order.
func ClientKinds() []ClientKind { return slices.Clone(clientKinds) }

// Valid reports whether k is one of ClientKinds.
func (k ClientKind) Valid() bool { return slices.Contains(clientKinds, k) }

// Token endpoint authentication methods (RFC 7591 §2). Public clients
// (every metadata-document client) use none and prove themselves with PKCE.
const (
	AuthMethodNone   = "none"
	AuthMethodPost   = "client_secret_post"
	AuthMethodBasic  = "client_secret_basic"
	MaxRedirectURIs  = 10
	MaxClientIDBytes = 512
)

// AuthMethods lists the supported token endpoint authentication methods.
func AuthMethods() []string { return []string{AuthMethodNone, AuthMethodPost, AuthMethodBasic} }

// OAuthClient is a client of Continuo's authorization server.
type OAuthClient struct {
	ID           string     `json:"id"`        // ocl_…: the row; stable across metadata refreshes
	ClientID     string     `json:"client_id"` // what the client sends: its document URL, or the issued ID (= ID)
	Kind         ClientKind `json:"kind"`
	Name         string     `json:"client_name"`
	RedirectURIs []string   `json:"redirect_uris"`
	AuthMethod   string     `json:"token_endpoint_auth_method"`
	SecretHash   string     `json:"-"` // confidential registered clients only
	// Scopes is the client's ceiling: what it may ever be granted (the
	// registration's scope, else every OAuth scope).
	Scopes []Scope `json:"scopes"`
	// Metadata is the document or registration request as received
	// (bounded), kept for the operator.
	Metadata  string     `json:"-"`
	CreatedAt time.Time  `json:"created_at"`
	FetchedAt *time.Time `json:"fetched_at,omitempty"` // metadata documents: when last fetched
	// RefreshAt is when a metadata document must be fetched again (its
	// HTTP cache lifetime, bounded).
	RefreshAt *time.Time `json:"refresh_at,omitempty"`
	UsedAt    *time.Time `json:"used_at,omitempty"` // first completed authorization
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// OAuthGrant is one authorization a user gave a client: the scopes they
// consented to, for one resource. Its tokens form one refresh family;
// revoking the grant ends them all.
type OAuthGrant struct {
	ID          string     `json:"grant_id"`
	ClientID    string     `json:"client"` // OAuthClient.ID (ocl_…)
	PrincipalID string     `json:"principal_id"`
	Scopes      []Scope    `json:"scopes"`
	Resource    string     `json:"resource"`
	CreatedAt   time.Time  `json:"created_at"`
	RevokedAt   *time.Time `json:"revoked_at,omitempty"`
}

// OAuthCode is an authorization code's stored record (only its hash).
type OAuthCode struct {
	ID            string
	Hash          string
	ClientID      string // OAuthClient.ID
	PrincipalID   string
	Scopes        []Scope
	RedirectURI   string
	CodeChallenge string // PKCE S256
	Resource      string
	CreatedAt     time.Time
	ExpiresAt     time.Time
	UsedAt        *time.Time
	GrantID       string // the grant its exchange created; "" until used
}

// TokenKind tells OAuth access tokens from refresh tokens.
type TokenKind string

// The OAuth token kinds.
const (
	TokenAccess  TokenKind = "access"
	TokenRefresh TokenKind = "refresh"
)

var tokenKinds = []TokenKind{TokenAccess, TokenRefresh}

// TokenKinds lists every OAuth token kind, in order.
func TokenKinds() []TokenKind { return slices.Clone(tokenKinds) }

// Valid reports whether k is one of TokenKinds.
func (k TokenKind) Valid() bool { return slices.Contains(tokenKinds, k) }

// OAuthToken is an OAuth access or refresh token's stored record (only its
// hash). It is valid while it, its grant and its client are unrevoked and
// it has not expired; a refresh token is also spent once used.
type OAuthToken struct {
	ID        string
	Hash      string
	GrantID   string
	Kind      TokenKind
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time // refresh tokens: when rotated
	RevokedAt *time.Time
	// Scopes are an access token's own when a refresh narrowed them (RFC
	// 6749 §6), a subset of its grant's; nil means the grant's.
	Scopes []Scope
}

// LoginLink is a single-use sign-in link the operator made for a
// principal (only its hash is stored).
type LoginLink struct {
	ID          string
	Hash        string
	PrincipalID string
	CreatedAt   time.Time
	ExpiresAt   time.Time
	UsedAt      *time.Time
	Scopes      []Scope // what a browser signed in with it may do
}

// WebSession is a signed-in browser (the consent page, the dashboard): its
// cookie's hash and whose it is.
type WebSession struct {
	ID          string
	Hash        string
	PrincipalID string
	CreatedAt   time.Time
	ExpiresAt   time.Time
	RevokedAt   *time.Time
	// Scopes are what the browser may do: the scopes of the login link or
	// the token it signed in with. TokenID is that token's ("" for a
	// link): the session ends when the token is revoked or expires.
	Scopes  []Scope
	TokenID string
}
