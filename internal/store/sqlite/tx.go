package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/continuo-dev/continuo/internal/store"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// querier is what both a read transaction and the writer connection offer.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// tx implements store.Tx over a querier.
type tx struct {
	q     querier
	write bool
}

var errReadOnly = errors.New("sqlite: write inside a read transaction")

func (t *tx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if !t.write {
		return nil, errReadOnly
	}
	res, err := t.q.ExecContext(ctx, query, args...)
	return res, interpret(err)
}

// execOne runs an UPDATE that must touch exactly one row.
func (t *tx) execOne(ctx context.Context, query string, args ...any) error {
	res, err := t.exec(ctx, query, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return store.ErrNotFound
	}
	return nil
}

// interpret maps driver errors onto the store's sentinels.
func interpret(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return errors.Join(store.ErrConflict, err)
		}
	}
	return err
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func msPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMilli()
}

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

func fromNullMS(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMS(v.Int64)
	return &t
}

// placeholders returns "?, ?, ?" for n arguments.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

func (t *tx) MetaGet(ctx context.Context, key string) (string, error) {
	var v string
	err := t.q.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = ?", key).Scan(&v)
	return v, interpret(err)
}

func (t *tx) MetaPut(ctx context.Context, key, value string) error {
	_, err := t.exec(ctx, "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", key, value)
	return err
}

func (t *tx) IdempotencyGet(ctx context.Context, scope, keyHash string) (*store.Idempotency, error) {
	r := store.Idempotency{Scope: scope, KeyHash: keyHash}
	var at int64
	err := t.q.QueryRowContext(ctx, "SELECT request_hash, result_id, created_at FROM idempotency WHERE scope = ? AND key_hash = ?",
		scope, keyHash).Scan(&r.RequestHash, &r.ResultID, &at)
	if err != nil {
		return nil, interpret(err)
	}
	r.CreatedAt = fromMS(at)
	return &r, nil
}

func (t *tx) IdempotencyPut(ctx context.Context, r store.Idempotency) error {
	_, err := t.exec(ctx, "INSERT INTO idempotency (scope, key_hash, request_hash, result_id, created_at) VALUES (?, ?, ?, ?, ?)",
		r.Scope, r.KeyHash, r.RequestHash, r.ResultID, ms(r.CreatedAt))
	return err
}
