package web

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
)

// The dashboard's admin area at /admin: principals, groups, tokens,
// project grants and OAuth clients, through the auth service's operator
// methods. Those methods do not check a caller (they are the operator's,
// as in the CLI); the admin rule is here, once: every admin page and
// action goes through adminOnly, which refuses a caller without the admin
// scope with 403. There are no admin MCP tools.

func init() {
	when := dashFuncs["when"].(func(time.Time) string)
	dashFuncs["adminWhen"] = func(t *time.Time) string { // an optional time
		if t == nil {
			return ""
		}
		return when(*t)
	}
	dashArea(func(d *dash, handle dashRoute) {
		handle("GET /admin", d.adminPage("admin-home", d.adminHome))
		handle("GET /admin/principals", d.adminPage("admin-principals", d.adminPrincipals))
		handle("POST /admin/principals", d.adminAction("admin-principal", d.adminCreatePrincipal))
		handle("GET /admin/groups", d.adminPage("admin-groups", d.adminGroups))
		handle("POST /admin/groups", d.adminAction("admin-group", d.adminCreateGroup))
		handle("GET /admin/tokens", d.adminPage("admin-tokens", d.adminTokens))
		handle("POST /admin/tokens", d.adminForm("admin-token", "admin-token-created", d.adminCreateToken))
		handle("POST /admin/tokens/{id}/revoke", d.adminAction("admin-token-revoke", d.adminRevokeToken))
		handle("GET /admin/projects", d.adminPage("admin-projects", d.adminProjects))
		handle("POST /admin/projects/{project}/grants", d.adminAction("admin-grant", d.adminGrant))
		handle("POST /admin/projects/{project}/revoke", d.adminAction("admin-grant-revoke", d.adminRevokeGrant))
		handle("GET /admin/oauth", d.adminPage("admin-oauth", d.adminOAuth))
		handle("POST /admin/oauth/{id}/revoke", d.adminAction("admin-oauth-revoke", d.adminRevokeOAuth))
	})
}

// adminOnly is the admin rule: the admin pages and their actions are for
// a caller with the admin scope only.
func adminOnly(c *continuo.Caller) error { return c.Require(continuo.ScopeAdmin) }

// adminPage is d.page for an admin page.
func (d *dash) adminPage(name string, load loader) http.HandlerFunc {
	return d.page(name, func(r *http.Request, c *continuo.Caller) (string, any, error) {
		if err := adminOnly(c); err != nil {
			return "", nil, err
		}
		return load(r, c)
	})
}

// adminAction is d.action for an admin form.
func (d *dash) adminAction(form string, act actor) http.HandlerFunc {
	return d.action(form, func(r *http.Request, c *continuo.Caller) (string, error) {
		if err := adminOnly(c); err != nil {
			return "", err
		}
		return act(r, c)
	})
}

// adminForm serves an admin form whose answer is a page of its own rather
// than a redirect (a new token's secret, which is shown once, on this
// response, and never put in a URL). It checks what d.action checks (d.posted).
func (d *dash) adminForm(form, name string, act loader) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, ok := d.posted(w, r, form)
		if !ok {
			return
		}
		title, data, err := func() (string, any, error) {
			if err := adminOnly(c); err != nil {
				return "", nil, err
			}
			return act(r, c)
		}()
		if err != nil {
			d.fail(w, r, c, err)
			return
		}
		d.render(w, r, c, http.StatusOK, name, title, data) // with Cache-Control: no-store
	}
}

// adminNext is where an action's form says to go back to (its page), or
// fallback.
func adminNext(r *http.Request, fallback string) string {
	if n := r.PostForm.Get("next"); n != "" {
		return n // d.action keeps it on this site
	}
	return fallback
}

// ---- overview ----

type adminHomeView struct {
	Tokens *auth.Page[auth.TokenInfo]
	Grants *auth.Page[auth.GrantInfo]
}

// adminNewest is how many of the newest tokens and grants the overview shows.
const adminNewest = 5

func (d *dash) adminHome(r *http.Request, _ *continuo.Caller) (string, any, error) {
	ctx := r.Context()
	toks, err := d.svc.Auth.TokenPage(ctx, auth.TokenQuery{Live: true, Limit: adminNewest})
	if err != nil {
		return "", nil, err
	}
	grants, err := d.svc.Auth.OAuthGrantPage(ctx, auth.GrantQuery{Limit: adminNewest})
	if err != nil {
		return "", nil, err
	}
	return "Admin", adminHomeView{Tokens: toks, Grants: grants}, nil
}

// ---- principals and groups ----

type adminPrincipalsView struct {
	Page        *auth.Page[auth.PrincipalInfo]
	From, Group string
}

func (d *dash) adminPrincipals(r *http.Request, _ *continuo.Caller) (string, any, error) {
	q := r.URL.Query()
	v := adminPrincipalsView{From: q.Get("from"), Group: q.Get("group")}
	var err error
	v.Page, err = d.svc.Auth.PrincipalPage(r.Context(), auth.PrincipalQuery{From: v.From, Group: v.Group})
	return "Principals", v, err
}

func (d *dash) adminCreatePrincipal(r *http.Request, _ *continuo.Caller) (string, error) {
	name, group := strings.TrimSpace(r.PostForm.Get("name")), strings.TrimSpace(r.PostForm.Get("group"))
	p, err := d.svc.Auth.CreatePrincipal(r.Context(), name, group)
	if err != nil {
		return "", err
	}
	return "/admin/principals?" + url.Values{"from": {p.Name}}.Encode(), nil
}

type adminGroupsView struct {
	Page *auth.Page[auth.GroupInfo]
	From string
}

func (d *dash) adminGroups(r *http.Request, _ *continuo.Caller) (string, any, error) {
	v := adminGroupsView{From: r.URL.Query().Get("from")}
	var err error
	v.Page, err = d.svc.Auth.GroupPage(r.Context(), auth.NameQuery{From: v.From})
	return "Groups", v, err
}

func (d *dash) adminCreateGroup(r *http.Request, _ *continuo.Caller) (string, error) {
	g, err := d.svc.Auth.CreateGroup(r.Context(), strings.TrimSpace(r.PostForm.Get("name")))
	if err != nil {
		return "", err
	}
	return "/admin/groups?" + url.Values{"from": {g.Name}}.Encode(), nil
}

// ---- tokens ----

// adminExpiry is one choice of a new token's lifetime.
type adminExpiry struct {
	Value, Label string
	Selected     bool
}

var adminExpiries = []adminExpiry{
	{Value: "24h", Label: "1 day"}, {Value: "168h", Label: "7 days"}, {Value: "720h", Label: "30 days"},
	{Value: "2160h", Label: "90 days", Selected: true}, {Value: "8760h", Label: "1 year"}, {Value: "", Label: "Never"},
}

type adminTokensView struct {
	Page                  *auth.Page[auth.TokenInfo]
	From, Principal, Show string // Show: "" (live only) or "all"
	Scopes                []continuo.Scope
	Expiries              []adminExpiry
}

func (d *dash) adminTokens(r *http.Request, _ *continuo.Caller) (string, any, error) {
	q := r.URL.Query()
	v := adminTokensView{From: q.Get("from"), Principal: q.Get("principal"), Scopes: continuo.AllScopes(), Expiries: adminExpiries}
	if q.Get("show") == "all" {
		v.Show = "all"
	}
	var err error
	v.Page, err = d.svc.Auth.TokenPage(r.Context(), auth.TokenQuery{From: v.From, Principal: v.Principal, Live: v.Show == ""})
	return "Tokens", v, err
}

type adminTokenCreated struct {
	Token     *auth.IssuedToken
	Principal string
	MCP       string
}

// adminCreateToken issues a token; its answer is the one page that ever
// shows the secret.
func (d *dash) adminCreateToken(r *http.Request, _ *continuo.Caller) (string, any, error) {
	f := r.PostForm
	scopes, err := continuo.ParseScopes(strings.Join(f["scope"], ","))
	if err != nil {
		return "", nil, err
	}
	var ttl time.Duration
	if e := strings.TrimSpace(f.Get("expires")); e != "" {
		if ttl, err = time.ParseDuration(e); err != nil || ttl <= 0 {
			return "", nil, continuo.Invalid("expires", "must be a positive duration such as 720h, or empty for never")
		}
	}
	principal := strings.TrimSpace(f.Get("principal"))
	tok, err := d.svc.Auth.IssueToken(r.Context(), auth.TokenSpec{Principal: principal, Scopes: scopes, TTL: ttl})
	if err != nil {
		return "", nil, err
	}
	return "New token", adminTokenCreated{Token: tok, Principal: principal, MCP: mcpURL(d.publicURL, r)}, nil
}

func (d *dash) adminRevokeToken(r *http.Request, _ *continuo.Caller) (string, error) {
	if err := d.svc.Auth.RevokeToken(r.Context(), r.PathValue("id")); err != nil {
		return "", err
	}
	return adminNext(r, "/admin/tokens"), nil
}

// ---- projects ----

type adminProjectsView struct {
	Page     *auth.Page[auth.ProjectInfo]
	From     string
	Accesses []continuo.Access
}

func (d *dash) adminProjects(r *http.Request, _ *continuo.Caller) (string, any, error) {
	v := adminProjectsView{From: r.URL.Query().Get("from"), Accesses: continuo.Accesses()}
	var err error
	v.Page, err = d.svc.Auth.ProjectPage(r.Context(), auth.NameQuery{From: v.From})
	return "Projects and grants", v, err
}

func (d *dash) adminGrant(r *http.Request, _ *continuo.Caller) (string, error) {
	f := r.PostForm
	err := d.svc.Auth.Grant(r.Context(), r.PathValue("project"), strings.TrimSpace(f.Get("group")), continuo.Access(f.Get("access")))
	if err != nil {
		return "", err
	}
	return adminNext(r, "/admin/projects"), nil
}

func (d *dash) adminRevokeGrant(r *http.Request, _ *continuo.Caller) (string, error) {
	if err := d.svc.Auth.Revoke(r.Context(), r.PathValue("project"), r.PostForm.Get("group")); err != nil {
		return "", err
	}
	return adminNext(r, "/admin/projects"), nil
}

// ---- OAuth ----

type adminOAuthView struct {
	Clients *auth.Page[auth.ClientDetail]
	Grants  *auth.Page[auth.GrantInfo]
	// The cursors of each list and the client whose grants are listed.
	ClientsFrom, GrantsFrom, Client string
}

func (d *dash) adminOAuth(r *http.Request, _ *continuo.Caller) (string, any, error) {
	q := r.URL.Query()
	v := adminOAuthView{ClientsFrom: q.Get("clients_from"), GrantsFrom: q.Get("grants_from"), Client: q.Get("client")}
	var err error
	if v.Clients, err = d.svc.Auth.OAuthClientPage(r.Context(), auth.IDQuery{From: v.ClientsFrom}); err != nil {
		return "", nil, err
	}
	v.Grants, err = d.svc.Auth.OAuthGrantPage(r.Context(), auth.GrantQuery{From: v.GrantsFrom, Client: v.Client})
	return "OAuth clients", v, err
}

func (d *dash) adminRevokeOAuth(r *http.Request, _ *continuo.Caller) (string, error) {
	if _, _, err := d.svc.Auth.RevokeOAuth(r.Context(), r.PathValue("id")); err != nil {
		return "", err
	}
	return adminNext(r, "/admin/oauth"), nil
}
