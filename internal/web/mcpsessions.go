package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Stateful MCP sessions across replicas.
//
// The SDK keeps a stateful session in the memory of the process that
// created it. Behind a load balancer without sticky routing, the next
// request of that session may reach another replica (or the same one after
// a restart). Rather than require sticky sessions, every replica can serve
// every session: session IDs are signed with a key all replicas share
// through the database, and a request whose session this process does not
// hold, but whose ID carries a valid signature, is served statelessly — a
// temporary session with the client's protocol version, exactly what the
// SDK does for sessionless clients. Tools need nothing else from a session:
// its ID (the swarm's carrier identity) travels in the header on every
// request. What such a request cannot have is a standalone GET stream on
// this replica (405, which clients accept) or server-to-client requests,
// which Continuo does not make.

const mcpSessionHeader = "Mcp-Session-Id"

// MCPSessions issues and recognises signed session IDs. The zero value is not
// usable; see NewMCPSessions.
type MCPSessions struct {
	key []byte
	now func() time.Time

	mu    sync.Mutex
	local map[string]*held // sessions this process holds
	// ended are sessions ended here by DELETE, for the idle time: their
	// requests get 404 (the SDK's), not the fallback's service.
	ended map[string]time.Time
	// Caps on held sessions (Limits); the idle time is the SDK's session
	// timeout, so both forget a session at the same time.
	max, perPrincipal int
	idle              time.Duration
	// live, when set, lists the stateful sessions the SDK holds: a session
	// holds its place under the caps exactly while the SDK holds it, so
	// one the SDK ended on its own (an initialize it refused, its idle
	// timer, a failed connection) frees it at once.
	live func() map[string]bool
}

// held is a session this process holds: whose it is, and when it was last
// used.
type held struct {
	principal string // "" until its initialize has answered
	seen      time.Time
}

// maxLocal bounds the set of local session IDs remembered whatever the
// caps; past it an arbitrary one is forgotten (its requests are then
// served statelessly, which is always correct).
const maxLocal = 1 << 16

// NewMCPSessions returns a session ID issuer for key (at least 32 bytes, the
// same on every replica), with the default caps.
func NewMCPSessions(key []byte) *MCPSessions {
	l := Limits{}.withDefaults()
	return &MCPSessions{key: key, now: time.Now, local: map[string]*held{}, ended: map[string]time.Time{},
		max: l.MaxMCPSessions, perPrincipal: l.MaxMCPSessionsPerPrincipal, idle: l.MCPSessionIdle}
}

// track makes the stateful sessions of e's endpoints the ones that count
// (see live).
func (s *MCPSessions) track(e *mcpserver.Endpoints) {
	s.mu.Lock()
	s.live = e.SessionIDs
	s.mu.Unlock()
}

// limit sets the caps and the idle time.
func (s *MCPSessions) limit(l Limits) {
	s.mu.Lock()
	s.max, s.perPrincipal, s.idle = l.MaxMCPSessions, l.MaxMCPSessionsPerPrincipal, l.MCPSessionIdle
	s.mu.Unlock()
}

// Count returns how many sessions this process holds.
func (s *MCPSessions) Count() int {
	live := s.liveNow()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep(live)
	return len(s.local)
}

// liveNow lists the sessions the SDK holds now; nil when not tracked. It
// is read before s.mu is taken: the SDK takes its own lock.
func (s *MCPSessions) liveNow() map[string]bool {
	s.mu.Lock()
	live := s.live
	s.mu.Unlock()
	if live == nil {
		return nil
	}
	return live()
}

// sweep forgets sessions idle for longer than the SDK keeps them, ended
// ones after as long, and, given what the SDK holds (live, not nil), every
// session it no longer holds.
func (s *MCPSessions) sweep(live map[string]bool) {
	if live != nil {
		for id := range s.local {
			if !live[id] {
				delete(s.local, id)
			}
		}
	}
	cutoff := s.now().Add(-s.idle)
	for id, h := range s.local {
		if h.seen.Before(cutoff) {
			delete(s.local, id)
		}
	}
	for id, at := range s.ended {
		if at.Before(cutoff) {
			delete(s.ended, id)
		}
	}
}

// admit says whether principal may open one more session, and why not.
func (s *MCPSessions) admit(principal string) *continuo.Error {
	live := s.liveNow()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep(live)
	if len(s.local) >= s.max {
		return continuo.Errorf(continuo.CodeCapacityFull, "the server holds its maximum of %d MCP sessions; close idle ones or use the stateless protocol", s.max).With("limit", s.max)
	}
	n := 0
	for _, h := range s.local {
		if h.principal == principal {
			n++
		}
	}
	if n >= s.perPrincipal {
		return continuo.Errorf(continuo.CodeCapacityFull, "you hold the maximum of %d open MCP sessions; close idle ones (they also expire after %s without requests)", s.perPrincipal, s.idle).With("limit", s.perPrincipal)
	}
	return nil
}

// adopt records a session the stateful handler has just created, and whose
// it is, unless the SDK ended it already (an initialize it refused: it
// answered with the session's ID, then closed the session).
func (s *MCPSessions) adopt(id, principal string) {
	if live := s.liveNow(); live != nil && !live[id] {
		s.Forget(id)
		return
	}
	s.record(id, principal)
}

// record holds id for principal under the caps.
func (s *MCPSessions) record(id, principal string) {
	s.mu.Lock()
	if len(s.local) >= maxLocal {
		for k := range s.local { // forget an arbitrary one
			delete(s.local, k)
			break
		}
	}
	s.local[id] = &held{principal: principal, seen: s.now()}
	s.mu.Unlock()
}

var b64 = base64.RawURLEncoding

func (s *MCPSessions) sign(nonce string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("continuo/mcp-session/v1\x00" + nonce))
	return b64.EncodeToString(m.Sum(nil)[:16])
}

// NewID returns a new signed session ID. It is the SDK's GetSessionID; the
// router adopts the session once the SDK has created it.
func (s *MCPSessions) NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	nonce := b64.EncodeToString(b[:])
	return nonce + "." + s.sign(nonce)
}

// Valid reports whether id was issued by a replica sharing the key.
func (s *MCPSessions) Valid(id string) bool {
	nonce, sig, ok := strings.Cut(id, ".")
	if !ok || len(id) > 128 {
		return false
	}
	return hmac.Equal([]byte(sig), []byte(s.sign(nonce)))
}

// Local reports whether this process holds the session id, and marks it
// used.
func (s *MCPSessions) Local(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.local[id]
	if ok {
		h.seen = s.now()
	}
	return ok
}

// Forget drops id from the local set (the SDK no longer holds it).
func (s *MCPSessions) Forget(id string) {
	s.mu.Lock()
	delete(s.local, id)
	s.mu.Unlock()
}

// end drops id from the local set and remembers it ended (DELETE).
func (s *MCPSessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.local, id)
	if len(s.ended) >= maxLocal {
		s.sweep(nil)
		for k := range s.ended { // still full: forget an arbitrary one
			delete(s.ended, k)
			break
		}
	}
	s.ended[id] = s.now()
}

// endedHere reports whether id was ended here.
func (s *MCPSessions) endedHere(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.ended[id]
	return ok
}

// supportedVersions are the protocol versions served, newest first.
var supportedVersions = mcp.SupportedProtocolVersions()

// route picks the handler of an MCP request: a 400 for a protocol version
// the SDK does not serve (looked up, never compared by string order);
// stateless for the stateless versions; the stateful handler for new
// sessions and for sessions this process holds; the stateless fallback for
// a validly signed session of another replica; and the stateful handler
// (which answers 404, making the client start over) for a session ended
// here and for anything else.
func (s *MCPSessions) route(stateful, stateless, streaming, fallback http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch v := r.Header.Get("Mcp-Protocol-Version"); {
		case v == "": // initialize, or a client of 2025-03-26
		case !slices.Contains(supportedVersions, v):
			v, _ = redact.String(v)
			if len(v) > 64 {
				v = strings.ToValidUTF8(v[:64], "")
			}
			writeProblem(w, r.Context(), http.StatusBadRequest, mcp.CodeUnsupportedProtocolVersion,
				continuo.Errorf(continuo.CodeInvalidInput, "unsupported protocol version %q; supported: %s", v, strings.Join(supportedVersions, ", ")),
				mcp.UnsupportedProtocolVersionData{Supported: supportedVersions, Requested: v})
			return
		case v >= statelessFrom && wantsProgress(r):
			streaming.ServeHTTP(w, r)
			return
		case v >= statelessFrom:
			stateless.ServeHTTP(w, r)
			return
		}
		id := r.Header.Get(mcpSessionHeader)
		switch {
		case id == "":
			// A new session, if this is an initialize: within the caps.
			c, _ := r.Context().Value(callerKey{}).(*continuo.Caller)
			principal := ""
			if c != nil {
				principal = c.PrincipalID
			}
			if r.Method == http.MethodPost {
				if e := s.admit(principal); e != nil {
					writeError(w, http.StatusTooManyRequests, e)
					return
				}
			}
			// The session is recorded as its response's header goes out,
			// before the client can ask for another (recording it after
			// ServeHTTP let a fast client's second initialize in under the
			// cap), and dropped again once the SDK has refused it.
			aw := &adoptingWriter{ResponseWriter: w, adopt: func(id string) { s.record(id, principal) }}
			stateful.ServeHTTP(aw, r)
			if nid := w.Header().Get(mcpSessionHeader); nid != "" {
				s.adopt(nid, principal)
			}
		case s.Local(id):
			rec := &statusOnly{ResponseWriter: w}
			stateful.ServeHTTP(rec, r)
			switch {
			case rec.status == http.StatusNotFound:
				s.Forget(id) // expired here; its next request is served statelessly
			case r.Method == http.MethodDelete && rec.status < 300:
				s.end(id)
			}
		case s.endedHere(id):
			stateful.ServeHTTP(w, r) // which no longer holds it: 404
		case s.Valid(id):
			if r.Method == http.MethodDelete { // nothing is held here to end
				w.WriteHeader(http.StatusNoContent)
				return
			}
			fallback.ServeHTTP(w, r)
		default:
			stateful.ServeHTTP(w, r)
		}
	})
}

// statusOnly remembers the status code; it passes Flush through for
// server-sent events.
type statusOnly struct {
	http.ResponseWriter
	status int
}

func (r *statusOnly) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusOnly) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *statusOnly) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// adoptingWriter calls adopt with the session ID of a response as its
// header is written, before the client can read it.
type adoptingWriter struct {
	http.ResponseWriter
	adopt func(id string)
	done  bool
}

func (w *adoptingWriter) WriteHeader(code int) {
	if !w.done {
		w.done = true
		if id := w.Header().Get(mcpSessionHeader); id != "" {
			w.adopt(id)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *adoptingWriter) Write(b []byte) (int, error) {
	if !w.done {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *adoptingWriter) Flush() {
	if !w.done {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *adoptingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
