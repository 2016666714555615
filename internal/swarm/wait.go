package swarm

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/continuo-dev/continuo/internal/store"
)

// Waiting workers.
//
// A dispatch notifies its swarm's channel inside the committing
// transaction (store.Tx.Notify: in-process on SQLite, LISTEN/NOTIFY on
// PostgreSQL, so a waiter on another replica hears it too). Each process
// listens once per swarm that has waiters here, and a notification wakes
// one waiter, not all of them: the worker a task prefers if it waits
// here, else the one waiting longest. A waiter that claimed a task passes
// the wake-up on to the next, so a burst of dispatches (whose
// notifications may coalesce) drains without a stampede of claims on one
// task. Every waiter also looks again after a jittered poll interval, so
// a missed notification costs at most that.

// wakeAll is the payload that wakes every waiter of a swarm (it closed).
const wakeAll = "*"

// wakePayload names the worker a task prefers ("" for any).
func wakePayload(workerID string) string {
	if workerID == "" {
		return "q"
	}
	return "q " + workerID
}

// rooms holds, per swarm, the workers waiting in this process.
type rooms struct {
	db store.Store
	mu sync.Mutex
	m  map[string]*room
}

type room struct {
	stop    context.CancelFunc
	waiters []*waiter // oldest first
}

type waiter struct {
	workerID string
	c        chan struct{} // one slot: a wake-up pending
}

func (rs *rooms) init(db store.Store) { rs.db, rs.m = db, map[string]*room{} }

// enter registers a waiter of a swarm, listening to the swarm's channel
// if nobody here does yet. leave must be called when the wait ends.
func (rs *rooms) enter(swarmID, workerID string) (*waiter, error) {
	w := &waiter{workerID: workerID, c: make(chan struct{}, 1)}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := rs.m[swarmID]
	if r == nil {
		ctx, stop := context.WithCancel(context.Background())
		notes, err := rs.db.Listen(ctx, channel(swarmID))
		if err != nil {
			stop()
			return nil, err
		}
		r = &room{stop: stop}
		rs.m[swarmID] = r
		go rs.relay(swarmID, r, notes)
	}
	r.waiters = append(r.waiters, w)
	return w, nil
}

// leave unregisters a waiter; the last one out stops listening.
func (rs *rooms) leave(swarmID string, w *waiter) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := rs.m[swarmID]
	if r == nil {
		return
	}
	r.waiters = slices.DeleteFunc(r.waiters, func(x *waiter) bool { return x == w })
	if len(r.waiters) == 0 {
		r.stop()
		delete(rs.m, swarmID)
	}
}

// relay turns a swarm's notifications into wake-ups.
func (rs *rooms) relay(swarmID string, r *room, notes <-chan string) {
	for p := range notes {
		if p == wakeAll {
			rs.wakeAll(r)
			continue
		}
		rs.wake(swarmID, r, strings.TrimPrefix(strings.TrimPrefix(p, "q"), " "))
	}
}

// wake wakes the waiter of workerID if it waits here, else the oldest
// waiter without a wake-up pending.
func (rs *rooms) wake(swarmID string, r *room, workerID string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.m[swarmID] != r {
		return
	}
	if workerID != "" {
		for _, w := range r.waiters {
			if w.workerID == workerID {
				signal(w)
				return
			}
		}
	}
	for _, w := range r.waiters {
		if len(w.c) == 0 {
			signal(w)
			return
		}
	}
}

func (rs *rooms) wakeAll(r *room) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, w := range r.waiters {
		signal(w)
	}
}

// pass hands a wake-up on to another waiter of the swarm, after a waiter
// claimed a task (more may be queued).
func (rs *rooms) pass(swarmID string, self *waiter) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := rs.m[swarmID]
	if r == nil {
		return
	}
	for _, w := range r.waiters {
		if w != self && len(w.c) == 0 {
			signal(w)
			return
		}
	}
}

func signal(w *waiter) {
	select {
	case w.c <- struct{}{}:
	default:
	}
}

// waitFor waits up to wait for try to deliver something other than idle,
// trying again on every wake-up and every jittered poll interval.
// w is the caller's place in the swarm's room when it entered before its
// first look; nil makes waitFor enter, and look once more at once (a
// dispatch between the first look and entering notified nobody here).
func (s *Service) waitFor(ctx context.Context, swarmID, workerID string, w *waiter, wait time.Duration, progress Progress,
	try func() (*Delivery, error)) (*Delivery, error) {
	if w == nil {
		var err error
		if w, err = s.rooms.enter(swarmID, workerID); err != nil {
			return nil, err
		}
		defer s.rooms.leave(swarmID, w)
		signal(w)
	}
	start := time.Now()
	deadline := start.Add(wait)
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return &Delivery{State: NextIdle}, nil
		}
		poll := time.NewTimer(min(left, jitter(store.PollInterval)))
		select {
		case <-ctx.Done():
			poll.Stop()
			return nil, ctx.Err()
		case <-s.bg.Done():
			poll.Stop()
			return &Delivery{State: NextIdle}, nil
		case <-tick.C:
			poll.Stop()
			if progress != nil {
				progress(time.Since(start), wait)
			}
			continue
		case <-w.c:
		case <-poll.C:
		}
		poll.Stop()
		d, err := try()
		if err != nil || d.State != NextIdle {
			if err == nil && d.State == NextTask && !d.Redelivery {
				s.rooms.pass(swarmID, w)
			}
			return d, err
		}
	}
}

// progressEvery is how often a waiting next tells its client it waits.
const progressEvery = 5 * time.Second

// jitter spreads d over [d/2, d).
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2)
}

func itoa(i int) string { return strconv.Itoa(i) }

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
