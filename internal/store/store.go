// Package store is the seam between Continuo's services and its databases.
//
// A driver (internal/store/sqlite, later internal/store/postgres) implements
// Store: Read runs a function in one consistent read snapshot, Write runs a
// function in a transaction that is durably committed before Write returns
// nil. Drivers only translate between Go values and SQL; every business rule
// lives in the services above. The conformance suite in storetest pins the
// behaviour every driver must share.
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
)

// Store is a database.
type Store interface {
	// Read calls fn inside one read-only snapshot. It never waits for writers.
	Read(ctx context.Context, fn func(Tx) error) error
	// Write calls fn inside a write transaction. When fn returns nil, the
	// transaction is durably committed before Write returns nil; when fn
	// returns an error, nothing fn wrote is kept and Write returns that error.
	// A driver may commit several concurrent Writes together (group commit);
	// each still sees the writes of those before it.
	Write(ctx context.Context, fn func(Tx) error) error
	// Ping reports whether the database answers.
	Ping(ctx context.Context) error
	// Close releases the database.
	Close() error
}

// Tx is what Read and Write functions see. Methods that write fail inside
// Read. Lookups return ErrNotFound; inserts that violate uniqueness return
// ErrConflict.
type Tx interface {
	MetaGet(ctx context.Context, key string) (string, error)
	MetaPut(ctx context.Context, key, value string) error

	GroupCreate(ctx context.Context, g *continuo.Group) error
	GroupByID(ctx context.Context, id string) (*continuo.Group, error)
	GroupByName(ctx context.Context, name string) (*continuo.Group, error)
	GroupList(ctx context.Context) ([]continuo.Group, error)

	PrincipalCreate(ctx context.Context, p *continuo.Principal) error
	PrincipalByID(ctx context.Context, id string) (*continuo.Principal, error)
	PrincipalByName(ctx context.Context, name string) (*continuo.Principal, error)
	PrincipalList(ctx context.Context) ([]continuo.Principal, error)

	TokenCreate(ctx context.Context, t *continuo.Token) error
	TokenByHash(ctx context.Context, hash string) (*continuo.Token, error)
	TokenByID(ctx context.Context, id string) (*continuo.Token, error)
	TokenRevoke(ctx context.Context, id string, at time.Time) error
	TokenList(ctx context.Context) ([]continuo.Token, error)

	ProjectCreate(ctx context.Context, p *continuo.Project) error
	ProjectByID(ctx context.Context, id string) (*continuo.Project, error)
	ProjectByName(ctx context.Context, name string) (*continuo.Project, error)
	ProjectList(ctx context.Context) ([]continuo.Project, error)
	GrantPut(ctx context.Context, g continuo.Grant) error
	GrantGet(ctx context.Context, projectID, groupID string) (continuo.Access, error)
	GrantList(ctx context.Context, groupID string) ([]continuo.Grant, error)

	// SessionNextRef reserves the next session reference number of a group.
	// A reservation is part of the Write that makes it: when that Write
	// fails, it rolls back and the number may be handed out again — which
	// is safe, because no session ever carried it. A committed reservation
	// is never handed out again, even if no session is created with it.
	SessionNextRef(ctx context.Context, groupID string) (int64, error)
	SessionCreate(ctx context.Context, s *continuo.Session) error
	SessionGet(ctx context.Context, id string) (*continuo.Session, error)
	SessionByRef(ctx context.Context, groupID string, ref int64) (*continuo.Session, error)
	// SessionRevision returns only the revision: a cheap staleness probe.
	SessionRevision(ctx context.Context, id string) (int64, error)
	// SessionUpdate writes every mutable field of s.
	SessionUpdate(ctx context.Context, s *continuo.Session) error
	SessionList(ctx context.Context, p SessionListParams) ([]continuo.Session, int64, error)
	InstructionAppend(ctx context.Context, in Instruction) error

	MessageInsert(ctx context.Context, m *continuo.Message) error
	MessageGet(ctx context.Context, sessionID, id string) (*continuo.Message, error)
	// MessageUpdate writes status, superseded_by, resolution and resolved_at.
	MessageUpdate(ctx context.Context, m *continuo.Message) error
	// MessageList returns matching messages newest first (by Seq), at most
	// p.Limit of them, and only those with Seq < p.BeforeSeq when set.
	MessageList(ctx context.Context, p MessageListParams) ([]continuo.Message, error)
	MessageCount(ctx context.Context, p MessageListParams) (int64, error)

	IdempotencyGet(ctx context.Context, scope, keyHash string) (*Idempotency, error)
	IdempotencyPut(ctx context.Context, rec Idempotency) error

	// TableRows calls fn with every row of one of Tables, in primary-key
	// order, as column name → value (int64, string or nil).
	TableRows(ctx context.Context, table string, fn func(row map[string]any) error) error
	// TableInsert inserts one row into one of Tables. Column names are
	// checked against the table's real columns.
	TableInsert(ctx context.Context, table string, row map[string]any) error
}

// Tables are the tables an export carries, parents before children, so
// that an import can insert them in this order.
var Tables = []string{"meta", "groups", "principals", "tokens", "projects", "grants",
	"sessions", "session_instructions", "messages", "idempotency"}

// SessionListParams selects a group's sessions in one project.
type SessionListParams struct {
	GroupID   string
	ProjectID string
	Lifecycle continuo.Lifecycle // empty: any
	Offset    int
	Limit     int
}

// Instruction is one instruction given to a session (at start or resume).
type Instruction struct {
	SessionID string
	Seq       int64
	Text      string
	CreatedAt time.Time
}

// MessageListParams selects messages of one session. Empty slices match all.
type MessageListParams struct {
	SessionID string
	Kinds     []continuo.Kind
	Statuses  []continuo.Status
	BeforeSeq int64 // 0: from the newest
	Limit     int
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
