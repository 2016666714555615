package sqlite_test

import (
	"context"
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
	for _, q := range append(schemaAt(ms, 10), migration0011Rows...) {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	raw.Close()
	if _, err := sqlite.Open(ctx, path, nil); !errors.Is(err, store.ErrSchema) {
		t.Fatalf("Open of a version 10 database without migrate up = %v, want ErrSchema", err)
	}
	checkMigration0011(ctx, t, open(t, path, &sqlite.Options{Migrate: store.MigrateUp}))
}

// migration0011Rows are a version 10 database's rows: two sessions of one
// group in one project, one titled with a secret.
var migration0011Rows = []string{
	"INSERT INTO groups (id, name, created_at) VALUES ('grp_1', 'g', 0)",
	"INSERT INTO projects (id, name, writable, created_at) VALUES ('prj_1', 'p', 1, 0)",
	`INSERT INTO sessions (id, group_id, ref, project_id, title, lifecycle, mode, root_instruction, latest_instruction,
		instructions, revision, message_seq, created_at, updated_at) VALUES
		('ses_1', 'grp_1', 1, 'prj_1', 'Fix the login redirect', 'active', 'checkout', 'i', 'i', 1, 1, 0, 0, 2),
		('ses_2', 'grp_1', 2, 'prj_1', 'rotate AKIAIOSFODNN7EXAMPLE', 'active', 'checkout', 'i', 'i', 1, 1, 0, 0, 1)`,
}

func checkMigration0011(ctx context.Context, t *testing.T, db store.Store) {
	t.Helper()
	storetest.MustRead(t, db, func(tx store.Tx) error {
		for q, want := range map[string]int64{"login": 1, "redirect fix": 1, "rotate": 1, "AKIAIOSFODNN7EXAMPLE": 0} {
			got, total, err := tx.SessionList(ctx, store.SessionListParams{GroupID: "grp_1", ProjectID: "prj_1",
				Words: store.SearchWords(q), Limit: 10})
			if err != nil {
				return err
			}
			if total != want || int64(len(got)) != want {
				t.Errorf("sessions titled with %q after 0011: %d listed, total %d; want %d", q, len(got), total, want)
			}
		}
		return nil
	})
}
