package continuo

import (
	"slices"
	"time"
)

// Chat Swarm (CONTRACT.md §7): an owner conversation dispatches tasks;
// worker conversations claim, work and submit them. A worker is a durable
// identity; the conversation or process that currently carries it is its
// carrier, bound at an epoch.

// ID prefixes of the swarm.
const (
	PrefixSwarm        = "swm_"
	PrefixWorker       = "wkr_"
	PrefixTask         = "tsk_"
	PrefixAttempt      = "att_"
	PrefixContinuation = "cnt_"
	PrefixCarrier      = "car_"
)

// Swarm bounds and defaults (CONTRACT.md §7). Every one is in UTF-8 bytes
// where it bounds text.
const (
	MaxSwarmWorkers   = 64
	MaxTaskKey        = 128
	MaxTaskPrompt     = 64 << 10
	MaxTaskPayload    = 64 << 10
	MaxTaskResult     = 256 << 10
	MaxCheckpoint     = 16 << 10
	MaxWorkerLabel    = 256
	MaxFailReason     = 4 << 10
	MaxEvidence       = 4 << 10
	DefaultQueueLimit = 1000
	DefaultInviteTTL  = 15 * time.Minute
	DefaultLeaseTTL   = 5 * time.Minute
	MinLeaseTTL       = 5 * time.Second
	MaxLeaseTTL       = 24 * time.Hour
	DefaultNextWait   = 20 * time.Second
	MaxNextWait       = 25 * time.Second
	DefaultBudgetTok  = 1_050_000
	// DefaultWorkerIdleTTL is how long a worker's carrier may stay silent,
	// holding no task, before the reaper retires the worker (policy
	// worker_idle_ttl_secs); MinWorkerIdleTTL and MaxWorkerIdleTTL bound it.
	DefaultWorkerIdleTTL = 30 * time.Minute
	MinWorkerIdleTTL     = 2 * time.Minute
	MaxWorkerIdleTTL     = 7 * 24 * time.Hour
	// MaxDispatchBatch bounds the tasks of one chat_swarm_dispatch, and
	// MaxDispatchBatchBytes their prompts and payloads together (one
	// transaction: it holds SQLite's one writer while it runs).
	MaxDispatchBatch      = 100
	MaxDispatchBatchBytes = 512 << 10
	// MaxCollectBatch bounds the results of one chat_swarm_collect without
	// a task_id; DefaultCollectBatch is what it takes without a limit.
	MaxCollectBatch     = 100
	DefaultCollectBatch = 20
	DefaultThreshold    = 0.90
	DefaultReserveTok   = 32_000
	MaxBudgetTokens     = 100_000_000
	MinCarrierKey       = 22 // bytes of a carrier_key: 128 bits in base64url, or more
)

// SwarmState is a swarm's state: active, then closed for good.
type SwarmState string

// The swarm states.
const (
	SwarmActive SwarmState = "active"
	SwarmClosed SwarmState = "closed"
)

// Compaction is a swarm's context-pressure policy (CONTRACT.md §8). The
// numbers are configuration, never a model's real limit.
type Compaction struct {
	BudgetTokens  int64   `json:"budget_tokens"`
	Threshold     float64 `json:"threshold"`
	ReserveTokens int64   `json:"reserve_tokens"`
}

// SwarmPolicy is what an owner chose when creating a swarm.
type SwarmPolicy struct {
	LeaseTTLSecs       int        `json:"lease_ttl_secs"`
	RequeueUnacked     bool       `json:"requeue_unacked"`
	Compaction         Compaction `json:"compaction"`
	AutoApproveManaged bool       `json:"auto_approve_managed"`
	// WorkerIdleTTLSecs is how long a worker's carrier may stay silent,
	// holding no task, before the worker is retired (idle); 0 in a swarm
	// created before it existed means DefaultWorkerIdleTTL.
	WorkerIdleTTLSecs int `json:"worker_idle_ttl_secs,omitempty"`
}

// DefaultSwarmPolicy is the policy of a swarm created without one.
func DefaultSwarmPolicy() SwarmPolicy {
	return SwarmPolicy{LeaseTTLSecs: int(DefaultLeaseTTL / time.Second),
		Compaction:        Compaction{BudgetTokens: DefaultBudgetTok, Threshold: DefaultThreshold, ReserveTokens: DefaultReserveTok},
		WorkerIdleTTLSecs: int(DefaultWorkerIdleTTL / time.Second)}
}

// LeaseTTL is how long a claim holds without a checkpoint, an ack or a
// submit.
func (p SwarmPolicy) LeaseTTL() time.Duration { return time.Duration(p.LeaseTTLSecs) * time.Second }

// WorkerIdleTTL is how long a worker's carrier may stay silent, holding no
// task, before the reaper retires the worker.
func (p SwarmPolicy) WorkerIdleTTL() time.Duration {
	if p.WorkerIdleTTLSecs == 0 {
		return DefaultWorkerIdleTTL
	}
	return time.Duration(p.WorkerIdleTTLSecs) * time.Second
}

// Swarm is one owner's pool of workers and tasks, owned by a group.
type Swarm struct {
	ID           string
	GroupID      string
	CreatedBy    string // the principal that created it
	OwnerCarrier string // hash of the carrier that created it: it never works in it
	State        SwarmState
	WorkerLimit  int
	Policy       SwarmPolicy
	// InviteHash is the hash of the one invite that admits joins, until
	// InviteExpiresAt; "" when none does.
	InviteHash      string
	InviteExpiresAt time.Time
	Revision        int64
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// WorkerState says whether a worker holds a task.
type WorkerState string

// The worker states.
const (
	WorkerIdle WorkerState = "idle"
	WorkerBusy WorkerState = "busy"
)

// CarrierState is what the server knows of a worker's carrier: active (it
// calls), lost (its lease ran out, or the server restarted, while it held a
// task: it is still the bound carrier and becomes active again when it
// calls), retired (replaced by a continuation: fenced for good).
type CarrierState string

// The carrier states.
const (
	CarrierActive  CarrierState = "active"
	CarrierLost    CarrierState = "lost"
	CarrierRetired CarrierState = "retired"
)

// ContinuityState is where a worker stands in its carrier's replacement
// (CONTRACT.md §8).
type ContinuityState string

// The continuity states.
const (
	ContinuitySteady            ContinuityState = "steady"
	ContinuityCompactRequired   ContinuityState = "compact_required"
	ContinuityPending           ContinuityState = "continuation_pending"
	ContinuityReconcileRequired ContinuityState = "reconcile_required"
	// ContinuityCompactBlocked: its context is full and no rollover can
	// leave it room to work (BlockedReason says why); the owner decides.
	ContinuityCompactBlocked ContinuityState = "compact_blocked"
)

// BlockedReason says why a worker is compact_blocked (CONTRACT.md §8).
type BlockedReason string

// The reasons a worker is compact_blocked.
const (
	BlockedCapsuleTooLarge    BlockedReason = "capsule_too_large"    // its capsule does not fit in a quarter of the budget
	BlockedCarrierStartFailed BlockedReason = "carrier_start_failed" // its replacement carriers did not start
	BlockedNotRedeemed        BlockedReason = "not_redeemed"         // its replacement carriers started and never redeemed
)

// RetiredReason says why a worker was retired: its slot is free, and no
// carrier carries it again.
type RetiredReason string

// The reasons a worker is retired.
const (
	RetiredLeft    RetiredReason = "left"    // its carrier left (chat_swarm_leave)
	RetiredRemoved RetiredReason = "removed" // the owner removed it (chat_swarm_remove_worker)
	RetiredIdle    RetiredReason = "idle"    // its carrier stayed silent past the policy's worker_idle_ttl_secs
)

// CarrierSource is where a carrier's identity came from (CONTRACT.md §2),
// in the order they are tried.
type CarrierSource string

// The carrier sources.
const (
	CarrierFromMeta    CarrierSource = "host_meta"   // a host conversation key the operator trusts
	CarrierFromSession CarrierSource = "mcp_session" // the MCP session (or the stdio connection)
	CarrierFromKey     CarrierSource = "carrier_key" // the carrier's own random key
)

// Worker is a durable worker identity of a swarm. Epoch counts its
// carriers: the carrier bound at Epoch is the only one heard.
type Worker struct {
	ID              string
	SwarmID         string
	PrincipalID     string // who joined it
	Label           string
	Epoch           int64
	CarrierHash     string
	CarrierSource   CarrierSource
	CarrierState    CarrierState
	State           WorkerState
	ContinuityState ContinuityState
	CurrentTaskID   string // "" when idle
	// JoinHash identifies what it joined with (invite and label): the same
	// carrier joining again with the same material gets this worker back.
	JoinHash       string
	Checkpoint     string // JSON, "" before the first
	CheckpointHash string
	CheckpointAt   *time.Time
	LastSeenAt     time.Time
	Revision       int64
	CreatedAt      time.Time
	UpdatedAt      time.Time
	// CountedTokens is the sum of the ledger's counted entries at the
	// current epoch (task prompts and results, the capsule), which the
	// swarm service adds as it counts and writes with the worker update it
	// makes anyway: a next checks pressure without summing the ledger.
	CountedTokens int64
	// BlockedReason says why the worker is compact_blocked ("" otherwise).
	BlockedReason BlockedReason
	// RetiredReason says why the worker was retired, at RetiredAt ("" and
	// nil while it is not): a retired worker takes no slot, holds no task
	// and its carrier is retired.
	RetiredReason RetiredReason
	RetiredAt     *time.Time
	// IdleTTL is its swarm's worker_idle_ttl_secs, kept on the worker so
	// that the reaper finds the silent ones by one index range.
	IdleTTL time.Duration
}

// Retired reports whether the worker was retired.
func (w *Worker) Retired() bool { return w.RetiredReason != "" }

// Carrier is one binding of a carrier to a worker at an epoch. A carrier
// hash is bound at most once, ever: a retired carrier never binds again.
type Carrier struct {
	Hash      string
	WorkerID  string
	SwarmID   string
	Epoch     int64
	Source    CarrierSource
	State     CarrierState // active or retired
	BoundAt   time.Time
	RetiredAt *time.Time
}

// TaskState is a task's state (CONTRACT.md §7).
type TaskState string

// The task states.
const (
	TaskQueued            TaskState = "queued"
	TaskClaimed           TaskState = "claimed"
	TaskRunning           TaskState = "running"
	TaskCancelRequested   TaskState = "cancel_requested"
	TaskResultReady       TaskState = "result_ready"
	TaskCollected         TaskState = "collected"
	TaskFailed            TaskState = "failed"
	TaskCancelled         TaskState = "cancelled"
	TaskReconcileRequired TaskState = "reconcile_required"
)

var (
	swarmStates      = []SwarmState{SwarmActive, SwarmClosed}
	workerStates     = []WorkerState{WorkerIdle, WorkerBusy}
	carrierStates    = []CarrierState{CarrierActive, CarrierLost, CarrierRetired}
	carrierSources   = []CarrierSource{CarrierFromMeta, CarrierFromSession, CarrierFromKey}
	continuityStates = []ContinuityState{ContinuitySteady, ContinuityCompactRequired, ContinuityPending,
		ContinuityReconcileRequired, ContinuityCompactBlocked}
	blockedReasons = []BlockedReason{BlockedCapsuleTooLarge, BlockedCarrierStartFailed, BlockedNotRedeemed}
	retiredReasons = []RetiredReason{RetiredLeft, RetiredRemoved, RetiredIdle}
)

// SwarmStates lists every swarm state, in order.
func SwarmStates() []SwarmState { return slices.Clone(swarmStates) }

// WorkerStates lists every worker state, in order.
func WorkerStates() []WorkerState { return slices.Clone(workerStates) }

// CarrierStates lists every carrier state a worker shows, in order (a
// carrier's own row is never lost).
func CarrierStates() []CarrierState { return slices.Clone(carrierStates) }

// CarrierSources lists every carrier source, in the order they are tried.
func CarrierSources() []CarrierSource { return slices.Clone(carrierSources) }

// ContinuityStates lists every continuity state, in order.
func ContinuityStates() []ContinuityState { return slices.Clone(continuityStates) }

// BlockedReasons lists why a worker can be compact_blocked, in order.
func BlockedReasons() []BlockedReason { return slices.Clone(blockedReasons) }

// RetiredReasons lists why a worker can be retired, in order.
func RetiredReasons() []RetiredReason { return slices.Clone(retiredReasons) }

var taskStates = []TaskState{TaskQueued, TaskClaimed, TaskRunning, TaskCancelRequested, TaskResultReady,
	TaskCollected, TaskFailed, TaskCancelled, TaskReconcileRequired}

// TaskStates lists every task state, in the contract's order.
func TaskStates() []TaskState { return slices.Clone(taskStates) }

// Valid reports whether s is one of TaskStates.
func (s TaskState) Valid() bool { return slices.Contains(taskStates, s) }

// Active reports whether a task in state s is held by a worker whose
// effect may have started: at most one such task per worker.
func (s TaskState) Active() bool {
	return s == TaskClaimed || s == TaskRunning || s == TaskCancelRequested
}

// Terminal reports whether a task in state s is settled. Only
// result_ready still moves (to collected, by the owner).
func (s TaskState) Terminal() bool {
	return s == TaskResultReady || s == TaskCollected || s == TaskFailed || s == TaskCancelled
}

// Why a task needs the owner's decision, or failed.
const (
	ReasonLeaseExpired  = "lease_expired"  // its lease ran out while a worker held it
	ReasonServerRestart = "server_restart" // the server that delivered it restarted while a worker held it
	ReasonEffectUnknown = "effect_unknown" // its worker failed it without knowing whether it acted
	ReasonWorkerFailed  = "worker_failed"  // its worker failed it, with no effect
	ReasonReconciled    = "reconciled"     // the owner settled it
	ReasonCancelled     = "cancelled"      // the owner cancelled it
)

// Task is one unit of work of a swarm, unique by (swarm, task key).
type Task struct {
	ID                string
	SwarmID           string
	TaskKey           string
	RequestHash       string // of prompt, payload and preferred worker: a dispatch replays on it
	Prompt            string
	Payload           string // JSON, "" when none
	PreferredWorkerID string // "" when any worker may claim it
	WorkerID          string // the worker of the latest attempt, "" before the first
	State             TaskState
	Attempt           int // the latest attempt's number, 0 before the first claim
	Result            string
	ResultHash        string
	Reason            string // why it is reconcile_required, failed or cancelled
	Detail            string // the worker's reason, or the owner's evidence, as given
	Revision          int64
	CreatedAt         time.Time
	UpdatedAt         time.Time
	EndedAt           *time.Time // when it became terminal
}

// AttemptState is the state of one delivery of a task to a worker.
type AttemptState string

// The attempt states.
const (
	AttemptClaimed   AttemptState = "claimed"   // delivered; the worker may have acted
	AttemptRunning   AttemptState = "running"   // the worker acked: it is acting
	AttemptSubmitted AttemptState = "submitted" // the worker's result settled it
	AttemptFailed    AttemptState = "failed"    // the worker failed it (effect none)
	AttemptCancelled AttemptState = "cancelled" // the owner cancelled the task it served
	AttemptInDoubt   AttemptState = "in_doubt"  // its outcome is unknown: the task awaits the owner
	AttemptRequeued  AttemptState = "requeued"  // its task went back to the queue (never acked, or no_effect evidence)
	AttemptSettled   AttemptState = "settled"   // the owner settled its task (failed or result_ready)
)

// Active reports whether an attempt in state s holds its task's lease: at
// most one such attempt per task.
func (s AttemptState) Active() bool { return s == AttemptClaimed || s == AttemptRunning }

// Attempt is one delivery of a task to a worker.
type Attempt struct {
	ID       string
	TaskID   string
	SwarmID  string
	Number   int
	WorkerID string
	Epoch    int64  // the worker's epoch when it claimed
	Server   string // the server process that delivered it (proc.Ident)
	State    AttemptState
	// LeaseUntil is how long the claim holds; ack, checkpoint and
	// redelivery renew it.
	LeaseUntil time.Time
	ClaimedAt  time.Time
	AckedAt    *time.Time
	EndedAt    *time.Time
}
