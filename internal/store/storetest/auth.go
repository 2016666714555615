package storetest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// Names in these tests are lower-case ASCII, so that "ordered by name"
// means the same under any reasonable collation.

func groupTests() []test {
	return []test{
		{"CreateGet", testGroupCreateGet},
		{"DuplicateName", testGroupDuplicateName},
		{"DuplicateID", testGroupDuplicateID},
		{"Missing", testGroupMissing},
		{"ListOrder", testGroupList},
	}
}

func testGroupCreateGet(t *testing.T, s store.Store) {
	ctx := t.Context()
	want := &continuo.Group{ID: continuo.NewID(continuo.PrefixGroup, Base), Name: "alpha", CreatedAt: Base.Add(1500 * time.Millisecond)}
	MustWrite(t, s, func(tx store.Tx) error { return tx.GroupCreate(ctx, want) })

	got := mustGet(t, s, "GroupGet", func(tx store.Tx) (*continuo.Group, error) { return tx.GroupGet(ctx, want.ID) })
	same(t, "GroupGet", *got, *want, normGroup)
	got = mustGet(t, s, "GroupGetByName", func(tx store.Tx) (*continuo.Group, error) { return tx.GroupGetByName(ctx, "alpha") })
	same(t, "GroupGetByName", *got, *want, normGroup)
}

func testGroupDuplicateName(t *testing.T, s store.Store) {
	ctx := t.Context()
	first := Group(t, s, "alpha")
	dup := &continuo.Group{ID: continuo.NewID(continuo.PrefixGroup, Base), Name: "alpha", CreatedAt: Base}
	err := s.Write(ctx, func(tx store.Tx) error { return tx.GroupCreate(ctx, dup) })
	wantErr(t, err, store.ErrConflict, "GroupCreate with a taken name")

	list := mustGet(t, s, "GroupList", func(tx store.Tx) ([]continuo.Group, error) { return tx.GroupList(ctx) })
	sameList(t, "GroupList after the refused duplicate", list, []continuo.Group{*first}, normGroup)
}

func testGroupDuplicateID(t *testing.T, s store.Store) {
	ctx := t.Context()
	first := Group(t, s, "alpha")
	dup := &continuo.Group{ID: first.ID, Name: "bravo", CreatedAt: Base}
	err := s.Write(ctx, func(tx store.Tx) error { return tx.GroupCreate(ctx, dup) })
	wantErr(t, err, store.ErrConflict, "GroupCreate with a taken ID")
}

func testGroupMissing(t *testing.T, s store.Store) {
	ctx := t.Context()
	Group(t, s, "alpha")
	_, err := read(t, s, func(tx store.Tx) (*continuo.Group, error) {
		return tx.GroupGet(ctx, continuo.NewID(continuo.PrefixGroup, Base))
	})
	wantErr(t, err, store.ErrNotFound, "GroupGet of an unknown ID")
	_, err = read(t, s, func(tx store.Tx) (*continuo.Group, error) { return tx.GroupGetByName(ctx, "bravo") })
	wantErr(t, err, store.ErrNotFound, "GroupGetByName of an unknown name")
}

func testGroupList(t *testing.T, s store.Store) {
	ctx := t.Context()
	empty := mustGet(t, s, "GroupList", func(tx store.Tx) ([]continuo.Group, error) { return tx.GroupList(ctx) })
	if len(empty) != 0 {
		t.Errorf("GroupList of an empty store = %v, want none", empty)
	}
	// Created out of name order, so that ID order and name order differ.
	c, a, b := Group(t, s, "charlie"), Group(t, s, "alpha"), Group(t, s, "bravo")
	list := mustGet(t, s, "GroupList", func(tx store.Tx) ([]continuo.Group, error) { return tx.GroupList(ctx) })
	sameList(t, "GroupList (by name)", list, []continuo.Group{*a, *b, *c}, normGroup)
}

func principalTests() []test {
	return []test{
		{"CreateGet", testPrincipalCreateGet},
		{"DuplicateName", testPrincipalDuplicateName},
		{"Missing", testPrincipalMissing},
		{"UnknownGroup", testPrincipalUnknownGroup},
		{"ListOrder", testPrincipalList},
	}
}

func testPrincipalCreateGet(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := Group(t, s, "alpha")
	want := &continuo.Principal{ID: continuo.NewID(continuo.PrefixPrincipal, Base), Name: "ann", GroupID: g.ID,
		CreatedAt: Base.Add(time.Minute)}
	MustWrite(t, s, func(tx store.Tx) error { return tx.PrincipalCreate(ctx, want) })

	got := mustGet(t, s, "PrincipalGet", func(tx store.Tx) (*continuo.Principal, error) { return tx.PrincipalGet(ctx, want.ID) })
	same(t, "PrincipalGet", *got, *want, normPrincipal)
	got = mustGet(t, s, "PrincipalGetByName", func(tx store.Tx) (*continuo.Principal, error) { return tx.PrincipalGetByName(ctx, "ann") })
	same(t, "PrincipalGetByName", *got, *want, normPrincipal)
}

func testPrincipalDuplicateName(t *testing.T, s store.Store) {
	ctx := t.Context()
	g1, g2 := Group(t, s, "alpha"), Group(t, s, "bravo")
	first := Principal(t, s, g1.ID, "ann")
	// Principal names are unique across groups.
	dup := &continuo.Principal{ID: continuo.NewID(continuo.PrefixPrincipal, Base), Name: "ann", GroupID: g2.ID, CreatedAt: Base}
	err := s.Write(ctx, func(tx store.Tx) error { return tx.PrincipalCreate(ctx, dup) })
	wantErr(t, err, store.ErrConflict, "PrincipalCreate with a taken name")
	dupID := &continuo.Principal{ID: first.ID, Name: "bob", GroupID: g1.ID, CreatedAt: Base}
	err = s.Write(ctx, func(tx store.Tx) error { return tx.PrincipalCreate(ctx, dupID) })
	wantErr(t, err, store.ErrConflict, "PrincipalCreate with a taken ID")

	list := mustGet(t, s, "PrincipalList", func(tx store.Tx) ([]continuo.Principal, error) { return tx.PrincipalList(ctx) })
	sameList(t, "PrincipalList after the refused duplicates", list, []continuo.Principal{*first}, normPrincipal)
}

func testPrincipalMissing(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := read(t, s, func(tx store.Tx) (*continuo.Principal, error) {
		return tx.PrincipalGet(ctx, continuo.NewID(continuo.PrefixPrincipal, Base))
	})
	wantErr(t, err, store.ErrNotFound, "PrincipalGet of an unknown ID")
	_, err = read(t, s, func(tx store.Tx) (*continuo.Principal, error) { return tx.PrincipalGetByName(ctx, "nobody") })
	wantErr(t, err, store.ErrNotFound, "PrincipalGetByName of an unknown name")
}

func testPrincipalUnknownGroup(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := &continuo.Principal{ID: continuo.NewID(continuo.PrefixPrincipal, Base), Name: "ann",
		GroupID: continuo.NewID(continuo.PrefixGroup, Base), CreatedAt: Base}
	if err := s.Write(ctx, func(tx store.Tx) error { return tx.PrincipalCreate(ctx, p) }); err == nil {
		t.Error("PrincipalCreate in an unknown group succeeded, want an error")
	}
	_, err := read(t, s, func(tx store.Tx) (*continuo.Principal, error) { return tx.PrincipalGet(ctx, p.ID) })
	wantErr(t, err, store.ErrNotFound, "PrincipalGet after the refused create")
}

func testPrincipalList(t *testing.T, s store.Store) {
	ctx := t.Context()
	g1, g2 := Group(t, s, "alpha"), Group(t, s, "bravo")
	carl := Principal(t, s, g1.ID, "carl")
	ann := Principal(t, s, g2.ID, "ann")
	bob := Principal(t, s, g1.ID, "bob")
	list := mustGet(t, s, "PrincipalList", func(tx store.Tx) ([]continuo.Principal, error) { return tx.PrincipalList(ctx) })
	sameList(t, "PrincipalList (by name, every group)", list, []continuo.Principal{*ann, *bob, *carl}, normPrincipal)
}

func tokenTests() []test {
	return []test{
		{"CreateGet", testTokenCreateGet},
		{"NilExpiry", testTokenNilExpiry},
		{"Scopes", testTokenScopes},
		{"DuplicateHash", testTokenDuplicateHash},
		{"Missing", testTokenMissing},
		{"Revoke", testTokenRevoke},
		{"RevokeUnknown", testTokenRevokeUnknown},
		{"ListOrder", testTokenList},
	}
}

func newToken(principalID, hash string, scopes ...continuo.Scope) *continuo.Token {
	return &continuo.Token{ID: continuo.NewID(continuo.PrefixToken, Base), PrincipalID: principalID, Hash: hash,
		Scopes: scopes, CreatedAt: Base}
}

func testTokenCreateGet(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := Group(t, s, "alpha")
	p := Principal(t, s, g.ID, "ann")
	exp := Base.Add(30 * 24 * time.Hour).Add(250 * time.Millisecond)
	want := newToken(p.ID, "hash-1", continuo.ScopeSessionsRead, continuo.ScopeSessionsWrite)
	want.CreatedAt = Base.Add(time.Second)
	want.ExpiresAt = &exp
	MustWrite(t, s, func(tx store.Tx) error { return tx.TokenCreate(ctx, want) })

	got := mustGet(t, s, "TokenGetByHash", func(tx store.Tx) (*continuo.Token, error) { return tx.TokenGetByHash(ctx, "hash-1") })
	same(t, "TokenGetByHash", *got, *want, normToken)
	got = mustGet(t, s, "TokenGet", func(tx store.Tx) (*continuo.Token, error) { return tx.TokenGet(ctx, want.ID) })
	same(t, "TokenGet", *got, *want, normToken)
	if got.RevokedAt != nil {
		t.Errorf("RevokedAt of a new token = %v, want nil", *got.RevokedAt)
	}
}

func testTokenNilExpiry(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := Group(t, s, "alpha")
	p := Principal(t, s, g.ID, "ann")
	k := Token(t, s, p.ID, "hash-1", continuo.ScopeAdmin)
	got := mustGet(t, s, "TokenGet", func(tx store.Tx) (*continuo.Token, error) { return tx.TokenGet(ctx, k.ID) })
	if got.ExpiresAt != nil {
		t.Errorf("ExpiresAt = %v, want nil", *got.ExpiresAt)
	}
	if got.RevokedAt != nil {
		t.Errorf("RevokedAt = %v, want nil", *got.RevokedAt)
	}
	same(t, "TokenGet", *got, *k, normToken)
}

func testTokenScopes(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := Group(t, s, "alpha")
	p := Principal(t, s, g.ID, "ann")
	cases := map[string][]continuo.Scope{
		"h-one":   {continuo.ScopeRuntimeRead},
		"h-all":   continuo.AllScopes(),
		"h-order": {continuo.ScopeSwarmWork, continuo.ScopeAdmin, continuo.ScopeCodingAgent},
		"h-nil":   nil,
		"h-empty": {},
	}
	for hash, scopes := range cases {
		k := Token(t, s, p.ID, hash, scopes...)
		got := mustGet(t, s, "TokenGetByHash", func(tx store.Tx) (*continuo.Token, error) { return tx.TokenGetByHash(ctx, hash) })
		same(t, "scopes of "+hash, *got, *k, normToken) // order kept; nil and empty both come back empty
	}
}

func testTokenDuplicateHash(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := Group(t, s, "alpha")
	p := Principal(t, s, g.ID, "ann")
	first := Token(t, s, p.ID, "hash-1", continuo.ScopeAdmin)
	dup := newToken(p.ID, "hash-1", continuo.ScopeSessionsRead)
	err := s.Write(ctx, func(tx store.Tx) error { return tx.TokenCreate(ctx, dup) })
	wantErr(t, err, store.ErrConflict, "TokenCreate with a taken hash")
	dupID := newToken(p.ID, "hash-2", continuo.ScopeSessionsRead)
	dupID.ID = first.ID
	err = s.Write(ctx, func(tx store.Tx) error { return tx.TokenCreate(ctx, dupID) })
	wantErr(t, err, store.ErrConflict, "TokenCreate with a taken ID")

	got := mustGet(t, s, "TokenGetByHash", func(tx store.Tx) (*continuo.Token, error) { return tx.TokenGetByHash(ctx, "hash-1") })
	same(t, "TokenGetByHash after the refused duplicate", *got, *first, normToken)
}

func testTokenMissing(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := read(t, s, func(tx store.Tx) (*continuo.Token, error) { return tx.TokenGetByHash(ctx, "no-such-hash") })
	wantErr(t, err, store.ErrNotFound, "TokenGetByHash of an unknown hash")
	_, err = read(t, s, func(tx store.Tx) (*continuo.Token, error) {
		return tx.TokenGet(ctx, continuo.NewID(continuo.PrefixToken, Base))
	})
	wantErr(t, err, store.ErrNotFound, "TokenGet of an unknown ID")
}

func testTokenRevoke(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := Group(t, s, "alpha")
	p := Principal(t, s, g.ID, "ann")
	k := Token(t, s, p.ID, "hash-1", continuo.ScopeAdmin)
	other := Token(t, s, p.ID, "hash-2", continuo.ScopeAdmin)

	first := Base.Add(time.Hour + 125*time.Millisecond)
	MustWrite(t, s, func(tx store.Tx) error { return tx.TokenRevoke(ctx, store.TokenRevokeParams{ID: k.ID, At: first}) })
	got := mustGet(t, s, "TokenGetByHash", func(tx store.Tx) (*continuo.Token, error) { return tx.TokenGetByHash(ctx, "hash-1") })
	if got.RevokedAt == nil || !sameTime(*got.RevokedAt, first) {
		t.Errorf("RevokedAt after TokenRevoke = %s, want %s", showTime(got.RevokedAt), first)
	}

	// Revoking again keeps the first time.
	MustWrite(t, s, func(tx store.Tx) error {
		return tx.TokenRevoke(ctx, store.TokenRevokeParams{ID: k.ID, At: first.Add(time.Hour)})
	})
	got = mustGet(t, s, "TokenGet", func(tx store.Tx) (*continuo.Token, error) { return tx.TokenGet(ctx, k.ID) })
	if got.RevokedAt == nil || !sameTime(*got.RevokedAt, first) {
		t.Errorf("RevokedAt after a second TokenRevoke = %s, want the first time %s", showTime(got.RevokedAt), first)
	}
	want := *k
	want.RevokedAt = &first
	same(t, "revoked token", *got, want, normToken)

	// The other token is untouched.
	got = mustGet(t, s, "TokenGet", func(tx store.Tx) (*continuo.Token, error) { return tx.TokenGet(ctx, other.ID) })
	same(t, "token that was not revoked", *got, *other, normToken)
}

func testTokenRevokeUnknown(t *testing.T, s store.Store) {
	ctx := t.Context()
	err := s.Write(ctx, func(tx store.Tx) error {
		return tx.TokenRevoke(ctx, store.TokenRevokeParams{ID: continuo.NewID(continuo.PrefixToken, Base), At: Base})
	})
	wantErr(t, err, store.ErrNotFound, "TokenRevoke of an unknown token")
}

func testTokenList(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := Group(t, s, "alpha")
	p1 := Principal(t, s, g.ID, "ann")
	p2 := Principal(t, s, g.ID, "bob")
	var want []continuo.Token
	for i, hash := range []string{"hash-c", "hash-b", "hash-a", "hash-e", "hash-d"} {
		want = append(want, *Token(t, s, []string{p1.ID, p2.ID}[i%2], hash, continuo.ScopeAdmin))
	}
	// Tokens are listed by ID, whatever their creation order or hash.
	slices.SortFunc(want, func(a, b continuo.Token) int { return strings.Compare(a.ID, b.ID) })
	list := mustGet(t, s, "TokenList", func(tx store.Tx) ([]continuo.Token, error) { return tx.TokenList(ctx) })
	sameList(t, "TokenList (by ID)", list, want, normToken)
}

func projectTests() []test {
	return []test{
		{"CreateGet", testProjectCreateGet},
		{"EmptyChecks", testProjectEmptyChecks},
		{"DuplicateName", testProjectDuplicateName},
		{"Missing", testProjectMissing},
		{"ListOrder", testProjectList},
	}
}

func testProjectCreateGet(t *testing.T, s store.Store) {
	ctx := t.Context()
	want := &continuo.Project{ID: continuo.NewID(continuo.PrefixProject, Base), Name: "web", Root: "/srv/web",
		Checks:   map[string]string{"test": "go test ./...", "vet": "go vet ./...", "quote": `echo "a b" 'c' \ ü`},
		Writable: true, CreatedAt: Base.Add(time.Second)}
	ro := &continuo.Project{ID: continuo.NewID(continuo.PrefixProject, Base), Name: "docs",
		Checks: map[string]string{"lint": "make lint"}, Writable: false, CreatedAt: Base}
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
	emptyChecks := &continuo.Project{ID: continuo.NewID(continuo.PrefixProject, Base), Name: "b", Checks: map[string]string{},
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
	ctx := t.Context()
	_, err := read(t, s, func(tx store.Tx) (*continuo.Project, error) {
		return tx.ProjectGet(ctx, continuo.NewID(continuo.PrefixProject, Base))
	})
	wantErr(t, err, store.ErrNotFound, "ProjectGet of an unknown ID")
	_, err = read(t, s, func(tx store.Tx) (*continuo.Project, error) { return tx.ProjectGetByName(ctx, "nope") })
	wantErr(t, err, store.ErrNotFound, "ProjectGetByName of an unknown name")
}

func testProjectList(t *testing.T, s store.Store) {
	ctx := t.Context()
	empty := mustGet(t, s, "ProjectList", func(tx store.Tx) ([]continuo.Project, error) { return tx.ProjectList(ctx) })
	if len(empty) != 0 {
		t.Errorf("ProjectList of an empty store = %v, want none", empty)
	}
	web, api, docs := Project(t, s, "web"), Project(t, s, "api"), Project(t, s, "docs")
	list := mustGet(t, s, "ProjectList", func(tx store.Tx) ([]continuo.Project, error) { return tx.ProjectList(ctx) })
	sameList(t, "ProjectList (by name)", list, []continuo.Project{*api, *docs, *web}, normProject)
}

func grantTests() []test {
	return []test{
		{"PutGet", testGrantPutGet},
		{"Upgrade", testGrantUpgrade},
		{"Missing", testGrantMissing},
		{"List", testGrantList},
	}
}

func getGrant(t *testing.T, s store.Store, projectID, groupID string) (continuo.Access, error) {
	t.Helper()
	return read(t, s, func(tx store.Tx) (continuo.Access, error) { return tx.GrantGet(t.Context(), projectID, groupID) })
}

func testGrantPutGet(t *testing.T, s store.Store) {
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
