package web

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/oauth"
	"github.com/continuo-dev/continuo/internal/rpcwire"
)

// Limits bound what one client can make the server hold.
type Limits struct {
	// MaxBodyBytes bounds an MCP request body; 0 means 4 MiB.
	MaxBodyBytes int64
	// MaxFormBytes bounds the body of every other route (the sign-in,
	// consent and dashboard forms, the OAuth token, revocation and
	// registration endpoints); 0 means 16 KiB.
	MaxFormBytes int64
	// BodyTimeout bounds how long reading one request body may take, on
	// every route (a client sending a body at a byte a second is cut off);
	// 0 means 30 s.
	BodyTimeout time.Duration
	// MaxInFlightBodies bounds request bodies being read at once; further
	// requests wait up to SlotWait for a slot, then get 503. 0 means 16.
	MaxInFlightBodies int
	// SlotWait bounds that wait; 0 means 5 s.
	SlotWait time.Duration
	// MaxSessions and MaxSessionsPerPrincipal bound the stateful MCP
	// sessions this process holds; 0 means 2000 and 100.
	MaxSessions, MaxSessionsPerPrincipal int
	// SessionIdle is how long a stateful session may go without a request
	// before it is closed; 0 means 30 minutes.
	SessionIdle time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.MaxBodyBytes == 0 {
		l.MaxBodyBytes = 4 << 20
	}
	if l.MaxFormBytes == 0 {
		l.MaxFormBytes = 16 << 10
	}
	if l.BodyTimeout == 0 {
		l.BodyTimeout = 30 * time.Second
	}
	if l.MaxInFlightBodies == 0 {
		l.MaxInFlightBodies = 16
	}
	if l.SlotWait == 0 {
		l.SlotWait = 5 * time.Second
	}
	if l.MaxSessions == 0 {
		l.MaxSessions = 2000
	}
	if l.MaxSessionsPerPrincipal == 0 {
		l.MaxSessionsPerPrincipal = 100
	}
	if l.SessionIdle == 0 {
		l.SessionIdle = 30 * time.Minute
	}
	return l
}

// bounded is the one place where every request body is bounded, whatever
// the route: before any handler runs, a request that has a body gets a
// read deadline BodyTimeout away (on the connection, through
// http.ResponseController) and a size cap: MaxBodyBytes on the MCP
// endpoints (/mcp and /mcp/x/{toolset}; "/mcp" below means either),
// MaxFormBytes everywhere else. The server's own ReadHeaderTimeout covers
// the headers; nothing covered the body, so a client that sent headers and
// then a byte a second held a connection and its goroutine for as long as
// it liked, and so did a body left unread by a handler that answered
// early (the server reads what is left of it after the handler, to reuse
// the connection).
//
// Off /mcp the body is read here, in full, and the handler gets it in
// memory; the deadline is then lifted (net/http lifts it too once a body
// is read to its end), so that a handler that streams (the dashboard's run
// events) is not cut off. A body that is too large is
// answered 413, one that does not arrive in time 408, each with a
// structured error: OAuth's {error, error_description} on the endpoints
// OAuth clients call, the contract's error object elsewhere.
//
// On /mcp the body is read by bodies, after authentication and under the
// bound on bodies read at once, which lifts the deadline once the body is
// in: a response may be a long stream of server-sent events, and has no
// write deadline. A request /mcp answers without reading its body (no
// token) leaves the rest of it to the server, within the deadline armed
// here.
func bounded(l Limits, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(l.BodyTimeout))
		if mcpPath(r.URL.Path) {
			r.Body = http.MaxBytesReader(nil, r.Body, l.MaxBodyBytes)
			next.ServeHTTP(w, r)
			return
		}
		body, err := readBody(r, l.MaxFormBytes)
		if err != nil {
			bodyFailed(w, r, err, l.MaxFormBytes)
			return
		}
		_ = rc.SetReadDeadline(time.Time{})
		r.Body = body
		next.ServeHTTP(w, r)
	})
}

// mcpPath reports whether path is an MCP endpoint's: /mcp, or a toolset's
// /mcp/x/{toolset}.
func mcpPath(path string) bool { return path == "/mcp" || strings.HasPrefix(path, "/mcp/x/") }

// bodyFailed answers a request whose body could not be read off /mcp: 413
// when it was too large, else 408 (it did not arrive in time, or the
// connection broke, and then nobody reads the answer).
func bodyFailed(w http.ResponseWriter, r *http.Request, err error, limit int64) {
	status, e := http.StatusRequestTimeout, continuo.Errorf(continuo.CodeInvalidInput, "the request body was not received in time")
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		status, e = http.StatusRequestEntityTooLarge, continuo.Errorf(continuo.CodeTooLarge, "the request body exceeds %d bytes", limit).With("limit", limit)
	}
	if code := oauth.BodyCode(r.URL.Path); code != "" {
		oauth.WriteError(w, status, code, e.Message)
		return
	}
	writeProblem(w, r.Context(), status, rpcwire.CodeInvalidRequest, e, nil)
}

// bodies reads each MCP request body in full before the MCP handler sees
// it, within the deadline (re-armed once a slot is free) and a bound on how
// many are read at once, so that slow or huge bodies cannot pin
// connections and memory: the handler gets the bytes in memory, already
// bounded by MaxBodyBytes. A GET with a body (an event stream) has it read
// too, before its stream starts.
func bodies(l Limits, next http.Handler) http.Handler {
	slots := make(chan struct{}, l.MaxInFlightBodies)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		wait, cancel := context.WithTimeout(r.Context(), l.SlotWait)
		defer cancel()
		select {
		case slots <- struct{}{}:
		case <-wait.Done():
			writeProblem(w, r.Context(), http.StatusServiceUnavailable, rpcwire.CodeInternalError,
				continuo.Errorf(continuo.CodeRateLimited, "the server is reading too many request bodies; retry shortly"), nil)
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(l.BodyTimeout))
		body, err := readBody(r, l.MaxBodyBytes)
		<-slots
		if err != nil {
			var tooLarge *http.MaxBytesError
			switch {
			case errors.As(err, &tooLarge):
				writeProblem(w, r.Context(), http.StatusRequestEntityTooLarge, rpcwire.CodeInvalidRequest,
					continuo.Errorf(continuo.CodeTooLarge, "the request body exceeds %d bytes", l.MaxBodyBytes).With("limit", l.MaxBodyBytes), nil)
			default:
				writeProblem(w, r.Context(), http.StatusRequestTimeout, rpcwire.CodeInvalidRequest,
					continuo.Errorf(continuo.CodeInvalidInput, "the request body was not received in time"), nil)
			}
			return
		}
		_ = rc.SetReadDeadline(time.Time{}) // the response may be a long stream
		r.Body = body
		next.ServeHTTP(w, r)
	})
}

// originGuard refuses requests from a browser page of a foreign origin
// (the streamable HTTP transport requires servers to validate Origin): a
// request without Origin (not from a browser) passes, as do loopback
// origins, the public URL's origin and the configured ones.
func originGuard(publicURL string, allowed []string, next http.Handler) http.Handler {
	ok := map[string]bool{}
	for _, o := range append([]string{publicURL}, allowed...) {
		if u, err := url.Parse(o); err == nil && u.Host != "" {
			ok[strings.ToLower(u.Scheme+"://"+u.Host)] = true
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o := r.Header.Get("Origin")
		if o == "" {
			next.ServeHTTP(w, r)
			return
		}
		u, err := url.Parse(o)
		if err == nil && (ok[strings.ToLower(u.Scheme+"://"+u.Host)] || (u.Scheme == "http" || u.Scheme == "https") && loopbackHost(u.Hostname())) {
			next.ServeHTTP(w, r)
			return
		}
		writeError(w, http.StatusForbidden, continuo.Errorf(continuo.CodeForbidden, "requests from this origin are not allowed (see server.allowed_origins)"))
	})
}

func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
