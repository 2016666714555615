package store

import "context"

// IdempotencyTx records keyed mutations (CONTRACT.md §1).
type IdempotencyTx interface {
	IdempotencyGet(ctx context.Context, scope, keyHash string) (*Idempotency, error)
	// IdempotencyCreate records a key; a key already recorded in the scope
	// is ErrConflict.
	IdempotencyCreate(ctx context.Context, rec Idempotency) error
	// IdempotencyDelete forgets the keys of a scope: all of them, or only
	// those whose result is p.ResultID. Forgetting none is not an error.
	IdempotencyDelete(ctx context.Context, p IdempotencyDeleteParams) error
}
