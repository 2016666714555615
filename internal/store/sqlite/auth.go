package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"time"

	"github.com/continuo-dev/continuo"
)

func (t *tx) GroupCreate(ctx context.Context, g *continuo.Group) error {
	_, err := t.exec(ctx, "INSERT INTO groups (id, name, created_at) VALUES (?, ?, ?)", g.ID, g.Name, ms(g.CreatedAt))
	return err
}

func (t *tx) groupOne(ctx context.Context, where string, arg any) (*continuo.Group, error) {
	var g continuo.Group
	var at int64
	err := t.q.QueryRowContext(ctx, "SELECT id, name, created_at FROM groups WHERE "+where, arg).Scan(&g.ID, &g.Name, &at)
	if err != nil {
		return nil, interpret(err)
	}
	g.CreatedAt = fromMS(at)
	return &g, nil
}

func (t *tx) GroupByID(ctx context.Context, id string) (*continuo.Group, error) {
	return t.groupOne(ctx, "id = ?", id)
}

func (t *tx) GroupByName(ctx context.Context, name string) (*continuo.Group, error) {
	return t.groupOne(ctx, "name = ?", name)
}

func (t *tx) GroupList(ctx context.Context) ([]continuo.Group, error) {
	rows, err := t.q.QueryContext(ctx, "SELECT id, name, created_at FROM groups ORDER BY name")
	if err != nil {
		return nil, interpret(err)
	}
	defer rows.Close()
	var out []continuo.Group
	for rows.Next() {
		var g continuo.Group
		var at int64
		if err := rows.Scan(&g.ID, &g.Name, &at); err != nil {
			return nil, err
		}
		g.CreatedAt = fromMS(at)
		out = append(out, g)
	}
	return out, rows.Err()
}

func (t *tx) PrincipalCreate(ctx context.Context, p *continuo.Principal) error {
	_, err := t.exec(ctx, "INSERT INTO principals (id, name, group_id, created_at) VALUES (?, ?, ?, ?)",
		p.ID, p.Name, p.GroupID, ms(p.CreatedAt))
	return err
}

const principalCols = "id, name, group_id, created_at"

func scanPrincipal(s interface{ Scan(...any) error }) (*continuo.Principal, error) {
	var p continuo.Principal
	var at int64
	if err := s.Scan(&p.ID, &p.Name, &p.GroupID, &at); err != nil {
		return nil, interpret(err)
	}
	p.CreatedAt = fromMS(at)
	return &p, nil
}

func (t *tx) PrincipalByID(ctx context.Context, id string) (*continuo.Principal, error) {
	return scanPrincipal(t.q.QueryRowContext(ctx, "SELECT "+principalCols+" FROM principals WHERE id = ?", id))
}

func (t *tx) PrincipalByName(ctx context.Context, name string) (*continuo.Principal, error) {
	return scanPrincipal(t.q.QueryRowContext(ctx, "SELECT "+principalCols+" FROM principals WHERE name = ?", name))
}

func (t *tx) PrincipalList(ctx context.Context) ([]continuo.Principal, error) {
	rows, err := t.q.QueryContext(ctx, "SELECT "+principalCols+" FROM principals ORDER BY name")
	if err != nil {
		return nil, interpret(err)
	}
	defer rows.Close()
	var out []continuo.Principal
	for rows.Next() {
		p, err := scanPrincipal(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *p)
	}
	return out, rows.Err()
}

func joinScopes(s []continuo.Scope) string {
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = string(x)
	}
	return strings.Join(parts, " ")
}

func splitScopes(s string) []continuo.Scope {
	var out []continuo.Scope
	for _, f := range strings.Fields(s) {
		out = append(out, continuo.Scope(f))
	}
	return out
}

func (t *tx) TokenCreate(ctx context.Context, k *continuo.Token) error {
	_, err := t.exec(ctx, `INSERT INTO tokens (id, principal_id, hash, scopes, created_at, expires_at, revoked_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, k.ID, k.PrincipalID, k.Hash, joinScopes(k.Scopes), ms(k.CreatedAt), msPtr(k.ExpiresAt), msPtr(k.RevokedAt))
	return err
}

const tokenCols = "id, principal_id, hash, scopes, created_at, expires_at, revoked_at"

func scanToken(s interface{ Scan(...any) error }) (*continuo.Token, error) {
	var k continuo.Token
	var scopes string
	var at int64
	var exp, rev sql.NullInt64
	if err := s.Scan(&k.ID, &k.PrincipalID, &k.Hash, &scopes, &at, &exp, &rev); err != nil {
		return nil, interpret(err)
	}
	k.Scopes = splitScopes(scopes)
	k.CreatedAt = fromMS(at)
	k.ExpiresAt = fromNullMS(exp)
	k.RevokedAt = fromNullMS(rev)
	return &k, nil
}

func (t *tx) TokenByHash(ctx context.Context, hash string) (*continuo.Token, error) {
	return scanToken(t.q.QueryRowContext(ctx, "SELECT "+tokenCols+" FROM tokens WHERE hash = ?", hash))
}

func (t *tx) TokenByID(ctx context.Context, id string) (*continuo.Token, error) {
	return scanToken(t.q.QueryRowContext(ctx, "SELECT "+tokenCols+" FROM tokens WHERE id = ?", id))
}

func (t *tx) TokenRevoke(ctx context.Context, id string, at time.Time) error {
	return t.execOne(ctx, "UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?", ms(at), id)
}

func (t *tx) TokenList(ctx context.Context) ([]continuo.Token, error) {
	rows, err := t.q.QueryContext(ctx, "SELECT "+tokenCols+" FROM tokens ORDER BY id")
	if err != nil {
		return nil, interpret(err)
	}
	defer rows.Close()
	var out []continuo.Token
	for rows.Next() {
		k, err := scanToken(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *k)
	}
	return out, rows.Err()
}

func (t *tx) ProjectCreate(ctx context.Context, p *continuo.Project) error {
	checks, err := json.Marshal(nonNilMap(p.Checks))
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, "INSERT INTO projects (id, name, root, checks, writable, created_at) VALUES (?, ?, ?, ?, ?, ?)",
		p.ID, p.Name, p.Root, string(checks), p.Writable, ms(p.CreatedAt))
	return err
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

const projectCols = "id, name, root, checks, writable, created_at"

func scanProject(s interface{ Scan(...any) error }) (*continuo.Project, error) {
	var p continuo.Project
	var checks string
	var at int64
	if err := s.Scan(&p.ID, &p.Name, &p.Root, &checks, &p.Writable, &at); err != nil {
		return nil, interpret(err)
	}
	if err := json.Unmarshal([]byte(checks), &p.Checks); err != nil {
		return nil, err
	}
	p.CreatedAt = fromMS(at)
	return &p, nil
}

func (t *tx) ProjectByID(ctx context.Context, id string) (*continuo.Project, error) {
	return scanProject(t.q.QueryRowContext(ctx, "SELECT "+projectCols+" FROM projects WHERE id = ?", id))
}

func (t *tx) ProjectByName(ctx context.Context, name string) (*continuo.Project, error) {
	return scanProject(t.q.QueryRowContext(ctx, "SELECT "+projectCols+" FROM projects WHERE name = ?", name))
}

func (t *tx) ProjectList(ctx context.Context) ([]continuo.Project, error) {
	rows, err := t.q.QueryContext(ctx, "SELECT "+projectCols+" FROM projects ORDER BY name")
	if err != nil {
		return nil, interpret(err)
	}
	defer rows.Close()
	var out []continuo.Project
	for rows.Next() {
		p, err := scanProject(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *p)
	}
	return out, rows.Err()
}

func (t *tx) GrantPut(ctx context.Context, g continuo.Grant) error {
	_, err := t.exec(ctx, `INSERT INTO grants (project_id, group_id, access) VALUES (?, ?, ?)
		ON CONFLICT (project_id, group_id) DO UPDATE SET access = excluded.access`, g.ProjectID, g.GroupID, string(g.Access))
	return err
}

func (t *tx) GrantGet(ctx context.Context, projectID, groupID string) (continuo.Access, error) {
	var a string
	err := t.q.QueryRowContext(ctx, "SELECT access FROM grants WHERE project_id = ? AND group_id = ?", projectID, groupID).Scan(&a)
	return continuo.Access(a), interpret(err)
}

func (t *tx) GrantList(ctx context.Context, groupID string) ([]continuo.Grant, error) {
	rows, err := t.q.QueryContext(ctx, "SELECT project_id, group_id, access FROM grants WHERE group_id = ? ORDER BY project_id", groupID)
	if err != nil {
		return nil, interpret(err)
	}
	defer rows.Close()
	var out []continuo.Grant
	for rows.Next() {
		var g continuo.Grant
		var a string
		if err := rows.Scan(&g.ProjectID, &g.GroupID, &a); err != nil {
			return nil, err
		}
		g.Access = continuo.Access(a)
		out = append(out, g)
	}
	return out, rows.Err()
}
