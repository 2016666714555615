package sqlstore

import (
	"context"

	"github.com/continuo-dev/continuo/internal/store"
)

// MetaGet implements store.MetaTx.
func (t *Tx) MetaGet(ctx context.Context, key string) (string, error) {
	var v string
	err := t.row(ctx, "SELECT value FROM meta WHERE key = ?", key).Scan(&v)
	return v, t.interpret(err)
}

// MetaSet implements store.MetaTx.
func (t *Tx) MetaSet(ctx context.Context, key, value string) error {
	_, err := t.exec(ctx, "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", key, value)
	return err
}

// IdempotencyGet implements store.IdempotencyTx.
func (t *Tx) IdempotencyGet(ctx context.Context, scope, keyHash string) (*store.Idempotency, error) {
	r := store.Idempotency{Scope: scope, KeyHash: keyHash}
	var at int64
	err := t.row(ctx, "SELECT request_hash, result_id, created_at FROM idempotency WHERE scope = ? AND key_hash = ?",
		scope, keyHash).Scan(&r.RequestHash, &r.ResultID, &at)
	if err != nil {
		return nil, t.interpret(err)
	}
	r.CreatedAt = fromMS(at)
	return &r, nil
}

// IdempotencyCreate implements store.IdempotencyTx.
func (t *Tx) IdempotencyCreate(ctx context.Context, r store.Idempotency) error {
	_, err := t.exec(ctx, "INSERT INTO idempotency (scope, key_hash, request_hash, result_id, created_at) VALUES (?, ?, ?, ?, ?)",
		r.Scope, r.KeyHash, r.RequestHash, r.ResultID, ms(r.CreatedAt))
	return err
}

// IdempotencyDelete implements store.IdempotencyTx.
func (t *Tx) IdempotencyDelete(ctx context.Context, p store.IdempotencyDeleteParams) error {
	var err error
	if p.ResultID == "" {
		_, err = t.exec(ctx, "DELETE FROM idempotency WHERE scope = ?", p.Scope)
	} else {
		_, err = t.exec(ctx, "DELETE FROM idempotency WHERE scope = ? AND result_id = ?", p.Scope, p.ResultID)
	}
	return err
}
