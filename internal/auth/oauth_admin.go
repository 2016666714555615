package auth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// ClientInfo is an OAuth client as the operator sees it (never a secret).
type ClientInfo struct {
	ClientID      string           `json:"client_id"`
	Kind          string           `json:"kind"`
	Name          string           `json:"name"`
	RedirectHosts []string         `json:"redirect_hosts"`
	Scopes        []continuo.Scope `json:"scopes"`
	CreatedAt     time.Time        `json:"created_at"`
	UsedAt        *time.Time       `json:"used_at,omitempty"`
	RevokedAt     *time.Time       `json:"revoked_at,omitempty"`
	ActiveGrants  int              `json:"active_grants"`
}

// GrantInfo is one authorization a user gave a client, for the operator.
type GrantInfo struct {
	GrantID    string           `json:"grant_id"`
	ClientID   string           `json:"client_id"`
	ClientName string           `json:"client_name"`
	Principal  string           `json:"principal"`
	Group      string           `json:"group"`
	Scopes     []continuo.Scope `json:"scopes"`
	Resource   string           `json:"resource"`
	CreatedAt  time.Time        `json:"created_at"`
	RevokedAt  *time.Time       `json:"revoked_at,omitempty"`
	State      string           `json:"state"` // active, or revoked (the grant or its client)
}

// OAuthClients lists every OAuth client, by ID.
func (s *Service) OAuthClients(ctx context.Context) ([]ClientInfo, error) {
	out := []ClientInfo{}
	err := s.store.Read(ctx, func(tx store.Tx) error {
		cs, err := tx.OAuthClientList(ctx)
		if err != nil {
			return err
		}
		gs, err := tx.OAuthGrantList(ctx)
		if err != nil {
			return err
		}
		active := map[string]int{}
		for _, g := range gs {
			if g.RevokedAt == nil {
				active[g.ClientID]++
			}
		}
		for _, c := range cs {
			out = append(out, clientInfo(c, active[c.ID]))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list oauth clients: %w", err)
	}
	return out, nil
}

// clientInfo is what the operator sees of a client with active grants
// not revoked (none once the client itself is revoked).
func clientInfo(c continuo.OAuthClient, active int) ClientInfo {
	if c.RevokedAt != nil {
		active = 0
	}
	return ClientInfo{ClientID: c.ClientID, Kind: string(c.Kind), Name: c.Name,
		RedirectHosts: redirectHosts(c.RedirectURIs), Scopes: c.Scopes, CreatedAt: c.CreatedAt,
		UsedAt: c.UsedAt, RevokedAt: c.RevokedAt, ActiveGrants: active}
}

// redirectHosts names where a client's redirect URIs lead: their hosts, or
// "scheme:" for a private-use scheme (an app on the user's device).
func redirectHosts(uris []string) []string {
	out := []string{}
	for _, u := range uris {
		h := u
		if p, err := url.Parse(u); err == nil && p.Host != "" {
			h = p.Hostname()
		} else if err == nil {
			h = p.Scheme + ":"
		}
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// OAuthGrants lists every grant, by ID.
func (s *Service) OAuthGrants(ctx context.Context) ([]GrantInfo, error) {
	out := []GrantInfo{}
	err := s.store.Read(ctx, func(tx store.Tx) error {
		gs, err := tx.OAuthGrantList(ctx)
		if err != nil {
			return err
		}
		cs, err := tx.OAuthClientList(ctx)
		if err != nil {
			return err
		}
		ps, err := tx.PrincipalList(ctx)
		if err != nil {
			return err
		}
		groups, err := tx.GroupList(ctx)
		if err != nil {
			return err
		}
		clients := map[string]continuo.OAuthClient{}
		for _, c := range cs {
			clients[c.ID] = c
		}
		principals := map[string]continuo.Principal{}
		for _, p := range ps {
			principals[p.ID] = p
		}
		groupNames := map[string]string{}
		for _, g := range groups {
			groupNames[g.ID] = g.Name
		}
		for _, g := range gs {
			p := principals[g.PrincipalID]
			out = append(out, grantInfo(g, clients[g.ClientID], p, groupNames[p.GroupID]))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list oauth grants: %w", err)
	}
	return out, nil
}

// grantInfo is what the operator sees of a grant of client c to
// principal p, whose group is named group.
func grantInfo(g continuo.OAuthGrant, c continuo.OAuthClient, p continuo.Principal, group string) GrantInfo {
	state := "active"
	if g.RevokedAt != nil || c.RevokedAt != nil {
		state = "revoked"
	}
	return GrantInfo{GrantID: g.ID, ClientID: c.ClientID, ClientName: c.Name, Principal: p.Name,
		Group: group, Scopes: g.Scopes, Resource: g.Resource, CreatedAt: g.CreatedAt,
		RevokedAt: g.RevokedAt, State: state}
}

// clientByRef finds a client by its client_id or, for a metadata client,
// its row ID (ocl_…); not_found otherwise.
func clientByRef(ctx context.Context, tx store.Tx, id string) (*continuo.OAuthClient, error) {
	c, err := tx.OAuthClientGetByClientID(ctx, id)
	if errors.Is(err, store.ErrNotFound) && continuo.ValidID(continuo.PrefixOAuthClient, id) {
		c, err = tx.OAuthClientGet(ctx, id) // a metadata client by its row ID
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, continuo.NotFound("client", id)
	}
	return c, err
}

// RevokeOAuth revokes what id names: a grant (ogr_…) and its tokens, or a
// client (its client_id: a document URL or ocl_…) and every grant it
// holds. kind is "grant" or "client"; n counts the grants it revoked now
// (0 when they were revoked already: revoking twice is not an error).
func (s *Service) RevokeOAuth(ctx context.Context, id string) (kind string, n int, err error) {
	err = s.RevokeWrite(ctx, func(tx store.Tx) (bool, error) {
		now := s.now()
		if continuo.ValidID(continuo.PrefixOAuthGrant, id) {
			g, err := tx.OAuthGrantGet(ctx, id)
			if errors.Is(err, store.ErrNotFound) {
				return false, continuo.NotFound("grant", id)
			} else if err != nil {
				return false, err
			}
			revoked, err := RevokeGrant(ctx, tx, g.ID, now)
			kind, n = "grant", 0
			if revoked {
				n = 1
			}
			return revoked, err
		}
		c, err := clientByRef(ctx, tx, id)
		if err != nil {
			return false, err
		}
		if c.RevokedAt == nil {
			if err := tx.OAuthClientRevoke(ctx, c.ID, now); err != nil {
				return false, err
			}
		}
		grants, err := tx.OAuthGrantRevokeClient(ctx, c.ID, now)
		kind, n = "client", grants
		return c.RevokedAt == nil || grants > 0, err
	})
	if err != nil {
		return "", 0, fmt.Errorf("revoke %s: %w", id, err)
	}
	return kind, n, nil
}
