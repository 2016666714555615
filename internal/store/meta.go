package store

import "context"

// MetaTx reads and writes the key-value meta table (bootstrap marker,
// server secrets).
type MetaTx interface {
	MetaGet(ctx context.Context, key string) (string, error)
	MetaSet(ctx context.Context, key, value string) error
}
