package sqlite_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/sqlite"
	"github.com/continuo-dev/continuo/internal/store/storetest"
)

// Migration 0011 adds the search text of session titles: a version 10
// database is refused until `migrate up`, then its sessions are found by
// the words of their titles (the driver's backfill indexes them), never by
// a secret in one.
func TestMigration0011FromV10(t *testing.T) {
	ctx := t.Context()
	ms, err := sqlite.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "c.db")
	raw := rawDB(t, path)
	for _, q := range append(schemaAt(ms, 10), storetest.Migration0011Seed...) {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	raw.Close()
	if _, err := sqlite.Open(ctx, path, nil); !errors.Is(err, store.ErrSchema) {
		t.Fatalf("Open of a version 10 database without migrate up = %v, want ErrSchema", err)
	}
	storetest.CheckMigration0011(t, open(t, path, &sqlite.Options{Migrate: store.MigrateUp}))
}
