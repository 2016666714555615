package auth_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/auth/authtest"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/pgtest"
	"github.com/continuo-dev/continuo/internal/store/postgres"
	"github.com/continuo-dev/continuo/internal/store/sqlite"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/store/storetest"
)

// watched returns a Service on db that listens for revocations until the
// test ends, and a channel that receives a value for every notification
// it handled.
func watched(t *testing.T, db store.Store, clk *clock) (*auth.Service, <-chan string) {
	t.Helper()
	a := auth.New(db, clk.Now)
	heard := make(chan string, 64)
	auth.OnHeard(a, func(p string) {
		select {
		case heard <- p:
		default:
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := a.WatchRevocations(ctx)
	t.Cleanup(func() { cancel(); <-done })
	return a, heard
}

// revokeBehindItsBack revokes a token in the database without telling
// anyone, which is what a missed notification amounts to.
func revokeBehindItsBack(t *testing.T, db store.Store, tokenID string, at time.Time) {
	t.Helper()
	err := db.Write(context.Background(), func(tx store.Tx) error {
		return tx.TokenRevoke(context.Background(), store.TokenRevokeParams{ID: tokenID, At: at})
	})
	if err != nil {
		t.Fatal(err)
	}
}

func mustAuthenticate(t *testing.T, a *auth.Service, secret string) *continuo.Caller {
	t.Helper()
	c, err := a.Authenticate(context.Background(), secret)
	if err != nil {
		t.Fatalf("authenticate: %v", err)
	}
	return c
}

func refused(t *testing.T, a *auth.Service, secret, why string) {
	t.Helper()
	if _, err := a.Authenticate(context.Background(), secret); code(err) != continuo.CodeUnauthorized {
		t.Fatalf("%s: authenticate: %v, want unauthorized", why, err)
	}
}

// failsOnceHeard waits for notifications, up to a deadline, until secret no
// longer authenticates through a (whose clock does not move, so nothing but
// a notification clears its cache).
func failsOnceHeard(t *testing.T, a *auth.Service, heard <-chan string, secret string) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		if _, err := a.Authenticate(context.Background(), secret); code(err) == continuo.CodeUnauthorized {
			return
		}
		select {
		case <-heard:
		case <-deadline.C:
			t.Fatal("the revoked token still authenticates: no notification cleared the cache")
		}
	}
}

// A token that authenticated is answered from the cache, as a copy, for
// PollInterval at most.
func TestCacheHit(t *testing.T) { stores.Each(t, testCacheHit) }

func testCacheHit(t *testing.T) {
	db, clk := stores.Open(t), authtest.NewClock()
	a, _ := watched(t, db, clk)
	tok, err := a.CreateToken(context.Background(), "alice", []continuo.Scope{continuo.ScopeSessionsRead}, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := mustAuthenticate(t, a, tok.Token)
	c.Principal, c.Scopes[0] = "mallory", continuo.ScopeAdmin // the caller's copy, not the cache's
	revokeBehindItsBack(t, db, tok.TokenID, clk.T)
	c = mustAuthenticate(t, a, tok.Token) // a hit: the database says revoked
	if c.Principal != "alice" || c.TokenID != tok.TokenID || c.Has(continuo.ScopeAdmin) || !c.Has(continuo.ScopeSessionsRead) {
		t.Fatalf("cached caller: %+v", c)
	}
	clk.T = clk.T.Add(store.PollInterval - time.Millisecond)
	mustAuthenticate(t, a, tok.Token)
	clk.T = clk.T.Add(time.Millisecond)
	refused(t, a, tok.Token, "an entry PollInterval old")
	// A clock that went back does not bring an entry back to life.
	clk.T = clk.T.Add(-time.Hour)
	refused(t, a, tok.Token, "after the clock went back")
}

// An entry never outlives its token; a failure is never cached.
func TestCacheTokenExpiry(t *testing.T) { stores.Each(t, testCacheTokenExpiry) }

func testCacheTokenExpiry(t *testing.T) {
	db, clk := stores.Open(t), authtest.NewClock()
	a, _ := watched(t, db, clk)
	tok, err := a.CreateToken(context.Background(), "alice", []continuo.Scope{continuo.ScopeSessionsRead}, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	mustAuthenticate(t, a, tok.Token)
	clk.T = clk.T.Add(499 * time.Millisecond)
	mustAuthenticate(t, a, tok.Token)
	clk.T = clk.T.Add(time.Millisecond)
	refused(t, a, tok.Token, "expired token, cached 0.5 s ago")
	clk.T = clk.T.Add(-time.Millisecond) // had the failure been cached, this would fail too
	mustAuthenticate(t, a, tok.Token)
}

// Without a subscription to "auth" — never started, or stopped — every
// Authenticate reads the database.
func TestCacheNeedsListener(t *testing.T) { stores.Each(t, testCacheNeedsListener) }

func testCacheNeedsListener(t *testing.T) {
	ctx := context.Background()
	db, clk := stores.Open(t), authtest.NewClock()
	a := auth.New(db, clk.Now)
	tok, err := a.CreateToken(ctx, "alice", []continuo.Scope{continuo.ScopeSessionsRead}, 0)
	if err != nil {
		t.Fatal(err)
	}
	mustAuthenticate(t, a, tok.Token)
	revokeBehindItsBack(t, db, tok.TokenID, clk.T)
	refused(t, a, tok.Token, "not listening")

	wctx, stop := context.WithCancel(ctx)
	done := a.WatchRevocations(wctx)
	tok2, err := a.CreateToken(ctx, "alice", []continuo.Scope{continuo.ScopeSessionsRead}, 0)
	if err != nil {
		t.Fatal(err)
	}
	mustAuthenticate(t, a, tok2.Token)
	stop()
	<-done
	revokeBehindItsBack(t, db, tok2.TokenID, clk.T)
	refused(t, a, tok2.Token, "after the watcher stopped")
}

// A revocation through this process takes effect on its next request; one
// through another Service of the process (the same store handle) once the
// notification arrived.
func TestCacheRevokeHere(t *testing.T) { stores.Each(t, testCacheRevokeHere) }

func testCacheRevokeHere(t *testing.T) {
	ctx := context.Background()
	db, clk := stores.Open(t), authtest.NewClock()
	a, heard := watched(t, db, clk)
	other := auth.New(db, clk.Now)
	sc := []continuo.Scope{continuo.ScopeSessionsRead}
	t1, err := a.CreateToken(ctx, "alice", sc, 0)
	if err != nil {
		t.Fatal(err)
	}
	t2, err := a.CreateToken(ctx, "bob", sc, 0)
	if err != nil {
		t.Fatal(err)
	}
	mustAuthenticate(t, a, t1.Token)
	mustAuthenticate(t, a, t2.Token)
	if err := a.RevokeToken(ctx, t1.TokenID); err != nil {
		t.Fatal(err)
	}
	refused(t, a, t1.Token, "revoked through the service")
	mustAuthenticate(t, a, t2.Token)
	if err := other.RevokeToken(ctx, t2.TokenID); err != nil {
		t.Fatal(err)
	}
	failsOnceHeard(t, a, heard, t2.Token)
}

// twoHandles opens one fresh database twice, as two processes do: on
// PostgreSQL two pools, between which LISTEN/NOTIFY carries notifications;
// on SQLite two handles on one file, between which nothing does.
func twoHandles(t *testing.T) (store.Store, store.Store) {
	t.Helper()
	ctx := context.Background()
	open := func() store.Store {
		t.Helper()
		var s store.Store
		var err error
		if stores.Engine(t) == "postgres" {
			s, err = postgres.Open(ctx, pgURL(t), nil)
		} else {
			s, err = sqlite.Open(ctx, sqlitePath(t), nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return storetest.Rerun(s)
	}
	return open(), open()
}

var (
	pgURLs      sync.Map // test name → schema URL
	sqlitePaths sync.Map // test name → file
)

func pgURL(t *testing.T) string {
	u, _ := pgURLs.LoadOrStore(t.Name(), pgtest.Schema(t))
	return u.(string)
}

func sqlitePath(t *testing.T) string {
	p, _ := sqlitePaths.LoadOrStore(t.Name(), filepath.Join(t.TempDir(), "c.db"))
	return p.(string)
}

// A revocation by another process: on PostgreSQL its notification clears
// this process's cache, so the next request after it arrived fails; on
// SQLite nothing tells this process, and the entry's PollInterval is the
// bound. The revoking process itself refuses the token at once.
func TestCacheRevokeElsewhere(t *testing.T) { stores.Each(t, testCacheRevokeElsewhere) }

func testCacheRevokeElsewhere(t *testing.T) {
	ctx := context.Background()
	db1, db2 := twoHandles(t)
	clk := authtest.NewClock()
	a, heard := watched(t, db1, clk)
	b, _ := watched(t, db2, clk)
	tok, err := a.CreateToken(ctx, "alice", []continuo.Scope{continuo.ScopeSessionsRead}, 0)
	if err != nil {
		t.Fatal(err)
	}
	mustAuthenticate(t, a, tok.Token)
	mustAuthenticate(t, b, tok.Token)
	if err := b.RevokeToken(ctx, tok.TokenID); err != nil {
		t.Fatal(err)
	}
	refused(t, b, tok.Token, "in the revoking process")
	if stores.Engine(t) == "postgres" {
		failsOnceHeard(t, a, heard, tok.Token)
		return
	}
	mustAuthenticate(t, a, tok.Token) // SQLite: not heard, still cached
	clk.T = clk.T.Add(store.PollInterval)
	refused(t, a, tok.Token, "PollInterval after a revocation by another SQLite process")
}

// afterRead is a store whose Read calls hook once, after the read and
// before Authenticate caches what it read.
type afterRead struct {
	store.Store
	once sync.Once
	hook func()
}

func (s *afterRead) Read(ctx context.Context, fn func(store.Tx) error) error {
	err := s.Store.Read(ctx, fn)
	s.once.Do(s.hook)
	return err
}

// A revocation that commits, and is heard, between a lookup's read and its
// caching is not lost: the caller read before it is not cached.
func TestCacheRevokeDuringLookup(t *testing.T) { stores.Each(t, testCacheRevokeDuringLookup) }

func testCacheRevokeDuringLookup(t *testing.T) {
	ctx := context.Background()
	db, clk := stores.Open(t), authtest.NewClock()
	a, _ := watched(t, db, clk)
	tok, err := a.CreateToken(ctx, "alice", []continuo.Scope{continuo.ScopeSessionsRead}, 0)
	if err != nil {
		t.Fatal(err)
	}
	racing := &afterRead{Store: db}
	r, heard := watched(t, racing, clk)
	racing.hook = func() {
		if err := a.RevokeToken(ctx, tok.TokenID); err != nil {
			t.Error(err)
		}
		select {
		case <-heard:
		case <-time.After(10 * time.Second):
			t.Error("r never heard the revocation")
		}
	}
	mustAuthenticate(t, r, tok.Token) // read before the revocation: it authenticates this once
	refused(t, r, tok.Token, "the request after a revocation heard during the lookup")
}

// deaf is a store whose subscriptions never deliver a notification: every
// one is missed.
type deaf struct{ store.Store }

func (deaf) Listen(ctx context.Context, _ string) (<-chan string, error) {
	c := make(chan string)
	context.AfterFunc(ctx, func() { close(c) })
	return c, nil
}

// A revocation through this process takes effect on its next request even
// when its notification is never heard: the revoking process clears its own
// cache after the commit, and waits no longer than its bound for the
// notification.
func TestCacheRevokeUnheard(t *testing.T) { stores.Each(t, testCacheRevokeUnheard) }

func testCacheRevokeUnheard(t *testing.T) {
	ctx := context.Background()
	auth.ShortRevokeWait(t, 10*time.Millisecond)
	clk := authtest.NewClock()
	a, _ := watched(t, deaf{stores.Open(t)}, clk)
	tok, err := a.CreateToken(ctx, "alice", []continuo.Scope{continuo.ScopeSessionsRead}, 0)
	if err != nil {
		t.Fatal(err)
	}
	mustAuthenticate(t, a, tok.Token)
	if err := a.RevokeToken(ctx, tok.TokenID); err != nil {
		t.Fatal(err)
	}
	refused(t, a, tok.Token, "revoked here, notification lost")
}
