package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// stamp is a write that sets a time on a row once — a use, a revocation —
// as the store's uses and revocations of clients, grants, tokens, links
// and sessions do.
type stamp[T any] struct {
	noun   string // the row, in messages: "token"
	op     string // the write, in messages: "OAuthTokenUse"
	prefix string // of the row's IDs
	write  func(tx store.Tx, ctx context.Context, id string, at time.Time) error
	// again is what a second write returns: ErrStale where a use is
	// guarded, nil where the write is idempotent.
	again error
	norm  func(T) T
}

// check writes the stamp on row id at at and checks that row() is then
// want; that a second write a second later is st.again and keeps the first
// time; that other() is still wantOther; and that the write of an unknown
// ID is ErrNotFound.
func (st stamp[T]) check(t *testing.T, s store.Store, id string, at time.Time, row func() T, want T, other func() T, wantOther T) {
	t.Helper()
	ctx := t.Context()
	MustWrite(t, s, func(tx store.Tx) error { return st.write(tx, ctx, id, at) })
	same(t, st.noun+" after "+st.op, row(), want, st.norm)
	second := func(tx store.Tx) error { return st.write(tx, ctx, id, at.Add(time.Second)) }
	if st.again == nil {
		MustWrite(t, s, second)
	} else {
		wantErr(t, s.Write(ctx, second), st.again, "a second "+st.op)
	}
	same(t, st.noun+" after a second "+st.op+" (first time kept)", row(), want, st.norm)
	same(t, "the other "+st.noun, other(), wantOther, st.norm)
	err := s.Write(ctx, func(tx store.Tx) error { return st.write(tx, ctx, continuo.NewID(st.prefix, Base), at) })
	wantErr(t, err, store.ErrNotFound, st.op+" of an unknown "+st.noun)
}
