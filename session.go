package continuo

import (
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

// Mode is how a session works on its project.
type Mode string

// The session modes.
const (
	ModeCheckout Mode = "checkout"
	ModeWorktree Mode = "worktree"
)

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

// Kinds lists every message kind.
func Kinds() []Kind {
	return []Kind{KindDecision, KindProgress, KindTodo, KindRisk, KindQuestion, KindGuidance, KindNote, KindAnswer}
}

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

// Priority is a message's priority.
type Priority string

// The priorities.
const (
	PriorityLow    Priority = "low"
	PriorityNormal Priority = "normal"
	PriorityHigh   Priority = "high"
)

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
	CreatedAt    time.Time
	ResolvedAt   *time.Time
}
