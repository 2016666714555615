// Package auth holds Continuo's identities and authority: groups, principals,
// personal access tokens (stored as hashes only), projects and grants, and
// the checks every tool makes before it reads or writes a group's work.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/store"
)

// TokenPrefix starts every personal access token, so that scanners and our
// own redactor recognise it.
const TokenPrefix = "cto_pat_"

// Service manages identities and authorizes callers.
type Service struct {
	store store.Store
	now   func() time.Time
	cache cache // bearer token → caller; see WatchRevocations
	// onHeard, when set (tests), is called after each "auth" notification
	// the watcher handled.
	onHeard func(payload string)
	oauth   OAuthOptions // zero: OAuth off (EnableOAuth)
}

// New returns a Service. now may be nil (time.Now).
func New(s store.Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: s, now: func() time.Time { return now().UTC() }}
}

// hashToken is a domain-separated SHA-256 of a token secret. Tokens carry
// 256 random bits, so a fast hash is enough: there is nothing to brute-force.
func hashToken(secret string) string {
	h := sha256.Sum256([]byte("continuo/pat/v1\x00" + secret))
	return hex.EncodeToString(h[:])
}

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

func newSecret() string { return randomSecret(TokenPrefix) }

// randomSecret is prefix and 256 random bits in lower-case base32. Every
// secret Continuo hands out (tokens, OAuth codes and client secrets,
// sign-in links, browser sessions) is made here, and registered with the
// redactor as it is made, so that it is redacted by its value wherever it
// is pasted back, whatever rules its shape meets.
func randomSecret(prefix string) string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // cannot happen on supported platforms
	}
	s := prefix + strings.ToLower(b32.EncodeToString(b[:]))
	redact.RegisterMinted(s)
	return s
}

// validName checks an operator-chosen name (group, principal, project).
func validName(field, name string) error {
	if name == "" || len(name) > 64 {
		return continuo.Invalid(field, "must be 1..64 bytes")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return continuo.Invalid(field, "may contain only letters, digits, '-', '_' and '.'")
		}
	}
	return nil
}

// CreateGroup creates a group; an existing name is a conflict.
func (s *Service) CreateGroup(ctx context.Context, name string) (*continuo.Group, error) {
	if err := validName("name", name); err != nil {
		return nil, err
	}
	g := &continuo.Group{ID: continuo.NewID(continuo.PrefixGroup, s.now()), Name: name, CreatedAt: s.now()}
	err := s.store.Write(ctx, func(tx store.Tx) error { return tx.GroupCreate(ctx, g) })
	if errors.Is(err, store.ErrConflict) {
		return nil, continuo.Errorf(continuo.CodeConflict, "group %q already exists", name)
	}
	if err != nil {
		return nil, fmt.Errorf("create group %s: %w", name, err)
	}
	return g, nil
}

// CreatePrincipal creates a principal in an existing group.
func (s *Service) CreatePrincipal(ctx context.Context, name, group string) (*continuo.Principal, error) {
	if err := validName("name", name); err != nil {
		return nil, err
	}
	var p *continuo.Principal
	err := s.store.Write(ctx, func(tx store.Tx) error {
		g, err := groupByName(ctx, tx, group)
		if err != nil {
			return err
		}
		p = &continuo.Principal{ID: continuo.NewID(continuo.PrefixPrincipal, s.now()), Name: name, GroupID: g.ID, CreatedAt: s.now()}
		err = tx.PrincipalCreate(ctx, p)
		if errors.Is(err, store.ErrConflict) {
			return continuo.Errorf(continuo.CodeConflict, "principal %q already exists", name)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create principal %s: %w", name, err)
	}
	return p, nil
}

// IssuedToken is a new token: the secret is shown once and never stored.
type IssuedToken struct {
	Token       string
	TokenID     string
	PrincipalID string
	GroupID     string
	Scopes      []continuo.Scope
	ExpiresAt   *time.Time
}

// CreateToken issues a token for principal, creating the principal (and a
// group of the same name) when it does not exist yet. ttl 0 means no expiry.
func (s *Service) CreateToken(ctx context.Context, principal string, scopes []continuo.Scope, ttl time.Duration) (*IssuedToken, error) {
	return s.IssueToken(ctx, TokenSpec{Principal: principal, Scopes: scopes, TTL: ttl})
}

// TokenSpec describes a token to issue.
type TokenSpec struct {
	Principal string // created, with a group of the same name, when missing
	Scopes    []continuo.Scope
	TTL       time.Duration // 0: no expiry
	// Grants gives the principal's group access to projects (project name
	// → access) in the same transaction, so that the new token sees them at
	// once. A grant never lowers the group's access: write stays write.
	Grants map[string]continuo.Access
}

// IssueToken issues a token as spec says.
func (s *Service) IssueToken(ctx context.Context, spec TokenSpec) (*IssuedToken, error) {
	principal, scopes, ttl := spec.Principal, spec.Scopes, spec.TTL
	if err := validName("principal", principal); err != nil {
		return nil, err
	}
	if len(scopes) == 0 {
		return nil, continuo.Invalid("scopes", "at least one scope is required")
	}
	if ttl < 0 {
		return nil, continuo.Invalid("expires", "must not be negative")
	}
	m := newMint(s.now(), scopes, ttl)
	err := s.store.Write(ctx, func(tx store.Tx) error {
		p, err := s.ensurePrincipal(ctx, tx, principal)
		if err != nil {
			return err
		}
		for name, access := range spec.Grants {
			if err := raiseGrant(ctx, tx, name, p.GroupID, access); err != nil {
				return err
			}
		}
		return m.create(ctx, tx, p)
	})
	if err != nil {
		return nil, fmt.Errorf("create token for %s: %w", principal, err)
	}
	return m.issued, nil
}

// mint is a token being issued: what the caller gets (its secret shown
// once) and what the store keeps of it (the secret's hash only).
type mint struct {
	issued *IssuedToken
	hash   string
	now    time.Time
}

// newMint draws a fresh secret and names the token's id, scopes and expiry
// (none when ttl is 0). The caller has checked ttl and scopes.
func newMint(now time.Time, scopes []continuo.Scope, ttl time.Duration) *mint {
	secret := newSecret()
	m := &mint{issued: &IssuedToken{Token: secret, TokenID: continuo.NewID(continuo.PrefixToken, now), Scopes: scopes},
		hash: hashToken(secret), now: now}
	if ttl > 0 {
		exp := now.Add(ttl)
		m.issued.ExpiresAt = &exp
	}
	return m
}

// create stores the token as p's and names p on what is issued.
func (m *mint) create(ctx context.Context, tx store.Tx, p *continuo.Principal) error {
	m.issued.PrincipalID, m.issued.GroupID = p.ID, p.GroupID
	return tx.TokenCreate(ctx, &continuo.Token{ID: m.issued.TokenID, PrincipalID: p.ID, Hash: m.hash,
		Scopes: m.issued.Scopes, CreatedAt: m.now, ExpiresAt: m.issued.ExpiresAt})
}

func (s *Service) ensurePrincipal(ctx context.Context, tx store.Tx, name string) (*continuo.Principal, error) {
	p, err := tx.PrincipalGetByName(ctx, name)
	if err == nil || !errors.Is(err, store.ErrNotFound) {
		return p, err
	}
	g, err := tx.GroupGetByName(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		g = &continuo.Group{ID: continuo.NewID(continuo.PrefixGroup, s.now()), Name: name, CreatedAt: s.now()}
		err = tx.GroupCreate(ctx, g)
	}
	if err != nil {
		return nil, err
	}
	p = &continuo.Principal{ID: continuo.NewID(continuo.PrefixPrincipal, s.now()), Name: name, GroupID: g.ID, CreatedAt: s.now()}
	return p, tx.PrincipalCreate(ctx, p)
}

// RevokeToken revokes a token by ID. Revoking twice is not an error. The
// token fails its next request on every replica that listens (see
// RevokeWrite for the bound where none does).
func (s *Service) RevokeToken(ctx context.Context, tokenID string) error {
	err := s.RevokeWrite(ctx, func(tx store.Tx) (bool, error) {
		return true, tx.TokenRevoke(ctx, store.TokenRevokeParams{ID: tokenID, At: s.now()})
	})
	if errors.Is(err, store.ErrNotFound) {
		return continuo.NotFound("token", tokenID)
	}
	return err
}

// ErrBadToken is returned for a missing, unknown, expired or revoked token.
// The reasons are not told apart, so a caller learns nothing by probing.
var ErrBadToken = continuo.Errorf(continuo.CodeUnauthorized, "invalid or expired token")

// Authenticate resolves a bearer token to a caller: a personal access
// token, or an OAuth access token for this server's resource. A token that
// authenticated recently is answered from the cache (see cache and
// WatchRevocations) without reading the database.
func (s *Service) Authenticate(ctx context.Context, secret string) (*continuo.Caller, error) {
	if len(secret) > 128 {
		return nil, ErrBadToken
	}
	// Each kind of token has its own domain-separated hash, so one cache
	// serves them all without collisions.
	var hash string
	var lookup tokenLookup
	switch {
	case strings.HasPrefix(secret, TokenPrefix):
		hash, lookup = hashToken(secret), patCaller
	case AccessSecret.Is(secret):
		hash, lookup = AccessSecret.Hash(secret), s.oauthCaller
	default:
		return nil, ErrBadToken
	}
	now := s.now()
	if c, ok := s.cache.get(hash, now); ok {
		return c, nil
	}
	gen := s.cache.generation() // before the read: a revocation after it makes the put void
	var c *continuo.Caller
	var expires *time.Time
	err := s.store.Read(ctx, func(tx store.Tx) error {
		var err error
		c, expires, err = lookup(ctx, tx, hash, now)
		return err
	})
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, ErrBadToken) {
		return nil, ErrBadToken
	}
	if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	s.cache.put(gen, hash, c, now, expires)
	return c, nil
}

// tokenLookup resolves a token hash to the caller it authenticates at now,
// and when the token expires (nil: never). A token that is unknown,
// expired or revoked is ErrBadToken or store.ErrNotFound.
type tokenLookup func(ctx context.Context, tx store.Tx, hash string, now time.Time) (*continuo.Caller, *time.Time, error)

// patCaller is the tokenLookup of personal access tokens.
func patCaller(ctx context.Context, tx store.Tx, hash string, now time.Time) (*continuo.Caller, *time.Time, error) {
	k, err := tx.TokenGetByHash(ctx, hash)
	if err != nil {
		return nil, nil, err
	}
	if tokenState(k, now) != "active" {
		return nil, nil, ErrBadToken
	}
	p, err := tx.PrincipalGet(ctx, k.PrincipalID)
	if err != nil {
		return nil, nil, err
	}
	return &continuo.Caller{PrincipalID: p.ID, Principal: p.Name, GroupID: p.GroupID, Scopes: k.Scopes, TokenID: k.ID}, k.ExpiresAt, nil
}

// Principal resolves a principal by name into a caller with the given
// scopes: the identity of a local stdio connection, chosen by the operator.
func (s *Service) Principal(ctx context.Context, name string, scopes []continuo.Scope) (*continuo.Caller, error) {
	var c *continuo.Caller
	err := s.store.Read(ctx, func(tx store.Tx) error {
		p, err := tx.PrincipalGetByName(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			return continuo.NotFound("principal", name)
		} else if err != nil {
			return err
		}
		c = &continuo.Caller{PrincipalID: p.ID, Principal: p.Name, GroupID: p.GroupID, Scopes: scopes}
		return nil
	})
	return c, err
}

// TokenInfo is a token as the operator sees it: whose it is, what it may
// do, and whether it still works. Never its secret.
type TokenInfo struct {
	TokenID     string           `json:"token_id"`
	Principal   string           `json:"principal"`
	PrincipalID string           `json:"principal_id"`
	Group       string           `json:"group"`
	Scopes      []continuo.Scope `json:"scopes"`
	CreatedAt   time.Time        `json:"created_at"`
	ExpiresAt   *time.Time       `json:"expires_at,omitempty"`
	RevokedAt   *time.Time       `json:"revoked_at,omitempty"`
	State       string           `json:"state"` // active, expired or revoked
}

// Tokens lists every token (never a secret), by ID, for the operator.
func (s *Service) Tokens(ctx context.Context) ([]TokenInfo, error) {
	out := []TokenInfo{}
	err := s.store.Read(ctx, func(tx store.Tx) error {
		toks, err := tx.TokenList(ctx)
		if err != nil {
			return err
		}
		ps, err := tx.PrincipalList(ctx)
		if err != nil {
			return err
		}
		gs, err := tx.GroupList(ctx)
		if err != nil {
			return err
		}
		principals := make(map[string]continuo.Principal, len(ps))
		for _, p := range ps {
			principals[p.ID] = p
		}
		groups := make(map[string]string, len(gs))
		for _, g := range gs {
			groups[g.ID] = g.Name
		}
		now := s.now()
		for _, k := range toks {
			p := principals[k.PrincipalID]
			out = append(out, tokenInfo(k, p, groups[p.GroupID], now))
		}
		return nil
	})
	return out, err
}

// RunTokenScopes are what a delegated agent's token holds: it reads and
// records in sessions, and reads runs; it starts nothing.
var RunTokenScopes = []continuo.Scope{continuo.ScopeSessionsRead, continuo.ScopeSessionsWrite, continuo.ScopeRuntimeRead}

// runAgentName names the principal of a group's delegated agents.
func runAgentName(groupID string) string { return "agents." + groupID }

// IssueRunToken issues a token for one delegated run of a group: held by
// the group's agents principal (made when missing, in that group), with
// RunTokenScopes, expiring after ttl. The caller revokes it when the run
// ends.
func (s *Service) IssueRunToken(ctx context.Context, groupID string, ttl time.Duration) (*IssuedToken, error) {
	if ttl <= 0 {
		return nil, continuo.Invalid("ttl", "must be positive")
	}
	now := s.now()
	m := newMint(now, RunTokenScopes, ttl)
	err := s.store.Write(ctx, func(tx store.Tx) error {
		name := runAgentName(groupID)
		p, err := tx.PrincipalGetByName(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			if _, err := tx.GroupGet(ctx, groupID); err != nil {
				return err
			}
			p = &continuo.Principal{ID: continuo.NewID(continuo.PrefixPrincipal, now), Name: name, GroupID: groupID, CreatedAt: now}
			err = tx.PrincipalCreate(ctx, p)
		}
		if err != nil {
			return err
		}
		if p.GroupID != groupID {
			return fmt.Errorf("principal %s is not of group %s", name, groupID)
		}
		return m.create(ctx, tx, p)
	})
	if err != nil {
		return nil, fmt.Errorf("issue a run token: %w", err)
	}
	return m.issued, nil
}

// CarrierTokenScopes are the scopes of a token minted for a carrier the
// swarm's process runtime starts: it works as a swarm worker and runs its
// tasks' model turns (start_coding_agent needs coding_agent:run and
// project:write, observing them runtime:read), nothing else.
var CarrierTokenScopes = []continuo.Scope{continuo.ScopeSwarmWork, continuo.ScopeCodingAgent, continuo.ScopeProjectWrite, continuo.ScopeRuntimeRead}

// IssueCarrierToken mints a token of an existing principal, with
// CarrierTokenScopes, for one carrier the swarm starts; it is revoked
// when that carrier is retired, and expires after ttl anyway.
func (s *Service) IssueCarrierToken(ctx context.Context, principalID string, ttl time.Duration) (*IssuedToken, error) {
	if ttl <= 0 {
		return nil, continuo.Invalid("ttl", "must be positive")
	}
	m := newMint(s.now(), CarrierTokenScopes, ttl)
	err := s.store.Write(ctx, func(tx store.Tx) error {
		p, err := tx.PrincipalGet(ctx, principalID)
		if err != nil {
			return err
		}
		return m.create(ctx, tx, p)
	})
	if err != nil {
		return nil, fmt.Errorf("issue a carrier token: %w", err)
	}
	return m.issued, nil
}
