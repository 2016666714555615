package sqlite_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestTimelineQueryPlans: each count of TaskTimeline reads a range of a
// covering index (migration 0011), never the table, and sorts nothing;
// LedgerOfSwarm reads the swarm's workers by index and each one's epoch by
// the ledger's primary key.
func TestTimelineQueryPlans(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	open(t, path, nil)
	raw := rawDB(t, path)
	for _, tc := range []struct{ q, want string }{
		{"SELECT 0, count(*) FROM tasks WHERE swarm_id = ? AND created_at >= ? AND created_at < ?",
			"SEARCH tasks USING COVERING INDEX tasks_created (swarm_id=? AND created_at>? AND created_at<?)"},
		{"SELECT 0, count(*) FROM tasks WHERE swarm_id = ? AND ended_at >= ? AND ended_at < ?",
			"SEARCH tasks USING COVERING INDEX tasks_ended (swarm_id=? AND ended_at>? AND ended_at<?)"},
		{"SELECT l.tokens FROM workers w JOIN context_ledger l ON l.worker_id = w.id AND l.epoch = w.epoch WHERE w.swarm_id = ? AND l.source IN ('host_exact', 'estimate')",
			"SEARCH w USING INDEX workers_swarm (swarm_id=?); SEARCH l USING PRIMARY KEY (worker_id=? AND epoch=? AND source=?)"},
	} {
		p := queryPlan(t, raw, tc.q, 1, 2, 3)
		if !strings.Contains(p, tc.want) || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("%s\nplan: %s, want %s", tc.q, p, tc.want)
		}
	}
}
