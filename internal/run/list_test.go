package run_test

import (
	"slices"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/run"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/stores"
)

func TestList(t *testing.T) { stores.Each(t, testList) }

// List pages the caller group's runs in a project, newest first; another
// group's runs there are not listed; a project the group does not reach is
// not_found, and without runtime:read the list is forbidden.
func testList(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	s := run.New(f.store, f.auth, run.Options{Key: []byte("k")}) // not started: nothing runs them
	var mine []string
	create := func(c *continuo.Caller) string {
		var r *continuo.Run
		if err := f.store.Write(ctx, func(tx store.Tx) (err error) {
			r, err = s.Enqueue(ctx, tx, c, run.Draft{Kind: continuo.RunValidation, ProjectID: f.project.ID, Check: "test", Dir: f.dir,
				Spec: run.CommandSpec{Command: []string{"true"}}.JSON()})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	for range 5 {
		mine = append(mine, create(f.admin))
	}
	theirs := create(f.other)
	slices.Reverse(mine)

	var got []string
	before := ""
	for range 5 {
		page, err := s.List(ctx, f.admin, "p", before, 2)
		if err != nil {
			t.Fatal(err)
		}
		if page.Project.ID != f.project.ID {
			t.Fatalf("page of project %s", page.Project.ID)
		}
		for _, r := range page.Runs {
			got = append(got, r.ID)
		}
		if before = page.Next; before == "" {
			break
		}
	}
	if !slices.Equal(got, mine) {
		t.Errorf("the admin's runs by page: %v, want %v", got, mine)
	}
	page, err := s.List(ctx, f.other, f.project.ID, "", 0)
	if err != nil || len(page.Runs) != 1 || page.Runs[0].ID != theirs || page.Next != "" {
		t.Errorf("the other group's list: %+v, %v", page, err)
	}
	if _, err := s.List(ctx, f.admin, "no-such-project", "", 0); continuo.ErrorCode(err) != continuo.CodeNotFound {
		t.Errorf("unknown project: %v", err)
	}
	if err := f.auth.Revoke(ctx, "p", "rivals"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx, f.other, "p", "", 0); continuo.ErrorCode(err) != continuo.CodeNotFound {
		t.Errorf("a project no longer granted: %v", err)
	}
	reader := &continuo.Caller{PrincipalID: f.admin.PrincipalID, GroupID: f.admin.GroupID, Scopes: []continuo.Scope{continuo.ScopeSessionsRead}}
	if _, err := s.List(ctx, reader, "p", "", 0); continuo.ErrorCode(err) != continuo.CodeForbidden {
		t.Errorf("without runtime:read: %v", err)
	}
	for _, bad := range []struct {
		before string
		limit  int
	}{{"", 51}, {"", -1}, {"ses_1", 0}} {
		if _, err := s.List(ctx, f.admin, "p", bad.before, bad.limit); continuo.ErrorCode(err) != continuo.CodeInvalidInput {
			t.Errorf("List(before %q, limit %d): %v", bad.before, bad.limit, err)
		}
	}
}
