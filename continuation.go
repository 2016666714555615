package continuo

import (
	"slices"
	"time"
)

// Worker continuity (CONTRACT.md §8): a continuation moves a worker from
// the carrier bound at epoch N to a new carrier at N+1, in one transaction.

// Continuation bounds and defaults.
const (
	MinTicketTTL        = 30 * time.Second
	MaxTicketTTL        = 15 * time.Minute
	DefaultTicketTTL    = 10 * time.Minute
	DefaultRequestTTL   = 15 * time.Minute
	MaxCapsule          = 48 << 10
	MaxContinuationNote = 1 << 10 // bytes of a reason or evidence
	MaxContextTokens    = 1 << 40
)

// ContinuationPath says how a continuation is authorised: by a one-time
// ticket the owner (or the planner) prepared for a managed carrier, or by
// the owner's approval of a request an unmanaged carrier made.
type ContinuationPath string

// The continuation paths.
const (
	PathTicket   ContinuationPath = "ticket"
	PathApproval ContinuationPath = "approval"
)

var continuationPaths = []ContinuationPath{PathTicket, PathApproval}

// ContinuationPaths lists every continuation path, in order.
func ContinuationPaths() []ContinuationPath { return slices.Clone(continuationPaths) }

// ContinuationState is a continuation's state: pending → approved → bound,
// or revoked | expired, or reconcile_required when a carrier operation's
// outcome is unknown. Version rises by one on every change.
type ContinuationState string

// The continuation states.
const (
	ContinuationPending           ContinuationState = "pending"
	ContinuationApproved          ContinuationState = "approved"
	ContinuationBound             ContinuationState = "bound"
	ContinuationRevoked           ContinuationState = "revoked"
	ContinuationExpired           ContinuationState = "expired"
	ContinuationReconcileRequired ContinuationState = "reconcile_required"
)

var continuationStates = []ContinuationState{ContinuationPending, ContinuationApproved, ContinuationBound, ContinuationRevoked,
	ContinuationExpired, ContinuationReconcileRequired}

// ContinuationStates lists every continuation state, in order.
func ContinuationStates() []ContinuationState { return slices.Clone(continuationStates) }

// Open reports whether a continuation in state s may still bind: at most
// one open continuation per worker.
func (s ContinuationState) Open() bool {
	return s == ContinuationPending || s == ContinuationApproved || s == ContinuationReconcileRequired
}

// Continuation is one attempt to move a worker to a new carrier.
type Continuation struct {
	ID          string
	SwarmID     string
	WorkerID    string
	Path        ContinuationPath
	State       ContinuationState
	Version     int64
	SourceEpoch int64
	TargetEpoch int64 // SourceEpoch + 1
	// SourceCarrier is the hash of the carrier it replaces; TargetCarrier
	// the hash of the one it binds: the requester (approval path), or the
	// redeemer once bound (ticket path; "" before).
	SourceCarrier  string
	TargetCarrier  string
	TargetSource   CarrierSource // where the target's identity came from
	TicketHash     string        // ticket path; "" otherwise
	CheckpointHash string        // the worker's verified checkpoint it starts from
	Capsule        string        // JSON, "" when none was built
	CapsuleHash    string
	Reason         string // why it was prepared or requested
	RequestedBy    string // the principal that prepared or requested it
	RequestHash    string // identifies a request (approval path): a replay returns it
	CreatedAt      time.Time
	UpdatedAt      time.Time
	ExpiresAt      time.Time
	BoundAt        *time.Time
	// The carrier start the planner made for it (the process runtime):
	// its operation's state, the process (or, while in flight, the server
	// starting it) and the ID of the token minted for the new carrier.
	CarrierOp    CarrierOp
	CarrierProc  string
	CarrierToken string
	// ApprovedBy is who approved it (the approval path): the owner's
	// principal, ApprovedByPolicy, or "" while no one has.
	ApprovedBy string
}

// ApprovedByPolicy is the ApprovedBy of a continuation its swarm's
// auto_approve_managed policy approved.
const ApprovedByPolicy = "policy"

// CarrierOp is the state of the operation that starts a replacement
// carrier: prepared → in_flight → succeeded | failed, or unknown when the
// server died while it was in flight (then the continuation is
// reconcile_required: never a second replacement).
type CarrierOp string

// The carrier operation states ("" when none was made).
const (
	OpPrepared  CarrierOp = "prepared"
	OpInFlight  CarrierOp = "in_flight"
	OpSucceeded CarrierOp = "succeeded"
	OpUnknown   CarrierOp = "unknown"
	OpFailed    CarrierOp = "failed"
)

// LedgerSource is what a context-pressure ledger entry counts.
type LedgerSource string

// The ledger sources: the server's own counts of what a carrier read and
// wrote (each once per epoch), the capsule a new carrier started from,
// and what a worker reported.
const (
	LedgerTaskPrompt LedgerSource = "task_prompt"
	LedgerTaskResult LedgerSource = "task_result"
	LedgerCapsule    LedgerSource = "capsule"
	LedgerHostExact  LedgerSource = "host_exact" // a figure the host gave exactly
	LedgerEstimate   LedgerSource = "estimate"   // the worker's own estimate
)

var ledgerSources = []LedgerSource{LedgerTaskPrompt, LedgerTaskResult, LedgerCapsule, LedgerHostExact, LedgerEstimate}

// LedgerSources lists every ledger source, in order.
func LedgerSources() []LedgerSource { return slices.Clone(ledgerSources) }

// Reported reports whether entries of source s are a worker's reports
// (pressure takes their maximum) rather than counts (pressure sums them).
func (s LedgerSource) Reported() bool { return s == LedgerHostExact || s == LedgerEstimate }

// LedgerEntry is one entry of a worker's context ledger for one epoch.
// Counts are unique by (worker, epoch, source, ref): counting the same
// task's prompt twice (a redelivery, a replay) changes nothing.
type LedgerEntry struct {
	WorkerID string
	Epoch    int64
	Source   LedgerSource
	Ref      string // the task (prompt, result), continuation (capsule) or "" (reports)
	Tokens   int64
	Basis    string // what a reported figure rests on
	At       time.Time
}
