package sqlstore

import (
	"context"
	"errors"

	"github.com/continuo-dev/continuo"

	"github.com/continuo-dev/continuo/internal/store"
)

// The operator's listings (store.AdminTx): keyset pages, each one index
// range (or a scan of the primary key in order, filtered) that stops after
// Limit rows.

var errPageLimit = errors.New("sqlstore: a page needs a limit of at least 1")

// page is a query's WHERE clause being built, and its arguments.
type page struct {
	where []string
	args  []any
}

func (p *page) and(cond string, args ...any) {
	p.where = append(p.where, cond)
	p.args = append(p.args, args...)
}

// sql is " WHERE …" (or nothing), then order and LIMIT ?.
func (p *page) sql(order string, limit int) (string, []any) {
	q := ""
	for i, w := range p.where {
		if i == 0 {
			q += " WHERE " + w
		} else {
			q += " AND " + w
		}
	}
	return q + " ORDER BY " + order + " LIMIT ?", append(p.args, limit)
}

// GroupPage implements store.AdminTx.
func (t *Tx) GroupPage(ctx context.Context, p store.NamePage) ([]continuo.Group, error) {
	if p.Limit < 1 {
		return nil, errPageLimit
	}
	var w page
	w.and("name >= ?", p.From)
	q, args := w.sql("name", p.Limit)
	return list(t, ctx, scanGroup, "SELECT id, name, created_at FROM groups"+q, args...)
}

// PrincipalPage implements store.AdminTx.
func (t *Tx) PrincipalPage(ctx context.Context, p store.PrincipalPage) ([]continuo.Principal, error) {
	if p.Limit < 1 {
		return nil, errPageLimit
	}
	var w page
	w.and("name >= ?", p.From)
	if p.GroupID != "" {
		w.and("group_id = ?", p.GroupID)
	}
	q, args := w.sql("name", p.Limit)
	return list(t, ctx, scanPrincipal, "SELECT "+principalCols+" FROM principals"+q, args...)
}

// ProjectPage implements store.AdminTx.
func (t *Tx) ProjectPage(ctx context.Context, p store.NamePage) ([]continuo.Project, error) {
	if p.Limit < 1 {
		return nil, errPageLimit
	}
	var w page
	w.and("name >= ?", p.From)
	q, args := w.sql("name", p.Limit)
	return list(t, ctx, scanProject, "SELECT "+projectCols+" FROM projects"+q, args...)
}

// GrantListProject implements store.AdminTx.
func (t *Tx) GrantListProject(ctx context.Context, projectID string) ([]continuo.Grant, error) {
	return list(t, ctx, scanGrant, "SELECT project_id, group_id, access FROM grants WHERE project_id = ? ORDER BY group_id", projectID)
}

// TokenPage implements store.AdminTx.
func (t *Tx) TokenPage(ctx context.Context, p store.TokenPage) ([]continuo.Token, error) {
	if p.Limit < 1 {
		return nil, errPageLimit
	}
	var w page
	if p.From != "" {
		w.and("id <= ?", p.From)
	}
	if p.PrincipalID != "" {
		w.and("principal_id = ?", p.PrincipalID)
	}
	if p.LiveAt != nil {
		w.and("revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)", ms(*p.LiveAt))
	}
	q, args := w.sql("id DESC", p.Limit)
	return list(t, ctx, scanToken, "SELECT "+tokenCols+" FROM tokens"+q, args...)
}

// plus is a scanner that reads more columns after those its caller scans.
type plus struct {
	s    scanner
	more []any
}

func (p plus) Scan(dest ...any) error { return p.s.Scan(append(dest, p.more...)...) }

// OAuthClientPage implements store.AdminTx: each client's count is one
// range of the oauth_grants_client index.
func (t *Tx) OAuthClientPage(ctx context.Context, p store.IDPage) ([]store.OAuthClientGrants, error) {
	if p.Limit < 1 {
		return nil, errPageLimit
	}
	var w page
	if p.From != "" {
		w.and("c.id <= ?", p.From)
	}
	q, args := w.sql("c.id DESC", p.Limit)
	scan := func(s scanner) (*store.OAuthClientGrants, error) {
		var n int64
		c, err := scanOAuthClient(plus{s, []any{&n}})
		if err != nil {
			return nil, err
		}
		return &store.OAuthClientGrants{Client: *c, ActiveGrants: int(n)}, nil
	}
	return list(t, ctx, scan, "SELECT "+oauthClientCols+
		", (SELECT COUNT(*) FROM oauth_grants g WHERE g.client_id = c.id AND g.revoked_at IS NULL) FROM oauth_clients c"+q, args...)
}

// OAuthGrantPage implements store.AdminTx.
func (t *Tx) OAuthGrantPage(ctx context.Context, p store.OAuthGrantPage) ([]continuo.OAuthGrant, error) {
	if p.Limit < 1 {
		return nil, errPageLimit
	}
	var w page
	if p.From != "" {
		w.and("id <= ?", p.From)
	}
	if p.ClientID != "" {
		w.and("client_id = ?", p.ClientID)
	}
	q, args := w.sql("id DESC", p.Limit)
	return list(t, ctx, scanOAuthGrant, "SELECT "+oauthGrantCols+" FROM oauth_grants"+q, args...)
}
