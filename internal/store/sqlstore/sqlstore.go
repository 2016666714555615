// Package sqlstore implements store.Tx once, in SQL that SQLite and
// PostgreSQL both accept, over database/sql. A driver supplies the
// connection or transaction to run on and a Dialect for what differs:
// placeholders, error codes, table introspection and notifications.
// Writing the queries once means the two engines cannot drift apart.
//
// Queries are written with ? placeholders; Dialect.Rebind turns them into
// the driver's form. Values are portable: times are unix milliseconds
// (bigint), booleans are integers 0/1, lists and maps are JSON text.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/continuo-dev/continuo/internal/store"
)

// Querier is what a transaction or a connection offers.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Dialect is what differs between engines.
type Dialect interface {
	// Rebind rewrites a query written with ? placeholders.
	Rebind(query string) string
	// Interpret maps a driver error onto the store's sentinels
	// (store.ErrConflict for unique violations, joined with the original).
	Interpret(err error) error
	// Columns returns a table's columns in declaration order and its
	// primary-key columns in key order.
	Columns(ctx context.Context, q Querier, table string) (cols, pk []string, err error)
	// TextMatch is the predicate that keeps the rows of messages (as m)
	// whose search_text holds every word of the query, through the text
	// index; its one ? takes MatchQuery of the words.
	TextMatch() string
	// MatchQuery turns a query's words (store.SearchWords: lower-case
	// letters and digits only) into the argument of TextMatch.
	MatchQuery(words []string) string
	// SkipLocked is the locking clause that ends a sub-SELECT choosing one
	// row to update, so that concurrent writers each take a different row
	// rather than queue behind the first: FOR UPDATE SKIP LOCKED where rows
	// are locked, empty where the single writer orders every update.
	SkipLocked() string
}

// Notifier queues or sends a notification inside a write transaction, to be
// delivered when it commits.
type Notifier func(ctx context.Context, q Querier, channel, payload string) error

// Tx implements store.Tx.
type Tx struct {
	q      Querier
	d      Dialect
	write  bool
	notify Notifier
}

var _ store.Tx = (*Tx)(nil)

// NewRead returns a read-only Tx running on q: every write fails.
func NewRead(q Querier, d Dialect) *Tx { return &Tx{q: q, d: d} }

// NewWrite returns a Tx running on q that may write, sending notifications
// through notify.
func NewWrite(q Querier, d Dialect, notify Notifier) *Tx {
	return &Tx{q: q, d: d, write: true, notify: notify}
}

// ErrReadOnly is returned by a write inside a read transaction.
var ErrReadOnly = errors.New("store: write inside a read transaction")

func (t *Tx) interpret(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	return t.d.Interpret(err)
}

func (t *Tx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if !t.write {
		return nil, ErrReadOnly
	}
	res, err := t.q.ExecContext(ctx, t.d.Rebind(query), args...)
	return res, t.interpret(err)
}

// execOne runs an UPDATE that must touch exactly one row; none is miss.
func (t *Tx) execOne(ctx context.Context, miss error, query string, args ...any) error {
	res, err := t.exec(ctx, query, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return miss
	}
	return nil
}

func (t *Tx) row(ctx context.Context, query string, args ...any) *sql.Row {
	return t.q.QueryRowContext(ctx, t.d.Rebind(query), args...)
}

func (t *Tx) rows(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	r, err := t.q.QueryContext(ctx, t.d.Rebind(query), args...)
	return r, t.interpret(err)
}

// list runs a query and scans every row with scan.
func list[T any](t *Tx, ctx context.Context, scan func(scanner) (*T, error), query string, args ...any) ([]T, error) {
	rows, err := t.rows(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *v)
	}
	return out, t.interpret(rows.Err())
}

type scanner interface{ Scan(...any) error }

// Notify implements store.Tx.
func (t *Tx) Notify(ctx context.Context, channel, payload string) error {
	if !t.write {
		return ErrReadOnly
	}
	if err := store.CheckNotify(channel, payload); err != nil {
		return err
	}
	return t.notify(ctx, t.q, channel, payload)
}

// Part implements store.Tx with a savepoint; the same statements work on
// both engines, and nest inside the SQLite writer's savepoint per write.
func (t *Tx) Part(ctx context.Context, fn func() error) (failed, err error) {
	if _, err := t.exec(ctx, "SAVEPOINT part"); err != nil {
		return nil, err
	}
	if failed = fn(); failed != nil {
		if _, err := t.exec(ctx, "ROLLBACK TO SAVEPOINT part"); err != nil {
			return failed, err
		}
	}
	_, err = t.exec(ctx, "RELEASE SAVEPOINT part")
	return failed, err
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

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// Placeholders returns "?, ?, ?" for n arguments.
func Placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// Numbered rewrites ? placeholders as $1, $2, … (PostgreSQL), caching each
// query's rewrite. Queries are fixed strings in this package (filters vary
// only the number of placeholders, within argument bounds), so the cache
// stays small. No query here has a ? inside a string literal.
type Numbered struct{ cache sync.Map }

// Rebind implements Dialect.Rebind.
func (n *Numbered) Rebind(q string) string {
	if v, ok := n.cache.Load(q); ok {
		return v.(string)
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	i := 0
	for _, r := range q {
		if r == '?' {
			i++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(i))
			continue
		}
		b.WriteRune(r)
	}
	out := b.String()
	n.cache.Store(q, out)
	return out
}
