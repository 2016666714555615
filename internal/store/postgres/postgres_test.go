package postgres_test

import (
	"errors"
	"testing"

	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/pgtest"
	"github.com/continuo-dev/continuo/internal/store/postgres"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/store/storetest"
)

func open(t testing.TB, url string, opts *postgres.Options) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(t.Context(), url, opts)
	if err != nil {
		t.Fatalf("postgres.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

func TestConformance(t *testing.T) {
	pgtest.BaseURL(t)
	// Each test a copy of one migrated database (stores.PostgresURL):
	// migrating per test was most of the suite's time under -race.
	storetest.Run(t, func(t *testing.T) store.Store { return open(t, stores.PostgresURL(t), nil) })
}

// TestExisting: with Existing, an empty database is ErrNoDatabase and is
// left empty; once migrated, it opens.
func TestExisting(t *testing.T) {
	pgtest.BaseURL(t)
	url := pgtest.Schema(t)
	if _, err := postgres.Open(t.Context(), url, &postgres.Options{Existing: true}); !errors.Is(err, store.ErrNoDatabase) {
		t.Fatalf("Open(empty, Existing) = %v, want ErrNoDatabase", err)
	}
	// It stays refused: the first look created nothing that counts as a schema.
	if _, err := postgres.Open(t.Context(), url, &postgres.Options{Existing: true}); !errors.Is(err, store.ErrNoDatabase) {
		t.Fatalf("second Open(empty, Existing) = %v, want ErrNoDatabase", err)
	}
	open(t, url, nil).Close()
	open(t, url, &postgres.Options{Existing: true})
}

// Migration 0004 only adds the OAuth and sign-in tables: a version 3
// database is refused until `migrate up`, then keeps every row, and its
// principals can authorize clients.
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
