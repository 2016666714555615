package storetest

import (
	"context"
	"errors"

	"github.com/continuo-dev/continuo/internal/store"
)

// Rerun wraps s so that every Write runs its function twice: first in a
// transaction that is thrown away whatever the function returns, then for
// real. That is what a driver's retry after a serialization failure does
// (store's package comment), so a service whose write functions are not
// safe to run twice — they change what they captured, or act outside the
// Tx — fails its tests under Rerun on any engine, not only on PostgreSQL
// under contention.
func Rerun(s store.Store) store.Store { return rerun{s} }

type rerun struct{ store.Store }

var errDiscard = errors.New("storetest: first attempt discarded")

func (r rerun) Write(ctx context.Context, fn func(store.Tx) error) error {
	err := r.Store.Write(ctx, func(tx store.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return errDiscard
	})
	if err != nil && !errors.Is(err, errDiscard) && ctx.Err() != nil {
		return err
	}
	return r.Store.Write(ctx, fn)
}
