package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo/internal/store"
)

// TestPlanMigration: an empty database is migrated at any start; an older
// one only by `migrate up`, and otherwise refused with the command that
// fixes it; a newer one always refused.
func TestPlanMigration(t *testing.T) {
	ms := []store.Migration{{Version: 1, Name: "init"}, {Version: 2, Name: "goals"}, {Version: 3, Name: "runs"}}
	cases := []struct {
		current int
		mode    store.MigrateMode
		want    []int  // versions to apply
		err     string // substring of the refusal
	}{
		{0, store.MigrateEmpty, []int{1, 2, 3}, ""},
		{0, store.MigrateUp, []int{1, 2, 3}, ""},
		{1, store.MigrateEmpty, nil, "run `continuo migrate up`"},
		{2, store.MigrateUp, []int{3}, ""},
		{3, store.MigrateEmpty, nil, ""},
		{3, store.MigrateUp, nil, ""},
		{4, store.MigrateUp, nil, "newer than this binary"},
		{4, store.MigrateEmpty, nil, "upgrade continuo"},
	}
	for _, c := range cases {
		got, err := store.PlanMigration(ms, c.current, c.mode)
		if c.err != "" {
			if !errors.Is(err, store.ErrSchema) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("at %d, mode %d: %v, want ErrSchema saying %q", c.current, c.mode, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("at %d, mode %d: %v", c.current, c.mode, err)
			continue
		}
		var vs []int
		for _, m := range got {
			vs = append(vs, m.Version)
		}
		if len(vs) != len(c.want) || (len(vs) > 0 && (vs[0] != c.want[0] || vs[len(vs)-1] != c.want[len(c.want)-1])) {
			t.Errorf("at %d, mode %d: applies %v, want %v", c.current, c.mode, vs, c.want)
		}
	}
}
