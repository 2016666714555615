package sqlite_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo/internal/store/storetest"
)

// TestContinuityQueryPlans: the continuity queries (as
// sqlstore/continuation.go, ledger.go and task.go write them) search the
// indexes migration 0008 made for them, and those that return rows in
// index order sort nothing. The partial indexes serve only queries whose
// WHERE holds theirs term for term.
func TestContinuityQueryPlans(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	open(t, path, nil)
	raw := rawDB(t, path)
	const open = "(state = 'pending' OR state = 'approved' OR state = 'reconcile_required')"
	for _, tc := range []struct {
		q, want string
		sorts   bool // a TEMP B-TREE is expected
	}{
		{"SELECT id FROM continuations WHERE worker_id = ? AND " + open,
			"SEARCH continuations USING INDEX continuations_open (worker_id=?)", false},
		{"SELECT id FROM continuations WHERE ticket_hash = ? AND ticket_hash <> ''",
			"SEARCH continuations USING INDEX continuations_ticket (ticket_hash=?)", false},
		{"SELECT id FROM continuations WHERE 1 = 1 AND swarm_id = ? ORDER BY id DESC LIMIT ?",
			"SEARCH continuations USING COVERING INDEX continuations_swarm (swarm_id=?)", false},
		{"SELECT id FROM continuations WHERE 1 = 1 AND worker_id = ? ORDER BY id DESC LIMIT ?",
			"SEARCH continuations USING COVERING INDEX continuations_worker (worker_id=?)", false},
		{"SELECT id FROM continuations WHERE 1 = 1 AND target_carrier = ? AND target_carrier <> '' ORDER BY id DESC LIMIT ?",
			"SEARCH continuations USING COVERING INDEX continuations_target (target_carrier=?)", false},
		{"SELECT id FROM continuations WHERE 1 = 1 AND " + open + " AND expires_at < ? ORDER BY id DESC LIMIT ?",
			"SEARCH continuations USING INDEX continuations_expiry (expires_at<?)", true},
		// The sweep's: only the open states that lapse.
		{"SELECT id FROM continuations WHERE 1 = 1 AND " + open + " AND state IN (?, ?) AND expires_at < ? ORDER BY id DESC LIMIT ?",
			"SEARCH continuations USING INDEX continuations_expiry (expires_at<?)", true},
		{"SELECT tokens FROM context_ledger WHERE worker_id = ? AND epoch = ? AND source IN ('host_exact', 'estimate')",
			"SEARCH context_ledger USING PRIMARY KEY (worker_id=? AND epoch=? AND source=?)", false},
		{"SELECT source, SUM(tokens) FROM context_ledger WHERE worker_id = ? AND epoch = ? AND source NOT IN ('host_exact', 'estimate') GROUP BY worker_id, epoch, source",
			"SEARCH context_ledger USING PRIMARY KEY (worker_id=? AND epoch=?)", false},
		{"DELETE FROM context_ledger WHERE worker_id = ? AND epoch < ?",
			"SEARCH context_ledger USING PRIMARY KEY (worker_id=? AND epoch<?)", false},
		{"SELECT id FROM tasks WHERE swarm_id = ? AND worker_id = ? ORDER BY id DESC LIMIT ?",
			"SEARCH tasks USING COVERING INDEX tasks_worker (swarm_id=? AND worker_id=?)", false},
		{"SELECT id FROM tasks WHERE swarm_id = ? AND worker_id = ? AND id > ? ORDER BY id LIMIT ?",
			"SEARCH tasks USING COVERING INDEX tasks_worker (swarm_id=? AND worker_id=? AND id>?)", false},
	} {
		p := queryPlan(t, raw, tc.q, 1, 2, 3, 4)
		if !strings.Contains(p, tc.want) || strings.Contains(p, "TEMP B-TREE") != tc.sorts {
			t.Errorf("%s\nplan: %s, want %s (a sort: %v)", tc.q, p, tc.want, tc.sorts)
		}
	}
}

// Migration 0008 adds the continuity tables and an index of tasks: a
// version 7 database is refused until `migrate up`, then keeps its
// swarm, whose worker's tasks list by worker and whose worker may now
// have a continuation and a ledger.
func TestMigration0008FromV7(t *testing.T) {
	storetest.CheckMigration0008(t, upgradedFrom(t, 7, storetest.Migration0008Seed))
}

// Migration 0009 adds who approved a continuation and a worker's counted
// tokens, computed from the ledger of its current epoch.
func TestMigration0009FromV8(t *testing.T) {
	storetest.CheckMigration0009(t, upgradedFrom(t, 8, storetest.Migration0009Seed))
}

// Migration 0017 adds compact_blocked, retirement and the idle TTL to
// workers; SQLite rebuilds the table, whose rows other tables reference.
func TestMigration0017FromV16(t *testing.T) {
	storetest.CheckMigration0017(t, upgradedFrom(t, 16, storetest.Migration0017Seed))
}
