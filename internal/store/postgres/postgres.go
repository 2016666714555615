// Package postgres is Continuo's scale-out store: PostgreSQL through pgx/v5
// (pgxpool), shared by several `continuo serve` replicas.
//
// Every Write is a REPEATABLE READ (snapshot) transaction. Two that update
// the same row cannot both commit: the second gets a serialization failure
// (SQLSTATE 40001, or a deadlock, 40P01), is rolled back and its function
// run again, a bounded number of times with jittered exponential back-off,
// as store's Write contract allows. With the guard-row rule of that
// contract (a Write updates its aggregate's row first), that is what the
// conformance suite pins — no lost update, one winner of every race —
// across processes without a single writer, and without the false
// conflicts of SERIALIZABLE's predicate locks (measured: 2–3 retries per
// post across 16 sessions, none with snapshot isolation; docs/DECISIONS.md). A commit whose outcome is not
// known (the connection broke while COMMIT was in flight) is reported as
// store.ErrAmbiguous, never as success or plain failure.
//
// Reads are REPEATABLE READ, READ ONLY transactions: one snapshot, never
// waiting for writers. Notifications go through LISTEN/NOTIFY on one channel
// per schema, sent inside the committing transaction (PostgreSQL delivers
// them on commit, to every replica) and fanned out in-process by a
// store.Hub.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/sqlstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// Options tunes a DB. The zero value is ready to use.
type Options struct {
	// Migrate says what Open may do to the schema: migrate an empty
	// database (the default) or every pending step.
	Migrate store.MigrateMode
	// Existing opens only a database that has Continuo's schema: an empty
	// one is store.ErrNoDatabase and is left as it was.
	Existing bool
	// MaxAttempts bounds how often a Write's function runs when it keeps
	// losing serialization races; 0 means 64.
	MaxAttempts int
	// OnCommit, when set, is called after every commit with its duration
	// (for metrics; one commit carries one write).
	OnCommit func(d time.Duration, writes int)
	// Tracer, when set, sees every statement the pool's connections run
	// (a test's way to count statements and round trips).
	Tracer pgx.QueryTracer
}

// DB is a PostgreSQL-backed store.Store.
type DB struct {
	pool    *pgxpool.Pool
	db      *sql.DB
	d       *dialect
	opts    Options
	channel string // the LISTEN/NOTIFY channel of this schema

	hub     store.Hub
	mu      sync.Mutex // guards listening, stop, stopped
	closed  bool
	stop    context.CancelFunc
	stopped chan struct{} // closed when the listener has ended
}

// DefaultMaxConns is the pool size unless the URL sets pool_max_conns.
const DefaultMaxConns = 16

// Open connects to the database at url (postgres://…), checks that commits
// are durable, and migrates as opts allow.
func Open(ctx context.Context, url string, opts *Options) (*DB, error) {
	if opts == nil {
		opts = &Options{}
	}
	o := *opts
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 64
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, errors.New("postgres: malformed database URL") // its error may quote the password
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns
	}
	// An acknowledgement means COMMIT returned after the WAL reached disk:
	// ask for that on every connection, whatever the server's default.
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	if o.Tracer != nil {
		cfg.ConnConfig.Tracer = o.Tracer
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	db := &DB{pool: pool, db: stdlib.OpenDBFromPool(pool), d: &dialect{}, opts: o}
	if err := db.init(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func (db *DB) init(ctx context.Context) error {
	var fsync, schema string
	if err := db.pool.QueryRow(ctx, "SELECT current_setting('fsync'), current_schema()").Scan(&fsync, &schema); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if fsync != "on" {
		return errors.New("postgres: the server runs with fsync=off, so a committed write may not survive a crash; Continuo refuses to acknowledge writes it cannot keep")
	}
	db.channel = "continuo"
	if schema != "public" {
		db.channel = "continuo_" + schema
	}
	if err := migrate(ctx, db.pool, db.opts.Migrate, db.opts.Existing); err != nil {
		return err
	}
	return db.backfill(ctx)
}

// backfill indexes the rows written before migration 0002
// (sqlstore.Backfill), one transaction per batch.
func (db *DB) backfill(ctx context.Context) error {
	for {
		tx, err := db.db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("postgres: index search text: %w", err)
		}
		n, err := sqlstore.Backfill(ctx, tx, db.d)
		if err == nil {
			err = tx.Commit()
		} else {
			_ = tx.Rollback()
		}
		if err != nil {
			return fmt.Errorf("postgres: index search text: %w", err)
		}
		if n == 0 {
			return nil
		}
	}
}

// Read implements store.Store.
func (db *DB) Read(ctx context.Context, fn func(store.Tx) error) error {
	tx, err := db.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("begin read: %w", err)
	}
	err = fn(sqlstore.NewRead(tx, db.d))
	_ = tx.Rollback() // a read has nothing to keep
	return err
}

// Write implements store.Store.
func (db *DB) Write(ctx context.Context, fn func(store.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := db.attempt(ctx, fn)
		if err == nil || !retryable(err) || attempt >= db.opts.MaxAttempts {
			return err
		}
		// Full jitter over an exponentially growing window (1 ms, 2 ms, …,
		// capped at 100 ms), so that many writers that collided on one row
		// spread out instead of colliding again.
		window := min(time.Millisecond<<min(attempt-1, 7), 100*time.Millisecond)
		select {
		case <-time.After(rand.N(window) + time.Microsecond):
		case <-ctx.Done():
			return err
		}
	}
}

// attempt runs fn once in one REPEATABLE READ (snapshot) transaction, or
// READ COMMITTED when ctx says so (store.ReadCommitted).
func (db *DB) attempt(ctx context.Context, fn func(store.Tx) error) (err error) {
	start := time.Now()
	iso := sql.LevelRepeatableRead
	if store.IsReadCommitted(ctx) {
		iso = sql.LevelReadCommitted
	}
	tx, err := db.db.BeginTx(ctx, &sql.TxOptions{Isolation: iso})
	if err != nil {
		return fmt.Errorf("begin write: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			err = fmt.Errorf("write panicked: %v", p)
		}
	}()
	if err := fn(sqlstore.NewWrite(tx, db.d, db.notify)); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return commitError(err)
	}
	if db.opts.OnCommit != nil {
		db.opts.OnCommit(time.Since(start), 1)
	}
	return nil
}

// commitError classifies a failed COMMIT: the server refused it (an error
// it sent, such as a serialization failure), it was never sent, or — the
// connection broke while it was in flight — its outcome is unknown.
func commitError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) || pgconn.SafeToRetry(err) || errors.Is(err, sql.ErrTxDone) {
		return fmt.Errorf("commit: %w", err) // refused: nothing was kept
	}
	return errors.Join(store.ErrAmbiguous, fmt.Errorf("commit: %w", err))
}

// notify sends a notification inside the transaction: PostgreSQL delivers
// it when the transaction commits and drops it when it rolls back.
func (db *DB) notify(ctx context.Context, q sqlstore.Querier, channel, payload string) error {
	_, err := q.ExecContext(ctx, "SELECT pg_notify($1, $2)", db.channel, channel+"\n"+payload)
	return err
}

// Listen implements store.Store. The first call starts the process's one
// LISTEN connection; it reconnects after a failure (notifications sent
// meanwhile are missed, which listeners' fallback poll covers).
func (db *DB) Listen(ctx context.Context, channel string) (<-chan string, error) {
	c, err := db.hub.Listen(ctx, channel)
	if err != nil {
		return nil, err
	}
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return nil, errors.New("postgres: store is closed")
	}
	var ready chan struct{}
	if db.stop == nil {
		lctx, cancel := context.WithCancel(context.Background())
		db.stop, db.stopped, ready = cancel, make(chan struct{}), make(chan struct{})
		go db.listen(lctx, ready)
	}
	db.mu.Unlock()
	if ready != nil {
		select { // the first LISTEN is in place before Listen returns
		case <-ready:
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
		}
	}
	return c, nil
}

func (db *DB) listen(ctx context.Context, ready chan struct{}) {
	defer close(db.stopped)
	var once sync.Once
	signal := func() { once.Do(func() { close(ready) }) }
	defer signal()
	for backoff := 50 * time.Millisecond; ctx.Err() == nil; backoff = min(2*backoff, 5*time.Second) {
		_ = db.listenConn(ctx, signal) // on failure: reconnect after a pause; the poll covers what is missed
		if ctx.Err() != nil {
			return
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
	}
}

// listenConn listens on one connection until it fails or ctx ends.
func (db *DB) listenConn(ctx context.Context, signal func()) error {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	pc := conn.Conn()
	if _, err := pc.Exec(ctx, "LISTEN "+pgx.Identifier{db.channel}.Sanitize()); err != nil {
		return err
	}
	signal()
	for {
		n, err := pc.WaitForNotification(ctx)
		if err != nil {
			// The connection may be mid-wait: never hand it back for reuse.
			_ = pc.Close(context.Background())
			return err
		}
		channel, payload, _ := strings.Cut(n.Payload, "\n")
		db.hub.Publish(channel, payload)
	}
}

// Ping implements store.Store.
func (db *DB) Ping(ctx context.Context) error { return db.pool.Ping(ctx) }

// Close implements store.Store.
func (db *DB) Close() error {
	db.mu.Lock()
	db.closed = true
	stop, stopped := db.stop, db.stopped
	db.mu.Unlock()
	if stop != nil {
		stop()
		<-stopped
	}
	err := db.db.Close()
	db.pool.Close()
	return err
}
