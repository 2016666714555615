package web

import (
	"net/http/httptest"
	"testing"
	"time"

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

// The limiter holds each address to its bucket, and everyone to the
// global one; time refills both.
func TestLimiter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLimiter(func() time.Time { return now }, bucket{perMinute: 2, burst: 2}, bucket{perMinute: 3, burst: 3})
	from := func(addr string) bool {
		r := httptest.NewRequest("POST", "/oauth/register", nil)
		r.RemoteAddr = addr
		return l.allow(r)
	}
	if !from("192.0.2.1:1000") || !from("192.0.2.1:2000") || from("192.0.2.1:3000") {
		t.Error("one address: want two allowed, then refused")
	}
	if !from("[2001:db8::1]:1") || from("[2001:db8::2]:1") {
		t.Error("a second address: one left in the global bucket, then refused")
	}
	now = now.Add(30 * time.Second) // one token per address, 1.5 global
	if !from("192.0.2.1:1000") || from("192.0.2.1:1000") {
		t.Error("after 30 s: want one more for the first address")
	}
	if addrKey("[2001:db8::1]:1") != addrKey("[2001:db8::ffff]:2") || addrKey("192.0.2.1:1") == addrKey("192.0.2.2:1") {
		t.Error("addrKey: IPv6 by /64, IPv4 by address")
	}
}
