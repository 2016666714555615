package oauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/oauth"
)

// docSite is an HTTPS server on loopback that serves metadata documents,
// and the PEM file of its certificate for FetcherOptions.TestCAFile.
type docSite struct {
	ts     *httptest.Server
	mux    *http.ServeMux
	caFile string
	hits   atomic.Int64
	done   chan struct{} // closed when the test ends, before the server closes
}

func newDocSite(t *testing.T) *docSite {
	t.Helper()
	s := &docSite{mux: http.NewServeMux()}
	s.ts = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.mux.ServeHTTP(w, r)
	}))
	s.ts.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are the point of some tests
	s.ts.StartTLS()
	t.Cleanup(s.ts.Close)
	s.done = make(chan struct{})
	t.Cleanup(func() { close(s.done) }) // runs first: blocked handlers end, then Close
	s.caFile = writePEM(t, "site.pem", s.ts.Certificate().Raw)
	return s
}

func (s *docSite) url(path string) string { return s.ts.URL + path }

func (s *docSite) port() string { return s.ts.URL[strings.LastIndexByte(s.ts.URL, ':')+1:] }

// serve answers path with body, with Content-Type application/json unless
// header says otherwise (pairs of name, value; an empty value removes it).
func (s *docSite) serve(path string, body []byte, header ...string) {
	s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for i := 0; i < len(header); i += 2 {
			if header[i+1] == "" {
				w.Header()[header[i]] = nil // and no sniffing
			} else {
				w.Header().Set(header[i], header[i+1])
			}
		}
		_, _ = w.Write(body)
	})
}

// docBody is a valid document for id, changed by kv (pairs of field,
// value; a nil value removes the field).
func docBody(id string, kv ...any) []byte {
	m := map[string]any{"client_id": id, "redirect_uris": []string{"https://app.example.com/cb"}}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(m, kv[i].(string))
		} else {
			m[kv[i].(string)] = kv[i+1]
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

func writePEM(t *testing.T, name string, der []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func newFetcher(t *testing.T, o oauth.FetcherOptions) *oauth.ClientDocFetcher {
	t.Helper()
	f, err := oauth.NewClientDocFetcher(o)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// mapResolver resolves names from a map and counts its lookups.
type mapResolver struct {
	addrs map[string][]netip.Addr
	calls atomic.Int64
}

func (r *mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.calls.Add(1)
	if a, ok := r.addrs[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func resolveTo(host string, addrs ...string) *mapResolver {
	r := &mapResolver{addrs: map[string][]netip.Addr{}}
	for _, a := range addrs {
		r.addrs[host] = append(r.addrs[host], netip.MustParseAddr(a))
	}
	return r
}

const invalidClient = "invalid_client"

func TestFetchClientDoc(t *testing.T) {
	s := newDocSite(t)
	var accept string
	id := s.url("/oauth/client.json")
	body := docBody(id, "client_name", "Claude", "scope", "sessions:write sessions:read",
		"redirect_uris", []string{"https://claude.ai/api/mcp/auth_callback", "http://localhost/cb"},
		"token_endpoint_auth_method", "none", "grant_types", []string{"authorization_code", "refresh_token"},
		"response_types", []string{"code"}, "logo_uri", 5, "client_uri", "https://claude.ai")
	s.mux.HandleFunc("/oauth/client.json", func(w http.ResponseWriter, r *http.Request) {
		accept = r.Header.Get("Accept")
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = w.Write(body)
	})
	f := newFetcher(t, oauth.FetcherOptions{TestCAFile: s.caFile})
	d, err := f.Fetch(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if d.ClientID != id || d.Name != "Claude" || d.AuthMethod != continuo.AuthMethodNone || d.MaxAge != time.Hour ||
		!slices.Equal(d.RedirectURIs, []string{"https://claude.ai/api/mcp/auth_callback", "http://localhost/cb"}) ||
		!slices.Equal(d.Scopes, []continuo.Scope{continuo.ScopeSessionsRead, continuo.ScopeSessionsWrite}) ||
		string(d.Raw) != string(body) {
		t.Fatalf("%+v", d)
	}
	if accept != "application/json" {
		t.Fatalf("Accept %q", accept)
	}

	// The least a document may say: client_id and redirect_uris. The name
	// is then the URL's host, the ceiling every OAuth scope.
	s.serve("/min", docBody(s.url("/min")))
	d, err = f.Fetch(context.Background(), s.url("/min"))
	if err != nil || d.Name != "127.0.0.1:"+s.port() || d.AuthMethod != continuo.AuthMethodNone ||
		!slices.Equal(d.Scopes, continuo.OAuthScopes()) {
		t.Fatalf("%+v %v", d, err)
	}

	// A host name, resolved by the test resolver, verified against the
	// certificate (httptest's names example.com).
	f = newFetcher(t, oauth.FetcherOptions{TestCAFile: s.caFile, Resolver: resolveTo("example.com", "127.0.0.1")})
	s.mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(docBody("https://" + r.Host + r.URL.RequestURI()))
	})
	if d, err := f.Fetch(context.Background(), "https://example.com:"+s.port()+"/echo"); err != nil || d.Name != "example.com:"+s.port() {
		t.Fatalf("%+v %v", d, err)
	}
}

func TestFetchClientDocRules(t *testing.T) {
	s := newDocSite(t)
	f := newFetcher(t, oauth.FetcherOptions{TestCAFile: s.caFile})
	ten := make([]string, 10)
	for i := range ten {
		ten[i] = "https://app.example.com/" + strconv.Itoa(i)
	}
	for _, c := range []struct {
		name string
		kv   []any
	}{
		{"auth method none", []any{"token_endpoint_auth_method", "none"}},
		{"authorization_code only", []any{"grant_types", []string{"authorization_code"}}},
		{"ten redirect URIs", []any{"redirect_uris", ten}},
		{"256-byte name", []any{"client_name", strings.Repeat("n", 256)}},
		{"null secret-free fields", []any{"client_name", json.RawMessage("null"), "scope", json.RawMessage("null")}},
	} {
		path := "/ok/" + strings.ReplaceAll(c.name, " ", "-")
		s.serve(path, docBody(s.url(path), c.kv...))
		if _, err := f.Fetch(context.Background(), s.url(path)); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	for _, c := range []struct {
		name string
		body func(id string) []byte
		want string
	}{
		{"array", func(string) []byte { return []byte(`[]`) }, "one JSON object"},
		{"not JSON", func(string) []byte { return []byte(`<html>`) }, "one JSON object"},
		{"no client_id", func(id string) []byte { return docBody(id, "client_id", nil) }, "client_id is required"},
		{"client_id a number", func(id string) []byte { return docBody(id, "client_id", 1) }, "client_id is required and must be a string"},
		{"client_id null", func(id string) []byte { return docBody(id, "client_id", json.RawMessage("null")) }, "client_id is required"},
		{"client_id other URL", func(string) []byte { return docBody("https://evil.example/c") }, "client_id 'https://evil.example/c' does not equal the document URL"},
		{"client_id trailing slash", func(id string) []byte { return docBody(id + "/") }, "does not equal"},
		{"client_id with query", func(id string) []byte { return docBody(id + "?") }, "does not equal"},
		{"client_id other case", func(id string) []byte { return docBody(strings.ToUpper(id)) }, "does not equal"},
		{"client_id long", func(string) []byte { return docBody(strings.Repeat("x", 5000)) }, "client_id '" + strings.Repeat("x", 100) + "...' does not"},
		{"no redirect_uris", func(id string) []byte { return docBody(id, "redirect_uris", nil) }, "redirect_uris is required"},
		{"empty redirect_uris", func(id string) []byte { return docBody(id, "redirect_uris", []string{}) }, "redirect_uris is required"},
		{"eleven redirect_uris", func(id string) []byte { return docBody(id, "redirect_uris", append(ten, "https://app.example.com/x")) }, "at most 10"},
		{"http redirect URI", func(id string) []byte { return docBody(id, "redirect_uris", []string{"http://app.example.com/cb"}) }, "redirect_uris[0]: an http redirect URI is allowed only on a loopback host"},
		{"javascript redirect URI", func(id string) []byte {
			return docBody(id, "redirect_uris", []string{"https://app.example.com/cb", "javascript:alert(1)"})
		}, "redirect_uris[1]: the scheme 'javascript' is not allowed"},
		{"client_secret_basic", func(id string) []byte { return docBody(id, "token_endpoint_auth_method", "client_secret_basic") }, "token_endpoint_auth_method must be none, not 'client_secret_basic'"},
		{"client_secret_post", func(id string) []byte { return docBody(id, "token_endpoint_auth_method", "client_secret_post") }, "must be none"},
		{"private_key_jwt", func(id string) []byte { return docBody(id, "token_endpoint_auth_method", "private_key_jwt") }, "must be none"},
		{"empty auth method", func(id string) []byte { return docBody(id, "token_endpoint_auth_method", "") }, "must be none, not ''"},
		{"auth method a number", func(id string) []byte { return docBody(id, "token_endpoint_auth_method", 0) }, "token_endpoint_auth_method must be a string"},
		{"client_secret", func(id string) []byte { return docBody(id, "client_secret", "s3cret") }, "client_secret is not allowed"},
		{"client_secret null", func(id string) []byte { return docBody(id, "client_secret", json.RawMessage("null")) }, "client_secret is not allowed"},
		{"client_secret_expires_at", func(id string) []byte { return docBody(id, "client_secret_expires_at", 0) }, "client_secret_expires_at is not allowed"},
		{"implicit grant", func(id string) []byte { return docBody(id, "grant_types", []string{"authorization_code", "implicit"}) }, "grant_types: 'implicit' is not supported"},
		{"password grant", func(id string) []byte { return docBody(id, "grant_types", []string{"password"}) }, "grant_types: 'password'"},
		{"token response", func(id string) []byte { return docBody(id, "response_types", []string{"token"}) }, "response_types: 'token' is not supported"},
		{"name too long", func(id string) []byte { return docBody(id, "client_name", strings.Repeat("n", 257)) }, "client_name must be at most 256 bytes"},
		{"name a list", func(id string) []byte { return docBody(id, "client_name", []string{"a"}) }, "client_name must be a string"},
		{"scope admin", func(id string) []byte { return docBody(id, "scope", "admin") }, "admin is never granted"},
		{"scope unknown", func(id string) []byte { return docBody(id, "scope", "sessions:read root") }, "unknown scope 'root'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := "/bad/" + strings.ReplaceAll(c.name, " ", "-")
			s.serve(path, c.body(s.url(path)))
			_, err := f.Fetch(context.Background(), s.url(path))
			wantOAuthErr(t, err, invalidClient, http.StatusBadRequest, c.want)
			if !strings.HasPrefix(err.Error(), "invalid_client: client metadata document: ") {
				t.Fatal(err)
			}
		})
	}
}

func TestFetchClientDocBadURL(t *testing.T) {
	r := resolveTo("example.com", "127.0.0.1")
	f := newFetcher(t, oauth.FetcherOptions{TestCAFile: newDocSite(t).caFile, Resolver: r})
	long := "https://example.com/" + strings.Repeat("a", continuo.MaxClientIDBytes-len("https://example.com/"))
	for _, c := range []struct{ url, want string }{
		{"", "must be an https URL"},
		{"ocl_01JABCDEF", "must be an https URL"},
		{"http://example.com/client.json", "must be an https URL"},
		{"HTTPS://example.com/client.json", "must be an https URL"},
		{"example.com/client.json", "must be an https URL"},
		{long + "a", "at most 512 bytes"},
		{"https://example.com", "must have a path"},
		{"https://example.com/", "must have a path"},
		{"https://example.com?x=1", "must have a path"},
		{"https://example.com/client.json#x", "must not have a fragment"},
		{"https://example.com/client.json#", "must not have a fragment"},
		{"https://user@example.com/client.json", "must not contain user info"},
		{"https://user:pw@example.com/client.json", "must not contain user info"},
		{"https://example.com/a/./client.json", "dot segments"},
		{"https://example.com/a/../client.json", "dot segments"},
		{"https://example.com/a/%2e%2E/client.json", "dot segments"},
		{"https://example.com/a/%2E/client.json", "dot segments"},
		{"https://example.com/.", "dot segments"},
		{"https://example.com/a/..", "dot segments"},
		{"https:///client.json", "must have a host"},
		{"https://:443/client.json", "must have a host"},
		{"https://example.com:x/client.json", "not a valid URL"},
		{"https://exa mple.com/client.json", "URI characters"},
		{"https://example.com/caf\u00e9.json", "URI characters"},
		{"https://example.com/c\\..\\x", "URI characters"},
		{"https://example.com/%zz", "URI characters"},
	} {
		_, err := f.Fetch(context.Background(), c.url)
		wantOAuthErr(t, err, invalidClient, http.StatusBadRequest, c.want)
	}
	if n := r.calls.Load(); n != 0 {
		t.Fatalf("a malformed client_id reached the resolver %d times", n)
	}
}

// TestFetchClientDocNumericHosts (issue 23): a client_id whose host is a
// number is never handed to a resolver. One spelt as the address parsers
// agree on (dotted decimal IPv4, bracketed IPv6) is checked as the dialer
// checks a resolved address, before any traffic; one in any other numeric
// spelling (decimal, hexadecimal or octal integers, short or
// leading-zero forms, a trailing dot), which a system resolver may read as
// an address, is refused as malformed. Neither is looked up, and the
// loopback server behind them is never asked.
func TestFetchClientDocNumericHosts(t *testing.T) {
	s := newDocSite(t)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(docBody("https://" + r.Host + r.URL.RequestURI()))
	})
	r := resolveTo("example.com", "127.0.0.1")
	f := newFetcher(t, oauth.FetcherOptions{Resolver: r})
	port := ":" + s.port()
	const odd, private = "must be a DNS name, a dotted-decimal IPv4 address or a bracketed IPv6 address", "its host is an address that is not public"
	for _, c := range []struct{ url, want string }{
		{"https://2130706433" + port + "/c.json", odd},     // 127.0.0.1 as one decimal number
		{"https://0x7f000001" + port + "/c.json", odd},     // … in hexadecimal
		{"https://0X7F000001" + port + "/c.json", odd},     // … in capitals
		{"https://017700000001" + port + "/c.json", odd},   // … in octal
		{"https://0177.0.0.1" + port + "/c.json", odd},     // an octal part
		{"https://0x7f.0.0.1" + port + "/c.json", odd},     // a hexadecimal part
		{"https://127.1" + port + "/c.json", odd},          // two parts
		{"https://127.0.1" + port + "/c.json", odd},        // three parts
		{"https://127.0.0.01" + port + "/c.json", odd},     // a leading zero
		{"https://127.0.0.1." + port + "/c.json", odd},     // a trailing dot
		{"https://169.254.169.254.0/c.json", odd},          // five parts
		{"https://3232235777/c.json", odd},                 // 192.168.1.1
		{"https://0xa9fea9fe/latest/meta-data", odd},       // 169.254.169.254
		{"https://example.0x1/c.json", odd},                // ends in a number
		{"https://example.123/c.json", odd},                // ends in a number
		{"https://0x/c.json", odd},                         // "0x" is zero to WHATWG
		{"https://%31%32%37.0.0.1" + port + "/c.json", ""}, // escaped digits: refused either way
		{"https://127.0.0.1" + port + "/c.json", private},
		{"https://10.0.0.1/c.json", private},
		{"https://169.254.169.254/latest/meta-data", private},
		{"https://100.64.0.1/c.json", private},
		{"https://0.0.0.0" + port + "/c.json", private},
		{"https://[::1]" + port + "/c.json", private},
		{"https://[::ffff:127.0.0.1]" + port + "/c.json", private},
		{"https://[::ffff:a9fe:a9fe]/c.json", private},
		{"https://[fe80::1%25eth0]" + port + "/c.json", private},
		{"https://[fd00::1]/c.json", private},
		{"https://[64:ff9b::a00:1]/c.json", private}, // NAT64 of 10.0.0.1
	} {
		_, err := f.Fetch(context.Background(), c.url)
		wantOAuthErr(t, err, invalidClient, http.StatusBadRequest, c.want)
	}
	if n := r.calls.Load(); n != 0 {
		t.Errorf("numeric hosts reached the resolver %d times", n)
	}
	if n := s.hits.Load(); n != 0 {
		t.Errorf("the loopback server was asked %d times", n)
	}
	// A literal that passes the check is dialled as it is, without a
	// lookup: with the test CA, loopback passes.
	f = newFetcher(t, oauth.FetcherOptions{TestCAFile: s.caFile, Resolver: r})
	if _, err := f.Fetch(context.Background(), "https://127.0.0.1"+port+"/c.json"); err != nil {
		t.Fatalf("a loopback literal with the test CA: %v", err)
	}
	if n := r.calls.Load(); n != 0 {
		t.Errorf("an address literal was looked up %d times", n)
	}
}

// The longest client_id allowed is fetched: 512 bytes.
func TestFetchClientDocLongestURL(t *testing.T) {
	s := newDocSite(t)
	id := s.url("/")
	id += strings.Repeat("a", continuo.MaxClientIDBytes-len(id))
	s.serve("/", docBody(id))
	if _, err := newFetcher(t, oauth.FetcherOptions{TestCAFile: s.caFile}).Fetch(context.Background(), id); err != nil {
		t.Fatal(err)
	}
}

func TestFetchClientDocHTTP(t *testing.T) {
	s := newDocSite(t)
	f := newFetcher(t, oauth.FetcherOptions{TestCAFile: s.caFile})
	fetch := func(path string) error {
		_, err := f.Fetch(context.Background(), s.url(path))
		return err
	}

	for _, status := range []int{201, 204, 301, 304, 400, 404, 500} {
		path := "/status/" + strconv.Itoa(status)
		s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status) // a 301 without Location is not followed
			_, _ = w.Write(docBody(s.url(path)))
		})
		wantOAuthErr(t, fetch(path), invalidClient, 400, "answered HTTP "+strconv.Itoa(status)+", not 200")
	}

	for i, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON;charset=UTF-8",
		"application/json; charset", "application/vnd.example+json", "application/ld+json; profile=x"} {
		path := "/ct/ok/" + strconv.Itoa(i)
		s.serve(path, docBody(s.url(path)), "Content-Type", ct)
		if err := fetch(path); err != nil {
			t.Errorf("Content-Type %q: %v", ct, err)
		}
	}
	for i, ct := range []string{"", "text/html", "text/plain; charset=utf-8", "text/json", "application/jsonx",
		"application/json-seq", "+json", "application/xml"} {
		path := "/ct/bad/" + strconv.Itoa(i)
		s.serve(path, docBody(s.url(path)), "Content-Type", ct)
		wantOAuthErr(t, fetch(path), invalidClient, 400, "is not JSON")
	}

	// Size: 16 KiB is read; a byte more is refused, whether the server says
	// so up front (Content-Length) or not (chunked).
	pad := func(b []byte, n int) []byte { return append(b, strings.Repeat(" ", n-len(b))...) }
	s.serve("/size/max", pad(docBody(s.url("/size/max")), 16<<10))
	if err := fetch("/size/max"); err != nil {
		t.Fatalf("16 KiB: %v", err)
	}
	s.serve("/size/over", pad(docBody(s.url("/size/over")), 16<<10+1))
	wantOAuthErr(t, fetch("/size/over"), invalidClient, 400, "larger than 16384 bytes")
	s.mux.HandleFunc("/size/chunked", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		b := pad(docBody(s.url("/size/chunked")), 1<<20)
		_, _ = w.Write(b[:100])
		w.(http.Flusher).Flush() // no Content-Length from here on
		_, _ = w.Write(b[100:])
	})
	wantOAuthErr(t, fetch("/size/chunked"), invalidClient, 400, "larger than 16384 bytes")
	small := newFetcher(t, oauth.FetcherOptions{TestCAFile: s.caFile, MaxBytes: 200})
	s.serve("/size/small", pad(docBody(s.url("/size/small")), 201))
	_, err := small.Fetch(context.Background(), s.url("/size/small"))
	wantOAuthErr(t, err, invalidClient, 400, "larger than 200 bytes")
}

func TestFetchClientDocRedirects(t *testing.T) {
	s := newDocSite(t)
	f := newFetcher(t, oauth.FetcherOptions{TestCAFile: s.caFile})
	redirect := func(from, to string) {
		s.mux.HandleFunc(from, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, to, http.StatusFound) })
	}
	// Followed within the origin, up to three times; the document names
	// the URL the client sent, not where it ended.
	redirect("/one", "/one-doc")
	s.serve("/one-doc", docBody(s.url("/one")))
	if d, err := f.Fetch(context.Background(), s.url("/one")); err != nil || d.ClientID != s.url("/one") {
		t.Fatalf("one redirect: %+v %v", d, err)
	}
	redirect("/three", s.url("/three-2")) // absolute, same origin
	redirect("/three-2", "/three-3")
	redirect("/three-3", "/three-doc")
	s.serve("/three-doc", docBody(s.url("/three")))
	if _, err := f.Fetch(context.Background(), s.url("/three")); err != nil {
		t.Fatalf("three redirects: %v", err)
	}
	redirect("/four", "/three")
	_, err := f.Fetch(context.Background(), s.url("/four"))
	wantOAuthErr(t, err, invalidClient, 400, "more than 3 redirects")
	redirect("/loop", "/loop")
	_, err = f.Fetch(context.Background(), s.url("/loop"))
	wantOAuthErr(t, err, invalidClient, 400, "more than 3 redirects")

	// Never to another origin: another port, another scheme, another host
	// name for the same address, user info.
	other := newDocSite(t)
	other.serve("/doc", docBody(s.url("/away")))
	for i, to := range []string{
		other.url("/doc"),
		"http://127.0.0.1:" + s.port() + "/one-doc",
		"https://localhost:" + s.port() + "/one-doc",
		"https://u@127.0.0.1:" + s.port() + "/one-doc",
	} {
		path := "/away/" + strconv.Itoa(i)
		redirect(path, to)
		_, err := f.Fetch(context.Background(), s.url(path))
		wantOAuthErr(t, err, invalidClient, 400, "redirected to another origin")
	}
	if n := other.hits.Load(); n != 0 {
		t.Fatalf("the other origin was asked %d times", n)
	}
}

func TestFetchClientDocCache(t *testing.T) {
	s := newDocSite(t)
	f := newFetcher(t, oauth.FetcherOptions{TestCAFile: s.caFile})
	for i, c := range []struct {
		header []string
		want   time.Duration
	}{
		{nil, time.Hour},
		{[]string{"max-age=60"}, 5 * time.Minute},
		{[]string{"max-age=0"}, 5 * time.Minute},
		{[]string{"max-age=300"}, 5 * time.Minute},
		{[]string{"max-age=7200"}, 2 * time.Hour},
		{[]string{"public, max-age=600"}, 10 * time.Minute},
		{[]string{`max-age="900"`}, 15 * time.Minute},
		{[]string{"Max-Age=86400"}, 24 * time.Hour},
		{[]string{"max-age=999999"}, 24 * time.Hour},
		{[]string{"max-age=99999999999999999999999999"}, 24 * time.Hour},
		{[]string{"max-age=abc"}, time.Hour},
		{[]string{"max-age=-5"}, time.Hour},
		{[]string{"no-store"}, 0},
		{[]string{"no-cache"}, 0},
		{[]string{`no-cache="Set-Cookie"`}, 0},
		{[]string{"max-age=600, no-store"}, 0},
		{[]string{"max-age=600", "no-cache"}, 0},
	} {
		path := "/cache/" + strconv.Itoa(i)
		s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			for _, h := range c.header {
				w.Header().Add("Cache-Control", h)
			}
			_, _ = w.Write(docBody(s.url(path)))
		})
		d, err := f.Fetch(context.Background(), s.url(path))
		if err != nil || d.MaxAge != c.want {
			t.Errorf("Cache-Control %q: %+v %v, want MaxAge %s", c.header, d, err, c.want)
		}
	}
}

// blockingDoc serves a handler that signals when it is entered, then
// blocks until its request ends.
func blockingDoc(s *docSite, path string) <-chan struct{} {
	entered := make(chan struct{})
	var once sync.Once
	s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(entered) })
		// A server that never answers: not even when its request's
		// context ends (an empty 200 then would be an answer, as a CI
		// run under load once saw).
		<-s.done
	})
	return entered
}

func TestFetchClientDocTimeout(t *testing.T) {
	s := newDocSite(t)
	blockingDoc(s, "/slow")
	f := newFetcher(t, oauth.FetcherOptions{TestCAFile: s.caFile, Timeout: 200 * time.Millisecond})
	_, err := f.Fetch(context.Background(), s.url("/slow"))
	wantOAuthErr(t, err, invalidClient, 400, "the fetch timed out")
}

func TestFetchClientDocCancel(t *testing.T) {
	s := newDocSite(t)
	entered := blockingDoc(s, "/slow")
	f := newFetcher(t, oauth.FetcherOptions{TestCAFile: s.caFile})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := f.Fetch(ctx, s.url("/slow"))
		done <- err
	}()
	select {
	case <-entered:
	case <-time.After(time.Minute):
		t.Fatal("the document was never requested")
	}
	cancel()
	wantOAuthErr(t, <-done, invalidClient, 400, "the fetch was cancelled")
}

// With the real rules, a document on a loopback address is refused when
// the connection is dialled: on the address the name resolved to, before
// any byte is sent.
func TestFetchClientDocRefusesLoopback(t *testing.T) {
	s := newDocSite(t)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(docBody("https://" + r.Host + r.URL.RequestURI()))
	})
	r := resolveTo("example.com", "127.0.0.1")
	f := newFetcher(t, oauth.FetcherOptions{Resolver: r})
	_, err := f.Fetch(context.Background(), "https://example.com:"+s.port()+"/client.json")
	wantOAuthErr(t, err, invalidClient, 400, "its host resolves to an address that is not public")
	if r.calls.Load() == 0 {
		t.Fatal("refused before the name was resolved: the check must be on the dialled address")
	}
	// Without a test resolver: the dialer's own resolution, the same check.
	real := newFetcher(t, oauth.FetcherOptions{})
	for _, u := range []string{s.url("/client.json"), "https://[::ffff:127.0.0.1]:" + s.port() + "/client.json"} {
		_, err = real.Fetch(context.Background(), u)
		wantOAuthErr(t, err, invalidClient, 400, "not public")
	}
	if n := s.hits.Load(); n != 0 {
		t.Fatalf("the loopback server was asked %d times", n)
	}

	// The same server and names with the test CA: loopback is allowed.
	f = newFetcher(t, oauth.FetcherOptions{TestCAFile: s.caFile, Resolver: r})
	if _, err := f.Fetch(context.Background(), "https://example.com:"+s.port()+"/client.json"); err != nil {
		t.Fatal(err)
	}
}

// The test CA allows loopback and nothing else: every other address that is
// not public is still refused, including each one a name resolves to.
func TestFetchClientDocRefusesPrivate(t *testing.T) {
	s := newDocSite(t)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(docBody("https://" + r.Host + r.URL.RequestURI()))
	})
	addrs := []string{"10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.1",
		"198.18.0.1", "192.0.2.1", "198.51.100.1", "203.0.113.1", "224.0.0.1", "255.255.255.255",
		"::ffff:10.0.0.1", "::ffff:169.254.169.254"}
	if ln, err := net.Listen("tcp6", "[::1]:0"); err == nil { // IPv6 sockets exist here
		ln.Close()
		addrs = append(addrs, "fd00::1", "fe80::1", "::", "2001:db8::1", "ff02::1", "64:ff9b::a00:1")
	}
	for _, a := range addrs {
		f := newFetcher(t, oauth.FetcherOptions{TestCAFile: s.caFile, Resolver: resolveTo("example.com", a)})
		_, err := f.Fetch(context.Background(), "https://example.com/client.json")
		wantOAuthErr(t, err, invalidClient, 400, "not public")
	}
	// A name with a private address and a loopback one: the private one is
	// refused when dialled, the loopback one then used.
	f := newFetcher(t, oauth.FetcherOptions{TestCAFile: s.caFile, Resolver: resolveTo("example.com", "192.168.0.1", "127.0.0.1")})
	if _, err := f.Fetch(context.Background(), "https://example.com:"+s.port()+"/client.json"); err != nil {
		t.Fatal(err)
	}
	f = newFetcher(t, oauth.FetcherOptions{TestCAFile: s.caFile, Resolver: resolveTo("other.example")})
	_, err := f.Fetch(context.Background(), "https://example.com:"+s.port()+"/client.json")
	wantOAuthErr(t, err, invalidClient, 400, "its host could not be resolved")
}

func TestFetchClientDocTLS(t *testing.T) {
	s := newDocSite(t)
	s.serve("/client.json", docBody(s.url("/client.json")))
	// Trusting another CA: loopback is allowed, the server's certificate
	// is not.
	f := newFetcher(t, oauth.FetcherOptions{TestCAFile: writePEM(t, "other.pem", newCA(t))})
	_, err := f.Fetch(context.Background(), s.url("/client.json"))
	wantOAuthErr(t, err, invalidClient, 400, "its TLS certificate is not trusted")

	// A plain-HTTP server behind an https client_id: no TLS, no document.
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	f = newFetcher(t, oauth.FetcherOptions{TestCAFile: s.caFile})
	_, err = f.Fetch(context.Background(), "https"+strings.TrimPrefix(plain.URL, "http")+"/client.json")
	wantOAuthErr(t, err, invalidClient, 400, "it could not be fetched")

	notPEM := filepath.Join(t.TempDir(), "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{filepath.Join(t.TempDir(), "missing.pem"), notPEM} {
		if _, err := oauth.NewClientDocFetcher(oauth.FetcherOptions{TestCAFile: bad}); err == nil {
			t.Errorf("test CA %s accepted", bad)
		}
	}
}

// newCA returns a fresh self-signed CA certificate (DER).
func newCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other test CA"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<32, 0), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}
