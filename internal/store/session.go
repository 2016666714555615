package store

import (
	"context"

	"github.com/continuo-dev/continuo"
)

// SessionTx holds Workflow Sessions and their instructions.
type SessionTx interface {
	// SessionRefNext reserves the next session reference number of a group,
	// by arithmetic in SQL (no read-modify-write in Go). A reservation is
	// part of the Write that makes it: when that Write fails, it rolls back
	// and the number may be handed out again — which is safe, because no
	// session ever carried it. A committed reservation is never handed out
	// again, even if no session is created with it.
	SessionRefNext(ctx context.Context, groupID string) (int64, error)
	SessionCreate(ctx context.Context, s *continuo.Session) error
	SessionGet(ctx context.Context, id string) (*continuo.Session, error)
	SessionGetByRef(ctx context.Context, groupID string, ref int64) (*continuo.Session, error)
	// SessionRevision returns only the revision: a cheap staleness probe.
	SessionRevision(ctx context.Context, id string) (int64, error)
	// SessionUpdate writes every mutable field of s, guarded: it updates the
	// row only if its revision is still prev (and s.Revision must be
	// greater), else ErrStale.
	SessionUpdate(ctx context.Context, s *continuo.Session, prev int64) error
	// SessionList returns one page of sessions, updated_at desc then ID
	// desc, and the number of all that match.
	SessionList(ctx context.Context, p SessionListParams) ([]continuo.Session, int64, error)

	InstructionAppend(ctx context.Context, in Instruction) error

	// SessionListByProject lists the sessions of every group in a project,
	// by ID (for the operator: removing a project).
	SessionListByProject(ctx context.Context, projectID string) ([]continuo.Session, error)
	// SessionDelete deletes a session with its instructions, messages,
	// goals (and their plans) and evidence; ErrNotFound for an unknown ID.
	// Its runs stay: they are its project's, other sessions may have
	// evidence of them, and ProjectDelete removes them.
	SessionDelete(ctx context.Context, id string) error
}
