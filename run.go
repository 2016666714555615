package continuo

import (
	"slices"
	"time"
)

// RunKind says what a run executes (CONTRACT.md §6).
type RunKind string

// The run kinds.
const (
	RunValidation RunKind = "validation" // a check the operator named, run by the server
	RunAgent      RunKind = "agent"      // a delegated model or ACP agent run
)

// runKinds is the closed set of run kinds, in the contract's order.
var runKinds = []RunKind{RunValidation, RunAgent}

// RunKinds lists every run kind, in order.
func RunKinds() []RunKind { return slices.Clone(runKinds) }

// Valid reports whether k is one of RunKinds.
func (k RunKind) Valid() bool { return slices.Contains(runKinds, k) }

// RunState is a run's state: queued → running → succeeded | failed |
// cancelled | timed_out | interrupted, and queued → cancelled | interrupted.
// Terminal states never change.
type RunState string

// The run states.
const (
	RunQueued      RunState = "queued"
	RunRunning     RunState = "running"
	RunSucceeded   RunState = "succeeded"
	RunFailed      RunState = "failed"
	RunCancelled   RunState = "cancelled"
	RunTimedOut    RunState = "timed_out"
	RunInterrupted RunState = "interrupted" // its process was lost with the server that ran it
)

// runStates is the closed set of run states, in the contract's order.
var runStates = []RunState{RunQueued, RunRunning, RunSucceeded, RunFailed, RunCancelled, RunTimedOut, RunInterrupted}

// RunStates lists every run state, in order.
func RunStates() []RunState { return slices.Clone(runStates) }

// Valid reports whether s is one of RunStates.
func (s RunState) Valid() bool { return slices.Contains(runStates, s) }

// Terminal reports whether a run in state s has ended.
func (s RunState) Terminal() bool { return s != RunQueued && s != RunRunning && s.Valid() }

// RunEventKind is the kind of one entry of a run's output log.
type RunEventKind string

// The run event kinds.
const (
	EventOutput RunEventKind = "output" // what the process wrote (stdout and stderr, interleaved), redacted
	EventState  RunEventKind = "state"  // a state change, in a fixed sentence
	EventText   RunEventKind = "text"   // model text (agent runs)
	EventUsage  RunEventKind = "usage"  // token usage (agent runs), JSON
	// Agent runs also show what the agent did besides answering.
	EventTool       RunEventKind = "tool"       // a tool call and its status
	EventPermission RunEventKind = "permission" // a permission request and the decision
	EventThought    RunEventKind = "thought"    // reasoning the agent shares
)

// runEventKinds is the closed set of event kinds, in order.
var runEventKinds = []RunEventKind{EventOutput, EventState, EventText, EventUsage, EventTool, EventPermission, EventThought}

// RunEventKinds lists every run event kind, in order.
func RunEventKinds() []RunEventKind { return slices.Clone(runEventKinds) }

// Valid reports whether k is one of RunEventKinds.
func (k RunEventKind) Valid() bool { return slices.Contains(runEventKinds, k) }

// Run bounds.
const (
	MaxRunEvent     = 16 << 10 // bytes of one event's text
	MaxRunKept      = 1 << 20  // bytes of output a run's log retains
	MaxRunHead      = 256 << 10
	MaxCheckTimeout = 6 * time.Hour
)

// Run is the durable record of one execution (CONTRACT.md §6). Its output
// log is a sequence of RunEvents numbered from 1; the log keeps at most
// MaxRunKept bytes: the first MaxRunHead bytes always, and the newest rest
// (older events past the head are dropped, DroppedThrough says up to which
// seq).
type Run struct {
	ID         string
	Kind       RunKind
	State      RunState
	GroupID    string // whose run it is: the group of the caller that started it
	ProjectID  string
	SessionID  string // "" when it belongs to no session
	Check      string // the check's name (validation)
	ProviderID string // the provider (agent)
	Dir        string // working directory: the project root or the session's worktree
	// Spec is what was run, as JSON the run's kind defines (a check's argv,
	// timeout and environment names; an agent's prompt digest).
	Spec string
	// RequestHash identifies the request: a keyed start replays on it, and
	// validation runs share on it.
	RequestHash string
	// SourceHead and SourceTree are the source fingerprint taken before the
	// run started (validation): git HEAD and a hash of the working tree.
	SourceHead string
	SourceTree string
	// SourceStat, when the fingerprint took files by size and modification
	// time instead of content (too large to read within a call), lists
	// them: JSON {"paths": [...], "total": N}; "" when it read every file.
	SourceStat string
	// Owner is the process that runs it ("" while nobody has taken it) and
	// LeaseUntil how long its claim holds without renewal; a run whose
	// lease ran out is interrupted by whoever notices.
	Owner      string
	LeaseUntil time.Time
	// Proc identifies the process group on its host ("host pgid start"),
	// so that a later process on the same host can kill what is left of it.
	Proc            string
	CancelRequested bool
	ExitCode        *int
	ErrorKind       string
	Usage           string // JSON, agent runs
	// The output log's counters.
	EventSeq       int64 // seq of the newest event, 0 before the first
	OutputBytes    int64 // bytes of every event ever appended
	KeptBytes      int64 // bytes of the events retained
	HeadSeq        int64 // the last seq of the always-kept head
	DroppedThrough int64 // events HeadSeq+1..DroppedThrough were dropped; 0: none
	Revision       int64 // +1 on every change but lease renewal and appends
	CreatedAt      time.Time
	StartedAt      *time.Time
	EndedAt        *time.Time
}

// RunEvent is one entry of a run's output log.
type RunEvent struct {
	RunID string
	Seq   int64
	Kind  RunEventKind
	Text  string
	At    time.Time
}

// Evidence records that a session ran (or shares) a validation run: the
// brief's validation section is built from it.
type Evidence struct {
	SessionID string
	Check     string
	RunID     string
	CreatedAt time.Time
}

// Check is a validation check the operator named for a project. It runs
// without a shell (argv as given) unless the operator wrote one into
// Command; its environment is a fixed base set plus the names in Env.
type Check struct {
	Command     []string `json:"command"`
	TimeoutSecs int      `json:"timeout_secs,omitempty"` // 0: the server's default
	Env         []string `json:"env,omitempty"`          // extra variable names passed through
}
