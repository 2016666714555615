package sqlstore

import (
	"context"
	"database/sql"
	"strings"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// GroupCreate implements store.AuthTx.
func (t *Tx) GroupCreate(ctx context.Context, g *continuo.Group) error {
	_, err := t.exec(ctx, "INSERT INTO groups (id, name, created_at) VALUES (?, ?, ?)", g.ID, g.Name, ms(g.CreatedAt))
	return err
}

func scanGroup(s scanner) (*continuo.Group, error) {
	var g continuo.Group
	var at int64
	if err := s.Scan(&g.ID, &g.Name, &at); err != nil {
		return nil, err
	}
	g.CreatedAt = fromMS(at)
	return &g, nil
}

func (t *Tx) groupOne(ctx context.Context, where string, arg any) (*continuo.Group, error) {
	g, err := scanGroup(t.row(ctx, "SELECT id, name, created_at FROM groups WHERE "+where, arg))
	return g, t.interpret(err)
}

// GroupGet implements store.AuthTx.
func (t *Tx) GroupGet(ctx context.Context, id string) (*continuo.Group, error) {
	return t.groupOne(ctx, "id = ?", id)
}

// GroupGetByName implements store.AuthTx.
func (t *Tx) GroupGetByName(ctx context.Context, name string) (*continuo.Group, error) {
	return t.groupOne(ctx, "name = ?", name)
}

// GroupList implements store.AuthTx.
func (t *Tx) GroupList(ctx context.Context) ([]continuo.Group, error) {
	return list(t, ctx, scanGroup, "SELECT id, name, created_at FROM groups ORDER BY name")
}

// PrincipalCreate implements store.AuthTx.
func (t *Tx) PrincipalCreate(ctx context.Context, p *continuo.Principal) error {
	_, err := t.exec(ctx, "INSERT INTO principals (id, name, group_id, created_at) VALUES (?, ?, ?, ?)",
		p.ID, p.Name, p.GroupID, ms(p.CreatedAt))
	return err
}

const principalCols = "id, name, group_id, created_at"

func scanPrincipal(s scanner) (*continuo.Principal, error) {
	var p continuo.Principal
	var at int64
	if err := s.Scan(&p.ID, &p.Name, &p.GroupID, &at); err != nil {
		return nil, err
	}
	p.CreatedAt = fromMS(at)
	return &p, nil
}

// PrincipalGet implements store.AuthTx.
func (t *Tx) PrincipalGet(ctx context.Context, id string) (*continuo.Principal, error) {
	p, err := scanPrincipal(t.row(ctx, "SELECT "+principalCols+" FROM principals WHERE id = ?", id))
	return p, t.interpret(err)
}

// PrincipalGetByName implements store.AuthTx.
func (t *Tx) PrincipalGetByName(ctx context.Context, name string) (*continuo.Principal, error) {
	p, err := scanPrincipal(t.row(ctx, "SELECT "+principalCols+" FROM principals WHERE name = ?", name))
	return p, t.interpret(err)
}

// PrincipalList implements store.AuthTx.
func (t *Tx) PrincipalList(ctx context.Context) ([]continuo.Principal, error) {
	return list(t, ctx, scanPrincipal, "SELECT "+principalCols+" FROM principals ORDER BY name")
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

// TokenCreate implements store.AuthTx.
func (t *Tx) TokenCreate(ctx context.Context, k *continuo.Token) error {
	_, err := t.exec(ctx, `INSERT INTO tokens (id, principal_id, hash, scopes, created_at, expires_at, revoked_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, k.ID, k.PrincipalID, k.Hash, joinScopes(k.Scopes), ms(k.CreatedAt), msPtr(k.ExpiresAt), msPtr(k.RevokedAt))
	return err
}

const tokenCols = "id, principal_id, hash, scopes, created_at, expires_at, revoked_at"

func scanToken(s scanner) (*continuo.Token, error) {
	var k continuo.Token
	var scopes string
	var at int64
	var exp, rev sql.NullInt64
	if err := s.Scan(&k.ID, &k.PrincipalID, &k.Hash, &scopes, &at, &exp, &rev); err != nil {
		return nil, err
	}
	k.Scopes = splitScopes(scopes)
	k.CreatedAt = fromMS(at)
	k.ExpiresAt = fromNullMS(exp)
	k.RevokedAt = fromNullMS(rev)
	return &k, nil
}

// TokenGetByHash implements store.AuthTx.
func (t *Tx) TokenGetByHash(ctx context.Context, hash string) (*continuo.Token, error) {
	k, err := scanToken(t.row(ctx, "SELECT "+tokenCols+" FROM tokens WHERE hash = ?", hash))
	return k, t.interpret(err)
}

// TokenGet implements store.AuthTx.
func (t *Tx) TokenGet(ctx context.Context, id string) (*continuo.Token, error) {
	k, err := scanToken(t.row(ctx, "SELECT "+tokenCols+" FROM tokens WHERE id = ?", id))
	return k, t.interpret(err)
}

// TokenRevoke implements store.AuthTx.
func (t *Tx) TokenRevoke(ctx context.Context, p store.TokenRevokeParams) error {
	return t.execOne(ctx, store.ErrNotFound, "UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?", ms(p.At), p.ID)
}

// TokenList implements store.AuthTx.
func (t *Tx) TokenList(ctx context.Context) ([]continuo.Token, error) {
	return list(t, ctx, scanToken, "SELECT "+tokenCols+" FROM tokens ORDER BY id")
}
