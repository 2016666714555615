// Package sqlite is Continuo's embedded store: one SQLite file in WAL mode,
// driven by modernc.org/sqlite (no cgo).
//
// Writes go through one connection owned by one goroutine. Concurrent Write
// calls that arrive while a commit is in flight are gathered into the next
// transaction (group commit): each runs inside its own SAVEPOINT, so a
// failing one is rolled back alone, and all of them are acknowledged after a
// single COMMIT. With synchronous=FULL that COMMIT is durable when it returns,
// so an acknowledged write survives kill -9 and power loss, and the cost of
// the fsync is shared by every write in the batch.
//
// Reads use a separate pool of read-only connections; in WAL mode a reader
// sees a consistent snapshot and never waits for the writer.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/sqlstore"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Options tunes a DB. The zero value is ready to use.
type Options struct {
	// Readers is the size of the read pool; 0 means 8.
	Readers int
	// MaxBatch bounds how many writes share one commit; 0 means 256.
	MaxBatch int
	// OnCommit, when set, is called after every commit with its duration and
	// the number of writes it carried (for metrics).
	OnCommit func(d time.Duration, writes int)
	// Migrate says what Open may do to the schema: migrate an empty
	// database (the default) or every pending step.
	Migrate store.MigrateMode
	// Existing opens only a database that exists and has a schema: a
	// missing file, or one without Continuo's tables, is
	// store.ErrNoDatabase and is left as it was.
	Existing bool
}

// DB is a SQLite-backed store.Store.
type DB struct {
	path     string
	writer   *sql.DB
	conn     *sql.Conn // the one writer connection
	readers  *sql.DB
	opts     Options
	writes   chan *writeReq
	wstmts   map[string]*sql.Stmt // writer statements; writer goroutine only
	rstmts   sync.Map             // query → *sql.Stmt on the read pool
	nrstmts  atomic.Int64
	stop     chan struct{}
	stopped  chan struct{}
	closeMu  sync.Once
	closeErr error
	hub      store.Hub  // notifications: in-process only
	files    []openFile // the files the open handles use
}

// openFile is a file as it was when the database was opened.
type openFile struct {
	path string
	info os.FileInfo
}

type writeReq struct {
	ctx   context.Context
	fn    func(store.Tx) error
	done  chan error
	notes []store.Note // sent by fn, delivered if it commits
}

// queue is the Notifier of one write request.
func (r *writeReq) queue(_ context.Context, _ sqlstore.Querier, channel, payload string) error {
	r.notes = append(r.notes, store.Note{Channel: channel, Payload: payload})
	return nil
}

var errClosed = errors.New("sqlite: store is closed")

// dsn builds a modernc.org/sqlite DSN. synchronous=FULL makes every commit
// durable before it returns, which is what an acknowledgement promises.
func dsn(path string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(FULL)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		// The writer's savepoints (one per write of a batch, and
		// store.Tx.Part) journal the pages they change in a sub-journal,
		// which SQLite spills to a temporary file past 64 KiB: with a batch
		// of writes that was a pwrite per page, a tenth of the server's CPU
		// per swarm task. In memory it lives as long as one batch.
		q.Add("_pragma", "temp_store(MEMORY)")
	}
	return "file:" + path + "?" + q.Encode()
}

// Open opens (creating if needed) the database file at path and applies all
// pending migrations.
func Open(ctx context.Context, path string, opts *Options) (*DB, error) {
	if opts == nil {
		opts = &Options{}
	}
	o := *opts
	if o.Readers <= 0 {
		o.Readers = 8
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 256
	}
	if o.Existing {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s does not exist", store.ErrNoDatabase, path)
		}
	} else if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create database directory: %w", err)
	} else if err := createPrivate(path); err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	writer, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	writer.SetMaxOpenConns(1)
	conn, err := writer.Conn(ctx)
	if err != nil {
		writer.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db := &DB{path: path, writer: writer, conn: conn, opts: o,
		writes: make(chan *writeReq, o.MaxBatch), wstmts: map[string]*sql.Stmt{}, stop: make(chan struct{}), stopped: make(chan struct{})}
	if err := db.checkPragmas(ctx); err != nil {
		db.closeHandles()
		return nil, err
	}
	if err := migrate(ctx, conn, o.Migrate, o.Existing); err != nil {
		db.closeHandles()
		return nil, err
	}
	if err := backfill(ctx, conn); err != nil {
		db.closeHandles()
		return nil, err
	}
	// The database file and its write-ahead log exist now (the migration
	// check read through them), and stay while a connection is open.
	for _, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		if err != nil {
			db.closeHandles()
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		db.files = append(db.files, openFile{path: p, info: fi})
	}
	db.readers, err = sql.Open("sqlite", dsn(path, true))
	if err != nil {
		db.closeHandles()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.readers.SetMaxOpenConns(o.Readers)
	db.readers.SetMaxIdleConns(o.Readers)
	go db.writeLoop()
	return db, nil
}

// createPrivate creates the database file, empty, with mode 0600, when it
// does not exist yet. SQLite would create it 0644 (less the umask), and it
// creates the -wal and -shm with the database file's mode: made here, all
// three are their owner's alone from their first byte (token hashes,
// sessions, notes). The mode is set again after the create, so that no
// umask decides it. An existing file is left as it is.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// checkPragmas verifies that the settings durability depends on took effect.
func (db *DB) checkPragmas(ctx context.Context) error {
	var mode string
	if err := db.conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("read journal_mode: %w", err)
	}
	var sync int
	if err := db.conn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
		return fmt.Errorf("read synchronous: %w", err)
	}
	if mode != "wal" || sync != 2 {
		return fmt.Errorf("sqlite: want journal_mode=wal synchronous=FULL, got %s %d", mode, sync)
	}
	return nil
}

// Path returns the database file path.
func (db *DB) Path() string { return db.path }

// Read implements store.Store.
func (db *DB) Read(ctx context.Context, fn func(store.Tx) error) error {
	t, err := db.readers.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin read: %w", err)
	}
	var missed []string
	err = fn(sqlstore.NewRead(readerQ{db: db, tx: t, missed: &missed}, dialect{}))
	_ = t.Rollback() // a read has nothing to keep
	if len(missed) > 0 {
		db.prepareReads(ctx, missed)
	}
	return err
}

// Write implements store.Store. It waits for the outcome even if ctx ends
// meanwhile: a write that was started is either committed or not, and the
// caller must learn which.
func (db *DB) Write(ctx context.Context, fn func(store.Tx) error) error {
	select {
	case <-db.stop:
		return errClosed // select below picks at random among ready cases
	default:
	}
	r := &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case db.writes <- r:
	case <-ctx.Done():
		return ctx.Err()
	case <-db.stop:
		return errClosed
	}
	select {
	case err := <-r.done:
		return err
	case <-db.stopped:
		// The writer answers every request it takes before it exits, so an
		// answer, if any, is already in r.done; otherwise r was queued after
		// the writer stopped and never ran.
		select {
		case err := <-r.done:
			return err
		default:
			return errClosed
		}
	}
}

func (db *DB) writeLoop() {
	defer close(db.stopped)
	batch := make([]*writeReq, 0, db.opts.MaxBatch)
	for {
		select {
		case r := <-db.writes:
			batch = append(batch[:0], r)
		case <-db.stop:
			db.failPending()
			return
		}
	drain:
		for len(batch) < db.opts.MaxBatch {
			select {
			case r := <-db.writes:
				batch = append(batch, r)
			default:
				break drain
			}
		}
		db.commit(batch)
	}
}

// failPending answers writes still queued at Close.
func (db *DB) failPending() {
	for {
		select {
		case r := <-db.writes:
			r.done <- errClosed
		default:
			return
		}
	}
}

// commit runs one batch in one transaction and answers every request.
func (db *DB) commit(batch []*writeReq) {
	ctx := context.Background() // the batch outlives any one request
	results := make([]error, len(batch))
	start := time.Now()
	if _, err := db.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		db.abort(ctx, batch, fmt.Errorf("begin write: %w", err))
		return
	}
	// A batch of one needs no savepoint: if it fails, the whole transaction
	// is rolled back. That is the common case under light load, and it saves
	// two statements per write.
	alone := len(batch) == 1
	kept := 0
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			results[i] = err
			continue
		}
		wtx := sqlstore.NewWrite(writerQ{db}, dialect{}, r.queue)
		if alone {
			if results[i] = call(r.fn, wtx); results[i] == nil {
				kept++
			} else {
				r.notes = nil
			}
			continue
		}
		if _, err := db.conn.ExecContext(ctx, "SAVEPOINT w"); err != nil {
			db.abort(ctx, batch, fmt.Errorf("savepoint: %w", err))
			return
		}
		err := call(r.fn, wtx)
		if err != nil {
			r.notes = nil
			if _, rerr := db.conn.ExecContext(ctx, "ROLLBACK TO w"); rerr != nil {
				db.abort(ctx, batch, fmt.Errorf("rollback to savepoint: %w", rerr))
				return
			}
		} else {
			kept++
		}
		if _, rerr := db.conn.ExecContext(ctx, "RELEASE w"); rerr != nil {
			db.abort(ctx, batch, fmt.Errorf("release savepoint: %w", rerr))
			return
		}
		results[i] = err
	}
	if kept == 0 {
		db.rollback(ctx)
	} else if err := db.checkFiles(); err != nil {
		// Committing into a deleted file would acknowledge writes that
		// vanish at the next start.
		db.abort(ctx, batch, err)
		return
	} else if _, err := db.conn.ExecContext(ctx, "COMMIT"); err != nil {
		db.abort(ctx, batch, fmt.Errorf("commit: %w", err))
		return
	}
	if db.opts.OnCommit != nil && kept > 0 {
		db.opts.OnCommit(time.Since(start), kept)
	}
	for i, r := range batch {
		for _, n := range r.notes {
			db.hub.Publish(n.Channel, n.Payload)
		}
		r.done <- results[i]
	}
}

// Listen implements store.Store. Notifications cross only this process:
// another process writing the same file (a CLI command, a stdio server)
// wakes nobody here, which the listeners' fallback poll covers.
func (db *DB) Listen(ctx context.Context, channel string) (<-chan string, error) {
	return db.hub.Listen(ctx, channel)
}

// abort rolls the whole batch back and fails every request in it: after a
// failed begin, savepoint or commit, nothing in the batch is known to be
// kept.
func (db *DB) abort(ctx context.Context, batch []*writeReq, err error) {
	db.rollback(ctx)
	for _, r := range batch {
		r.done <- err
	}
}

func (db *DB) rollback(ctx context.Context) {
	// The error is ignored on purpose: SQLite may already have rolled the
	// transaction back itself (e.g. on SQLITE_FULL), and then ROLLBACK fails
	// with "no transaction is active", which leaves us where we want to be.
	_, _ = db.conn.ExecContext(ctx, "ROLLBACK")
}

// maxStmts bounds each statement cache. Queries are fixed strings (filters
// vary only the number of placeholders, within argument bounds), so the
// caches stay far below it; past it, statements are simply not cached.
const maxStmts = 512

// writerQ runs statements on the writer connection, each prepared once and
// kept: preparing (parsing SQL) was a third of the write path's CPU.
// Only the writer goroutine uses it, so the cache needs no lock.
//
// Statements run without the caller's cancellation. The request's context
// is checked before its function runs; once it runs, cancelling it must not
// interrupt a statement, because SQLite would then roll back the whole
// shared transaction and fail every other write in the batch.
type writerQ struct{ db *DB }

func (w writerQ) stmt(q string) *sql.Stmt {
	if st, ok := w.db.wstmts[q]; ok {
		return st
	}
	st, err := w.db.conn.PrepareContext(context.Background(), q)
	if err != nil || len(w.db.wstmts) >= maxStmts {
		if st != nil {
			st.Close()
		}
		return nil // run unprepared; a bad query reports its error there
	}
	w.db.wstmts[q] = st
	return st
}

func (w writerQ) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	ctx = context.WithoutCancel(ctx)
	if st := w.stmt(q); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return w.db.conn.ExecContext(ctx, q, args...)
}

func (w writerQ) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	ctx = context.WithoutCancel(ctx)
	if st := w.stmt(q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return w.db.conn.QueryContext(ctx, q, args...)
}

func (w writerQ) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	ctx = context.WithoutCancel(ctx)
	if st := w.stmt(q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return w.db.conn.QueryRowContext(ctx, q, args...)
}

// readerQ runs statements in a read transaction. Statements are prepared
// once on the read pool; database/sql then prepares each on a connection
// the first time it runs there and reuses it after.
//
// A statement missing from the cache runs unprepared and is prepared after
// the transaction has given its connection back (Read does that): preparing
// on the pool needs a free connection, and a transaction waiting for one
// while holding its own could deadlock the pool when every connection is
// held by such a transaction.
type readerQ struct {
	db     *DB
	tx     *sql.Tx
	missed *[]string
}

func (r readerQ) stmt(ctx context.Context, q string) *sql.Stmt {
	if st, ok := r.db.rstmts.Load(q); ok {
		return r.tx.StmtContext(ctx, st.(*sql.Stmt))
	}
	*r.missed = append(*r.missed, q)
	return nil
}

// prepareReads caches the statements a read transaction missed.
func (db *DB) prepareReads(ctx context.Context, queries []string) {
	for _, q := range queries {
		if _, ok := db.rstmts.Load(q); ok || db.nrstmts.Load() >= maxStmts {
			continue
		}
		st, err := db.readers.PrepareContext(ctx, q)
		if err != nil {
			continue // the query reports its own error when it runs
		}
		if _, loaded := db.rstmts.LoadOrStore(q, st); loaded {
			st.Close()
		} else {
			db.nrstmts.Add(1)
		}
	}
}

func (r readerQ) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return r.tx.ExecContext(ctx, q, args...)
}

func (r readerQ) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := r.stmt(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return r.tx.QueryContext(ctx, q, args...)
}

func (r readerQ) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if st := r.stmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return r.tx.QueryRowContext(ctx, q, args...)
}

// call runs fn and turns a panic into an error, so that one bad write cannot
// take down the writer goroutine (and with it every other writer).
func call(fn func(store.Tx) error, t store.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("write panicked: %v", p)
		}
	}()
	return fn(t)
}

// ErrFileGone is returned by Ping, and by every Write, once the database
// file or its write-ahead log was deleted or replaced while the database
// was open: the open handles still work, on a file nobody will find again.
var ErrFileGone = errors.New("sqlite: the database file was deleted or replaced while open")

// checkFiles compares what the database's paths name now with the files
// that were opened.
func (db *DB) checkFiles() error {
	for _, f := range db.files {
		fi, err := os.Stat(f.path)
		if err != nil || !os.SameFile(fi, f.info) {
			return fmt.Errorf("%w: %s (restart continuo to see what is there now)", ErrFileGone, f.path)
		}
	}
	return nil
}

// Ping implements store.Store: the database answers, and its files are
// the ones it opened.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.checkFiles(); err != nil {
		return err
	}
	return db.Read(ctx, func(t store.Tx) error {
		_, err := t.MetaGet(ctx, "schema_version")
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	})
}

// Close stops the writer (answering queued writes with an error) and closes
// the database.
func (db *DB) Close() error {
	db.closeMu.Do(func() {
		close(db.stop)
		<-db.stopped
		db.closeErr = db.closeHandles()
	})
	return db.closeErr
}

func (db *DB) closeHandles() error {
	var errs []error
	for _, st := range db.wstmts {
		errs = append(errs, st.Close())
	}
	db.rstmts.Range(func(_, st any) bool {
		errs = append(errs, st.(*sql.Stmt).Close())
		return true
	})
	if db.readers != nil {
		errs = append(errs, db.readers.Close())
	}
	errs = append(errs, db.conn.Close(), db.writer.Close())
	return errors.Join(errs...)
}
