// Package run holds durable runs (CONTRACT.md §6): the record of one
// execution, its bounded output log, observation tokens, cancellation,
// timeouts and leases. What a run executes is an Executor's business: the
// command executor here runs validation checks; the model-provider
// executors plug into the same records and machinery.
//
// # Who runs a run
//
// A run is created queued, owned by the process that created it. That
// process's dispatcher makes it running (a guarded update; a unique index
// lets at most one validation run of a check run in one directory, so a
// second waits queued) and hands it to its executor. The owner renews a
// lease on its runs every LeaseRenew; a run whose lease ran out, or whose
// owner is a process on this host that no longer exists, is interrupted by
// whichever process notices — never run again by itself. Cancellation is a
// flag any process may set; the owner hears it (a notification, or its
// next poll) and stops the run.
//
// # Output
//
// Executors emit text; the log batches it into events (at most
// MaxRunEvent bytes each, appended as soon as the append before commits) in one
// guarded statement, so a log has one appender and its seqs have no holes
// but the ones trimming makes: a run keeps its first MaxRunHead bytes and
// its newest bytes up to MaxRunKept, and reports what it dropped.
package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/proc"
	"github.com/continuo-dev/continuo/internal/store"
)

// Lease timing: an owner renews every LeaseRenew a lease of LeaseTTL, so a
// run whose owner died is interrupted within LeaseTTL + SweepInterval.
const (
	LeaseTTL      = 10 * time.Second
	LeaseRenew    = 2 * time.Second
	SweepInterval = 2 * time.Second
	// StopGrace is how long a stopped process group has between SIGTERM
	// and SIGKILL.
	StopGrace = 5 * time.Second
)

// Executor runs the work of one run on the process that owns it. Execute is
// called once the run is running and returns when the work has ended;
// ctx ends when the run is cancelled, times out or the server stops, and
// the executor must then stop its work and return promptly. It writes what
// the run produces to log. The service decides the final state: an
// executor reports only how its work ended.
type Executor interface {
	Execute(ctx context.Context, r *continuo.Run, log *Log) Outcome
}

// Admitter is an Executor that limits how many runs it executes at once
// in this process: the dispatcher starts a run only when Admit takes a
// slot for it (else it stays queued), and gives the slot back with Release
// when the run did not start or Execute has returned.
type Admitter interface {
	Admit(r *continuo.Run) bool
	Release(r *continuo.Run)
}

// Outcome is how an executor's work ended.
type Outcome struct {
	// Stopped says the executor stopped the work because ctx ended;
	// the service then records why (cancelled, timed out, server
	// stopping). Work that ended by itself first keeps its own outcome.
	Stopped   bool
	Succeeded bool
	ExitCode  *int
	ErrorKind string // why it failed: exit_status, start_failed, …
	Usage     string // JSON, agent runs
}

// Options configures a Service.
type Options struct {
	Now    func() time.Time
	Logger *slog.Logger
	// Executors run runs by kind.
	Executors map[continuo.RunKind]Executor
	// Key signs observation tokens; it must be the same on every replica
	// and survive restarts (auth.Service.SessionKey).
	Key []byte
	// Owner names this process in the runs it owns; empty means proc.Self
	// (tests run several "replicas" in one process with distinct names).
	Owner string
}

// Service implements runs.
type Service struct {
	store store.Store
	auth  *auth.Service
	now   func() time.Time
	log   *slog.Logger
	exec  map[continuo.RunKind]Executor
	key   []byte
	self  string // this process, as proc.Self names it

	kick chan struct{} // wakes the dispatcher

	mu     sync.Mutex
	active map[string]*active // runs this process is executing, by ID
	bg     context.Context    // ends when Close is called
	stop   context.CancelFunc
	wg     sync.WaitGroup
}

// active is a run this process executes.
type active struct {
	cancel context.CancelCauseFunc
}

// The causes with which a running run's context ends.
var (
	errCancelled = errors.New("run cancelled")
	errTimedOut  = errors.New("run timed out")
	errStopping  = errors.New("server stopping")
)

// New returns a Service. Call Start to run its background work.
func New(s store.Store, a *auth.Service, opts Options) *Service {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	bg, stop := context.WithCancel(context.Background())
	self := opts.Owner
	if self == "" {
		self = proc.Self()
	}
	return &Service{store: s, auth: a, now: func() time.Time { return now().UTC() }, log: logger, exec: opts.Executors,
		key: observationKey(opts.Key), self: self, kick: make(chan struct{}, 1), active: map[string]*active{},
		bg: bg, stop: stop}
}

// Start runs the dispatcher, the lease renewer and the sweeper until Close.
func (s *Service) Start() error {
	cancels, err := s.store.Listen(s.bg, cancelChannel)
	if err != nil {
		return fmt.Errorf("runs: listen: %w", err)
	}
	s.sweep(s.bg) // interrupt what a dead process left before taking new work
	s.wg.Add(3)
	go s.dispatchLoop()
	go s.renewLoop()
	go s.sweepLoop(cancels)
	return nil
}

// Close stops the background work and every run this process executes;
// they end interrupted (their processes are stopped), since no one will
// finish them.
func (s *Service) Close() {
	s.mu.Lock()
	for _, a := range s.active {
		a.cancel(errStopping)
	}
	s.mu.Unlock()
	s.stop()
	s.wg.Wait()
}

// Owner is the process identity this service runs under.
func (s *Service) Owner() string { return s.self }

// The notification channels: cancelChannel carries the ID of a run whose
// cancellation was requested, dispatchChannel wakes dispatchers, and
// eventChannel(id) wakes observers of one run.
const (
	cancelChannel   = "runs.cancel"
	dispatchChannel = "runs.queued"
)

func eventChannel(runID string) string { return "run:" + runID }

// Kick wakes this process's dispatcher, after a Write that queued a run
// has committed.
func (s *Service) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Draft is what a caller says of a new run; Enqueue decides the rest.
type Draft struct {
	Kind       continuo.RunKind
	ProjectID  string
	SessionID  string // "": no session
	Check      string // validation: the check's name
	ProviderID string // agent: the provider
	Dir        string
	Spec       string // the kind's spec, as JSON
	// RequestHash identifies the request (a keyed start replays on it).
	RequestHash string
	// The source fingerprint (validation).
	SourceHead, SourceTree, SourceStat string
}

// Enqueue creates, in tx, a queued run of c's group from d: the one way a
// run comes to be. It owns what every run has — a new ID, the queued
// state, this process as owner under a fresh lease, revision 1, the
// creation time — and refuses a draft a run of its kind cannot be. The
// caller Kicks once tx has committed, so that the dispatcher sees it.
func (s *Service) Enqueue(ctx context.Context, tx store.Tx, c *continuo.Caller, d Draft) (*continuo.Run, error) {
	switch {
	case !d.Kind.Valid():
		return nil, fmt.Errorf("run: enqueue: unknown kind %q", d.Kind)
	case c == nil || c.GroupID == "" || d.ProjectID == "" || d.Dir == "" || d.Spec == "":
		return nil, errors.New("run: enqueue: a run needs a group, a project, a directory and a spec")
	case d.Kind == continuo.RunValidation && d.Check == "":
		return nil, errors.New("run: enqueue: a validation run needs a check")
	case d.Kind == continuo.RunAgent && d.ProviderID == "":
		return nil, errors.New("run: enqueue: an agent run needs a provider")
	}
	now := s.now()
	r := &continuo.Run{ID: continuo.NewID(continuo.PrefixRun, now), Kind: d.Kind, State: continuo.RunQueued, GroupID: c.GroupID,
		ProjectID: d.ProjectID, SessionID: d.SessionID, Check: d.Check, ProviderID: d.ProviderID, Dir: d.Dir, Spec: d.Spec,
		RequestHash: d.RequestHash, SourceHead: d.SourceHead, SourceTree: d.SourceTree, SourceStat: d.SourceStat,
		Owner: s.self, LeaseUntil: now.Add(LeaseTTL), Revision: 1, CreatedAt: now}
	if err := tx.RunCreate(ctx, r); err != nil {
		return nil, err
	}
	return r, nil
}

// update applies change to the run with the given ID in one Write, guarded
// by the revision it read, and returns the run as written. change returns
// the state the run moves to (its own: no move), or "" to leave the run as
// it is (it is then returned unchanged).
func (s *Service) update(ctx context.Context, id string, change func(tx store.Tx, r *continuo.Run) (continuo.RunState, error), notes ...store.Note) (*continuo.Run, error) {
	var out *continuo.Run
	err := s.store.Write(ctx, func(tx store.Tx) error {
		out = nil
		r, err := tx.RunGet(ctx, id)
		if err != nil {
			return err
		}
		prev := r.Revision
		to, err := change(tx, r)
		if err != nil || to == "" {
			out = r
			return err
		}
		r.Revision = prev + 1
		if err := tx.RunMove(ctx, r, prev, to); errors.Is(err, store.ErrInvalidState) {
			return continuo.Errorf(continuo.CodeInvalidState, "run %s is no longer in a state that allows this change; read it again", id)
		} else if err != nil {
			return err
		}
		for _, n := range notes {
			if err := tx.Notify(ctx, n.Channel, n.Payload); err != nil {
				return err
			}
		}
		if err := tx.Notify(ctx, eventChannel(id), ""); err != nil {
			return err
		}
		out = r
		return nil
	})
	return out, err
}
