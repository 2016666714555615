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
