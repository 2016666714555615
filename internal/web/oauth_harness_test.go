package web_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo/internal/web/webtest"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/continuo-dev/continuo/internal/oauth"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/web"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The OAuth tests drive the real auth service on a real store (each
// engine) through the real handler over HTTP, as a browser and a client
// would. The clock is fixed: nothing expires, and the rate limit refills
// only when a test moves it.

// oauthServer is a running server with OAuth on, and alice, whose group
// may write the project webapp.
type oauthServer struct {
	t      *testing.T
	url    string // the issuer
	auth   *auth.Service
	now    *time.Time
	client *http.Client // no cookies, no redirects followed
}

// newOAuthServer starts one; options may change the authorization
// server's options.
func newOAuthServer(t *testing.T, options ...func(*oauth.Options)) *oauthServer {
	t.Helper()
	ctx := t.Context()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	o := &oauthServer{t: t, now: &now}
	clock := func() time.Time { return *o.now }
	db := stores.Open(t)
	a := auth.New(db, clock)
	if _, err := a.CreateToken(ctx, "alice", []continuo.Scope{continuo.ScopeSessionsRead}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AddProject(ctx, auth.ProjectSpec{Name: "webapp"}, map[string]continuo.Access{"alice": continuo.AccessWrite}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	o.url = "http://" + srv.Listener.Addr().String()
	a.EnableOAuth(auth.OAuthOptions{Issuer: o.url})
	var oo oauth.Options
	for _, f := range options {
		f(&oo)
	}
	key, err := a.SessionKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = web.Handler(web.Options{MCP: mcpserver.New(mcpserver.Options{}),
		Auth: a, OAuth: a, OAuthServer: oauth.New(a, db, clock, oo), Key: key})
	srv.Start()
	t.Cleanup(srv.Close)
	o.auth = a
	o.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return o
}

// response is a read response.
type response struct {
	*http.Response
	body string
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(r.body), &v); err != nil {
		t.Fatalf("%d %s: not JSON: %v", r.StatusCode, r.body, err)
	}
	return v
}

func do(t *testing.T, c *http.Client, req *http.Request) response {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp, string(b)}
}

// postForm posts a form as a client (no Origin, no cookies).
func (o *oauthServer) postForm(path string, form url.Values) response {
	o.t.Helper()
	req, _ := http.NewRequest("POST", o.url+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return do(o.t, o.client, req)
}

func (o *oauthServer) postJSON(path, body string) response {
	o.t.Helper()
	req, _ := http.NewRequest("POST", o.url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return do(o.t, o.client, req)
}

// register registers a public client and returns its client_id.
func (o *oauthServer) register(name string, redirectURIs ...string) string {
	o.t.Helper()
	b, _ := json.Marshal(map[string]any{"client_name": name, "redirect_uris": redirectURIs, "token_endpoint_auth_method": "none"})
	r := o.postJSON("/oauth/register", string(b))
	if r.StatusCode != http.StatusCreated {
		o.t.Fatalf("register: %d %s", r.StatusCode, r.body)
	}
	id, _ := r.json(o.t)["client_id"].(string)
	if id == "" {
		o.t.Fatalf("register: no client_id in %s", r.body)
	}
	return id
}

// loginLink makes a login link for a principal (the operator's command).
func (o *oauthServer) loginLink(principal string) *auth.LoginLinkInfo {
	o.t.Helper()
	l, err := o.auth.CreateLoginLink(o.t.Context(), principal, 0, nil)
	if err != nil {
		o.t.Fatal(err)
	}
	return l
}

// pkce returns a code verifier and its S256 challenge.
func pkce(seed string) (verifier, challenge string) {
	verifier = strings.Repeat(seed, 43/len(seed)+1)[:43]
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// authorizeURL is the path of an authorization request.
func (o *oauthServer) authorizeURL(clientID, redirectURI, challenge, scope string) string {
	q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirectURI},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "state": {"st-123"}, "resource": {o.url + "/mcp"}}
	if scope != "" {
		q.Set("scope", scope)
	}
	return "/oauth/authorize?" + q.Encode()
}

// browser is a person's browser: cookies, no redirects followed, and the
// Origin header a browser sends with a form post.
type browser struct {
	o *oauthServer
	c *http.Client
}

func (o *oauthServer) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{o: o, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) get(path string) response {
	b.o.t.Helper()
	if !strings.HasPrefix(path, "http") {
		path = b.o.url + path
	}
	req, _ := http.NewRequest("GET", path, nil)
	return do(b.o.t, b.c, req)
}

func (b *browser) post(path string, form url.Values) response {
	b.o.t.Helper()
	return b.postFrom(b.o.url, path, form)
}

// postFrom posts a form as a page of origin would ("" sends no Origin).
func (b *browser) postFrom(origin, path string, form url.Values) response {
	b.o.t.Helper()
	req, _ := http.NewRequest("POST", b.o.url+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	return do(b.o.t, b.c, req)
}

// signIn signs the browser in as principal with a login link, the way a
// person does: open the link, press the button.
func (b *browser) signIn(principal, next string) {
	b.o.t.Helper()
	link := b.o.loginLink(principal)
	page := b.get(link.URL)
	if page.StatusCode != http.StatusOK || !strings.Contains(page.body, principal) {
		b.o.t.Fatalf("login link page: %d %s", page.StatusCode, page.body)
	}
	f := formFields(b.o.t, page.body, "login")
	f.Set("next", next)
	r := b.post("/login", f)
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != next {
		b.o.t.Fatalf("POST /login: %d Location %q, want 303 to %q\n%s", r.StatusCode, r.Header.Get("Location"), next, r.body)
	}
}

// formFields returns the hidden fields of the form with the given id, and
// for the consent form its checked scopes as grant_scope.
func formFields(t *testing.T, page, id string) url.Values {
	t.Helper()
	v, ok := webtest.FormFields(page, id)
	if !ok {
		t.Fatalf("no form %q in\n%s", id, page)
	}
	return v
}

// consentPage signs a fresh browser in and opens the consent page of an
// authorization request.
func (o *oauthServer) consentPage(authorize string) (*browser, response) {
	o.t.Helper()
	b := o.browser()
	b.signIn("alice", authorize)
	page := b.get(authorize)
	if page.StatusCode != http.StatusOK || !strings.Contains(page.body, `id="consent"`) {
		o.t.Fatalf("consent page: %d %s", page.StatusCode, page.body)
	}
	return b, page
}

// ping calls the MCP ping method through a real MCP client with a bearer
// token, on 2025-11-25 (the protocol of today's OAuth clients; the
// stateless 2026-07-28 has no ping).
func (o *oauthServer) ping(token string) error {
	c := mcp.NewClient(&mcp.Implementation{Name: "oauth-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: o.url + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return err
	}
	defer cs.Close()
	return cs.Ping(context.Background(), nil)
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
