package sqlstore

import "time"

// where is a WHERE clause built one term at a time, with its arguments:
// the list queries' filters, each applied only when set.
type where struct {
	sql  string
	args []any
}

func newWhere(term string, args ...any) *where { return &where{sql: term, args: args} }

// and adds a term.
func (w *where) and(term string, args ...any) {
	w.sql += " AND " + term
	w.args = append(w.args, args...)
}

// eq adds col = v unless v is "".
func (w *where) eq(col, v string) {
	if v != "" {
		w.and(col+" = ?", v)
	}
}

// before adds col < at (as milliseconds) unless at is zero.
func (w *where) before(col string, at time.Time) {
	if !at.IsZero() {
		w.and(col+" < ?", ms(at))
	}
}

// in adds col IN (vs) unless vs is empty.
func in[S ~string](w *where, col string, vs []S) {
	if len(vs) == 0 {
		return
	}
	args := make([]any, len(vs))
	for i, v := range vs {
		args[i] = string(v)
	}
	w.and(col+" IN ("+Placeholders(len(vs))+")", args...)
}
