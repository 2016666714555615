package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestSessionsSignedIDs: IDs issued with one key are valid wherever that
// key is shared (another replica) and nowhere else; a tampered ID is not.
func TestSessionsSignedIDs(t *testing.T) {
	key := make([]byte, 32)
	key[0] = 1
	a, b := NewMCPSessions(key), NewMCPSessions(key)
	other := NewMCPSessions(make([]byte, 32))
	id := a.NewID()
	a.adopt(id, "prn_x")
	if !a.Local(id) || b.Local(id) {
		t.Errorf("Local: issuer %v, other replica %v; want true, false", a.Local(id), b.Local(id))
	}
	if !b.Valid(id) || other.Valid(id) {
		t.Errorf("Valid: replica with the key %v, with another key %v; want true, false", b.Valid(id), other.Valid(id))
	}
	for _, bad := range []string{"", "x", id + "x", "A" + id[1:], id[:len(id)-1] + "A", "nodot"} {
		if bad != id && b.Valid(bad) {
			t.Errorf("Valid(%q) = true", bad)
		}
	}
	if a.NewID() == id {
		t.Error("two IDs are the same")
	}
	a.Forget(id)
	if a.Local(id) {
		t.Error("Forget left the ID local")
	}
}

// TestSessionsRoute: new sessions and local ones go to the stateful
// handler, a signed session of another replica to the fallback (DELETE is
// answered here), anything else to the stateful handler (which says 404),
// stateless protocol versions to the stateless handler, and unknown versions
// nowhere; a session the stateful handler no longer knows is forgotten.
func TestSessionsRoute(t *testing.T) {
	key := make([]byte, 32)
	s, peer := NewMCPSessions(key), NewMCPSessions(key)
	local, foreign := s.NewID(), peer.NewID()
	s.adopt(local, "prn_x")
	var got string
	named := func(name string, status int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = name; w.WriteHeader(status) })
	}
	h := s.route(named("stateful", http.StatusOK), named("stateless", http.StatusOK), named("streaming", http.StatusOK),
		named("fallback", http.StatusOK))
	progress := false
	do := func(method, id, version string) (string, int) {
		got = ""
		r := httptest.NewRequest(method, "/mcp", nil)
		if progress {
			r = r.WithContext(context.WithValue(r.Context(), progressKey{}, true))
		}
		if id != "" {
			r.Header.Set(mcpSessionHeader, id)
		}
		if version != "" {
			r.Header.Set("Mcp-Protocol-Version", version)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return got, w.Code
	}
	for _, c := range []struct {
		method, id, version, want string
	}{
		{"POST", "", "", "stateful"},
		{"POST", local, "2025-11-25", "stateful"},
		{"POST", foreign, "2025-11-25", "fallback"},
		{"GET", foreign, "2025-11-25", "fallback"},
		{"POST", "forged.id", "", "stateful"},
		{"POST", "", "2026-07-28", "stateless"},
	} {
		if h, _ := do(c.method, c.id, c.version); h != c.want {
			t.Errorf("%s with session %q, version %q: %s, want %s", c.method, c.id, c.version, h, c.want)
		}
	}
	// A stateless request with a progress token gets a stream; a stateful
	// one is its session's business.
	progress = true
	if h, _ := do("POST", "", "2026-07-28"); h != "streaming" {
		t.Errorf("stateless with a progress token: %s, want streaming", h)
	}
	if h, _ := do("POST", local, "2025-11-25"); h != "stateful" {
		t.Errorf("stateful with a progress token: %s, want stateful", h)
	}
	progress = false
	// A version the SDK does not serve is refused here, whatever its
	// string order: "garbage" and "9" sort after "2026-07-28".
	for _, v := range []string{"garbage", "9", "2099-01-01", "2025-11-25x"} {
		if h, code := do("POST", "", v); h != "" || code != http.StatusBadRequest {
			t.Errorf("version %q: handler %q, status %d; want refused here with 400", v, h, code)
		}
	}
	if h, code := do("DELETE", foreign, ""); h != "" || code != http.StatusNoContent {
		t.Errorf("DELETE of another replica's session: handler %q, status %d; want answered here with 204", h, code)
	}
	// A session the client ended here stays ended: its next request goes to
	// the stateful handler, which answers 404, not to the fallback, which
	// would serve it.
	ended := s.NewID()
	s.adopt(ended, "prn_x")
	if h, _ := do("DELETE", ended, "2025-11-25"); h != "stateful" {
		t.Errorf("DELETE of a local session: %s, want stateful", h)
	}
	if h, _ := do("POST", ended, "2025-11-25"); h != "stateful" {
		t.Errorf("a request of a session ended here: %s, want stateful (404)", h)
	}
	h404 := s.route(named("stateful", http.StatusNotFound), nil, nil, nil)
	r := httptest.NewRequest("POST", "/mcp", nil)
	r.Header.Set(mcpSessionHeader, local)
	h404.ServeHTTP(httptest.NewRecorder(), r)
	if s.Local(local) {
		t.Error("a session the stateful handler no longer holds stayed local")
	}
}
