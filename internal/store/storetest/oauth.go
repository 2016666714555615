package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// The OAuth section pins store.OAuthTx: clients, codes, grants and their
// tokens. Secrets are opaque hashes to the store; every "used" and
// "revoked" time is set once.

func oauthTests() []test {
	return []test{
		{"ClientCreateGet", testOAuthClientCreateGet},
		{"ClientEmpty", testOAuthClientEmpty},
		{"ClientDuplicate", testOAuthClientDuplicate},
		{"ClientMissing", testOAuthClientMissing},
		{"ClientUpdate", testOAuthClientUpdate},
		{"ClientUse", testOAuthClientUse},
		{"ClientRevoke", testOAuthClientRevoke},
		{"ClientListOrder", testOAuthClientList},
		{"ClientCountUnused", testOAuthClientCountUnused},
		{"ClientPruneUnused", testOAuthClientPruneUnused},
		{"CodeCreateGet", testOAuthCodeCreateGet},
		{"CodeDuplicate", testOAuthCodeDuplicate},
		{"CodeUse", testOAuthCodeUse},
		{"GrantCreateGet", testOAuthGrantCreateGet},
		{"GrantRevoke", testOAuthGrantRevoke},
		{"GrantRevokeClient", testOAuthGrantRevokeClient},
		{"GrantListOrder", testOAuthGrantList},
		{"TokenCreateGet", testOAuthTokenCreateGet},
		{"TokenDuplicate", testOAuthTokenDuplicate},
		{"TokenUse", testOAuthTokenUse},
		{"TokenRevoke", testOAuthTokenRevoke},
		{"ReplayRevokesInOneWrite", testOAuthReplayRevokes},
	}
}

// underRerun runs tests on Rerun(s): every Write runs twice, the first
// attempt thrown away. A method whose discarded attempt leaves anything
// behind, or whose result depends on it, fails there.
func underRerun(ts []test) []test {
	out := make([]test, len(ts))
	for i, tc := range ts {
		out[i] = test{tc.name, func(t *testing.T, s store.Store) { tc.run(t, Rerun(s)) }}
	}
	return out
}

// NewOAuthClient returns a public registered client (auth method none, no
// secret, never used) whose client_id is its ID, with one loopback
// redirect URI and every OAuth scope, created at Base. It does not touch a
// store.
func NewOAuthClient(name string) *continuo.OAuthClient {
	id := continuo.NewID(continuo.PrefixOAuthClient, Base)
	return &continuo.OAuthClient{ID: id, ClientID: id, Kind: continuo.ClientRegistered, Name: name,
		RedirectURIs: []string{"http://127.0.0.1/callback"}, AuthMethod: continuo.AuthMethodNone,
		Scopes: continuo.OAuthScopes(), Metadata: `{"client_name":"` + name + `"}`, CreatedAt: Base}
}

// OAuthClient creates a client (see NewOAuthClient); opts may change it
// before it is created.
func OAuthClient(t testing.TB, s store.Store, name string, opts ...func(*continuo.OAuthClient)) *continuo.OAuthClient {
	t.Helper()
	ctx := t.Context()
	c := NewOAuthClient(name)
	for _, o := range opts {
		o(c)
	}
	MustWrite(t, s, func(tx store.Tx) error { return tx.OAuthClientCreate(ctx, c) })
	return c
}

// OAuthGrant creates an unrevoked grant of sessions:read to principalID
// for client clientID (OAuthClient.ID), created at Base.
func OAuthGrant(t testing.TB, s store.Store, clientID, principalID string) *continuo.OAuthGrant {
	t.Helper()
	ctx := t.Context()
	g := &continuo.OAuthGrant{ID: continuo.NewID(continuo.PrefixOAuthGrant, Base), ClientID: clientID, PrincipalID: principalID,
		Scopes: []continuo.Scope{continuo.ScopeSessionsRead}, Resource: "https://continuo.example/mcp", CreatedAt: Base}
	MustWrite(t, s, func(tx store.Tx) error { return tx.OAuthGrantCreate(ctx, g) })
	return g
}

func newOAuthCode(clientID, principalID, hash string) *continuo.OAuthCode {
	return &continuo.OAuthCode{ID: continuo.NewID(continuo.PrefixOAuthCode, Base), Hash: hash, ClientID: clientID,
		PrincipalID: principalID, Scopes: []continuo.Scope{continuo.ScopeSessionsRead, continuo.ScopeSessionsWrite},
		RedirectURI: "http://127.0.0.1:4711/callback?x=1", CodeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
		Resource: "https://continuo.example/mcp", CreatedAt: Base, ExpiresAt: Base.Add(2 * time.Minute)}
}

func oauthCode(t testing.TB, s store.Store, clientID, principalID, hash string) *continuo.OAuthCode {
	t.Helper()
	c := newOAuthCode(clientID, principalID, hash)
	MustWrite(t, s, func(tx store.Tx) error { return tx.OAuthCodeCreate(t.Context(), c) })
	return c
}

func newOAuthToken(grantID, hash string, kind continuo.TokenKind) *continuo.OAuthToken {
	return &continuo.OAuthToken{ID: continuo.NewID(continuo.PrefixOAuthToken, Base), Hash: hash, GrantID: grantID, Kind: kind,
		CreatedAt: Base, ExpiresAt: Base.Add(time.Hour)}
}

func oauthToken(t testing.TB, s store.Store, grantID, hash string, kind continuo.TokenKind) *continuo.OAuthToken {
	t.Helper()
	k := newOAuthToken(grantID, hash, kind)
	MustWrite(t, s, func(tx store.Tx) error { return tx.OAuthTokenCreate(t.Context(), k) })
	return k
}

// oauthWorld is a principal and one registered client.
func oauthWorld(t testing.TB, s store.Store) (*continuo.Principal, *continuo.OAuthClient) {
	t.Helper()
	g := Group(t, s, "alpha")
	return Principal(t, s, g.ID, "ann"), OAuthClient(t, s, "cli")
}

func normOAuthClient(c continuo.OAuthClient) continuo.OAuthClient {
	c.CreatedAt, c.FetchedAt, c.RefreshAt = trunc(c.CreatedAt), truncPtr(c.FetchedAt), truncPtr(c.RefreshAt)
	c.UsedAt, c.RevokedAt = truncPtr(c.UsedAt), truncPtr(c.RevokedAt)
	if len(c.RedirectURIs) == 0 {
		c.RedirectURIs = nil
	}
	if len(c.Scopes) == 0 {
		c.Scopes = nil
	}
	return c
}

func normOAuthGrant(g continuo.OAuthGrant) continuo.OAuthGrant {
	g.CreatedAt, g.RevokedAt = trunc(g.CreatedAt), truncPtr(g.RevokedAt)
	return g
}

func normOAuthCode(c continuo.OAuthCode) continuo.OAuthCode {
	c.CreatedAt, c.ExpiresAt, c.UsedAt = trunc(c.CreatedAt), trunc(c.ExpiresAt), truncPtr(c.UsedAt)
	return c
}

func normOAuthToken(k continuo.OAuthToken) continuo.OAuthToken {
	k.CreatedAt, k.ExpiresAt, k.UsedAt, k.RevokedAt = trunc(k.CreatedAt), trunc(k.ExpiresAt), truncPtr(k.UsedAt), truncPtr(k.RevokedAt)
	return k
}

func getOAuthClient(t *testing.T, s store.Store, id string) *continuo.OAuthClient {
	t.Helper()
	return mustGet(t, s, "OAuthClientGet", func(tx store.Tx) (*continuo.OAuthClient, error) { return tx.OAuthClientGet(t.Context(), id) })
}

func getOAuthGrant(t *testing.T, s store.Store, id string) *continuo.OAuthGrant {
	t.Helper()
	return mustGet(t, s, "OAuthGrantGet", func(tx store.Tx) (*continuo.OAuthGrant, error) { return tx.OAuthGrantGet(t.Context(), id) })
}

func getOAuthCode(t *testing.T, s store.Store, hash string) (*continuo.OAuthCode, error) {
	t.Helper()
	return read(t, s, func(tx store.Tx) (*continuo.OAuthCode, error) { return tx.OAuthCodeGetByHash(t.Context(), hash) })
}

func getOAuthToken(t *testing.T, s store.Store, hash string) *continuo.OAuthToken {
	t.Helper()
	return mustGet(t, s, "OAuthTokenGetByHash", func(tx store.Tx) (*continuo.OAuthToken, error) {
		return tx.OAuthTokenGetByHash(t.Context(), hash)
	})
}

// wantTime fails the test unless got is at (nil when at is nil).
func wantTime(t *testing.T, what string, got, at *time.Time) {
	t.Helper()
	if (got == nil) != (at == nil) || (got != nil && !sameTime(*got, *at)) {
		t.Errorf("%s = %s, want %s", what, showTime(got), showTime(at))
	}
}

// ---- clients ---------------------------------------------------------------

func testOAuthClientCreateGet(t *testing.T, s store.Store) {
	ctx := t.Context()
	fetched, refresh := Base.Add(1500*time.Millisecond), Base.Add(time.Hour+250*time.Millisecond)
	doc := &continuo.OAuthClient{ID: continuo.NewID(continuo.PrefixOAuthClient, Base), ClientID: "https://app.example/oauth/client.json",
		Kind: continuo.ClientMetadata, Name: "App ü \"quoted\"",
		RedirectURIs: []string{"https://app.example/cb", "http://127.0.0.1/cb", "com.example.app:/cb"},
		AuthMethod:   continuo.AuthMethodNone, Scopes: []continuo.Scope{continuo.ScopeSessionsWrite, continuo.ScopeSessionsRead},
		Metadata:  `{"client_id":"https://app.example/oauth/client.json","redirect_uris":["https://app.example/cb"]}`,
		CreatedAt: Base.Add(time.Second), FetchedAt: &fetched, RefreshAt: &refresh}
	reg := NewOAuthClient("confidential")
	reg.AuthMethod, reg.SecretHash = continuo.AuthMethodBasic, "secret-hash-1"
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.OAuthClientCreate(ctx, doc); err != nil {
			return err
		}
		return tx.OAuthClientCreate(ctx, reg)
	})
	for _, want := range []*continuo.OAuthClient{doc, reg} {
		same(t, "OAuthClientGet", *getOAuthClient(t, s, want.ID), *want, normOAuthClient)
		got := mustGet(t, s, "OAuthClientGetByClientID", func(tx store.Tx) (*continuo.OAuthClient, error) {
			return tx.OAuthClientGetByClientID(ctx, want.ClientID)
		})
		same(t, "OAuthClientGetByClientID", *got, *want, normOAuthClient) // scope order kept
	}
	if got := getOAuthClient(t, s, doc.ID); got.SecretHash != "" || got.UsedAt != nil || got.RevokedAt != nil {
		t.Errorf("public client: secret %q, used %s, revoked %s; want none", got.SecretHash, showTime(got.UsedAt), showTime(got.RevokedAt))
	}
}

// Nil and empty redirect URIs and scopes come back empty; an empty
// metadata string comes back empty.
func testOAuthClientEmpty(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := NewOAuthClient("a")
	a.RedirectURIs, a.Scopes, a.Metadata = nil, nil, ""
	b := NewOAuthClient("b")
	b.RedirectURIs, b.Scopes = []string{}, []continuo.Scope{}
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.OAuthClientCreate(ctx, a); err != nil {
			return err
		}
		return tx.OAuthClientCreate(ctx, b)
	})
	for _, c := range []*continuo.OAuthClient{a, b} {
		same(t, "client "+c.Name, *getOAuthClient(t, s, c.ID), *c, normOAuthClient)
	}
}

func testOAuthClientDuplicate(t *testing.T, s store.Store) {
	ctx := t.Context()
	first := OAuthClient(t, s, "first", func(c *continuo.OAuthClient) {
		c.ClientID = "https://app.example/c.json"
		c.Kind = continuo.ClientMetadata
	})
	dup := NewOAuthClient("dup")
	dup.ClientID = first.ClientID
	err := s.Write(ctx, func(tx store.Tx) error { return tx.OAuthClientCreate(ctx, dup) })
	wantErr(t, err, store.ErrConflict, "OAuthClientCreate with a taken client_id")
	dupID := NewOAuthClient("dup-id")
	dupID.ID = first.ID
	err = s.Write(ctx, func(tx store.Tx) error { return tx.OAuthClientCreate(ctx, dupID) })
	wantErr(t, err, store.ErrConflict, "OAuthClientCreate with a taken ID")
	list := mustGet(t, s, "OAuthClientList", func(tx store.Tx) ([]continuo.OAuthClient, error) { return tx.OAuthClientList(ctx) })
	sameList(t, "OAuthClientList after the refused duplicates", list, []continuo.OAuthClient{*first}, normOAuthClient)
}

func testOAuthClientMissing(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := OAuthClient(t, s, "cli")
	_, err := read(t, s, func(tx store.Tx) (*continuo.OAuthClient, error) {
		return tx.OAuthClientGet(ctx, continuo.NewID(continuo.PrefixOAuthClient, Base))
	})
	wantErr(t, err, store.ErrNotFound, "OAuthClientGet of an unknown ID")
	_, err = read(t, s, func(tx store.Tx) (*continuo.OAuthClient, error) {
		return tx.OAuthClientGetByClientID(ctx, "https://unknown.example/c.json")
	})
	wantErr(t, err, store.ErrNotFound, "OAuthClientGetByClientID of an unknown client_id")
	// client_id and ID are separate keys: a row ID is not a client_id
	// unless the client was issued it.
	meta := OAuthClient(t, s, "doc", func(x *continuo.OAuthClient) {
		x.ClientID, x.Kind = "https://app.example/c.json", continuo.ClientMetadata
	})
	_, err = read(t, s, func(tx store.Tx) (*continuo.OAuthClient, error) { return tx.OAuthClientGetByClientID(ctx, meta.ID) })
	wantErr(t, err, store.ErrNotFound, "OAuthClientGetByClientID of a metadata client's row ID")
	_, err = read(t, s, func(tx store.Tx) (*continuo.OAuthClient, error) { return tx.OAuthClientGetByClientID(ctx, c.ClientID) })
	noErr(t, err, "OAuthClientGetByClientID of an issued client_id")
}

// OAuthClientUpdate stores a refreshed document and nothing else: the
// identity, kind, secret, creation, use and revocation stay as they were.
func testOAuthClientUpdate(t *testing.T, s store.Store) {
	ctx := t.Context()
	fetched := Base.Add(time.Minute)
	c := OAuthClient(t, s, "doc", func(x *continuo.OAuthClient) {
		x.ClientID, x.Kind, x.FetchedAt, x.RefreshAt = "https://app.example/c.json", continuo.ClientMetadata, &fetched, &fetched
	})
	other := OAuthClient(t, s, "other")
	used, revoked := Base.Add(2*time.Minute), Base.Add(3*time.Minute)
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.OAuthClientUse(ctx, c.ID, used); err != nil {
			return err
		}
		return tx.OAuthClientRevoke(ctx, c.ID, revoked)
	})

	refetched, refresh := Base.Add(time.Hour+5*time.Millisecond), Base.Add(2*time.Hour)
	upd := *c
	upd.Name, upd.RedirectURIs, upd.Scopes = "renamed", []string{"https://app.example/new"}, []continuo.Scope{continuo.ScopeRuntimeRead}
	upd.Metadata, upd.FetchedAt, upd.RefreshAt = `{"v":2}`, &refetched, &refresh
	// What the update must not touch, changed in the argument:
	upd.ClientID, upd.Kind, upd.SecretHash, upd.CreatedAt = "https://evil.example/c.json", continuo.ClientRegistered, "", Base.Add(time.Hour)
	upd.UsedAt, upd.RevokedAt = nil, nil
	MustWrite(t, s, func(tx store.Tx) error { return tx.OAuthClientUpdate(ctx, &upd) })

	want := *c
	want.Name, want.RedirectURIs, want.Scopes, want.Metadata = upd.Name, upd.RedirectURIs, upd.Scopes, upd.Metadata
	want.FetchedAt, want.RefreshAt, want.UsedAt, want.RevokedAt = &refetched, &refresh, &used, &revoked
	same(t, "client after OAuthClientUpdate", *getOAuthClient(t, s, c.ID), want, normOAuthClient)
	same(t, "the other client", *getOAuthClient(t, s, other.ID), *other, normOAuthClient)

	// Clearing the fetch times stores NULL.
	upd.FetchedAt, upd.RefreshAt = nil, nil
	MustWrite(t, s, func(tx store.Tx) error { return tx.OAuthClientUpdate(ctx, &upd) })
	got := getOAuthClient(t, s, c.ID)
	wantTime(t, "FetchedAt after clearing", got.FetchedAt, nil)
	wantTime(t, "RefreshAt after clearing", got.RefreshAt, nil)

	unknown := NewOAuthClient("unknown")
	err := s.Write(ctx, func(tx store.Tx) error { return tx.OAuthClientUpdate(ctx, unknown) })
	wantErr(t, err, store.ErrNotFound, "OAuthClientUpdate of an unknown client")
}

// OAuthClientUse sets used_at once; using a used client again is no error
// and keeps the first time.
func testOAuthClientUse(t *testing.T, s store.Store) {
	c, other := OAuthClient(t, s, "cli"), OAuthClient(t, s, "other")
	first := Base.Add(time.Minute + 125*time.Millisecond)
	want := *c
	want.UsedAt = &first
	stamp[continuo.OAuthClient]{noun: "client", op: "OAuthClientUse", prefix: continuo.PrefixOAuthClient, write: store.Tx.OAuthClientUse,
		norm: normOAuthClient}.check(t, s, c.ID, first,
		func() continuo.OAuthClient { return *getOAuthClient(t, s, c.ID) }, want,
		func() continuo.OAuthClient { return *getOAuthClient(t, s, other.ID) }, *other)
}

func testOAuthClientRevoke(t *testing.T, s store.Store) {
	c, other := OAuthClient(t, s, "cli"), OAuthClient(t, s, "other")
	first := Base.Add(time.Hour + 125*time.Millisecond)
	want := *c
	want.RevokedAt = &first
	stamp[continuo.OAuthClient]{noun: "client", op: "OAuthClientRevoke", prefix: continuo.PrefixOAuthClient, write: store.Tx.OAuthClientRevoke,
		norm: normOAuthClient}.check(t, s, c.ID, first,
		func() continuo.OAuthClient { return *getOAuthClient(t, s, c.ID) }, want,
		func() continuo.OAuthClient { return *getOAuthClient(t, s, other.ID) }, *other)
}

func testOAuthClientList(t *testing.T, s store.Store) {
	ctx := t.Context()
	empty := mustGet(t, s, "OAuthClientList", func(tx store.Tx) ([]continuo.OAuthClient, error) { return tx.OAuthClientList(ctx) })
	if len(empty) != 0 {
		t.Errorf("OAuthClientList of an empty store = %v, want none", empty)
	}
	// IDs made first, inserted in another order, with client_ids and
	// names that sort differently again.
	cs := []*continuo.OAuthClient{NewOAuthClient("c"), NewOAuthClient("a"), NewOAuthClient("b"), NewOAuthClient("d")}
	cs[0].ClientID, cs[0].Kind = "https://z.example/c.json", continuo.ClientMetadata
	cs[3].ClientID, cs[3].Kind = "https://a.example/c.json", continuo.ClientMetadata
	var want []continuo.OAuthClient
	for _, i := range []int{2, 0, 3, 1} {
		MustWrite(t, s, func(tx store.Tx) error { return tx.OAuthClientCreate(ctx, cs[i]) })
		want = append(want, *cs[i])
	}
	slices.SortFunc(want, func(a, b continuo.OAuthClient) int { return strings.Compare(a.ID, b.ID) })
	list := mustGet(t, s, "OAuthClientList", func(tx store.Tx) ([]continuo.OAuthClient, error) { return tx.OAuthClientList(ctx) })
	sameList(t, "OAuthClientList (by ID)", list, want, normOAuthClient)
}

func countUnused(t *testing.T, s store.Store) int {
	t.Helper()
	return mustGet(t, s, "OAuthClientCountUnused", func(tx store.Tx) (int, error) { return tx.OAuthClientCountUnused(t.Context()) })
}

// OAuthClientCountUnused counts registered clients never used and not
// revoked: not metadata clients, not used ones, not revoked ones.
func testOAuthClientCountUnused(t *testing.T, s store.Store) {
	ctx := t.Context()
	if n := countUnused(t, s); n != 0 {
		t.Errorf("OAuthClientCountUnused of an empty store = %d, want 0", n)
	}
	OAuthClient(t, s, "unused-1")
	OAuthClient(t, s, "unused-2", func(c *continuo.OAuthClient) { c.AuthMethod, c.SecretHash = continuo.AuthMethodPost, "h" })
	OAuthClient(t, s, "doc", func(c *continuo.OAuthClient) {
		c.ClientID, c.Kind = "https://app.example/c.json", continuo.ClientMetadata
	})
	used := OAuthClient(t, s, "used")
	revoked := OAuthClient(t, s, "revoked")
	if n := countUnused(t, s); n != 4 {
		t.Errorf("OAuthClientCountUnused = %d, want 4 (registered, not yet used or revoked)", n)
	}
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.OAuthClientUse(ctx, used.ID, Base); err != nil {
			return err
		}
		return tx.OAuthClientRevoke(ctx, revoked.ID, Base)
	})
	if n := countUnused(t, s); n != 2 {
		t.Errorf("OAuthClientCountUnused after one use and one revocation = %d, want 2", n)
	}
}

// OAuthClientPruneUnused deletes exactly the registered clients created
// strictly before the bound that never completed an authorization (never
// used, no grant, no used code), revoked or not, together with their
// unfinished codes; it returns how many clients it deleted.
func testOAuthClientPruneUnused(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := Group(t, s, "alpha")
	p := Principal(t, s, g.ID, "ann")
	before := Base.Add(24 * time.Hour)
	old := func(c *continuo.OAuthClient) { c.CreatedAt = before.Add(-time.Millisecond) }

	gone := OAuthClient(t, s, "old-unused", old)
	goneRevoked := OAuthClient(t, s, "old-unused-revoked", old)
	goneWithCode := OAuthClient(t, s, "old-unused-pending-code", old)
	pending := oauthCode(t, s, goneWithCode.ID, p.ID, "code-pending")

	atBound := OAuthClient(t, s, "at-the-bound", func(c *continuo.OAuthClient) { c.CreatedAt = before })
	atBoundCode := oauthCode(t, s, atBound.ID, p.ID, "code-at-bound")
	young := OAuthClient(t, s, "young", func(c *continuo.OAuthClient) { c.CreatedAt = before.Add(time.Hour) })
	used := OAuthClient(t, s, "old-used", old)
	withGrant := OAuthClient(t, s, "old-with-revoked-grant", old)
	grant := OAuthGrant(t, s, withGrant.ID, p.ID)
	// A used code without a grant: the service never leaves one (a code's
	// exchange creates the grant), but a used code alone still means the
	// client completed an authorization.
	withUsedCode := OAuthClient(t, s, "old-with-used-code", old)
	usedCode := newOAuthCode(withUsedCode.ID, p.ID, "code-used")
	usedAt := Base
	usedCode.UsedAt = &usedAt
	MustWrite(t, s, func(tx store.Tx) error { return tx.OAuthCodeCreate(ctx, usedCode) })
	doc := OAuthClient(t, s, "old-metadata", old, func(c *continuo.OAuthClient) {
		c.ClientID, c.Kind = "https://app.example/c.json", continuo.ClientMetadata
	})
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.OAuthClientRevoke(ctx, goneRevoked.ID, Base); err != nil {
			return err
		}
		if err := tx.OAuthClientUse(ctx, used.ID, Base); err != nil {
			return err
		}
		return tx.OAuthGrantRevoke(ctx, grant.ID, Base)
	})

	var n int
	MustWrite(t, s, func(tx store.Tx) error {
		got, err := tx.OAuthClientPruneUnused(ctx, before)
		n = got
		return err
	})
	if n != 3 {
		t.Errorf("OAuthClientPruneUnused = %d, want 3", n)
	}
	for _, c := range []*continuo.OAuthClient{gone, goneRevoked, goneWithCode} {
		_, err := read(t, s, func(tx store.Tx) (*continuo.OAuthClient, error) { return tx.OAuthClientGet(ctx, c.ID) })
		wantErr(t, err, store.ErrNotFound, "OAuthClientGet of pruned client "+c.Name)
	}
	_, err := getOAuthCode(t, s, pending.Hash)
	wantErr(t, err, store.ErrNotFound, "the pruned client's unfinished code")
	for _, c := range []*continuo.OAuthClient{atBound, young, used, withGrant, withUsedCode, doc} {
		_, err := read(t, s, func(tx store.Tx) (*continuo.OAuthClient, error) { return tx.OAuthClientGet(ctx, c.ID) })
		noErr(t, err, "OAuthClientGet of kept client "+c.Name)
	}
	for _, c := range []*continuo.OAuthCode{atBoundCode, usedCode} {
		_, err := getOAuthCode(t, s, c.Hash)
		noErr(t, err, "a kept client's code "+c.Hash)
	}
	getOAuthGrant(t, s, grant.ID) // the kept client's grant is there

	// Nothing left to prune at the same bound; a later bound takes the
	// client created at the old bound (its code too), and the young one.
	MustWrite(t, s, func(tx store.Tx) error {
		got, err := tx.OAuthClientPruneUnused(ctx, before)
		n = got
		return err
	})
	if n != 0 {
		t.Errorf("a second OAuthClientPruneUnused = %d, want 0", n)
	}
	MustWrite(t, s, func(tx store.Tx) error {
		got, err := tx.OAuthClientPruneUnused(ctx, before.Add(2*time.Hour))
		n = got
		return err
	})
	if n != 2 {
		t.Errorf("OAuthClientPruneUnused with a later bound = %d, want 2", n)
	}
	_, err = getOAuthCode(t, s, atBoundCode.Hash)
	wantErr(t, err, store.ErrNotFound, "the code of the client pruned with the later bound")
	// used_at is what counts: the two clients kept for a grant or a used
	// code were never marked used.
	if c := countUnused(t, s); c != 2 {
		t.Errorf("OAuthClientCountUnused after pruning = %d, want 2", c)
	}
}

// ---- codes -----------------------------------------------------------------

func testOAuthCodeCreateGet(t *testing.T, s store.Store) {
	p, c := oauthWorld(t, s)
	want := newOAuthCode(c.ID, p.ID, "code-1")
	want.CreatedAt, want.ExpiresAt = Base.Add(1500*time.Millisecond), Base.Add(2*time.Minute+1500*time.Millisecond)
	MustWrite(t, s, func(tx store.Tx) error { return tx.OAuthCodeCreate(t.Context(), want) })
	got, err := getOAuthCode(t, s, "code-1")
	noErr(t, err, "OAuthCodeGetByHash")
	same(t, "OAuthCodeGetByHash", *got, *want, normOAuthCode)
	if got.UsedAt != nil || got.GrantID != "" {
		t.Errorf("a new code: used %s, grant %q; want neither", showTime(got.UsedAt), got.GrantID)
	}
	_, err = getOAuthCode(t, s, "no-such-code")
	wantErr(t, err, store.ErrNotFound, "OAuthCodeGetByHash of an unknown hash")
}

func testOAuthCodeDuplicate(t *testing.T, s store.Store) {
	ctx := t.Context()
	p, c := oauthWorld(t, s)
	first := oauthCode(t, s, c.ID, p.ID, "code-1")
	err := s.Write(ctx, func(tx store.Tx) error { return tx.OAuthCodeCreate(ctx, newOAuthCode(c.ID, p.ID, "code-1")) })
	wantErr(t, err, store.ErrConflict, "OAuthCodeCreate with a taken hash")
	dupID := newOAuthCode(c.ID, p.ID, "code-2")
	dupID.ID = first.ID
	err = s.Write(ctx, func(tx store.Tx) error { return tx.OAuthCodeCreate(ctx, dupID) })
	wantErr(t, err, store.ErrConflict, "OAuthCodeCreate with a taken ID")
	got, err := getOAuthCode(t, s, "code-1")
	noErr(t, err, "OAuthCodeGetByHash")
	same(t, "code after the refused duplicates", *got, *first, normOAuthCode)
}

// OAuthCodeUse is guarded: the first use records the time and the grant;
// any later use is ErrStale and changes nothing.
func testOAuthCodeUse(t *testing.T, s store.Store) {
	ctx := t.Context()
	p, c := oauthWorld(t, s)
	code, other := oauthCode(t, s, c.ID, p.ID, "code-1"), oauthCode(t, s, c.ID, p.ID, "code-2")
	g1, g2 := OAuthGrant(t, s, c.ID, p.ID), OAuthGrant(t, s, c.ID, p.ID)
	at := Base.Add(30*time.Second + 125*time.Millisecond)
	MustWrite(t, s, func(tx store.Tx) error { return tx.OAuthCodeUse(ctx, code.ID, g1.ID, at) })
	want := *code
	want.UsedAt, want.GrantID = &at, g1.ID
	got, err := getOAuthCode(t, s, code.Hash)
	noErr(t, err, "OAuthCodeGetByHash")
	same(t, "code after OAuthCodeUse", *got, want, normOAuthCode)

	err = s.Write(ctx, func(tx store.Tx) error { return tx.OAuthCodeUse(ctx, code.ID, g2.ID, at.Add(time.Second)) })
	wantErr(t, err, store.ErrStale, "a second OAuthCodeUse")
	got, err = getOAuthCode(t, s, code.Hash)
	noErr(t, err, "OAuthCodeGetByHash")
	same(t, "code after the refused second use (first use kept)", *got, want, normOAuthCode)
	got, err = getOAuthCode(t, s, other.Hash)
	noErr(t, err, "OAuthCodeGetByHash")
	same(t, "the other code", *got, *other, normOAuthCode)

	err = s.Write(ctx, func(tx store.Tx) error {
		return tx.OAuthCodeUse(ctx, continuo.NewID(continuo.PrefixOAuthCode, Base), g2.ID, at)
	})
	wantErr(t, err, store.ErrNotFound, "OAuthCodeUse of an unknown code")
}

// ---- grants ----------------------------------------------------------------

func testOAuthGrantCreateGet(t *testing.T, s store.Store) {
	ctx := t.Context()
	p, c := oauthWorld(t, s)
	want := &continuo.OAuthGrant{ID: continuo.NewID(continuo.PrefixOAuthGrant, Base), ClientID: c.ID, PrincipalID: p.ID,
		Scopes:   []continuo.Scope{continuo.ScopeSwarmWork, continuo.ScopeSessionsRead, continuo.ScopeRuntimeRead},
		Resource: "http://127.0.0.1:7300/mcp", CreatedAt: Base.Add(2500 * time.Millisecond)}
	MustWrite(t, s, func(tx store.Tx) error { return tx.OAuthGrantCreate(ctx, want) })
	same(t, "OAuthGrantGet (scope order kept)", *getOAuthGrant(t, s, want.ID), *want, normOAuthGrant)
	err := s.Write(ctx, func(tx store.Tx) error { return tx.OAuthGrantCreate(ctx, want) })
	wantErr(t, err, store.ErrConflict, "OAuthGrantCreate with a taken ID")
	_, err = read(t, s, func(tx store.Tx) (*continuo.OAuthGrant, error) {
		return tx.OAuthGrantGet(ctx, continuo.NewID(continuo.PrefixOAuthGrant, Base))
	})
	wantErr(t, err, store.ErrNotFound, "OAuthGrantGet of an unknown ID")
}

func testOAuthGrantRevoke(t *testing.T, s store.Store) {
	p, c := oauthWorld(t, s)
	g, other := OAuthGrant(t, s, c.ID, p.ID), OAuthGrant(t, s, c.ID, p.ID)
	first := Base.Add(time.Hour + 125*time.Millisecond)
	want := *g
	want.RevokedAt = &first
	stamp[continuo.OAuthGrant]{noun: "grant", op: "OAuthGrantRevoke", prefix: continuo.PrefixOAuthGrant, write: store.Tx.OAuthGrantRevoke,
		norm: normOAuthGrant}.check(t, s, g.ID, first,
		func() continuo.OAuthGrant { return *getOAuthGrant(t, s, g.ID) }, want,
		func() continuo.OAuthGrant { return *getOAuthGrant(t, s, other.ID) }, *other)
}

// OAuthGrantRevokeClient revokes the client's unrevoked grants, counts only
// those, keeps an earlier revocation's time, and leaves other clients'
// grants alone. A client without grants (or unknown) is 0, no error.
func testOAuthGrantRevokeClient(t *testing.T, s store.Store) {
	ctx := t.Context()
	p, c := oauthWorld(t, s)
	otherClient := OAuthClient(t, s, "other")
	a, b, earlier := OAuthGrant(t, s, c.ID, p.ID), OAuthGrant(t, s, c.ID, p.ID), OAuthGrant(t, s, c.ID, p.ID)
	others := OAuthGrant(t, s, otherClient.ID, p.ID)
	t0, t1 := Base.Add(time.Minute), Base.Add(time.Hour+5*time.Millisecond)
	MustWrite(t, s, func(tx store.Tx) error { return tx.OAuthGrantRevoke(ctx, earlier.ID, t0) })

	revoke := func(clientID string, at time.Time) int {
		t.Helper()
		var n int
		MustWrite(t, s, func(tx store.Tx) error {
			got, err := tx.OAuthGrantRevokeClient(ctx, clientID, at)
			n = got
			return err
		})
		return n
	}
	if n := revoke(c.ID, t1); n != 2 {
		t.Errorf("OAuthGrantRevokeClient = %d, want 2 (one of three was revoked already)", n)
	}
	for _, g := range []*continuo.OAuthGrant{a, b} {
		wantTime(t, "RevokedAt of a revoked client's grant", getOAuthGrant(t, s, g.ID).RevokedAt, &t1)
	}
	wantTime(t, "RevokedAt of the grant revoked earlier", getOAuthGrant(t, s, earlier.ID).RevokedAt, &t0)
	same(t, "another client's grant", *getOAuthGrant(t, s, others.ID), *others, normOAuthGrant)
	if n := revoke(c.ID, t1.Add(time.Hour)); n != 0 {
		t.Errorf("a second OAuthGrantRevokeClient = %d, want 0", n)
	}
	wantTime(t, "RevokedAt after a second OAuthGrantRevokeClient", getOAuthGrant(t, s, a.ID).RevokedAt, &t1)
	if n := revoke(continuo.NewID(continuo.PrefixOAuthClient, Base), t1); n != 0 {
		t.Errorf("OAuthGrantRevokeClient of an unknown client = %d, want 0", n)
	}
}

func testOAuthGrantList(t *testing.T, s store.Store) {
	ctx := t.Context()
	empty := mustGet(t, s, "OAuthGrantList", func(tx store.Tx) ([]continuo.OAuthGrant, error) { return tx.OAuthGrantList(ctx) })
	if len(empty) != 0 {
		t.Errorf("OAuthGrantList of an empty store = %v, want none", empty)
	}
	p, c := oauthWorld(t, s)
	other := OAuthClient(t, s, "other")
	var want []continuo.OAuthGrant
	ids := make([]string, 4)
	for i := range ids {
		ids[i] = continuo.NewID(continuo.PrefixOAuthGrant, Base)
	}
	for i, at := range []int{3, 1, 0, 2} { // inserted out of ID order, across clients
		g := continuo.OAuthGrant{ID: ids[at], ClientID: []string{c.ID, other.ID}[i%2], PrincipalID: p.ID,
			Scopes: []continuo.Scope{continuo.ScopeSessionsRead}, Resource: "r", CreatedAt: Base.Add(time.Duration(i) * time.Second)}
		MustWrite(t, s, func(tx store.Tx) error { return tx.OAuthGrantCreate(ctx, &g) })
		want = append(want, g)
	}
	slices.SortFunc(want, func(a, b continuo.OAuthGrant) int { return strings.Compare(a.ID, b.ID) })
	list := mustGet(t, s, "OAuthGrantList", func(tx store.Tx) ([]continuo.OAuthGrant, error) { return tx.OAuthGrantList(ctx) })
	sameList(t, "OAuthGrantList (by ID)", list, want, normOAuthGrant)
}

// ---- tokens ----------------------------------------------------------------

func testOAuthTokenCreateGet(t *testing.T, s store.Store) {
	ctx := t.Context()
	p, c := oauthWorld(t, s)
	g := OAuthGrant(t, s, c.ID, p.ID)
	access := newOAuthToken(g.ID, "access-1", continuo.TokenAccess)
	access.CreatedAt, access.ExpiresAt = Base.Add(time.Second), Base.Add(time.Hour+time.Second+250*time.Millisecond)
	refresh := newOAuthToken(g.ID, "refresh-1", continuo.TokenRefresh)
	refresh.ExpiresAt = Base.Add(30 * 24 * time.Hour)
	// An access token a refresh narrowed holds its own scopes; the others
	// hold none (the grant's).
	narrowed := newOAuthToken(g.ID, "access-2", continuo.TokenAccess)
	narrowed.Scopes = []continuo.Scope{continuo.ScopeSessionsRead}
	MustWrite(t, s, func(tx store.Tx) error {
		for _, k := range []*continuo.OAuthToken{access, refresh, narrowed} {
			if err := tx.OAuthTokenCreate(ctx, k); err != nil {
				return err
			}
		}
		return nil
	})
	same(t, "access token", *getOAuthToken(t, s, "access-1"), *access, normOAuthToken)
	same(t, "refresh token", *getOAuthToken(t, s, "refresh-1"), *refresh, normOAuthToken)
	same(t, "narrowed access token", *getOAuthToken(t, s, "access-2"), *narrowed, normOAuthToken)
	_, err := read(t, s, func(tx store.Tx) (*continuo.OAuthToken, error) { return tx.OAuthTokenGetByHash(ctx, "no-such-token") })
	wantErr(t, err, store.ErrNotFound, "OAuthTokenGetByHash of an unknown hash")
}

func testOAuthTokenDuplicate(t *testing.T, s store.Store) {
	ctx := t.Context()
	p, c := oauthWorld(t, s)
	g := OAuthGrant(t, s, c.ID, p.ID)
	first := oauthToken(t, s, g.ID, "token-1", continuo.TokenAccess)
	err := s.Write(ctx, func(tx store.Tx) error {
		return tx.OAuthTokenCreate(ctx, newOAuthToken(g.ID, "token-1", continuo.TokenRefresh))
	})
	wantErr(t, err, store.ErrConflict, "OAuthTokenCreate with a taken hash")
	dupID := newOAuthToken(g.ID, "token-2", continuo.TokenAccess)
	dupID.ID = first.ID
	err = s.Write(ctx, func(tx store.Tx) error { return tx.OAuthTokenCreate(ctx, dupID) })
	wantErr(t, err, store.ErrConflict, "OAuthTokenCreate with a taken ID")
	same(t, "token after the refused duplicates", *getOAuthToken(t, s, "token-1"), *first, normOAuthToken)
}

// OAuthTokenUse is guarded like OAuthCodeUse: a spent token is ErrStale.
func testOAuthTokenUse(t *testing.T, s store.Store) {
	p, c := oauthWorld(t, s)
	g := OAuthGrant(t, s, c.ID, p.ID)
	k, other := oauthToken(t, s, g.ID, "refresh-1", continuo.TokenRefresh), oauthToken(t, s, g.ID, "refresh-2", continuo.TokenRefresh)
	at := Base.Add(time.Hour + 125*time.Millisecond)
	want := *k
	want.UsedAt = &at
	stamp[continuo.OAuthToken]{noun: "token", op: "OAuthTokenUse", prefix: continuo.PrefixOAuthToken, write: store.Tx.OAuthTokenUse,
		again: store.ErrStale, norm: normOAuthToken}.check(t, s, k.ID, at,
		func() continuo.OAuthToken { return *getOAuthToken(t, s, k.Hash) }, want,
		func() continuo.OAuthToken { return *getOAuthToken(t, s, other.Hash) }, *other)
}

func testOAuthTokenRevoke(t *testing.T, s store.Store) {
	p, c := oauthWorld(t, s)
	g := OAuthGrant(t, s, c.ID, p.ID)
	k, other := oauthToken(t, s, g.ID, "access-1", continuo.TokenAccess), oauthToken(t, s, g.ID, "access-2", continuo.TokenAccess)
	first := Base.Add(10*time.Minute + 125*time.Millisecond)
	want := *k
	want.RevokedAt = &first
	stamp[continuo.OAuthToken]{noun: "token", op: "OAuthTokenRevoke", prefix: continuo.PrefixOAuthToken, write: store.Tx.OAuthTokenRevoke,
		norm: normOAuthToken}.check(t, s, k.ID, first,
		func() continuo.OAuthToken { return *getOAuthToken(t, s, k.Hash) }, want,
		func() continuo.OAuthToken { return *getOAuthToken(t, s, other.Hash) }, *other)
	// Revoking does not spend: a revoked refresh token is refused by the
	// service, not by OAuthTokenUse.
	if got := getOAuthToken(t, s, k.Hash); got.UsedAt != nil {
		t.Errorf("UsedAt of a revoked token = %s, want nil", showTime(got.UsedAt))
	}
}

// A refused use (ErrStale) is not a database error: the Write that got it
// may go on, and revoke the grant of the replayed code or refresh token in
// the same transaction, which commits.
func testOAuthReplayRevokes(t *testing.T, s store.Store) {
	ctx := t.Context()
	p, c := oauthWorld(t, s)
	g1, g2 := OAuthGrant(t, s, c.ID, p.ID), OAuthGrant(t, s, c.ID, p.ID)
	code := oauthCode(t, s, c.ID, p.ID, "code-1")
	k := oauthToken(t, s, g2.ID, "refresh-1", continuo.TokenRefresh)
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.OAuthCodeUse(ctx, code.ID, g1.ID, Base); err != nil {
			return err
		}
		return tx.OAuthTokenUse(ctx, k.ID, Base)
	})
	at := Base.Add(time.Minute)
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.OAuthCodeUse(ctx, code.ID, g2.ID, at); !errors.Is(err, store.ErrStale) {
			return fmt.Errorf("replayed OAuthCodeUse = %v, want ErrStale", err)
		}
		used, err := tx.OAuthCodeGetByHash(ctx, code.Hash)
		if err != nil {
			return err
		}
		if err := tx.OAuthGrantRevoke(ctx, used.GrantID, at); err != nil {
			return err
		}
		if err := tx.OAuthTokenUse(ctx, k.ID, at); !errors.Is(err, store.ErrStale) {
			return fmt.Errorf("replayed OAuthTokenUse = %v, want ErrStale", err)
		}
		return tx.OAuthGrantRevoke(ctx, k.GrantID, at)
	})
	wantTime(t, "RevokedAt of the replayed code's grant", getOAuthGrant(t, s, g1.ID).RevokedAt, &at)
	wantTime(t, "RevokedAt of the replayed refresh token's grant", getOAuthGrant(t, s, g2.ID).RevokedAt, &at)
}
