package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

const loginLinkCols = "id, hash, principal_id, created_at, expires_at, used_at, scopes"

func scanLoginLink(s scanner) (*continuo.LoginLink, error) {
	var l continuo.LoginLink
	var at, exp int64
	var used sql.NullInt64
	var scopes string
	if err := s.Scan(&l.ID, &l.Hash, &l.PrincipalID, &at, &exp, &used, &scopes); err != nil {
		return nil, err
	}
	l.CreatedAt, l.ExpiresAt, l.UsedAt, l.Scopes = fromMS(at), fromMS(exp), fromNullMS(used), splitScopes(scopes)
	return &l, nil
}

// LoginLinkCreate implements store.SignInTx.
func (t *Tx) LoginLinkCreate(ctx context.Context, l *continuo.LoginLink) error {
	_, err := t.exec(ctx, "INSERT INTO login_links ("+loginLinkCols+") VALUES ("+Placeholders(7)+")",
		l.ID, l.Hash, l.PrincipalID, ms(l.CreatedAt), ms(l.ExpiresAt), msPtr(l.UsedAt), joinScopes(l.Scopes))
	return err
}

// LoginLinkGetByHash implements store.SignInTx.
func (t *Tx) LoginLinkGetByHash(ctx context.Context, hash string) (*continuo.LoginLink, error) {
	l, err := scanLoginLink(t.row(ctx, "SELECT "+loginLinkCols+" FROM login_links WHERE hash = ?", hash))
	return l, t.interpret(err)
}

// LoginLinkUse implements store.SignInTx. Expiry is the service's to check.
func (t *Tx) LoginLinkUse(ctx context.Context, id string, at time.Time) error {
	return t.useOnce(ctx, "login_links", id, store.ErrStale,
		"UPDATE login_links SET used_at = ? WHERE id = ? AND used_at IS NULL", ms(at), id)
}

const webSessionCols = "id, hash, principal_id, created_at, expires_at, revoked_at, scopes, token_id"

func scanWebSession(s scanner) (*continuo.WebSession, error) {
	var w continuo.WebSession
	var at, exp int64
	var revoked sql.NullInt64
	var scopes string
	if err := s.Scan(&w.ID, &w.Hash, &w.PrincipalID, &at, &exp, &revoked, &scopes, &w.TokenID); err != nil {
		return nil, err
	}
	w.CreatedAt, w.ExpiresAt, w.RevokedAt, w.Scopes = fromMS(at), fromMS(exp), fromNullMS(revoked), splitScopes(scopes)
	return &w, nil
}

// WebSessionCreate implements store.SignInTx.
func (t *Tx) WebSessionCreate(ctx context.Context, w *continuo.WebSession) error {
	_, err := t.exec(ctx, "INSERT INTO web_sessions ("+webSessionCols+") VALUES ("+Placeholders(8)+")",
		w.ID, w.Hash, w.PrincipalID, ms(w.CreatedAt), ms(w.ExpiresAt), msPtr(w.RevokedAt), joinScopes(w.Scopes), w.TokenID)
	return err
}

// WebSessionGetByHash implements store.SignInTx.
func (t *Tx) WebSessionGetByHash(ctx context.Context, hash string) (*continuo.WebSession, error) {
	w, err := scanWebSession(t.row(ctx, "SELECT "+webSessionCols+" FROM web_sessions WHERE hash = ?", hash))
	return w, t.interpret(err)
}

// WebSessionRevoke implements store.SignInTx.
func (t *Tx) WebSessionRevoke(ctx context.Context, id string, at time.Time) error {
	return t.execOne(ctx, store.ErrNotFound, "UPDATE web_sessions SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?", ms(at), id)
}
