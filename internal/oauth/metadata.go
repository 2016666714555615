package oauth

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/continuo-dev/continuo"
)

// The two metadata documents a client reads before it starts the flow:
// what protects /mcp (RFC 9728) and how to talk to the authorization
// server (RFC 8414). Both are public and the same for everyone.

func (e *endpoints) protectedResource(w http.ResponseWriter, r *http.Request) {
	writeMetadata(w, map[string]any{
		"resource":                 e.srv.Resource(),
		"authorization_servers":    []string{e.srv.Issuer()},
		"bearer_methods_supported": []string{"header"},
		"scopes_supported":         continuo.OAuthScopes(),
		"resource_name":            "Continuo",
	})
}

func (e *endpoints) authorizationServer(w http.ResponseWriter, r *http.Request) {
	methods := []string{continuo.AuthMethodNone, continuo.AuthMethodPost, continuo.AuthMethodBasic}
	writeMetadata(w, map[string]any{
		"issuer":                                         e.srv.Issuer(),
		"authorization_endpoint":                         e.srv.Issuer() + "/oauth/authorize",
		"token_endpoint":                                 e.srv.Issuer() + "/oauth/token",
		"registration_endpoint":                          e.srv.Issuer() + "/oauth/register",
		"revocation_endpoint":                            e.srv.Issuer() + "/oauth/revoke",
		"response_types_supported":                       []string{"code"},
		"response_modes_supported":                       []string{"query"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          methods,
		"revocation_endpoint_auth_methods_supported":     methods,
		"scopes_supported":                               continuo.OAuthScopes(),
		"client_id_metadata_document_supported":          true,
		"authorization_response_iss_parameter_supported": true,
	})
}

// writeMetadata writes a metadata document, cacheable for five minutes:
// it changes only when the server's configuration does.
func writeMetadata(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_ = json.NewEncoder(w).Encode(v)
}

// cors lets browser-based clients read a response: the metadata and the
// token, revocation and registration endpoints take no cookies, so any
// origin may call them.
func cors(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Expose-Headers", "WWW-Authenticate, Retry-After")
		next(w, r)
	}
}

// preflight answers a CORS preflight for a route of the given method.
func preflight(method string) http.HandlerFunc {
	methods := strings.Join([]string{method, "OPTIONS"}, ", ")
	return func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Allow-Methods", methods)
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, MCP-Protocol-Version")
		h.Set("Access-Control-Max-Age", "86400")
		h.Set("Allow", methods)
		w.WriteHeader(http.StatusNoContent)
	}
}
