// Package stores gives the tests of the services above the store (auth,
// workflow, the MCP edge) every engine: each test runs once on SQLite and
// once on PostgreSQL (when CONTINUO_TEST_POSTGRES_URL is set; under CI=true
// its absence fails), and always under storetest.Rerun, so that a write
// function that is not safe to run twice fails on either engine.
//
//	func TestX(t *testing.T) { stores.Each(t, testX) }
//	func testX(t *testing.T) { s := stores.Open(t); … }
//
// Open picks the engine from the subtest Each runs the test in.
package stores

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/pgtest"
	"github.com/continuo-dev/continuo/internal/store/postgres"
	"github.com/continuo-dev/continuo/internal/store/sqlite"
	"github.com/continuo-dev/continuo/internal/store/storetest"
)

// Engines are the subtest names Each runs a test under.
var Engines = []string{"sqlite", "postgres"}

// Each runs fn once per engine, as a subtest named after it.
func Each(t *testing.T, fn func(t *testing.T)) {
	t.Helper()
	for _, e := range Engines {
		t.Run(e, func(t *testing.T) {
			if e == "postgres" {
				pgtest.BaseURL(t) // skips, or fails under CI=true
			}
			fn(t)
		})
	}
}

// Open returns a fresh, empty, migrated store of the engine of the Each
// subtest t runs in (SQLite outside Each), wrapped in storetest.Rerun and
// closed when the test ends.
func Open(t testing.TB) store.Store {
	t.Helper()
	var s store.Store
	var err error
	switch engine(t) {
	case "postgres":
		s, err = postgres.Open(t.Context(), PostgresURL(t), nil)
	default:
		s, err = sqlite.Open(t.Context(), SQLiteFile(t), nil)
	}
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return storetest.Rerun(s)
}

// SQLiteFile returns the path of a fresh, migrated SQLite database of its
// own in t's temporary directory: a copy of one database migrated once per
// test binary. Migrating costs a second or more under -race (every
// migration through modernc.org/sqlite, instrumented), and the tests open
// thousands of stores; a copy of the migrated file is the same database
// byte for byte. sqlite.Open on it applies nothing and checks what it
// always checks (the pragmas, the schema version).
func SQLiteFile(t testing.TB) string {
	t.Helper()
	migrated.once.Do(func() { migrated.bytes, migrated.err = migrateOnce() })
	if migrated.err != nil {
		t.Fatalf("stores: migrate the template database: %v", migrated.err)
	}
	path := filepath.Join(t.TempDir(), "c.db")
	if err := os.WriteFile(path, migrated.bytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// migrated is the template of SQLiteFile: the bytes of a freshly migrated
// database, its write-ahead log checkpointed into it by Close.
var migrated struct {
	once  sync.Once
	bytes []byte
	err   error
}

func migrateOnce() ([]byte, error) {
	dir, err := os.MkdirTemp("", "continuo-template-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "c.db")
	db, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		return nil, err
	}
	if err := db.Close(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		return nil, errors.New("the write-ahead log outlived Close: the file alone is not the database")
	}
	return os.ReadFile(path)
}

// PostgresURL returns the URL of a fresh, migrated PostgreSQL database of
// its own, dropped when t ends: a copy (pgtest.Copy) of a database
// migrated once per schema, named after a hash of the migrations.
// postgres.Open on it applies nothing and checks the schema version.
func PostgresURL(t testing.TB) string {
	t.Helper()
	pgMigrated.once.Do(func() {
		ms, err := postgres.Migrations()
		if err != nil {
			t.Fatalf("stores: %v", err)
		}
		h := sha256.New()
		for _, m := range ms {
			fmt.Fprintf(h, "%d %s %d\n%s\n", m.Version, m.Name, len(m.SQL), m.SQL)
		}
		pgMigrated.name = pgtest.Template(t, hex.EncodeToString(h.Sum(nil)[:8]), func(ctx context.Context, url string) error {
			db, err := postgres.Open(ctx, url, nil)
			if err != nil {
				return err
			}
			return db.Close()
		})
	})
	if pgMigrated.name == "" {
		t.Fatal("stores: no migrated PostgreSQL template (an earlier test failed to make it)")
	}
	return pgtest.Copy(t, pgMigrated.name)
}

// pgMigrated is the template of PostgresURL, made by the first test that
// needs it.
var pgMigrated struct {
	once sync.Once
	name string
}

// Engine names the engine of the Each subtest t runs in.
func Engine(t testing.TB) string { return engine(t) }

func engine(t testing.TB) string {
	for _, part := range strings.Split(t.Name(), "/") {
		for _, e := range Engines {
			if part == e {
				return e
			}
		}
	}
	return "sqlite"
}
