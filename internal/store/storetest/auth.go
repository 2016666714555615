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
	Group(t, s, "alpha")
	wantMissing(t, s, "Group", continuo.PrefixGroup, store.Tx.GroupGet, store.Tx.GroupGetByName, "bravo")
}

func testGroupList(t *testing.T, s store.Store) {
	wantListByName(t, s, "Group", store.Tx.GroupList, func() []continuo.Group {
		// Created out of name order, so that ID order and name order differ.
		c, a, b := Group(t, s, "charlie"), Group(t, s, "alpha"), Group(t, s, "bravo")
		return []continuo.Group{*a, *b, *c}
	}, normGroup)
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
	wantMissing(t, s, "Principal", continuo.PrefixPrincipal, store.Tx.PrincipalGet, store.Tx.PrincipalGetByName, "nobody")
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
