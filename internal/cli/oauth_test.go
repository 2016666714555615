package cli

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/oauth"
	"github.com/continuo-dev/continuo/internal/store/sqlite"
)

// The operator's OAuth commands: sign-in links under the issuer a server
// with this configuration has, and the listing and revocation of clients.
func TestOAuthCommands(t *testing.T) {
	d := filepath.Join(t.TempDir(), "data")
	dd := []string{"--data-dir", d}
	runJSON(t, append([]string{"init", "--project", "none"}, dd...)...)
	runJSON(t, append([]string{"principal", "create", "alice", "--group", "admin"}, dd...)...)

	// Without public_url, a loopback listen address is the issuer.
	l := runJSON(t, append([]string{"login-link", "--principal", "alice"}, dd...)...)
	u, err := url.Parse(l["url"].(string))
	if err != nil || u.Scheme+"://"+u.Host != "http://127.0.0.1:7300" || u.Path != "/login" || u.Query().Get("code") != l["code"] ||
		!strings.HasPrefix(l["code"].(string), "cto_lnk_") || l["expires_at"] == nil {
		t.Fatalf("login-link: %v", l)
	}
	cfg := filepath.Join(t.TempDir(), "c.toml")
	write := func(s string) {
		if err := os.WriteFile(cfg, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("[server]\npublic_url = \"https://continuo.example.com\"\n")
	l = runJSON(t, append([]string{"login-link", "--principal", "alice", "--config", cfg}, dd...)...)
	if !strings.HasPrefix(l["url"].(string), "https://continuo.example.com/login?code=cto_lnk_") {
		t.Fatalf("login-link with public_url: %v", l)
	}
	write("[server]\nlisten = \"0.0.0.0:7300\"\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"login-link", "--principal", "alice", "--config", cfg}, "server.public_url"},
		{[]string{"login-link", "--principal", "nobody"}, "not found"},
		{[]string{"login-link", "--principal", "alice", "--ttl", "2h"}, "ttl"},
		{[]string{"oauth", "revoke", "ocl_nothing"}, "not found"},
	} {
		code, _, errs := run(t, append(c.args, dd...)...)
		if code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("continuo %v: exit %d, stderr %q; want 1 and %q", c.args, code, errs, c.want)
		}
	}

	// A client registered through the service is listed, then revoked.
	db, err := sqlite.Open(context.Background(), filepath.Join(d, "continuo.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	a := auth.New(db, nil)
	a.EnableOAuth(auth.OAuthOptions{Issuer: "http://127.0.0.1:7300"})
	reg, err := oauth.New(a, db, nil, oauth.Options{}).RegisterClient(context.Background(), []byte(`{"redirect_uris":["https://chat.example/cb"],"client_name":"Chat bot","token_endpoint_auth_method":"none"}`))
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	cs := runJSON(t, append([]string{"oauth", "clients"}, dd...)...)["clients"].([]any)
	if len(cs) != 1 || cs[0].(map[string]any)["client_id"] != reg.Client.ClientID || cs[0].(map[string]any)["kind"] != "registered" {
		t.Fatalf("oauth clients: %v", cs)
	}
	if _, out, _ := run(t, append([]string{"oauth", "clients"}, dd...)...); !strings.Contains(out, "Chat bot") || !strings.Contains(out, "chat.example") {
		t.Errorf("oauth clients (text) shows the name and the redirect host:\n%s", out)
	}
	if gs := runJSON(t, append([]string{"oauth", "grants"}, dd...)...)["grants"].([]any); len(gs) != 0 {
		t.Fatalf("oauth grants: %v", gs)
	}
	r := runJSON(t, append([]string{"oauth", "revoke", reg.Client.ClientID}, dd...)...)
	if r["kind"] != "client" || r["revoked"] != true {
		t.Fatalf("oauth revoke: %v", r)
	}
	if c := runJSON(t, append([]string{"oauth", "clients"}, dd...)...)["clients"].([]any)[0].(map[string]any); c["revoked_at"] == nil {
		t.Fatalf("revoked client: %v", c)
	}
}
