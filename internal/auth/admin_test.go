package auth_test

import (
	"slices"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/store/storetest"
)

// The operator's listings: every page is bounded, its cursor leads to the
// next one and nowhere else, filters apply before the limit, and an
// unknown filter is not_found.

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// walk follows a listing's pages from the start and returns them.
func walk[T any](t *testing.T, page func(from string) (*auth.Page[T], error), limit int) [][]T {
	t.Helper()
	var pages [][]T
	from := ""
	for i := 0; ; i++ {
		p, err := page(from)
		ok(t, err)
		if len(p.Items) > limit {
			t.Fatalf("page %d has %d items, the limit is %d", i, len(p.Items), limit)
		}
		pages = append(pages, p.Items)
		if p.Next == "" {
			return pages
		}
		if i > 100 {
			t.Fatal("the pages do not end")
		}
		from = p.Next
	}
}

func TestAdminPrincipalsAndGroups(t *testing.T) { stores.Each(t, testAdminPrincipalsAndGroups) }

func testAdminPrincipalsAndGroups(t *testing.T) {
	ctx := t.Context()
	a, _, _ := setup(t)
	for _, g := range []string{"ops", "dev"} {
		if _, err := a.CreateGroup(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	for i, name := range []string{"eve", "bob", "dan", "ann", "cid"} {
		group := "dev"
		if i%2 == 0 {
			group = "ops"
		}
		if _, err := a.CreatePrincipal(ctx, name, group); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.AddProject(ctx, auth.ProjectSpec{Name: "web"}, map[string]continuo.Access{"dev": continuo.AccessWrite}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AddProject(ctx, auth.ProjectSpec{Name: "api"}, map[string]continuo.Access{"dev": continuo.AccessRead, "ops": continuo.AccessRead}); err != nil {
		t.Fatal(err)
	}

	pages := walk(t, func(from string) (*auth.Page[auth.PrincipalInfo], error) {
		return a.PrincipalPage(ctx, auth.PrincipalQuery{From: from, Limit: 2})
	}, 2)
	var names []string
	for _, p := range pages {
		for _, it := range p {
			names = append(names, it.Name+"@"+it.Group)
		}
	}
	if want := []string{"ann@dev", "bob@dev", "cid@ops", "dan@ops", "eve@ops"}; !slices.Equal(names, want) || len(pages) != 3 {
		t.Errorf("principals over %d pages = %v, want %v over 3", len(pages), names, want)
	}
	dev, err := a.PrincipalPage(ctx, auth.PrincipalQuery{Group: "dev"})
	ok(t, err)
	if len(dev.Items) != 2 || dev.Items[0].Name != "ann" || dev.Items[1].Name != "bob" || dev.Next != "" {
		t.Errorf("principals of dev = %+v", dev)
	}
	if _, err := a.PrincipalPage(ctx, auth.PrincipalQuery{Group: "nobody"}); code(err) != continuo.CodeNotFound {
		t.Errorf("principals of an unknown group: %v", err)
	}
	if _, err := a.PrincipalPage(ctx, auth.PrincipalQuery{From: "<b>"}); code(err) != continuo.CodeInvalidInput {
		t.Errorf("a malformed cursor: %v", err)
	}

	gs, err := a.GroupPage(ctx, auth.NameQuery{})
	ok(t, err)
	if len(gs.Items) != 2 || gs.Items[0].Name != "dev" || gs.Items[1].Name != "ops" {
		t.Fatalf("groups = %+v", gs.Items)
	}
	d := gs.Items[0]
	if !slices.Equal(d.Principals, []string{"ann", "bob"}) || d.MorePrincipals ||
		len(d.Projects) != 2 || d.Projects[0].Project != "api" || d.Projects[0].Access != continuo.AccessRead ||
		d.Projects[1].Project != "web" || d.Projects[1].Access != continuo.AccessWrite {
		t.Errorf("group dev = %+v", d)
	}
	// A group names its first principals only, and says there are more.
	for i := range auth.GroupPrincipals {
		if _, err := a.CreatePrincipal(ctx, "ops-"+string(rune('a'+i)), "ops"); err != nil {
			t.Fatal(err)
		}
	}
	opsPage, err := a.GroupPage(ctx, auth.NameQuery{From: "ops"})
	ok(t, err)
	ops := opsPage.Items
	if len(ops) != 1 || len(ops[0].Principals) != auth.GroupPrincipals || !ops[0].MorePrincipals {
		t.Errorf("group ops = %+v", ops)
	}
}

func TestAdminProjects(t *testing.T) { stores.Each(t, testAdminProjects) }

func testAdminProjects(t *testing.T) {
	ctx := t.Context()
	a, _, _ := setup(t)
	for _, g := range []string{"ops", "dev"} {
		if _, err := a.CreateGroup(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	web, err := a.AddProject(ctx, auth.ProjectSpec{Name: "web", Checks: map[string]continuo.Check{
		"test": {Command: []string{"go", "test"}}, "lint": {Command: []string{"vet"}}}}, map[string]continuo.Access{"ops": continuo.AccessRead})
	ok(t, err)
	if _, err := a.AddProject(ctx, auth.ProjectSpec{Name: "api"}, nil); err != nil {
		t.Fatal(err)
	}

	// Grant and Revoke take the project's ID as well as its name.
	if err := a.Grant(ctx, web.ID, "dev", continuo.AccessWrite); err != nil {
		t.Fatal(err)
	}
	ps, err := a.ProjectPage(ctx, auth.NameQuery{Limit: 1})
	ok(t, err)
	if len(ps.Items) != 1 || ps.Items[0].Name != "api" || len(ps.Items[0].Grants) != 0 || ps.Next != "web" {
		t.Fatalf("first page = %+v", ps)
	}
	ps, err = a.ProjectPage(ctx, auth.NameQuery{From: ps.Next, Limit: 1})
	ok(t, err)
	w := ps.Items[0]
	if ps.Next != "" || w.ProjectID != web.ID || !slices.Equal(w.Checks, []string{"lint", "test"}) ||
		!slices.Equal(w.Grants, []auth.GroupAccess{{Group: "dev", Access: continuo.AccessWrite}, {Group: "ops", Access: continuo.AccessRead}}) {
		t.Errorf("second page = %+v", ps)
	}
	if err := a.Revoke(ctx, web.ID, "ops"); err != nil {
		t.Fatal(err)
	}
	if err := a.Revoke(ctx, web.ID, "ops"); code(err) != continuo.CodeNotFound {
		t.Errorf("revoking a grant twice: %v", err)
	}
	ps, err = a.ProjectPage(ctx, auth.NameQuery{From: "web"})
	ok(t, err)
	w = ps.Items[0]
	if !slices.Equal(w.Grants, []auth.GroupAccess{{Group: "dev", Access: continuo.AccessWrite}}) {
		t.Errorf("after the revoke: %+v", w.Grants)
	}
	if err := a.Grant(ctx, continuo.NewID(continuo.PrefixProject, time.Now()), "dev", continuo.AccessRead); code(err) != continuo.CodeNotFound {
		t.Errorf("grant on an unknown project ID: %v", err)
	}
}

func TestAdminTokens(t *testing.T) { stores.Each(t, testAdminTokens) }

func testAdminTokens(t *testing.T) {
	ctx := t.Context()
	a, _, clk := setup(t)
	read := []continuo.Scope{continuo.ScopeSessionsRead}
	var ids []string // oldest first
	for i, p := range []string{"ann", "bob", "ann", "ann", "bob"} {
		ttl := time.Duration(0)
		if i == 1 {
			ttl = time.Minute
		}
		tok, err := a.CreateToken(ctx, p, read, ttl)
		ok(t, err)
		ids = append(ids, tok.TokenID)
		clk.T = clk.T.Add(time.Millisecond)
	}
	if err := a.RevokeToken(ctx, ids[2]); err != nil {
		t.Fatal(err)
	}
	clk.T = clk.T.Add(time.Hour) // ids[1] expired

	var got []string
	states := map[string]string{}
	for _, p := range walk(t, func(from string) (*auth.Page[auth.TokenInfo], error) {
		return a.TokenPage(ctx, auth.TokenQuery{From: from, Limit: 2})
	}, 2) {
		for _, k := range p {
			got = append(got, k.TokenID)
			states[k.TokenID] = k.State
			if k.Group != k.Principal { // CreateToken made each a group of its name
				t.Errorf("token %s: group %q", k.TokenID, k.Group)
			}
		}
	}
	newest := slices.Clone(ids)
	slices.Reverse(newest)
	if !slices.Equal(got, newest) {
		t.Errorf("tokens = %v, want newest first %v", got, newest)
	}
	if states[ids[0]] != "active" || states[ids[1]] != "expired" || states[ids[2]] != "revoked" {
		t.Errorf("states = %v", states)
	}
	live, err := a.TokenPage(ctx, auth.TokenQuery{Principal: "ann", Live: true})
	ok(t, err)
	if len(live.Items) != 2 || live.Items[0].TokenID != ids[3] || live.Items[1].TokenID != ids[0] {
		t.Errorf("ann's live tokens = %+v", live.Items)
	}
	if _, err := a.TokenPage(ctx, auth.TokenQuery{Principal: "nobody"}); code(err) != continuo.CodeNotFound {
		t.Errorf("tokens of an unknown principal: %v", err)
	}
	if _, err := a.TokenPage(ctx, auth.TokenQuery{From: "tok_nope"}); code(err) != continuo.CodeInvalidInput {
		t.Errorf("a malformed cursor: %v", err)
	}
	big, err := a.TokenPage(ctx, auth.TokenQuery{Limit: 10_000})
	ok(t, err)
	if len(big.Items) != len(ids) {
		t.Errorf("a large limit: %d tokens", len(big.Items))
	}
}

func TestAdminOAuth(t *testing.T) { stores.Each(t, testAdminOAuth) }

func testAdminOAuth(t *testing.T) {
	ctx := t.Context()
	a, db, _ := setup(t)
	if _, err := a.CreateToken(ctx, "ann", []continuo.Scope{continuo.ScopeSessionsRead}, 0); err != nil {
		t.Fatal(err)
	}
	var ann *continuo.Principal
	storetest.MustRead(t, db, func(tx store.Tx) (err error) { ann, err = tx.PrincipalGetByName(ctx, "ann"); return err })
	first := storetest.OAuthClient(t, db, "first")
	doc := storetest.OAuthClient(t, db, "doc", func(c *continuo.OAuthClient) {
		c.Kind, c.ClientID = continuo.ClientMetadata, "https://client.example/meta.json"
		c.RedirectURIs = []string{"https://client.example/cb", "https://client.example/cb2"}
	})
	g1 := storetest.OAuthGrant(t, db, first.ID, ann.ID)
	g2 := storetest.OAuthGrant(t, db, doc.ID, ann.ID)
	g3 := storetest.OAuthGrant(t, db, doc.ID, ann.ID)
	if _, _, err := a.RevokeOAuth(ctx, g2.ID); err != nil {
		t.Fatal(err)
	}

	cs, err := a.OAuthClientPage(ctx, auth.IDQuery{Limit: 1})
	ok(t, err)
	if len(cs.Items) != 1 || cs.Next != first.ID {
		t.Fatalf("first page of clients = %+v", cs)
	}
	d := cs.Items[0]
	if d.ID != doc.ID || d.ClientID != doc.ClientID || d.Kind != "metadata" || d.ActiveGrants != 1 || d.State() != "unused" ||
		!slices.Equal(d.RedirectURIs, doc.RedirectURIs) || !slices.Equal(d.RedirectHosts, []string{"client.example"}) {
		t.Errorf("client doc = %+v", d)
	}
	gs, err := a.OAuthGrantPage(ctx, auth.GrantQuery{Client: doc.ID})
	ok(t, err)
	if len(gs.Items) != 2 || gs.Items[0].GrantID != g3.ID || gs.Items[0].State != "active" || gs.Items[1].State != "revoked" ||
		gs.Items[0].Principal != "ann" || gs.Items[0].Group != "ann" || gs.Items[0].ClientName != "doc" {
		t.Errorf("grants of doc = %+v", gs.Items)
	}
	// A metadata client is found by its client_id too; revoking it revokes
	// its grants, and then it counts none.
	if byURL, err := a.OAuthGrantPage(ctx, auth.GrantQuery{Client: doc.ClientID}); err != nil || len(byURL.Items) != 2 {
		t.Errorf("grants of doc by its URL = %+v, %v", byURL, err)
	}
	if _, _, err := a.RevokeOAuth(ctx, doc.ID); err != nil {
		t.Fatal(err)
	}
	cs, err = a.OAuthClientPage(ctx, auth.IDQuery{From: doc.ID, Limit: 1})
	ok(t, err)
	d = cs.Items[0]
	if d.State() != "revoked" || d.ActiveGrants != 0 {
		t.Errorf("revoked client = %+v", d)
	}
	all, err := a.OAuthGrantPage(ctx, auth.GrantQuery{})
	ok(t, err)
	if len(all.Items) != 3 || all.Items[2].GrantID != g1.ID || all.Items[2].State != "active" || all.Items[0].State != "revoked" {
		t.Errorf("every grant = %+v", all.Items)
	}
	if _, err := a.OAuthGrantPage(ctx, auth.GrantQuery{Client: "https://unknown.example/x"}); code(err) != continuo.CodeNotFound {
		t.Errorf("grants of an unknown client: %v", err)
	}
	if _, err := a.OAuthClientPage(ctx, auth.IDQuery{From: g1.ID}); code(err) != continuo.CodeInvalidInput {
		t.Errorf("a grant ID as a client cursor: %v", err)
	}
}
