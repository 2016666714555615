package e2e

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo/internal/web/webtest"
)

// Every start of `continuo serve` in a git checkout that no project has
// registers it (granted to admin), not only the first: a user who later
// runs it in their own repository finds it in list_projects. A checkout
// whose name is taken is not registered; the start says in one line how.
func TestServeRegistersCheckout(t *testing.T) {
	data := dataDir(t, "sqlite")
	first := start(t, data, t.TempDir())
	admin := first.Admin
	if first.Project != "" {
		t.Fatalf("a start outside a checkout registered %s", first.Project)
	}
	first.stop()

	repo := filepath.Join(t.TempDir(), "myrepo")
	if err := os.Rename(gitRepo(t), repo); err != nil {
		t.Fatal(err)
	}
	srv := start(t, data, repo)
	if srv.Project == "" || srv.Hint != "" {
		t.Fatalf("a later start in %s registered nothing (hint %q)", repo, srv.Hint)
	}
	ps := must(t, connect(t, srv.URL, admin), "list_projects", map[string]any{})["projects"].([]any)
	if len(ps) != 1 || ps[0].(map[string]any)["name"] != "myrepo" || ps[0].(map[string]any)["project_id"] != srv.Project {
		t.Fatalf("list_projects = %v, want myrepo", ps)
	}
	srv.stop()

	// The same checkout again: nothing new. Another checkout of the same
	// name: a hint, nothing registered.
	again := start(t, data, repo)
	if again.Project != "" || again.Hint != "" {
		t.Fatalf("a start in a registered checkout: project %q, hint %q", again.Project, again.Hint)
	}
	again.stop()
	other := filepath.Join(t.TempDir(), "myrepo")
	if err := os.Rename(gitRepo(t), other); err != nil {
		t.Fatal(err)
	}
	clash := start(t, data, other)
	if clash.Project != "" || !strings.Contains(clash.Hint, "continuo project add NAME --root "+other) {
		t.Fatalf("a start in another checkout named myrepo: project %q, hint %q", clash.Project, clash.Hint)
	}
	clash.stop()
	none := start(t, data, other, "--project", "none")
	if none.Project != "" || none.Hint != "" {
		t.Fatalf("--project none: project %q, hint %q", none.Project, none.Hint)
	}
}

// serve --listen on port 0, without a configuration: the announcement's
// dashboard URL and first-start sign-in link, and a later `login-link`,
// all name the port the server really has; the link signs a browser in.
func TestServeLinksRealPort(t *testing.T) {
	data := dataDir(t, "sqlite")
	srv := start(t, data, t.TempDir())
	if srv.Dash != srv.Base+"/" || !strings.HasPrefix(srv.SignIn, srv.Base+"/login?code=") {
		t.Fatalf("dashboard %q, sign-in %q; want them on %s", srv.Dash, srv.SignIn, srv.Base)
	}
	link, _ := cliJSON(t, data, "login-link", "--principal", "admin")["url"].(string)
	if !strings.HasPrefix(link, srv.Base+"/login?code=") {
		t.Fatalf("login-link %q, want it on %s", link, srv.Base)
	}
	for _, l := range []string{srv.SignIn, link} {
		if page := signInWith(t, l); !strings.Contains(page, `class="who">admin<`) {
			t.Errorf("signed in with %s, the dashboard shows:\n%s", l, page)
		}
	}
	srv.stop()
	// A later start makes no link.
	if again := start(t, data, t.TempDir()); again.SignIn != "" || again.Dash != again.Base+"/" {
		t.Fatalf("a later start: sign-in %q, dashboard %q", again.SignIn, again.Dash)
	}
}

// signInWith does what a person does with a sign-in link: open it, press
// the button, land on the dashboard. It returns the dashboard's page.
func signInWith(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	origin := u.Scheme + "://" + u.Host
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	get := func(req *http.Request) string {
		t.Helper()
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d\n%s", req.Method, req.URL, resp.StatusCode, b)
		}
		return string(b)
	}
	req, _ := http.NewRequest("GET", link, nil)
	page := get(req)
	form, ok := webtest.FormFields(page, "login")
	if !ok {
		t.Fatalf("no sign-in form at %s:\n%s", link, page)
	}
	req, _ = http.NewRequest("POST", origin+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", origin)
	return get(req) // 303 to the dashboard, followed
}
