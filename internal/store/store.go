// Package store is the seam between Continuo's services and its databases.
//
// A driver (internal/store/sqlite, internal/store/postgres) implements Store:
// Read runs a function in one consistent read snapshot, Write runs a function
// in a transaction that is durably committed before Write returns nil. Drivers only translate between Go values and SQL; every
// business rule lives in the services above. The conformance suite in
// storetest pins the behaviour every driver must share.
//
// # The Write contract
//
// Write may call fn more than once: a driver retries a transaction that lost
// a serialization race (PostgreSQL reports it as a serialization failure or
// a deadlock) by running fn again from the start, a bounded number of times
// with jittered back-off. So fn must read and write only through the Tx it
// is given, must not change anything it captured from outside before it has
// read what it needs (set results at the end, from values computed in this
// attempt), and must not have effects outside the database. Notifications
// (Tx.Notify) are such an effect made safe: they are delivered only after
// the attempt that sent them commits.
//
// When fn returns an error, nothing it wrote is kept and Write returns that
// error. An error returned by a Tx method (ErrConflict from a unique
// constraint, say) may have aborted the transaction on some engines, so fn
// must return it (after wrapping or translating it), not carry on.
//
// # Isolation
//
// A Write sees one snapshot, every Write acknowledged before it began, and
// its own writes. Two Writes that update (or upsert) the same row never
// both commit as they ran: on SQLite the single writer orders them; on
// PostgreSQL (snapshot isolation) the second is run again. Writes that
// read what the other writes but update disjoint rows are not ordered (the
// write skew snapshot isolation allows), which is why every Write updates
// the row guarding what it read — see below.
//
// # Guarded updates
//
// Mutable rows carry a revision (sessions) or a state (messages); every
// update names the value it read, and updates zero rows — ErrStale — when the
// row changed meanwhile. Counters change under the same guard. New tables
// follow the same pattern: read, decide in Go, write with a compare-and-set.
//
// A Write updates the row that guards an aggregate (a session, a group's
// reference counter) before it inserts the aggregate's children: two
// concurrent Writes then collide on that row, which PostgreSQL reports as a
// serialization failure and the driver retries. Inserting a child first
// would let them collide on the child's unique key instead, which
// PostgreSQL reports as a unique violation (ErrConflict) that nobody
// retries.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/continuo-dev/continuo"
)

// Sentinel errors. Services translate them into contract errors; they never
// cross a service boundary unwrapped.
var (
	ErrNotFound = errors.New("store: not found")
	ErrConflict = errors.New("store: conflict") // a unique constraint was violated
	// ErrStale is returned by a guarded update whose row no longer holds the
	// revision or state it was read with.
	ErrStale = errors.New("store: stale")
	// ErrInvalidState is returned by a guarded transition whose row is in
	// a state its transition table (continuo's CanBecome) does not let
	// become the new one; nothing changed.
	ErrInvalidState = errors.New("store: state does not allow the change")
	// ErrAmbiguous is returned by a Write whose commit may or may not have
	// happened (the connection broke while COMMIT was in flight). A keyed
	// mutation can be retried with its key; anything else must look first.
	ErrAmbiguous = errors.New("store: commit outcome unknown")
	// ErrSchema is returned by Open for a database whose schema the binary
	// cannot use as it is (older: migrate; newer: upgrade the binary).
	ErrSchema = errors.New("store: schema version mismatch")
	// ErrNoDatabase is returned by Open, when asked to open an existing
	// database only, for one that does not exist or has no schema yet.
	ErrNoDatabase = errors.New("store: no Continuo database")
)

// Store is a database.
type Store interface {
	// Read calls fn inside one read-only snapshot. It never waits for writers.
	Read(ctx context.Context, fn func(Tx) error) error
	// Write calls fn inside a write transaction; see the package comment for
	// the contract fn must keep and what it guarantees. When fn returns nil, the
	// transaction is durably committed before Write returns nil.
	Write(ctx context.Context, fn func(Tx) error) error
	// Listen subscribes to notifications on channel sent by Writes that
	// commit after Listen returns. Each notification's payload is sent on the
	// returned channel; deliveries may be coalesced or dropped while the
	// receiver is busy, and a driver may miss some (another process on
	// SQLite, a lost connection on PostgreSQL), so a listener re-reads the
	// state it waits for after every wake-up and also every PollInterval.
	// The subscription ends, and the channel is closed, when ctx ends.
	Listen(ctx context.Context, channel string) (<-chan string, error)
	// Ping reports whether the database answers and is still the one
	// that was opened (a SQLite file deleted or replaced under the open
	// handle is an error: writes to it would be lost).
	Ping(ctx context.Context) error
	// Close releases the database.
	Close() error
}

// readCommitted marks a Write's context; see ReadCommitted.
type readCommitted struct{}

// ReadCommitted returns ctx marked so that a Write with it runs at READ
// COMMITTED on PostgreSQL rather than under snapshot isolation. It is for
// a Write whose every decision is a guarded statement or is re-read after
// the row it depends on was locked — a queue claim, above all: under a
// snapshot, every claimer whose snapshot predates another's committed
// claim of the oldest queued row fails on it and is run again, so
// concurrent claimers retry far more than they work. SQLite's single
// writer has nothing to relax and ignores the mark.
func ReadCommitted(ctx context.Context) context.Context {
	return context.WithValue(ctx, readCommitted{}, true)
}

// IsReadCommitted reports whether ctx carries the ReadCommitted mark.
func IsReadCommitted(ctx context.Context) bool {
	v, _ := ctx.Value(readCommitted{}).(bool)
	return v
}

// PollInterval bounds what a missed notification costs a listener: it
// re-reads what it waits for at least this often.
const PollInterval = time.Second

// Tx is what Read and Write functions see. Methods that write fail inside
// Read. Lookups return ErrNotFound; inserts that violate uniqueness return
// ErrConflict; guarded updates return ErrStale.
type Tx interface {
	MetaTx
	AuthTx
	OAuthTx
	SignInTx
	ProjectTx
	SessionTx
	MessageTx
	GoalTx
	RunTx
	SwarmTx
	ContinuationTx
	IdempotencyTx
	TableTx
	// Notify sends payload on channel once this transaction commits (never
	// if it rolls back). Channel and payload are short ASCII: at most 64 and
	// 1024 bytes.
	Notify(ctx context.Context, channel, payload string) error
	// Part runs fn inside a savepoint of this transaction: when fn fails,
	// what it wrote is rolled back, the rest of the transaction stands and
	// may commit, and failed is fn's error. err is the savepoint's own
	// failure, after which the transaction must end (return it). A
	// notification fn sent before failing may still be delivered on
	// SQLite: a spurious wake-up, which every listener re-reads past.
	Part(ctx context.Context, fn func() error) (failed, err error)
}

// Notification bounds.
const (
	MaxChannel = 64
	MaxPayload = 1024
)

// CheckNotify validates a notification; drivers call it from Notify.
func CheckNotify(channel, payload string) error {
	if channel == "" || len(channel) > MaxChannel || len(payload) > MaxPayload {
		return errors.New("store: notification channel must be 1..64 bytes and payload at most 1024")
	}
	return nil
}

// Instruction is one instruction given to a session (at start or resume).
type Instruction struct {
	SessionID string
	Seq       int64
	// AfterSeq is the session's MessageSeq when the instruction was given:
	// a listing shows it after that message and before the next.
	AfterSeq  int64
	Text      string
	CreatedAt time.Time
}

// Idempotency records the outcome of a keyed mutation so that a replay of the
// same key returns it and a different payload under the same key is refused.
type Idempotency struct {
	Scope       string // what the key is unique within, e.g. "msg:" + session id
	KeyHash     string
	RequestHash string
	ResultID    string
	CreatedAt   time.Time
}

// IdempotencyDeleteParams selects keys to forget.
type IdempotencyDeleteParams struct {
	Scope    string
	ResultID string // "": every key of the scope
}

// TokenRevokeParams revokes a token.
type TokenRevokeParams struct {
	ID string
	At time.Time
}

// SessionListParams selects a group's sessions in one project.
type SessionListParams struct {
	GroupID   string
	ProjectID string
	Lifecycle continuo.Lifecycle // empty: any
	// Words (SearchWords; empty: any session) keep the sessions whose
	// title holds every word, or one of whose messages or instructions
	// does (the match of EntryListParams.Words), by the redacted text.
	Words  []string
	Offset int
	Limit  int
}

// EntryKey is where an entry stands in a session's listing, which merges
// messages and instructions: a message is (Seq, 0), an instruction is
// (AfterSeq, its instruction seq). Keys are compared as pairs; instruction
// seqs start at 1, so an instruction comes after the message it follows and
// before the next one.
type EntryKey struct{ Pos, Sub int64 }

// Less orders keys.
func (k EntryKey) Less(o EntryKey) bool {
	return k.Pos < o.Pos || (k.Pos == o.Pos && k.Sub < o.Sub)
}

// Entry is one item of a session's listing: a message, or an instruction
// shown as a message of kind continuo.KindInstruction (Seq is then the
// instruction's seq, ID is empty, Status open, Priority normal).
type Entry struct {
	continuo.Message
	Key EntryKey
}

// EntryListParams selects the entries of one session. Empty slices match
// all; Kinds may hold continuo.KindInstruction.
type EntryListParams struct {
	SessionID string
	Kinds     []continuo.Kind
	Statuses  []continuo.Status
	// Words, when not empty, keeps only entries whose search text holds
	// every one of them as a whole word (SearchWords of the query).
	Words  []string
	Oldest bool      // ascending keys; else descending
	After  *EntryKey // keyset: only entries strictly after this one in the order
	Limit  int
}

// MessageListParams selects messages of one session. Empty slices match all.
type MessageListParams struct {
	SessionID string
	Kinds     []continuo.Kind
	Statuses  []continuo.Status
	BeforeSeq int64 // 0: from the newest
	Limit     int
	// ByPriority lists high priority first, then normal, then low, each
	// newest first (MessageList only; BeforeSeq must be 0). With one kind
	// and one status it is a range scan of the messages_rank index.
	ByPriority bool
	// Handoff matches only current-state notes (Message.Handoff), by the
	// messages_handoff index.
	Handoff bool
	// Corrections matches only messages that supersede another (Supersedes
	// set). With one kind and one status, newest first, it is a range scan
	// of the messages_corrections partial index.
	Corrections bool
	// IDs, when set, matches only these messages: one lookup of the
	// primary key each, in one query (the brief's cited decisions and
	// answers).
	IDs []string
}
