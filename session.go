package continuo

import (
	"slices"
	"strconv"
	"time"
)

// Lifecycle is a Workflow Session's lifecycle: active → closed, never back.
type Lifecycle string

// The session lifecycles.
const (
	LifecycleActive Lifecycle = "active"
	LifecycleClosed Lifecycle = "closed"
)

// lifecycles is the closed set of lifecycles, in the contract's order: the
// MCP schemas and both SQL dialects' CHECKs list exactly these.
var lifecycles = []Lifecycle{LifecycleActive, LifecycleClosed}

// Lifecycles lists every session lifecycle, in order.
func Lifecycles() []Lifecycle { return slices.Clone(lifecycles) }

// Valid reports whether l is one of Lifecycles.
func (l Lifecycle) Valid() bool { return slices.Contains(lifecycles, l) }

// Mode is how a session works on its project.
type Mode string

// The session modes.
const (
	ModeCheckout Mode = "checkout"
	ModeWorktree Mode = "worktree"
)

// modes is the closed set of session modes, in order.
var modes = []Mode{ModeCheckout, ModeWorktree}

// Modes lists every session mode, in order.
func Modes() []Mode { return slices.Clone(modes) }

// Valid reports whether m is one of Modes.
func (m Mode) Valid() bool { return slices.Contains(modes, m) }

// Session is a Workflow Session: one task in one project, owned by a group.
// Counters are kept with every write so that reads never scan messages.
type Session struct {
	ID             string
	Ref            int64 // the N of "~sN", unique per group, never reused
	GroupID        string
	ProjectID      string
	Title          string
	Lifecycle      Lifecycle
	Mode           Mode
	WorktreeBranch string
	WorktreePath   string
	RootInstr      string
	LatestInstr    string
	Instructions   int64 // how many instructions were given (start + resumes)
	Revision       int64 // +1 on every change
	MessageSeq     int64 // the seq of the newest message
	Summary        string
	StartHead      string // git HEAD of the checkout when the session started, "" without a root
	Counts         Counts
	CreatedAt      time.Time
	UpdatedAt      time.Time
	ClosedAt       *time.Time
}

// TimeFormat is how every time is written in results: RFC 3339, UTC,
// milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// SessionRef formats a session's short reference.
func SessionRef(n int64) string { return "~s" + strconv.FormatInt(n, 10) }

// Counts are a session's message tallies.
type Counts struct {
	Decisions     int64 `json:"decisions"`
	Progress      int64 `json:"progress"`
	OpenTodos     int64 `json:"open_todos"`
	OpenRisks     int64 `json:"open_risks"`
	OpenQuestions int64 `json:"open_questions"`
	OpenGuidance  int64 `json:"open_guidance"`
	Messages      int64 `json:"messages"`
	// SupersededDecisions counts decisions no longer in force; Decisions
	// minus this is the number in force.
	SupersededDecisions int64 `json:"superseded_decisions"`
	ResolvedQuestions   int64 `json:"resolved_questions"`
}

// Kind is a session message's kind.
type Kind string

// The message kinds.
const (
	KindDecision Kind = "decision"
	KindProgress Kind = "progress"
	KindTodo     Kind = "todo"
	KindRisk     Kind = "risk"
	KindQuestion Kind = "question"
	KindGuidance Kind = "guidance"
	KindNote     Kind = "note"
	KindAnswer   Kind = "answer"
)

// kinds is the closed set of message kinds, in order.
var kinds = []Kind{KindDecision, KindProgress, KindTodo, KindRisk, KindQuestion, KindGuidance, KindNote, KindAnswer}

// Kinds lists every message kind, in order.
func Kinds() []Kind { return slices.Clone(kinds) }

// Valid reports whether k is one of Kinds.
func (k Kind) Valid() bool { return slices.Contains(kinds, k) }

// KindInstruction is the kind under which list_session_messages shows the
// instructions given to a session (at start and on each resume). They are
// read-only: it is not one of Kinds, so it cannot be posted, and the
// messages table never holds it.
const KindInstruction Kind = "instruction"

// listKinds is what list_session_messages can filter on: every kind, then
// instruction.
var listKinds = append(slices.Clone(kinds), KindInstruction)

// ListKinds lists the kinds a listing may show, in order: Kinds, then
// KindInstruction.
func ListKinds() []Kind { return slices.Clone(listKinds) }

// Listable reports whether k is one of ListKinds.
func (k Kind) Listable() bool { return slices.Contains(listKinds, k) }

// Order is the order of a listing.
type Order string

// The listing orders.
const (
	OrderNewest Order = "newest"
	OrderOldest Order = "oldest"
)

// orders is the closed set of listing orders, in order (the default first).
var orders = []Order{OrderNewest, OrderOldest}

// Orders lists every listing order, the default first.
func Orders() []Order { return slices.Clone(orders) }

// Valid reports whether o is one of Orders.
func (o Order) Valid() bool { return slices.Contains(orders, o) }

// Resolvable reports whether messages of kind k can be resolved.
func (k Kind) Resolvable() bool { return k == KindTodo || k == KindQuestion || k == KindRisk }

// Tracked reports whether open messages of kind k are counted as open work.
func (k Kind) Tracked() bool { return k.Resolvable() || k == KindGuidance }

// Status is a message's status. Transitions: open → resolved (resolvable
// kinds) and open|resolved → superseded; nothing leaves superseded.
type Status string

// The message statuses.
const (
	StatusOpen       Status = "open"
	StatusResolved   Status = "resolved"
	StatusSuperseded Status = "superseded"
)

// statuses is the closed set of message statuses, in order.
var statuses = []Status{StatusOpen, StatusResolved, StatusSuperseded}

// Statuses lists every message status, in order.
func Statuses() []Status { return slices.Clone(statuses) }

// Valid reports whether s is one of Statuses.
func (s Status) Valid() bool { return slices.Contains(statuses, s) }

// Priority is a message's priority.
type Priority string

// The priorities.
const (
	PriorityLow    Priority = "low"
	PriorityNormal Priority = "normal"
	PriorityHigh   Priority = "high"
)

// priorities is the closed set of message priorities, in order.
var priorities = []Priority{PriorityLow, PriorityNormal, PriorityHigh}

// Priorities lists every message priority, in order.
func Priorities() []Priority { return slices.Clone(priorities) }

// Valid reports whether p is one of Priorities.
func (p Priority) Valid() bool { return slices.Contains(priorities, p) }

// Message is a note in a session.
type Message struct {
	ID           string
	SessionID    string
	Seq          int64 // 1, 2, … within the session
	Kind         Kind
	Text         string
	Status       Status
	Priority     Priority
	Tags         []string
	ReplyTo      string
	Supersedes   string
	SupersededBy string
	Resolution   string
	ResolvedBy   string // the answer that resolved a question, "" otherwise
	Author       string // who posted it (Caller.Actor); "" before schema 18
	Resolver     string // who resolved it (Caller.Actor), "" while it is not
	CreatedAt    time.Time
	ResolvedAt   *time.Time
}

// HandoffTag marks a progress message as the session's current state
// (CONTRACT.md §3): the newest such message is carried in full by the brief.
const HandoffTag = "handoff"

// Handoff reports whether m is a current-state note: a progress message
// tagged HandoffTag.
func (m *Message) Handoff() bool {
	return m.Kind == KindProgress && slices.Contains(m.Tags, HandoffTag)
}

// Rank orders priorities by importance: 0 low, 1 normal, 2 high.
func (p Priority) Rank() int { return slices.Index(priorities, p) }
