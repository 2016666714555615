package sqlite_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRunRecentPlan: a page of a project's runs is a range of runs_recent
// read backwards, never a sort of the project's runs (the query as
// sqlstore/run_recent.go writes it).
func TestRunRecentPlan(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	open(t, path, nil)
	raw := rawDB(t, path)
	for _, q := range []string{
		"SELECT * FROM runs WHERE project_id = ? AND group_id = ? ORDER BY id DESC LIMIT ?",
		"SELECT * FROM runs WHERE project_id = ? AND group_id = ? AND id < ? ORDER BY id DESC LIMIT ?",
	} {
		if p := queryPlan(t, raw, q, 1, 2, 3, 4); !strings.Contains(p, "INDEX runs_recent (project_id=? AND group_id=?") || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("%s\nplan: %s, want a range of runs_recent without a sort", q, p)
		}
	}
}
