package web_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/continuo-dev/continuo/internal/metrics"
	"github.com/continuo-dev/continuo/internal/web"
)

// tokens is an Authenticator with a fixed table: this tests the HTTP edge;
// real tokens are tested in internal/auth and end to end.
type tokens map[string]*continuo.Caller

func (t tokens) Authenticate(_ context.Context, tok string) (*continuo.Caller, error) {
	if tok == "broken" {
		return nil, errors.New("database is down")
	}
	if c, ok := t[tok]; ok {
		return c, nil
	}
	return nil, continuo.Errorf(continuo.CodeUnauthorized, "invalid or expired token")
}

func serve(t *testing.T, ready error) *httptest.Server {
	t.Helper()
	h := web.Handler(web.Options{
		MCP:        mcpserver.New(mcpserver.Options{}),
		Auth:       tokens{"good": {PrincipalID: "prn_x", GroupID: "grp_x", Scopes: []continuo.Scope{continuo.ScopeSessionsRead}}},
		Ready:      func(context.Context) error { return ready },
		Metrics:    metrics.NewRegistry(),
		PublicHost: "continuo.example.com",
	})
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func get(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func mcpRequest(t *testing.T, url, host, auth string) *http.Request {
	t.Helper()
	req, err := http.NewRequest("POST", url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if host != "" {
		req.Host = host
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	return req
}

func TestBearerChallenge(t *testing.T) {
	s := serve(t, nil)
	cases := []struct {
		auth      string
		status    int
		challenge string
		code      string
	}{
		{"", 401, `Bearer realm="continuo"`, "unauthorized"},
		{"Basic Zm9vOmJhcg==", 401, `Bearer realm="continuo"`, "unauthorized"},
		{"Bearer ", 401, `Bearer realm="continuo"`, "unauthorized"},
		{"Bearer nope", 401, `error="invalid_token"`, "unauthorized"},
		{"Bearer broken", 503, `error="invalid_token"`, "internal"},
	}
	for _, c := range cases {
		resp, body := get(t, mcpRequest(t, s.URL, "", c.auth))
		if resp.StatusCode != c.status || !strings.Contains(resp.Header.Get("WWW-Authenticate"), c.challenge) || !strings.Contains(body, `"`+c.code+`"`) {
			t.Errorf("auth %q: %d %q %s", c.auth, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
		}
		if strings.Contains(body, "database is down") {
			t.Errorf("auth %q: internal cause leaked: %s", c.auth, body)
		}
	}
	resp, body := get(t, mcpRequest(t, s.URL, "", "Bearer good"))
	if resp.StatusCode != 200 {
		t.Fatalf("good token: %d %s", resp.StatusCode, body)
	}
}

// A loopback listener answers only loopback names and the public host.
func TestHostGuard(t *testing.T) {
	s := serve(t, nil)
	for host, want := range map[string]int{
		"evil.example":         403,
		"continuo.example.com": 401, // passed the guard, then asked for a token
		"localhost:7300":       401,
		"127.0.0.1":            401,
		"[::1]:7300":           401,
	} {
		resp, body := get(t, mcpRequest(t, s.URL, host, ""))
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d %s, want %d", host, resp.StatusCode, body, want)
		}
	}
}

func TestProbesAndMetrics(t *testing.T) {
	s := serve(t, nil)
	down := serve(t, errors.New("disk gone"))
	check := func(url string, status int, want string) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		resp, body := get(t, req)
		if resp.StatusCode != status || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d %s", url, resp.StatusCode, body)
		}
	}
	check(s.URL+"/healthz", 200, `"ok"`)
	check(s.URL+"/readyz", 200, `"ready"`)
	check(down.URL+"/readyz", 503, `"unavailable"`)
	check(down.URL+"/healthz", 200, `"ok"`)
	check(s.URL+"/", 200, "/mcp")
	check(s.URL+"/nope", 404, "")
	check(s.URL+"/metrics", 200, `continuo_http_requests_total{code="200",route="/healthz"} 1`)
	check(s.URL+"/metrics", 200, `continuo_http_requests_total{code="404",route="other"} 1`)
	// A toolset's endpoint is its own route; a path that names no toolset
	// is refused before any session, and counted as other.
	for path, status := range map[string]int{"/mcp/x/worker": 200, "/mcp/x/bogus": 400, "/mcp/x/worker,swarm": 400} {
		req := mcpRequest(t, s.URL, "", "Bearer good")
		req.URL.Path = path
		resp, body := get(t, req)
		if resp.StatusCode != status {
			t.Errorf("POST %s: %d %s, want %d", path, resp.StatusCode, body, status)
		}
	}
	check(s.URL+"/metrics", 200, `continuo_http_requests_total{code="200",route="/mcp/x/worker"} 1`)
	check(s.URL+"/metrics", 200, `continuo_http_requests_total{code="400",route="other"} 2`)
}

// The landing page shows the MCP endpoint as an absolute URL a client can
// paste: under the public URL when one is set, https over TLS.
func TestLandingURL(t *testing.T) {
	page := func(s *httptest.Server, c *http.Client) string {
		t.Helper()
		resp, err := c.Get(s.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	h := func(public string) http.Handler {
		return web.Handler(web.Options{MCP: mcpserver.New(mcpserver.Options{}), Auth: tokens{}, PublicURL: public})
	}
	plain := httptest.NewServer(h(""))
	defer plain.Close()
	if body := page(plain, http.DefaultClient); !strings.Contains(body, "<code>"+plain.URL+"/mcp</code>") {
		t.Errorf("plain HTTP: want %s/mcp in\n%s", plain.URL, body)
	}
	tls := httptest.NewTLSServer(h(""))
	defer tls.Close()
	if body := page(tls, tls.Client()); !strings.Contains(body, "<code>https://"+strings.TrimPrefix(tls.URL, "https://")+"/mcp</code>") {
		t.Errorf("TLS: want %s/mcp in\n%s", tls.URL, body)
	}
	public := httptest.NewServer(h("https://continuo.example.com/"))
	defer public.Close()
	if body := page(public, http.DefaultClient); !strings.Contains(body, "<code>https://continuo.example.com/mcp</code>") {
		t.Errorf("public URL: want https://continuo.example.com/mcp in\n%s", body)
	}
}
