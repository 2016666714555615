package store

import (
	"context"

	"github.com/continuo-dev/continuo"
)

// MessageTx holds session messages.
type MessageTx interface {
	MessageCreate(ctx context.Context, m *continuo.Message) error
	MessageGet(ctx context.Context, sessionID, id string) (*continuo.Message, error)
	// MessageUpdate writes status, superseded_by, resolution, resolved_at and
	// resolved_by, guarded: only if the stored status is still prev, else
	// ErrStale.
	MessageUpdate(ctx context.Context, m *continuo.Message, prev continuo.Status) error
	// MessageList returns matching messages newest first (by Seq), at most
	// p.Limit of them, and only those with Seq < p.BeforeSeq when set.
	MessageList(ctx context.Context, p MessageListParams) ([]continuo.Message, error)
	// MessageCount counts every matching message; it ignores BeforeSeq and
	// Limit.
	MessageCount(ctx context.Context, p MessageListParams) (int64, error)

	// EntryList returns one page of a session's listing (messages and
	// instructions merged, store.EntryKey order), at most p.Limit entries.
	EntryList(ctx context.Context, p EntryListParams) ([]Entry, error)
	// EntryCount counts every matching entry; it ignores After and Limit.
	EntryCount(ctx context.Context, p EntryListParams) (int64, error)
}
