package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/continuo-dev/continuo/internal/store"
)

// columns checks the table name against store.Tables first, so it is never
// attacker-chosen SQL.
func (t *Tx) columns(ctx context.Context, table string) (cols, pk []string, err error) {
	if !slices.Contains(store.Tables, table) {
		return nil, nil, fmt.Errorf("unknown table %q", table)
	}
	cols, pk, err = t.d.Columns(ctx, t.q, table)
	if err == nil && (len(cols) == 0 || len(pk) == 0) {
		err = fmt.Errorf("table %s: no columns or no primary key", table)
	}
	return cols, pk, t.interpret(err)
}

// TableRows implements store.TableTx.
func (t *Tx) TableRows(ctx context.Context, table string, fn func(map[string]any) error) error {
	cols, pk, err := t.columns(ctx, table)
	if err != nil {
		return err
	}
	rows, err := t.rows(ctx, "SELECT "+strings.Join(cols, ", ")+" FROM "+table+" ORDER BY "+strings.Join(pk, ", "))
	if err != nil {
		return err
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
			case int32:
				row[c] = int64(v)
			case int16:
				row[c] = int64(v)
			default:
				row[c] = v
			}
		}
		if err := fn(row); err != nil {
			return err
		}
	}
	return t.interpret(rows.Err())
}

// TableInsert implements store.TableTx.
func (t *Tx) TableInsert(ctx context.Context, table string, row map[string]any) error {
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
	_, err = t.exec(ctx, "INSERT INTO "+table+" ("+strings.Join(names, ", ")+") VALUES ("+Placeholders(len(names))+")", args...)
	return err
}
