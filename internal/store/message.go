package store

import (
	"context"

	"github.com/continuo-dev/continuo"
)

// MessageTx holds session messages.
type MessageTx interface {
	MessageCreate(ctx context.Context, m *continuo.Message) error
	MessageGet(ctx context.Context, sessionID, id string) (*continuo.Message, error)
	// MessageUpdate writes status, superseded_by, resolution and resolved_at,
	// guarded: only if the stored status is still prev, else ErrStale.
	MessageUpdate(ctx context.Context, m *continuo.Message, prev continuo.Status) error
	// MessageList returns matching messages newest first (by Seq), at most
	// p.Limit of them, and only those with Seq < p.BeforeSeq when set.
	MessageList(ctx context.Context, p MessageListParams) ([]continuo.Message, error)
	// MessageCount counts every matching message; it ignores BeforeSeq and
	// Limit.
	MessageCount(ctx context.Context, p MessageListParams) (int64, error)
}
