package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/continuo-dev/continuo/internal/store/pgtest"
)

// TestOAuthReplicas: two replicas on one PostgreSQL database behind one
// public URL (the issuer both announce). The whole authorization goes
// through replica 1; its access token works on replica 2 as well. Then
// `continuo oauth revoke CLIENT_ID`, a process of its own, and the very
// next request with the token is 401 on both replicas, and a session that
// stayed connected is cut off.
func TestOAuthReplicas(t *testing.T) {
	pgtest.BaseURL(t)
	// The public address: a reverse proxy whose backend the test picks.
	var backend atomic.Pointer[url.URL]
	public := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(backend.Load())
		r.Out.Host = r.In.Host // as a proxy in front of the public name does
	}})
	t.Cleanup(public.Close)

	db := pgtest.Database(t)
	d1, d2 := filepath.Join(t.TempDir(), "r1"), filepath.Join(t.TempDir(), "r2")
	useDatabase(d1, db)
	useDatabase(d2, db)
	env := []string{"CONTINUO_PUBLIC_URL=" + public.URL}
	r1 := startEnv(t, d1, t.TempDir(), env)
	r2 := startEnv(t, d2, t.TempDir(), env)
	if r1.Issuer != public.URL || r2.Issuer != public.URL {
		t.Fatalf("issuers %q and %q, want the public URL %s", r1.Issuer, r2.Issuer, public.URL)
	}
	cli(t, d1, "group", "create", "team")
	cli(t, d2, "principal", "create", "alice", "--group", "team")
	cli(t, d1, "project", "add", "demo", "--grant", "team:write")

	// Everything through replica 1.
	u1, err := url.Parse(r1.Base)
	if err != nil {
		t.Fatal(err)
	}
	backend.Store(u1)
	const redirect = "http://127.0.0.1:8978/callback"
	clientID := register(t, public.URL, "replicas e2e", redirect)
	verifier, challenge := pkce()
	loc := newUserAgent(t, public.URL).approve(authorizeURL(public.URL, clientID, redirect, challenge, "st-r", ""), loginCode(t, d2, "alice"))
	tk := exchange(t, public.URL, clientID, redirect, loc.Query().Get("code"), verifier)

	mcp1, mcp2 := r1.Base+"/mcp", r2.Base+"/mcp"
	cs := connect(t, mcp2, tk.Access)
	if p := must(t, cs, "list_projects", nil)["projects"].([]any); len(p) != 1 {
		t.Fatalf("list_projects through replica 2: %v", p)
	}
	must(t, connect(t, mcp1, tk.Access), "list_projects", nil)
	for _, u := range []string{mcp1, mcp2, mcp1, mcp2} { // each replica has seen, and may cache, the token
		if code := pingStatus(t, u, tk.Access); code != http.StatusOK {
			t.Fatalf("ping %s before the revocation: %d", u, code)
		}
	}

	out := cliJSON(t, d1, "oauth", "revoke", clientID)
	if out["kind"] != "client" || out["grants_revoked"] != float64(1) {
		t.Fatalf("oauth revoke: %v", out)
	}
	if _, err := cs.ListTools(context.Background(), nil); err == nil {
		t.Error("the connected session's first request after the revocation succeeded")
	}
	for _, u := range []string{mcp1, mcp2} {
		if code := pingStatus(t, u, tk.Access); code != http.StatusUnauthorized {
			t.Errorf("first ping on %s after the revocation: %d, want 401", u, code)
		}
	}
}
