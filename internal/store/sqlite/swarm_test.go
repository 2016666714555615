package sqlite_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/sqlite"
	"github.com/continuo-dev/continuo/internal/store/storetest"
)

// TestSwarmQueryPlans: the swarm's queries (as sqlstore/swarm.go and
// task.go write them) search the indexes migration 0007 made for them,
// and those that return rows in index order sort nothing. The partial
// indexes serve only queries whose WHERE holds theirs term for term.
func TestSwarmQueryPlans(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	open(t, path, nil)
	raw := rawDB(t, path)
	for _, tc := range []struct {
		q, want string
		sorts   bool // a TEMP B-TREE is expected (a few active attempts, ordered by ID)
	}{
		{"UPDATE tasks SET state = 'claimed', worker_id = ?, attempt = attempt + 1, revision = revision + 1, updated_at = ? " +
			"WHERE id = (SELECT id FROM tasks WHERE swarm_id = ? AND state = 'queued' AND preferred_worker_id = ? ORDER BY id LIMIT 1) " +
			"AND state = 'queued' RETURNING id", "SEARCH tasks USING COVERING INDEX tasks_queue (swarm_id=? AND preferred_worker_id=?)", false},
		{"SELECT 1 FROM tasks WHERE swarm_id = ? AND state = 'queued' AND preferred_worker_id IN (?, '') LIMIT 1",
			"SEARCH tasks USING COVERING INDEX tasks_queue (swarm_id=? AND preferred_worker_id=?)", false},
		{"SELECT state, count(*) FROM tasks WHERE swarm_id = ? GROUP BY state", "SEARCH tasks USING COVERING INDEX tasks_state (swarm_id=?)", false},
		{"SELECT id FROM tasks WHERE swarm_id = ? AND state IN (?) AND id > ? ORDER BY id LIMIT ?",
			"SEARCH tasks USING COVERING INDEX tasks_state (swarm_id=? AND state=? AND id>?)", false},
		{"SELECT id FROM tasks WHERE swarm_id = ? AND task_key = ?", "SEARCH tasks USING INDEX tasks_key (swarm_id=? AND task_key=?)", false},
		{"SELECT id FROM attempts WHERE state IN ('claimed', 'running') AND lease_until < ? ORDER BY id LIMIT ?",
			"SEARCH attempts USING INDEX attempts_lease (lease_until<?)", true},
		{"SELECT id FROM attempts WHERE state IN ('claimed', 'running') AND server = ? ORDER BY id LIMIT ?",
			"SEARCH attempts USING INDEX attempts_server (server=?)", true},
		{"SELECT DISTINCT server FROM attempts WHERE state IN ('claimed', 'running') ORDER BY server",
			"SCAN attempts USING INDEX attempts_server", false},
		{"SELECT id FROM attempts WHERE task_id = ? AND number = ?", "SEARCH attempts USING INDEX attempts_number (task_id=? AND number=?)", false},
		{"SELECT id FROM workers WHERE swarm_id = ? ORDER BY id", "SEARCH workers USING COVERING INDEX workers_swarm (swarm_id=?)", false},
		{"SELECT id FROM swarms WHERE group_id = ? ORDER BY id DESC LIMIT ?", "SEARCH swarms USING COVERING INDEX swarms_group (group_id=?)", false},
	} {
		p := queryPlan(t, raw, tc.q, 1, 2, 3, 4)
		if !strings.Contains(p, tc.want) || strings.Contains(p, "TEMP B-TREE") != tc.sorts {
			t.Errorf("%s\nplan: %s, want %s (a sort: %v)", tc.q, p, tc.want, tc.sorts)
		}
	}
}

// Migration 0007 only adds the swarm tables: a version 6 database is
// refused until `migrate up`, then keeps every row, and its groups take
// swarms whose workers claim tasks.
func TestMigration0007FromV6(t *testing.T) {
	storetest.CheckMigration0007(t, upgradedFrom(t, 6, storetest.Migration0007Seed))
}

// upgradedFrom builds a database at schema version n holding seed, checks
// that Open refuses it without migrate up, and returns it migrated up,
// after checking that it is then at the binary's schema version.
func upgradedFrom(t *testing.T, n int, seed []string) store.Store {
	t.Helper()
	ctx := t.Context()
	ms, err := sqlite.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "c.db")
	raw := rawDB(t, path)
	for _, q := range append(schemaAt(ms, n), seed...) {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	raw.Close()
	if _, err := sqlite.Open(ctx, path, nil); !errors.Is(err, store.ErrSchema) {
		t.Fatalf("Open of a version %d database without migrate up = %v, want ErrSchema", n, err)
	}
	db := open(t, path, &sqlite.Options{Migrate: store.MigrateUp})
	raw = rawDB(t, path)
	var version int
	if err := raw.QueryRowContext(ctx, "SELECT max(version) FROM schema_migrations").Scan(&version); err != nil || version != store.SchemaVersion {
		t.Errorf("schema version after migrate up = %d, %v; want %d", version, err, store.SchemaVersion)
	}
	return db
}

// schemaAt returns the statements that make an empty database one at
// schema version n, as a binary of that version left it.
func schemaAt(ms []store.Migration, n int) []string {
	qs := []string{"CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL) STRICT"}
	for _, m := range ms[:n] {
		qs = append(qs, m.SQL, fmt.Sprintf("INSERT INTO schema_migrations (version, name) VALUES (%d, '%s')", m.Version, m.Name))
	}
	return qs
}
