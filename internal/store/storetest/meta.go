package storetest

import (
	"testing"

	"github.com/continuo-dev/continuo/internal/store"
)

func metaTests() []test {
	return []test{
		{"GetMissing", testMetaGetMissing},
		{"PutGet", testMetaPutGet},
		{"Overwrite", testMetaOverwrite},
	}
}

func testMetaGetMissing(t *testing.T, s store.Store) {
	ctx := t.Context()
	err := s.Read(ctx, func(tx store.Tx) error {
		_, err := tx.MetaGet(ctx, "nope")
		return err
	})
	wantErr(t, err, store.ErrNotFound, "MetaGet of a missing key (Read)")
	err = s.Write(ctx, func(tx store.Tx) error {
		_, err := tx.MetaGet(ctx, "nope")
		return err
	})
	wantErr(t, err, store.ErrNotFound, "MetaGet of a missing key (Write)")
}

func testMetaPutGet(t *testing.T, s store.Store) {
	ctx := t.Context()
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.MetaSet(ctx, "a", "1"); err != nil {
			return err
		}
		if err := tx.MetaSet(ctx, "empty", ""); err != nil {
			return err
		}
		return tx.MetaSet(ctx, "text", "héllo\nworld ✓")
	})
	MustRead(t, s, func(tx store.Tx) error {
		for k, want := range map[string]string{"a": "1", "empty": "", "text": "héllo\nworld ✓"} {
			got, err := tx.MetaGet(ctx, k)
			if err != nil {
				t.Errorf("MetaGet(%q): %v", k, err)
			} else if got != want {
				t.Errorf("MetaGet(%q) = %q, want %q", k, got, want)
			}
		}
		_, err := tx.MetaGet(ctx, "b")
		wantErr(t, err, store.ErrNotFound, "MetaGet of a key never put")
		return nil
	})
}

func testMetaOverwrite(t *testing.T, s store.Store) {
	ctx := t.Context()
	MustWrite(t, s, func(tx store.Tx) error { return tx.MetaSet(ctx, "k", "old") })
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.MetaSet(ctx, "k", "new"); err != nil {
			return err
		}
		// The overwrite is visible inside the same Write.
		if got, err := tx.MetaGet(ctx, "k"); err != nil || got != "new" {
			t.Errorf("MetaGet inside the overwriting Write = %q, %v; want \"new\"", got, err)
		}
		return nil
	})
	got, err := read(t, s, func(tx store.Tx) (string, error) { return tx.MetaGet(ctx, "k") })
	noErr(t, err, "MetaGet")
	if got != "new" {
		t.Errorf("MetaGet after overwrite = %q, want \"new\"", got)
	}
}
