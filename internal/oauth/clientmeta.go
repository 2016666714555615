package oauth

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/continuo-dev/continuo"
)

// The rules a client's metadata follows, shared by Client ID Metadata
// Documents (clientdoc.go) and dynamic registration (RFC 7591): redirect
// URIs, scopes and the fields both kinds of client describe themselves with.

const (
	maxMetadataBytes    = 16 << 10
	maxRedirectURIBytes = 2048
	maxClientNameBytes  = 256
)

// ClientDoc is a client's validated metadata: a fetched Client ID Metadata
// Document or a registration request.
type ClientDoc struct {
	ClientID     string // the document's URL; "" for a registration (the service issues it)
	Name         string // documents: the URL's host when absent; registrations: "" when absent
	RedirectURIs []string
	AuthMethod   string           // one of continuo.AuthMethods(); documents: always none
	Scopes       []continuo.Scope // the client's ceiling, in continuo.OAuthScopes order
	Raw          []byte           // the document or request as received (at most 16 KiB)
	// MaxAge is how long a fetched document may be used before it is
	// fetched again: its Cache-Control max-age clamped to [5 min, 24 h],
	// 1 h without one, 0 for no-store or no-cache. 0 for registrations.
	MaxAge time.Duration
}

// The grant and response types a client may declare: the only ones the
// server implements.
var (
	metaGrantTypes    = []string{"authorization_code", "refresh_token"}
	metaResponseTypes = []string{"code"}
)

// metaSchemesRefused are the schemes a redirect URI may not use as a
// private-use scheme: http and https have their own rules, the rest run
// code, read local files or leave the browser somewhere no client listens.
var metaSchemesRefused = []string{"http", "https", "javascript", "data", "file", "vbscript", "about", "blob", "ftp", "ws", "wss"}

// metaLoopbackHosts are the hosts on which a redirect URI may be plain http
// and on which its port may differ from the registered one (RFC 8252 §7.3).
var metaLoopbackHosts = []string{"127.0.0.1", "[::1]", "localhost"}

func metaError(format string, args ...any) *OAuthError {
	return oauthErr("invalid_client_metadata", fmt.Sprintf(format, args...))
}

func redirectError(format string, args ...any) *OAuthError {
	return oauthErr("invalid_redirect_uri", fmt.Sprintf(format, args...))
}

// checkRedirectURI checks one redirect URI: an https URL; http only on a
// loopback host; or a private-use scheme (RFC 8252 §7.1). Never a fragment,
// never user info, at most 2048 bytes.
func checkRedirectURI(u string) *OAuthError {
	switch {
	case u == "":
		return redirectError("a redirect URI must not be empty")
	case len(u) > maxRedirectURIBytes:
		return redirectError("a redirect URI must be at most %d bytes", maxRedirectURIBytes)
	case strings.Contains(u, "#"):
		return redirectError("a redirect URI must not have a fragment")
	case !uriChars(u):
		return redirectError("a redirect URI may contain only URI characters (RFC 3986)")
	}
	scheme, rest, _ := strings.Cut(u, ":")
	if !validScheme(scheme) {
		return redirectError("a redirect URI must be absolute, with a lowercase scheme")
	}
	p, err := url.Parse(u)
	if err != nil {
		return redirectError("a redirect URI must be a valid URI")
	}
	if p.User != nil {
		return redirectError("a redirect URI must not contain user info")
	}
	switch scheme {
	case "https":
		if !strings.HasPrefix(rest, "//") || p.Hostname() == "" {
			return redirectError("an https redirect URI must have a host")
		}
	case "http":
		if _, _, _, ok := splitLoopbackHTTP(u); !ok {
			return redirectError("an http redirect URI is allowed only on a loopback host (127.0.0.1, [::1], localhost)")
		}
	default:
		if slices.Contains(metaSchemesRefused, scheme) {
			return redirectError("the scheme %s is not allowed in a redirect URI", clipRemote(scheme))
		}
		if rest == "" {
			return redirectError("a redirect URI must have more than a scheme")
		}
	}
	return nil
}

// MatchRedirectURI reports whether got is one of the registered redirect
// URIs: the exact string, except that on a loopback http URI
// (127.0.0.1, [::1], localhost) the port may differ (RFC 8252 §7.3) while
// the scheme, host, path and query still match exactly.
func MatchRedirectURI(registered []string, got string) bool {
	if got == "" {
		return false
	}
	if slices.Contains(registered, got) {
		return true
	}
	host, _, rest, ok := splitLoopbackHTTP(got)
	if !ok {
		return false
	}
	for _, r := range registered {
		if h, _, rr, ok := splitLoopbackHTTP(r); ok && h == host && rr == rest {
			return true
		}
	}
	return false
}

// splitLoopbackHTTP splits an http URI on a loopback host into its host,
// its port ("" when absent) and the rest (path and query). ok is false for
// any other URI, and for one with a fragment or a malformed port.
func splitLoopbackHTTP(u string) (host, port, rest string, ok bool) {
	a, found := strings.CutPrefix(u, "http://")
	if !found || strings.Contains(a, "#") || !uriChars(a) {
		return "", "", "", false
	}
	i := strings.IndexAny(a, "/?")
	if i < 0 {
		i = len(a)
	}
	authority, rest := a[:i], a[i:]
	for _, h := range metaLoopbackHosts {
		p, found := strings.CutPrefix(authority, h)
		if !found {
			continue
		}
		if p == "" {
			return h, "", rest, true
		}
		if p, found := strings.CutPrefix(p, ":"); found && validPort(p) {
			return h, p, rest, true
		}
	}
	return "", "", "", false
}

// validPort accepts a decimal port 1..65535 without leading zeros.
func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535 && strconv.Itoa(n) == p
}

// validScheme checks a lowercase URI scheme: [a-z][a-z0-9+.-]*.
func validScheme(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// uriChars reports whether s holds only the characters RFC 3986 allows in
// a URI, with every % starting a percent-encoding. Spaces, quotes,
// backslashes and non-ASCII bytes are out: browsers and servers disagree on
// what they mean.
func uriChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("-._~:/?#[]@!$&'()*+,;=", c) >= 0:
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return false
			}
			i += 2
		default:
			return false
		}
	}
	return true
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// parseClientScope parses a client's scope field, its ceiling: scopes
// separated by spaces. Empty means every OAuth scope. An unknown scope, or
// admin (never granted over OAuth), is invalid_client_metadata. The result
// is in continuo.OAuthScopes order.
func parseClientScope(scope string) ([]continuo.Scope, *OAuthError) {
	all := continuo.OAuthScopes()
	var want []continuo.Scope
	for _, f := range strings.Split(scope, " ") {
		switch sc := continuo.Scope(f); {
		case f == "":
		case sc == continuo.ScopeAdmin:
			return nil, metaError("scope: admin is never granted over OAuth")
		case !slices.Contains(all, sc):
			return nil, metaError("scope: unknown scope %s", clipRemote(f))
		default:
			want = append(want, sc)
		}
	}
	if len(want) == 0 {
		return all, nil
	}
	return slices.DeleteFunc(all, func(s continuo.Scope) bool { return !slices.Contains(want, s) }), nil
}

// ParseRegistration validates a dynamic registration request (RFC 7591
// §2): a JSON object of at most 16 KiB; fields of the wrong type are
// refused, unknown ones ignored. token_endpoint_auth_method defaults to
// client_secret_basic (RFC 7591 §2). Errors are *OAuthError, status 400:
// invalid_redirect_uri for anything wrong with redirect_uris, else
// invalid_client_metadata.
func ParseRegistration(body []byte) (*ClientDoc, error) {
	d, e := parseRegistration(body)
	if e != nil {
		return nil, e
	}
	return d, nil
}

func parseRegistration(body []byte) (*ClientDoc, *OAuthError) {
	m, e := metaObject(body)
	if e != nil {
		return nil, e
	}
	f, e := metaFields(m)
	if e != nil {
		return nil, e
	}
	method := continuo.AuthMethodBasic
	if f.authMethod != nil {
		method = *f.authMethod
	}
	if !slices.Contains(continuo.AuthMethods(), method) {
		return nil, metaError("token_endpoint_auth_method must be none, client_secret_post or client_secret_basic, not %s", clipRemote(method))
	}
	return &ClientDoc{Name: f.name, RedirectURIs: f.redirectURIs, AuthMethod: method, Scopes: f.scopes, Raw: slices.Clone(body)}, nil
}

// metaObject decodes a metadata body into its top-level fields.
func metaObject(body []byte) (map[string]json.RawMessage, *OAuthError) {
	if len(body) > maxMetadataBytes {
		return nil, metaError("the body must be at most %d bytes", maxMetadataBytes)
	}
	// Kept as received (Metadata): text both engines store alike, and
	// PostgreSQL refuses invalid UTF-8 that Go's decoder would let pass.
	if !utf8.Valid(body) {
		return nil, metaError("the body must be UTF-8")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return nil, metaError("the body must be one JSON object")
	}
	return m, nil
}

// clientFields are the checked fields both kinds of client send.
type clientFields struct {
	redirectURIs []string
	authMethod   *string // nil when absent; its value is the caller's to judge
	name         string
	scopes       []continuo.Scope
}

// metaFields reads and checks the fields documents and registrations share.
// A null field counts as absent.
func metaFields(m map[string]json.RawMessage) (*clientFields, *OAuthError) {
	var f clientFields
	uris, ok, e := metaStrings(m, "redirect_uris")
	switch {
	case e != nil:
		return nil, redirectError("%s", e.Description)
	case !ok || len(uris) == 0:
		return nil, redirectError("redirect_uris is required")
	case len(uris) > continuo.MaxRedirectURIs:
		return nil, redirectError("redirect_uris may hold at most %d URIs", continuo.MaxRedirectURIs)
	}
	for i, u := range uris {
		if e := checkRedirectURI(u); e != nil {
			return nil, redirectError("redirect_uris[%d]: %s", i, e.Description)
		}
	}
	f.redirectURIs = uris
	if f.authMethod, e = metaString(m, "token_endpoint_auth_method"); e != nil {
		return nil, e
	}
	for _, t := range []struct {
		key     string
		allowed []string
	}{{"grant_types", metaGrantTypes}, {"response_types", metaResponseTypes}} {
		vs, _, e := metaStrings(m, t.key)
		if e != nil {
			return nil, e
		}
		for _, v := range vs {
			if !slices.Contains(t.allowed, v) {
				return nil, metaError("%s: %s is not supported (only %s)", t.key, clipRemote(v), strings.Join(t.allowed, ", "))
			}
		}
	}
	name, e := metaString(m, "client_name")
	if e != nil {
		return nil, e
	}
	if name != nil {
		if e := checkClientName(*name); e != nil {
			return nil, e
		}
		f.name = *name
	}
	scope, e := metaString(m, "scope")
	if e != nil {
		return nil, e
	}
	if scope == nil {
		scope = new(string)
	}
	if f.scopes, e = parseClientScope(*scope); e != nil {
		return nil, e
	}
	return &f, nil
}

// checkClientName bounds client_name and refuses control and bidirectional
// formatting characters: the consent page shows the name, and those could
// make it read as another client's.
func checkClientName(n string) *OAuthError {
	if len(n) > maxClientNameBytes {
		return metaError("client_name must be at most %d bytes", maxClientNameBytes)
	}
	for _, r := range n {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == utf8.RuneError {
			return metaError("client_name must not contain control or bidirectional formatting characters")
		}
	}
	return nil
}

// metaString reads an optional string field: nil when absent or null.
func metaString(m map[string]json.RawMessage, key string) (*string, *OAuthError) {
	var s *string
	if raw, ok := m[key]; ok && json.Unmarshal(raw, &s) != nil {
		return nil, metaError("%s must be a string", key)
	}
	return s, nil
}

// metaStrings reads an optional array of strings; ok is false when the
// field is absent or null.
func metaStrings(m map[string]json.RawMessage, key string) (vs []string, ok bool, e *OAuthError) {
	raw, found := m[key]
	if !found {
		return nil, false, nil
	}
	var ps []*string
	if json.Unmarshal(raw, &ps) != nil {
		return nil, false, metaError("%s must be an array of strings", key)
	}
	if ps == nil {
		return nil, false, nil
	}
	vs = make([]string, len(ps))
	for i, p := range ps {
		if p == nil {
			return nil, false, metaError("%s must be an array of strings", key)
		}
		vs[i] = *p
	}
	return vs, true, nil
}

// clipRemote quotes a piece of remote content for an error description:
// at most 100 bytes, and only the characters error_description may hold
// (RFC 6749 §5.2: printable ASCII but " and \), others shown as ?.
func clipRemote(s string) string {
	const max = 100
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s) && i < max; i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			c = '?'
		}
		b.WriteByte(c)
	}
	if len(s) > max {
		b.WriteString("...")
	}
	b.WriteByte('\'')
	return b.String()
}
