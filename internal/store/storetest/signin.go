package storetest

import (
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// The SignIn section pins store.SignInTx: login links are used once,
// browser sessions revoked once.

func signInTests() []test {
	return []test{
		{"LinkCreateGet", testLoginLinkCreateGet},
		{"LinkDuplicate", testLoginLinkDuplicate},
		{"LinkUse", testLoginLinkUse},
		{"SessionCreateGet", testWebSessionCreateGet},
		{"SessionDuplicate", testWebSessionDuplicate},
		{"SessionRevoke", testWebSessionRevoke},
	}
}

func newLoginLink(principalID, hash string) *continuo.LoginLink {
	return &continuo.LoginLink{ID: continuo.NewID(continuo.PrefixLoginLink, Base), Hash: hash, PrincipalID: principalID,
		CreatedAt: Base, ExpiresAt: Base.Add(10 * time.Minute)}
}

func newWebSession(principalID, hash string) *continuo.WebSession {
	return &continuo.WebSession{ID: continuo.NewID(continuo.PrefixWebSession, Base), Hash: hash, PrincipalID: principalID,
		CreatedAt: Base, ExpiresAt: Base.Add(12 * time.Hour)}
}

func normLoginLink(l continuo.LoginLink) continuo.LoginLink {
	l.CreatedAt, l.ExpiresAt, l.UsedAt = trunc(l.CreatedAt), trunc(l.ExpiresAt), truncPtr(l.UsedAt)
	return l
}

func normWebSession(w continuo.WebSession) continuo.WebSession {
	w.CreatedAt, w.ExpiresAt, w.RevokedAt = trunc(w.CreatedAt), trunc(w.ExpiresAt), truncPtr(w.RevokedAt)
	return w
}

func signInPrincipal(t testing.TB, s store.Store) *continuo.Principal {
	t.Helper()
	return Principal(t, s, Group(t, s, "alpha").ID, "ann")
}

func getLoginLink(t *testing.T, s store.Store, hash string) *continuo.LoginLink {
	t.Helper()
	return mustGet(t, s, "LoginLinkGetByHash", func(tx store.Tx) (*continuo.LoginLink, error) {
		return tx.LoginLinkGetByHash(t.Context(), hash)
	})
}

func getWebSession(t *testing.T, s store.Store, hash string) *continuo.WebSession {
	t.Helper()
	return mustGet(t, s, "WebSessionGetByHash", func(tx store.Tx) (*continuo.WebSession, error) {
		return tx.WebSessionGetByHash(t.Context(), hash)
	})
}

func testLoginLinkCreateGet(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := signInPrincipal(t, s)
	want := newLoginLink(p.ID, "link-1")
	want.CreatedAt, want.ExpiresAt = Base.Add(1500*time.Millisecond), Base.Add(10*time.Minute+1500*time.Millisecond)
	want.Scopes = []continuo.Scope{continuo.ScopeSessionsRead, continuo.ScopeSwarmOwn}
	MustWrite(t, s, func(tx store.Tx) error { return tx.LoginLinkCreate(ctx, want) })
	same(t, "LoginLinkGetByHash", *getLoginLink(t, s, "link-1"), *want, normLoginLink)
	_, err := read(t, s, func(tx store.Tx) (*continuo.LoginLink, error) { return tx.LoginLinkGetByHash(ctx, "no-such-link") })
	wantErr(t, err, store.ErrNotFound, "LoginLinkGetByHash of an unknown hash")
}

func testLoginLinkDuplicate(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := signInPrincipal(t, s)
	first := newLoginLink(p.ID, "link-1")
	MustWrite(t, s, func(tx store.Tx) error { return tx.LoginLinkCreate(ctx, first) })
	err := s.Write(ctx, func(tx store.Tx) error { return tx.LoginLinkCreate(ctx, newLoginLink(p.ID, "link-1")) })
	wantErr(t, err, store.ErrConflict, "LoginLinkCreate with a taken hash")
	dupID := newLoginLink(p.ID, "link-2")
	dupID.ID = first.ID
	err = s.Write(ctx, func(tx store.Tx) error { return tx.LoginLinkCreate(ctx, dupID) })
	wantErr(t, err, store.ErrConflict, "LoginLinkCreate with a taken ID")
	same(t, "link after the refused duplicates", *getLoginLink(t, s, "link-1"), *first, normLoginLink)
}

// LoginLinkUse is guarded: the second use is ErrStale, the first time kept.
func testLoginLinkUse(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := signInPrincipal(t, s)
	l, other := newLoginLink(p.ID, "link-1"), newLoginLink(p.ID, "link-2")
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.LoginLinkCreate(ctx, l); err != nil {
			return err
		}
		return tx.LoginLinkCreate(ctx, other)
	})
	at := Base.Add(time.Minute + 125*time.Millisecond)
	want := *l
	want.UsedAt = &at
	stamp[continuo.LoginLink]{noun: "link", op: "LoginLinkUse", prefix: continuo.PrefixLoginLink, write: store.Tx.LoginLinkUse,
		again: store.ErrStale, norm: normLoginLink}.check(t, s, l.ID, at,
		func() continuo.LoginLink { return *getLoginLink(t, s, l.Hash) }, want,
		func() continuo.LoginLink { return *getLoginLink(t, s, other.Hash) }, *other)
}

func testWebSessionCreateGet(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := signInPrincipal(t, s)
	want := newWebSession(p.ID, "session-1")
	want.CreatedAt, want.ExpiresAt = Base.Add(2500*time.Millisecond), Base.Add(12*time.Hour+2500*time.Millisecond)
	want.Scopes, want.TokenID = []continuo.Scope{continuo.ScopeSessionsRead, continuo.ScopeAdmin}, "tok_1"
	MustWrite(t, s, func(tx store.Tx) error { return tx.WebSessionCreate(ctx, want) })
	same(t, "WebSessionGetByHash", *getWebSession(t, s, "session-1"), *want, normWebSession)
	_, err := read(t, s, func(tx store.Tx) (*continuo.WebSession, error) { return tx.WebSessionGetByHash(ctx, "no-such-session") })
	wantErr(t, err, store.ErrNotFound, "WebSessionGetByHash of an unknown hash")
}

func testWebSessionDuplicate(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := signInPrincipal(t, s)
	first := newWebSession(p.ID, "session-1")
	MustWrite(t, s, func(tx store.Tx) error { return tx.WebSessionCreate(ctx, first) })
	err := s.Write(ctx, func(tx store.Tx) error { return tx.WebSessionCreate(ctx, newWebSession(p.ID, "session-1")) })
	wantErr(t, err, store.ErrConflict, "WebSessionCreate with a taken hash")
	dupID := newWebSession(p.ID, "session-2")
	dupID.ID = first.ID
	err = s.Write(ctx, func(tx store.Tx) error { return tx.WebSessionCreate(ctx, dupID) })
	wantErr(t, err, store.ErrConflict, "WebSessionCreate with a taken ID")
	same(t, "session after the refused duplicates", *getWebSession(t, s, "session-1"), *first, normWebSession)
}

func testWebSessionRevoke(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := signInPrincipal(t, s)
	w, other := newWebSession(p.ID, "session-1"), newWebSession(p.ID, "session-2")
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.WebSessionCreate(ctx, w); err != nil {
			return err
		}
		return tx.WebSessionCreate(ctx, other)
	})
	first := Base.Add(time.Hour + 125*time.Millisecond)
	want := *w
	want.RevokedAt = &first
	stamp[continuo.WebSession]{noun: "session", op: "WebSessionRevoke", prefix: continuo.PrefixWebSession, write: store.Tx.WebSessionRevoke,
		norm: normWebSession}.check(t, s, w.ID, first,
		func() continuo.WebSession { return *getWebSession(t, s, w.Hash) }, want,
		func() continuo.WebSession { return *getWebSession(t, s, other.Hash) }, *other)
}
