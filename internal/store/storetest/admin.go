package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// The operator's listings (store.AdminTx): each page starts at its
// inclusive From, holds at most Limit rows in its order, filters before
// it limits, and a limit below 1 is an error.

func adminTests() []test {
	return []test{
		{"GroupPage", testGroupPage},
		{"PrincipalPage", testPrincipalPage},
		{"ProjectPage", testProjectPage},
		{"GrantListProject", testGrantListProject},
		{"TokenPage", testTokenPage},
		{"OAuthClientPage", testOAuthClientPage},
		{"OAuthGrantPage", testOAuthGrantPage},
		{"NoLimit", testAdminPageNoLimit},
	}
}

func testGroupPage(t *testing.T, s store.Store) {
	ctx := t.Context()
	page := func(from string, limit int) []continuo.Group {
		return mustGet(t, s, "GroupPage", func(tx store.Tx) ([]continuo.Group, error) {
			return tx.GroupPage(ctx, store.NamePage{From: from, Limit: limit})
		})
	}
	if got := page("", 10); len(got) != 0 {
		t.Errorf("GroupPage of an empty store = %v", got)
	}
	// Created out of name order, so that ID order and name order differ.
	d, b, a, c := Group(t, s, "delta"), Group(t, s, "bravo"), Group(t, s, "alpha"), Group(t, s, "charlie")
	sameList(t, "GroupPage from the start", page("", 2), []continuo.Group{*a, *b}, normGroup)
	sameList(t, "GroupPage from charlie (inclusive)", page("charlie", 2), []continuo.Group{*c, *d}, normGroup)
	sameList(t, "GroupPage from between names", page("bz", 10), []continuo.Group{*c, *d}, normGroup)
	sameList(t, "GroupPage past the end", page("echo", 10), nil, normGroup)
}

func testPrincipalPage(t *testing.T, s store.Store) {
	ctx := t.Context()
	page := func(from, group string, limit int) []continuo.Principal {
		return mustGet(t, s, "PrincipalPage", func(tx store.Tx) ([]continuo.Principal, error) {
			return tx.PrincipalPage(ctx, store.PrincipalPage{From: from, GroupID: group, Limit: limit})
		})
	}
	g1, g2 := Group(t, s, "alpha"), Group(t, s, "bravo")
	dan, ann, cid, bob := Principal(t, s, g2.ID, "dan"), Principal(t, s, g1.ID, "ann"), Principal(t, s, g1.ID, "cid"), Principal(t, s, g2.ID, "bob")
	sameList(t, "PrincipalPage of all", page("", "", 3), []continuo.Principal{*ann, *bob, *cid}, normPrincipal)
	sameList(t, "PrincipalPage of all from cid", page("cid", "", 3), []continuo.Principal{*cid, *dan}, normPrincipal)
	// The group filter applies before the limit.
	sameList(t, "PrincipalPage of bravo", page("", g2.ID, 1), []continuo.Principal{*bob}, normPrincipal)
	sameList(t, "PrincipalPage of bravo from c", page("c", g2.ID, 5), []continuo.Principal{*dan}, normPrincipal)
	sameList(t, "PrincipalPage of alpha", page("", g1.ID, 5), []continuo.Principal{*ann, *cid}, normPrincipal)
	sameList(t, "PrincipalPage of an unknown group", page("", continuo.NewID(continuo.PrefixGroup, Base), 5), nil, normPrincipal)
}

func testProjectPage(t *testing.T, s store.Store) {
	ctx := t.Context()
	page := func(from string, limit int) []continuo.Project {
		return mustGet(t, s, "ProjectPage", func(tx store.Tx) ([]continuo.Project, error) {
			return tx.ProjectPage(ctx, store.NamePage{From: from, Limit: limit})
		})
	}
	c, a, b := Project(t, s, "charlie"), Project(t, s, "alpha"), Project(t, s, "bravo")
	sameList(t, "ProjectPage from the start", page("", 2), []continuo.Project{*a, *b}, normProject)
	sameList(t, "ProjectPage from bravo", page("bravo", 2), []continuo.Project{*b, *c}, normProject)
}

func testGrantListProject(t *testing.T, s store.Store) {
	ctx := t.Context()
	g1, g2, g3 := Group(t, s, "alpha"), Group(t, s, "bravo"), Group(t, s, "charlie")
	p, q := Project(t, s, "web"), Project(t, s, "api")
	Grant(t, s, p.ID, g2.ID, continuo.AccessWrite)
	Grant(t, s, p.ID, g1.ID, continuo.AccessRead)
	Grant(t, s, q.ID, g3.ID, continuo.AccessRead)
	got := mustGet(t, s, "GrantListProject", func(tx store.Tx) ([]continuo.Grant, error) { return tx.GrantListProject(ctx, p.ID) })
	want := []continuo.Grant{{ProjectID: p.ID, GroupID: g1.ID, Access: continuo.AccessRead}, {ProjectID: p.ID, GroupID: g2.ID, Access: continuo.AccessWrite}}
	sameList(t, "GrantListProject (by group ID)", got, want, identity)
	none := mustGet(t, s, "GrantListProject", func(tx store.Tx) ([]continuo.Grant, error) {
		return tx.GrantListProject(ctx, Project(t, s, "empty").ID)
	})
	sameList(t, "GrantListProject of a project without grants", none, nil, identity)
}

func testTokenPage(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := Group(t, s, "alpha")
	ann, bob := Principal(t, s, g.ID, "ann"), Principal(t, s, g.ID, "bob")
	now := Base.Add(time.Hour)
	mk := func(p *continuo.Principal, hash string, edit func(*continuo.Token)) *continuo.Token {
		k := &continuo.Token{ID: continuo.NewID(continuo.PrefixToken, Base), PrincipalID: p.ID, Hash: hash,
			Scopes: []continuo.Scope{continuo.ScopeSessionsRead}, CreatedAt: Base}
		if edit != nil {
			edit(k)
		}
		MustWrite(t, s, func(tx store.Tx) error { return tx.TokenCreate(ctx, k) })
		return k
	}
	at := func(d time.Duration) *time.Time { v := now.Add(d); return &v }
	t1 := mk(ann, "h1", nil)
	t2 := mk(bob, "h2", func(k *continuo.Token) { k.ExpiresAt = at(0) }) // expires exactly now: expired
	t3 := mk(ann, "h3", func(k *continuo.Token) { k.ExpiresAt = at(time.Millisecond) })
	t4 := mk(ann, "h4", nil)
	MustWrite(t, s, func(tx store.Tx) error { return tx.TokenRevoke(ctx, store.TokenRevokeParams{ID: t4.ID, At: Base}) })
	t4.RevokedAt = &Base
	t5 := mk(bob, "h5", nil)
	page := func(p store.TokenPage) []continuo.Token {
		return mustGet(t, s, "TokenPage", func(tx store.Tx) ([]continuo.Token, error) { return tx.TokenPage(ctx, p) })
	}
	sameList(t, "TokenPage newest first", page(store.TokenPage{Limit: 3}), []continuo.Token{*t5, *t4, *t3}, normToken)
	sameList(t, "TokenPage from t3 (inclusive)", page(store.TokenPage{From: t3.ID, Limit: 3}), []continuo.Token{*t3, *t2, *t1}, normToken)
	sameList(t, "TokenPage of ann", page(store.TokenPage{PrincipalID: ann.ID, Limit: 2}), []continuo.Token{*t4, *t3}, normToken)
	sameList(t, "TokenPage of ann from t3", page(store.TokenPage{PrincipalID: ann.ID, From: t3.ID, Limit: 5}), []continuo.Token{*t3, *t1}, normToken)
	sameList(t, "TokenPage live now", page(store.TokenPage{LiveAt: &now, Limit: 5}), []continuo.Token{*t5, *t3, *t1}, normToken)
	sameList(t, "TokenPage of bob live now", page(store.TokenPage{PrincipalID: bob.ID, LiveAt: &now, Limit: 5}), []continuo.Token{*t5}, normToken)
	sameList(t, "TokenPage live a second later", page(store.TokenPage{LiveAt: at(time.Second), Limit: 5}), []continuo.Token{*t5, *t1}, normToken)
}

func testOAuthClientPage(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := Group(t, s, "alpha")
	ann := Principal(t, s, g.ID, "ann")
	a, b, c := OAuthClient(t, s, "first"), OAuthClient(t, s, "second"), OAuthClient(t, s, "third")
	OAuthGrant(t, s, a.ID, ann.ID)
	OAuthGrant(t, s, a.ID, ann.ID)
	gone := OAuthGrant(t, s, a.ID, ann.ID)
	OAuthGrant(t, s, c.ID, ann.ID)
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.OAuthGrantRevoke(ctx, gone.ID, Base); err != nil {
			return err
		}
		return tx.OAuthClientRevoke(ctx, c.ID, Base)
	})
	c.RevokedAt = &Base
	page := func(from string, limit int) []store.OAuthClientGrants {
		return mustGet(t, s, "OAuthClientPage", func(tx store.Tx) ([]store.OAuthClientGrants, error) {
			return tx.OAuthClientPage(ctx, store.IDPage{From: from, Limit: limit})
		})
	}
	got := page("", 2)
	if len(got) != 2 {
		t.Fatalf("OAuthClientPage = %d clients, want 2", len(got))
	}
	same(t, "OAuthClientPage[0]", got[0].Client, *c, normOAuthClient)
	same(t, "OAuthClientPage[1]", got[1].Client, *b, normOAuthClient)
	// A revoked client's grants count as they are: revoking it revokes them
	// in the service, not here.
	if got[0].ActiveGrants != 1 || got[1].ActiveGrants != 0 {
		t.Errorf("active grants = %d, %d, want 1, 0", got[0].ActiveGrants, got[1].ActiveGrants)
	}
	rest := page(b.ID, 5)
	if len(rest) != 2 || rest[0].Client.ID != b.ID || rest[1].Client.ID != a.ID || rest[1].ActiveGrants != 2 {
		t.Errorf("OAuthClientPage from %s = %+v, want second (0), first (2)", b.ID, rest)
	}
}

func testOAuthGrantPage(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := Group(t, s, "alpha")
	ann := Principal(t, s, g.ID, "ann")
	a, b := OAuthClient(t, s, "first"), OAuthClient(t, s, "second")
	g1, g2, g3, g4 := OAuthGrant(t, s, a.ID, ann.ID), OAuthGrant(t, s, b.ID, ann.ID), OAuthGrant(t, s, a.ID, ann.ID), OAuthGrant(t, s, a.ID, ann.ID)
	page := func(p store.OAuthGrantPage) []continuo.OAuthGrant {
		return mustGet(t, s, "OAuthGrantPage", func(tx store.Tx) ([]continuo.OAuthGrant, error) { return tx.OAuthGrantPage(ctx, p) })
	}
	sameList(t, "OAuthGrantPage newest first", page(store.OAuthGrantPage{Limit: 3}), []continuo.OAuthGrant{*g4, *g3, *g2}, normOAuthGrant)
	sameList(t, "OAuthGrantPage from g2", page(store.OAuthGrantPage{From: g2.ID, Limit: 3}), []continuo.OAuthGrant{*g2, *g1}, normOAuthGrant)
	sameList(t, "OAuthGrantPage of first", page(store.OAuthGrantPage{ClientID: a.ID, Limit: 2}), []continuo.OAuthGrant{*g4, *g3}, normOAuthGrant)
	sameList(t, "OAuthGrantPage of first from g3", page(store.OAuthGrantPage{ClientID: a.ID, From: g3.ID, Limit: 5}),
		[]continuo.OAuthGrant{*g3, *g1}, normOAuthGrant)
	sameList(t, "OAuthGrantPage of second", page(store.OAuthGrantPage{ClientID: b.ID, Limit: 5}), []continuo.OAuthGrant{*g2}, normOAuthGrant)
}

func testAdminPageNoLimit(t *testing.T, s store.Store) {
	ctx := t.Context()
	calls := map[string]func(tx store.Tx) error{
		"GroupPage":     func(tx store.Tx) error { _, err := tx.GroupPage(ctx, store.NamePage{}); return err },
		"PrincipalPage": func(tx store.Tx) error { _, err := tx.PrincipalPage(ctx, store.PrincipalPage{}); return err },
		"ProjectPage":   func(tx store.Tx) error { _, err := tx.ProjectPage(ctx, store.NamePage{Limit: -1}); return err },
		"TokenPage":     func(tx store.Tx) error { _, err := tx.TokenPage(ctx, store.TokenPage{}); return err },
		"OAuthClientPage": func(tx store.Tx) error {
			_, err := tx.OAuthClientPage(ctx, store.IDPage{})
			return err
		},
		"OAuthGrantPage": func(tx store.Tx) error { _, err := tx.OAuthGrantPage(ctx, store.OAuthGrantPage{}); return err },
	}
	names := make([]string, 0, len(calls))
	for n := range calls {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := s.Read(ctx, calls[n]); err == nil {
			t.Errorf("%s without a limit: no error", n)
		}
	}
}
