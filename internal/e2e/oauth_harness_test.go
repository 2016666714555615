package e2e

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo/internal/web/webtest"
)

// The OAuth tests play both sides against real `continuo serve`
// processes: the client (registration, PKCE, the token endpoint) and the
// person in front of a browser (a cookie jar; each redirect looked at, not
// followed; the Origin header a browser sends with a form post).

// oauthServe starts serve on a fresh data directory (OAuth on: loopback,
// so the issuer is its own address) with the group "team" whose principal
// alice may write the project "demo".
func oauthServe(t *testing.T, engine string, env ...string) (*server, string) {
	t.Helper()
	data := dataDir(t, engine)
	srv := startEnv(t, data, t.TempDir(), env)
	if srv.Issuer != srv.Base {
		t.Fatalf("issuer %q, want the bound address %s", srv.Issuer, srv.Base)
	}
	cli(t, data, "group", "create", "team")
	cli(t, data, "principal", "create", "alice", "--group", "team")
	cli(t, data, "project", "add", "demo", "--grant", "team:write")
	return srv, data
}

// loginCode makes a single-use sign-in code for principal, as the operator
// does.
func loginCode(t *testing.T, dataDir, principal string) string {
	t.Helper()
	code, _ := cliJSON(t, dataDir, "login-link", "--principal", principal)["code"].(string)
	if !strings.HasPrefix(code, "cto_lnk_") {
		t.Fatalf("login-link gave code %q", code)
	}
	return code
}

// cliDecode runs a CLI command with --json and decodes its output into v.
func cliDecode(t *testing.T, dataDir string, v any, args ...string) {
	t.Helper()
	out := cli(t, dataDir, append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("continuo %v: output %q: %v", args, out, err)
	}
}

// oauthClients is `continuo oauth clients`.
func oauthClients(t *testing.T, dataDir string) []map[string]any {
	t.Helper()
	var out struct{ Clients []map[string]any }
	cliDecode(t, dataDir, &out, "oauth", "clients")
	return out.Clients
}

// reply is a response read whole.
type reply struct {
	Status int
	Header http.Header
	Body   string
}

func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(r.Body), &v); err != nil {
		t.Fatalf("%d %q: not JSON: %v", r.Status, r.Body, err)
	}
	return v
}

// noRedirects is a client that hands every redirect back.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func send(t *testing.T, c *http.Client, req *http.Request) reply {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	return reply{resp.StatusCode, resp.Header, string(b)}
}

// postForm posts a form as an OAuth client does (no cookies, no Origin).
func postForm(t *testing.T, u string, form url.Values) reply {
	t.Helper()
	req, err := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return send(t, noRedirects, req)
}

// register registers a public client (RFC 7591) and returns its client_id.
func register(t *testing.T, issuer, name string, redirectURIs ...string) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"client_name": name, "redirect_uris": redirectURIs,
		"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"}})
	req, err := http.NewRequest("POST", issuer+"/oauth/register", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	r := send(t, noRedirects, req)
	if r.Status != http.StatusCreated {
		t.Fatalf("register %q: %d %s", name, r.Status, r.Body)
	}
	id, _ := r.json(t)["client_id"].(string)
	if id == "" {
		t.Fatalf("register: no client_id in %s", r.Body)
	}
	return id
}

// pkce returns a fresh code verifier and its S256 challenge.
func pkce() (verifier, challenge string) {
	verifier = rand.Text() + rand.Text() // 52 characters of [A-Z2-7]
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// authorizeURL is an authorization request (PKCE S256, the MCP endpoint as
// the resource); scope "" asks for the client's ceiling.
func authorizeURL(issuer, clientID, redirectURI, challenge, state, scope string) string {
	q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirectURI},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "state": {state}, "resource": {issuer + "/mcp"}}
	if scope != "" {
		q.Set("scope", scope)
	}
	return issuer + "/oauth/authorize?" + q.Encode()
}

// tokens is a token endpoint response.
type tokens struct {
	Access, Refresh, Scope string
}

// exchange redeems a code at the token endpoint.
func exchange(t *testing.T, issuer, clientID, redirectURI, code, verifier string) tokens {
	t.Helper()
	r := postForm(t, issuer+"/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"redirect_uri": {redirectURI}, "client_id": {clientID}, "code_verifier": {verifier}, "resource": {issuer + "/mcp"}})
	if r.Status != http.StatusOK {
		t.Fatalf("code exchange: %d %s", r.Status, r.Body)
	}
	v := r.json(t)
	tk := tokens{Access: str(v["access_token"]), Refresh: str(v["refresh_token"]), Scope: str(v["scope"])}
	if !strings.HasPrefix(tk.Access, "cto_oat_") || !strings.HasPrefix(tk.Refresh, "cto_ort_") {
		t.Fatalf("code exchange: %s", r.Body)
	}
	return tk
}

func str(v any) string { s, _ := v.(string); return s }

// userAgent is a person's browser on one site.
type userAgent struct {
	t      *testing.T
	origin string // the site's origin, sent as Origin with every form post
	c      *http.Client
}

func newUserAgent(t *testing.T, origin string) *userAgent {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &userAgent{t: t, origin: origin,
		c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// get opens a URL or a path of the site.
func (u *userAgent) get(target string) reply {
	u.t.Helper()
	if strings.HasPrefix(target, "/") {
		target = u.origin + target
	}
	req, err := http.NewRequest("GET", target, nil)
	if err != nil {
		u.t.Fatal(err)
	}
	return send(u.t, u.c, req)
}

// post submits a form of the site.
func (u *userAgent) post(path string, form url.Values) reply {
	u.t.Helper()
	req, err := http.NewRequest("POST", u.origin+path, strings.NewReader(form.Encode()))
	if err != nil {
		u.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", u.origin)
	return send(u.t, u.c, req)
}

// consentPage opens an authorization request and, when the sign-in form
// shows, signs in with secret (a login code; "": the browser must be
// signed in already) and follows the redirect back: it returns the consent
// page.
func (u *userAgent) consentPage(authorize, secret string) reply {
	u.t.Helper()
	page := u.get(authorize)
	if page.Status == http.StatusOK && strings.Contains(page.Body, `id="signin"`) {
		if secret == "" {
			u.t.Fatalf("a signed-in browser was shown the sign-in form:\n%s", page.Body)
		}
		f := formFields(u.t, page.Body, "signin")
		f.Set("secret", secret)
		r := u.post("/oauth/login", f)
		if r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/oauth/authorize?") {
			u.t.Fatalf("sign-in: %d Location %q\n%s", r.Status, r.Header.Get("Location"), r.Body)
		}
		page = u.get(r.Header.Get("Location"))
	}
	if page.Status != http.StatusOK || !strings.Contains(page.Body, `id="consent"`) {
		u.t.Fatalf("consent page: %d\n%s", page.Status, page.Body)
	}
	return page
}

// approve signs in when asked, approves every scope the consent page
// offers, and returns where the server sent the browser: the client's
// redirect URI with the code, state and iss.
func (u *userAgent) approve(authorize, secret string) *url.URL {
	u.t.Helper()
	page := u.consentPage(authorize, secret)
	f := formFields(u.t, page.Body, "consent")
	f.Set("decision", "approve")
	r := u.post("/oauth/authorize", f)
	loc, err := url.Parse(r.Header.Get("Location"))
	if r.Status != http.StatusSeeOther || err != nil || loc.Query().Get("code") == "" {
		u.t.Fatalf("approve: %d Location %q\n%s", r.Status, r.Header.Get("Location"), r.Body)
	}
	return loc
}

// formFields returns the hidden fields of the page's form with the given
// id, and in the consent form each checked scope as grant_scope.
func formFields(t *testing.T, page, id string) url.Values {
	t.Helper()
	v, ok := webtest.FormFields(page, id)
	if !ok {
		t.Fatalf("no form %q in\n%s", id, page)
	}
	return v
}
