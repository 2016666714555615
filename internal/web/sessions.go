package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
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

const sessionHeader = "Mcp-Session-Id"

// Sessions issues and recognises signed session IDs. The zero value is not
// usable; see NewSessions.
type Sessions struct {
	key []byte

	mu    sync.Mutex
	local map[string]struct{} // IDs of sessions created by this process
}

// maxLocal bounds the set of local session IDs remembered; past it the
// oldest are forgotten (their requests are then served statelessly, which
// is always correct).
const maxLocal = 1 << 16

// NewSessions returns a session ID issuer for key (at least 32 bytes, the
// same on every replica).
func NewSessions(key []byte) *Sessions {
	return &Sessions{key: key, local: map[string]struct{}{}}
}

var b64 = base64.RawURLEncoding

func (s *Sessions) sign(nonce string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("continuo/mcp-session/v1\x00" + nonce))
	return b64.EncodeToString(m.Sum(nil)[:16])
}

// NewID returns a new signed session ID and remembers it as local. It is
// the SDK's GetSessionID.
func (s *Sessions) NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	nonce := b64.EncodeToString(b[:])
	id := nonce + "." + s.sign(nonce)
	s.mu.Lock()
	if len(s.local) >= maxLocal {
		for k := range s.local { // forget an arbitrary one
			delete(s.local, k)
			break
		}
	}
	s.local[id] = struct{}{}
	s.mu.Unlock()
	return id
}

// Valid reports whether id was issued by a replica sharing the key.
func (s *Sessions) Valid(id string) bool {
	nonce, sig, ok := strings.Cut(id, ".")
	if !ok || len(id) > 128 {
		return false
	}
	return hmac.Equal([]byte(sig), []byte(s.sign(nonce)))
}

// Local reports whether this process created the session id.
func (s *Sessions) Local(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.local[id]
	return ok
}

// Forget drops id from the local set (the SDK no longer holds it).
func (s *Sessions) Forget(id string) {
	s.mu.Lock()
	delete(s.local, id)
	s.mu.Unlock()
}

// route picks the handler of an MCP request: stateless for stateless
// protocol versions; the stateful handler for new sessions and for sessions
// this process holds; the stateless fallback for a validly signed session
// of another replica; and the stateful handler (which answers 404, making
// the client start over) for anything else.
func (s *Sessions) route(stateful, stateless, fallback http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("Mcp-Protocol-Version"); v >= statelessFrom {
			stateless.ServeHTTP(w, r)
			return
		}
		id := r.Header.Get(sessionHeader)
		switch {
		case id == "" || s.Local(id):
			rec := &statusOnly{ResponseWriter: w}
			stateful.ServeHTTP(rec, r)
			if id != "" && rec.status == http.StatusNotFound {
				s.Forget(id) // expired here; its next request is served statelessly
			}
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
