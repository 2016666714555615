package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"time"

	"github.com/continuo-dev/continuo"
	_ "modernc.org/sqlite"
)

// writerDSN is the DSN of the server's writer connection
// (internal/store/sqlite/sqlite.go, dsn with readOnly=false): the same
// pragmas in the same order.
func writerDSN(path string) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "journal_mode(WAL)")
	return "file:" + path + "?" + q.Encode()
}

// rawResult is one run of the raw SQLite baseline.
type rawResult struct {
	Commits int
	Elapsed time.Duration
	Lat     []time.Duration
}

// rawDB is the baseline: a fresh SQLite file opened with the server's
// writer pragmas, written one single-row INSERT per transaction.
type rawDB struct {
	db      *sql.DB
	conn    *sql.Conn
	session string
	seq     int64
}

func openRaw(path string) (*rawDB, error) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", writerDSN(path))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	r := &rawDB{db: db, conn: conn, session: continuo.NewID(continuo.PrefixSession, time.Now())}
	var mode string
	var syncMode int
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		r.close()
		return nil, err
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&syncMode); err != nil {
		r.close()
		return nil, err
	}
	if mode != "wal" || syncMode != 2 {
		r.close()
		return nil, fmt.Errorf("baseline: want journal_mode=wal synchronous=FULL(2), got %s %d", mode, syncMode)
	}
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS messages (
		id         TEXT PRIMARY KEY,
		session_id TEXT NOT NULL,
		seq        INTEGER NOT NULL,
		text       TEXT NOT NULL) STRICT`); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

func (r *rawDB) close() {
	r.conn.Close()
	r.db.Close()
}

// run commits single-row transactions (BEGIN IMMEDIATE; INSERT; COMMIT,
// as the server's writer does) for d.
func (r *rawDB) run(d time.Duration) (rawResult, error) {
	ctx := context.Background()
	res := rawResult{Lat: make([]time.Duration, 0, 4096)}
	start := time.Now()
	deadline := start.Add(d)
	for time.Now().Before(deadline) {
		t0 := time.Now()
		r.seq++
		if _, err := r.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			return res, err
		}
		if _, err := r.conn.ExecContext(ctx, "INSERT INTO messages (id, session_id, seq, text) VALUES (?, ?, ?, ?)",
			continuo.NewID(continuo.PrefixMessage, t0), r.session, r.seq, messageText(int(r.seq), 0)); err != nil {
			_, _ = r.conn.ExecContext(ctx, "ROLLBACK")
			return res, err
		}
		if _, err := r.conn.ExecContext(ctx, "COMMIT"); err != nil {
			return res, err
		}
		res.Lat = append(res.Lat, time.Since(t0))
		res.Commits++
	}
	res.Elapsed = time.Since(start)
	return res, nil
}
