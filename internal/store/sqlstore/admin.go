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

// page is a page's query being built: its WHERE conditions and their
// arguments.
type page struct {
	where []string
	args  []any
}

// fromName starts a page ordered by name, from from.
func fromName(from string) *page { return (&page{}).and("name >= ?", from) }

// fromID starts a page ordered by col descending (newest first), from
// from (none: from the newest), of the rows whose ofCol is of when of is
// set.
func fromID(col, from, ofCol, of string) *page {
	p := &page{}
	if from != "" {
		p.and(col+" <= ?", from)
	}
	if of != "" {
		p.and(ofCol+" = ?", of)
	}
	return p
}

func (p *page) and(cond string, args ...any) *page {
	p.where = append(p.where, cond)
	p.args = append(p.args, args...)
	return p
}

// pageList runs query (SELECT … FROM …) with the page's WHERE, then
// order and the limit.
func pageList[T any](t *Tx, ctx context.Context, scan func(scanner) (*T, error), query string, p *page, order string, limit int) ([]T, error) {
	if limit < 1 {
		return nil, errPageLimit
	}
	for i, w := range p.where {
		if i == 0 {
			query += " WHERE " + w
		} else {
			query += " AND " + w
		}
	}
	return list(t, ctx, scan, query+" ORDER BY "+order+" LIMIT ?", append(p.args, limit)...)
}

// GroupPage implements store.AdminTx.
func (t *Tx) GroupPage(ctx context.Context, p store.NamePage) ([]continuo.Group, error) {
	return pageList(t, ctx, scanGroup, "SELECT id, name, created_at FROM groups", fromName(p.From), "name", p.Limit)
}

// PrincipalPage implements store.AdminTx.
func (t *Tx) PrincipalPage(ctx context.Context, p store.PrincipalPage) ([]continuo.Principal, error) {
	w := fromName(p.From)
	if p.GroupID != "" {
		w.and("group_id = ?", p.GroupID)
	}
	return pageList(t, ctx, scanPrincipal, "SELECT "+principalCols+" FROM principals", w, "name", p.Limit)
}

// ProjectPage implements store.AdminTx.
func (t *Tx) ProjectPage(ctx context.Context, p store.NamePage) ([]continuo.Project, error) {
	return pageList(t, ctx, scanProject, "SELECT "+projectCols+" FROM projects", fromName(p.From), "name", p.Limit)
}

// GrantListProject implements store.AdminTx.
func (t *Tx) GrantListProject(ctx context.Context, projectID string) ([]continuo.Grant, error) {
	return list(t, ctx, scanGrant, "SELECT project_id, group_id, access FROM grants WHERE project_id = ? ORDER BY group_id", projectID)
}

// TokenPage implements store.AdminTx.
func (t *Tx) TokenPage(ctx context.Context, p store.TokenPage) ([]continuo.Token, error) {
	w := fromID("id", p.From, "principal_id", p.PrincipalID)
	if p.LiveAt != nil {
		w.and("revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)", ms(*p.LiveAt))
	}
	return pageList(t, ctx, scanToken, "SELECT "+tokenCols+" FROM tokens", w, "id DESC", p.Limit)
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
	scan := func(s scanner) (*store.OAuthClientGrants, error) {
		var n int64
		c, err := scanOAuthClient(plus{s, []any{&n}})
		if err != nil {
			return nil, err
		}
		return &store.OAuthClientGrants{Client: *c, ActiveGrants: int(n)}, nil
	}
	return pageList(t, ctx, scan, "SELECT "+oauthClientCols+
		", (SELECT COUNT(*) FROM oauth_grants g WHERE g.client_id = c.id AND g.revoked_at IS NULL) FROM oauth_clients c",
		fromID("c.id", p.From, "", ""), "c.id DESC", p.Limit)
}

// OAuthGrantPage implements store.AdminTx.
func (t *Tx) OAuthGrantPage(ctx context.Context, p store.OAuthGrantPage) ([]continuo.OAuthGrant, error) {
	return pageList(t, ctx, scanOAuthGrant, "SELECT "+oauthGrantCols+" FROM oauth_grants",
		fromID("id", p.From, "client_id", p.ClientID), "id DESC", p.Limit)
}
