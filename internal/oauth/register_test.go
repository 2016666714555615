package oauth_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/oauth"
	"github.com/continuo-dev/continuo/internal/store/stores"
)

func TestRegisterClient(t *testing.T) { stores.Each(t, testRegisterClient) }

func testRegisterClient(t *testing.T) {
	e := setupOAuth(t, oauth.Options{})
	r := e.register(`{"redirect_uris":["` + cb + `"],"token_endpoint_auth_method":"none","client_name":"Claude","scope":"sessions:read"}`)
	c := r.Client
	if !continuo.ValidID(continuo.PrefixOAuthClient, c.ClientID) || c.ID != c.ClientID || c.Kind != continuo.ClientRegistered ||
		r.Secret != "" || c.SecretHash != "" {
		t.Fatalf("client %+v", c)
	}
	want := map[string]any{"client_id": c.ClientID, "client_id_issued_at": e.clk.T.Unix(), "client_name": "Claude",
		"token_endpoint_auth_method": "none", "scope": "sessions:read", "client_secret_expires_at": 0}
	for k, v := range want {
		if r.Response[k] != v {
			t.Errorf("response %s = %v, want %v", k, r.Response[k], v)
		}
	}
	if _, ok := r.Response["client_secret"]; ok {
		t.Error("a public client got a secret")
	}
	// RFC 7591's default method is client_secret_basic.
	r = e.register(`{"redirect_uris":["` + cb + `"]}`)
	if r.Client.AuthMethod != continuo.AuthMethodBasic || !strings.HasPrefix(r.Secret, "cto_ocs_") ||
		strings.Contains(r.Client.SecretHash, r.Secret[8:]) || r.Client.Name == "" {
		t.Fatalf("default method: %+v", r.Client)
	}
	for _, bad := range []string{`not json`, `{}`, `{"redirect_uris":[]}`, `{"redirect_uris":["` + cb + `"],"scope":"bogus"}`} {
		if _, err := e.s.RegisterClient(e.ctx, []byte(bad)); err == nil || !strings.HasPrefix(oerr(err), "invalid_") {
			t.Errorf("register %s: %v", bad, err)
		}
	}
	big := `{"redirect_uris":["` + cb + `"],"client_name":"` + strings.Repeat("x", oauth.MaxRegistrationBytes) + `"}`
	if _, err := e.s.RegisterClient(e.ctx, []byte(big)); oerr(err) != "invalid_client_metadata" {
		t.Fatalf("oversized registration: %v", err)
	}
}

// At the cap of unused clients, registration prunes the ones older than a
// day, and refuses while none are; clients that completed an
// authorization never count.
func TestRegistrationFlood(t *testing.T) { stores.Each(t, testRegistrationFlood) }

func testRegistrationFlood(t *testing.T) {
	e := setupOAuth(t, oauth.Options{MaxUnusedClients: 3})
	used := e.public(cb)
	e.tokens(used, cb)
	var first []string
	for range 3 {
		first = append(first, e.public(cb))
	}
	_, err := e.s.RegisterClient(e.ctx, []byte(`{"redirect_uris":["`+cb+`"],"token_endpoint_auth_method":"none"}`))
	if oe, ok := err.(*oauth.OAuthError); !ok || oe.Status != http.StatusTooManyRequests {
		t.Fatalf("registration at the cap: %v", err)
	}
	e.clk.T = e.clk.T.Add(24*time.Hour + time.Millisecond)
	fresh := e.public(cb)
	cs, err := e.a.OAuthClients(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, c := range cs {
		ids[c.ClientID] = true
	}
	if !ids[used] || !ids[fresh] || len(cs) != 2 {
		t.Fatalf("after pruning: %+v", cs)
	}
	// The pruned clients are gone for good.
	_, challenge := pkce()
	if _, err := e.s.CheckAuthorize(e.ctx, e.request(first[0], cb, challenge)); err == nil || redirects(err) {
		t.Fatalf("pruned client authorized: %v", err)
	}
	// The used client still works.
	e.tokens(used, cb)
}

// Revoking a client ends every grant it holds; revoking a grant ends
// that grant alone.
func TestRevokeOAuth(t *testing.T) { stores.Each(t, testRevokeOAuth) }

func testRevokeOAuth(t *testing.T) {
	e := setupOAuth(t, oauth.Options{})
	id, keep := e.public(cb), e.public("http://127.0.0.1:9/cb")
	t1, t2, t3 := e.tokens(id, cb), e.tokens(id, cb), e.tokens(keep, "http://127.0.0.1:9/cb")
	gs, err := e.a.OAuthGrants(e.ctx)
	if err != nil || len(gs) != 3 {
		t.Fatalf("grants %+v %v", gs, err)
	}
	g := gs[0]
	if g.ClientID != id || g.ClientName != "Test" || g.Principal != "alice" || g.Group != "alice" || g.State != "active" ||
		g.Resource != testIssuer+"/mcp" || len(g.Scopes) != len(continuo.OAuthScopes()) {
		t.Fatalf("grant info %+v", g)
	}
	cs, err := e.a.OAuthClients(e.ctx)
	if err != nil || len(cs) != 2 || cs[0].ActiveGrants != 2 || cs[0].UsedAt == nil || cs[0].Kind != "registered" ||
		strings.Join(cs[0].RedirectHosts, ",") != "app.example" || strings.Join(cs[1].RedirectHosts, ",") != "127.0.0.1" {
		t.Fatalf("clients %+v %v", cs, err)
	}

	if kind, n, err := e.a.RevokeOAuth(e.ctx, gs[2].GrantID); kind != "grant" || n != 1 || err != nil {
		t.Fatalf("revoke grant: %s %d %v", kind, n, err)
	}
	if e.works(t3.AccessToken) {
		t.Fatal("token of a revoked grant works")
	}
	if kind, n, err := e.a.RevokeOAuth(e.ctx, gs[2].GrantID); kind != "grant" || n != 0 || err != nil {
		t.Fatalf("revoke grant twice: %s %d %v", kind, n, err)
	}
	if kind, n, err := e.a.RevokeOAuth(e.ctx, id); kind != "client" || n != 2 || err != nil {
		t.Fatalf("revoke client: %s %d %v", kind, n, err)
	}
	if e.works(t1.AccessToken) || e.works(t2.AccessToken) {
		t.Fatal("token of a revoked client works")
	}
	if _, err := e.refresh(oauth.ClientAuth{ID: id}, t1.RefreshToken, ""); oerr(err) != "invalid_client" {
		t.Fatalf("refresh by a revoked client: %v", err)
	}
	_, challenge := pkce()
	if _, err := e.s.CheckAuthorize(e.ctx, e.request(id, cb, challenge)); oerr(err) != "invalid_client" || redirects(err) {
		t.Fatalf("authorize a revoked client: %v", err)
	}
	if kind, n, err := e.a.RevokeOAuth(e.ctx, id); kind != "client" || n != 0 || err != nil {
		t.Fatalf("revoke client twice: %s %d %v", kind, n, err)
	}
	for _, nope := range []string{"ogr_" + strings.Repeat("0", 26), "ocl_nope", "https://nope.example/c"} {
		if _, _, err := e.a.RevokeOAuth(e.ctx, nope); code(err) != continuo.CodeNotFound {
			t.Errorf("revoke %s: %v", nope, err)
		}
	}
	cs, _ = e.a.OAuthClients(e.ctx)
	if cs[0].RevokedAt == nil || cs[0].ActiveGrants != 0 {
		t.Fatalf("revoked client listed as %+v", cs[0])
	}
}

// A code issued before its client was revoked cannot be exchanged.
func TestRevokedClientCode(t *testing.T) { stores.Each(t, testRevokedClientCode) }

func testRevokedClientCode(t *testing.T) {
	e := setupOAuth(t, oauth.Options{})
	id := e.public(cb)
	code, verifier := e.code(id, cb)
	_, challenge := pkce()
	az, err := e.s.CheckAuthorize(e.ctx, e.request(id, cb, challenge))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.a.RevokeOAuth(e.ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.IssueCode(e.ctx, az, e.alice.PrincipalID, az.Scopes); oerr(err) != "invalid_client" {
		t.Fatalf("consent after revocation: %v", err)
	}
	if _, err := e.s.Token(e.ctx, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {cb},
		"code_verifier": {verifier}}, oauth.ClientAuth{ID: id}); oerr(err) != "invalid_client" {
		t.Fatalf("exchange after revocation: %v", err)
	}
}
