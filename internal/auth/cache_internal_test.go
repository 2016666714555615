package auth

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/stores"
)

// The cache never holds more than maxCached entries; reaching the bound
// empties it.
func TestCacheBound(t *testing.T) {
	var c cache
	c.setLive(true)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for i := range maxCached + 1 {
		c.put(c.generation(), strconv.Itoa(i), &continuo.Caller{PrincipalID: "prn_x"}, now, nil)
		if len(c.entries) > maxCached {
			t.Fatalf("%d entries", len(c.entries))
		}
	}
	if len(c.entries) != 1 {
		t.Fatalf("after the bound: %d entries, want 1 (a clear, then the new one)", len(c.entries))
	}
	if _, ok := c.get(strconv.Itoa(maxCached), now); !ok {
		t.Fatal("the entry that found the cache full is not in it")
	}
}

// A waiting revocation stops waiting when the subscription ends.
func TestCacheWaitersReleased(t *testing.T) {
	var c cache
	if c.await("n") != nil {
		t.Fatal("await without a subscription")
	}
	c.setLive(true)
	w := c.await("n")
	c.heard("other")
	select {
	case <-w:
		t.Fatal("woken by another revocation's notification")
	default:
	}
	c.setLive(false)
	<-w
}

// A revocation returns after its own process heard its notification: its
// cache was then cleared twice (by the notification and after the commit).
func TestRevokeWaitsForItsNotification(t *testing.T) {
	stores.Each(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		a := New(stores.Open(t), nil)
		done := a.WatchRevocations(ctx)
		defer func() { cancel(); <-done }()
		tok, err := a.CreateToken(ctx, "alice", []continuo.Scope{continuo.ScopeSessionsRead}, 0)
		if err != nil {
			t.Fatal(err)
		}
		before := a.cache.generation()
		if err := a.RevokeToken(ctx, tok.TokenID); err != nil {
			t.Fatal(err)
		}
		if got := a.cache.generation() - before; got != 2 {
			t.Fatalf("generation moved by %d, want 2", got)
		}
	})
}

// A Write through RevokeWrite that revoked nothing announces nothing and
// keeps every cache.
func TestRevokeWriteNothingRevoked(t *testing.T) {
	stores.Each(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		a := New(stores.Open(t), nil)
		heard := make(chan string, 4)
		a.onHeard = func(p string) { heard <- p }
		done := a.WatchRevocations(ctx)
		defer func() { cancel(); <-done }()
		before := a.cache.generation()
		if err := a.RevokeWrite(ctx, func(store.Tx) (bool, error) { return false, nil }); err != nil {
			t.Fatal(err)
		}
		if err := a.RevokeWrite(ctx, func(store.Tx) (bool, error) { return true, nil }); err != nil {
			t.Fatal(err)
		}
		<-heard // the second one's notification, the only one
		if got := a.cache.generation() - before; got != 2 {
			t.Fatalf("generation moved by %d, want 2 (the second Write only)", got)
		}
		select {
		case p := <-heard:
			t.Fatalf("a second notification %q", p)
		default:
		}
	})
}
