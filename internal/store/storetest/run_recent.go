package storetest

import (
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// RunRecent pages one group's runs in one project, newest first: another
// group's runs in the same project and the group's runs in another
// project are never listed; Before pages on; Limit ≤ 0 is 100.
func testRunRecent(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := Setup(t, s, "alpha")
	b := Setup(t, s, "beta")
	other := &continuo.Project{ID: continuo.NewID(continuo.PrefixProject, Base), Name: "alpha-other", Writable: true, CreatedAt: Base}
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.ProjectCreate(ctx, other); err != nil {
			return err
		}
		// beta reaches alpha's project too: its runs there are beta's.
		return tx.GrantSet(ctx, continuo.Grant{ProjectID: a.Project.ID, GroupID: b.Group.ID, Access: continuo.AccessWrite})
	})
	var mine []string
	MustWrite(t, s, func(tx store.Tx) error {
		mine = nil
		for i := range 103 {
			r := NewRun(a.Group.ID, a.Project.ID, "/src/a", fmt.Sprintf("c%d", i))
			if i%2 == 1 {
				r.Kind, r.Check, r.ProviderID = continuo.RunAgent, "", "model"
			}
			if err := tx.RunCreate(ctx, r); err != nil {
				return err
			}
			mine = append(mine, r.ID)
			for _, o := range []*continuo.Run{NewRun(b.Group.ID, a.Project.ID, "/src/a", "theirs"), NewRun(a.Group.ID, other.ID, "/src/o", "elsewhere")} {
				if i < 3 {
					if err := tx.RunCreate(ctx, o); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	sort.Sort(sort.Reverse(sort.StringSlice(mine)))
	recent := func(p store.RunRecentParams) []string {
		t.Helper()
		return runIDs(mustGet(t, s, fmt.Sprintf("RunRecent(%+v)", p), func(tx store.Tx) ([]continuo.Run, error) { return tx.RunRecent(ctx, p) }))
	}
	p := store.RunRecentParams{GroupID: a.Group.ID, ProjectID: a.Project.ID}
	for _, tc := range []struct {
		limit int
		want  []string
	}{{0, mine[:100]}, {-1, mine[:100]}, {500, mine}, {5, mine[:5]}} {
		p.Limit = tc.limit
		if got := recent(p); !slices.Equal(got, tc.want) {
			t.Errorf("RunRecent(Limit %d) = %d runs %v…, want the newest %d by ID", tc.limit, len(got), got[:min(3, len(got))], len(tc.want))
		}
	}
	// Paging with Before visits every run once, in order.
	var paged []string
	p.Limit, p.Before = 10, ""
	for range 20 {
		page := recent(p)
		if len(page) == 0 {
			break
		}
		paged = append(paged, page...)
		p.Before = page[len(page)-1]
	}
	if !slices.Equal(paged, mine) {
		t.Errorf("paging by Before: %d runs, want %d in order", len(paged), len(mine))
	}
	if got := recent(store.RunRecentParams{GroupID: a.Group.ID, ProjectID: a.Project.ID, Before: mine[len(mine)-1]}); len(got) != 0 {
		t.Errorf("before the oldest: %v", got)
	}
	if got := recent(store.RunRecentParams{GroupID: b.Group.ID, ProjectID: a.Project.ID}); len(got) != 3 {
		t.Errorf("beta's runs in alpha's project: %d, want 3", len(got))
	}
	if got := recent(store.RunRecentParams{GroupID: b.Group.ID, ProjectID: other.ID}); len(got) != 0 {
		t.Errorf("beta's runs in a project it has none in: %v", got)
	}
	// Fields round-trip as RunGet reads them.
	r := CreateRun(t, s, a.Group.ID, other.ID, "/src/o", "last", runEnded(continuo.RunFailed), func(r *continuo.Run) {
		r.ID = continuo.NewID(continuo.PrefixRun, Base.Add(1e9))
		code := 2
		r.ExitCode, r.ErrorKind, r.SourceHead, r.SourceTree, r.SessionID = &code, "exit_status", "h", "t", a.Session.ID
	})
	got := mustGet(t, s, "RunRecent", func(tx store.Tx) ([]continuo.Run, error) {
		return tx.RunRecent(ctx, store.RunRecentParams{GroupID: a.Group.ID, ProjectID: other.ID, Limit: 1})
	})
	sameList(t, "RunRecent's newest", got, []continuo.Run{*r}, normRun)
	_, err := read(t, s, func(tx store.Tx) ([]continuo.Run, error) {
		return tx.RunRecent(ctx, store.RunRecentParams{ProjectID: other.ID})
	})
	if err == nil {
		t.Errorf("RunRecent without a group: no error")
	}
}
