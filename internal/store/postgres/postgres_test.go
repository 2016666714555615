package postgres_test

import (
	"errors"
	"testing"

	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/pgtest"
	"github.com/continuo-dev/continuo/internal/store/postgres"
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
	storetest.Run(t, func(t *testing.T) store.Store { return open(t, pgtest.Schema(t), nil) })
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
