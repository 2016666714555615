package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"

	"github.com/continuo-dev/continuo"
)

// The endpoints clients call directly: token (RFC 6749 §3.2), revocation
// (RFC 7009) and dynamic registration (RFC 7591). Errors are OAuth's JSON
// {error, error_description}; responses that carry secrets are never
// cached.

// endpoints serves them, and the metadata documents, for one Server.
type endpoints struct {
	srv *Server
	log *slog.Logger
	// register bounds dynamic registrations per remote address and in all.
	register *limiter
}

// Routes adds the metadata documents and the endpoints clients call
// directly with handle, each readable from any origin (cors): the web edge
// mounts them behind its host guard and body bounds. The authorization
// endpoint is a page of the web edge's, beside sign-in.
func (s *Server) Routes(handle func(pattern string, h http.HandlerFunc), log *slog.Logger) {
	e := &endpoints{srv: s, log: log, register: newLimiter(s.now, registerPerAddr, registerGlobal)}
	meta := func(path string, h http.HandlerFunc) {
		handle("GET "+path, cors(h))
		handle("OPTIONS "+path, preflight("GET"))
	}
	meta("/.well-known/oauth-protected-resource", e.protectedResource)
	meta("/.well-known/oauth-protected-resource/mcp", e.protectedResource)
	meta("/.well-known/oauth-authorization-server", e.authorizationServer)
	api := func(path string, h http.HandlerFunc) {
		handle("POST "+path, cors(h))
		handle("OPTIONS "+path, preflight("POST"))
	}
	api("/oauth/token", e.token)
	api("/oauth/revoke", e.revoke)
	api("/oauth/register", e.registerClient)
}

func (e *endpoints) token(w http.ResponseWriter, r *http.Request) {
	form, c, ok := e.clientRequest(w, r)
	if !ok {
		return
	}
	resp, err := e.srv.Token(r.Context(), form, c)
	if err != nil {
		e.protocolError(w, r, err, c.Basic)
		return
	}
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, http.StatusOK, resp)
}

func (e *endpoints) revoke(w http.ResponseWriter, r *http.Request) {
	form, c, ok := e.clientRequest(w, r)
	if !ok {
		return
	}
	if err := e.srv.RevokeOAuthToken(r.Context(), form, c); err != nil {
		e.protocolError(w, r, err, c.Basic)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

func (e *endpoints) registerClient(w http.ResponseWriter, r *http.Request) {
	if !e.register.allow(r) {
		w.Header().Set("Retry-After", "60")
		WriteError(w, http.StatusTooManyRequests, "rate_limited", "too many client registrations; retry in a minute")
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		WriteError(w, http.StatusBadRequest, "invalid_client_metadata", "the registration must be sent as application/json")
		return
	}
	body, ok := readSmallBody(w, r, "invalid_client_metadata")
	if !ok {
		return
	}
	reg, err := e.srv.RegisterClient(r.Context(), body)
	if err != nil {
		e.protocolError(w, r, err, false)
		return
	}
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, http.StatusCreated, reg.Response)
}

// clientRequest reads a token or revocation request: a form body (never
// the query, never JSON), each parameter once, and the client's
// credentials from the form or an Authorization: Basic header.
func (e *endpoints) clientRequest(w http.ResponseWriter, r *http.Request) (url.Values, ClientAuth, bool) {
	var c ClientAuth
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		WriteError(w, http.StatusBadRequest, "invalid_request", "the body must be application/x-www-form-urlencoded")
		return nil, c, false
	}
	body, ok := readSmallBody(w, r, "invalid_request")
	if !ok {
		return nil, c, false
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		WriteError(w, http.StatusBadRequest, "invalid_request", "the body is not a valid form")
		return nil, c, false
	}
	for k, v := range form {
		if len(v) > 1 { // RFC 6749 §3.2
			WriteError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("the parameter %s was given more than once", k))
			return nil, c, false
		}
	}
	c = ClientAuth{ID: form.Get("client_id"), Secret: form.Get("client_secret")}
	if id, secret, basic := r.BasicAuth(); basic {
		// RFC 6749 §2.3.1: both are form-encoded before they are joined.
		uid, err1 := url.QueryUnescape(id)
		usecret, err2 := url.QueryUnescape(secret)
		switch {
		case err1 != nil || err2 != nil:
			WriteError(w, http.StatusBadRequest, "invalid_request", "the Basic credentials are not form-encoded")
			return nil, c, false
		case form.Has("client_secret"):
			WriteError(w, http.StatusBadRequest, "invalid_request", "use one client authentication method, not two")
			return nil, c, false
		case form.Has("client_id") && form.Get("client_id") != uid:
			WriteError(w, http.StatusBadRequest, "invalid_request", "client_id differs from the Basic credentials")
			return nil, c, false
		}
		c = ClientAuth{ID: uid, Secret: usecret, Basic: true}
	}
	return form, c, true
}

// readSmallBody reads a body that bounded has read already (bounded in
// size and time) into memory.
func readSmallBody(w http.ResponseWriter, r *http.Request, code string) ([]byte, bool) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		WriteError(w, http.StatusBadRequest, code, "the body could not be read")
		return nil, false
	}
	return body, true
}

// BodyCode is the OAuth error code with which an endpoint that OAuth
// clients call answers a body it could not take (RFC 6749 §5.2, RFC 7009
// §2.2.1, RFC 7591 §3.2.2), so that a client reads the error as it reads
// the endpoint's others; "" for every other path.
func BodyCode(path string) string {
	switch path {
	case "/oauth/token", "/oauth/revoke":
		return "invalid_request"
	case "/oauth/register":
		return "invalid_client_metadata"
	}
	return ""
}

// protocolError writes an error of the Server as OAuth's JSON: an
// *OAuthError as it is, anything else as server_error (logged; its
// text is not shown).
func (e *endpoints) protocolError(w http.ResponseWriter, r *http.Request, err error, basic bool) {
	var oe *OAuthError
	if errors.As(err, &oe) {
		status := oe.Status
		if status == 0 {
			status = http.StatusBadRequest
		}
		if oe.Code == "invalid_client" && basic {
			// RFC 6749 §5.2: a client that tried Basic is told so.
			w.Header().Set("WWW-Authenticate", `Basic realm="continuo"`)
			status = http.StatusUnauthorized
		}
		WriteError(w, status, oe.Code, oe.Description)
		return
	}
	ce := continuo.AsError(err)
	switch ce.Code {
	case continuo.CodeRateLimited:
		WriteError(w, http.StatusTooManyRequests, "rate_limited", ce.Message)
	case continuo.CodeInternal:
		e.log.ErrorContext(r.Context(), "oauth endpoint", "path", r.URL.Path, "err", err)
		WriteError(w, http.StatusInternalServerError, "server_error", "internal error")
	default:
		WriteError(w, http.StatusBadRequest, "invalid_request", ce.Message)
	}
}

// WriteError writes an OAuth error response ({error, error_description}).
func WriteError(w http.ResponseWriter, status int, code, description string) {
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, status, map[string]string{"error": code, "error_description": description})
}

// writeJSON writes v as an uncacheable JSON response.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
