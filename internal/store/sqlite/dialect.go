package sqlite

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/sqlstore"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// dialect is SQLite's side of sqlstore: ? placeholders as they are, error
// codes, and table introspection through pragma_table_info.
type dialect struct{}

func (dialect) Rebind(q string) string { return q }

// TextMatch looks the words up in the FTS5 index of migration 0002.
func (dialect) TextMatch() string {
	return "m.rowid IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?)"
}

// MatchQuery quotes every word (an FTS5 string), which FTS5 joins with AND.
func (dialect) MatchQuery(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = `"` + w + `"`
	}
	return strings.Join(q, " ")
}

// SkipLocked is empty: SQLite has one writer at a time, so the row a
// sub-SELECT chooses is never another writer's.
func (dialect) SkipLocked() string { return "" }

func (dialect) Interpret(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return errors.Join(store.ErrConflict, err)
		}
	}
	return err
}

func (dialect) Columns(ctx context.Context, q sqlstore.Querier, table string) (cols, pk []string, err error) {
	rows, err := q.QueryContext(ctx, "SELECT name, pk FROM pragma_table_info(?) ORDER BY cid", table)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	type key struct {
		name string
		n    int
	}
	var keys []key
	for rows.Next() {
		var name string
		var n int
		if err := rows.Scan(&name, &n); err != nil {
			return nil, nil, err
		}
		cols = append(cols, name)
		if n > 0 {
			keys = append(keys, key{name, n})
		}
	}
	slices.SortFunc(keys, func(a, b key) int { return a.n - b.n })
	for _, k := range keys {
		pk = append(pk, k.name)
	}
	return cols, pk, rows.Err()
}
