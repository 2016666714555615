package oauth_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/continuo-dev/continuo/internal/oauth"
	"github.com/continuo-dev/continuo/internal/store/stores"
)

func TestCodeExchangeErrors(t *testing.T) { stores.Each(t, testCodeExchangeErrors) }

func testCodeExchangeErrors(t *testing.T) {
	e := setupOAuth(t, oauth.Options{})
	id, other := e.public(cb), e.public(cb)
	pub := oauth.ClientAuth{ID: id}
	code, verifier := e.code(id, cb)
	wrong, _ := pkce()
	cases := []struct {
		name string
		c    oauth.ClientAuth
		form url.Values
		want string
	}{
		{"wrong verifier", pub, url.Values{"code_verifier": {wrong}}, "invalid_grant"},
		{"short verifier", pub, url.Values{"code_verifier": {verifier[:42]}}, "invalid_grant"},
		{"no verifier", pub, url.Values{"code_verifier": {""}}, "invalid_request"},
		{"another client's code", oauth.ClientAuth{ID: other}, nil, "invalid_grant"},
		{"other redirect", pub, url.Values{"redirect_uri": {"https://app.example/other"}}, "invalid_grant"},
		{"no redirect", pub, url.Values{"redirect_uri": {""}}, "invalid_grant"},
		{"unknown code", pub, url.Values{"code": {"cto_ocd_" + strings.Repeat("a", 52)}}, "invalid_grant"},
		{"not a code", pub, url.Values{"code": {"hello"}}, "invalid_grant"},
		{"no code", pub, url.Values{"code": {""}}, "invalid_request"},
		{"other resource", pub, url.Values{"resource": {"https://other.example/mcp"}}, "invalid_target"},
		{"repeated parameter", pub, url.Values{"code_verifier": {verifier, verifier}}, "invalid_request"},
		{"grant type", pub, url.Values{"grant_type": {"password"}}, "unsupported_grant_type"},
		{"no grant type", pub, url.Values{"grant_type": {""}}, "invalid_request"},
		{"unknown client", oauth.ClientAuth{ID: "ocl_nope"}, nil, "invalid_client"},
		{"no client", oauth.ClientAuth{}, nil, "invalid_client"},
		{"public client with a secret", oauth.ClientAuth{ID: id, Secret: "cto_ocs_x"}, nil, "invalid_client"},
	}
	for _, c := range cases {
		f := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {cb}, "code_verifier": {verifier}}
		for k, v := range c.form {
			f[k] = v
		}
		if _, err := e.s.Token(e.ctx, f, c.c); oerr(err) != c.want {
			t.Errorf("%s: %v (want %s)", c.name, err, c.want)
		}
	}
	// None of the failures spent the code.
	if _, err := e.exchange(pub, code, cb, verifier); err != nil {
		t.Fatalf("exchange after failed attempts: %v", err)
	}

	// Codes live two minutes.
	code, verifier = e.code(id, cb)
	e.clk.T = e.clk.T.Add(2 * time.Minute)
	if _, err := e.exchange(pub, code, cb, verifier); oerr(err) != "invalid_grant" {
		t.Fatalf("expired code: %v", err)
	}
}

// A code used twice: the second exchange fails, and the tokens of the
// first stop working (RFC 6749 §4.1.2: the code leaked).
func TestCodeReplay(t *testing.T) { stores.Each(t, testCodeReplay) }

func testCodeReplay(t *testing.T) {
	e := setupOAuth(t, oauth.Options{})
	id := e.public(cb)
	pub := oauth.ClientAuth{ID: id}
	code, verifier := e.code(id, cb)
	tr, err := e.exchange(pub, code, cb, verifier)
	if err != nil || !e.works(tr.AccessToken) {
		t.Fatalf("first exchange: %v", err)
	}
	if _, err := e.exchange(pub, code, cb, verifier); oerr(err) != "invalid_grant" {
		t.Fatalf("replayed code: %v", err)
	}
	if e.works(tr.AccessToken) {
		t.Fatal("access token of a replayed code still works")
	}
	if _, err := e.refresh(pub, tr.RefreshToken, ""); oerr(err) != "invalid_grant" {
		t.Fatalf("refresh token of a replayed code: %v", err)
	}
}

// Refresh rotates; a spent refresh token presented again revokes the
// family, down to the newest access token.
func TestRefreshRotation(t *testing.T) { stores.Each(t, testRefreshRotation) }

func testRefreshRotation(t *testing.T) {
	e := setupOAuth(t, oauth.Options{})
	id := e.register(`{"redirect_uris":["` + cb + `"],"token_endpoint_auth_method":"none","scope":"sessions:read sessions:write"}`).Client.ClientID
	pub := oauth.ClientAuth{ID: id}
	first := e.tokens(id, cb)
	second, err := e.refresh(pub, first.RefreshToken, "")
	if err != nil || second.RefreshToken == first.RefreshToken || second.AccessToken == first.AccessToken ||
		second.Scope != "sessions:read sessions:write" {
		t.Fatalf("refresh: %+v %v", second, err)
	}
	if !e.works(first.AccessToken) || !e.works(second.AccessToken) {
		t.Fatal("rotation ended an unexpired access token")
	}
	// Wider than the grant: refused, and nothing spent.
	for _, sc := range []string{"sessions:read swarm:own", "admin", "bogus"} {
		if _, err := e.refresh(pub, second.RefreshToken, sc); oerr(err) != "invalid_scope" {
			t.Errorf("refresh with scope %q: %v", sc, err)
		}
	}
	// Narrower: allowed.
	third, err := e.refresh(pub, second.RefreshToken, "sessions:read")
	if err != nil {
		t.Fatalf("narrower refresh: %v", err)
	}
	if !e.works(third.AccessToken) {
		t.Fatal("newest access token refused")
	}
	// The first refresh token again: reuse. The family ends.
	if _, err := e.refresh(pub, first.RefreshToken, ""); oerr(err) != "invalid_grant" {
		t.Fatalf("reused refresh token: %v", err)
	}
	if e.works(third.AccessToken) || e.works(first.AccessToken) {
		t.Fatal("the family's access tokens outlived the reuse")
	}
	if _, err := e.refresh(pub, third.RefreshToken, ""); oerr(err) != "invalid_grant" {
		t.Fatalf("newest refresh token after reuse: %v", err)
	}
	gs, err := e.a.OAuthGrants(e.ctx)
	if err != nil || len(gs) != 1 || gs[0].State != "revoked" || gs[0].RevokedAt == nil {
		t.Fatalf("grants after reuse: %+v %v", gs, err)
	}
}

// TestRefreshNarrows (issue 23): a refresh that asks for a subset of its
// grant's scopes gets an access token holding exactly that subset, and a
// response that says so (RFC 6749 §5.1, §6); asking for all of them, or
// for none, is the grant's scope. Asking for more, an unknown scope or an
// empty one is invalid_scope and spends nothing. The grant stays the
// ceiling: the next refresh may ask for all of it again.
func TestRefreshNarrows(t *testing.T) { stores.Each(t, testRefreshNarrows) }

func testRefreshNarrows(t *testing.T) {
	e := setupOAuth(t, oauth.Options{})
	id := e.register(`{"redirect_uris":["` + cb + `"],"token_endpoint_auth_method":"none","scope":"sessions:read sessions:write swarm:own"}`).Client.ClientID
	pub := oauth.ClientAuth{ID: id}
	holds := func(access string) string {
		t.Helper()
		c, err := e.a.Authenticate(e.ctx, access)
		if err != nil {
			t.Fatalf("authenticate: %v", err)
		}
		out := make([]string, len(c.Scopes))
		for i, sc := range c.Scopes {
			out[i] = string(sc)
		}
		return strings.Join(out, " ")
	}
	full := "sessions:read sessions:write swarm:own"
	rt := e.tokens(id, cb).RefreshToken
	for _, c := range []struct{ ask, want string }{
		{"sessions:read", "sessions:read"},
		{"swarm:own  sessions:read", "sessions:read swarm:own"}, // the grant's order; extra spaces are empty fields
		{"", full},   // the grant's again: the ceiling is the grant
		{full, full}, // all of it: the grant's
		{"sessions:write", "sessions:write"},
	} {
		for _, bad := range []string{"sessions:read admin", "runtime:read", "bogus", "   "} {
			if _, err := e.refresh(pub, rt, bad); oerr(err) != "invalid_scope" {
				t.Fatalf("refresh asking %q: %v, want invalid_scope", bad, err)
			}
		}
		r, err := e.refresh(pub, rt, c.ask) // the refused asks spent nothing
		if err != nil {
			t.Fatalf("refresh asking %q: %v", c.ask, err)
		}
		if r.Scope != c.want || holds(r.AccessToken) != c.want {
			t.Errorf("refresh asking %q: response scope %q, the token holds %q; want %q", c.ask, r.Scope, holds(r.AccessToken), c.want)
		}
		rt = r.RefreshToken
	}
}

func TestTokenExpiry(t *testing.T) { stores.Each(t, testTokenExpiry) }

func testTokenExpiry(t *testing.T) {
	e := setupOAuth(t, oauth.Options{RefreshTTL: 48 * time.Hour})
	id := e.public(cb)
	pub := oauth.ClientAuth{ID: id}
	tr := e.tokens(id, cb)
	e.clk.T = e.clk.T.Add(time.Hour - time.Millisecond)
	if !e.works(tr.AccessToken) {
		t.Fatal("access token refused before its hour")
	}
	e.clk.T = e.clk.T.Add(time.Millisecond)
	if e.works(tr.AccessToken) {
		t.Fatal("access token accepted after its hour")
	}
	tr, err := e.refresh(pub, tr.RefreshToken, "")
	if err != nil || !e.works(tr.AccessToken) {
		t.Fatalf("refresh after the access token expired: %v", err)
	}
	e.clk.T = e.clk.T.Add(48 * time.Hour)
	if _, err := e.refresh(pub, tr.RefreshToken, ""); oerr(err) != "invalid_grant" {
		t.Fatalf("expired refresh token: %v", err)
	}
	// Every error of the token endpoint is a 400 but invalid_client's 401.
	_, err = e.refresh(pub, tr.RefreshToken, "")
	if st := err.(*oauth.OAuthError).Status; st != http.StatusBadRequest {
		t.Fatalf("invalid_grant status %d", st)
	}
	_, err = e.refresh(oauth.ClientAuth{ID: "ocl_nope"}, tr.RefreshToken, "")
	if st := err.(*oauth.OAuthError).Status; st != http.StatusUnauthorized {
		t.Fatalf("invalid_client status %d", st)
	}
}

// A confidential client authenticates with its secret, by either method.
func TestConfidentialClient(t *testing.T) { stores.Each(t, testConfidentialClient) }

func testConfidentialClient(t *testing.T) {
	e := setupOAuth(t, oauth.Options{})
	r := e.register(`{"redirect_uris":["` + cb + `"],"token_endpoint_auth_method":"client_secret_basic"}`)
	id := r.Client.ClientID
	if !strings.HasPrefix(r.Secret, "cto_ocs_") || r.Response["client_secret"] != r.Secret {
		t.Fatalf("registration %+v", r)
	}
	for name, c := range map[string]oauth.ClientAuth{
		"no secret":    {ID: id},
		"wrong secret": {ID: id, Secret: r.Secret + "x", Basic: true},
		"other secret": {ID: id, Secret: "cto_ocs_" + strings.Repeat("a", 52)},
	} {
		code, verifier := e.code(id, cb)
		if _, err := e.exchange(c, code, cb, verifier); oerr(err) != "invalid_client" {
			t.Errorf("%s: %v", name, err)
		}
	}
	code, verifier := e.code(id, cb)
	tr, err := e.exchange(oauth.ClientAuth{ID: id, Secret: r.Secret, Basic: true}, code, cb, verifier)
	if err != nil {
		t.Fatalf("basic: %v", err)
	}
	// client_secret_post: the form carries both.
	tr, err = e.s.Token(e.ctx, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tr.RefreshToken},
		"client_id": {id}, "client_secret": {r.Secret}}, oauth.ClientAuth{})
	if err != nil || !e.works(tr.AccessToken) {
		t.Fatalf("post: %v", err)
	}
	// A Basic header and a different client_id in the form: refused.
	other := e.public(cb)
	if _, err := e.s.Token(e.ctx, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tr.RefreshToken},
		"client_id": {other}}, oauth.ClientAuth{ID: id, Secret: r.Secret, Basic: true}); oerr(err) != "invalid_request" {
		t.Fatalf("two client IDs: %v", err)
	}
}

// RFC 7009: revoking an access token ends it alone; revoking a refresh
// token ends its family; an unknown or foreign token changes nothing.
func TestRevokeToken(t *testing.T) { stores.Each(t, testRevokeToken) }

func testRevokeToken(t *testing.T) {
	e := setupOAuth(t, oauth.Options{})
	id, other := e.public(cb), e.public(cb)
	pub := oauth.ClientAuth{ID: id}
	revoke := func(c oauth.ClientAuth, token string) error {
		return e.s.RevokeOAuthToken(e.ctx, url.Values{"token": {token}, "token_type_hint": {"refresh_token"}}, c)
	}
	tr := e.tokens(id, cb)
	for _, tok := range []string{"cto_oat_" + strings.Repeat("a", 52), "cto_ort_nope", "garbage", e.alice.Token} {
		if err := revoke(pub, tok); err != nil {
			t.Errorf("revoke unknown %q: %v", tok, err)
		}
	}
	if err := revoke(oauth.ClientAuth{ID: other}, tr.AccessToken); err != nil || !e.works(tr.AccessToken) {
		t.Fatalf("another client revoked the token: %v", err)
	}
	if err := revoke(oauth.ClientAuth{ID: "ocl_nope"}, tr.AccessToken); oerr(err) != "invalid_client" {
		t.Fatalf("unknown client: %v", err)
	}
	if err := e.s.RevokeOAuthToken(e.ctx, url.Values{}, pub); oerr(err) != "invalid_request" {
		t.Fatalf("no token: %v", err)
	}
	if err := revoke(pub, tr.AccessToken); err != nil || e.works(tr.AccessToken) {
		t.Fatalf("revoke access token: %v", err)
	}
	if err := revoke(pub, tr.AccessToken); err != nil {
		t.Fatalf("revoke twice: %v", err)
	}
	tr, err := e.refresh(pub, tr.RefreshToken, "")
	if err != nil || !e.works(tr.AccessToken) {
		t.Fatalf("refresh after the access token's revocation: %v", err)
	}
	if err := revoke(pub, tr.RefreshToken); err != nil {
		t.Fatal(err)
	}
	if e.works(tr.AccessToken) {
		t.Fatal("access token outlived its refresh token's revocation")
	}
	if _, err := e.refresh(pub, tr.RefreshToken, ""); oerr(err) != "invalid_grant" {
		t.Fatalf("refresh after revocation: %v", err)
	}
}

// N concurrent exchanges of one code: exactly one gets tokens. The others
// are replays, so the grant it made ends revoked too.
func TestCodeExchangeRace(t *testing.T) { stores.Each(t, testCodeExchangeRace) }

func testCodeExchangeRace(t *testing.T) {
	e := setupOAuth(t, oauth.Options{})
	id := e.public(cb)
	code, verifier := e.code(id, cb)
	const n = 8
	results := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			_, results[i] = e.exchange(oauth.ClientAuth{ID: id}, code, cb, verifier)
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for _, err := range results {
		switch {
		case err == nil:
			won++
		case oerr(err) != "invalid_grant":
			t.Errorf("loser: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d exchanges of one code succeeded", won)
	}
	gs, err := e.a.OAuthGrants(e.ctx)
	if err != nil || len(gs) != 1 || gs[0].State != "revoked" {
		t.Fatalf("grants: %+v %v", gs, err)
	}
}

// N concurrent refreshes of one refresh token: at most one succeeds, and
// the family ends revoked (the losers are reuse).
func TestRefreshRace(t *testing.T) { stores.Each(t, testRefreshRace) }

func testRefreshRace(t *testing.T) {
	e := setupOAuth(t, oauth.Options{})
	id := e.public(cb)
	tr := e.tokens(id, cb)
	const n = 8
	results := make([]*oauth.TokenResponse, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = e.refresh(oauth.ClientAuth{ID: id}, tr.RefreshToken, "")
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
			if e.works(results[i].AccessToken) {
				t.Error("the winner's access token outlived the reuse")
			}
		case oerr(err) != "invalid_grant":
			t.Errorf("loser: %v", err)
		}
	}
	if won > 1 {
		t.Fatalf("%d refreshes of one token succeeded", won)
	}
	if e.works(tr.AccessToken) {
		t.Fatal("the family's first access token outlived the reuse")
	}
	gs, err := e.a.OAuthGrants(e.ctx)
	if err != nil || len(gs) != 1 || gs[0].State != "revoked" {
		t.Fatalf("grants: %+v %v", gs, err)
	}
}

// Every revocation tells the bearer caches of every replica ("auth").
func TestRevocationsNotify(t *testing.T) { stores.Each(t, testRevocationsNotify) }

func testRevocationsNotify(t *testing.T) {
	e := setupOAuth(t, oauth.Options{})
	id := e.public(cb)
	pub := oauth.ClientAuth{ID: id}
	notified := func(what string, f func()) {
		t.Helper()
		ctx, cancel := context.WithCancel(e.ctx)
		defer cancel()
		ch, err := e.db.Listen(ctx, "auth")
		if err != nil {
			t.Fatal(err)
		}
		f()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no notification", what)
		}
	}
	notified("access token revocation", func() {
		tr := e.tokens(id, cb)
		if err := e.s.RevokeOAuthToken(e.ctx, url.Values{"token": {tr.AccessToken}}, pub); err != nil {
			t.Fatal(err)
		}
	})
	notified("refresh token revocation", func() {
		tr := e.tokens(id, cb)
		if err := e.s.RevokeOAuthToken(e.ctx, url.Values{"token": {tr.RefreshToken}}, pub); err != nil {
			t.Fatal(err)
		}
	})
	notified("refresh token reuse", func() {
		tr := e.tokens(id, cb)
		if _, err := e.refresh(pub, tr.RefreshToken, ""); err != nil {
			t.Fatal(err)
		}
		e.refresh(pub, tr.RefreshToken, "")
	})
	notified("code replay", func() {
		code, verifier := e.code(id, cb)
		if _, err := e.exchange(pub, code, cb, verifier); err != nil {
			t.Fatal(err)
		}
		e.exchange(pub, code, cb, verifier)
	})
	notified("grant revocation", func() {
		e.tokens(id, cb)
		gs, _ := e.a.OAuthGrants(e.ctx)
		if _, _, err := e.a.RevokeOAuth(e.ctx, gs[len(gs)-1].GrantID); err != nil {
			t.Fatal(err)
		}
	})
	notified("client revocation", func() {
		if _, _, err := e.a.RevokeOAuth(e.ctx, id); err != nil {
			t.Fatal(err)
		}
	})
	notified("sign-out", func() {
		s, _, err := e.a.SignIn(e.ctx, e.alice.Token)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.a.SignOut(e.ctx, s); err != nil {
			t.Fatal(err)
		}
	})
}

// With the bearer cache on, every way an OAuth token ends takes effect on
// its next request: each clears the cache it was served from.
func TestOAuthBearerCache(t *testing.T) { stores.Each(t, testOAuthBearerCache) }

func testOAuthBearerCache(t *testing.T) {
	e := setupOAuth(t, oauth.Options{})
	ctx, cancel := context.WithCancel(e.ctx)
	done := e.a.WatchRevocations(ctx)
	defer func() { cancel(); <-done }()
	id := e.public(cb)
	pub := oauth.ClientAuth{ID: id}
	cached := func() *oauth.TokenResponse {
		t.Helper()
		tr := e.tokens(id, cb)
		for range 2 { // the second is served from the cache
			if !e.works(tr.AccessToken) {
				t.Fatal("fresh token refused")
			}
		}
		return tr
	}
	for name, end := range map[string]func(tr *oauth.TokenResponse){
		"access token revoked": func(tr *oauth.TokenResponse) {
			if err := e.s.RevokeOAuthToken(e.ctx, url.Values{"token": {tr.AccessToken}}, pub); err != nil {
				t.Fatal(err)
			}
		},
		"refresh token revoked": func(tr *oauth.TokenResponse) {
			if err := e.s.RevokeOAuthToken(e.ctx, url.Values{"token": {tr.RefreshToken}}, pub); err != nil {
				t.Fatal(err)
			}
		},
		"refresh token reused": func(tr *oauth.TokenResponse) {
			if _, err := e.refresh(pub, tr.RefreshToken, ""); err != nil {
				t.Fatal(err)
			}
			e.refresh(pub, tr.RefreshToken, "")
		},
		"grant revoked": func(*oauth.TokenResponse) {
			gs, _ := e.a.OAuthGrants(e.ctx)
			if _, _, err := e.a.RevokeOAuth(e.ctx, gs[len(gs)-1].GrantID); err != nil {
				t.Fatal(err)
			}
		},
	} {
		tr := cached()
		end(tr)
		if e.works(tr.AccessToken) {
			t.Errorf("%s: the cached token still works", name)
		}
	}
	// A replayed code: the tokens of its first exchange end.
	code, verifier := e.code(id, cb)
	tr, err := e.exchange(pub, code, cb, verifier)
	if err != nil || !e.works(tr.AccessToken) {
		t.Fatal(err)
	}
	e.exchange(pub, code, cb, verifier)
	if e.works(tr.AccessToken) {
		t.Error("code replayed: the cached token still works")
	}
	// The client revoked: all of its tokens end.
	tr = cached()
	if _, _, err := e.a.RevokeOAuth(e.ctx, id); err != nil {
		t.Fatal(err)
	}
	if e.works(tr.AccessToken) {
		t.Error("client revoked: the cached token still works")
	}
}
