// Package swarm is Chat Swarm (CONTRACT.md §7): owners create swarms and
// dispatch tasks, workers join, claim, ack, checkpoint and submit them. A
// worker is a durable identity; the conversation that carries it is its
// carrier, bound at an epoch, and only that carrier at that epoch is heard.
//
// The line is fail-closed: once a task was delivered its effect may have
// started, so a lost lease, an unknown failure or a restart of the server
// that delivered it puts it in reconcile_required, and only the owner's
// decision moves it on. Every change is one Write whose updates are guarded
// on the revision or state they read, so every race has one winner and the
// loser is told.
package swarm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/metrics"
	"github.com/continuo-dev/continuo/internal/proc"
	"github.com/continuo-dev/continuo/internal/store"
)

// Options configures a Service.
type Options struct {
	// Now is the clock (tests inject one to expire leases without sleeping).
	Now    func() time.Time
	Logger *slog.Logger
	// Server names this process in the attempts it delivers; empty means
	// proc.Self (tests run several "replicas" in one process).
	Server string
	// Alive tells whether the process a Server string names still runs;
	// nil means proc.Alive.
	Alive func(server string) (alive, known bool)
	// SweepEvery is how often the reaper looks for lost leases and dead
	// servers; 0 means every second.
	SweepEvery time.Duration
	// Runtime, when set, starts replacement carriers for Auto Compact
	// (the process runtime), with tokens from Minter; nil is the manual
	// runtime.
	Runtime Runtime
	Minter  Minter
	// Metrics, when set, receives the swarm's series (meters.go).
	Metrics *metrics.Registry
}

// Service implements Chat Swarm over a store.
type Service struct {
	db      store.Store
	now     func() time.Time
	log     *slog.Logger
	self    string
	alive   func(string) (bool, bool)
	every   time.Duration
	rooms   rooms
	runtime Runtime
	minter  Minter
	meters  meters
	plan    chan struct{} // wakes the planner
	swarmOf sync.Map      // worker ID → swarm ID, learnt by next (a worker never changes swarm)
	bg      context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup
	startMu sync.Mutex
	started bool
}

// New returns a Service. Call Start to run the reaper.
func New(db store.Store, opts Options) *Service {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	self := opts.Server
	if self == "" {
		self = proc.Self()
	}
	alive := opts.Alive
	if alive == nil {
		alive = proc.Alive
	}
	every := opts.SweepEvery
	if every <= 0 {
		every = time.Second
	}
	bg, stop := context.WithCancel(context.Background())
	s := &Service{db: db, now: func() time.Time { return now().UTC() }, log: log, self: self, alive: alive,
		every: every, bg: bg, stop: stop, runtime: opts.Runtime, minter: opts.Minter, plan: make(chan struct{}, 1)}
	s.meters = newMeters(opts.Metrics, db)
	s.rooms.init(db)
	return s
}

// Start sweeps once (what a dead server left in doubt is marked before any
// new claim), then runs the reaper until Close.
func (s *Service) Start() error {
	s.startMu.Lock()
	defer s.startMu.Unlock()
	if s.started {
		return errors.New("swarm: started twice")
	}
	s.started = true
	if err := s.Sweep(s.bg); err != nil {
		return err
	}
	s.wg.Add(1)
	go s.reapLoop()
	return nil
}

// Close stops the reaper and ends every wait.
func (s *Service) Close() {
	s.stop()
	s.wg.Wait()
}

// channel is the notification channel of one swarm: dispatches, requeues
// and the close wake its waiting workers.
func channel(swarmID string) string { return "swarm:" + swarmID }

// Carrier is how the edge identified the calling conversation (CONTRACT.md
// §2): where the identity came from and its raw value, which is hashed
// with the principal before anything keeps it.
type Carrier struct {
	Source continuo.CarrierSource
	Key    string
}

// hash is the carrier's stored identity: a domain-separated SHA-256 of the
// principal, the source and the key. "" when there is no key.
func (c Carrier) hash(principalID string) string {
	if c.Key == "" {
		return ""
	}
	return digest("continuo carrier v1", principalID, string(c.Source), c.Key)
}

// digest hashes parts, each length-prefixed so that no two lists of parts
// hash alike.
func digest(parts ...string) string {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		l := uint64(len(p))
		for i := range n {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// need returns the carrier's hash, or the error that says how to give one.
func (c Carrier) need(principalID string) (string, error) {
	if h := c.hash(principalID); h != "" {
		return h, nil
	}
	return "", continuo.Invalid("carrier_key", "this connection has no conversation identity (the stateless protocol): pass carrier_key, a random value of at least 128 bits that this conversation keeps").
		With("min_bytes", continuo.MinCarrierKey)
}

// stale maps a guarded update's loss to the loser's error: conflict when
// the row changed since it was read, invalid_state when its state may no
// longer make the change (a transition table refused it).
func stale(err error, what string) error {
	switch {
	case errors.Is(err, store.ErrInvalidState):
		return continuo.Errorf(continuo.CodeInvalidState, "%s is no longer in a state that allows this change; read it again", what)
	case errors.Is(err, store.ErrStale) || errors.Is(err, store.ErrConflict):
		return continuo.Errorf(continuo.CodeConflict, "%s changed concurrently; read it again and retry", what)
	}
	return err
}
