package run

import (
	"context"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// List bounds: a page of a project's runs.
const (
	ListDefault = 20
	ListMax     = 50
)

// RunPage is one page of a project's runs, newest first. Next is the
// Before of the next page, "" after the last.
type RunPage struct {
	Project continuo.Project
	Runs    []continuo.Run
	Next    string
}

// List returns the caller group's runs in a project it reaches (by ID or
// name), newest first: those created before the run before names (""
// for the newest), at most limit (0: ListDefault; 1..ListMax). Another
// group's runs are not listed, and a project the group cannot reach is
// not_found.
func (s *Service) List(ctx context.Context, c *continuo.Caller, project, before string, limit int) (*RunPage, error) {
	if err := c.Require(continuo.ScopeRuntimeRead); err != nil {
		return nil, err
	}
	if limit == 0 {
		limit = ListDefault
	}
	if limit < 1 || limit > ListMax {
		return nil, continuo.Invalid("limit", "must be 1..%d", ListMax)
	}
	if before != "" && !continuo.ValidID(continuo.PrefixRun, before) {
		return nil, continuo.Invalid("before", "must be a run_… id")
	}
	var out *RunPage
	err := s.store.Read(ctx, func(tx store.Tx) error {
		p, _, err := s.auth.ResolveProject(ctx, tx, c, project, continuo.AccessRead)
		if err != nil {
			return err
		}
		rs, err := tx.RunRecent(ctx, store.RunRecentParams{GroupID: c.GroupID, ProjectID: p.ID, Before: before, Limit: limit + 1})
		if err != nil {
			return err
		}
		out = &RunPage{Project: *p, Runs: rs}
		if len(rs) > limit {
			out.Runs = rs[:limit]
			out.Next = rs[limit-1].ID
		}
		return nil
	})
	return out, err
}
