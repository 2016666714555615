package auth

import (
	"slices"
	"sync"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// maxCached bounds the bearer cache. An entry lives at most
// store.PollInterval, so the cache holds the tokens seen in the last
// second: reaching the bound takes 10,000 distinct callers a second. It is
// then cleared rather than evicted entry by entry — every entry would
// expire within a second anyway, so a clear costs one database read per
// active token, the same as the expiry does, and needs no eviction order.
const maxCached = 10_000

// cache remembers the callers of bearer tokens that authenticated, so that
// the requests of a connected client cost no database read. It is only as
// fresh as the revocations it hears of: entries are used only while the
// process listens on the "auth" channel (live), every notification and
// every change of subscription clears it (a new generation), and an entry
// is trusted for store.PollInterval at most — the bound for a notification
// that was missed — and never past its token's expiry. Failures are never
// cached.
//
// Every entry in the map was stored under the current generation: a bump
// empties the map, and put refuses a caller that was read under an older
// one (a revocation may have committed between that read and the put).
type cache struct {
	mu      sync.Mutex
	gen     uint64
	live    bool
	entries map[string]cached
	waiters map[string]chan struct{} // revocation nonce → closed when heard
}

type cached struct {
	caller   continuo.Caller
	cachedAt time.Time
	expires  time.Time // the token's expiry; zero: none
}

// get returns a copy of the caller cached under key, if it is still valid
// at now.
func (c *cache) get(key string, now time.Time) (*continuo.Caller, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !c.live {
		return nil, false
	}
	// A clock that went back makes an entry's age unknown: drop it.
	if now.Before(e.cachedAt) || !now.Before(e.cachedAt.Add(store.PollInterval)) || (!e.expires.IsZero() && !now.Before(e.expires)) {
		delete(c.entries, key)
		return nil, false
	}
	return copyCaller(&e.caller), true
}

// generation is what a lookup that misses notes before it reads the
// database, and hands back to put.
func (c *cache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// put caches caller under key, read at now under generation gen, unless
// the cache changed generation meanwhile or is not live.
func (c *cache) put(gen uint64, key string, caller *continuo.Caller, now time.Time, expires *time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.live || gen != c.gen {
		return
	}
	if c.entries == nil {
		c.entries = make(map[string]cached)
	}
	if len(c.entries) >= maxCached {
		clear(c.entries)
	}
	e := cached{caller: *copyCaller(caller), cachedAt: now}
	if expires != nil {
		e.expires = *expires
	}
	c.entries[key] = e
}

// invalidate forgets every entry and starts a new generation.
func (c *cache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bump()
}

func (c *cache) bump() {
	c.gen++
	clear(c.entries)
}

// setLive starts or ends the time the cache may be used: while the process
// does not listen, revocations elsewhere go unheard. Either way the cache
// starts empty, and a revocation waiting to be heard stops waiting.
func (c *cache) setLive(live bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = live
	c.bump()
	if !live {
		for n, w := range c.waiters {
			close(w)
			delete(c.waiters, n)
		}
	}
}

// heard handles a notification on "auth": it clears the cache, and wakes
// the revocation that sent payload, if it is waiting here.
func (c *cache) heard(payload string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bump()
	if w, ok := c.waiters[payload]; ok {
		close(w)
		delete(c.waiters, payload)
	}
}

// await returns a channel closed when this process hears the notification
// with payload nonce, or nil when it is not listening (nothing to wait for).
func (c *cache) await(nonce string) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.live {
		return nil
	}
	if c.waiters == nil {
		c.waiters = make(map[string]chan struct{})
	}
	w := make(chan struct{})
	c.waiters[nonce] = w
	return w
}

// forget stops waiting for nonce.
func (c *cache) forget(nonce string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.waiters, nonce)
}

// copyCaller copies a caller with its own scopes, so that neither the
// cache nor whoever it hands the caller to can change the other's.
func copyCaller(c *continuo.Caller) *continuo.Caller {
	cp := *c
	cp.Scopes = slices.Clone(c.Scopes)
	return &cp
}
