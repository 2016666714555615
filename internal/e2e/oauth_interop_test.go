package e2e

import (
	"testing"
)

// TestOAuthTypeScriptSDK runs interop/oauth.mjs: the official TypeScript
// SDK's OAuth client (an in-memory OAuthClientProvider on
// StreamableHTTPClientTransport) against a real `continuo serve`: the 401,
// discovery, dynamic registration, the person signing in with a login code
// and approving, the code exchange, tools, a refresh that rotates (the
// spent refresh token then is invalid_grant and ends the family), the SDK's
// recovery with a new authorization, RFC 7009 revocation, and a second
// account of the same group that sees and resumes the first one's session
// — on the default endpoint and on a toolset's path (/mcp/x/continuity),
// whose 401 leads to the same protected resource.
func TestOAuthTypeScriptSDK(t *testing.T) {
	node := nodeScripts(t)
	for _, path := range []string{"", "/x/continuity"} {
		t.Run("mcp"+path, func(t *testing.T) {
			srv, data := oauthServe(t, "sqlite")
			cli(t, data, "principal", "create", "bob", "--group", "team")
			node.run(t, "oauth.mjs", 17, "--url", srv.URL+path, "--project", "demo",
				"--alice-code", loginCode(t, data, "alice"), "--bob-code", loginCode(t, data, "bob"))

			// What the operator sees afterwards: two registered clients,
			// alice's grants all ended (one by the replayed refresh token,
			// one revoked), bob's active.
			clients := oauthClients(t, data)
			if len(clients) != 2 || clients[0]["kind"] != "registered" || clients[1]["kind"] != "registered" {
				t.Errorf("oauth clients: %v", clients)
			}
			var grants struct{ Grants []map[string]any }
			cliDecode(t, data, &grants, "oauth", "grants")
			states := map[string][]any{}
			for _, g := range grants.Grants {
				states[str(g["principal"])] = append(states[str(g["principal"])], g["state"])
			}
			if len(states["alice"]) != 2 || states["alice"][0] != "revoked" || states["alice"][1] != "revoked" ||
				len(states["bob"]) != 1 || states["bob"][0] != "active" {
				t.Errorf("grants by principal: %v", states)
			}
		})
	}
}
