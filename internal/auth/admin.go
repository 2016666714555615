package auth

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// The operator's listings, a page at a time, for the dashboard's admin
// pages: the identities, credentials, projects and grants that the CLI
// lists whole. None of them checks the caller: they are the operator's,
// and the admin pages are served only to a caller with the admin scope.
// None of them ever returns a secret or its hash.

// Page sizes of the listings.
const (
	DefaultPageSize = 50  // a query without a limit
	MaxPageSize     = 200 // a larger limit is cut to this
)

// Page is one page of a listing: its items, and the From of the next page
// ("" when this is the last).
type Page[T any] struct {
	Items []T
	Next  string
}

func pageLimit(n int) int {
	if n <= 0 {
		return DefaultPageSize
	}
	return min(n, MaxPageSize)
}

// listing is how the operator's listing of T reads its rows R.
type listing[R, T any] struct {
	prefix string                                   // the cursor is a name (""), or an ID with this prefix
	rows   func(l *lookups, limit int) ([]R, error) // at most limit rows from the page's From
	key    func(R) string                           // a row's cursor
	item   func(l *lookups, r R) (T, error)         // what the operator sees of a row
}

// readPage reads one page of a listing, from from, in one read.
func readPage[R, T any](ctx context.Context, s *Service, from string, limit int, ls listing[R, T]) (*Page[T], error) {
	if err := validFrom(from, ls.prefix); err != nil {
		return nil, err
	}
	limit = pageLimit(limit)
	var out *Page[T]
	err := s.store.Read(ctx, func(tx store.Tx) error {
		l := newLookups(ctx, tx)
		rows, err := ls.rows(l, limit+1) // one more: the next page's From
		if err != nil {
			return err
		}
		p := &Page[T]{Items: make([]T, 0, min(len(rows), limit))}
		if len(rows) > limit {
			p.Next = ls.key(rows[limit])
			rows = rows[:limit]
		}
		for _, r := range rows {
			it, err := ls.item(l, r)
			if err != nil {
				return err
			}
			p.Items = append(p.Items, it)
		}
		out = p
		return nil
	})
	return out, err
}

// validFrom checks a page cursor: "" or a name (NameQuery) or an ID with
// the given prefix.
func validFrom(from, prefix string) error {
	if from == "" {
		return nil
	}
	if prefix == "" {
		return validName("from", from)
	}
	if !continuo.ValidID(prefix, from) {
		return continuo.Invalid("from", "must be an ID starting %s", prefix)
	}
	return nil
}

// lookups remembers the rows a page refers to, so that each is read once
// per page.
type lookups struct {
	ctx        context.Context
	tx         store.Tx
	principals map[string]*continuo.Principal
	groups     map[string]*continuo.Group
	projects   map[string]*continuo.Project
	clients    map[string]*continuo.OAuthClient
}

func newLookups(ctx context.Context, tx store.Tx) *lookups {
	return &lookups{ctx: ctx, tx: tx, principals: map[string]*continuo.Principal{}, groups: map[string]*continuo.Group{},
		projects: map[string]*continuo.Project{}, clients: map[string]*continuo.OAuthClient{}}
}

func remember[T any](m map[string]*T, id string, get func(string) (*T, error)) (*T, error) {
	if v, ok := m[id]; ok {
		return v, nil
	}
	v, err := get(id)
	if err != nil {
		return nil, err
	}
	m[id] = v
	return v, nil
}

func (l *lookups) principal(id string) (*continuo.Principal, error) {
	return remember(l.principals, id, func(id string) (*continuo.Principal, error) { return l.tx.PrincipalGet(l.ctx, id) })
}

func (l *lookups) group(id string) (*continuo.Group, error) {
	return remember(l.groups, id, func(id string) (*continuo.Group, error) { return l.tx.GroupGet(l.ctx, id) })
}

func (l *lookups) project(id string) (*continuo.Project, error) {
	return remember(l.projects, id, func(id string) (*continuo.Project, error) { return l.tx.ProjectGet(l.ctx, id) })
}

func (l *lookups) client(id string) (*continuo.OAuthClient, error) {
	return remember(l.clients, id, func(id string) (*continuo.OAuthClient, error) { return l.tx.OAuthClientGet(l.ctx, id) })
}

// groupName is the name of a principal's group.
func (l *lookups) groupName(p *continuo.Principal) (string, error) {
	g, err := l.group(p.GroupID)
	if err != nil {
		return "", err
	}
	return g.Name, nil
}

// NameQuery asks for a page of a listing by name, from From (inclusive).
type NameQuery struct {
	From  string
	Limit int
}

// ---- principals ----

// PrincipalInfo is a principal as the operator sees it.
type PrincipalInfo struct {
	PrincipalID string
	Name        string
	GroupID     string
	Group       string
	CreatedAt   time.Time
}

// PrincipalQuery asks for a page of principals by name, of one group
// (by name) or of all.
type PrincipalQuery struct {
	From  string
	Group string
	Limit int
}

// PrincipalPage lists principals by name. An unknown group is not_found.
func (s *Service) PrincipalPage(ctx context.Context, q PrincipalQuery) (*Page[PrincipalInfo], error) {
	return readPage(ctx, s, q.From, q.Limit, listing[continuo.Principal, PrincipalInfo]{
		rows: func(l *lookups, limit int) ([]continuo.Principal, error) {
			p := store.PrincipalPage{From: q.From, Limit: limit}
			if q.Group != "" {
				g, err := groupByName(l.ctx, l.tx, q.Group)
				if err != nil {
					return nil, err
				}
				p.GroupID = g.ID
			}
			return l.tx.PrincipalPage(l.ctx, p)
		},
		key: func(p continuo.Principal) string { return p.Name },
		item: func(l *lookups, p continuo.Principal) (PrincipalInfo, error) {
			group, err := l.groupName(&p)
			return PrincipalInfo{PrincipalID: p.ID, Name: p.Name, GroupID: p.GroupID, Group: group, CreatedAt: p.CreatedAt}, err
		},
	})
}

func groupByName(ctx context.Context, tx store.Tx, name string) (*continuo.Group, error) {
	g, err := tx.GroupGetByName(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, continuo.NotFound("group", name)
	}
	return g, err
}

// ---- groups ----

// GroupPrincipals is how many of a group's principals GroupPage names.
const GroupPrincipals = 10

// GroupInfo is a group as the operator sees it: its first principals (by
// name) and the projects it may reach.
type GroupInfo struct {
	GroupID        string
	Name           string
	CreatedAt      time.Time
	Principals     []string // the first GroupPrincipals, by name
	MorePrincipals bool     // it has more than those
	Projects       []ProjectAccess
}

// ProjectAccess is a group's grant on one project.
type ProjectAccess struct {
	ProjectID string
	Project   string
	Access    continuo.Access
}

// GroupPage lists groups by name, each with its first principals and the
// projects it may reach, by project name.
func (s *Service) GroupPage(ctx context.Context, q NameQuery) (*Page[GroupInfo], error) {
	return readPage(ctx, s, q.From, q.Limit, listing[continuo.Group, GroupInfo]{
		rows: func(l *lookups, limit int) ([]continuo.Group, error) {
			return l.tx.GroupPage(l.ctx, store.NamePage{From: q.From, Limit: limit})
		},
		key: func(g continuo.Group) string { return g.Name },
		item: func(l *lookups, g continuo.Group) (GroupInfo, error) {
			info := GroupInfo{GroupID: g.ID, Name: g.Name, CreatedAt: g.CreatedAt, Principals: []string{}, Projects: []ProjectAccess{}}
			ps, err := l.tx.PrincipalPage(l.ctx, store.PrincipalPage{GroupID: g.ID, Limit: GroupPrincipals + 1})
			if err != nil {
				return info, err
			}
			for i, p := range ps {
				if i == GroupPrincipals {
					info.MorePrincipals = true
					break
				}
				info.Principals = append(info.Principals, p.Name)
			}
			grants, err := l.tx.GrantList(l.ctx, g.ID)
			if err != nil {
				return info, err
			}
			for _, gr := range grants {
				p, err := l.project(gr.ProjectID)
				if err != nil {
					return info, err
				}
				info.Projects = append(info.Projects, ProjectAccess{ProjectID: p.ID, Project: p.Name, Access: gr.Access})
			}
			slices.SortFunc(info.Projects, func(a, b ProjectAccess) int { return strings.Compare(a.Project, b.Project) })
			return info, nil
		},
	})
}

// ---- projects ----

// ProjectInfo is a registered project and the groups that may reach it.
type ProjectInfo struct {
	ProjectID string
	Name      string
	Root      string
	Checks    []string // the names of its checks, sorted
	Writable  bool
	CreatedAt time.Time
	Grants    []GroupAccess // by group name
}

// GroupAccess is one group's grant on a project.
type GroupAccess struct {
	Group  string
	Access continuo.Access
}

// ProjectPage lists the registered projects by name, each with its grants.
func (s *Service) ProjectPage(ctx context.Context, q NameQuery) (*Page[ProjectInfo], error) {
	return readPage(ctx, s, q.From, q.Limit, listing[continuo.Project, ProjectInfo]{
		rows: func(l *lookups, limit int) ([]continuo.Project, error) {
			return l.tx.ProjectPage(l.ctx, store.NamePage{From: q.From, Limit: limit})
		},
		key: func(p continuo.Project) string { return p.Name },
		item: func(l *lookups, p continuo.Project) (ProjectInfo, error) {
			info := ProjectInfo{ProjectID: p.ID, Name: p.Name, Root: p.Root, Checks: []string{}, Writable: p.Writable,
				CreatedAt: p.CreatedAt, Grants: []GroupAccess{}}
			for name := range p.Checks {
				info.Checks = append(info.Checks, name)
			}
			slices.Sort(info.Checks)
			grants, err := l.tx.GrantListProject(l.ctx, p.ID)
			if err != nil {
				return info, err
			}
			for _, gr := range grants {
				g, err := l.group(gr.GroupID)
				if err != nil {
					return info, err
				}
				info.Grants = append(info.Grants, GroupAccess{Group: g.Name, Access: gr.Access})
			}
			slices.SortFunc(info.Grants, func(a, b GroupAccess) int { return strings.Compare(a.Group, b.Group) })
			return info, nil
		},
	})
}

// ---- tokens ----

// TokenQuery asks for a page of tokens, newest first, from From (a token
// ID, inclusive): of one principal (by name) or of all, and only the live
// ones (neither revoked nor expired) or all.
type TokenQuery struct {
	From      string
	Principal string
	Live      bool
	Limit     int
}

// TokenPage lists tokens newest first (never a secret). An unknown
// principal is not_found.
func (s *Service) TokenPage(ctx context.Context, q TokenQuery) (*Page[TokenInfo], error) {
	now := s.now()
	return readPage(ctx, s, q.From, q.Limit, listing[continuo.Token, TokenInfo]{
		prefix: continuo.PrefixToken,
		rows: func(l *lookups, limit int) ([]continuo.Token, error) {
			p := store.TokenPage{From: q.From, Limit: limit}
			if q.Principal != "" {
				pr, err := l.tx.PrincipalGetByName(l.ctx, q.Principal)
				if errors.Is(err, store.ErrNotFound) {
					return nil, continuo.NotFound("principal", q.Principal)
				} else if err != nil {
					return nil, err
				}
				p.PrincipalID = pr.ID
			}
			if q.Live {
				p.LiveAt = &now
			}
			return l.tx.TokenPage(l.ctx, p)
		},
		key: func(k continuo.Token) string { return k.ID },
		item: func(l *lookups, k continuo.Token) (TokenInfo, error) {
			pr, err := l.principal(k.PrincipalID)
			if err != nil {
				return TokenInfo{}, err
			}
			group, err := l.groupName(pr)
			return tokenInfo(k, *pr, group, now), err
		},
	})
}

// tokenInfo is what the operator sees of a token of principal p, whose
// group is named group, at now.
func tokenInfo(k continuo.Token, p continuo.Principal, group string, now time.Time) TokenInfo {
	return TokenInfo{TokenID: k.ID, Principal: p.Name, PrincipalID: k.PrincipalID, Group: group,
		Scopes: k.Scopes, CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt, RevokedAt: k.RevokedAt, State: tokenState(&k, now)}
}

// tokenState is a token's state at now: active, expired or revoked. Only
// an active token authenticates (the store's TokenPage LiveAt says the
// same in SQL).
func tokenState(k *continuo.Token, now time.Time) string {
	switch {
	case k.RevokedAt != nil:
		return "revoked"
	case k.ExpiresAt != nil && !now.Before(*k.ExpiresAt):
		return "expired"
	}
	return "active"
}

// ---- OAuth ----

// ClientDetail is an OAuth client as the admin page shows it: what
// ClientInfo says, its row ID (what RevokeOAuth and GrantQuery take for
// either kind) and its redirect URIs in full. The name and the URIs are
// the client's own words, to be shown as text and never followed.
type ClientDetail struct {
	ClientInfo
	ID           string
	RedirectURIs []string
}

// State is a client's state: revoked, unused (never completed an
// authorization) or active.
func (c ClientInfo) State() string {
	switch {
	case c.RevokedAt != nil:
		return "revoked"
	case c.UsedAt == nil:
		return "unused"
	}
	return "active"
}

// IDQuery asks for a page of a listing newest first, from From (an ID,
// inclusive).
type IDQuery struct {
	From  string
	Limit int
}

// OAuthClientPage lists OAuth clients newest first.
func (s *Service) OAuthClientPage(ctx context.Context, q IDQuery) (*Page[ClientDetail], error) {
	return readPage(ctx, s, q.From, q.Limit, listing[store.OAuthClientGrants, ClientDetail]{
		prefix: continuo.PrefixOAuthClient,
		rows: func(l *lookups, limit int) ([]store.OAuthClientGrants, error) {
			return l.tx.OAuthClientPage(l.ctx, store.IDPage{From: q.From, Limit: limit})
		},
		key: func(r store.OAuthClientGrants) string { return r.Client.ID },
		item: func(_ *lookups, r store.OAuthClientGrants) (ClientDetail, error) {
			return ClientDetail{ClientInfo: clientInfo(r.Client, r.ActiveGrants), ID: r.Client.ID,
				RedirectURIs: slices.Clone(r.Client.RedirectURIs)}, nil
		},
	})
}

// GrantQuery asks for a page of OAuth grants newest first, from From (a
// grant ID, inclusive), of one client (its client_id or row ID) or of all.
type GrantQuery struct {
	From   string
	Client string
	Limit  int
}

// OAuthGrantPage lists OAuth grants newest first. An unknown client is
// not_found.
func (s *Service) OAuthGrantPage(ctx context.Context, q GrantQuery) (*Page[GrantInfo], error) {
	return readPage(ctx, s, q.From, q.Limit, listing[continuo.OAuthGrant, GrantInfo]{
		prefix: continuo.PrefixOAuthGrant,
		rows: func(l *lookups, limit int) ([]continuo.OAuthGrant, error) {
			p := store.OAuthGrantPage{From: q.From, Limit: limit}
			if q.Client != "" {
				c, err := clientByRef(l.ctx, l.tx, q.Client)
				if err != nil {
					return nil, err
				}
				p.ClientID = c.ID
			}
			return l.tx.OAuthGrantPage(l.ctx, p)
		},
		key: func(g continuo.OAuthGrant) string { return g.ID },
		item: func(l *lookups, g continuo.OAuthGrant) (GrantInfo, error) {
			c, err := l.client(g.ClientID)
			if err != nil {
				return GrantInfo{}, err
			}
			pr, err := l.principal(g.PrincipalID)
			if err != nil {
				return GrantInfo{}, err
			}
			group, err := l.groupName(pr)
			return grantInfo(g, *c, *pr, group), err
		},
	})
}
