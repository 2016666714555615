package oauth

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/continuo-dev/continuo"
)

// Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document,
// MCP 2025-11-25): a client's client_id is an https URL, and the JSON
// document there describes it. Fetching a URL a stranger chose is a
// server-side request forgery waiting to happen, so the fetcher dials only
// public addresses, follows few redirects and only within the origin, and
// reads little.

const (
	docTimeout      = 5 * time.Second
	docMaxRedirects = 3
	docMinAge       = 5 * time.Minute
	docMaxAge       = 24 * time.Hour
	docDefaultAge   = time.Hour
)

var (
	errDocRedirects   = errors.New("too many redirects")
	errDocCrossOrigin = errors.New("redirect to another origin")
)

// FetcherOptions configures a ClientDocFetcher. The zero value is the real
// rules.
type FetcherOptions struct {
	Timeout  time.Duration // the whole fetch, redirects and body included; 0 = 5 s
	MaxBytes int64         // the largest body read; a larger one is refused; 0 = 16 KiB
	// TestCAFile is for tests only (env CONTINUO_TEST_CLIENT_METADATA_CA):
	// when set, that PEM CA is trusted besides the system roots and
	// documents on loopback addresses are allowed. Still HTTPS only, and
	// every other non-public address is still refused.
	TestCAFile string
	// Resolver looks host names up; nil = the dialer's own resolution.
	// Tests map names to addresses with it: every address it returns is
	// still checked when dialled.
	Resolver HostResolver
}

// HostResolver looks up a host's addresses. *net.Resolver is one.
type HostResolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// ClientDocFetcher fetches and validates Client ID Metadata Documents. It
// is safe for concurrent use.
type ClientDocFetcher struct {
	client        *http.Client
	timeout       time.Duration
	maxBytes      int64
	allowLoopback bool // TestCAFile: a loopback literal passes too
}

// NewClientDocFetcher returns a fetcher with its own transport: no proxy,
// a dialer that connects only to public unicast addresses, TLS 1.2 or later.
// It fails only when TestCAFile cannot be read or holds no certificate.
func NewClientDocFetcher(o FetcherOptions) (*ClientDocFetcher, error) {
	f := &ClientDocFetcher{timeout: cmp.Or(o.Timeout, docTimeout), maxBytes: o.MaxBytes}
	if f.maxBytes <= 0 {
		f.maxBytes = maxMetadataBytes
	}
	allowLoopback := o.TestCAFile != ""
	f.allowLoopback = allowLoopback
	var roots *x509.CertPool // nil: the system roots
	if o.TestCAFile != "" {
		pem, err := os.ReadFile(o.TestCAFile)
		if err != nil {
			return nil, fmt.Errorf("client metadata test CA: %w", err)
		}
		if roots, err = x509.SystemCertPool(); err != nil {
			roots = x509.NewCertPool()
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client metadata test CA %s: no PEM certificate", o.TestCAFile)
		}
	}
	d := &net.Dialer{Timeout: f.timeout, Control: func(network, address string, _ syscall.RawConn) error {
		return checkDialAddr(network, address, allowLoopback)
	}}
	dial := d.DialContext
	if o.Resolver != nil {
		dial = resolvingDial(d, o.Resolver)
	}
	f.client = &http.Client{
		Transport: &http.Transport{
			Proxy:                  nil, // never: a proxy would dial for us, unchecked
			DialContext:            dial,
			TLSClientConfig:        &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2:      true,
			TLSHandshakeTimeout:    f.timeout,
			ResponseHeaderTimeout:  f.timeout,
			MaxResponseHeaderBytes: maxMetadataBytes,
			MaxIdleConns:           16,
			IdleConnTimeout:        30 * time.Second,
		},
		CheckRedirect: docRedirect,
	}
	return f, nil
}

// resolvingDial resolves with r and dials each address in turn with d, whose
// Control checks it.
func resolvingDial(d *net.Dialer, r HostResolver) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		var ips []netip.Addr
		if ip, err := netip.ParseAddr(host); err == nil {
			ips = []netip.Addr{ip} // a literal needs no lookup
		} else if ips, err = r.LookupNetIP(ctx, "ip", host); err != nil {
			return nil, err
		}
		first := fmt.Errorf("lookup %s: no addresses", host)
		for i, ip := range ips {
			c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
			if err == nil {
				return c, nil
			}
			if i == 0 {
				first = err
			}
		}
		return nil, first
	}
}

// docRedirect allows at most three redirects, each within the origin of the
// client_id (same scheme, host and port).
func docRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > docMaxRedirects {
		return errDocRedirects
	}
	if req.URL.User != nil || docOrigin(req.URL) != docOrigin(via[0].URL) {
		return errDocCrossOrigin
	}
	return nil
}

func docOrigin(u *url.URL) string {
	port := u.Port()
	if port == "" && strings.EqualFold(u.Scheme, "https") {
		port = "443"
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

func docError(format string, args ...any) *OAuthError {
	return oauthErr("invalid_client", "client metadata document: "+fmt.Sprintf(format, args...))
}

// Fetch fetches the document at clientID and validates it. Every error is an
// *OAuthError (invalid_client, status 400, Redirect false) whose description
// says which rule failed; a malformed clientID is refused before any network
// traffic.
func (f *ClientDocFetcher) Fetch(ctx context.Context, clientID string) (*ClientDoc, error) {
	d, e := f.fetch(ctx, clientID)
	if e != nil {
		return nil, e
	}
	return d, nil
}

func (f *ClientDocFetcher) fetch(ctx context.Context, clientID string) (*ClientDoc, *OAuthError) {
	u, e := parseClientIDURL(clientID)
	if e != nil {
		return nil, e
	}
	// An address literal is checked as the dialer would check what a name
	// resolves to, here, before any traffic: no lookup, no connection.
	if a, err := netip.ParseAddr(u.Hostname()); err == nil && !publicAddr(a, f.allowLoopback) {
		return nil, docError("its host is an address that is not public")
	}
	tctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(tctx, http.MethodGet, clientID, nil)
	if err != nil {
		return nil, docError("the client_id is not a valid URL")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "Continuo")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, f.fetchError(ctx, tctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, docError("the server answered HTTP %d, not 200", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !jsonMediaType(ct) {
		return nil, docError("the Content-Type %s is not JSON", clipRemote(ct))
	}
	if resp.ContentLength > f.maxBytes {
		return nil, docError("the document is larger than %d bytes", f.maxBytes)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.maxBytes+1))
	if err != nil {
		return nil, f.fetchError(ctx, tctx, err)
	}
	if int64(len(body)) > f.maxBytes {
		return nil, docError("the document is larger than %d bytes", f.maxBytes)
	}
	doc, e := parseClientDoc(clientID, u, body)
	if e != nil {
		return nil, e
	}
	doc.MaxAge = docCacheAge(resp.Header.Values("Cache-Control"))
	return doc, nil
}

// fetchError says why a request failed without echoing the underlying
// error, which may name internal addresses.
func (f *ClientDocFetcher) fetchError(ctx, tctx context.Context, err error) *OAuthError {
	var (
		dnsErr  *net.DNSError
		certErr *tls.CertificateVerificationError
		netErr  net.Error
	)
	switch {
	case errors.Is(err, errDocAddress):
		return docError("its host resolves to an address that is not public")
	case errors.Is(err, errDocRedirects):
		return docError("more than %d redirects", docMaxRedirects)
	case errors.Is(err, errDocCrossOrigin):
		return docError("redirected to another origin")
	case ctx.Err() != nil:
		return docError("the fetch was cancelled")
	case tctx.Err() != nil || errors.As(err, &netErr) && netErr.Timeout():
		// The transport's own timeouts (dial, TLS handshake, headers) are
		// the same length and may fire a moment before the deadline does.
		return docError("the fetch timed out after %s", f.timeout)
	case errors.As(err, &dnsErr):
		return docError("its host could not be resolved")
	case errors.As(err, &certErr):
		return docError("its TLS certificate is not trusted")
	}
	return docError("it could not be fetched")
}

// jsonMediaType accepts application/json and application/*+json, with any
// parameters.
func jsonMediaType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil && !errors.Is(err, mime.ErrInvalidMediaParameter) {
		return false
	}
	return mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")
}

// docCacheAge is how long a document may be used, from its Cache-Control:
// max-age clamped to [5 min, 24 h], 1 h without one, 0 (refetch every
// time) for no-store or no-cache.
func docCacheAge(headers []string) time.Duration {
	age := docDefaultAge
	for _, h := range headers {
		for _, d := range strings.Split(h, ",") {
			name, value, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "no-store", "no-cache":
				return 0
			case "max-age":
				n, err := strconv.ParseUint(strings.Trim(strings.TrimSpace(value), `"`), 10, 64)
				switch {
				case errors.Is(err, strconv.ErrRange) || err == nil && n > uint64(docMaxAge/time.Second):
					age = docMaxAge
				case err == nil:
					age = max(time.Duration(n)*time.Second, docMinAge)
				}
			}
		}
	}
	return age
}

// parseClientIDURL checks a client_id that names a metadata document: an
// https URL of at most 512 bytes with a host and a path other than "/", no
// fragment, no user info and no dot segments.
func parseClientIDURL(clientID string) (*url.URL, *OAuthError) {
	switch {
	case len(clientID) > continuo.MaxClientIDBytes:
		return nil, docError("the client_id must be at most %d bytes", continuo.MaxClientIDBytes)
	case !strings.HasPrefix(clientID, "https://"):
		return nil, docError("the client_id must be an https URL")
	case strings.Contains(clientID, "#"):
		return nil, docError("the client_id must not have a fragment")
	case !uriChars(clientID):
		return nil, docError("the client_id may contain only URI characters (RFC 3986)")
	}
	u, err := url.Parse(clientID)
	switch {
	case err != nil:
		return nil, docError("the client_id is not a valid URL")
	case u.User != nil:
		return nil, docError("the client_id must not contain user info")
	case u.Hostname() == "":
		return nil, docError("the client_id must have a host")
	case u.EscapedPath() == "" || u.EscapedPath() == "/":
		return nil, docError("the client_id must have a path")
	case !plainHost(u.Hostname()):
		return nil, docError("the client_id's host must be a DNS name, a dotted-decimal IPv4 address or a bracketed IPv6 address")
	}
	for _, seg := range strings.Split(u.EscapedPath(), "/") {
		if s, err := url.PathUnescape(seg); err != nil || s == "." || s == ".." {
			return nil, docError("the client_id must not have dot segments")
		}
	}
	return u, nil
}

// plainHost reports whether a client_id's host is spelt in a way every
// parser reads alike: a DNS name, an IPv4 address in four decimal parts
// without leading zeros, or an IPv6 address. A host that ends in a number
// is read as IPv4 by URL parsers (WHATWG), by inet_aton and by the
// system's getaddrinfo, in forms netip does not accept — 2130706433,
// 0x7f000001, 0177.0.0.1, 127.1, 127.0.0.1. — which the fetcher would hand
// to the resolver as a name: the system resolver may read it as an
// address nobody checked, or send it out as a DNS query. Those are
// refused, as is anything with a colon that is not an IPv6 address.
func plainHost(host string) bool {
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	if strings.Contains(host, ":") {
		return false
	}
	labels := strings.Split(host, ".")
	last := labels[len(labels)-1]
	if last == "" && len(labels) > 1 { // a trailing dot
		last = labels[len(labels)-2]
	}
	return !numericLabel(last)
}

// numericLabel reports whether a host label is a number as WHATWG's IPv4
// parser reads one: decimal digits, or 0x followed by hexadecimal digits
// (none at all included).
func numericLabel(l string) bool {
	digits := "0123456789"
	if len(l) >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X') {
		l, digits = l[2:], "0123456789abcdefABCDEF"
		if l == "" {
			return true
		}
	}
	if l == "" {
		return false
	}
	for _, c := range l {
		if !strings.ContainsRune(digits, c) {
			return false
		}
	}
	return true
}

// parseClientDoc validates a fetched document against its URL.
func parseClientDoc(clientID string, u *url.URL, body []byte) (*ClientDoc, *OAuthError) {
	m, e := metaObject(body)
	if e != nil {
		return nil, docError("%s", e.Description)
	}
	var id *string
	if raw, ok := m["client_id"]; !ok || json.Unmarshal(raw, &id) != nil || id == nil {
		return nil, docError("client_id is required and must be a string")
	}
	if *id != clientID {
		return nil, docError("client_id %s does not equal the document URL", clipRemote(*id))
	}
	for _, k := range []string{"client_secret", "client_secret_expires_at"} {
		if _, ok := m[k]; ok {
			return nil, docError("%s is not allowed: a metadata document client is public", k)
		}
	}
	fs, e := metaFields(m)
	if e != nil {
		return nil, docError("%s", e.Description)
	}
	if fs.authMethod != nil && *fs.authMethod != continuo.AuthMethodNone {
		return nil, docError("token_endpoint_auth_method must be none, not %s", clipRemote(*fs.authMethod))
	}
	name := fs.name
	if name == "" {
		name = u.Host
	}
	return &ClientDoc{ClientID: clientID, Name: name, RedirectURIs: fs.redirectURIs, AuthMethod: continuo.AuthMethodNone,
		Scopes: fs.scopes, Raw: body}, nil
}
