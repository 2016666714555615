package oauth_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/oauth"
)

// wantOAuthErr checks that err is an *OAuthError with code and status and a
// description containing want, made only of the characters RFC 6749 §5.2
// allows in error_description.
func wantOAuthErr(t *testing.T, err error, code string, status int, want string) {
	t.Helper()
	var e *oauth.OAuthError
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want *OAuthError %s", err, err, code)
	}
	if e.Code != code || e.Status != status || e.Redirect || !strings.Contains(e.Description, want) {
		t.Fatalf("error %+v, want %s %d containing %q", e, code, status, want)
	}
	for _, c := range []byte(e.Description) {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			t.Fatalf("description %q has %q, not allowed in error_description", e.Description, c)
		}
	}
	if e.Error() != e.Code+": "+e.Description {
		t.Fatalf("Error() = %q", e.Error())
	}
}

func TestValidRedirectURI(t *testing.T) {
	long := "https://app.example.com/" + strings.Repeat("a", 2048-len("https://app.example.com/"))
	for _, u := range []string{
		"https://app.example.com/cb",
		"https://app.example.com:8443/cb?x=1&y=%20",
		"https://192.0.2.1/cb", // where the browser goes is the user's business, not the dialer's
		"https://app.example.com",
		"http://127.0.0.1/cb",
		"http://127.0.0.1:8080/cb",
		"http://[::1]:8080/cb",
		"http://localhost:3000/callback",
		"http://localhost",
		"com.example.app:/oauth2redirect",
		"myapp://callback",
		"cursor://anysphere.cursor-retrieval/oauth/callback",
		long,
	} {
		if err := oauth.ValidRedirectURI(u); err != nil {
			t.Errorf("ValidRedirectURI(%q): %v", u, err)
		}
	}
	for _, c := range []struct{ uri, want string }{
		{"", "empty"},
		{long + "a", "at most 2048 bytes"},
		{"https://app.example.com/cb#frag", "fragment"},
		{"https://app.example.com/cb#", "fragment"},
		{"https://app.example.com/c b", "URI characters"},
		{"https://app.example.com/cb\\x", "URI characters"},
		{"https://app.example.com/caf\u00e9", "URI characters"},
		{"https://app.example.com/%zz", "URI characters"},
		{"https://app.example.com/%2", "URI characters"},
		{"https://app.example.com/\"", "URI characters"},
		{"/cb", "absolute"},
		{"app.example.com/cb", "absolute"},
		{"HTTPS://app.example.com/cb", "lowercase scheme"},
		{"1app:/cb", "lowercase scheme"},
		{"my_app:/cb", "lowercase scheme"},
		{"https:///cb", "must have a host"},
		{"https:app.example.com/cb", "must have a host"},
		{"https://:443/cb", "must have a host"},
		{"https://user@app.example.com/cb", "user info"},
		{"https://user:pw@app.example.com/cb", "user info"},
		{"https://app.example.com:x/cb", "valid URI"},
		{"http://app.example.com/cb", "loopback"},
		{"http://127.0.0.2/cb", "loopback"},
		{"http://localhost.example.com/cb", "loopback"},
		{"http://LOCALHOST/cb", "loopback"},
		{"http://[::ffff:127.0.0.1]/cb", "loopback"},
		{"http://127.0.0.1:0/cb", "loopback"},
		{"http://127.0.0.1:99999/cb", "loopback"},
		{"http://127.0.0.1:080/cb", "loopback"},
		{"http://127.0.0.1:/cb", "loopback"},
		{"http://user@127.0.0.1/cb", "user info"},
		{"javascript:alert(1)", "scheme 'javascript'"},
		{"data:text/html,x", "scheme 'data'"},
		{"file:///etc/passwd", "scheme 'file'"},
		{"vbscript:x", "scheme 'vbscript'"},
		{"about:blank", "scheme 'about'"},
		{"blob:https://app.example.com/x", "scheme 'blob'"},
		{"ftp://app.example.com/x", "scheme 'ftp'"},
		{"ws://app.example.com/x", "scheme 'ws'"},
		{"wss://app.example.com/x", "scheme 'wss'"},
		{"myapp:", "more than a scheme"},
	} {
		t.Run(c.uri, func(t *testing.T) {
			wantOAuthErr(t, oauth.ValidRedirectURI(c.uri), "invalid_redirect_uri", http.StatusBadRequest, c.want)
		})
	}
}

func TestMatchRedirectURI(t *testing.T) {
	reg := []string{
		"https://app.example.com/cb?x=1",
		"http://127.0.0.1/callback",
		"http://[::1]:9000/cb",
		"http://localhost:3000/oauth?a=b",
		"com.example.app:/redirect",
	}
	for _, c := range []struct {
		got  string
		want bool
	}{
		{"https://app.example.com/cb?x=1", true},
		{"https://app.example.com/cb", false},         // query is part of the match
		{"https://app.example.com/cb?x=1&y=2", false}, // so is every byte of it
		{"https://app.example.com:443/cb?x=1", false}, // exact string, even for an equivalent port
		{"https://app.example.com:8443/cb?x=1", false},
		{"https://APP.example.com/cb?x=1", false},
		{"https://app.example.com/cb?x=1#f", false},
		{"http://127.0.0.1/callback", true},
		{"http://127.0.0.1:51234/callback", true}, // RFC 8252 §7.3: any port on loopback
		{"http://127.0.0.1:1/callback", true},
		{"http://127.0.0.1:65535/callback", true},
		{"http://127.0.0.1:0/callback", false},
		{"http://127.0.0.1:65536/callback", false},
		{"http://127.0.0.1:08080/callback", false},
		{"http://127.0.0.1:/callback", false},
		{"http://127.0.0.1:80x/callback", false},
		{"http://127.0.0.1:51234/callback/", false}, // path exact
		{"http://127.0.0.1:51234/Callback", false},
		{"http://127.0.0.1:51234/callback?x", false}, // query exact
		{"http://127.0.0.1:51234/callback#x", false},
		{"http://localhost:51234/callback", false}, // host exact: localhost is not 127.0.0.1
		{"http://[::1]:51234/callback", false},
		{"https://127.0.0.1:51234/callback", false}, // scheme exact
		{"http://evil@127.0.0.1:51234/callback", false},
		{"http://127.0.0.1.evil.example:51234/callback", false},
		{"http://[::1]/cb", true},
		{"http://[::1]:1234/cb", true},
		{"http://localhost:4000/oauth?a=b", true},
		{"http://localhost:4000/oauth?a=c", false},
		{"http://localhost:4000/oauth", false},
		{"com.example.app:/redirect", true},
		{"com.example.app:/redirect/", false},
		{"", false},
	} {
		if got := oauth.MatchRedirectURI(reg, c.got); got != c.want {
			t.Errorf("MatchRedirectURI(%q) = %v, want %v", c.got, got, c.want)
		}
	}
	if oauth.MatchRedirectURI(nil, "https://app.example.com/cb") {
		t.Error("matched against nothing")
	}
	// The loopback exception needs a loopback registration: a public one
	// is matched exactly.
	if oauth.MatchRedirectURI([]string{"https://app.example.com/cb"}, "http://127.0.0.1:80/cb") {
		t.Error("loopback matched a non-loopback registration")
	}
}

func TestParseClientScope(t *testing.T) {
	all := continuo.OAuthScopes()
	for _, c := range []struct {
		in   string
		want []continuo.Scope
	}{
		{"", all},
		{" ", all},
		{"sessions:read", []continuo.Scope{continuo.ScopeSessionsRead}},
		{"swarm:work sessions:read", []continuo.Scope{continuo.ScopeSessionsRead, continuo.ScopeSwarmWork}},
		{"sessions:read  sessions:read ", []continuo.Scope{continuo.ScopeSessionsRead}},
		{strings.Join(scopeStrings(all), " "), all},
	} {
		got, err := oauth.ParseClientScope(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParseClientScope(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"admin", "admin is never granted"},
		{"sessions:read admin", "admin is never granted"},
		{"sessions:reed", "unknown scope 'sessions:reed'"},
		{"sessions:read,sessions:write", "unknown scope"}, // OAuth separates scopes by spaces only
		{"sessions:read\tsessions:write", "unknown scope 'sessions:read?sessions:write'"},
		{"Sessions:read", "unknown scope"},
		{strings.Repeat("x", 500), "unknown scope '" + strings.Repeat("x", 100) + "...'"},
	} {
		_, err := oauth.ParseClientScope(c.in)
		wantOAuthErr(t, err, "invalid_client_metadata", http.StatusBadRequest, c.want)
	}
}

func scopeStrings(s []continuo.Scope) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = string(v)
	}
	return out
}

func TestParseRegistration(t *testing.T) {
	body := `{"redirect_uris":["https://app.example.com/cb","http://127.0.0.1/cb"],"client_name":"Claude",
		"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],
		"response_types":["code"],"scope":"sessions:read sessions:write","logo_uri":"https://app.example.com/l.png",
		"contacts":["a@example.com"],"software_id":"x","client_id":"ignored","jwks":{"keys":[]}}`
	d, err := oauth.ParseRegistration([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if d.ClientID != "" || d.Name != "Claude" || d.AuthMethod != continuo.AuthMethodNone || d.MaxAge != 0 ||
		!slices.Equal(d.RedirectURIs, []string{"https://app.example.com/cb", "http://127.0.0.1/cb"}) ||
		!slices.Equal(d.Scopes, []continuo.Scope{continuo.ScopeSessionsRead, continuo.ScopeSessionsWrite}) ||
		string(d.Raw) != body {
		t.Fatalf("%+v", d)
	}

	// Invalid UTF-8 (inside a string, where Go's decoder would accept it)
	// is refused: the body is stored as received, and PostgreSQL would not.
	if _, err := oauth.ParseRegistration([]byte("{\"redirect_uris\":[\"https://a.example/cb\"],\"software_id\":\"a\xffb\"}")); err == nil ||
		!strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("invalid UTF-8: %v", err)
	}

	// Defaults: client_secret_basic (RFC 7591 §2), every OAuth scope, no name.
	d, err = oauth.ParseRegistration([]byte(`{"redirect_uris":["https://app.example.com/cb"]}`))
	if err != nil || d.AuthMethod != continuo.AuthMethodBasic || d.Name != "" || !slices.Equal(d.Scopes, continuo.OAuthScopes()) {
		t.Fatalf("%+v %v", d, err)
	}
	for _, m := range continuo.AuthMethods() {
		d, err := oauth.ParseRegistration([]byte(`{"redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"` + m + `"}`))
		if err != nil || d.AuthMethod != m {
			t.Errorf("auth method %s: %+v %v", m, d, err)
		}
	}
	// Null is absent; so is an empty array of grant types.
	d, err = oauth.ParseRegistration([]byte(`{"redirect_uris":["https://a.example/cb"],"client_name":null,"scope":null,
		"token_endpoint_auth_method":null,"grant_types":null,"response_types":[]}`))
	if err != nil || d.AuthMethod != continuo.AuthMethodBasic || d.Name != "" {
		t.Fatalf("%+v %v", d, err)
	}
	d, err = oauth.ParseRegistration([]byte(`{"redirect_uris":["https://a.example/cb"],"client_name":"` + strings.Repeat("n", 256) + `"}`))
	if err != nil || len(d.Name) != 256 {
		t.Fatalf("256-byte name: %v", err)
	}
	tenURIs := `"https://a.example/1","https://a.example/2","https://a.example/3","https://a.example/4","https://a.example/5",` +
		`"https://a.example/6","https://a.example/7","https://a.example/8","https://a.example/9","https://a.example/10"`
	if d, err := oauth.ParseRegistration([]byte(`{"redirect_uris":[` + tenURIs + `]}`)); err != nil || len(d.RedirectURIs) != 10 {
		t.Fatalf("ten redirect URIs: %v", err)
	}
	padded := `{"redirect_uris":["https://a.example/cb"]}`
	padded += strings.Repeat(" ", 16<<10-len(padded))
	if _, err := oauth.ParseRegistration([]byte(padded)); err != nil {
		t.Fatalf("16 KiB: %v", err)
	}

	const ok = `"redirect_uris":["https://a.example/cb"]`
	for _, c := range []struct{ name, body, code, want string }{
		{"over 16 KiB", padded + " ", "invalid_client_metadata", "at most 16384 bytes"},
		{"empty", ``, "invalid_client_metadata", "one JSON object"},
		{"null", `null`, "invalid_client_metadata", "one JSON object"},
		{"array", `[{` + ok + `}]`, "invalid_client_metadata", "one JSON object"},
		{"string", `"x"`, "invalid_client_metadata", "one JSON object"},
		{"truncated", `{` + ok, "invalid_client_metadata", "one JSON object"},
		{"trailing data", `{` + ok + `} {}`, "invalid_client_metadata", "one JSON object"},
		{"no redirect_uris", `{"client_name":"x"}`, "invalid_redirect_uri", "redirect_uris is required"},
		{"null redirect_uris", `{"redirect_uris":null}`, "invalid_redirect_uri", "redirect_uris is required"},
		{"empty redirect_uris", `{"redirect_uris":[]}`, "invalid_redirect_uri", "redirect_uris is required"},
		{"eleven redirect_uris", `{"redirect_uris":[` + tenURIs + `,"https://a.example/11"]}`, "invalid_redirect_uri", "at most 10"},
		{"redirect_uris a string", `{"redirect_uris":"https://a.example/cb"}`, "invalid_redirect_uri", "array of strings"},
		{"redirect_uris a number", `{"redirect_uris":[1]}`, "invalid_redirect_uri", "array of strings"},
		{"redirect_uris with null", `{"redirect_uris":["https://a.example/cb",null]}`, "invalid_redirect_uri", "array of strings"},
		{"bad redirect URI", `{"redirect_uris":["https://a.example/cb","http://a.example/cb"]}`, "invalid_redirect_uri", "redirect_uris[1]: an http redirect URI is allowed only on a loopback host"},
		{"redirect URI too long", `{"redirect_uris":["https://a.example/` + strings.Repeat("a", 2048) + `"]}`, "invalid_redirect_uri", "redirect_uris[0]: a redirect URI must be at most 2048 bytes"},
		{"auth method unknown", `{` + ok + `,"token_endpoint_auth_method":"private_key_jwt"}`, "invalid_client_metadata", "not 'private_key_jwt'"},
		{"auth method empty", `{` + ok + `,"token_endpoint_auth_method":""}`, "invalid_client_metadata", "token_endpoint_auth_method must be"},
		{"auth method a number", `{` + ok + `,"token_endpoint_auth_method":1}`, "invalid_client_metadata", "token_endpoint_auth_method must be a string"},
		{"implicit grant", `{` + ok + `,"grant_types":["authorization_code","implicit"]}`, "invalid_client_metadata", "grant_types: 'implicit' is not supported"},
		{"client_credentials grant", `{` + ok + `,"grant_types":["client_credentials"]}`, "invalid_client_metadata", "grant_types: 'client_credentials'"},
		{"grant_types a string", `{` + ok + `,"grant_types":"authorization_code"}`, "invalid_client_metadata", "grant_types must be an array of strings"},
		{"token response", `{` + ok + `,"response_types":["code","token"]}`, "invalid_client_metadata", "response_types: 'token' is not supported"},
		{"response_types an object", `{` + ok + `,"response_types":{}}`, "invalid_client_metadata", "response_types must be an array of strings"},
		{"name too long", `{` + ok + `,"client_name":"` + strings.Repeat("n", 257) + `"}`, "invalid_client_metadata", "client_name must be at most 256 bytes"},
		{"name a number", `{` + ok + `,"client_name":7}`, "invalid_client_metadata", "client_name must be a string"},
		{"name with newline", `{` + ok + `,"client_name":"Claude\nApproved"}`, "invalid_client_metadata", "control"},
		{"name with bidi override", `{` + ok + `,"client_name":"Cla\u202eude"}`, "invalid_client_metadata", "bidirectional"},
		{"scope admin", `{` + ok + `,"scope":"sessions:read admin"}`, "invalid_client_metadata", "admin is never granted"},
		{"scope unknown", `{` + ok + `,"scope":"everything"}`, "invalid_client_metadata", "unknown scope 'everything'"},
		{"scope an array", `{` + ok + `,"scope":["sessions:read"]}`, "invalid_client_metadata", "scope must be a string"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := oauth.ParseRegistration([]byte(c.body))
			wantOAuthErr(t, err, c.code, http.StatusBadRequest, c.want)
		})
	}
}
