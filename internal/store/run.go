package store

import (
	"context"
	"time"

	"github.com/continuo-dev/continuo"
)

// RunTx holds runs, their output logs and the evidence sessions record
// from them (CONTRACT.md §6). Who may see a run is the run service's
// business (its group, while that group reaches its project).
type RunTx interface {
	// RunCreate inserts a run; an existing ID is ErrConflict, and so is a
	// second running validation run of one check in one directory.
	RunCreate(ctx context.Context, r *continuo.Run) error
	RunGet(ctx context.Context, id string) (*continuo.Run, error)
	// RunUpdate replaces a run's mutable fields other than its state
	// (owner, lease, proc, cancel_requested, exit code, error kind, usage,
	// revision, started_at, ended_at — not the log counters) if its
	// stored revision is still prevRevision, which r.Revision must exceed,
	// else ErrStale (ErrNotFound for an unknown ID), and its stored state
	// is still r.State, else ErrInvalidState: an update never changes the
	// state. cancel_requested only ever becomes true: RunRequestCancel
	// leaves the revision alone, so an update computed from a read before
	// the request must not undo it.
	RunUpdate(ctx context.Context, r *continuo.Run, prevRevision int64) error
	// RunMove is RunUpdate that also moves the run's state from r.State
	// to to, if the stored state is one the run transition table lets
	// become to, else ErrInvalidState: an ended run never changes state
	// (to = r.State is no move: as RunUpdate). Making a second validation
	// run of a check in one directory running is ErrConflict. On success
	// r.State is to.
	RunMove(ctx context.Context, r *continuo.Run, prevRevision int64, to continuo.RunState) error
	// RunRequestCancel sets cancel_requested on a run that has not ended,
	// without changing its revision; it reports whether the run had not
	// ended (false: terminal, or unknown).
	RunRequestCancel(ctx context.Context, id string) (bool, error)
	// RunRenew extends the lease of every run owner holds that has not
	// ended, without changing their revisions; it returns how many. An
	// empty owner is an error (nobody holds an untaken run).
	RunRenew(ctx context.Context, owner string, until time.Time) (int64, error)
	// RunList lists runs as p selects, by ID (run IDs sort by creation
	// time, so oldest first).
	RunList(ctx context.Context, p RunListParams) ([]continuo.Run, error)
	// RunRecent lists one group's runs in one project, newest first (by
	// ID), for a person to browse (run_recent.go).
	RunRecent(ctx context.Context, p RunRecentParams) ([]continuo.Run, error)

	// RunAppend appends events to a run's log and sets its log counters,
	// if the run's EventSeq is still a.PrevSeq (one appender at a time);
	// else ErrStale (ErrNotFound for an unknown run). Events must be
	// numbered PrevSeq+1, PrevSeq+2, … and their text valid UTF-8 without
	// NUL (else an error: the store converts nothing). Then it deletes the
	// events a.DropFrom..a.DropThrough (none when DropThrough is 0; else
	// 1 ≤ DropFrom ≤ DropThrough).
	RunAppend(ctx context.Context, a RunAppend) error
	// RunEvents lists a run's events with seq > p.AfterSeq in seq order,
	// at most p.Limit of them (≤ 0: 100), stopping before the event that
	// would take their text past p.MaxBytes (which must be > 0; the first
	// is always returned, however long). Its cost does not depend on how
	// long the log is. An unknown run has no events.
	RunEvents(ctx context.Context, p RunEventsParams) ([]continuo.RunEvent, error)

	// EvidenceAdd records a session's evidence; the same (session, run)
	// twice is ErrConflict.
	EvidenceAdd(ctx context.Context, e continuo.Evidence) error
	// EvidenceLatest returns, for each check a session has evidence of,
	// its newest perCheck evidence (≤ 0: 1) with their runs, ordered by
	// check name, then newest first (by created_at, then run ID).
	EvidenceLatest(ctx context.Context, sessionID string, perCheck int) ([]EvidenceRun, error)
}

// RunListParams selects runs. Every set field must match.
type RunListParams struct {
	States      []continuo.RunState // empty: any
	Owner       string              // "": any
	Dir         string              // with Check: one check in one directory
	Check       string
	ProviderID  string
	Kind        continuo.RunKind // "": any
	LeaseBefore time.Time        // zero: any; else lease_until < LeaseBefore (no lease counts as before every time)
	Limit       int              // ≤ 0: 100
}

// RunAppend is one append to a run's log: the events and the counters as
// they are after it.
type RunAppend struct {
	RunID          string
	PrevSeq        int64
	Events         []continuo.RunEvent
	OutputBytes    int64 // the run's new counters
	KeptBytes      int64
	HeadSeq        int64
	DroppedThrough int64
	DropFrom       int64 // delete events DropFrom..DropThrough
	DropThrough    int64
}

// RunEventsParams selects part of a run's log.
type RunEventsParams struct {
	RunID    string
	AfterSeq int64
	Limit    int
	MaxBytes int
}

// EvidenceRun is one piece of evidence with its run.
type EvidenceRun struct {
	Evidence continuo.Evidence
	Run      continuo.Run
}
