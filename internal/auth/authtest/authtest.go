// Package authtest sets up an auth service for the tests of auth and of the
// services that stand on it (oauth): one database per engine and a clock the
// test moves.
package authtest

import (
	"testing"
	"time"

	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/stores"
)

// Clock is a clock a test sets: Now returns T.
type Clock struct{ T time.Time }

// NewClock is a Clock at a fixed instant (2026-11-29 12:00 UTC).
func NewClock() *Clock { return &Clock{T: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)} }

// Now returns T.
func (c *Clock) Now() time.Time { return c.T }

// Setup opens a database of the test's engine (see stores.Open) and an auth
// service over it that reads the returned clock.
func Setup(t *testing.T) (*auth.Service, store.Store, *Clock) {
	t.Helper()
	db := stores.Open(t)
	c := NewClock()
	return auth.New(db, c.Now), db, c
}
