package store

import (
	"context"
	"time"

	"github.com/continuo-dev/continuo"
)

// ContinuationTx holds worker continuations and the context-pressure
// ledger (CONTRACT.md §8). Which transition is allowed is the
// continuation table's (continuo's CanBecome), and the store writes every
// state change guarded by it; it keeps one open continuation per worker
// and one continuation per ticket, and guards updates on the version.
type ContinuationTx interface {
	// ContinuationCreate inserts a continuation; an existing ID, a second
	// open continuation of one worker, or a ticket hash used before is
	// ErrConflict.
	ContinuationCreate(ctx context.Context, c *continuo.Continuation) error
	ContinuationGet(ctx context.Context, id string) (*continuo.Continuation, error)
	// ContinuationByTicket returns the continuation of a ticket hash.
	ContinuationByTicket(ctx context.Context, ticketHash string) (*continuo.Continuation, error)
	// ContinuationOpen returns a worker's open continuation (pending,
	// approved or reconcile_required), ErrNotFound when it has none.
	ContinuationOpen(ctx context.Context, workerID string) (*continuo.Continuation, error)
	// ContinuationUpdate replaces a continuation's version, target
	// carrier and source, capsule and hash, updated_at, expires_at,
	// bound_at and carrier operation if its stored version is still
	// prevVersion (which c.Version must exceed), else ErrStale, and its
	// stored state is still c.State, else ErrInvalidState: an update
	// never changes the state.
	ContinuationUpdate(ctx context.Context, c *continuo.Continuation, prevVersion int64) error
	// ContinuationMove is ContinuationUpdate that also moves the state
	// from c.State to to, if the stored state is one the continuation
	// table lets become to, else ErrInvalidState (to = c.State is no
	// move). Making a second continuation of one worker open is
	// ErrConflict. On success c.State is to.
	ContinuationMove(ctx context.Context, c *continuo.Continuation, prevVersion int64, to continuo.ContinuationState) error
	// ContinuationList lists continuations as p selects, newest first.
	ContinuationList(ctx context.Context, p ContinuationListParams) ([]continuo.Continuation, error)

	// WorkersBlocked counts the workers whose continuity state is
	// compact_blocked, in every swarm (/metrics).
	WorkersBlocked(ctx context.Context) (int, error)

	// WorkersCompacting lists workers whose continuity state is
	// compact_required, by ID: the Auto Compact planner's work.
	WorkersCompacting(ctx context.Context, limit int) ([]continuo.Worker, error)

	// LedgerAdd inserts a count, unless one with the same (worker, epoch,
	// source, ref) exists; it reports whether it was new (and so whether
	// the caller adds it to the worker's CountedTokens).
	LedgerAdd(ctx context.Context, e continuo.LedgerEntry) (bool, error)
	// LedgerReport records a reported figure: the entry of its (worker,
	// epoch, source, ref) keeps the largest tokens ever reported (and the
	// basis and time of that report).
	LedgerReport(ctx context.Context, e continuo.LedgerEntry) error
	// LedgerEntries lists a worker's ledger entries of one epoch, by
	// source then ref. Counts are summed per source by the store, so the
	// list stays small: one entry per source for counts (Ref "", Tokens
	// the sum, At the newest), and the entries of reported sources as
	// they are.
	LedgerEntries(ctx context.Context, workerID string, epoch int64) ([]continuo.LedgerEntry, error)
	// LedgerOfSwarm lists the ledger entries of every worker of a swarm at
	// the worker's current epoch, as LedgerEntries lists one worker's, by
	// worker ID, then source, then ref: one read for the pressure of all.
	LedgerOfSwarm(ctx context.Context, swarmID string) ([]continuo.LedgerEntry, error)
	// LedgerPrune deletes a worker's entries of epochs before epoch.
	LedgerPrune(ctx context.Context, workerID string, beforeEpoch int64) error
}

// ContinuationListParams selects continuations. Every set field must
// match.
type ContinuationListParams struct {
	SwarmID       string
	WorkerID      string
	TargetCarrier string
	States        []continuo.ContinuationState // empty: any
	CarrierOp     continuo.CarrierOp           // "": any
	ExpiresBefore time.Time                    // zero: any
	BeforeID      string                       // keyset: only continuations with a smaller ID (older)
	Limit         int                          // ≤ 0: 100
}
