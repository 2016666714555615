package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// nullString stores "" as NULL: a column whose absence means something
// (no client secret, no grant yet) is NULL, not an empty string.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// useOnce runs a guarded UPDATE of one row of table (a constant of this
// package) by id. When it matches nothing, the row either does not exist
// (ErrNotFound) or no longer holds what the guard names (stale, which the
// caller gives: ErrStale, or nil when setting the column again is no
// error).
func (t *Tx) useOnce(ctx context.Context, table, id string, stale error, query string, args ...any) error {
	res, err := t.exec(ctx, query, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil || n > 0 {
		return err
	}
	var one int
	if err := t.row(ctx, "SELECT 1 FROM "+table+" WHERE id = ?", id).Scan(&one); err != nil {
		return t.interpret(err)
	}
	return stale
}

const oauthClientCols = `id, client_id, kind, name, redirect_uris, auth_method, secret_hash, scopes, metadata,
	created_at, fetched_at, refresh_at, used_at, revoked_at`

func scanOAuthClient(s scanner) (*continuo.OAuthClient, error) {
	var c continuo.OAuthClient
	var kind, uris, scopes string
	var secret sql.NullString
	var at int64
	var fetched, refresh, used, revoked sql.NullInt64
	if err := s.Scan(&c.ID, &c.ClientID, &kind, &c.Name, &uris, &c.AuthMethod, &secret, &scopes, &c.Metadata,
		&at, &fetched, &refresh, &used, &revoked); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(uris), &c.RedirectURIs); err != nil {
		return nil, err
	}
	c.Kind, c.SecretHash, c.Scopes = continuo.ClientKind(kind), secret.String, splitScopes(scopes)
	c.CreatedAt, c.FetchedAt, c.RefreshAt = fromMS(at), fromNullMS(fetched), fromNullMS(refresh)
	c.UsedAt, c.RevokedAt = fromNullMS(used), fromNullMS(revoked)
	return &c, nil
}

func redirectJSON(uris []string) (string, error) {
	if uris == nil {
		uris = []string{}
	}
	b, err := json.Marshal(uris)
	return string(b), err
}

// OAuthClientCreate implements store.OAuthTx.
func (t *Tx) OAuthClientCreate(ctx context.Context, c *continuo.OAuthClient) error {
	uris, err := redirectJSON(c.RedirectURIs)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, "INSERT INTO oauth_clients ("+oauthClientCols+") VALUES ("+Placeholders(14)+")",
		c.ID, c.ClientID, string(c.Kind), c.Name, uris, c.AuthMethod, nullString(c.SecretHash), joinScopes(c.Scopes), c.Metadata,
		ms(c.CreatedAt), msPtr(c.FetchedAt), msPtr(c.RefreshAt), msPtr(c.UsedAt), msPtr(c.RevokedAt))
	return err
}

// OAuthClientGet implements store.OAuthTx.
func (t *Tx) OAuthClientGet(ctx context.Context, id string) (*continuo.OAuthClient, error) {
	c, err := scanOAuthClient(t.row(ctx, "SELECT "+oauthClientCols+" FROM oauth_clients WHERE id = ?", id))
	return c, t.interpret(err)
}

// OAuthClientGetByClientID implements store.OAuthTx.
func (t *Tx) OAuthClientGetByClientID(ctx context.Context, clientID string) (*continuo.OAuthClient, error) {
	c, err := scanOAuthClient(t.row(ctx, "SELECT "+oauthClientCols+" FROM oauth_clients WHERE client_id = ?", clientID))
	return c, t.interpret(err)
}

// OAuthClientUpdate implements store.OAuthTx. The secret, kind, client_id
// and the use and revocation times are not a document's to change.
func (t *Tx) OAuthClientUpdate(ctx context.Context, c *continuo.OAuthClient) error {
	uris, err := redirectJSON(c.RedirectURIs)
	if err != nil {
		return err
	}
	return t.execOne(ctx, store.ErrNotFound, `UPDATE oauth_clients SET name = ?, redirect_uris = ?, auth_method = ?, scopes = ?,
		metadata = ?, fetched_at = ?, refresh_at = ? WHERE id = ?`,
		c.Name, uris, c.AuthMethod, joinScopes(c.Scopes), c.Metadata, msPtr(c.FetchedAt), msPtr(c.RefreshAt), c.ID)
}

// OAuthClientUse implements store.OAuthTx. A client already used keeps its
// first time, and the row is not written again: concurrent authorizations
// of one client do not collide on it.
func (t *Tx) OAuthClientUse(ctx context.Context, id string, at time.Time) error {
	return t.useOnce(ctx, "oauth_clients", id, nil, "UPDATE oauth_clients SET used_at = ? WHERE id = ? AND used_at IS NULL", ms(at), id)
}

// OAuthClientRevoke implements store.OAuthTx.
func (t *Tx) OAuthClientRevoke(ctx context.Context, id string, at time.Time) error {
	return t.execOne(ctx, store.ErrNotFound, "UPDATE oauth_clients SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?", ms(at), id)
}

// OAuthClientList implements store.OAuthTx.
func (t *Tx) OAuthClientList(ctx context.Context) ([]continuo.OAuthClient, error) {
	return list(t, ctx, scanOAuthClient, "SELECT "+oauthClientCols+" FROM oauth_clients ORDER BY id")
}

// OAuthClientCountUnused implements store.OAuthTx.
func (t *Tx) OAuthClientCountUnused(ctx context.Context) (int, error) {
	var n int
	err := t.row(ctx, `SELECT count(*) FROM oauth_clients
		WHERE kind = 'registered' AND used_at IS NULL AND revoked_at IS NULL`).Scan(&n)
	return n, t.interpret(err)
}

// prunable selects the registered clients OAuthClientPruneUnused deletes:
// created before its one argument, never used, with no grant and no used
// code (revoked or not).
const prunable = `SELECT c.id FROM oauth_clients c
	WHERE c.kind = 'registered' AND c.used_at IS NULL AND c.created_at < ?
	AND NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.client_id = c.id)
	AND NOT EXISTS (SELECT 1 FROM oauth_codes k WHERE k.client_id = c.id AND k.used_at IS NOT NULL)`

// OAuthClientPruneUnused implements store.OAuthTx. A prunable client's
// codes are all unused (an authorization started and never finished):
// they go first, so that no code is left naming a deleted client.
func (t *Tx) OAuthClientPruneUnused(ctx context.Context, before time.Time) (int, error) {
	if _, err := t.exec(ctx, "DELETE FROM oauth_codes WHERE client_id IN ("+prunable+")", ms(before)); err != nil {
		return 0, err
	}
	res, err := t.exec(ctx, "DELETE FROM oauth_clients WHERE id IN ("+prunable+")", ms(before))
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

const oauthCodeCols = `id, hash, client_id, principal_id, scopes, redirect_uri, code_challenge, resource,
	created_at, expires_at, used_at, grant_id`

func scanOAuthCode(s scanner) (*continuo.OAuthCode, error) {
	var c continuo.OAuthCode
	var scopes string
	var at, exp int64
	var used sql.NullInt64
	var grant sql.NullString
	if err := s.Scan(&c.ID, &c.Hash, &c.ClientID, &c.PrincipalID, &scopes, &c.RedirectURI, &c.CodeChallenge, &c.Resource,
		&at, &exp, &used, &grant); err != nil {
		return nil, err
	}
	c.Scopes, c.GrantID = splitScopes(scopes), grant.String
	c.CreatedAt, c.ExpiresAt, c.UsedAt = fromMS(at), fromMS(exp), fromNullMS(used)
	return &c, nil
}

// OAuthCodeCreate implements store.OAuthTx.
func (t *Tx) OAuthCodeCreate(ctx context.Context, c *continuo.OAuthCode) error {
	_, err := t.exec(ctx, "INSERT INTO oauth_codes ("+oauthCodeCols+") VALUES ("+Placeholders(12)+")",
		c.ID, c.Hash, c.ClientID, c.PrincipalID, joinScopes(c.Scopes), c.RedirectURI, c.CodeChallenge, c.Resource,
		ms(c.CreatedAt), ms(c.ExpiresAt), msPtr(c.UsedAt), nullString(c.GrantID))
	return err
}

// OAuthCodeGetByHash implements store.OAuthTx.
func (t *Tx) OAuthCodeGetByHash(ctx context.Context, hash string) (*continuo.OAuthCode, error) {
	c, err := scanOAuthCode(t.row(ctx, "SELECT "+oauthCodeCols+" FROM oauth_codes WHERE hash = ?", hash))
	return c, t.interpret(err)
}

// OAuthCodeUse implements store.OAuthTx. grantID names an existing grant
// (a foreign key): create the grant first, in the same Write.
func (t *Tx) OAuthCodeUse(ctx context.Context, id, grantID string, at time.Time) error {
	return t.useOnce(ctx, "oauth_codes", id, store.ErrStale,
		"UPDATE oauth_codes SET used_at = ?, grant_id = ? WHERE id = ? AND used_at IS NULL", ms(at), grantID, id)
}

const oauthGrantCols = "id, client_id, principal_id, scopes, resource, created_at, revoked_at"

func scanOAuthGrant(s scanner) (*continuo.OAuthGrant, error) {
	var g continuo.OAuthGrant
	var scopes string
	var at int64
	var revoked sql.NullInt64
	if err := s.Scan(&g.ID, &g.ClientID, &g.PrincipalID, &scopes, &g.Resource, &at, &revoked); err != nil {
		return nil, err
	}
	g.Scopes, g.CreatedAt, g.RevokedAt = splitScopes(scopes), fromMS(at), fromNullMS(revoked)
	return &g, nil
}

// OAuthGrantCreate implements store.OAuthTx.
func (t *Tx) OAuthGrantCreate(ctx context.Context, g *continuo.OAuthGrant) error {
	_, err := t.exec(ctx, "INSERT INTO oauth_grants ("+oauthGrantCols+") VALUES ("+Placeholders(7)+")",
		g.ID, g.ClientID, g.PrincipalID, joinScopes(g.Scopes), g.Resource, ms(g.CreatedAt), msPtr(g.RevokedAt))
	return err
}

// OAuthGrantGet implements store.OAuthTx.
func (t *Tx) OAuthGrantGet(ctx context.Context, id string) (*continuo.OAuthGrant, error) {
	g, err := scanOAuthGrant(t.row(ctx, "SELECT "+oauthGrantCols+" FROM oauth_grants WHERE id = ?", id))
	return g, t.interpret(err)
}

// OAuthGrantRevoke implements store.OAuthTx.
func (t *Tx) OAuthGrantRevoke(ctx context.Context, id string, at time.Time) error {
	return t.execOne(ctx, store.ErrNotFound, "UPDATE oauth_grants SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?", ms(at), id)
}

// OAuthGrantRevokeClient implements store.OAuthTx. A client with no
// grants, or an unknown one, is 0 and no error.
func (t *Tx) OAuthGrantRevokeClient(ctx context.Context, clientID string, at time.Time) (int, error) {
	res, err := t.exec(ctx, "UPDATE oauth_grants SET revoked_at = ? WHERE client_id = ? AND revoked_at IS NULL", ms(at), clientID)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// OAuthGrantList implements store.OAuthTx.
func (t *Tx) OAuthGrantList(ctx context.Context) ([]continuo.OAuthGrant, error) {
	return list(t, ctx, scanOAuthGrant, "SELECT "+oauthGrantCols+" FROM oauth_grants ORDER BY id")
}

const oauthTokenCols = "id, hash, grant_id, kind, created_at, expires_at, used_at, revoked_at, scopes"

func scanOAuthToken(s scanner) (*continuo.OAuthToken, error) {
	var k continuo.OAuthToken
	var kind, scopes string
	var at, exp int64
	var used, revoked sql.NullInt64
	if err := s.Scan(&k.ID, &k.Hash, &k.GrantID, &kind, &at, &exp, &used, &revoked, &scopes); err != nil {
		return nil, err
	}
	k.Kind, k.Scopes = continuo.TokenKind(kind), splitScopes(scopes)
	k.CreatedAt, k.ExpiresAt, k.UsedAt, k.RevokedAt = fromMS(at), fromMS(exp), fromNullMS(used), fromNullMS(revoked)
	return &k, nil
}

// OAuthTokenCreate implements store.OAuthTx.
func (t *Tx) OAuthTokenCreate(ctx context.Context, k *continuo.OAuthToken) error {
	_, err := t.exec(ctx, "INSERT INTO oauth_tokens ("+oauthTokenCols+") VALUES ("+Placeholders(9)+")",
		k.ID, k.Hash, k.GrantID, string(k.Kind), ms(k.CreatedAt), ms(k.ExpiresAt), msPtr(k.UsedAt), msPtr(k.RevokedAt), joinScopes(k.Scopes))
	return err
}

// OAuthTokenGetByHash implements store.OAuthTx.
func (t *Tx) OAuthTokenGetByHash(ctx context.Context, hash string) (*continuo.OAuthToken, error) {
	k, err := scanOAuthToken(t.row(ctx, "SELECT "+oauthTokenCols+" FROM oauth_tokens WHERE hash = ?", hash))
	return k, t.interpret(err)
}

// OAuthTokenUse implements store.OAuthTx. Only used_at is guarded: a
// revoked or expired token is the service's to refuse, before it calls this.
func (t *Tx) OAuthTokenUse(ctx context.Context, id string, at time.Time) error {
	return t.useOnce(ctx, "oauth_tokens", id, store.ErrStale,
		"UPDATE oauth_tokens SET used_at = ? WHERE id = ? AND used_at IS NULL", ms(at), id)
}

// OAuthTokenRevoke implements store.OAuthTx.
func (t *Tx) OAuthTokenRevoke(ctx context.Context, id string, at time.Time) error {
	return t.execOne(ctx, store.ErrNotFound, "UPDATE oauth_tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?", ms(at), id)
}
