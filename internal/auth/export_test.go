package auth

import (
	"testing"
	"time"
)

// OnHeard makes s call f after each "auth" notification its revocation
// watcher handled, so that a test waits for the notification itself
// instead of sleeping. Set it before WatchRevocations.
func OnHeard(s *Service, f func(payload string)) { s.onHeard = f }

// ShortRevokeWait makes revocations wait d at most for their own
// notification, until the test ends.
func ShortRevokeWait(t *testing.T, d time.Duration) {
	old := revokeWait
	revokeWait = d
	t.Cleanup(func() { revokeWait = old })
}
