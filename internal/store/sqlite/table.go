package sqlite

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/continuo-dev/continuo/internal/store"
)

// columns returns a table's column names in declaration order, and its
// primary-key columns in key order. The table name is checked against
// store.Tables first, so it is never attacker-chosen SQL.
func (t *tx) columns(ctx context.Context, table string) (cols, pk []string, err error) {
	if !slices.Contains(store.Tables, table) {
		return nil, nil, fmt.Errorf("unknown table %q", table)
	}
	rows, err := t.q.QueryContext(ctx, "SELECT name, pk FROM pragma_table_info(?) ORDER BY cid", table)
	if err != nil {
		return nil, nil, interpret(err)
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

func (t *tx) TableRows(ctx context.Context, table string, fn func(map[string]any) error) error {
	cols, pk, err := t.columns(ctx, table)
	if err != nil {
		return err
	}
	rows, err := t.q.QueryContext(ctx, "SELECT "+strings.Join(cols, ", ")+" FROM "+table+" ORDER BY "+strings.Join(pk, ", "))
	if err != nil {
		return interpret(err)
	}
	defer rows.Close()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		row := make(map[string]any, len(cols))
		for i, c := range cols {
			switch v := vals[i].(type) {
			case []byte:
				row[c] = string(v)
			default:
				row[c] = v
			}
		}
		if err := fn(row); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (t *tx) TableInsert(ctx context.Context, table string, row map[string]any) error {
	cols, _, err := t.columns(ctx, table)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(row))
	args := make([]any, 0, len(row))
	for _, c := range cols {
		if v, ok := row[c]; ok {
			names = append(names, c)
			args = append(args, v)
		}
	}
	if len(names) != len(row) {
		return fmt.Errorf("table %s: row has unknown columns", table)
	}
	_, err = t.exec(ctx, "INSERT INTO "+table+" ("+strings.Join(names, ", ")+") VALUES ("+placeholders(len(names))+")", args...)
	return err
}
