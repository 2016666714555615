package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store/stores"
)

// TestDashboardHome: an anonymous browser at / gets the landing page with
// a sign-in link; a signed-in one sees the projects of its group only, under the security
// headers, and signs out.
func TestDashboardHome(t *testing.T) { stores.Each(t, testDashboardHome) }

func testDashboardHome(t *testing.T) {
	s := newDashServer(t)
	alice := s.token("alice", continuo.ScopeSessionsRead)
	s.token("bob", continuo.ScopeSessionsRead)
	s.project("webapp", map[string]continuo.Access{"alice": continuo.AccessWrite})
	s.project("secret-bob-project", map[string]continuo.Access{"bob": continuo.AccessRead})

	anon := s.anonymous()
	if r := anon.get("/"); r.StatusCode != http.StatusOK || !strings.Contains(r.body, `href="/login"`) {
		t.Fatalf("anonymous /: %d %s", r.StatusCode, r.body)
	}

	b := s.browser(alice)
	home := b.page("/")
	if !strings.Contains(home.body, `href="/p/webapp"`) || strings.Contains(home.body, "secret-bob-project") {
		t.Fatalf("alice's home:\n%s", home.body)
	}
	csp := home.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "form-action 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if home.Header.Get("X-Content-Type-Options") != "nosniff" || home.Header.Get("Referrer-Policy") != "same-origin" {
		t.Errorf("headers %v", home.Header)
	}
	for _, asset := range []string{"/ui/dash.css", "/ui/dash.js"} {
		if r := anon.get(asset); r.StatusCode != http.StatusOK || r.body == "" {
			t.Errorf("%s: %d", asset, r.StatusCode)
		}
	}
	if r := b.submit(home, "logout", nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign out: %d %s", r.StatusCode, r.body)
	}
	if r := b.get("/"); strings.Contains(r.body, "/p/webapp") {
		t.Fatalf("signed out, / still shows the projects")
	}
}

// TestDashboardSignOutCSRF: the sign-out form refuses a post without its
// CSRF field, with another form's, or from another origin — 403, and the
// browser stays signed in — and signs out when posted as its page gives
// it.
func TestDashboardSignOutCSRF(t *testing.T) { stores.Each(t, testDashboardSignOutCSRF) }

func testDashboardSignOutCSRF(t *testing.T) {
	w := newAdminWorld(t)
	page := w.admin.page("/admin/groups")
	fields, action := form(t, page, "logout")
	other, _ := form(t, page, "group-create")
	refusedPosts(t, w.admin, action, fields, other.Get("csrf"))
	w.admin.page("/admin") // still signed in
	if r := w.admin.post(action, fields); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign out: %d %s", r.StatusCode, r.body)
	}
	if r := w.admin.get("/admin"); r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/login?") {
		t.Fatalf("signed out, /admin: %d %q", r.StatusCode, r.Header.Get("Location"))
	}
}
