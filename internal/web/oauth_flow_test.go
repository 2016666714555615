package web_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/oauth"
	"github.com/continuo-dev/continuo/internal/store/stores"
)

const redirect = "http://127.0.0.1:9999/callback"

// TestOAuthBrowserFlow is the whole flow a person and a client go through:
// sign in with a login link, see the consent page, approve, exchange the
// code, call /mcp with the token, refresh, revoke.
func TestOAuthBrowserFlow(t *testing.T) { stores.Each(t, testOAuthBrowserFlow) }

func testOAuthBrowserFlow(t *testing.T) {
	o := newOAuthServer(t)
	client := o.register("Test Client", redirect)
	verifier, challenge := pkce("flow")
	authorize := o.authorizeURL(client, redirect, challenge, "sessions:read sessions:write")
	b := o.browser()

	// Not signed in: the sign-in form, which comes back here.
	page := b.get(authorize)
	if page.StatusCode != http.StatusOK || !strings.Contains(page.body, `id="signin"`) || !strings.Contains(page.body, `name="secret"`) {
		t.Fatalf("authorize before sign-in: %d %s", page.StatusCode, page.body)
	}
	if next := formFields(t, page.body, "signin").Get("next"); next != authorize {
		t.Errorf("sign-in next = %q, want %q", next, authorize)
	}

	// The login link's page does not spend it: opening it twice works.
	link := o.loginLink("alice")
	for range 2 {
		if r := b.get(link.URL); r.StatusCode != http.StatusOK || !strings.Contains(r.body, "alice") {
			t.Fatalf("login link page: %d %s", r.StatusCode, r.body)
		}
	}
	f := formFields(t, b.get(link.URL).body, "login")
	f.Set("next", authorize)
	r := b.post("/login", f)
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != authorize {
		t.Fatalf("POST /login: %d %q %s", r.StatusCode, r.Header.Get("Location"), r.body)
	}
	if c := cookieNamed(r.Cookies(), "continuo_session"); c == nil || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure {
		t.Errorf("session cookie = %+v", c)
	}
	if r := b.get(link.URL); r.StatusCode == http.StatusOK {
		t.Errorf("a spent login link still shows its page: %s", r.body)
	}

	// The consent page: the client, where it redirects, the scopes with
	// their meaning, the projects, who is signed in.
	page = b.get(authorize)
	if page.StatusCode != http.StatusOK {
		t.Fatalf("consent page: %d %s", page.StatusCode, page.body)
	}
	for _, want := range []string{"Test Client", "this computer", `id="scope-sessions-read"`, `id="scope-sessions-write"`,
		"Read your Workflow Sessions and their handoff briefs", "webapp", "read &amp; write", `id="principal">alice<`,
		`id="approve"`, `id="deny"`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("consent page lacks %q", want)
		}
	}
	if strings.Contains(page.body, "scope-runtime-read") {
		t.Error("consent page offers a scope the client did not ask for")
	}
	for h, want := range map[string]string{
		"Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self' http://127.0.0.1:9999; frame-ancestors 'none'; base-uri 'none'",
		"X-Frame-Options":         "DENY",
		"Cache-Control":           "no-store",
		"Referrer-Policy":         "same-origin",
	} {
		if got := page.Header.Get(h); got != want {
			t.Errorf("consent page %s = %q, want %q", h, got, want)
		}
	}

	// Approve: back to the client with the code, the state and the issuer.
	f = formFields(t, page.body, "consent")
	if got := f["grant_scope"]; !slices.Equal(got, []string{"sessions:read", "sessions:write"}) {
		t.Errorf("checked scopes = %v", got)
	}
	f.Set("decision", "approve")
	r = b.post("/oauth/authorize", f)
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("approve: %d %s", r.StatusCode, r.body)
	}
	loc, err := url.Parse(r.Header.Get("Location"))
	if err != nil || loc.Scheme+"://"+loc.Host+loc.Path != redirect {
		t.Fatalf("approve: Location %q", r.Header.Get("Location"))
	}
	q := loc.Query()
	if q.Get("code") == "" || q.Get("state") != "st-123" || q.Get("iss") != o.url {
		t.Fatalf("approve: Location query %v", q)
	}

	// The code for tokens.
	r = o.postForm("/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")},
		"redirect_uri": {redirect}, "client_id": {client}, "code_verifier": {verifier}, "resource": {o.url + "/mcp"}})
	if r.StatusCode != http.StatusOK || r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("Pragma") != "no-cache" {
		t.Fatalf("token: %d %v %s", r.StatusCode, r.Header, r.body)
	}
	tok := r.json(t)
	access, refresh := tok["access_token"].(string), tok["refresh_token"].(string)
	if !strings.HasPrefix(access, "cto_oat_") || !strings.HasPrefix(refresh, "cto_ort_") || tok["token_type"] != "Bearer" ||
		tok["scope"] != "sessions:read sessions:write" || tok["expires_in"] != float64(3600) {
		t.Fatalf("token response %s", r.body)
	}
	if err := o.ping(access); err != nil {
		t.Fatalf("MCP ping with the access token: %v", err)
	}

	// Refresh: new tokens that work.
	r = o.postForm("/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {client}})
	if r.StatusCode != http.StatusOK {
		t.Fatalf("refresh: %d %s", r.StatusCode, r.body)
	}
	tok = r.json(t)
	access2, refresh2 := tok["access_token"].(string), tok["refresh_token"].(string)
	if access2 == access || refresh2 == refresh || refresh2 == "" {
		t.Fatalf("refresh did not rotate: %s", r.body)
	}
	if err := o.ping(access2); err != nil {
		t.Fatalf("MCP ping with the refreshed token: %v", err)
	}

	// Revoke the refresh token: its family ends, the access token with it.
	r = o.postForm("/oauth/revoke", url.Values{"token": {refresh2}, "client_id": {client}})
	if r.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %d %s", r.StatusCode, r.body)
	}
	resp, body := get(t, mcpRequest(t, o.url, "", "Bearer "+access2))
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Errorf("revoked token on /mcp: %d %q %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
	}
}

// Unchecking scopes on the consent page narrows what the token carries.
func TestOAuthNarrowScopes(t *testing.T) { stores.Each(t, testOAuthNarrowScopes) }

func testOAuthNarrowScopes(t *testing.T) {
	o := newOAuthServer(t)
	client := o.register("Narrow", redirect)
	verifier, challenge := pkce("narrow")
	b, page := o.consentPage(o.authorizeURL(client, redirect, challenge, "sessions:read sessions:write runtime:read"))
	f := formFields(t, page.body, "consent")
	f.Set("decision", "approve")

	// None checked: the page again, with a word why, and no code.
	f.Del("grant_scope")
	r := b.post("/oauth/authorize", f)
	if r.StatusCode != http.StatusBadRequest || r.Header.Get("Location") != "" || !strings.Contains(r.body, `id="error"`) || !strings.Contains(r.body, `id="consent"`) {
		t.Fatalf("approve with nothing checked: %d %q %s", r.StatusCode, r.Header.Get("Location"), r.body)
	}

	// A scope the client did not ask for is refused outright.
	f["grant_scope"] = []string{"swarm:own"}
	if r := b.post("/oauth/authorize", f); r.StatusCode != http.StatusBadRequest || r.Header.Get("Location") != "" {
		t.Fatalf("approve with a scope not asked for: %d %q", r.StatusCode, r.Header.Get("Location"))
	}

	f["grant_scope"] = []string{"sessions:read"}
	r = b.post("/oauth/authorize", f)
	loc, _ := url.Parse(r.Header.Get("Location"))
	if r.StatusCode != http.StatusSeeOther || loc == nil || loc.Query().Get("code") == "" {
		t.Fatalf("approve one scope: %d %q %s", r.StatusCode, r.Header.Get("Location"), r.body)
	}
	r = o.postForm("/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
		"redirect_uri": {redirect}, "client_id": {client}, "code_verifier": {verifier}})
	if r.StatusCode != http.StatusOK || r.json(t)["scope"] != "sessions:read" {
		t.Fatalf("token of the narrowed grant: %d %s", r.StatusCode, r.body)
	}
}

// Deny sends the browser back to the client with access_denied.
func TestOAuthDeny(t *testing.T) { stores.Each(t, testOAuthDeny) }

func testOAuthDeny(t *testing.T) {
	o := newOAuthServer(t)
	client := o.register("Denied", redirect)
	_, challenge := pkce("deny")
	b, page := o.consentPage(o.authorizeURL(client, redirect, challenge, ""))
	f := formFields(t, page.body, "consent")
	f.Set("decision", "deny")
	r := b.post("/oauth/authorize", f)
	loc, _ := url.Parse(r.Header.Get("Location"))
	if r.StatusCode != http.StatusSeeOther || loc == nil {
		t.Fatalf("deny: %d %s", r.StatusCode, r.body)
	}
	if q := loc.Query(); q.Get("error") != "access_denied" || q.Get("state") != "st-123" || q.Get("code") != "" || q.Get("iss") != o.url {
		t.Errorf("deny: Location %s", loc)
	}
}

// Signing out ends the browser's session: the authorize page asks to sign
// in again.
func TestOAuthSignOut(t *testing.T) { stores.Each(t, testOAuthSignOut) }

func testOAuthSignOut(t *testing.T) {
	o := newOAuthServer(t)
	client := o.register("Out", redirect)
	_, challenge := pkce("out")
	authorize := o.authorizeURL(client, redirect, challenge, "")
	b, page := o.consentPage(authorize)
	r := b.post("/logout", formFields(t, page.body, "logout"))
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != authorize {
		t.Fatalf("logout: %d %q %s", r.StatusCode, r.Header.Get("Location"), r.body)
	}
	if page := b.get(authorize); !strings.Contains(page.body, `id="signin"`) {
		t.Errorf("after logout the authorize page is not the sign-in form: %s", page.body)
	}
}

// The sign-in form on the authorize page takes a personal access token too.
func TestOAuthSignInWithToken(t *testing.T) { stores.Each(t, testOAuthSignInWithToken) }

func testOAuthSignInWithToken(t *testing.T) {
	o := newOAuthServer(t)
	client := o.register("PAT", redirect)
	_, challenge := pkce("pat")
	authorize := o.authorizeURL(client, redirect, challenge, "")
	tok, err := o.auth.CreateToken(t.Context(), "alice", []continuo.Scope{continuo.ScopeSessionsRead}, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := o.browser()
	f := formFields(t, b.get(authorize).body, "signin")

	f.Set("secret", "cto_pat_nope")
	if r := b.post("/oauth/login", f); r.StatusCode != http.StatusUnauthorized || !strings.Contains(r.body, `id="error"`) {
		t.Errorf("sign-in with a bad token: %d %s", r.StatusCode, r.body)
	}
	f.Set("secret", tok.Token)
	r := b.post("/oauth/login", f)
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != authorize {
		t.Fatalf("sign-in with a token: %d %q %s", r.StatusCode, r.Header.Get("Location"), r.body)
	}
	if page := b.get(authorize); !strings.Contains(page.body, `id="consent"`) {
		t.Errorf("after sign-in with a token, no consent page: %s", page.body)
	}
}

func cookieNamed(cs []*http.Cookie, name string) *http.Cookie {
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// A client identified by its metadata document: the consent page says who
// published it, and the flow completes.
func TestOAuthMetadataClient(t *testing.T) { stores.Each(t, testOAuthMetadataClient) }

func testOAuthMetadataClient(t *testing.T) {
	var clientID string
	docs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"client_id": clientID, "client_name": "Doc Client",
			"redirect_uris": []string{redirect}, "token_endpoint_auth_method": "none"})
	}))
	defer docs.Close()
	// The test certificate names example.com; the resolver sends that name
	// to the loopback server, which the test CA lets the fetcher dial.
	clientID = "https://example.com:" + docs.URL[strings.LastIndexByte(docs.URL, ':')+1:] + "/client.json"
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: docs.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	fetcher, err := oauth.NewClientDocFetcher(oauth.FetcherOptions{TestCAFile: ca, Resolver: loopbackResolver{}})
	if err != nil {
		t.Fatal(err)
	}
	o := newOAuthServer(t, func(oo *oauth.Options) { oo.Fetcher = fetcher })
	verifier, challenge := pkce("doc")
	b, page := o.consentPage(o.authorizeURL(clientID, redirect, challenge, "sessions:read"))
	for _, want := range []string{`id="client-name">Doc Client<`, `id="client-kind">Published by example.com:`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("consent page lacks %q:\n%s", want, page.body)
		}
	}
	f := formFields(t, page.body, "consent")
	f.Set("decision", "approve")
	loc, _ := url.Parse(b.post("/oauth/authorize", f).Header.Get("Location"))
	r := o.postForm("/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
		"redirect_uri": {redirect}, "client_id": {clientID}, "code_verifier": {verifier}})
	if r.StatusCode != http.StatusOK {
		t.Fatalf("token: %d %s", r.StatusCode, r.body)
	}
	if err := o.ping(r.json(t)["access_token"].(string)); err != nil {
		t.Errorf("MCP ping: %v", err)
	}
}

type loopbackResolver struct{}

func (loopbackResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}
