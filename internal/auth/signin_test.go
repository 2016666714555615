package auth_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/store/stores"
)

const testIssuer = "https://continuo.test"

// signInEnv is a service with OAuth on and a principal alice.
type signInEnv struct {
	ctx   context.Context
	a     *auth.Service
	clk   *clock
	alice *auth.IssuedToken // her personal access token (sessions:read)
}

func setupSignIn(t *testing.T) *signInEnv {
	t.Helper()
	a, _, clk := setup(t)
	a.EnableOAuth(auth.OAuthOptions{Issuer: testIssuer})
	ctx := context.Background()
	alice, err := a.CreateToken(ctx, "alice", []continuo.Scope{continuo.ScopeSessionsRead}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &signInEnv{ctx: ctx, a: a, clk: clk, alice: alice}
}

// A login link signs in once, within its lifetime; looking at it (the
// confirm page) does not use it.
func TestLoginLink(t *testing.T) { stores.Each(t, testLoginLink) }

func testLoginLink(t *testing.T) {
	e := setupSignIn(t)
	l, err := e.a.CreateLoginLink(e.ctx, "alice", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(l.Code, "cto_lnk_") || l.URL != testIssuer+"/login?code="+l.Code || !l.ExpiresAt.Equal(e.clk.T.Add(10*time.Minute)) {
		t.Fatalf("link %+v", l)
	}
	for range 2 {
		if p, err := e.a.LoginLinkPrincipal(e.ctx, l.Code); err != nil || p.Name != "alice" {
			t.Fatalf("peek: %v %v", p, err)
		}
	}
	secret, p, err := e.a.SignIn(e.ctx, l.Code)
	if err != nil || p.Name != "alice" || !strings.HasPrefix(secret, "cto_wss_") {
		t.Fatalf("sign in: %q %v %v", secret, p, err)
	}
	c, err := e.a.WebSession(e.ctx, secret)
	if err != nil || c.Principal != "alice" || c.GroupID != e.alice.GroupID || !strings.HasPrefix(c.TokenID, continuo.PrefixWebSession) {
		t.Fatalf("web session: %+v %v", c, err)
	}
	if _, _, err := e.a.SignIn(e.ctx, l.Code); !errors.Is(err, auth.ErrBadToken) {
		t.Fatalf("second use of a login link: %v", err)
	}
	if _, err := e.a.LoginLinkPrincipal(e.ctx, l.Code); !errors.Is(err, auth.ErrBadToken) {
		t.Fatalf("peek at a used link: %v", err)
	}

	l, err = e.a.CreateLoginLink(e.ctx, "alice", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.clk.T = e.clk.T.Add(time.Minute)
	if _, _, err := e.a.SignIn(e.ctx, l.Code); !errors.Is(err, auth.ErrBadToken) {
		t.Fatalf("expired link: %v", err)
	}
	if _, err := e.a.CreateLoginLink(e.ctx, "nobody", 0, nil); code(err) != continuo.CodeNotFound {
		t.Fatalf("link for an unknown principal: %v", err)
	}
	for _, ttl := range []time.Duration{-time.Second, 25 * time.Hour} {
		if _, err := e.a.CreateLoginLink(e.ctx, "alice", ttl, nil); code(err) != continuo.CodeInvalidInput {
			t.Errorf("ttl %v: %v", ttl, err)
		}
	}
	for _, bad := range []string{"", "cto_lnk_" + strings.Repeat("a", 52), "hello", "cto_wss_x"} {
		if _, _, err := e.a.SignIn(e.ctx, bad); !errors.Is(err, auth.ErrBadToken) {
			t.Errorf("sign in with %q: %v", bad, err)
		}
	}
	off, _, _ := setup(t)
	if _, err := off.CreateLoginLink(e.ctx, "alice", 0, nil); code(err) != continuo.CodeInvalidState {
		t.Fatalf("login link with OAuth off: %v", err)
	}
}

// Concurrent uses of one link: one session.
func TestLoginLinkRace(t *testing.T) { stores.Each(t, testLoginLinkRace) }

func testLoginLinkRace(t *testing.T) {
	e := setupSignIn(t)
	l, err := e.a.CreateLoginLink(e.ctx, "alice", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	errs := make(chan error, n)
	start := make(chan struct{})
	for range n {
		go func() {
			<-start
			_, _, err := e.a.SignIn(e.ctx, l.Code)
			errs <- err
		}()
	}
	close(start)
	won := 0
	for range n {
		err := <-errs
		if err == nil {
			won++
		} else if !errors.Is(err, auth.ErrBadToken) {
			t.Errorf("loser: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d sign-ins with one link", won)
	}
}

// A personal access token signs in while it is valid and can read.
func TestSignInWithToken(t *testing.T) { stores.Each(t, testSignInWithToken) }

func testSignInWithToken(t *testing.T) {
	e := setupSignIn(t)
	if _, p, err := e.a.SignIn(e.ctx, e.alice.Token); err != nil || p.Name != "alice" {
		t.Fatalf("sign in with a PAT: %v %v", p, err)
	}
	admin, err := e.a.CreateToken(e.ctx, "alice", []continuo.Scope{continuo.ScopeAdmin}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	worker, err := e.a.CreateToken(e.ctx, "alice", []continuo.Scope{continuo.ScopeSwarmWork}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.a.SignIn(e.ctx, admin.Token); err != nil {
		t.Fatalf("sign in with an admin PAT: %v", err)
	}
	if _, _, err := e.a.SignIn(e.ctx, worker.Token); code(err) != continuo.CodeForbidden {
		t.Fatalf("sign in with a swarm:work PAT: %v", err)
	}
	e.clk.T = e.clk.T.Add(time.Hour)
	if _, _, err := e.a.SignIn(e.ctx, admin.Token); !errors.Is(err, auth.ErrBadToken) {
		t.Fatalf("expired PAT: %v", err)
	}
	if err := e.a.RevokeToken(e.ctx, e.alice.TokenID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.a.SignIn(e.ctx, e.alice.Token); !errors.Is(err, auth.ErrBadToken) {
		t.Fatalf("revoked PAT: %v", err)
	}
	if _, _, err := e.a.SignIn(e.ctx, e.alice.Token+"x"); !errors.Is(err, auth.ErrBadToken) {
		t.Fatalf("unknown PAT: %v", err)
	}
}

// A browser session lasts 12 hours, or until it signs out.
func TestWebSession(t *testing.T) { stores.Each(t, testWebSession) }

func testWebSession(t *testing.T) {
	e := setupSignIn(t)
	s1, _, err := e.a.SignIn(e.ctx, e.alice.Token)
	if err != nil {
		t.Fatal(err)
	}
	s2, _, err := e.a.SignIn(e.ctx, e.alice.Token)
	if err != nil || s1 == s2 {
		t.Fatalf("second session %v", err)
	}
	if err := e.a.SignOut(e.ctx, s1); err != nil {
		t.Fatal(err)
	}
	if _, err := e.a.WebSession(e.ctx, s1); !errors.Is(err, auth.ErrBadToken) {
		t.Fatalf("signed-out session: %v", err)
	}
	if err := e.a.SignOut(e.ctx, s1); err != nil {
		t.Fatalf("sign out twice: %v", err)
	}
	if err := e.a.SignOut(e.ctx, "cto_wss_nope"); err != nil {
		t.Fatalf("sign out unknown: %v", err)
	}
	e.clk.T = e.clk.T.Add(12*time.Hour - time.Millisecond)
	if _, err := e.a.WebSession(e.ctx, s2); err != nil {
		t.Fatalf("session before 12 h: %v", err)
	}
	e.clk.T = e.clk.T.Add(time.Millisecond)
	if _, err := e.a.WebSession(e.ctx, s2); !errors.Is(err, auth.ErrBadToken) {
		t.Fatalf("session after 12 h: %v", err)
	}
	for _, bad := range []string{"", e.alice.Token, "cto_wss_" + strings.Repeat("a", 52)} {
		if _, err := e.a.WebSession(e.ctx, bad); !errors.Is(err, auth.ErrBadToken) {
			t.Errorf("web session %q: %v", bad, err)
		}
	}
	// A session secret is no bearer token.
	if _, err := e.a.Authenticate(e.ctx, s2); !errors.Is(err, auth.ErrBadToken) {
		t.Fatalf("session as bearer: %v", err)
	}
}

// A browser session acts with the scopes of what signed it in — a token's
// scopes, or the login link's (sessions:read when it names none) — and a
// session signed in with a token ends when the token is revoked or
// expires.
func TestWebSessionScopes(t *testing.T) { stores.Each(t, testWebSessionScopes) }

func testWebSessionScopes(t *testing.T) {
	e := setupSignIn(t)
	scopes := func(secret string) []continuo.Scope {
		t.Helper()
		s, _, err := e.a.SignIn(e.ctx, secret)
		if err != nil {
			t.Fatal(err)
		}
		c, err := e.a.WebSession(e.ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		return c.Scopes
	}
	owner, err := e.a.CreateToken(e.ctx, "alice", []continuo.Scope{continuo.ScopeSessionsRead, continuo.ScopeSwarmOwn}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if got := scopes(owner.Token); !slices.Equal(got, []continuo.Scope{continuo.ScopeSessionsRead, continuo.ScopeSwarmOwn}) {
		t.Errorf("a session of an owner token holds %v", got)
	}
	for _, c := range []struct {
		give, want []continuo.Scope
	}{{nil, []continuo.Scope{continuo.ScopeSessionsRead}}, {[]continuo.Scope{continuo.ScopeAdmin}, []continuo.Scope{continuo.ScopeAdmin}}} {
		l, err := e.a.CreateLoginLink(e.ctx, "alice", 0, c.give)
		if err != nil {
			t.Fatal(err)
		}
		if got := scopes(l.Code); !slices.Equal(got, c.want) {
			t.Errorf("a session of a link made with %v holds %v", c.give, got)
		}
	}
	if _, err := e.a.CreateLoginLink(e.ctx, "alice", 0, []continuo.Scope{"root"}); code(err) != continuo.CodeInvalidInput {
		t.Errorf("a link with an unknown scope: %v", err)
	}

	s, _, err := e.a.SignIn(e.ctx, owner.Token)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.a.RevokeToken(e.ctx, owner.TokenID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.a.WebSession(e.ctx, s); !errors.Is(err, auth.ErrBadToken) {
		t.Fatalf("the session of a revoked token: %v", err)
	}
	short, err := e.a.CreateToken(e.ctx, "alice", []continuo.Scope{continuo.ScopeSessionsRead}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	s, _, err = e.a.SignIn(e.ctx, short.Token)
	if err != nil {
		t.Fatal(err)
	}
	e.clk.T = e.clk.T.Add(time.Minute)
	if _, err := e.a.WebSession(e.ctx, s); !errors.Is(err, auth.ErrBadToken) {
		t.Fatalf("the session of an expired token: %v", err)
	}
}
