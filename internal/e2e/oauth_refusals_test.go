package e2e

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestOAuthRefusals: what the authorization server refuses, across a real
// process and its real pages — a consent post without the right CSRF
// field or from another site's page (403, no code), a client's name that
// is markup (escaped on the consent and sign-in pages, no script, and the
// page's CSP would block one anyway), and a client asking for more than
// the user granted: on the consent form, and at a refresh (invalid_scope;
// the refresh token still works within the grant).
func TestOAuthRefusals(t *testing.T) {
	srv, data := oauthServe(t, "sqlite")
	const redirect = "http://127.0.0.1:8979/callback"
	issuer := srv.Issuer
	clientID := register(t, issuer, "refusals e2e", redirect)
	ua := newUserAgent(t, issuer)
	code := loginCode(t, data, "alice")
	_, challenge := pkce()
	ua.consentPage(authorizeURL(issuer, clientID, redirect, challenge, "st", ""), code) // signs the browser in

	// forbidden asserts a refused consent post: 403, and no redirect that
	// could carry a code.
	forbidden := func(t *testing.T, r reply) {
		t.Helper()
		if r.Status != http.StatusForbidden || r.Header.Get("Location") != "" {
			t.Errorf("consent post: %d Location %q, want 403 and no Location", r.Status, r.Header.Get("Location"))
		}
	}
	t.Run("CSRF", func(t *testing.T) {
		page := ua.consentPage(authorizeURL(issuer, clientID, redirect, challenge, "st-csrf", ""), "")
		good := formFields(t, page.Body, "consent")
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
		forbidden(t, ua.post("/oauth/authorize", with("")))
		c := good.Get("csrf")
		last := "A"
		if strings.HasSuffix(c, "A") {
			last = "B"
		}
		forbidden(t, ua.post("/oauth/authorize", with(c[:len(c)-1]+last))) // one character changed
		// A field made for another form (the sign-in form, from the same
		// cookie) does not approve a consent.
		signin := formFields(t, ua.get("/login").Body, "signin").Get("csrf")
		if signin == "" || signin == c {
			t.Fatalf("sign-in form csrf %q, consent csrf %q", signin, c)
		}
		forbidden(t, ua.post("/oauth/authorize", with(signin)))
		// The right field, but posted by another site's page.
		req, _ := http.NewRequest("POST", issuer+"/oauth/authorize", strings.NewReader(good.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "https://evil.example")
		forbidden(t, send(t, ua.c, req))
		// The refusals spent nothing: the genuine form still works.
		r := ua.post("/oauth/authorize", good)
		if loc, _ := url.Parse(r.Header.Get("Location")); r.Status != http.StatusSeeOther || loc == nil || loc.Query().Get("code") == "" {
			t.Fatalf("the genuine consent post: %d Location %q", r.Status, r.Header.Get("Location"))
		}
	})

	t.Run("XSS in the client name", func(t *testing.T) {
		const name = `<script>alert(1)</script>`
		evil := register(t, issuer, name, "https://evil.example/cb")
		u := authorizeURL(issuer, evil, "https://evil.example/cb", challenge, "st-xss", "")
		signin := newUserAgent(t, issuer).get(u) // a browser not signed in: the sign-in page names the client
		page := ua.consentPage(u, "")
		for what, r := range map[string]reply{"sign-in page": signin, "consent page": page} {
			if r.Status != http.StatusOK || strings.Contains(strings.ToLower(r.Body), "<script") ||
				!strings.Contains(r.Body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
				t.Errorf("%s: %d, want the name escaped and no <script>:\n%s", what, r.Status, r.Body)
			}
			if csp := r.Header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'none'") || strings.Contains(csp, "script-src") {
				t.Errorf("%s: Content-Security-Policy %q", what, csp)
			}
		}
		if !strings.Contains(page.Body, `id="redirect-host">evil.example<`) {
			t.Errorf("the consent page does not say it redirects to evil.example:\n%s", page.Body)
		}
	})

	t.Run("scope widening", func(t *testing.T) {
		verifier, challenge := pkce()
		u := authorizeURL(issuer, clientID, redirect, challenge, "st-scope", "sessions:read")
		page := ua.consentPage(u, "")
		f := formFields(t, page.Body, "consent")
		if got := f["grant_scope"]; len(got) != 1 || got[0] != "sessions:read" {
			t.Fatalf("consent offers %v, want only sessions:read", got)
		}
		// Ticking a scope the client did not ask for, by editing the form.
		wider := url.Values{}
		for k, v := range f {
			wider[k] = v
		}
		wider.Add("grant_scope", "sessions:write")
		wider.Set("decision", "approve")
		if r := ua.post("/oauth/authorize", wider); r.Status != http.StatusBadRequest || r.Header.Get("Location") != "" {
			t.Errorf("consent with an unrequested scope: %d Location %q, want 400 and no Location", r.Status, r.Header.Get("Location"))
		}
		f.Set("decision", "approve")
		r := ua.post("/oauth/authorize", f)
		loc, _ := url.Parse(r.Header.Get("Location"))
		if r.Status != http.StatusSeeOther || loc == nil {
			t.Fatalf("approve: %d %s", r.Status, r.Body)
		}
		tk := exchange(t, issuer, clientID, redirect, loc.Query().Get("code"), verifier)
		if tk.Scope != "sessions:read" {
			t.Fatalf("granted %q", tk.Scope)
		}
		refresh := func(scope string) reply {
			form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tk.Refresh}, "client_id": {clientID}}
			if scope != "" {
				form.Set("scope", scope)
			}
			return postForm(t, issuer+"/oauth/token", form)
		}
		if r := refresh("sessions:read sessions:write"); r.Status != http.StatusBadRequest || r.json(t)["error"] != "invalid_scope" {
			t.Errorf("refresh asking for more than the grant: %d %s, want 400 invalid_scope", r.Status, r.Body)
		}
		r = refresh("sessions:read")
		if r.Status != http.StatusOK || r.json(t)["scope"] != "sessions:read" {
			t.Errorf("refresh within the grant after the refused one: %d %s", r.Status, r.Body)
		}
	})
}
