package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/sqlite"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/store/storetest"
)

// waitLimit bounds waits for goroutines so that a hang fails with a message.
const waitLimit = 30 * time.Second

func open(t *testing.T, path string, opts *sqlite.Options) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(t.Context(), path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

// TestConformance gives each test a copy of one migrated database
// (stores.SQLiteFile): migrating thousands of fresh files is most of the
// suite's time under -race; TestMigrations and TestReopen open empty files.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, stores.SQLiteFile(t), nil)
	})
}

// rawDB opens a second, independent handle on the database file, for looking
// beneath the store.
// queryPlan returns SQLite's plan of q with args, its steps joined by
// "; ".
func queryPlan(t *testing.T, raw *sql.DB, q string, args ...any) string {
	t.Helper()
	rows, err := raw.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	return strings.Join(plan, "; ")
}

func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}

func TestPragmas(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	db := open(t, path, nil)
	storetest.Group(t, db, "alpha")

	// journal_mode=WAL is a property of the file, so another connection
	// sees it. (synchronous is a property of each connection and cannot be
	// seen from outside; Open itself refuses to return unless the writer
	// connection reports journal_mode=wal and synchronous=FULL.)
	raw := rawDB(t, path)
	var mode string
	if err := raw.QueryRowContext(t.Context(), "PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Errorf("journal_mode = %q, want wal", mode)
	}

	// foreign_keys is per connection too, but its effect shows: the
	// writer refuses a principal of an unknown group.
	ctx := t.Context()
	p := &continuo.Principal{ID: continuo.NewID(continuo.PrefixPrincipal, storetest.Base), Name: "ann",
		GroupID: continuo.NewID(continuo.PrefixGroup, storetest.Base), CreatedAt: storetest.Base}
	err := db.Write(ctx, func(tx store.Tx) error { return tx.PrincipalCreate(ctx, p) })
	if err == nil || !strings.Contains(err.Error(), "FOREIGN KEY") {
		t.Errorf("principal of an unknown group: %v, want a FOREIGN KEY error", err)
	}
	if errors.Is(err, store.ErrConflict) {
		t.Errorf("a foreign key violation is reported as ErrConflict: %v", err)
	}
}

func TestMigrations(t *testing.T) {
	ms, err := sqlite.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 {
		t.Fatal("no migrations")
	}
	for i, m := range ms {
		if m.Version != i+1 {
			t.Errorf("migration %d has version %d, want %d", i, m.Version, i+1)
		}
		if m.Name == "" || strings.TrimSpace(m.SQL) == "" {
			t.Errorf("migration %d: name %q, %d bytes of SQL; want both", m.Version, m.Name, len(m.SQL))
		}
	}
	if ms[0].Name != "init" {
		t.Errorf("first migration is %q, want init", ms[0].Name)
	}
}

func migrationRows(t *testing.T, path string) []int {
	t.Helper()
	rows, err := rawDB(t, path).QueryContext(t.Context(), "SELECT version FROM schema_migrations ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestReopen(t *testing.T) {
	ctx := t.Context()
	ms, err := sqlite.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sub", "dir", "c.db") // Open creates the directory
	db, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := storetest.Setup(t, db, "alpha")
	storetest.Message(t, db, f.Session.ID, 1, continuo.KindTodo)
	storetest.MustWrite(t, db, func(tx store.Tx) error { return tx.MetaSet(ctx, "k", "v") })
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	for round := range 2 {
		db := open(t, path, nil)
		if db.Path() != path {
			t.Errorf("Path() = %q, want %q", db.Path(), path)
		}
		var got *continuo.Session
		storetest.MustRead(t, db, func(tx store.Tx) (err error) { got, err = tx.SessionGet(ctx, f.Session.ID); return err })
		if got.Title != f.Session.Title || got.Ref != f.Session.Ref {
			t.Errorf("round %d: session after reopen = %q %d, want %q %d", round, got.Title, got.Ref, f.Session.Title, f.Session.Ref)
		}
		var v string
		storetest.MustRead(t, db, func(tx store.Tx) (err error) { v, err = tx.MetaGet(ctx, "k"); return err })
		if v != "v" {
			t.Errorf("round %d: meta k = %q, want v", round, v)
		}
		// The reference sequence continues where it was.
		s := storetest.Session(t, db, f.Group.ID, f.Project.ID, fmt.Sprintf("round %d", round))
		if want := f.Session.Ref + 1 + int64(round); s.Ref != want {
			t.Errorf("round %d: new session ref %d, want %d", round, s.Ref, want)
		}
		if err := db.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		// Migrations are recorded once: a re-run would have failed (the
		// tables exist) or added rows.
		got2 := migrationRows(t, path)
		if len(got2) != len(ms) {
			t.Fatalf("round %d: schema_migrations has %d rows (%v), want %d", round, len(got2), got2, len(ms))
		}
		for i, v := range got2 {
			if v != i+1 {
				t.Errorf("round %d: schema_migrations = %v, want 1…%d", round, got2, len(ms))
				break
			}
		}
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "c.db")
	db, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ms, _ := sqlite.Migrations()
	raw := rawDB(t, path)
	if _, err := raw.ExecContext(ctx, "INSERT INTO schema_migrations (version, name) VALUES (?, 'future')", len(ms)+1); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	db, err = sqlite.Open(ctx, path, nil)
	if err == nil {
		db.Close()
		t.Fatal("Open of a database from a newer binary succeeded, want an error")
	}
	if !strings.Contains(err.Error(), "newer") {
		t.Errorf("Open of a newer database: %v, want an error saying it is newer", err)
	}
}

// TestCloseRejectsWrites: after Close, Write and Read answer with an error
// at once, and never run the function.
func TestCloseRejectsWrites(t *testing.T) {
	ctx := t.Context()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	storetest.Group(t, db, "alpha")
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	var ran atomic.Int64
	const n = 100
	done := make(chan error, n)
	for range n {
		go func() {
			done <- db.Write(ctx, func(tx store.Tx) error { ran.Add(1); return nil })
		}()
	}
	timeout := time.After(waitLimit)
	for i := range n {
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("Write after Close returned nil")
			}
		case <-timeout:
			t.Fatalf("only %d of %d Writes after Close returned: the rest hang", i, n)
		}
	}
	if ran.Load() != 0 {
		t.Errorf("%d Write functions ran after Close", ran.Load())
	}
	if err := db.Read(ctx, func(tx store.Tx) error { return nil }); err == nil {
		t.Error("Read after Close returned nil")
	}
	if err := db.Ping(ctx); err == nil {
		t.Error("Ping after Close returned nil")
	}
}

// TestCloseDuringWrites closes the store while writers keep writing: every
// Write returns, every acknowledged one is in the file afterwards, and the
// one that failed at Close left nothing.
func TestCloseDuringWrites(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "c.db")
	db, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	const writers, before = 8, 100
	acked := make([][]string, writers) // keys whose Write returned nil
	refused := make([]string, writers) // the key whose Write failed
	progress := make(chan struct{}, writers*before*2)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := 0; ; i++ {
				key := fmt.Sprintf("w%d-%d", w, i)
				if err := db.Write(ctx, func(tx store.Tx) error { return tx.MetaSet(ctx, key, "v") }); err != nil {
					refused[w] = key
					return
				}
				acked[w] = append(acked[w], key)
				select {
				case progress <- struct{}{}:
				default:
				}
			}
		})
	}
	timeout := time.After(waitLimit)
	for range before {
		select {
		case <-progress:
		case <-timeout:
			t.Fatal("timed out waiting for writes before Close")
		}
	}
	if err := db.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(waitLimit):
		t.Fatal("Writes racing Close hang")
	}

	db = open(t, path, nil)
	total := 0
	for w := range writers {
		total += len(acked[w])
		for _, key := range acked[w] {
			if _, err := readMeta(t, db, key); err != nil {
				t.Errorf("acknowledged Write of %s is lost: %v", key, err)
			}
		}
		if _, err := readMeta(t, db, refused[w]); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Write of %s failed at Close but left its key: %v", refused[w], err)
		}
	}
	t.Logf("%d Writes acknowledged before Close stopped %d writers", total, writers)
}

func readMeta(t *testing.T, s store.Store, key string) (string, error) {
	t.Helper()
	var v string
	err := s.Read(t.Context(), func(tx store.Tx) (err error) { v, err = tx.MetaGet(t.Context(), key); return err })
	return v, err
}

// commitCounter counts OnCommit calls and the writes they carried.
type commitCounter struct {
	mu       sync.Mutex
	commits  int
	writes   int
	maxBatch int
}

func (c *commitCounter) onCommit(_ time.Duration, writes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.commits++
	c.writes += writes
	c.maxBatch = max(c.maxBatch, writes)
}

func (c *commitCounter) get() (commits, writes, maxBatch int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.commits, c.writes, c.maxBatch
}

// concurrentWrites launches n Writes released together, each putting one
// meta key, and returns their results.
func concurrentWrites(t *testing.T, db *sqlite.DB, n int, fail func(i int) error) []error {
	t.Helper()
	ctx := t.Context()
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = db.Write(ctx, func(tx store.Tx) error {
				if err := tx.MetaSet(ctx, "k"+strconv.Itoa(i), strconv.Itoa(i)); err != nil {
					return err
				}
				if fail != nil {
					return fail(i)
				}
				return nil
			})
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// TestGroupCommit launches 200 concurrent Writes: every one is acknowledged
// and visible, OnCommit accounts for each exactly once, and commits are
// never more than writes. How much batching happens depends on scheduling,
// so it is logged, not asserted.
func TestGroupCommit(t *testing.T) {
	var c commitCounter
	db := open(t, filepath.Join(t.TempDir(), "c.db"), &sqlite.Options{OnCommit: c.onCommit})
	const n = 200
	for i, err := range concurrentWrites(t, db, n, nil) {
		if err != nil {
			t.Errorf("Write %d: %v", i, err)
		}
	}
	commits, writes, maxBatch := c.get()
	if writes != n {
		t.Errorf("OnCommit accounted for %d writes, want %d", writes, n)
	}
	if commits < 1 || commits > writes {
		t.Errorf("%d commits for %d writes, want between 1 and %d", commits, writes, writes)
	}
	t.Logf("%d writes in %d commits (largest batch %d, %.1f writes per commit)", writes, commits, maxBatch, float64(writes)/float64(commits))
	for i := range n {
		if v, err := readMeta(t, db, "k"+strconv.Itoa(i)); err != nil || v != strconv.Itoa(i) {
			t.Errorf("key %d = %q, %v after its Write was acknowledged", i, v, err)
		}
	}
}

// TestGroupCommitMaxBatch: no commit carries more than MaxBatch writes.
func TestGroupCommitMaxBatch(t *testing.T) {
	var c commitCounter
	db := open(t, filepath.Join(t.TempDir(), "c.db"), &sqlite.Options{MaxBatch: 4, OnCommit: c.onCommit})
	const n = 64
	for i, err := range concurrentWrites(t, db, n, nil) {
		if err != nil {
			t.Errorf("Write %d: %v", i, err)
		}
	}
	commits, writes, maxBatch := c.get()
	if writes != n {
		t.Errorf("OnCommit accounted for %d writes, want %d", writes, n)
	}
	if maxBatch > 4 {
		t.Errorf("a commit carried %d writes, want at most MaxBatch=4", maxBatch)
	}
	if commits < n/4 {
		t.Errorf("%d commits for %d writes with MaxBatch 4, want at least %d", commits, n, n/4)
	}
	t.Logf("MaxBatch 4: %d writes in %d commits (largest batch %d)", writes, commits, maxBatch)
}

// TestGroupCommitCountsKeptWrites: OnCommit counts only writes that were
// kept, and a batch of nothing but failures commits nothing.
func TestGroupCommitCountsKeptWrites(t *testing.T) {
	ctx := t.Context()
	var c commitCounter
	db := open(t, filepath.Join(t.TempDir(), "c.db"), &sqlite.Options{OnCommit: c.onCommit})
	boom := errors.New("boom")
	if err := db.Write(ctx, func(tx store.Tx) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("failing Write: %v, want boom", err)
	}
	if commits, writes, _ := c.get(); commits != 0 || writes != 0 {
		t.Errorf("after one failed Write: %d commits, %d writes; want none", commits, writes)
	}

	const n = 90
	errs := concurrentWrites(t, db, n, func(i int) error {
		if i%3 == 0 {
			return fmt.Errorf("write %d: %w", i, boom)
		}
		return nil
	})
	ok := 0
	for i, err := range errs {
		if i%3 == 0 {
			if !errors.Is(err, boom) {
				t.Errorf("Write %d: %v, want boom", i, err)
			}
			if _, rerr := readMeta(t, db, "k"+strconv.Itoa(i)); !errors.Is(rerr, store.ErrNotFound) {
				t.Errorf("failed Write %d left its key: %v", i, rerr)
			}
			continue
		}
		if err != nil {
			t.Errorf("Write %d: %v", i, err)
		}
		ok++
	}
	commits, writes, maxBatch := c.get()
	if writes != ok {
		t.Errorf("OnCommit accounted for %d writes, want the %d that succeeded", writes, ok)
	}
	t.Logf("%d kept writes (of %d) in %d commits, largest batch %d", writes, n, commits, maxBatch)
}

// TestWriteCanceledWhileQueued: a Write whose context ends while it waits
// behind another is answered with the context's error and its function never
// runs.
func TestWriteCanceledWhileQueued(t *testing.T) {
	ctx := t.Context()
	db := open(t, filepath.Join(t.TempDir(), "c.db"), nil)
	inside, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- db.Write(ctx, func(tx store.Tx) error {
			close(inside)
			<-release
			return tx.MetaSet(ctx, "first", "1")
		})
	}()
	select {
	case <-inside:
	case <-time.After(waitLimit):
		close(release)
		t.Fatal("timed out waiting for the first Write")
	}

	cctx, cancel := context.WithCancel(ctx)
	var ran atomic.Bool
	second := make(chan error, 1)
	go func() {
		second <- db.Write(cctx, func(tx store.Tx) error { ran.Store(true); return tx.MetaSet(ctx, "second", "2") })
	}()
	cancel()
	close(release)
	for _, ch := range []chan error{first, second} {
		select {
		case err := <-ch:
			if ch == first && err != nil {
				t.Errorf("first Write: %v", err)
			}
			if ch == second && !errors.Is(err, context.Canceled) {
				t.Errorf("canceled Write: %v, want context.Canceled", err)
			}
		case <-time.After(waitLimit):
			t.Fatal("a Write hangs")
		}
	}
	if ran.Load() {
		t.Error("the canceled Write's function ran")
	}
	if _, err := readMeta(t, db, "second"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("canceled Write left its key: %v", err)
	}
}

// Reads holding every pooled connection run queries the statement cache has
// not seen: a read must never wait for a second connection while it holds
// one (that deadlocked the pool once; with a deadline, the queries failed).
func TestReadsHoldingThePoolWithNewQueries(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const readers = 2
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"), &sqlite.Options{Readers: readers})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var inside sync.WaitGroup
	inside.Add(readers)
	errs := make(chan error, readers)
	for i := 0; i < readers; i++ {
		go func() {
			errs <- db.Read(ctx, func(tx store.Tx) error {
				// Hold this connection until every reader holds one.
				inside.Done()
				inside.Wait()
				p := store.MessageListParams{SessionID: "ses_x", Kinds: continuo.Kinds()[:2+i], Limit: 1}
				if _, err := tx.MessageList(ctx, p); err != nil {
					return err
				}
				_, err := tx.MessageCount(ctx, p)
				return err
			})
		}()
	}
	for i := 0; i < readers; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestExisting: with Existing, Open refuses a missing file and a file
// without the schema, and creates nothing; an existing database opens.
func TestExisting(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	missing := filepath.Join(dir, "none", "c.db")
	if _, err := sqlite.Open(ctx, missing, &sqlite.Options{Existing: true}); !errors.Is(err, store.ErrNoDatabase) {
		t.Fatalf("Open(missing, Existing) = %v, want ErrNoDatabase", err)
	}
	if _, err := os.Stat(filepath.Dir(missing)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(missing, Existing) created %s", filepath.Dir(missing))
	}
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Open(ctx, empty, &sqlite.Options{Existing: true}); !errors.Is(err, store.ErrNoDatabase) {
		t.Fatalf("Open(empty file, Existing) = %v, want ErrNoDatabase", err)
	}
	path := filepath.Join(dir, "c.db")
	open(t, path, nil).Close()
	open(t, path, &sqlite.Options{Existing: true})
}

// TestFileGone: once the database file (or its write-ahead log) is deleted
// or replaced under the open handles, Ping fails and writes are refused
// instead of being acknowledged into a file nobody will open again.
func TestFileGone(t *testing.T) {
	for _, victim := range []string{"", "-wal"} {
		t.Run("remove"+victim, func(t *testing.T) {
			ctx := t.Context()
			path := filepath.Join(t.TempDir(), "c.db")
			db := open(t, path, nil)
			storetest.MustWrite(t, db, func(tx store.Tx) error { return tx.MetaSet(ctx, "k", "v") })
			if err := db.Ping(ctx); err != nil {
				t.Fatalf("Ping: %v", err)
			}
			if err := os.Remove(path + victim); err != nil {
				t.Fatal(err)
			}
			if err := db.Ping(ctx); !errors.Is(err, sqlite.ErrFileGone) {
				t.Errorf("Ping after removing %s = %v, want ErrFileGone", path+victim, err)
			}
			err := db.Write(ctx, func(tx store.Tx) error { return tx.MetaSet(ctx, "k", "w") })
			if !errors.Is(err, sqlite.ErrFileGone) {
				t.Errorf("Write after removing %s = %v, want ErrFileGone", path+victim, err)
			}
		})
	}
	t.Run("replace", func(t *testing.T) {
		ctx := t.Context()
		dir := t.TempDir()
		path := filepath.Join(dir, "c.db")
		db := open(t, path, nil)
		other := filepath.Join(dir, "other.db")
		open(t, other, nil).Close()
		if err := os.Rename(other, path); err != nil {
			t.Fatal(err)
		}
		if err := db.Ping(ctx); !errors.Is(err, sqlite.ErrFileGone) {
			t.Errorf("Ping after replacing the file = %v, want ErrFileGone", err)
		}
	})
}

// Migration 0003 backfills what it adds from the data of a version 2
// database: message ranks and handoff flags, and the session's superseded
// decision and resolved question counters.
func TestMigration0003Backfill(t *testing.T) {
	ctx := t.Context()
	ms, err := sqlite.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "c.db")
	raw := rawDB(t, path)
	for _, q := range []string{
		"CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL) STRICT",
		ms[0].SQL,
		ms[1].SQL,
		"INSERT INTO schema_migrations (version, name) VALUES (1, 'init'), (2, '" + ms[1].Name + "')",
		"INSERT INTO groups (id, name, created_at) VALUES ('grp_1', 'g', 0)",
		"INSERT INTO projects (id, name, writable, created_at) VALUES ('prj_1', 'p', 1, 0)",
		`INSERT INTO sessions (id, group_id, ref, project_id, title, lifecycle, mode, root_instruction, latest_instruction,
			instructions, revision, message_seq, created_at, updated_at) VALUES ('ses_1', 'grp_1', 1, 'prj_1', 't', 'active', 'checkout', 'i', 'i', 1, 1, 5, 0, 0)`,
		`INSERT INTO messages (id, session_id, seq, kind, text, status, priority, tags, created_at) VALUES
			('msg_1', 'ses_1', 1, 'decision', 'old', 'superseded', 'high', '[]', 1),
			('msg_2', 'ses_1', 2, 'decision', 'low', 'open', 'low', '[]', 2),
			('msg_3', 'ses_1', 3, 'decision', 'high', 'open', 'high', '[]', 3),
			('msg_4', 'ses_1', 4, 'progress', 'state', 'open', 'normal', '["x","handoff"]', 4),
			('msg_5', 'ses_1', 5, 'question', 'q', 'resolved', 'normal', '[]', 5)`,
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	raw.Close()
	db := open(t, path, &sqlite.Options{Migrate: store.MigrateUp})
	storetest.MustRead(t, db, func(tx store.Tx) error {
		s, err := tx.SessionGet(ctx, "ses_1")
		if err != nil {
			return err
		}
		if s.Counts.SupersededDecisions != 1 || s.Counts.ResolvedQuestions != 1 || s.StartHead != "" {
			t.Errorf("session after 0003: %+v start head %q", s.Counts, s.StartHead)
		}
		d, err := tx.MessageList(ctx, store.MessageListParams{SessionID: "ses_1", Kinds: []continuo.Kind{continuo.KindDecision},
			Statuses: []continuo.Status{continuo.StatusOpen}, ByPriority: true, Limit: 5})
		if err != nil {
			return err
		}
		if len(d) != 2 || d[0].ID != "msg_3" || d[1].ID != "msg_2" {
			t.Errorf("decisions by priority after 0003: %v", d)
		}
		h, err := tx.MessageList(ctx, store.MessageListParams{SessionID: "ses_1", Handoff: true, Limit: 5})
		if err != nil {
			return err
		}
		if len(h) != 1 || h[0].ID != "msg_4" {
			t.Errorf("handoff notes after 0003: %v", h)
		}
		return nil
	})
}

// The brief's queries are served by an index in the order they ask for: no
// sort of the session's messages (no temporary B-tree), whatever its size.
func TestBriefQueryPlans(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	open(t, path, nil)
	raw := rawDB(t, path)
	for q, index := range map[string]string{
		"SELECT id FROM messages WHERE session_id = ? AND kind IN (?) AND status IN (?) ORDER BY rank DESC, seq DESC LIMIT ?": "messages_rank",
		"SELECT id FROM messages WHERE session_id = ? AND handoff = 1 ORDER BY seq DESC LIMIT ?":                              "messages_handoff",
		"SELECT id FROM messages WHERE session_id = ? AND kind IN (?) ORDER BY seq DESC LIMIT ?":                              "messages_kind",
		"SELECT id FROM messages WHERE session_id = ? AND kind IN (?) AND status IN (?) ORDER BY seq DESC LIMIT ?":            "messages_",
		// The corrections in force (migration 0014), as sqlstore writes the query.
		"SELECT id FROM messages WHERE session_id = ? AND supersedes <> '' AND kind IN (?) AND status IN (?) ORDER BY seq DESC LIMIT ?": "messages_corrections",
	} {
		p := queryPlan(t, raw, q, "ses_1", "decision", "open", 5)
		if !strings.Contains(p, "USING INDEX "+index) && !strings.Contains(p, "USING COVERING INDEX "+index) || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("%s\nplan: %s, want a scan of %s without a sort", q, p, index)
		}
	}
	// Messages by id (the cited decisions, the answers), as sqlstore.byID
	// asks: a lookup of each in the primary key, never a walk of the
	// session's index.
	q := "SELECT id FROM messages WHERE 1 = 1 AND id IN (?, ?, ?, ?, ?, ?, ?, ?)"
	if p := queryPlan(t, raw, q, 1, 2, 3, 4, 5, 6, 7, 8); p != "SEARCH messages USING COVERING INDEX sqlite_autoindex_messages_1 (id=?)" &&
		p != "SEARCH messages USING INDEX sqlite_autoindex_messages_1 (id=?)" {
		t.Errorf("%s\nplan: %s, want lookups of the primary key", q, p)
	}
}

// TestRunQueryPlans: reading a page of a run's log is a range scan of the
// primary key, whatever the log's length, and RunList's filters, lease
// renewal and a session's evidence search their indexes (queries as
// sqlstore/run.go writes them).
func TestRunQueryPlans(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	open(t, path, nil)
	raw := rawDB(t, path)
	for q, want := range map[string]string{
		"SELECT run_id, seq, kind, text, at FROM run_events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?":                                "SEARCH run_events USING INDEX sqlite_autoindex_run_events_1 (run_id=? AND seq>?)",
		"DELETE FROM run_events WHERE run_id = ? AND seq >= ? AND seq <= ?":                                                                   "SEARCH run_events USING INDEX sqlite_autoindex_run_events_1 (run_id=? AND seq>? AND seq<?)",
		"SELECT id FROM runs WHERE 1 = 1 AND state IN (?) AND lease_until < ? ORDER BY id LIMIT ?":                                            "SEARCH runs USING INDEX runs_lease (state=? AND lease_until<?)",
		"SELECT id FROM runs WHERE 1 = 1 AND owner = ? ORDER BY id LIMIT ?":                                                                   "SEARCH runs USING INDEX runs_owner (owner=?)",
		"SELECT id FROM runs WHERE 1 = 1 AND state IN (?) AND dir = ? AND check_name = ? ORDER BY id LIMIT ?":                                 "SEARCH runs USING INDEX runs_check (dir=? AND check_name=? AND state=?)",
		"UPDATE runs SET lease_until = ? WHERE owner = ? AND state IN ('queued', 'running')":                                                  "SEARCH runs USING INDEX runs_owner (owner=? AND state=?)",
		"SELECT run_id, ROW_NUMBER() OVER (PARTITION BY check_name ORDER BY created_at DESC, run_id DESC) FROM evidence WHERE session_id = ?": "SEARCH evidence USING COVERING INDEX evidence_latest (session_id=?)",
	} {
		if p := queryPlan(t, raw, q, 1, 2, 3, 4); !strings.Contains(p, want) {
			t.Errorf("%s\nplan: %s, want %s", q, p, want)
		}
	}
}

// Migration 0004 only adds the OAuth and sign-in tables: a version 3
// database is refused until `migrate up`, then keeps every row, and its
// principals can sign in and authorize clients.
func TestMigration0004FromV3(t *testing.T) {
	storetest.CheckMigration0004(t, upgradedFrom(t, 3, storetest.Migration0004Seed))
}

// Migration 0005 only adds the goal tables: a version 4 database is
// refused until `migrate up`, then keeps every row, and its sessions take
// goals and their plans.
func TestMigration0005FromV4(t *testing.T) {
	storetest.CheckMigration0005(t, upgradedFrom(t, 4, storetest.Migration0005Seed))
}

// Migration 0006 only adds the run tables: a version 5 database is
// refused until `migrate up`, then keeps every row, and its projects and
// sessions take runs, their logs and evidence.
func TestMigration0006FromV5(t *testing.T) {
	storetest.CheckMigration0006(t, upgradedFrom(t, 5, storetest.Migration0006Seed))
}
