package storetest

import (
	"testing"
	"time"

	"github.com/continuo-dev/continuo/internal/store"
)

func idempotencyTests() []test {
	return []test{
		{"PutGet", testIdemPutGet},
		{"Missing", testIdemMissing},
		{"Duplicate", testIdemDuplicate},
		{"ScopedKeys", testIdemScopedKeys},
		{"Delete", testIdemDelete},
	}
}

func getIdem(t *testing.T, s store.Store, scope, key string) (*store.Idempotency, error) {
	t.Helper()
	return read(t, s, func(tx store.Tx) (*store.Idempotency, error) { return tx.IdempotencyGet(t.Context(), scope, key) })
}

func testIdemPutGet(t *testing.T, s store.Store) {
	ctx := t.Context()
	want := store.Idempotency{Scope: "msg:ses_x", KeyHash: "k1", RequestHash: "r1", ResultID: "msg_1",
		CreatedAt: Base.Add(time.Second + 3*time.Millisecond)}
	MustWrite(t, s, func(tx store.Tx) error { return tx.IdempotencyCreate(ctx, want) })
	got, err := getIdem(t, s, want.Scope, want.KeyHash)
	noErr(t, err, "IdempotencyGet")
	same(t, "IdempotencyGet", *got, want, normIdem)
}

func testIdemMissing(t *testing.T, s store.Store) {
	ctx := t.Context()
	MustWrite(t, s, func(tx store.Tx) error {
		return tx.IdempotencyCreate(ctx, store.Idempotency{Scope: "a", KeyHash: "k", RequestHash: "r", ResultID: "x", CreatedAt: Base})
	})
	for _, c := range []struct{ scope, key string }{{"a", "other"}, {"b", "k"}, {"", ""}} {
		_, err := getIdem(t, s, c.scope, c.key)
		wantErr(t, err, store.ErrNotFound, "IdempotencyGet("+c.scope+", "+c.key+")")
	}
}

func testIdemDuplicate(t *testing.T, s store.Store) {
	ctx := t.Context()
	first := store.Idempotency{Scope: "a", KeyHash: "k", RequestHash: "r1", ResultID: "x1", CreatedAt: Base}
	MustWrite(t, s, func(tx store.Tx) error { return tx.IdempotencyCreate(ctx, first) })
	dup := store.Idempotency{Scope: "a", KeyHash: "k", RequestHash: "r2", ResultID: "x2", CreatedAt: Base.Add(time.Hour)}
	err := s.Write(ctx, func(tx store.Tx) error { return tx.IdempotencyCreate(ctx, dup) })
	wantErr(t, err, store.ErrConflict, "IdempotencyCreate of a taken (scope, key)")
	got, err := getIdem(t, s, "a", "k")
	noErr(t, err, "IdempotencyGet")
	same(t, "record after the refused duplicate", *got, first, normIdem)
}

func testIdemScopedKeys(t *testing.T, s store.Store) {
	ctx := t.Context()
	recs := []store.Idempotency{
		{Scope: "msg:ses_a", KeyHash: "k", RequestHash: "r1", ResultID: "x1", CreatedAt: Base},
		{Scope: "msg:ses_b", KeyHash: "k", RequestHash: "r2", ResultID: "x2", CreatedAt: Base.Add(time.Second)},
		{Scope: "msg:ses_a", KeyHash: "k2", RequestHash: "r3", ResultID: "x3", CreatedAt: Base.Add(2 * time.Second)},
	}
	for _, r := range recs {
		MustWrite(t, s, func(tx store.Tx) error { return tx.IdempotencyCreate(ctx, r) })
	}
	for _, want := range recs {
		got, err := getIdem(t, s, want.Scope, want.KeyHash)
		noErr(t, err, "IdempotencyGet")
		same(t, "IdempotencyGet("+want.Scope+", "+want.KeyHash+")", *got, want, normIdem)
	}
}

// IdempotencyDelete forgets a whole scope, or the keys of one result in it.
func testIdemDelete(t *testing.T, s store.Store) {
	ctx := t.Context()
	recs := []store.Idempotency{
		{Scope: "msg:ses_a", KeyHash: "k1", RequestHash: "r", ResultID: "m1", CreatedAt: Base},
		{Scope: "msg:ses_a", KeyHash: "k2", RequestHash: "r", ResultID: "m2", CreatedAt: Base},
		{Scope: "work:grp_a", KeyHash: "k1", RequestHash: "r", ResultID: "ses_a", CreatedAt: Base},
		{Scope: "work:grp_a", KeyHash: "k2", RequestHash: "r", ResultID: "ses_b", CreatedAt: Base},
	}
	for _, r := range recs {
		MustWrite(t, s, func(tx store.Tx) error { return tx.IdempotencyCreate(ctx, r) })
	}
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.IdempotencyDelete(ctx, store.IdempotencyDeleteParams{Scope: "msg:ses_a"}); err != nil {
			return err
		}
		return tx.IdempotencyDelete(ctx, store.IdempotencyDeleteParams{Scope: "work:grp_a", ResultID: "ses_a"})
	})
	for i, r := range recs {
		_, err := getIdem(t, s, r.Scope, r.KeyHash)
		if i < 3 {
			wantErr(t, err, store.ErrNotFound, "IdempotencyGet of a forgotten key "+r.Scope+" "+r.KeyHash)
		} else {
			noErr(t, err, "IdempotencyGet of a kept key")
		}
	}
	MustWrite(t, s, func(tx store.Tx) error {
		return tx.IdempotencyDelete(ctx, store.IdempotencyDeleteParams{Scope: "nothing"})
	})
}
