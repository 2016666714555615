package store_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/pgtest"
	"github.com/continuo-dev/continuo/internal/store/postgres"
	"github.com/continuo-dev/continuo/internal/store/sqlite"
	"github.com/continuo-dev/continuo/internal/store/storetest"
)

// TestExportAcrossEngines moves a database with rows in every table
// (storetest.Fill) SQLite → PostgreSQL → SQLite: each export is
// byte-identical to the first, so no value changes type or form on the way
// (the e2e test does the same through the CLI, for what the CLI can make).
func TestExportAcrossEngines(t *testing.T) {
	pgtest.BaseURL(t)
	ctx := t.Context()
	openLite := func() store.Store {
		s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"), nil)
		if err != nil {
			t.Fatalf("sqlite.Open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	pg, err := postgres.Open(ctx, pgtest.Schema(t), nil)
	if err != nil {
		t.Fatalf("postgres.Open: %v", err)
	}
	t.Cleanup(func() { pg.Close() })
	export := func(s store.Store) string {
		t.Helper()
		var b bytes.Buffer
		if _, err := store.Export(ctx, s, store.SchemaVersion, &b); err != nil {
			t.Fatalf("Export: %v", err)
		}
		return b.String()
	}
	src := openLite()
	storetest.Fill(t, src)
	first := export(src)
	for _, table := range store.Tables {
		if !strings.Contains(first, `{"table":"`+table+`","row":`) {
			t.Errorf("storetest.Fill left %s empty", table)
		}
	}
	prev := first
	for i, dst := range []store.Store{pg, openLite()} {
		if _, err := store.Import(ctx, dst, store.SchemaVersion, strings.NewReader(prev)); err != nil {
			t.Fatalf("hop %d: Import: %v", i+1, err)
		}
		if prev = export(dst); prev != first {
			t.Fatalf("hop %d: the export differs from the first:\n%s\n---\n%s", i+1, first, prev)
		}
	}
}
