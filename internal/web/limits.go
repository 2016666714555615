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
	"github.com/continuo-dev/continuo/internal/rpcwire"
)

// Limits bound what one client can make the server hold.
type Limits struct {
	// MaxBodyBytes bounds an MCP request body; 0 means 4 MiB.
	MaxBodyBytes int64
	// BodyTimeout bounds how long reading one request body may take (a
	// client sending a body at a byte a second is cut off); 0 means 30 s.
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

// bodies reads each request body in full before the MCP handler sees it,
// within a deadline and a bound on how many are read at once, so that slow
// or huge bodies cannot pin connections and memory: the handler gets the
// bytes in memory, already bounded by MaxBodyBytes.
func bodies(l Limits, next http.Handler) http.Handler {
	slots := make(chan struct{}, l.MaxInFlightBodies)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.Method == http.MethodGet {
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
		_ = rc.SetReadDeadline(time.Time{}) // the response may be a long stream
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
