package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"

	"github.com/continuo-dev/continuo/internal/store"
)

// stateful is a state type with a transition table.
type stateful[S any] interface {
	~string
	CanBecome(S) bool
	From() []S
}

// stateGuard keeps a state column's change to what its table allows.
type stateGuard struct {
	col     string
	allowed []string // the states the row may be in for the update to apply
}

// keep is the guard of an update that leaves col's state as it is: the
// row must still be in cur, the state the caller read (an update whose
// in-memory state was changed is refused, not written).
func keep[S ~string](col string, cur S) stateGuard {
	return stateGuard{col: col, allowed: []string{string(cur)}}
}

// move is the guard of moving col from cur, the state the caller read,
// to to: the row must be in a state the table lets become to. A move to
// cur itself is no transition (other fields change) and is guarded as
// keep. A state the table does not know is refused whatever the row.
func move[S stateful[S]](col string, cur, to S) stateGuard {
	if to == cur {
		return keep(col, cur)
	}
	g := stateGuard{col: col, allowed: []string{}}
	for _, s := range to.From() {
		g.allowed = append(g.allowed, string(s))
	}
	return g
}

// guarded runs query, an UPDATE of the one row of table whose WHERE is
// "<key> = ? AND <its revision> = ?", with each guard's column held to its
// allowed states: UPDATE … SET state = new … WHERE id = ? AND revision = ?
// AND state IN (allowed). When it changes nothing it says why: the row is
// gone (store.ErrNotFound), its state may not become the new one
// (store.ErrInvalidState), or it changed since it was read (store.ErrStale).
func (t *Tx) guarded(ctx context.Context, table, key, id string, guards []stateGuard, query string, args ...any) error {
	cols := make([]string, len(guards))
	for i, g := range guards {
		cols[i] = g.col
		if len(g.allowed) == 0 {
			query += " AND 1 = 0"
			continue
		}
		query += " AND " + g.col + " IN (" + Placeholders(len(g.allowed)) + ")"
		for _, s := range g.allowed {
			args = append(args, s)
		}
	}
	res, err := t.exec(ctx, query, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil || n > 0 {
		return err
	}
	now := make([]string, len(guards))
	ptrs := make([]any, len(guards))
	for i := range now {
		ptrs[i] = &now[i]
	}
	if err := t.row(ctx, "SELECT "+strings.Join(cols, ", ")+" FROM "+table+" WHERE "+key+" = ?", id).Scan(ptrs...); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		return t.interpret(err)
	}
	for i, g := range guards {
		if !slices.Contains(g.allowed, now[i]) {
			return store.ErrInvalidState
		}
	}
	return store.ErrStale
}
