package pgtest_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/continuo-dev/continuo/internal/store/pgtest"
)

// fakeTB records how BaseURL ends a test. Fatal and Skip stop the calling
// goroutine, as the real ones do.
type fakeTB struct {
	testing.TB
	fatal, skip string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatal(args ...any) {
	f.fatal = fmt.Sprint(args...)
	runtime.Goexit()
}
func (f *fakeTB) Skip(args ...any) {
	f.skip = fmt.Sprint(args...)
	runtime.Goexit()
}

func callBaseURL(tb testing.TB) (url string, f *fakeTB) {
	f = &fakeTB{TB: tb}
	done := make(chan struct{})
	go func() {
		defer close(done)
		url = pgtest.BaseURL(f)
	}()
	<-done
	return url, f
}

func TestBaseURL(t *testing.T) {
	t.Setenv(pgtest.EnvURL, "")
	t.Setenv("CI", "true")
	if _, f := callBaseURL(t); f.fatal != "CONTINUO_TEST_POSTGRES_URL is not set: CI requires PostgreSQL" || f.skip != "" {
		t.Errorf("unset under CI: fatal %q, skip %q", f.fatal, f.skip)
	}
	t.Setenv("CI", "")
	if _, f := callBaseURL(t); f.fatal != "" || f.skip == "" {
		t.Errorf("unset outside CI: fatal %q, skip %q", f.fatal, f.skip)
	}
	t.Setenv(pgtest.EnvURL, "postgres://example/db")
	t.Setenv("CI", "true")
	if u, f := callBaseURL(t); u != "postgres://example/db" || f.fatal != "" || f.skip != "" {
		t.Errorf("set: got %q, fatal %q, skip %q", u, f.fatal, f.skip)
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx(t), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func queryString(t *testing.T, conn *pgx.Conn, sql string, args ...any) string {
	t.Helper()
	var s string
	if err := conn.QueryRow(ctx(t), sql, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

func queryInt(t *testing.T, conn *pgx.Conn, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(ctx(t), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

const userTables = `SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'`

func TestDatabase(t *testing.T) {
	base := pgtest.BaseURL(t)
	const n = 6
	var (
		mu    sync.Mutex
		names []string
	)
	t.Run("group", func(t *testing.T) {
		for i := range n {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				start := time.Now()
				u := pgtest.Database(t)
				t.Logf("Database: %v", time.Since(start))
				conn := connect(t, u)
				name := queryString(t, conn, "SELECT current_database()")
				if !strings.HasPrefix(name, "continuo_t_") || strings.ToLower(name) != name {
					t.Errorf("database name %q", name)
				}
				if got := queryInt(t, conn, userTables); got != 0 {
					t.Errorf("new database has %d relations", got)
				}
				if _, err := conn.Exec(ctx(t), "CREATE TABLE t (x bigint)"); err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				names = append(names, name)
				mu.Unlock()
				// A connection left open must not stop the drop.
				leak, err := pgx.Connect(ctx(t), u)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { leak.Close(context.Background()) })
			})
		}
	})
	if len(names) != n {
		t.Fatalf("got %d databases, want %d", len(names), n)
	}
	sort.Strings(names)
	for i := 1; i < len(names); i++ {
		if names[i] == names[i-1] {
			t.Errorf("duplicate database name %s", names[i])
		}
	}
	conn := connect(t, base)
	if got := queryInt(t, conn, "SELECT count(*) FROM pg_database WHERE datname = ANY($1)", names); got != 0 {
		t.Errorf("%d databases left after cleanup", got)
	}
}

func TestSchema(t *testing.T) {
	base := pgtest.BaseURL(t)
	var a, b string
	t.Run("isolation", func(t *testing.T) {
		start := time.Now()
		urlA := pgtest.Schema(t)
		t.Logf("Schema: %v", time.Since(start))
		urlB := pgtest.Schema(t)

		// A: through a pgxpool, on several connections at once.
		pool, err := pgxpool.New(ctx(t), urlA)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		if _, err := pool.Exec(ctx(t), "CREATE TABLE t (x text)"); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx(t), "INSERT INTO t VALUES ('a')"); err != nil {
			t.Fatal(err)
		}
		var conns []*pgxpool.Conn
		for range 3 {
			c, err := pool.Acquire(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		for _, c := range conns {
			var s, x string
			if err := c.QueryRow(ctx(t), "SELECT current_schema(), (SELECT x FROM t)").Scan(&s, &x); err != nil {
				t.Fatal(err)
			}
			if a == "" {
				a = s
			}
			if s != a || x != "a" {
				t.Errorf("pool connection: schema %q (want %q), t.x %q", s, a, x)
			}
			c.Release()
		}

		// B: through database/sql with pgx/v5/stdlib, on several connections.
		db, err := sql.Open("pgx", urlB)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if _, err := db.ExecContext(ctx(t), "CREATE TABLE t (x text)"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx(t), "INSERT INTO t VALUES ('b')"); err != nil {
			t.Fatal(err)
		}
		var sqlConns []*sql.Conn
		for range 3 {
			c, err := db.Conn(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			sqlConns = append(sqlConns, c)
		}
		for _, c := range sqlConns {
			var s, x string
			if err := c.QueryRowContext(ctx(t), "SELECT current_schema(), (SELECT string_agg(x, ',') FROM t)").Scan(&s, &x); err != nil {
				t.Fatal(err)
			}
			if b == "" {
				b = s
			}
			if s != b || x != "b" {
				t.Errorf("database/sql connection: schema %q (want %q), t.x %q", s, b, x)
			}
			c.Close()
		}

		if a == b || !strings.HasPrefix(a, "continuo_t_") || !strings.HasPrefix(b, "continuo_t_") {
			t.Fatalf("schemas %q and %q", a, b)
		}
		// Seen from outside: one table t in each schema, none in public.
		conn := connect(t, base)
		rows, err := conn.Query(ctx(t), `SELECT table_schema FROM information_schema.tables
			WHERE table_name = 't' AND table_schema IN ($1, $2, 'public') ORDER BY table_schema`, a, b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		want := []string{a, b}
		sort.Strings(want)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("tables t in schemas %v, want %v", got, want)
		}
	})
	conn := connect(t, base)
	if got := queryInt(t, conn, "SELECT count(*) FROM pg_namespace WHERE nspname IN ($1, $2)", a, b); got != 0 {
		t.Errorf("%d schemas left after cleanup", got)
	}
}

// TestSchemaParallel creates schemas from parallel tests.
func TestSchemaParallel(t *testing.T) {
	pgtest.BaseURL(t)
	for i := range 6 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			conn := connect(t, pgtest.Schema(t))
			if _, err := conn.Exec(ctx(t), "CREATE TABLE t (x bigint PRIMARY KEY)"); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Exec(ctx(t), "INSERT INTO t VALUES ($1)", i); err != nil {
				t.Fatal(err)
			}
			if got := queryInt(t, conn, "SELECT count(*) FROM t"); got != 1 {
				t.Errorf("t has %d rows, want 1", got)
			}
		})
	}
}

// TestMigrationsInSchema applies the PostgreSQL store's migrations through a
// Schema URL: every relation they create lands in that schema.
func TestMigrationsInSchema(t *testing.T) {
	files, err := filepath.Glob("../postgres/migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skip("no migrations")
	}
	sort.Strings(files)
	conn := connect(t, pgtest.Schema(t))
	// Count relations in the default schema before and after: the
	// migrations must add none there. (Other schemas are other tests':
	// running in parallel, they come and go.)
	const outsideSQL = `SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public'`
	outsideBefore := queryInt(t, conn, outsideSQL)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// No arguments: the simple protocol, which allows several statements.
		if _, err := conn.Exec(ctx(t), string(b)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	inside := queryInt(t, conn, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()`)
	outside := queryInt(t, conn, outsideSQL)
	if inside < 10 || outside != outsideBefore {
		t.Errorf("%d tables in the test schema (want >= 10); relations in public: %d before, %d after", inside, outsideBefore, outside)
	}
}

// The benchmarks measure the creation only: what they create is dropped
// after the loop.

func BenchmarkDatabase(b *testing.B) {
	for b.Loop() {
		pgtest.Database(b)
	}
}

func BenchmarkSchema(b *testing.B) {
	for b.Loop() {
		pgtest.Schema(b)
	}
}

// TestTemplateCopy: Template builds a database once per key (a second call
// finds it), under its name only once the build has returned; each Copy
// of it holds what the build made, and is a database of its own.
func TestTemplateCopy(t *testing.T) {
	base := pgtest.BaseURL(t)
	key := fmt.Sprintf("test_%d", time.Now().UnixNano()) // made by this test alone
	builds := 0
	build := func(ctx context.Context, url string) error {
		builds++
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(context.Background())
		// Under construction, the template is not under its name.
		var named bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", "continuo_t_template_"+key).Scan(&named); err != nil || named {
			return fmt.Errorf("the template is named before its build ends (%v)", err)
		}
		_, err = conn.Exec(ctx, "CREATE TABLE made (v int); INSERT INTO made VALUES (7)")
		return err
	}
	name := pgtest.Template(t, key, build)
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), base)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Error(err)
		}
	})
	if again := pgtest.Template(t, key, build); again != name || builds != 1 {
		t.Fatalf("Template again: %q (first %q), %d builds", again, name, builds)
	}
	urls := []string{pgtest.Copy(t, name), pgtest.Copy(t, name)}
	for i, u := range urls {
		conn, err := pgx.Connect(t.Context(), u)
		if err != nil {
			t.Fatal(err)
		}
		var v int
		var db string
		if err := conn.QueryRow(t.Context(), "SELECT v, current_database() FROM made").Scan(&v, &db); err != nil || v != 7 || db == name {
			t.Errorf("copy %d: %d in %s, %v", i, v, db, err)
		}
		if _, err := conn.Exec(t.Context(), "INSERT INTO made VALUES ($1)", i); err != nil {
			t.Error(err)
		}
		conn.Close(context.Background())
	}
	conn, err := pgx.Connect(t.Context(), urls[1])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM made").Scan(&n); err != nil || n != 2 {
		t.Errorf("the second copy holds %d rows (the first copy's insert went elsewhere: want 2), %v", n, err)
	}
}
