package auth

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/continuo-dev/continuo/internal/store"
)

// authChannel carries revocations: every process clears its bearer cache
// when it hears one.
const authChannel = "auth"

// revokeWait bounds how long a revocation waits for this process to hear
// its own notification (see RevokeWrite). A variable for tests.
var revokeWait = 2 * time.Second

// revokeSettle is how long a revocation waits after it heard its own
// notification, for the other listeners to apply theirs. PostgreSQL
// signals every listening backend at commit, but each one, and then its
// replica's listener goroutine, runs only when the machine schedules it:
// measured 0–2 ms after the revoker's own on a loaded 2-core machine
// (docs/OPERATIONS.md), up to 4 ms in a run that caught it. A heuristic with
// a wide margin; PollInterval stays the hard bound.
const revokeSettle = 50 * time.Millisecond

// WatchRevocations keeps this process's bearer cache in step with the
// revocations of every process: it listens on the "auth" channel and
// clears the cache on every notification, and whenever the subscription
// starts or ends. Until it listens, and after it stopped, Authenticate
// reads the database every time. It returns once the first subscription is
// in place (or failed: it then retries with a back-off) and runs until ctx
// ends; done is closed when it has stopped. Call it once per Service.
func (s *Service) WatchRevocations(ctx context.Context) (done <-chan struct{}) {
	stopped, first := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		s.watch(ctx, first)
	}()
	select {
	case <-first:
	case <-ctx.Done():
	}
	return stopped
}

func (s *Service) watch(ctx context.Context, first chan struct{}) {
	var once sync.Once
	ready := func() { once.Do(func() { close(first) }) }
	defer ready()
	for backoff := 50 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
		c, err := s.store.Listen(ctx, authChannel)
		if err == nil {
			// What was revoked before the subscription went unheard.
			s.cache.setLive(true)
			ready()
			for payload := range c {
				s.cache.heard(payload)
				if s.onHeard != nil {
					s.onHeard(payload)
				}
			}
			s.cache.setLive(false)
		}
		ready() // callers carry on without the cache
		if ctx.Err() != nil {
			return
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// notifyAuth tells every process, when the Write it is called in commits,
// that credentials were revoked: each clears its bearer cache. nonce is
// what this process waits to hear ("" when nobody waits).
func notifyAuth(ctx context.Context, tx store.Tx, nonce string) error {
	return tx.Notify(ctx, authChannel, nonce)
}

// RevokeWrite runs fn in a Write that may revoke credentials (a token, a
// grant, a client, a browser session); fn reports whether it did. When it
// did, its changes are announced on the "auth" channel, this process's
// cache is cleared as soon as the Write returns, and, when this process
// listens, RevokeWrite waits (at most revokeWait) until it has heard its
// own notification, and then revokeSettle more, before it returns.
// PostgreSQL sends a notification to every listener when the transaction
// commits, so once this process heard it every replica has been sent it
// too, and the settle gives them the moment they take to apply it: the
// next request, on any replica, finds the credential revoked. (A replica
// that missed the notification, or on SQLite any other process, serves its
// cached entry for PollInterval at most.)
//
// Every Write that revokes anything goes through here; one that revokes
// only sometimes (a replayed code or refresh token revokes its grant
// inside the exchange's Write) reports false otherwise, and then costs
// nothing more than a plain Write.
func (s *Service) RevokeWrite(ctx context.Context, fn func(tx store.Tx) (revoked bool, err error)) error {
	nonce := newNonce()
	heard := s.cache.await(nonce)
	defer s.cache.forget(nonce)
	var revoked bool
	err := s.store.Write(ctx, func(tx store.Tx) error {
		var err error
		if revoked, err = fn(tx); err != nil || !revoked {
			return err
		}
		return notifyAuth(ctx, tx, nonce)
	})
	if !revoked {
		return err
	}
	if err == nil || errors.Is(err, store.ErrAmbiguous) { // an ambiguous commit may have revoked
		s.cache.invalidate()
	}
	if err != nil || heard == nil {
		return err
	}
	t := time.NewTimer(revokeWait)
	defer t.Stop()
	select {
	case <-heard:
	case <-t.C: // the notification was coalesced or lost: PollInterval bounds it
		return nil
	case <-ctx.Done():
		return nil
	}
	t.Reset(revokeSettle)
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return nil
}

// newNonce names one revocation's notification.
func newNonce() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
