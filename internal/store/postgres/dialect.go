package postgres

import (
	"context"
	"errors"
	"strings"

	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/sqlstore"
	"github.com/jackc/pgx/v5/pgconn"
)

// dialect is PostgreSQL's side of sqlstore: $n placeholders, SQLSTATE
// codes, and table introspection through the catalog.
type dialect struct{ sqlstore.Numbered }

// SQLSTATE codes this driver acts on.
const (
	codeUnique        = "23505"
	codeSerialization = "40001"
	codeDeadlock      = "40P01"
)

// TextMatch is the expression of the GIN index of migration 0002.
func (*dialect) TextMatch() string {
	return "to_tsvector('simple', m.search_text) @@ plainto_tsquery('simple', ?)"
}

// MatchQuery gives plainto_tsquery the words, which it joins with &.
func (*dialect) MatchQuery(words []string) string { return strings.Join(words, " ") }

// SkipLocked locks the row a sub-SELECT chooses and passes over rows
// another transaction has locked, so that concurrent claimers take
// different rows.
func (*dialect) SkipLocked() string { return " FOR UPDATE SKIP LOCKED" }

func (*dialect) Interpret(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == codeUnique {
		return errors.Join(store.ErrConflict, err)
	}
	return err
}

// retryable reports whether a transaction lost a serialization race and
// may simply be run again.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == codeSerialization || pe.Code == codeDeadlock)
}

func (*dialect) Columns(ctx context.Context, q sqlstore.Querier, table string) (cols, pk []string, err error) {
	rows, err := q.QueryContext(ctx, `SELECT a.attname, COALESCE((SELECT k.n FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
			WHERE k.attnum = a.attnum), 0)
		FROM pg_attribute a
		JOIN pg_class c ON c.oid = a.attrelid
		LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
		WHERE c.oid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped
		ORDER BY a.attnum`, table)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	keys := map[int]string{}
	for rows.Next() {
		var name string
		var pos int
		if err := rows.Scan(&name, &pos); err != nil {
			return nil, nil, err
		}
		cols = append(cols, name)
		if pos > 0 {
			keys[pos] = name
		}
	}
	for i := 1; i <= len(keys); i++ {
		pk = append(pk, keys[i])
	}
	return cols, pk, rows.Err()
}
