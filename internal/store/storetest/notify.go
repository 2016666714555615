package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/continuo-dev/continuo/internal/store"
)

func notifyTests() []test {
	return []test{
		{"AfterCommit", testNotifyAfterCommit},
		{"NotOnFailure", testNotifyNotOnFailure},
		{"Channels", testNotifyChannels},
		{"ListenEnds", testListenEnds},
		{"ReadRefuses", testNotifyInRead},
		{"Bounds", testNotifyBounds},
	}
}

func listen(t *testing.T, s store.Store, channel string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	c, err := s.Listen(ctx, channel)
	if err != nil {
		t.Fatalf("Listen(%q): %v", channel, err)
	}
	return c
}

// receive waits for the next payload on c.
func receive(t *testing.T, c <-chan string, what string) string {
	t.Helper()
	select {
	case p, ok := <-c:
		if !ok {
			t.Fatalf("%s: the listener's channel closed", what)
		}
		return p
	case <-time.After(waitLimit):
		t.Fatalf("%s: no notification within %s", what, waitLimit)
	}
	return ""
}

func notify(t *testing.T, s store.Store, channel, payload string) {
	t.Helper()
	ctx := t.Context()
	MustWrite(t, s, func(tx store.Tx) error { return tx.Notify(ctx, channel, payload) })
}

// testNotifyAfterCommit: a notification reaches a listener once its Write
// commits, not while the Write is still running.
func testNotifyAfterCommit(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := listen(t, s, "wake")
	var early bool
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.Notify(ctx, "wake", "one"); err != nil {
			return err
		}
		if err := tx.MetaSet(ctx, "k", "v"); err != nil {
			return err
		}
		select {
		case <-c:
			early = true
		case <-time.After(20 * time.Millisecond): // a driver that delivers at once would have by now
		}
		return nil
	})
	if early {
		t.Fatal("the notification arrived before its Write committed")
	}
	if got := receive(t, c, "after commit"); got != "one" {
		t.Errorf("payload = %q, want one", got)
	}
}

// testNotifyNotOnFailure: a Write that fails sends nothing.
func testNotifyNotOnFailure(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := listen(t, s, "wake")
	boom := &testError{"boom"}
	err := s.Write(ctx, func(tx store.Tx) error {
		if err := tx.Notify(ctx, "wake", "rolled back"); err != nil {
			return err
		}
		return boom
	})
	wantErr(t, err, boom, "failing Write")
	notify(t, s, "wake", "committed")
	if got := receive(t, c, "after a failed and a committed Write"); got != "committed" {
		t.Errorf("first payload = %q, want committed (the failed Write's notification was delivered)", got)
	}
}

// testNotifyChannels: listeners hear only their channel.
func testNotifyChannels(t *testing.T, s store.Store) {
	a := listen(t, s, "a")
	b := listen(t, s, "b")
	notify(t, s, "b", "for b")
	notify(t, s, "a", "for a")
	if got := receive(t, a, "listener of a"); got != "for a" {
		t.Errorf("listener of a got %q first, want for a", got)
	}
	if got := receive(t, b, "listener of b"); got != "for b" {
		t.Errorf("listener of b got %q first, want for b", got)
	}
}

// testListenEnds: cancelling the context closes the channel.
func testListenEnds(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	c, err := s.Listen(ctx, "wake")
	noErr(t, err, "Listen")
	cancel()
	select {
	case _, ok := <-c:
		for ok {
			_, ok = <-c
		}
	case <-time.After(waitLimit):
		t.Fatal("the channel stayed open after its context ended")
	}
}

func testNotifyInRead(t *testing.T, s store.Store) {
	ctx := t.Context()
	if err := s.Read(ctx, func(tx store.Tx) error { return tx.Notify(ctx, "wake", "x") }); err == nil {
		t.Error("Notify inside Read succeeded, want an error")
	}
}

func testNotifyBounds(t *testing.T, s store.Store) {
	ctx := t.Context()
	long := make([]byte, store.MaxPayload+1)
	for i := range long {
		long[i] = 'x'
	}
	for name, c := range map[string][2]string{"empty channel": {"", "x"}, "long payload": {"wake", string(long)}} {
		if err := s.Write(ctx, func(tx store.Tx) error { return tx.Notify(ctx, c[0], c[1]) }); err == nil {
			t.Errorf("Notify with an %s succeeded, want an error", name)
		}
	}
	if _, err := s.Listen(ctx, ""); err == nil {
		t.Error("Listen on an empty channel succeeded, want an error")
	}
}
