package store

import (
	"context"
	"sync"
)

// Hub fans notifications out to the listeners of one process. Drivers feed
// it: SQLite after each commit, PostgreSQL from its LISTEN connection.
// Delivery never blocks the sender: each listener has a one-slot buffer, so
// notifications that arrive while it is busy are coalesced into the one it
// has not read yet (listeners re-read state on wake-up, so nothing is lost
// but a redundant wake-up).
type Hub struct {
	mu   sync.Mutex
	subs map[string]map[*sub]struct{}
}

type sub struct{ c chan string }

// Listen implements Store.Listen for drivers built on a Hub.
func (h *Hub) Listen(ctx context.Context, channel string) (<-chan string, error) {
	if err := CheckNotify(channel, ""); err != nil {
		return nil, err
	}
	s := &sub{c: make(chan string, 1)}
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[string]map[*sub]struct{}{}
	}
	if h.subs[channel] == nil {
		h.subs[channel] = map[*sub]struct{}{}
	}
	h.subs[channel][s] = struct{}{}
	h.mu.Unlock()
	go func() {
		<-ctx.Done()
		h.mu.Lock()
		delete(h.subs[channel], s)
		if len(h.subs[channel]) == 0 {
			delete(h.subs, channel)
		}
		close(s.c)
		h.mu.Unlock()
	}()
	return s.c, nil
}

// Publish delivers payload to every listener of channel.
func (h *Hub) Publish(channel, payload string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[channel] {
		select {
		case s.c <- payload:
		default: // a wake-up is already pending
		}
	}
}

// Listening reports whether any listener is subscribed to channel.
func (h *Hub) Listening(channel string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs[channel]) > 0
}

// Note is a notification waiting for its transaction to commit.
type Note struct{ Channel, Payload string }
