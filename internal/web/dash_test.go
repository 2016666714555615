package web_test

import (
	"net/http"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/web"
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

// wildcardRE finds the wildcards of a route pattern: {name}, {name...}, {$}.
var wildcardRE = regexp.MustCompile(`\{(\$|\w+)(\.\.\.)?\}`)

// TestDashboardRoutesCrossGroup walks every GET route the dashboard
// registers (web.DashRoutes, so a page added later is walked too) with
// objects of alice's group in its path, as bob of another group holding
// every scope but admin: each answers 404 and names none of alice's
// things; every admin page answers him 403; a page of no object (home,
// swarms, assets) answers him without alice's things; and a browser that
// has not signed in is sent to sign in (but for home and the assets). A
// route with a wildcard the test has no object for fails it.
func TestDashboardRoutesCrossGroup(t *testing.T) { stores.Each(t, testDashboardRoutesCrossGroup) }

func testDashboardRoutesCrossGroup(t *testing.T) {
	// Alice's group's things, made by each area's fixture: a project
	// with a session, notes and a goal; a project with checks and a run;
	// a swarm with a task.
	w := newSessionsWorld(t)
	pages, sess := w.sessionsPages(t, "Alice's secret plan", "alice's private note") // …, /s/S/m/M, …, /g/G
	runs := newRunsFixture(t, w.s, "alice", "alice-checks", "Alice's checked work")
	run := runs.wait(runs.start("test").ID)
	sw := newSwarmWorld(t, w.s, "alice", nil)
	task := sw.dispatch("alice-secret-task", "alice's secret prompt", "")
	objects := map[string][]string{
		"project": {"webapp", w.project.ID, "alice-checks"},
		"session": {sess.ID},
		"message": {path.Base(pages[3])},
		"goal":    {path.Base(pages[5])},
		"run":     {run.ID},
		"swarm":   {sw.id()},
		"task":    {task.ID},
	}
	theirs := []string{"secret plan", "private note", "checked work", "alice-secret-task", "secret prompt"}
	bob, anon := w.s.browser(w.s.token("bob", notAdmin()...)), w.s.anonymous()

	used := map[string]bool{}
	for _, pattern := range web.DashRoutes() {
		method, route, ok := strings.Cut(pattern, " ")
		if !ok {
			method, route = "", pattern
		}
		if method != "" && method != http.MethodGet {
			continue
		}
		paths, want := []string{route}, http.StatusOK // a page of no object
		for _, m := range wildcardRE.FindAllStringSubmatch(route, -1) {
			values := []string{""} // {$}
			if m[1] != "$" {
				values = objects[m[1]]
				if values == nil {
					t.Fatalf("route %q has {%s}: give this test an object of alice's for it", pattern, m[1])
				}
				used[m[1]], want = true, http.StatusNotFound
			}
			var next []string
			for _, p := range paths {
				for _, v := range values {
					next = append(next, strings.Replace(p, m[0], v, 1))
				}
			}
			paths = next
		}
		if strings.HasPrefix(route, "/admin") { // refused before any object is read
			want = http.StatusForbidden
		}
		public := strings.HasPrefix(route, "/ui/") || route == "/{$}"
		for _, p := range paths {
			r := bob.get(p)
			if r.StatusCode != want {
				t.Errorf("bob GET %s (%s): %d, want %d\n%s", p, pattern, r.StatusCode, want, r.body)
			}
			sessionsLacks(t, "bob's "+p, r.body, theirs...)
			a := anon.get(p)
			if public && a.StatusCode != http.StatusOK ||
				!public && (a.StatusCode != http.StatusSeeOther || !strings.HasPrefix(a.Header.Get("Location"), "/login?")) {
				t.Errorf("anonymous GET %s: %d %q", p, a.StatusCode, a.Header.Get("Location"))
			}
		}
	}
	for name := range objects {
		if !used[name] {
			t.Errorf("no route took {%s}: the walk missed pages", name)
		}
	}
}

// TestDashboardIsolationNotice: an admin, who sees no other group's
// sessions, is told why on the projects and sessions pages; anyone else
// is not told about admins.
func TestDashboardIsolationNotice(t *testing.T) { stores.Each(t, testDashboardIsolationNotice) }

func testDashboardIsolationNotice(t *testing.T) {
	s := newDashServer(t)
	rootTok, aliceTok := s.token("root", continuo.ScopeAdmin), s.token("alice", continuo.ScopeSessionsRead)
	s.project("webapp", map[string]continuo.Access{"root": continuo.AccessWrite, "alice": continuo.AccessWrite})
	admin, alice := s.browser(rootTok), s.browser(aliceTok)
	for _, path := range []string{"/", "/p/webapp"} {
		if b := admin.page(path).body; !strings.Contains(b, `id="group-isolation"`) || !strings.Contains(b, "not even an admin") {
			t.Errorf("%s for an admin lacks the isolation notice:\n%s", path, b)
		}
		if b := alice.page(path).body; strings.Contains(b, `id="group-isolation"`) {
			t.Errorf("%s for a user holds the admin's notice", path)
		}
	}
}
