package web_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/continuo-dev/continuo/internal/oauth"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/web"
)

// The metadata documents are exactly the design's (docs/DECISIONS.md).
func TestOAuthMetadata(t *testing.T) { stores.Each(t, testOAuthMetadata) }

func testOAuthMetadata(t *testing.T) {
	o := newOAuthServer(t)
	scopes := []any{"sessions:read", "sessions:write", "runtime:read", "project:write", "coding_agent:run", "swarm:own", "swarm:work"}
	resource := map[string]any{
		"resource":                 o.url + "/mcp",
		"authorization_servers":    []any{o.url},
		"bearer_methods_supported": []any{"header"},
		"scopes_supported":         scopes,
		"resource_name":            "Continuo",
	}
	methods := []any{"none", "client_secret_post", "client_secret_basic"}
	server := map[string]any{
		"issuer":                                         o.url,
		"authorization_endpoint":                         o.url + "/oauth/authorize",
		"token_endpoint":                                 o.url + "/oauth/token",
		"registration_endpoint":                          o.url + "/oauth/register",
		"revocation_endpoint":                            o.url + "/oauth/revoke",
		"response_types_supported":                       []any{"code"},
		"response_modes_supported":                       []any{"query"},
		"grant_types_supported":                          []any{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":               []any{"S256"},
		"token_endpoint_auth_methods_supported":          methods,
		"revocation_endpoint_auth_methods_supported":     methods,
		"scopes_supported":                               scopes,
		"client_id_metadata_document_supported":          true,
		"authorization_response_iss_parameter_supported": true,
	}
	for path, want := range map[string]map[string]any{
		"/.well-known/oauth-protected-resource":     resource,
		"/.well-known/oauth-protected-resource/mcp": resource,
		"/.well-known/oauth-authorization-server":   server,
	} {
		req, _ := http.NewRequest("GET", o.url+path, nil)
		r := do(t, o.client, req)
		if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "application/json" ||
			r.Header.Get("Cache-Control") != "public, max-age=300" || r.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("GET %s: %d %v", path, r.StatusCode, r.Header)
		}
		if got := r.json(t); !reflect.DeepEqual(got, want) {
			t.Errorf("GET %s:\n got %v\nwant %v", path, got, want)
		}
	}
}

// With OAuth off (no issuer) its routes do not exist and /mcp asks for a
// token as before.
func TestOAuthOff(t *testing.T) { stores.Each(t, testOAuthOff) }

func testOAuthOff(t *testing.T) {
	db := stores.Open(t)
	a := auth.New(db, nil)
	for name, h := range map[string]http.Handler{
		"nil": web.Handler(web.Options{MCP: mcpserver.New(mcpserver.Options{}), Auth: a}),
		"no issuer": web.Handler(web.Options{MCP: mcpserver.New(mcpserver.Options{}), Auth: a, OAuth: a,
			OAuthServer: oauth.New(a, db, nil, oauth.Options{})}),
	} {
		s := httptest.NewServer(h)
		for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp",
			"/.well-known/oauth-authorization-server", "/oauth/authorize", "/login"} {
			resp, body := get(t, must(http.NewRequest("GET", s.URL+path, nil)))
			if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%s: GET %s: %d %s", name, path, resp.StatusCode, body)
			}
		}
		resp, _ := get(t, mcpRequest(t, s.URL, "", ""))
		if got := resp.Header.Get("WWW-Authenticate"); got != `Bearer realm="continuo"` {
			t.Errorf("%s: /mcp challenge %q", name, got)
		}
		s.Close()
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// With OAuth on, a 401 from /mcp names the resource metadata (RFC 9728
// §5.1), and says invalid_token when a token was refused.
func TestOAuthChallenge(t *testing.T) { stores.Each(t, testOAuthChallenge) }

func testOAuthChallenge(t *testing.T) {
	o := newOAuthServer(t)
	meta := `Bearer resource_metadata="` + o.url + `/.well-known/oauth-protected-resource/mcp"`
	resp, body := get(t, mcpRequest(t, o.url, "", ""))
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != meta {
		t.Errorf("no token: %d %q %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
	}
	for _, tok := range []string{"cto_oat_nope", "cto_pat_nope"} {
		resp, body = get(t, mcpRequest(t, o.url, "", "Bearer "+tok))
		if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized ||
			!strings.HasPrefix(got, meta+`, error="invalid_token"`) {
			t.Errorf("token %s: %d %q %s", tok, resp.StatusCode, got, body)
		}
	}
}

// A consent post without the right CSRF field, or from another origin, is
// refused and issues nothing.
func TestOAuthConsentCSRF(t *testing.T) { stores.Each(t, testOAuthConsentCSRF) }

func testOAuthConsentCSRF(t *testing.T) {
	o := newOAuthServer(t)
	client := o.register("CSRF", redirect)
	_, challenge := pkce("csrf")
	b, page := o.consentPage(o.authorizeURL(client, redirect, challenge, ""))
	good := formFields(t, page.body, "consent")
	good.Set("decision", "approve")
	with := func(csrf string) url.Values {
		f := url.Values{}
		for k, v := range good {
			f[k] = v
		}
		if csrf == "" {
			f.Del("csrf")
		} else {
			f.Set("csrf", csrf)
		}
		return f
	}
	refused := func(what string, r response) {
		t.Helper()
		if r.StatusCode != http.StatusForbidden || r.Header.Get("Location") != "" {
			t.Errorf("%s: %d Location %q", what, r.StatusCode, r.Header.Get("Location"))
		}
	}
	refused("no csrf field", b.post("/oauth/authorize", with("")))
	refused("wrong csrf field", b.post("/oauth/authorize", with(strings.Repeat("A", 43))))
	refused("the logout form's field", b.post("/oauth/authorize", with(formFields(t, page.body, "logout").Get("csrf"))))
	refused("another origin", b.postFrom("http://evil.example", "/oauth/authorize", good))
	refused("an opaque origin", b.postFrom("null", "/oauth/authorize", good))

	// Another browser (the attacker's page cannot read this one's cookie).
	other := o.browser()
	other.signIn("alice", "/")
	refused("another browser's cookie", other.post("/oauth/authorize", good))

	// The same post, done right, goes through: nothing above was spent.
	if r := b.postFrom("", "/oauth/authorize", good); r.StatusCode != http.StatusSeeOther || !strings.Contains(r.Header.Get("Location"), "code=") {
		t.Errorf("the good post (no Origin, like a non-browser): %d %q %s", r.StatusCode, r.Header.Get("Location"), r.body)
	}

	// The sign-in form checks its field too.
	f := formFields(t, o.browser().get("/login").body, "signin")
	f.Set("secret", o.loginLink("alice").Code)
	if r := o.browser().post("/login", f); r.StatusCode != http.StatusForbidden {
		t.Errorf("sign-in without this browser's CSRF cookie: %d", r.StatusCode)
	}
}

// A client's name and redirect host are shown escaped, never as markup.
// (A redirect URI holds only RFC 3986 characters, so its host cannot
// carry a tag; quotes and ampersands it can.)
func TestOAuthConsentEscapes(t *testing.T) { stores.Each(t, testOAuthConsentEscapes) }

func testOAuthConsentEscapes(t *testing.T) {
	o := newOAuthServer(t)
	odd := `https://evil'&x=1;(y).example/cb`
	client := o.register(`<script>alert(1)</script>`, odd)
	_, challenge := pkce("xss")
	_, page := o.consentPage(o.authorizeURL(client, odd, challenge, ""))
	for _, raw := range []string{"<script>alert(1)</script>", "evil'&x"} {
		if strings.Contains(page.body, raw) {
			t.Errorf("consent page contains the raw %q", raw)
		}
	}
	for _, escaped := range []string{`id="client-name">&lt;script&gt;alert(1)&lt;/script&gt;<`, `id="redirect-host">evil&#39;&amp;x=1;(y).example<`} {
		if !strings.Contains(page.body, escaped) {
			t.Errorf("consent page lacks the escaped %q:\n%s", escaped, page.body)
		}
	}
	if csp := page.Header.Get("Content-Security-Policy"); strings.Contains(csp, "evil") {
		t.Errorf("CSP carries the odd host: %s", csp)
	}
}

// An unknown client or a redirect URI it did not register gets an error
// page of ours, never a redirect.
func TestOAuthAuthorizeErrorPage(t *testing.T) { stores.Each(t, testOAuthAuthorizeErrorPage) }

func testOAuthAuthorizeErrorPage(t *testing.T) {
	o := newOAuthServer(t)
	client := o.register("Errors", redirect)
	_, challenge := pkce("err")
	b := o.browser()
	b.signIn("alice", "/")
	for name, path := range map[string]string{
		"unregistered redirect URI": o.authorizeURL(client, "https://attacker.example/cb", challenge, ""),
		"unknown client":            o.authorizeURL("ocl_nope", redirect, challenge, ""),
		"redirect_uri twice":        o.authorizeURL(client, redirect, challenge, "") + "&redirect_uri=" + url.QueryEscape("https://attacker.example/cb"),
	} {
		r := b.get(path)
		if r.StatusCode != http.StatusBadRequest || r.Header.Get("Location") != "" || !strings.Contains(r.body, `id="error-message"`) {
			t.Errorf("%s: %d Location %q %s", name, r.StatusCode, r.Header.Get("Location"), r.body)
		}
	}
	// Past the redirect URI, errors go back to the client.
	r := b.get(strings.Replace(o.authorizeURL(client, redirect, challenge, ""), "code_challenge_method=S256", "code_challenge_method=plain", 1))
	loc, _ := url.Parse(r.Header.Get("Location"))
	if r.StatusCode != http.StatusSeeOther || loc == nil || loc.Query().Get("error") != "invalid_request" || loc.Query().Get("state") != "st-123" {
		t.Errorf("plain PKCE: %d Location %q", r.StatusCode, r.Header.Get("Location"))
	}
}

// Registration is rate-limited per remote address.
func TestOAuthRegisterRateLimit(t *testing.T) { stores.Each(t, testOAuthRegisterRateLimit) }

func testOAuthRegisterRateLimit(t *testing.T) {
	o := newOAuthServer(t)
	body := `{"redirect_uris":["` + redirect + `"],"token_endpoint_auth_method":"none"}`
	for i := range 10 {
		if r := o.postJSON("/oauth/register", body); r.StatusCode != http.StatusCreated {
			t.Fatalf("registration %d: %d %s", i+1, r.StatusCode, r.body)
		}
	}
	r := o.postJSON("/oauth/register", body)
	if r.StatusCode != http.StatusTooManyRequests || r.json(t)["error"] != "rate_limited" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("registration 11: %d %v %s", r.StatusCode, r.Header, r.body)
	}
	*o.now = o.now.Add(6 * time.Second) // one more token per six seconds
	if r := o.postJSON("/oauth/register", body); r.StatusCode != http.StatusCreated {
		t.Errorf("registration after six seconds: %d %s", r.StatusCode, r.body)
	}
	if r := o.postJSON("/oauth/register", body); r.StatusCode != http.StatusTooManyRequests {
		t.Errorf("and the next: %d %s", r.StatusCode, r.body)
	}
}

// The token endpoint takes a form of at most 16 KiB and nothing else.
func TestOAuthTokenBody(t *testing.T) { stores.Each(t, testOAuthTokenBody) }

func testOAuthTokenBody(t *testing.T) {
	o := newOAuthServer(t)
	oauthError := func(what string, r response, status int, code string) {
		t.Helper()
		if r.StatusCode != status || r.json(t)["error"] != code || r.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: %d %v %s", what, r.StatusCode, r.Header, r.body)
		}
	}
	oauthError("JSON body", o.postJSON("/oauth/token", `{"grant_type":"authorization_code","code":"x"}`), http.StatusBadRequest, "invalid_request")
	big := url.Values{"grant_type": {"authorization_code"}, "code": {strings.Repeat("x", 17<<10)}}
	oauthError("17 KiB body", o.postForm("/oauth/token", big), http.StatusRequestEntityTooLarge, "invalid_request")
	oauthError("a parameter twice", o.postForm("/oauth/token", url.Values{"grant_type": {"refresh_token", "refresh_token"}}), http.StatusBadRequest, "invalid_request")
	oauthError("unknown grant", o.postForm("/oauth/token", url.Values{"grant_type": {"password"}, "client_id": {"x"}}), http.StatusBadRequest, "unsupported_grant_type")

	// A client that tried Basic is told so when it is not known.
	req, _ := http.NewRequest("POST", o.url+"/oauth/token", strings.NewReader("grant_type=refresh_token&refresh_token=cto_ort_x"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("ocl_nope", "cto_ocs_nope")
	r := do(t, o.client, req)
	oauthError("unknown Basic client", r, http.StatusUnauthorized, "invalid_client")
	if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Basic") {
		t.Errorf("unknown Basic client: WWW-Authenticate %q", r.Header.Get("WWW-Authenticate"))
	}
	oauthError("JSON registration too large", o.postJSON("/oauth/register", `{"x":"`+strings.Repeat("y", 17<<10)+`"}`),
		http.StatusRequestEntityTooLarge, "invalid_client_metadata")
}

// Browser-based clients may call the metadata and the endpoints from any
// origin.
func TestOAuthCORS(t *testing.T) { stores.Each(t, testOAuthCORS) }

func testOAuthCORS(t *testing.T) {
	o := newOAuthServer(t)
	for path, method := range map[string]string{
		"/.well-known/oauth-authorization-server": "GET", "/.well-known/oauth-protected-resource/mcp": "GET",
		"/oauth/token": "POST", "/oauth/revoke": "POST", "/oauth/register": "POST",
	} {
		req, _ := http.NewRequest("OPTIONS", o.url+path, nil)
		req.Header.Set("Origin", "https://app.example")
		req.Header.Set("Access-Control-Request-Method", method)
		req.Header.Set("Access-Control-Request-Headers", "content-type, authorization")
		r := do(t, o.client, req)
		h := r.Header
		if r.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "*" ||
			!strings.Contains(h.Get("Access-Control-Allow-Methods"), method) ||
			!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") ||
			!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Content-Type") {
			t.Errorf("preflight %s: %d %v", path, r.StatusCode, h)
		}
	}
	r := o.postForm("/oauth/token", url.Values{"grant_type": {"password"}})
	if r.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("token error without CORS: %v", r.Header)
	}
	// The pages, which use cookies, are not open to other origins.
	req, _ := http.NewRequest("OPTIONS", o.url+"/oauth/authorize", nil)
	if r := do(t, o.client, req); r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("authorize preflight: %d %v", r.StatusCode, r.Header)
	}
}

// The registration response is the auth service's, with 201.
func TestOAuthRegister(t *testing.T) { stores.Each(t, testOAuthRegister) }

func testOAuthRegister(t *testing.T) {
	o := newOAuthServer(t)
	r := o.postJSON("/oauth/register", `{"redirect_uris":["`+redirect+`"],"client_name":"Reg","token_endpoint_auth_method":"client_secret_basic"}`)
	if r.StatusCode != http.StatusCreated || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("register: %d %v %s", r.StatusCode, r.Header, r.body)
	}
	var got struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		Method       string `json:"token_endpoint_auth_method"`
	}
	if err := json.Unmarshal([]byte(r.body), &got); err != nil || !strings.HasPrefix(got.ClientID, "ocl_") ||
		!strings.HasPrefix(got.ClientSecret, "cto_ocs_") || got.Method != "client_secret_basic" {
		t.Errorf("register: %s", r.body)
	}
	bad := o.postJSON("/oauth/register", `{"redirect_uris":["javascript:alert(1)"]}`)
	if bad.StatusCode != http.StatusBadRequest || !strings.HasPrefix(bad.json(t)["error"].(string), "invalid_") {
		t.Errorf("register a javascript: redirect: %d %s", bad.StatusCode, bad.body)
	}
	if r := o.postForm("/oauth/register", url.Values{"redirect_uris": {redirect}}); r.StatusCode != http.StatusBadRequest {
		t.Errorf("register with a form: %d %s", r.StatusCode, r.body)
	}
}
