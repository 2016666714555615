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

// wakeMany is the notification of n tasks queued for any worker: up to
// n waiters wake ("q*n"; a replica that does not know the form reads it
// as a wake-up for a worker that waits nowhere, and wakes one).
func wakeMany(n int) string {
	if n == 1 {
		return wakePayload("")
	}
	return "q*" + itoa(n)
}

// readyChannel is the channel of one swarm's results: a submit (or the
// owner's result_ready decision) wakes an owner waiting to collect.
func readyChannel(swarmID string) string { return "swarm-ready:" + swarmID }

// rooms holds, per channel, the callers waiting on it in this process:
// workers on their swarm's channel, owners on its results'.
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

// enter registers a waiter on a channel, listening to it if nobody here
// does yet. leave must be called when the wait ends.
func (rs *rooms) enter(ch, workerID string) (*waiter, error) {
	w := &waiter{workerID: workerID, c: make(chan struct{}, 1)}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := rs.m[ch]
	if r == nil {
		ctx, stop := context.WithCancel(context.Background())
		notes, err := rs.db.Listen(ctx, ch)
		if err != nil {
			stop()
			return nil, err
		}
		r = &room{stop: stop}
		rs.m[ch] = r
		go rs.relay(ch, r, notes)
	}
	r.waiters = append(r.waiters, w)
	return w, nil
}

// leave unregisters a waiter; the last one out stops listening.
func (rs *rooms) leave(ch string, w *waiter) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := rs.m[ch]
	if r == nil {
		return
	}
	r.waiters = slices.DeleteFunc(r.waiters, func(x *waiter) bool { return x == w })
	if len(r.waiters) == 0 {
		r.stop()
		delete(rs.m, ch)
	}
}

// relay turns a channel's notifications into wake-ups.
func (rs *rooms) relay(ch string, r *room, notes <-chan string) {
	for p := range notes {
		if p == wakeAll {
			rs.wakeAll(r)
			continue
		}
		if n, ok := strings.CutPrefix(p, "q*"); ok {
			k, _ := strconv.Atoi(n)
			rs.wakeN(ch, r, max(k, 1))
			continue
		}
		rs.wake(ch, r, strings.TrimPrefix(strings.TrimPrefix(p, "q"), " "))
	}
}

// wake wakes the waiter of workerID if it waits here, else the oldest
// waiter without a wake-up pending.
func (rs *rooms) wake(ch string, r *room, workerID string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.m[ch] != r {
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

// wakeN wakes up to n waiters that have no wake-up pending, oldest
// first.
func (rs *rooms) wakeN(ch string, r *room, n int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.m[ch] != r {
		return
	}
	for _, w := range r.waiters {
		if n == 0 {
			return
		}
		if len(w.c) == 0 {
			signal(w)
			n--
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

// pass hands a wake-up on to another waiter of the channel, after a
// waiter took something (a task, results: more may be there).
func (rs *rooms) pass(ch string, self *waiter) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := rs.m[ch]
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

// waitFor waits on channel ch up to wait for try to be done, trying again
// on every wake-up and every jittered poll interval; it reports whether
// try was done before the wait ran out. try says whether it took
// something that leaves more for others (pass): the wake-up is handed on.
// w is the caller's place in the channel's room when it entered before its
// first look; nil makes waitFor enter, and look once more at once (a
// notification between the first look and entering woke nobody here).
func (s *Service) waitFor(ctx context.Context, ch, id string, w *waiter, wait time.Duration, progress Progress,
	try func() (done, pass bool, err error)) (bool, error) {
	if w == nil {
		var err error
		if w, err = s.rooms.enter(ch, id); err != nil {
			return false, err
		}
		defer s.rooms.leave(ch, w)
		signal(w)
	}
	start := time.Now()
	deadline := start.Add(wait)
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false, nil
		}
		poll := time.NewTimer(min(left, jitter(store.PollInterval)))
		select {
		case <-ctx.Done():
			poll.Stop()
			return false, ctx.Err()
		case <-s.bg.Done():
			poll.Stop()
			return false, nil
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
		done, pass, err := try()
		if err != nil || done {
			if err == nil && pass {
				s.rooms.pass(ch, w)
			}
			return done, err
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
