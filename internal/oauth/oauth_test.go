package oauth_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/auth/authtest"
	"github.com/continuo-dev/continuo/internal/oauth"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/stores"
)

const testIssuer = "https://continuo.test"

// oauthEnv is a service with OAuth on, a principal alice, and helpers that
// walk the authorization code flow the way a client and a browser do.
type oauthEnv struct {
	t     *testing.T
	ctx   context.Context
	a     *auth.Service
	s     *oauth.Server
	db    store.Store
	clk   *clock
	alice *auth.IssuedToken // her personal access token (sessions:read)
}

type clock = authtest.Clock

var setup = authtest.Setup

func code(err error) continuo.Code { return continuo.ErrorCode(err) }

// server is the authorization server of a new auth service of testIssuer
// over e's database (another replica of e's).
func (e *oauthEnv) server(issuer string, o oauth.Options) (*auth.Service, *oauth.Server) {
	a := auth.New(e.db, e.clk.Now)
	a.EnableOAuth(auth.OAuthOptions{Issuer: issuer})
	return a, oauth.New(a, e.db, e.clk.Now, o)
}

func setupOAuth(t *testing.T, o oauth.Options) *oauthEnv {
	t.Helper()
	a, db, clk := setup(t)
	a.EnableOAuth(auth.OAuthOptions{Issuer: testIssuer})
	ctx := context.Background()
	alice, err := a.CreateToken(ctx, "alice", []continuo.Scope{continuo.ScopeSessionsRead}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &oauthEnv{t: t, ctx: ctx, a: a, s: oauth.New(a, db, clk.Now, o), db: db, clk: clk, alice: alice}
}

// oerr is the OAuth error code of err, "" when err is not an *OAuthError.
func oerr(err error) string {
	var e *oauth.OAuthError
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// redirects reports whether err is an authorization error the client gets.
func redirects(err error) bool {
	var e *oauth.OAuthError
	return errors.As(err, &e) && e.Redirect
}

func pkce() (verifier, challenge string) {
	verifier = base64.RawURLEncoding.EncodeToString([]byte(rand.Text() + rand.Text()))[:64]
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// register registers a client from a JSON body.
func (e *oauthEnv) register(body string) *oauth.Registration {
	e.t.Helper()
	r, err := e.s.RegisterClient(e.ctx, []byte(body))
	if err != nil {
		e.t.Fatalf("register %s: %v", body, err)
	}
	return r
}

// public registers a public client redirecting to redirect.
func (e *oauthEnv) public(redirect string) string {
	e.t.Helper()
	return e.register(`{"redirect_uris":["` + redirect + `"],"token_endpoint_auth_method":"none","client_name":"Test"}`).Client.ClientID
}

func (e *oauthEnv) request(clientID, redirect, challenge string) oauth.AuthorizeRequest {
	return oauth.AuthorizeRequest{ClientID: clientID, RedirectURI: redirect, ResponseType: "code", State: "st4te",
		CodeChallenge: challenge, CodeChallengeMethod: "S256"}
}

// code runs the authorization endpoint and alice's consent to every
// requested scope; it returns the code and its PKCE verifier.
func (e *oauthEnv) code(clientID, redirect string) (code, verifier string) {
	e.t.Helper()
	verifier, challenge := pkce()
	az, err := e.s.CheckAuthorize(e.ctx, e.request(clientID, redirect, challenge))
	if err != nil {
		e.t.Fatalf("authorize: %v", err)
	}
	return e.consent(az, az.Scopes), verifier
}

// consent is alice approving az with scopes; it returns the code.
func (e *oauthEnv) consent(az *oauth.Authorization, scopes []continuo.Scope) string {
	e.t.Helper()
	to, err := e.s.IssueCode(e.ctx, az, e.alice.PrincipalID, scopes)
	if err != nil {
		e.t.Fatalf("issue code: %v", err)
	}
	u, err := url.Parse(to)
	if err != nil {
		e.t.Fatal(err)
	}
	q := u.Query()
	if q.Get("state") != az.State || q.Get("iss") != testIssuer || !strings.HasPrefix(q.Get("code"), "cto_ocd_") {
		e.t.Fatalf("code redirect %s", to)
	}
	return q.Get("code")
}

func (e *oauthEnv) exchange(c oauth.ClientAuth, code, redirect, verifier string) (*oauth.TokenResponse, error) {
	return e.s.Token(e.ctx, url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"redirect_uri": {redirect}, "code_verifier": {verifier}}, c)
}

func (e *oauthEnv) refresh(c oauth.ClientAuth, refresh, scope string) (*oauth.TokenResponse, error) {
	f := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}
	if scope != "" {
		f.Set("scope", scope)
	}
	return e.s.Token(e.ctx, f, c)
}

// tokens runs the whole flow for a public client.
func (e *oauthEnv) tokens(clientID, redirect string) *oauth.TokenResponse {
	e.t.Helper()
	code, verifier := e.code(clientID, redirect)
	tr, err := e.exchange(oauth.ClientAuth{ID: clientID}, code, redirect, verifier)
	if err != nil {
		e.t.Fatalf("exchange: %v", err)
	}
	return tr
}

// works reports whether an access token authenticates.
func (e *oauthEnv) works(access string) bool {
	e.t.Helper()
	c, err := e.a.Authenticate(e.ctx, access)
	if err != nil && !errors.Is(err, auth.ErrBadToken) {
		e.t.Fatalf("authenticate: %v", err)
	}
	return err == nil && c.Principal == "alice"
}

const cb = "https://app.example/cb"

func TestOAuthOff(t *testing.T) {
	ctx := context.Background()
	a, db, clk := setup(t)
	if a.Issuer() != "" || a.Resource() != "" {
		t.Fatal("issuer without EnableOAuth")
	}
	s := oauth.New(a, db, clk.Now, oauth.Options{})
	if _, err := s.CheckAuthorize(ctx, oauth.AuthorizeRequest{ClientID: "x"}); err == nil || redirects(err) {
		t.Fatalf("authorize with OAuth off: %v", err)
	}
	if _, err := s.Token(ctx, url.Values{"grant_type": {"authorization_code"}}, oauth.ClientAuth{}); err == nil {
		t.Fatal("token endpoint with OAuth off")
	}
	if _, err := s.RegisterClient(ctx, []byte(`{}`)); err == nil {
		t.Fatal("registration with OAuth off")
	}
	if _, err := a.Authenticate(ctx, "cto_oat_"+strings.Repeat("a", 52)); !errors.Is(err, auth.ErrBadToken) {
		t.Fatalf("OAuth token with OAuth off: %v", err)
	}
	a.EnableOAuth(auth.OAuthOptions{Issuer: testIssuer + "/"})
	if a.Issuer() != testIssuer || a.Resource() != testIssuer+"/mcp" {
		t.Fatalf("issuer %q resource %q", a.Issuer(), a.Resource())
	}
}

// Before the redirect URI is known to be the client's, errors are shown
// to the user and never sent anywhere; after, they go back to the client.
func TestAuthorizeErrors(t *testing.T) { stores.Each(t, testAuthorizeErrors) }

func testAuthorizeErrors(t *testing.T) {
	e := setupOAuth(t, oauth.Options{})
	id := e.register(`{"redirect_uris":["` + cb + `","http://127.0.0.1:3000/cb?x=1"],"token_endpoint_auth_method":"none",` +
		`"scope":"sessions:read sessions:write"}`).Client.ClientID
	_, challenge := pkce()
	ok := e.request(id, cb, challenge)
	if az, err := e.s.CheckAuthorize(e.ctx, ok); err != nil || az.Client.ClientID != id || az.RedirectURI != cb ||
		az.State != "st4te" || az.Resource != testIssuer+"/mcp" || joinScopes(az.Scopes) != "sessions:read sessions:write" {
		t.Fatalf("authorize: %+v %v", az, err)
	}

	page := map[string]func(r *oauth.AuthorizeRequest){
		"unknown client":        func(r *oauth.AuthorizeRequest) { r.ClientID = "ocl_nope" },
		"unknown document":      func(r *oauth.AuthorizeRequest) { r.ClientID = "ocl_" + strings.Repeat("0", 26) },
		"no client":             func(r *oauth.AuthorizeRequest) { r.ClientID = "" },
		"no redirect":           func(r *oauth.AuthorizeRequest) { r.RedirectURI = "" },
		"unregistered redirect": func(r *oauth.AuthorizeRequest) { r.RedirectURI = "https://evil.example/cb" },
		"redirect prefix":       func(r *oauth.AuthorizeRequest) { r.RedirectURI = cb + "/more" },
		"loopback other path":   func(r *oauth.AuthorizeRequest) { r.RedirectURI = "http://127.0.0.1:3000/other?x=1" },
		"loopback other query":  func(r *oauth.AuthorizeRequest) { r.RedirectURI = "http://127.0.0.1:3000/cb?x=2" },
		"loopback other host":   func(r *oauth.AuthorizeRequest) { r.RedirectURI = "http://localhost:3000/cb?x=1" },
	}
	for name, f := range page {
		r := ok
		f(&r)
		if _, err := e.s.CheckAuthorize(e.ctx, r); err == nil || redirects(err) {
			t.Errorf("%s: %v (want an error page)", name, err)
		}
	}
	// RFC 8252 §7.3: a native app's loopback redirect may use any port.
	r := ok
	r.RedirectURI = "http://127.0.0.1:51234/cb?x=1"
	if az, err := e.s.CheckAuthorize(e.ctx, r); err != nil || az.RedirectURI != r.RedirectURI {
		t.Fatalf("loopback on another port: %v", err)
	}

	back := map[string]struct {
		f    func(r *oauth.AuthorizeRequest)
		code string
	}{
		"response type token": {func(r *oauth.AuthorizeRequest) { r.ResponseType = "token" }, "unsupported_response_type"},
		"no PKCE":             {func(r *oauth.AuthorizeRequest) { r.CodeChallenge, r.CodeChallengeMethod = "", "" }, "invalid_request"},
		"PKCE plain":          {func(r *oauth.AuthorizeRequest) { r.CodeChallengeMethod = "plain" }, "invalid_request"},
		"no method":           {func(r *oauth.AuthorizeRequest) { r.CodeChallengeMethod = "" }, "invalid_request"},
		"short challenge":     {func(r *oauth.AuthorizeRequest) { r.CodeChallenge = challenge[:42] }, "invalid_request"},
		"other resource":      {func(r *oauth.AuthorizeRequest) { r.Resource = "https://other.example/mcp" }, "invalid_target"},
		"issuer as resource":  {func(r *oauth.AuthorizeRequest) { r.Resource = testIssuer }, "invalid_target"},
		"scope above ceiling": {func(r *oauth.AuthorizeRequest) { r.Scope = "sessions:read swarm:own" }, "invalid_scope"},
		"admin":               {func(r *oauth.AuthorizeRequest) { r.Scope = "admin" }, "invalid_scope"},
		"unknown scope":       {func(r *oauth.AuthorizeRequest) { r.Scope = "sessions:read bogus" }, "invalid_scope"},
	}
	for name, c := range back {
		r := ok
		c.f(&r)
		if _, err := e.s.CheckAuthorize(e.ctx, r); !redirects(err) || oerr(err) != c.code {
			t.Errorf("%s: %v (want %s, redirected)", name, err, c.code)
		}
	}
	r = ok
	r.Resource, r.Scope = testIssuer+"/mcp/", "sessions:read"
	if az, err := e.s.CheckAuthorize(e.ctx, r); err != nil || joinScopes(az.Scopes) != "sessions:read" {
		t.Fatalf("resource with a trailing slash, narrower scope: %+v %v", az, err)
	}

	got := e.s.AuthorizeErrorURL("http://127.0.0.1:3000/cb?x=1", "st4te", &oauth.OAuthError{Code: "access_denied", Description: "no"})
	u, _ := url.Parse(got)
	q := u.Query()
	if !strings.HasPrefix(got, "http://127.0.0.1:3000/cb?x=1&") || q.Get("error") != "access_denied" ||
		q.Get("error_description") != "no" || q.Get("state") != "st4te" || q.Get("iss") != testIssuer {
		t.Fatalf("error URL %s", got)
	}
	if got := e.s.AuthorizeErrorURL(cb, "", &oauth.OAuthError{Code: "access_denied"}); strings.Contains(got, "state=") {
		t.Fatalf("empty state sent: %s", got)
	}
}

func joinScopes(s []continuo.Scope) string {
	out := make([]string, len(s))
	for i, sc := range s {
		out[i] = string(sc)
	}
	return strings.Join(out, " ")
}

// The user may narrow the requested scopes, never widen them, and must
// leave at least one.
func TestIssueCodeScopes(t *testing.T) { stores.Each(t, testIssueCodeScopes) }

func testIssueCodeScopes(t *testing.T) {
	e := setupOAuth(t, oauth.Options{})
	id := e.register(`{"redirect_uris":["` + cb + `"],"token_endpoint_auth_method":"none","scope":"sessions:read sessions:write"}`).Client.ClientID
	verifier, challenge := pkce()
	az, err := e.s.CheckAuthorize(e.ctx, e.request(id, cb, challenge))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]continuo.Scope{nil, {continuo.ScopeSwarmOwn}, {continuo.ScopeAdmin}} {
		if _, err := e.s.IssueCode(e.ctx, az, e.alice.PrincipalID, bad); err == nil {
			t.Errorf("consent to %v", bad)
		}
	}
	code := e.consent(az, []continuo.Scope{continuo.ScopeSessionsRead})
	tr, err := e.exchange(oauth.ClientAuth{ID: id}, code, cb, verifier)
	if err != nil || tr.Scope != "sessions:read" || tr.TokenType != "Bearer" || tr.ExpiresIn != 3600 {
		t.Fatalf("exchange: %+v %v", tr, err)
	}
	c, err := e.a.Authenticate(e.ctx, tr.AccessToken)
	if err != nil || c.Principal != "alice" || c.GroupID != e.alice.GroupID || !c.Has(continuo.ScopeSessionsRead) ||
		c.Has(continuo.ScopeSessionsWrite) || !strings.HasPrefix(c.TokenID, continuo.PrefixOAuthToken) {
		t.Fatalf("caller %+v %v", c, err)
	}
}

// A registration without scope may be granted every OAuth scope, admin
// never.
func TestScopeCeiling(t *testing.T) { stores.Each(t, testScopeCeiling) }

func testScopeCeiling(t *testing.T) {
	e := setupOAuth(t, oauth.Options{})
	id := e.public(cb)
	_, challenge := pkce()
	az, err := e.s.CheckAuthorize(e.ctx, e.request(id, cb, challenge))
	if err != nil || joinScopes(az.Scopes) != joinScopes(continuo.OAuthScopes()) {
		t.Fatalf("default ceiling %v %v", az, err)
	}
	if _, err := e.s.RegisterClient(e.ctx, []byte(`{"redirect_uris":["`+cb+`"],"scope":"admin"}`)); oerr(err) != "invalid_client_metadata" {
		t.Fatalf("register with admin: %v", err)
	}
}

// Tokens are valid while the grant's resource is this server's: tokens
// issued under another issuer (the public URL changed) stop working.
func TestResourceChanged(t *testing.T) { stores.Each(t, testResourceChanged) }

func testResourceChanged(t *testing.T) {
	e := setupOAuth(t, oauth.Options{})
	id := e.public(cb)
	tr := e.tokens(id, cb)
	if !e.works(tr.AccessToken) {
		t.Fatal("fresh token refused")
	}
	moved, movedServer := e.server("https://moved.example", oauth.Options{})
	if _, err := moved.Authenticate(e.ctx, tr.AccessToken); !errors.Is(err, auth.ErrBadToken) {
		t.Fatalf("token for another resource: %v", err)
	}
	if _, err := movedServer.Token(e.ctx, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tr.RefreshToken}},
		oauth.ClientAuth{ID: id}); oerr(err) != "invalid_grant" {
		t.Fatalf("refresh for another resource: %v", err)
	}
	off := auth.New(e.db, e.clk.Now)
	if _, err := off.Authenticate(e.ctx, tr.AccessToken); !errors.Is(err, auth.ErrBadToken) {
		t.Fatalf("OAuth token with OAuth off: %v", err)
	}
	// A code issued before the move cannot be exchanged after it.
	code, verifier := e.code(id, cb)
	if _, err := movedServer.Token(e.ctx, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {cb},
		"code_verifier": {verifier}}, oauth.ClientAuth{ID: id}); oerr(err) != "invalid_grant" {
		t.Fatalf("code for another resource: %v", err)
	}
	if _, err := e.s.Token(e.ctx, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tr.RefreshToken},
		"resource": {"https://moved.example/mcp"}}, oauth.ClientAuth{ID: id}); oerr(err) != "invalid_target" {
		t.Fatalf("refresh naming another resource: %v", err)
	}
}
