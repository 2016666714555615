package storetest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

func projectTests() []test {
	return []test{
		{"CreateGet", testProjectCreateGet},
		{"EmptyChecks", testProjectEmptyChecks},
		{"SetChecks", testProjectSetChecks},
		{"DuplicateName", testProjectDuplicateName},
		{"Missing", testProjectMissing},
		{"ListOrder", testProjectList},
		{"Delete", testProjectDelete},
	}
}

func testProjectCreateGet(t *testing.T, s store.Store) {
	ctx := t.Context()
	want := &continuo.Project{ID: continuo.NewID(continuo.PrefixProject, Base), Name: "web", Root: "/srv/web",
		Checks: map[string]continuo.Check{"test": {Command: []string{"go", "test", "./..."}, TimeoutSecs: 600, Env: []string{"GOFLAGS"}},
			"vet": {Command: []string{"go", "vet", "./..."}}, "quote": {Command: []string{"echo", "a b", `'c' \ ü`}}},
		Writable: true, CreatedAt: Base.Add(time.Second)}
	ro := &continuo.Project{ID: continuo.NewID(continuo.PrefixProject, Base), Name: "docs",
		Checks: map[string]continuo.Check{"lint": {Command: []string{"make", "lint"}}}, Writable: false, CreatedAt: Base}
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.ProjectCreate(ctx, want); err != nil {
			return err
		}
		return tx.ProjectCreate(ctx, ro)
	})

	got := mustGet(t, s, "ProjectGet", func(tx store.Tx) (*continuo.Project, error) { return tx.ProjectGet(ctx, want.ID) })
	same(t, "ProjectGet", *got, *want, normProject)
	if !got.Writable {
		t.Error("Writable = false, want true")
	}
	got = mustGet(t, s, "ProjectGetByName", func(tx store.Tx) (*continuo.Project, error) { return tx.ProjectGetByName(ctx, "web") })
	same(t, "ProjectGetByName", *got, *want, normProject)
	got = mustGet(t, s, "ProjectGetByName", func(tx store.Tx) (*continuo.Project, error) { return tx.ProjectGetByName(ctx, "docs") })
	same(t, "read-only project", *got, *ro, normProject)
	if got.Writable {
		t.Error("Writable = true, want false")
	}
}

func testProjectEmptyChecks(t *testing.T, s store.Store) {
	ctx := t.Context()
	nilChecks := &continuo.Project{ID: continuo.NewID(continuo.PrefixProject, Base), Name: "a", CreatedAt: Base}
	emptyChecks := &continuo.Project{ID: continuo.NewID(continuo.PrefixProject, Base), Name: "b", Checks: map[string]continuo.Check{},
		CreatedAt: Base}
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.ProjectCreate(ctx, nilChecks); err != nil {
			return err
		}
		return tx.ProjectCreate(ctx, emptyChecks)
	})
	for _, p := range []*continuo.Project{nilChecks, emptyChecks} {
		got := mustGet(t, s, "ProjectGet", func(tx store.Tx) (*continuo.Project, error) { return tx.ProjectGet(ctx, p.ID) })
		if len(got.Checks) != 0 {
			t.Errorf("Checks of project %s = %v, want empty", p.Name, got.Checks)
		}
		if got.Root != "" {
			t.Errorf("Root of project %s = %q, want empty", p.Name, got.Root)
		}
		same(t, "project "+p.Name, *got, *p, normProject)
	}
}

func testProjectDuplicateName(t *testing.T, s store.Store) {
	ctx := t.Context()
	first := Project(t, s, "web")
	dup := &continuo.Project{ID: continuo.NewID(continuo.PrefixProject, Base), Name: "web", CreatedAt: Base}
	err := s.Write(ctx, func(tx store.Tx) error { return tx.ProjectCreate(ctx, dup) })
	wantErr(t, err, store.ErrConflict, "ProjectCreate with a taken name")
	dupID := &continuo.Project{ID: first.ID, Name: "api", CreatedAt: Base}
	err = s.Write(ctx, func(tx store.Tx) error { return tx.ProjectCreate(ctx, dupID) })
	wantErr(t, err, store.ErrConflict, "ProjectCreate with a taken ID")
	list := mustGet(t, s, "ProjectList", func(tx store.Tx) ([]continuo.Project, error) { return tx.ProjectList(ctx) })
	sameList(t, "ProjectList after the refused duplicates", list, []continuo.Project{*first}, normProject)
}

func testProjectMissing(t *testing.T, s store.Store) {
	wantMissing(t, s, "Project", continuo.PrefixProject, store.Tx.ProjectGet, store.Tx.ProjectGetByName, "nope")
}

func testProjectList(t *testing.T, s store.Store) {
	wantListByName(t, s, "Project", store.Tx.ProjectList, func() []continuo.Project {
		web, api, docs := Project(t, s, "web"), Project(t, s, "api"), Project(t, s, "docs")
		return []continuo.Project{*api, *docs, *web}
	}, normProject)
}

func grantTests() []test {
	return []test{
		{"PutGet", testGrantSetGet},
		{"Upgrade", testGrantUpgrade},
		{"Missing", testGrantMissing},
		{"List", testGrantList},
		{"Delete", testGrantDelete},
	}
}

func getGrant(t *testing.T, s store.Store, projectID, groupID string) (continuo.Access, error) {
	t.Helper()
	return read(t, s, func(tx store.Tx) (continuo.Access, error) { return tx.GrantGet(t.Context(), projectID, groupID) })
}

func testGrantSetGet(t *testing.T, s store.Store) {
	g := Group(t, s, "alpha")
	r, w := Project(t, s, "reader"), Project(t, s, "writer")
	Grant(t, s, r.ID, g.ID, continuo.AccessRead)
	Grant(t, s, w.ID, g.ID, continuo.AccessWrite)
	for p, want := range map[string]continuo.Access{r.ID: continuo.AccessRead, w.ID: continuo.AccessWrite} {
		got, err := getGrant(t, s, p, g.ID)
		noErr(t, err, "GrantGet")
		if got != want {
			t.Errorf("GrantGet(%s) = %q, want %q", p, got, want)
		}
	}
}

func testGrantUpgrade(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := Group(t, s, "alpha")
	p := Project(t, s, "web")
	Grant(t, s, p.ID, g.ID, continuo.AccessRead)
	Grant(t, s, p.ID, g.ID, continuo.AccessWrite)
	got, err := getGrant(t, s, p.ID, g.ID)
	noErr(t, err, "GrantGet")
	if got != continuo.AccessWrite {
		t.Errorf("GrantGet after upgrade = %q, want write", got)
	}
	list := mustGet(t, s, "GrantList", func(tx store.Tx) ([]continuo.Grant, error) { return tx.GrantList(ctx, g.ID) })
	sameList(t, "GrantList after upgrade (one row)", list,
		[]continuo.Grant{{ProjectID: p.ID, GroupID: g.ID, Access: continuo.AccessWrite}}, identity)

	// A second put replaces the level both ways.
	Grant(t, s, p.ID, g.ID, continuo.AccessRead)
	got, err = getGrant(t, s, p.ID, g.ID)
	noErr(t, err, "GrantGet")
	if got != continuo.AccessRead {
		t.Errorf("GrantGet after downgrade = %q, want read", got)
	}
}

func testGrantMissing(t *testing.T, s store.Store) {
	g1, g2 := Group(t, s, "alpha"), Group(t, s, "bravo")
	p1, p2 := Project(t, s, "web"), Project(t, s, "api")
	Grant(t, s, p1.ID, g1.ID, continuo.AccessWrite)
	_, err := getGrant(t, s, p1.ID, g2.ID)
	wantErr(t, err, store.ErrNotFound, "GrantGet of another group's grant")
	_, err = getGrant(t, s, p2.ID, g1.ID)
	wantErr(t, err, store.ErrNotFound, "GrantGet of an ungranted project")
	_, err = getGrant(t, s, continuo.NewID(continuo.PrefixProject, Base), continuo.NewID(continuo.PrefixGroup, Base))
	wantErr(t, err, store.ErrNotFound, "GrantGet of unknown IDs")
}

func testGrantList(t *testing.T, s store.Store) {
	ctx := t.Context()
	g1, g2 := Group(t, s, "alpha"), Group(t, s, "bravo")
	p1, p2, p3 := Project(t, s, "web"), Project(t, s, "api"), Project(t, s, "docs")
	// Granted out of project order.
	Grant(t, s, p3.ID, g1.ID, continuo.AccessRead)
	Grant(t, s, p1.ID, g1.ID, continuo.AccessWrite)
	Grant(t, s, p1.ID, g2.ID, continuo.AccessRead)
	Grant(t, s, p2.ID, g2.ID, continuo.AccessWrite)

	list := func(groupID string) []continuo.Grant {
		t.Helper()
		return mustGet(t, s, "GrantList", func(tx store.Tx) ([]continuo.Grant, error) { return tx.GrantList(ctx, groupID) })
	}
	byProject := func(gs ...continuo.Grant) []continuo.Grant {
		slices.SortFunc(gs, func(a, b continuo.Grant) int { return strings.Compare(a.ProjectID, b.ProjectID) })
		return gs
	}
	sameList(t, "GrantList(alpha) (by project ID)", list(g1.ID), byProject(
		continuo.Grant{ProjectID: p3.ID, GroupID: g1.ID, Access: continuo.AccessRead},
		continuo.Grant{ProjectID: p1.ID, GroupID: g1.ID, Access: continuo.AccessWrite},
	), identity)
	sameList(t, "GrantList(bravo) (by project ID)", list(g2.ID), byProject(
		continuo.Grant{ProjectID: p2.ID, GroupID: g2.ID, Access: continuo.AccessWrite},
		continuo.Grant{ProjectID: p1.ID, GroupID: g2.ID, Access: continuo.AccessRead},
	), identity)
	if got := list(continuo.NewID(continuo.PrefixGroup, Base)); len(got) != 0 {
		t.Errorf("GrantList of an unknown group = %v, want none", got)
	}
}

// ProjectSetChecks replaces the checks of one project and of no other;
// an unknown project is ErrNotFound.
func testProjectSetChecks(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := &continuo.Project{ID: continuo.NewID(continuo.PrefixProject, Base), Name: "a", CreatedAt: Base,
		Checks: map[string]continuo.Check{"old": {Command: []string{"make"}}}}
	b := &continuo.Project{ID: continuo.NewID(continuo.PrefixProject, Base), Name: "b", CreatedAt: Base,
		Checks: map[string]continuo.Check{"keep": {Command: []string{"true"}}}}
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.ProjectCreate(ctx, a); err != nil {
			return err
		}
		return tx.ProjectCreate(ctx, b)
	})
	want := map[string]continuo.Check{"test": {Command: []string{"go", "test", "./..."}, TimeoutSecs: 900, Env: []string{"GOFLAGS"}}}
	MustWrite(t, s, func(tx store.Tx) error { return tx.ProjectSetChecks(ctx, a.ID, want) })
	got := mustGet(t, s, "ProjectGet", func(tx store.Tx) (*continuo.Project, error) { return tx.ProjectGet(ctx, a.ID) })
	a.Checks = want
	same(t, "after ProjectSetChecks", *got, *a, normProject)
	got = mustGet(t, s, "ProjectGet", func(tx store.Tx) (*continuo.Project, error) { return tx.ProjectGet(ctx, b.ID) })
	same(t, "the other project", *got, *b, normProject)
	err := s.Write(ctx, func(tx store.Tx) error {
		return tx.ProjectSetChecks(ctx, continuo.NewID(continuo.PrefixProject, Base), want)
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ProjectSetChecks of an unknown project = %v, want ErrNotFound", err)
	}
}

// ProjectDelete takes the project, its grants and its runs with their
// events and every session's evidence of them (here, a session of another
// project); other projects and what is theirs stay, and the name is free
// again.
func testProjectDelete(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := Group(t, s, "alpha")
	web, api := Project(t, s, "web"), Project(t, s, "api")
	Grant(t, s, web.ID, g.ID, continuo.AccessWrite)
	Grant(t, s, api.ID, g.ID, continuo.AccessRead)
	sess := Session(t, s, g.ID, api.ID, "api work")
	gone := []*continuo.Run{
		CreateRun(t, s, g.ID, web.ID, "/src/web", "test", runEnded(continuo.RunSucceeded)),
		CreateRun(t, s, g.ID, web.ID, "/src/web", "lint", runRunning, func(r *continuo.Run) { r.SessionID = sess.ID }),
	}
	kept := CreateRun(t, s, g.ID, api.ID, "/src/api", "test", runEnded(continuo.RunSucceeded))
	MustWrite(t, s, func(tx store.Tx) error {
		for _, r := range append(slices.Clone(gone), kept) {
			if err := tx.RunAppend(ctx, store.RunAppend{RunID: r.ID, Events: newEvents(r.ID, 1, 3, 0)}); err != nil {
				return err
			}
		}
		for _, r := range []*continuo.Run{gone[0], kept} {
			if err := tx.EvidenceAdd(ctx, continuo.Evidence{SessionID: sess.ID, Check: r.Check, RunID: r.ID, CreatedAt: Base}); err != nil {
				return err
			}
		}
		return nil
	})
	MustWrite(t, s, func(tx store.Tx) error { return tx.ProjectDelete(ctx, web.ID) })
	want := *kept
	want.EventSeq = 3
	sameList(t, "runs after ProjectDelete", listRuns(t, s, store.RunListParams{}), []continuo.Run{want}, normRun)
	if n := tableRows(t, s, "run_events"); n != 3 {
		t.Errorf("run_events rows after ProjectDelete = %d, want the other project's run's 3", n)
	}
	if ev := latestEvidence(t, s, sess.ID, 5); len(ev) != 1 || ev[0].Run.ID != kept.ID {
		t.Errorf("evidence after ProjectDelete = %v, want only of the other project's run", ev)
	}
	_, err := read(t, s, func(tx store.Tx) (*continuo.Project, error) { return tx.ProjectGet(ctx, web.ID) })
	wantErr(t, err, store.ErrNotFound, "ProjectGet of a deleted project")
	list := mustGet(t, s, "GrantList", func(tx store.Tx) ([]continuo.Grant, error) { return tx.GrantList(ctx, g.ID) })
	sameList(t, "GrantList after ProjectDelete", list, []continuo.Grant{{ProjectID: api.ID, GroupID: g.ID, Access: continuo.AccessRead}}, identity)
	err = s.Write(ctx, func(tx store.Tx) error { return tx.ProjectDelete(ctx, web.ID) })
	wantErr(t, err, store.ErrNotFound, "ProjectDelete of a deleted project")
	Project(t, s, "web")
}

// GrantDelete takes one group's grant on one project away.
func testGrantDelete(t *testing.T, s store.Store) {
	ctx := t.Context()
	g1, g2 := Group(t, s, "alpha"), Group(t, s, "bravo")
	p := Project(t, s, "web")
	Grant(t, s, p.ID, g1.ID, continuo.AccessWrite)
	Grant(t, s, p.ID, g2.ID, continuo.AccessRead)
	MustWrite(t, s, func(tx store.Tx) error { return tx.GrantDelete(ctx, p.ID, g1.ID) })
	_, err := getGrant(t, s, p.ID, g1.ID)
	wantErr(t, err, store.ErrNotFound, "GrantGet of a deleted grant")
	got, err := getGrant(t, s, p.ID, g2.ID)
	noErr(t, err, "GrantGet of the other group's grant")
	if got != continuo.AccessRead {
		t.Errorf("the other group's grant = %q, want read", got)
	}
	err = s.Write(ctx, func(tx store.Tx) error { return tx.GrantDelete(ctx, p.ID, g1.ID) })
	wantErr(t, err, store.ErrNotFound, "GrantDelete of a grant that is gone")
}
