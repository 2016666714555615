package web

import (
	"testing"

	"github.com/continuo-dev/continuo"
)

func TestScopeMeanings(t *testing.T) {
	for _, s := range continuo.OAuthScopes() {
		if scopeMeanings[s] == "" {
			t.Errorf("scope %s has no plain-language meaning for the consent page", s)
		}
	}
	if _, ok := scopeMeanings[continuo.ScopeAdmin]; ok {
		t.Error("admin has a meaning, but is never grantable over OAuth")
	}
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"":                             "/",
		"/":                            "/",
		"/oauth/authorize?client_id=x": "/oauth/authorize?client_id=x",
		"//evil.example/x":             "/",
		"/\\evil.example":              "/",
		"https://evil.example/":        "/",
		"javascript:alert(1)":          "/",
		"evil.example":                 "/",
		"/a\r\nLocation: x":            "/",
		"/%2F%2Fevil.example":          "/%2F%2Fevil.example", // a path of ours, however odd
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedirectDescriptions(t *testing.T) {
	for uri, want := range map[string][2]string{
		"http://127.0.0.1:5000/cb":         {"this computer", "http://127.0.0.1:5000"},
		"http://[::1]:5000/cb":             {"this computer", "http://[::1]:5000"},
		"http://localhost:5000/cb":         {"this computer", "http://localhost:5000"},
		"https://chatgpt.com/connector/cb": {"chatgpt.com", "https://chatgpt.com"},
		"com.example.app:/oauth":           {"the app that opens com.example.app: links", "com.example.app:"},
		`https://"><b>.example/cb`:         {`"><b>.example`, ""},
	} {
		if got := redirectsTo(uri); got != want[0] {
			t.Errorf("redirectsTo(%q) = %q, want %q", uri, got, want[0])
		}
		if got := formActionSource(uri); got != want[1] {
			t.Errorf("formActionSource(%q) = %q, want %q", uri, got, want[1])
		}
	}
}

func TestOriginOf(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:7300":        "http://127.0.0.1:7300",
		"https://Continuo.Example":     "https://continuo.example",
		"https://continuo.example:443": "https://continuo.example",
		"http://[::1]:80":              "http://[::1]",
	} {
		if got := originOf(in); got != want {
			t.Errorf("originOf(%q) = %q, want %q", in, got, want)
		}
	}
}
