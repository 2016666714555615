package postgres_test

import (
	"errors"
	"testing"

	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/pgtest"
	"github.com/continuo-dev/continuo/internal/store/postgres"
	"github.com/continuo-dev/continuo/internal/store/storetest"
	"github.com/jackc/pgx/v5"
)

// Migration 0011 adds the search text of session titles: a version 10
// database is refused until `migrate up`, then its sessions are found by
// the words of their titles (the driver's backfill indexes them), never by
// a secret in one. The twin of SQLite's test.
func TestMigration0011FromV10(t *testing.T) {
	pgtest.BaseURL(t)
	ctx := t.Context()
	url := pgtest.Schema(t)
	ms, err := postgres.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range append(schemaAt(ms, 10), storetest.Migration0011Seed...) {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	conn.Close(ctx)
	if _, err := postgres.Open(ctx, url, nil); !errors.Is(err, store.ErrSchema) {
		t.Fatalf("Open of a version 10 database without migrate up = %v, want ErrSchema", err)
	}
	storetest.CheckMigration0011(t, open(t, url, &postgres.Options{Migrate: store.MigrateUp}))
}
