package sqlstore

import (
	"context"
	"errors"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// RunRecent implements store.RunTx: a range of the project's runs
// (runs_recent) in ID order, read backwards from Before.
func (t *Tx) RunRecent(ctx context.Context, p store.RunRecentParams) ([]continuo.Run, error) {
	if p.GroupID == "" || p.ProjectID == "" {
		return nil, errors.New("store: RunRecent needs a group and a project")
	}
	where, args := "project_id = ? AND group_id = ?", []any{p.ProjectID, p.GroupID}
	if p.Before != "" {
		where += " AND id < ?"
		args = append(args, p.Before)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = runListDefault
	}
	return list(t, ctx, scanRun, "SELECT "+runCols+" FROM runs WHERE "+where+" ORDER BY id DESC LIMIT ?", append(args, limit)...)
}
