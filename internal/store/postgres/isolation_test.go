package postgres_test

import (
	"context"
	"testing"

	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/pgtest"
)

// TestReadCommitted: a Write marked store.ReadCommitted sees, in a later
// statement, what another Write committed after its first one; an
// unmarked Write keeps its snapshot.
func TestReadCommitted(t *testing.T) {
	pgtest.BaseURL(t)
	db := open(t, pgtest.Schema(t), nil)
	ctx := t.Context()
	set := func(v string) {
		if err := db.Write(ctx, func(tx store.Tx) error { return tx.MetaSet(ctx, "isolation-probe", v) }); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"snapshot", ctx, "before"},
		{"read committed", store.ReadCommitted(ctx), "after"},
	} {
		set("before")
		var seen string
		err := db.Write(c.ctx, func(tx store.Tx) error {
			if _, err := tx.MetaGet(ctx, "isolation-probe"); err != nil { // the snapshot starts here
				return err
			}
			set("after") // another transaction commits meanwhile
			var err error
			seen, err = tx.MetaGet(ctx, "isolation-probe")
			return err
		})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if seen != c.want {
			t.Errorf("%s: the second read saw %q, want %q", c.name, seen, c.want)
		}
	}
}
