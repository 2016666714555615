package web_test

import (
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/web/webtest"
)

// The admin pages (/admin), driven as an operator would: signed in with
// an admin token, following the pages' own forms; and as everyone else,
// who is refused every page and every action.

// adminWorld is a dashboard with an operator signed in (root, admin) and a
// user (alice, sessions:read, in a group of her own) who may reach one
// project.
type adminWorld struct {
	s       *dashServer
	admin   *dashBrowser
	alice   *auth.IssuedToken
	project *continuo.Project
}

func newAdminWorld(t *testing.T) *adminWorld {
	t.Helper()
	s := newDashServer(t)
	w := &adminWorld{s: s, alice: s.token("alice", continuo.ScopeSessionsRead)}
	w.admin = s.browser(s.token("root", continuo.ScopeAdmin))
	w.project = s.project("webapp", map[string]continuo.Access{"alice": continuo.AccessRead})
	return w
}

// has fails the test unless body holds every one of want.
func has(t *testing.T, what, body string, want ...string) {
	t.Helper()
	for _, s := range want {
		if !strings.Contains(body, s) {
			t.Errorf("%s lacks %q:\n%s", what, s, body)
		}
	}
}

// seeOther fails the test unless r is a redirect to where.
func seeOther(t *testing.T, what string, r response, where string) {
	t.Helper()
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != where {
		t.Fatalf("%s: %d to %q, want 303 to %q\n%s", what, r.StatusCode, r.Header.Get("Location"), where, r.body)
	}
}

// registerClient registers an OAuth client dynamically, as any client on
// the Internet may, and returns its client_id.
func (s *dashServer) registerClient(name string, redirectURIs ...string) string {
	s.t.Helper()
	body, _ := json.Marshal(map[string]any{"client_name": name, "redirect_uris": redirectURIs, "token_endpoint_auth_method": "none"})
	req, _ := http.NewRequest("POST", s.url+"/oauth/register", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	r := do(s.t, http.DefaultClient, req)
	if r.StatusCode != http.StatusCreated {
		s.t.Fatalf("register: %d %s", r.StatusCode, r.body)
	}
	id, _ := r.json(s.t)["client_id"].(string)
	return id
}

// authorize has user approve client on the consent page and the client
// exchange the code; it returns the access token.
func (s *dashServer) authorize(clientID string, user *auth.IssuedToken) string {
	s.t.Helper()
	verifier, challenge := pkce("admin")
	q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect}, "code_challenge": {challenge},
		"code_challenge_method": {"S256"}, "state": {"st"}, "resource": {s.url + "/mcp"}, "scope": {"sessions:read"}}
	b := s.browser(user)
	r := b.submit(b.page("/oauth/authorize?"+q.Encode()), "consent", url.Values{"decision": {"approve"}})
	loc, err := url.Parse(r.Header.Get("Location"))
	if r.StatusCode != http.StatusSeeOther || err != nil || loc.Query().Get("code") == "" {
		s.t.Fatalf("consent: %d %q %s", r.StatusCode, r.Header.Get("Location"), r.body)
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "redirect_uri": {redirect},
		"client_id": {clientID}, "code_verifier": {verifier}, "resource": {s.url + "/mcp"}}
	req, _ := http.NewRequest("POST", s.url+"/oauth/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	tr := do(s.t, http.DefaultClient, req)
	access, _ := tr.json(s.t)["access_token"].(string)
	if tr.StatusCode != http.StatusOK || access == "" {
		s.t.Fatalf("token: %d %s", tr.StatusCode, tr.body)
	}
	return access
}

// postFrom posts a form with the given Origin header (none when empty).
func (b *dashBrowser) postFrom(origin, path string, form url.Values) response {
	b.s.t.Helper()
	req, _ := http.NewRequest("POST", b.s.url+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	return do(b.s.t, b.c, req)
}

// form returns the hidden fields and the action of a form of page.
func form(t *testing.T, page response, id string) (url.Values, string) {
	t.Helper()
	fields, ok := webtest.FormFields(page.body, id)
	if !ok {
		t.Fatalf("no form %q on the page:\n%s", id, page.body)
	}
	action, _ := webtest.FormAction(page.body, id)
	return fields, action
}

// forged are the ways a post of a form may come without the page's own
// consent: no csrf field, another form's, another site's Origin.
func forged(t *testing.T, b *dashBrowser, page response, id string, set url.Values) {
	t.Helper()
	fields, action := form(t, page, id)
	for k, v := range set {
		fields[k] = v
	}
	other, _ := form(t, page, "logout")
	cases := map[string]func() response{
		"without csrf": func() response {
			f := maps(fields)
			f.Del("csrf")
			return b.post(action, f)
		},
		"with another form's csrf": func() response {
			f := maps(fields)
			f.Set("csrf", other.Get("csrf"))
			return b.post(action, f)
		},
		"from another origin": func() response { return b.postFrom("https://evil.example", action, fields) },
	}
	for _, name := range []string{"without csrf", "with another form's csrf", "from another origin"} {
		if r := cases[name](); r.StatusCode != http.StatusForbidden {
			t.Errorf("form %s %s: %d, want 403\n%s", id, name, r.StatusCode, r.body)
		}
	}
}

// notAdmin is every scope but admin.
func notAdmin() []continuo.Scope {
	return slices.DeleteFunc(continuo.AllScopes(), func(sc continuo.Scope) bool { return sc == continuo.ScopeAdmin })
}

func maps(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}

var secretRE = regexp.MustCompile(`<pre class="admin-secret" id="new-token">(cto_pat_[a-z0-9]+)</pre>`)

// TestDashAdminOverview: the overview links every admin page and shows the
// newest live tokens and OAuth authorizations.
func TestDashAdminOverview(t *testing.T) { stores.Each(t, testDashAdminOverview) }

func testDashAdminOverview(t *testing.T) {
	w := newAdminWorld(t)
	w.s.authorize(w.s.registerClient("Claude Desktop", redirect), w.alice)
	home := w.admin.page("/admin")
	has(t, "/admin", home.body, `href="/admin/principals"`, `href="/admin/groups"`, `href="/admin/tokens"`, `href="/admin/projects"`,
		`href="/admin/oauth"`, w.alice.TokenID, "Claude Desktop", `href="/admin">Admin</a>`)
	if home.Header.Get("Cache-Control") != "no-store" || !strings.Contains(home.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Errorf("headers %v", home.Header)
	}
	if strings.Contains(home.body, w.alice.Token) {
		t.Error("the overview shows a token's secret")
	}
}

// TestDashAdminPrincipals: the principals page lists each with its group,
// filters by group, and its form creates one.
func TestDashAdminPrincipals(t *testing.T) { stores.Each(t, testDashAdminPrincipals) }

func testDashAdminPrincipals(t *testing.T) {
	w := newAdminWorld(t)
	ctx := t.Context()
	if _, err := w.s.auth.CreateGroup(ctx, "team"); err != nil {
		t.Fatal(err)
	}
	page := w.admin.page("/admin/principals")
	has(t, "/admin/principals", page.body, "<td>alice</td>", `href="/admin/principals?group=alice"`, "<td>root</td>",
		`href="/admin/tokens?principal=alice&amp;show=all"`)

	r := w.admin.submit(page, "principal-create", url.Values{"name": {"carol"}, "group": {"team"}})
	seeOther(t, "create carol", r, "/admin/principals?from=carol")
	c, err := w.s.auth.Principal(ctx, "carol", nil)
	if err != nil {
		t.Fatal(err)
	}
	team := w.admin.page("/admin/principals?group=team")
	has(t, "team's principals", team.body, "<td>carol</td>")
	if strings.Contains(team.body, "<td>alice</td>") {
		t.Error("the group filter shows another group's principal")
	}
	groups, err := w.s.auth.GroupPage(ctx, auth.NameQuery{From: "team", Limit: 1})
	if err != nil || groups.Items[0].GroupID != c.GroupID {
		t.Errorf("carol is not in team: %+v %v", groups, err)
	}
	// A taken name and an unknown group are refused, saying why.
	if r := w.admin.submit(page, "principal-create", url.Values{"name": {"carol"}, "group": {"team"}}); r.StatusCode != http.StatusConflict {
		t.Errorf("a taken name: %d", r.StatusCode)
	}
	if r := w.admin.submit(page, "principal-create", url.Values{"name": {"dave"}, "group": {"nowhere"}}); r.StatusCode != http.StatusNotFound ||
		!strings.Contains(r.body, "nowhere") {
		t.Errorf("an unknown group: %d %s", r.StatusCode, r.body)
	}
	if r := w.admin.get("/admin/principals?group=nowhere"); r.StatusCode != http.StatusNotFound {
		t.Errorf("the principals of an unknown group: %d", r.StatusCode)
	}
	forged(t, w.admin, page, "principal-create", url.Values{"name": {"mallory"}, "group": {"team"}})
	if _, err := w.s.auth.Principal(ctx, "mallory", nil); continuo.ErrorCode(err) != continuo.CodeNotFound {
		t.Errorf("a forged post created a principal: %v", err)
	}
}

// TestDashAdminGroups: the groups page shows each group's principals and
// projects, and its form creates a group.
func TestDashAdminGroups(t *testing.T) { stores.Each(t, testDashAdminGroups) }

func testDashAdminGroups(t *testing.T) {
	w := newAdminWorld(t)
	ctx := t.Context()
	page := w.admin.page("/admin/groups")
	has(t, "/admin/groups", page.body, `id="group-alice"`, `href="/admin/projects?from=webapp">webapp</a> <span class="badge badge-read">read</span>`,
		`href="/admin/principals?group=alice"`)

	r := w.admin.submit(page, "group-create", url.Values{"name": {"ops"}})
	seeOther(t, "create ops", r, "/admin/groups?from=ops")
	if _, err := w.s.auth.CreatePrincipal(ctx, "olga", "ops"); err != nil {
		t.Fatalf("the new group: %v", err)
	}
	has(t, "ops's group page", w.admin.page("/admin/groups?from=ops").body, `id="group-ops"`, "olga")
	if r := w.admin.submit(page, "group-create", url.Values{"name": {"bad name"}}); r.StatusCode != http.StatusBadRequest {
		t.Errorf("a bad name: %d", r.StatusCode)
	}
	forged(t, w.admin, page, "group-create", url.Values{"name": {"forged"}})
	if _, err := w.s.auth.CreatePrincipal(ctx, "x", "forged"); continuo.ErrorCode(err) != continuo.CodeNotFound {
		t.Errorf("a forged post created a group: %v", err)
	}
}

// TestDashAdminTokenCreate: a new token's secret is on the answer to the
// form and nowhere else; it authenticates with what the form asked.
func TestDashAdminTokenCreate(t *testing.T) { stores.Each(t, testDashAdminTokenCreate) }

func testDashAdminTokenCreate(t *testing.T) {
	w := newAdminWorld(t)
	ctx := t.Context()
	page := w.admin.page("/admin/tokens")
	has(t, "/admin/tokens", page.body, `value="sessions:read" checked`, `value="admin"`, `<option value="2160h" selected>`)
	for _, sc := range continuo.AllScopes() {
		has(t, "the scope checkboxes", page.body, `name="scope" value="`+string(sc)+`"`)
	}
	r := w.admin.submit(page, "token-create", url.Values{"principal": {"dave"}, "scope": {"sessions:write", "sessions:read"}, "expires": {"24h"}})
	if r.StatusCode != http.StatusOK || r.Header.Get("Location") != "" || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("create: %d %v\n%s", r.StatusCode, r.Header, r.body)
	}
	m := secretRE.FindStringSubmatch(r.body)
	if m == nil {
		t.Fatalf("no secret on the answer:\n%s", r.body)
	}
	secret := m[1]
	has(t, "the answer", r.body, "Copy this token now: it will not be shown again.", w.s.url+"/mcp")
	if strings.Count(r.body, secret) != 1 {
		t.Errorf("the secret appears %d times on the answer", strings.Count(r.body, secret))
	}
	c, err := w.s.auth.Authenticate(ctx, secret)
	if err != nil || c.Principal != "dave" || !slices.Equal(c.Scopes, []continuo.Scope{continuo.ScopeSessionsRead, continuo.ScopeSessionsWrite}) {
		t.Fatalf("the new token authenticates as %+v, %v", c, err)
	}
	toks, err := w.s.auth.TokenPage(ctx, auth.TokenQuery{Principal: "dave"})
	if err != nil || len(toks.Items) != 1 || toks.Items[0].ExpiresAt == nil || toks.Items[0].ExpiresAt.Sub(toks.Items[0].CreatedAt).Hours() != 24 {
		t.Fatalf("dave's tokens: %+v %v", toks, err)
	}
	has(t, "the answer", r.body, toks.Items[0].TokenID)
	// The list, and every other page, shows the token but never its secret.
	for _, p := range []string{"/admin/tokens", "/admin/tokens?show=all", "/admin/tokens?principal=dave", "/admin"} {
		body := w.admin.page(p).body
		if strings.Contains(body, secret) || strings.Contains(body, secret[len(auth.TokenPrefix):]) {
			t.Errorf("%s shows the secret", p)
		}
		if !strings.Contains(body, toks.Items[0].TokenID) {
			t.Errorf("%s lacks the new token %s", p, toks.Items[0].TokenID)
		}
	}

	// No scope, an unknown scope, a bad expiry: refused, nothing issued.
	for name, set := range map[string]url.Values{
		"no scope":      {"principal": {"dave"}},
		"unknown scope": {"principal": {"dave"}, "scope": {"root"}},
		"bad expiry":    {"principal": {"dave"}, "scope": {"sessions:read"}, "expires": {"-1h"}},
		"bad principal": {"principal": {"da ve"}, "scope": {"sessions:read"}},
	} {
		f, action := form(t, page, "token-create")
		for k, v := range set {
			f[k] = v
		}
		if f.Get("scope") == "" {
			f.Del("scope")
		}
		if r := w.admin.post(action, f); r.StatusCode != http.StatusBadRequest || secretRE.MatchString(r.body) {
			t.Errorf("%s: %d\n%s", name, r.StatusCode, r.body)
		}
	}
	forged(t, w.admin, page, "token-create", url.Values{"principal": {"dave"}, "scope": {"admin"}})
	if toks, _ := w.s.auth.TokenPage(ctx, auth.TokenQuery{Principal: "dave"}); len(toks.Items) != 1 {
		t.Errorf("refused posts issued tokens: %+v", toks.Items)
	}
}

// TestDashAdminTokenRevoke: revoking a token on the page ends it and every
// browser signed in with it; revoking twice is no error.
func TestDashAdminTokenRevoke(t *testing.T) { stores.Each(t, testDashAdminTokenRevoke) }

func testDashAdminTokenRevoke(t *testing.T) {
	w := newAdminWorld(t)
	ctx := t.Context()
	erin := w.s.token("erin", continuo.ScopeSessionsRead)
	eb := w.s.browser(erin)
	if r := eb.page("/"); strings.Contains(r.body, `href="/login"`) {
		t.Fatalf("erin is not signed in:\n%s", r.body)
	}
	page := w.admin.page("/admin/tokens?principal=erin")
	forged(t, w.admin, page, "token-revoke-"+erin.TokenID, nil)
	if _, err := w.s.auth.Authenticate(ctx, erin.Token); err != nil {
		t.Fatalf("a refused revoke revoked: %v", err)
	}
	f, action := form(t, page, "token-revoke-"+erin.TokenID)
	if action != "/admin/tokens/"+erin.TokenID+"/revoke" {
		t.Errorf("revoke action %q", action)
	}
	seeOther(t, "revoke", w.admin.post(action, f), "/admin/tokens?principal=erin")
	if _, err := w.s.auth.Authenticate(ctx, erin.Token); continuo.ErrorCode(err) != continuo.CodeUnauthorized {
		t.Fatalf("a revoked token authenticates: %v", err)
	}
	// Erin's browser is signed out on its next request.
	if r := eb.get("/"); r.StatusCode != http.StatusOK || !strings.Contains(r.body, `href="/login"`) || strings.Contains(r.body, "webapp") {
		t.Errorf("erin's browser after the revoke: %d %s", r.StatusCode, r.body)
	}
	if r := eb.get("/admin"); r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/login") {
		t.Errorf("erin's browser at /admin: %d %q", r.StatusCode, r.Header.Get("Location"))
	}
	seeOther(t, "revoke again", w.admin.post(action, f), "/admin/tokens?principal=erin")
	live := w.admin.page("/admin/tokens?principal=erin")
	if strings.Contains(live.body, erin.TokenID) {
		t.Error("the live list still shows the revoked token")
	}
	all := w.admin.page("/admin/tokens?principal=erin&show=all")
	has(t, "every token of erin", all.body, erin.TokenID, `badge-revoked`)
	if strings.Contains(all.body, `id="token-revoke-`+erin.TokenID+`"`) {
		t.Error("a revoked token still has a revoke button")
	}
	if r := w.admin.post("/admin/tokens/tok_unknown/revoke", f); r.StatusCode != http.StatusNotFound {
		t.Errorf("revoking an unknown token: %d", r.StatusCode)
	}
}

// TestDashAdminTokenPages: the token list is bounded and pages on.
func TestDashAdminTokenPages(t *testing.T) { stores.Each(t, testDashAdminTokenPages) }

func testDashAdminTokenPages(t *testing.T) {
	w := newAdminWorld(t)
	var ids []string
	for range auth.DefaultPageSize + 3 {
		ids = append(ids, w.s.token("fred", continuo.ScopeSessionsRead).TokenID)
	}
	first := w.admin.page("/admin/tokens?principal=fred")
	if n := strings.Count(first.body, `<tr id="tok_`); n != auth.DefaultPageSize {
		t.Fatalf("first page: %d tokens", n)
	}
	next := regexp.MustCompile(`<a href="(/admin/tokens\?from=[^"]+)">Older tokens`).FindStringSubmatch(first.body)
	if next == nil {
		t.Fatalf("no link to the next page:\n%s", first.body)
	}
	second := w.admin.page(html.UnescapeString(next[1]))
	if n := strings.Count(second.body, `<tr id="tok_`); n != 3 || strings.Contains(second.body, "Older tokens") {
		t.Fatalf("second page: %d tokens", n)
	}
	for _, id := range ids[:3] { // the oldest
		has(t, "the second page", second.body, `<tr id="`+id+`">`)
	}
	if r := w.admin.get("/admin/tokens?from=nonsense"); r.StatusCode != http.StatusBadRequest {
		t.Errorf("a malformed cursor: %d", r.StatusCode)
	}
}

// TestDashAdminProjects: the projects page shows each project's grants;
// its forms grant, change and revoke through the service.
func TestDashAdminProjects(t *testing.T) { stores.Each(t, testDashAdminProjects) }

func testDashAdminProjects(t *testing.T) {
	w := newAdminWorld(t)
	ctx := t.Context()
	if _, err := w.s.auth.CreateGroup(ctx, "team"); err != nil {
		t.Fatal(err)
	}
	pid := w.project.ID
	grants := func() []auth.GroupAccess {
		t.Helper()
		p, err := w.s.auth.ProjectPage(ctx, auth.NameQuery{From: "webapp", Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		return p.Items[0].Grants
	}
	page := w.admin.page("/admin/projects")
	has(t, "/admin/projects", page.body, `id="project-`+pid+`"`, "<h2>webapp</h2>", `id="grant-`+pid+`-alice"`, `<option value="read" selected>`)

	forged(t, w.admin, page, "grant-"+pid, url.Values{"group": {"team"}, "access": {"write"}})
	forged(t, w.admin, page, "grant-"+pid+"-alice", url.Values{"access": {"write"}})
	forged(t, w.admin, page, "revoke-"+pid+"-alice", nil)
	if g := grants(); !slices.Equal(g, []auth.GroupAccess{{Group: "alice", Access: continuo.AccessRead}}) {
		t.Fatalf("refused posts changed the grants: %+v", g)
	}

	seeOther(t, "grant", w.admin.submit(page, "grant-"+pid, url.Values{"group": {"team"}, "access": {"write"}}), "/admin/projects")
	seeOther(t, "change", w.admin.submit(page, "grant-"+pid+"-alice", url.Values{"access": {"write"}}), "/admin/projects")
	want := []auth.GroupAccess{{Group: "alice", Access: continuo.AccessWrite}, {Group: "team", Access: continuo.AccessWrite}}
	if g := grants(); !slices.Equal(g, want) {
		t.Fatalf("after grant and change: %+v", g)
	}
	// Alice's own view follows: she now writes.
	ps, err := w.s.auth.ProjectsOf(ctx, w.s.caller(w.alice))
	if err != nil || len(ps) != 1 || ps[0].Access != continuo.AccessWrite {
		t.Errorf("alice's projects: %+v %v", ps, err)
	}
	page = w.admin.page("/admin/projects")
	seeOther(t, "revoke", w.admin.submit(page, "revoke-"+pid+"-alice", nil), "/admin/projects")
	if g := grants(); !slices.Equal(g, want[1:]) {
		t.Fatalf("after the revoke: %+v", g)
	}
	if ps, _ := w.s.auth.ProjectsOf(ctx, w.s.caller(w.alice)); len(ps) != 0 {
		t.Errorf("alice still reaches %+v", ps)
	}
	// A grant to an unknown group, or of no known access, changes nothing.
	for name, set := range map[string]url.Values{"unknown group": {"group": {"nobody"}, "access": {"read"}},
		"bad access": {"group": {"team"}, "access": {"admin"}}} {
		if r := w.admin.submit(page, "grant-"+pid, set); r.StatusCode < 400 {
			t.Errorf("%s: %d", name, r.StatusCode)
		}
	}
	if g := grants(); !slices.Equal(g, want[1:]) {
		t.Fatalf("refused grants changed them: %+v", g)
	}
}

// TestDashAdminOAuth: the OAuth page lists clients (their own words as
// text, redirect URIs never links) and grants; revoking either ends the
// client's access.
func TestDashAdminOAuth(t *testing.T) { stores.Each(t, testDashAdminOAuth) }

func testDashAdminOAuth(t *testing.T) {
	w := newAdminWorld(t)
	ctx := t.Context()
	evil := []string{`<script>alert(1)</script>`, `"><img src=x onerror=alert(1)>`}
	id1 := w.s.registerClient(evil[0], redirect)
	id2 := w.s.registerClient(evil[1], redirect)
	access1, access2 := w.s.authorize(id1, w.alice), w.s.authorize(id2, w.alice)

	for _, p := range []string{"/admin/oauth", "/admin"} {
		page := w.admin.page(p)
		for _, e := range evil {
			if strings.Contains(page.body, e) {
				t.Errorf("%s holds the raw %q", p, e)
			}
			if !strings.Contains(page.body, template(e)) {
				t.Errorf("%s lacks the escaped %q", p, template(e))
			}
		}
	}
	page := w.admin.page("/admin/oauth")
	has(t, "/admin/oauth", page.body, `<code class="admin-wrap">`+redirect+`</code>`, `id="client-`+id1+`"`, "1 active")
	if strings.Contains(page.body, `href="`+redirect) {
		t.Error("a redirect URI is a link")
	}
	grants, err := w.s.auth.OAuthGrantPage(ctx, auth.GrantQuery{Client: id1})
	if err != nil || len(grants.Items) != 1 {
		t.Fatalf("grants of client 1: %+v %v", grants, err)
	}
	g1 := grants.Items[0].GrantID
	has(t, "/admin/oauth", page.body, `id="grant-`+g1+`"`)
	has(t, "client 1's grants", w.admin.page("/admin/oauth?client="+id1).body, `id="grant-`+g1+`"`)

	forged(t, w.admin, page, "oauth-revoke-"+g1, nil)
	forged(t, w.admin, page, "oauth-revoke-"+id2, nil)
	if _, err := w.s.auth.Authenticate(ctx, access1); err != nil {
		t.Fatalf("a refused post revoked the grant: %v", err)
	}

	seeOther(t, "revoke the grant", w.admin.submit(page, "oauth-revoke-"+g1, nil), "/admin/oauth")
	if _, err := w.s.auth.Authenticate(ctx, access1); continuo.ErrorCode(err) != continuo.CodeUnauthorized {
		t.Errorf("the revoked grant's token: %v", err)
	}
	if _, err := w.s.auth.Authenticate(ctx, access2); err != nil {
		t.Errorf("the other client's token: %v", err)
	}
	seeOther(t, "revoke client 2", w.admin.submit(page, "oauth-revoke-"+id2, nil), "/admin/oauth")
	if _, err := w.s.auth.Authenticate(ctx, access2); continuo.ErrorCode(err) != continuo.CodeUnauthorized {
		t.Errorf("the revoked client's token: %v", err)
	}
	cs, err := w.s.auth.OAuthClientPage(ctx, auth.IDQuery{})
	if err != nil || len(cs.Items) != 2 || cs.Items[0].State() != "revoked" || cs.Items[1].ActiveGrants != 0 {
		t.Fatalf("clients after the revokes: %+v %v", cs, err)
	}
	after := w.admin.page("/admin/oauth")
	if strings.Contains(after.body, `id="oauth-revoke-`+id2+`"`) || strings.Contains(after.body, `id="oauth-revoke-`+g1+`"`) {
		t.Error("revoked ones still have a revoke button")
	}
	// Revoking twice is no error; an unknown ID is not found.
	seeOther(t, "revoke client 2 again", w.admin.submit(page, "oauth-revoke-"+id2, nil), "/admin/oauth")
	f, _ := form(t, page, "oauth-revoke-"+id2)
	if r := w.admin.post("/admin/oauth/ocl_unknown/revoke", f); r.StatusCode != http.StatusNotFound {
		t.Errorf("revoking an unknown client: %d", r.StatusCode)
	}
}

// template is s as html/template writes it in text.
func template(s string) string {
	return strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;", `"`, "&#34;", `'`, "&#39;", `+`, "&#43;").Replace(s)
}

// TestDashAdminEscapes: names that come back on a page (a filter, a
// refused form's error) are text, never markup.
func TestDashAdminEscapes(t *testing.T) { stores.Each(t, testDashAdminEscapes) }

func testDashAdminEscapes(t *testing.T) {
	w := newAdminWorld(t)
	for _, e := range []string{`<script>alert(1)</script>`, `"><img src=x onerror=alert(1)>`} {
		q := url.QueryEscape(e)
		page := w.admin.page("/admin/principals")
		answers := map[string]response{
			"principals of a group":    w.admin.get("/admin/principals?group=" + q),
			"tokens of a principal":    w.admin.get("/admin/tokens?principal=" + q),
			"a principal in a group":   w.admin.submit(page, "principal-create", url.Values{"name": {"zed"}, "group": {e}}),
			"a principal named so":     w.admin.submit(page, "principal-create", url.Values{"name": {e}, "group": {"alice"}}),
			"a group named so":         w.admin.submit(w.admin.page("/admin/groups"), "group-create", url.Values{"name": {e}}),
			"a grant to a group named": w.admin.submit(w.admin.page("/admin/projects"), "grant-"+w.project.ID, url.Values{"group": {e}, "access": {"read"}}),
		}
		for name, r := range answers {
			if r.StatusCode < 400 {
				t.Errorf("%s %q: %d", name, e, r.StatusCode)
			}
			if strings.Contains(r.body, e) {
				t.Errorf("%s %q: the raw string is on the page:\n%s", name, e, r.body)
			}
		}
		// Where the name is echoed (not_found names what was not found),
		// it is escaped.
		for _, name := range []string{"principals of a group", "tokens of a principal", "a principal in a group", "a grant to a group named"} {
			if !strings.Contains(answers[name].body, template(e)) {
				t.Errorf("%s %q: the escaped string is not on the page:\n%s", name, e, answers[name].body)
			}
		}
	}
}

// TestDashAdminRefused: a caller without the admin scope — with every
// other scope, in the operator's own group or another — gets 403 on every
// admin page and every admin action, even with a valid CSRF field, and
// nothing changes; a browser that has not signed in is sent to sign in.
func TestDashAdminRefused(t *testing.T) { stores.Each(t, testDashAdminRefused) }

func testDashAdminRefused(t *testing.T) {
	w := newAdminWorld(t)
	ctx := t.Context()
	s := w.s
	if _, err := s.auth.CreatePrincipal(ctx, "deputy", "root"); err != nil {
		t.Fatal(err)
	}
	users := map[string]*dashBrowser{"alice (sessions:read)": s.browser(w.alice),
		"deputy (all but admin, root's group)": s.browser(s.token("deputy", notAdmin()...))}

	// The admin's forms, and what they would do.
	erin := s.token("erin", continuo.ScopeSessionsRead)
	client := s.registerClient("Some client", redirect)
	s.authorize(client, w.alice)
	grants, err := s.auth.OAuthGrantPage(ctx, auth.GrantQuery{})
	if err != nil || len(grants.Items) != 1 {
		t.Fatal(grants, err)
	}
	pid := w.project.ID
	type act struct {
		page, form string
		set        url.Values
	}
	acts := []act{
		{"/admin/principals", "principal-create", url.Values{"name": {"mallory"}, "group": {"alice"}}},
		{"/admin/groups", "group-create", url.Values{"name": {"mallory"}}},
		{"/admin/tokens", "token-create", url.Values{"principal": {"mallory"}, "scope": {"admin"}}},
		{"/admin/tokens", "token-revoke-" + erin.TokenID, nil},
		{"/admin/projects", "grant-" + pid, url.Values{"group": {"root"}, "access": {"write"}}},
		{"/admin/projects", "grant-" + pid + "-alice", url.Values{"access": {"write"}}},
		{"/admin/projects", "revoke-" + pid + "-alice", nil},
		{"/admin/oauth", "oauth-revoke-" + client, nil},
		{"/admin/oauth", "oauth-revoke-" + grants.Items[0].GrantID, nil},
	}
	type post struct {
		action string
		fields url.Values
	}
	var posts []post
	for _, a := range acts {
		f, action := form(t, w.admin.page(a.page), a.form)
		for k, v := range a.set {
			f[k] = v
		}
		posts = append(posts, post{action, f})
	}
	// The admin browser's CSRF cookie, so that a refusal is the admin rule's
	// and not the CSRF check's.
	u, _ := url.Parse(s.url)
	var csrf *http.Cookie
	for _, c := range w.admin.c.Jar.Cookies(u) {
		if c.Name == "continuo_csrf" {
			csrf = c
		}
	}
	if csrf == nil {
		t.Fatal("the admin browser has no CSRF cookie")
	}
	pages := []string{"/admin", "/admin/principals", "/admin/principals?group=alice", "/admin/groups", "/admin/tokens",
		"/admin/tokens?show=all", "/admin/projects", "/admin/oauth", "/admin/oauth?client=" + client}
	for who, b := range users {
		home := b.page("/")
		if strings.Contains(home.body, `href="/admin"`) {
			t.Errorf("%s: the nav links the admin pages", who)
		}
		for _, p := range pages {
			if r := b.get(p); r.StatusCode != http.StatusForbidden || strings.Contains(r.body, erin.TokenID) || strings.Contains(r.body, "Some client") {
				t.Errorf("%s GET %s: %d\n%s", who, p, r.StatusCode, r.body)
			}
		}
		b.c.Jar.SetCookies(u, []*http.Cookie{{Name: csrf.Name, Value: csrf.Value, Path: "/"}})
		for _, p := range posts {
			if r := b.post(p.action, p.fields); r.StatusCode != http.StatusForbidden || secretRE.MatchString(r.body) {
				t.Errorf("%s POST %s: %d\n%s", who, p.action, r.StatusCode, r.body)
			}
		}
	}
	anon := s.anonymous()
	for _, p := range pages {
		if r := anon.get(p); r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/login?") {
			t.Errorf("anonymous GET %s: %d %q", p, r.StatusCode, r.Header.Get("Location"))
		}
	}
	anon.c.Jar.SetCookies(u, []*http.Cookie{{Name: csrf.Name, Value: csrf.Value, Path: "/"}})
	for _, p := range posts {
		if r := anon.post(p.action, p.fields); r.StatusCode != http.StatusSeeOther {
			t.Errorf("anonymous POST %s: %d", p.action, r.StatusCode)
		}
	}

	// Nothing changed.
	if _, err := s.auth.Principal(ctx, "mallory", nil); continuo.ErrorCode(err) != continuo.CodeNotFound {
		t.Errorf("mallory exists: %v", err)
	}
	if _, err := s.auth.CreatePrincipal(ctx, "m2", "mallory"); continuo.ErrorCode(err) != continuo.CodeNotFound {
		t.Errorf("group mallory exists: %v", err)
	}
	if _, err := s.auth.Authenticate(ctx, erin.Token); err != nil {
		t.Errorf("erin's token was revoked: %v", err)
	}
	ps, err := s.auth.ProjectPage(ctx, auth.NameQuery{})
	if err != nil || !slices.Equal(ps.Items[0].Grants, []auth.GroupAccess{{Group: "alice", Access: continuo.AccessRead}}) {
		t.Errorf("grants changed: %+v %v", ps, err)
	}
	cs, err := s.auth.OAuthClientPage(ctx, auth.IDQuery{})
	if err != nil || cs.Items[0].State() == "revoked" || cs.Items[0].ActiveGrants != 1 {
		t.Errorf("the client changed: %+v %v", cs, err)
	}
	// The operator's pages still work for the operator.
	w.admin.page("/admin")
}
