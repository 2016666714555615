package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"slices"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/store"
)

// SearchText is what the text index holds for a text: the words of its
// redacted form (store.SearchDoc), so that a query can never find a secret
// that a model could not read.
func SearchText(text string) string {
	r, _ := redact.String(text)
	return store.SearchDoc(r)
}

const messageCols = `id, session_id, seq, kind, text, status, priority, tags, reply_to, supersedes, superseded_by,
	resolution, created_at, resolved_at, resolved_by, author, resolver`

func scanMessage(sc scanner) (*continuo.Message, error) {
	var m continuo.Message
	var kind, status, prio, tags string
	var created int64
	var resolved sql.NullInt64
	err := sc.Scan(&m.ID, &m.SessionID, &m.Seq, &kind, &m.Text, &status, &prio, &tags, &m.ReplyTo, &m.Supersedes,
		&m.SupersededBy, &m.Resolution, &created, &resolved, &m.ResolvedBy, &m.Author, &m.Resolver)
	if err != nil {
		return nil, err
	}
	m.Kind, m.Status, m.Priority = continuo.Kind(kind), continuo.Status(status), continuo.Priority(prio)
	if err := json.Unmarshal([]byte(tags), &m.Tags); err != nil {
		return nil, err
	}
	m.CreatedAt, m.ResolvedAt = fromMS(created), fromNullMS(resolved)
	return &m, nil
}

// MessageCreate implements store.MessageTx.
func (t *Tx) MessageCreate(ctx context.Context, m *continuo.Message) error {
	tags := m.Tags
	if tags == nil {
		tags = []string{}
	}
	tj, err := json.Marshal(tags)
	if err != nil {
		return err
	}
	// rank and handoff are derived from fields that never change, so
	// they are written once, here, and only read by the brief's queries.
	_, err = t.exec(ctx, "INSERT INTO messages ("+messageCols+", search_text, rank, handoff) VALUES ("+Placeholders(20)+")",
		m.ID, m.SessionID, m.Seq, string(m.Kind), m.Text, string(m.Status), string(m.Priority), string(tj), m.ReplyTo,
		m.Supersedes, m.SupersededBy, m.Resolution, ms(m.CreatedAt), msPtr(m.ResolvedAt), m.ResolvedBy, m.Author, m.Resolver,
		SearchText(m.Text),
		m.Priority.Rank(), boolInt(m.Handoff()))
	return err
}

// MessageGet implements store.MessageTx.
func (t *Tx) MessageGet(ctx context.Context, sessionID, id string) (*continuo.Message, error) {
	m, err := scanMessage(t.row(ctx, "SELECT "+messageCols+" FROM messages WHERE id = ? AND session_id = ?", id, sessionID))
	return m, t.interpret(err)
}

// MessageUpdate implements store.MessageTx.
func (t *Tx) MessageUpdate(ctx context.Context, m *continuo.Message, prev continuo.Status) error {
	return t.execOne(ctx, store.ErrStale, `UPDATE messages SET status = ?, superseded_by = ?, resolution = ?, resolved_at = ?, resolved_by = ?,
		resolver = ? WHERE id = ? AND session_id = ? AND status = ?`,
		string(m.Status), m.SupersededBy, m.Resolution, msPtr(m.ResolvedAt), m.ResolvedBy, m.Resolver, m.ID, m.SessionID, string(prev))
}

// messageWhere builds the filter shared by MessageList and MessageCount.
// With IDs it leaves the session out (byID checks it on each row found).
func messageWhere(p store.MessageListParams) (string, []any) {
	where, args := "session_id = ?", []any{p.SessionID}
	if len(p.IDs) > 0 {
		where, args = "1 = 1", nil
	}
	if p.Handoff {
		where += " AND handoff = 1"
	}
	if p.Corrections {
		// Written as the index's own predicate, so that both planners see
		// that messages_corrections covers the query.
		where += " AND supersedes <> ''"
	}
	where, args = andIn(where, args, "id", p.IDs)
	where, args = andIn(where, args, "kind", p.Kinds)
	where, args = andIn(where, args, "status", p.Statuses)
	return where, args
}

// andIn adds "AND col IN (?, …)" for vals to a filter; nothing when vals
// is empty (which matches all).
func andIn[T ~string](where string, args []any, col string, vals []T) (string, []any) {
	if len(vals) == 0 {
		return where, args
	}
	for _, v := range vals {
		args = append(args, string(v))
	}
	return where + " AND " + col + " IN (" + Placeholders(len(vals)) + ")", args
}

// MessageList implements store.MessageTx.
func (t *Tx) MessageList(ctx context.Context, p store.MessageListParams) ([]continuo.Message, error) {
	if len(p.IDs) > 0 {
		return t.byID(ctx, p)
	}
	where, args := messageWhere(p)
	if p.BeforeSeq > 0 {
		where += " AND seq < ?"
		args = append(args, p.BeforeSeq)
	}
	order := " ORDER BY seq DESC"
	if p.ByPriority {
		order = " ORDER BY rank DESC, seq DESC"
	}
	return list(t, ctx, scanMessage, "SELECT "+messageCols+" FROM messages WHERE "+where+order+" LIMIT ?", append(args, p.Limit)...)
}

// byID reads the messages p.IDs names by the primary key alone, with no
// ORDER BY or LIMIT in SQL: given the session's column and an order to
// keep, a planner may rather walk the session's index in seq order (a
// LIMIT looks cheap that way) and so read the whole session — SQLite did,
// 40 ms for 8 ids in a session of 100,000. The few rows found are checked
// against the session and ordered here.
func (t *Tx) byID(ctx context.Context, p store.MessageListParams) ([]continuo.Message, error) {
	where, args := messageWhere(p)
	ms, err := list(t, ctx, scanMessage, "SELECT "+messageCols+" FROM messages WHERE "+where, args...)
	ms = slices.DeleteFunc(ms, func(m continuo.Message) bool {
		return m.SessionID != p.SessionID || p.BeforeSeq > 0 && m.Seq >= p.BeforeSeq
	})
	slices.SortFunc(ms, func(a, b continuo.Message) int {
		if p.ByPriority && a.Priority.Rank() != b.Priority.Rank() {
			return b.Priority.Rank() - a.Priority.Rank()
		}
		return cmp.Compare(b.Seq, a.Seq)
	})
	if p.Limit > 0 {
		ms = ms[:min(len(ms), p.Limit)]
	}
	return ms, err
}

// MessageCount implements store.MessageTx.
func (t *Tx) MessageCount(ctx context.Context, p store.MessageListParams) (int64, error) {
	if len(p.IDs) > 0 {
		p.Limit, p.BeforeSeq = 0, 0
		ms, err := t.byID(ctx, p)
		return int64(len(ms)), err
	}
	where, args := messageWhere(p)
	var n int64
	err := t.row(ctx, "SELECT count(*) FROM messages WHERE "+where, args...).Scan(&n)
	return n, t.interpret(err)
}

// The listing merges two arms, each cut to the page size in its own order
// before they are merged: messages (m) and instructions (i), in the same
// columns, with the entry key as pos and sub (store.EntryKey).
const (
	entryMessageCols = `m.id, m.session_id, m.seq, m.kind, m.text, m.status, m.priority, m.tags, m.reply_to, m.supersedes,
	m.superseded_by, m.resolution, m.created_at, m.resolved_at, m.resolved_by, m.author, m.resolver, m.seq AS pos, 0 AS sub`
	entryInstructionCols = `'' AS id, i.session_id, i.seq, '` + string(continuo.KindInstruction) + `' AS kind, i.text,
	'` + string(continuo.StatusOpen) + `' AS status, '` + string(continuo.PriorityNormal) + `' AS priority, '[]' AS tags,
	'' AS reply_to, '' AS supersedes, '' AS superseded_by, '' AS resolution, i.created_at, CAST(NULL AS BIGINT) AS resolved_at,
	'' AS resolved_by, '' AS author, '' AS resolver, i.after_seq AS pos, i.seq AS sub`
)

// entryArms builds the WHERE of each arm; an arm the filters exclude is
// "" (keyset bounds are added by EntryList).
func (t *Tx) entryArms(p store.EntryListParams) (msgWhere string, msgArgs []any, insWhere string, insArgs []any) {
	var kinds []continuo.Kind
	wantIns := len(p.Kinds) == 0
	for _, k := range p.Kinds {
		if k == continuo.KindInstruction {
			wantIns = true
		} else {
			kinds = append(kinds, k)
		}
	}
	wantMsg := len(p.Kinds) == 0 || len(kinds) > 0
	if len(p.Statuses) > 0 && !slices.Contains(p.Statuses, continuo.StatusOpen) {
		wantIns = false // an instruction is always open
	}
	if wantMsg {
		msgWhere = "m.session_id = ?"
		msgArgs = []any{p.SessionID}
		msgWhere, msgArgs = andIn(msgWhere, msgArgs, "m.kind", kinds)
		msgWhere, msgArgs = andIn(msgWhere, msgArgs, "m.status", p.Statuses)
		if len(p.Words) > 0 {
			msgWhere += " AND " + t.d.TextMatch()
			msgArgs = append(msgArgs, t.d.MatchQuery(p.Words))
		}
	}
	if wantIns {
		// A session has few instructions: they are matched in place, word
		// by word, on the padded search text (store.SearchDoc), which gives
		// the same answer as the index does for messages.
		insWhere = "i.session_id = ?"
		insArgs = []any{p.SessionID}
		for _, w := range p.Words {
			insWhere += " AND i.search_text LIKE ?"
			insArgs = append(insArgs, "% "+w+" %")
		}
	}
	return
}

// EntryList implements store.MessageTx.
func (t *Tx) EntryList(ctx context.Context, p store.EntryListParams) ([]store.Entry, error) {
	mw, margs, iw, iargs := t.entryArms(p)
	order, cmp := " ORDER BY pos DESC, sub DESC", "<"
	if p.Oldest {
		order, cmp = " ORDER BY pos, sub", ">"
	}
	if a := p.After; a != nil {
		if mw != "" {
			if !p.Oldest && a.Sub > 0 {
				mw += " AND m.seq <= ?" // the cursor is an instruction after message a.Pos
			} else {
				mw += " AND m.seq " + cmp + " ?"
			}
			margs = append(margs, a.Pos)
		}
		if iw != "" {
			iw += " AND (i.after_seq " + cmp + " ? OR (i.after_seq = ? AND i.seq " + cmp + " ?))"
			iargs = append(iargs, a.Pos, a.Pos, a.Sub)
		}
	}
	var arms []string
	var args []any
	if mw != "" {
		arms = append(arms, "SELECT * FROM (SELECT "+entryMessageCols+" FROM messages m WHERE "+mw+order+" LIMIT ?) AS ma")
		args = append(append(args, margs...), p.Limit)
	}
	if iw != "" {
		arms = append(arms, "SELECT * FROM (SELECT "+entryInstructionCols+" FROM session_instructions i WHERE "+iw+order+" LIMIT ?) AS ia")
		args = append(append(args, iargs...), p.Limit)
	}
	if len(arms) == 0 {
		return nil, nil
	}
	q := arms[0]
	if len(arms) == 2 {
		q += " UNION ALL " + arms[1] + order + " LIMIT ?"
		args = append(args, p.Limit)
	}
	return list(t, ctx, scanEntry, q, args...)
}

func scanEntry(sc scanner) (*store.Entry, error) {
	var e store.Entry
	var kind, status, prio, tags string
	var created int64
	var resolved sql.NullInt64
	err := sc.Scan(&e.ID, &e.SessionID, &e.Seq, &kind, &e.Text, &status, &prio, &tags, &e.ReplyTo, &e.Supersedes,
		&e.SupersededBy, &e.Resolution, &created, &resolved, &e.ResolvedBy, &e.Author, &e.Resolver,
		&e.Key.Pos, &e.Key.Sub)
	if err != nil {
		return nil, err
	}
	e.Kind, e.Status, e.Priority = continuo.Kind(kind), continuo.Status(status), continuo.Priority(prio)
	if err := json.Unmarshal([]byte(tags), &e.Tags); err != nil {
		return nil, err
	}
	e.CreatedAt, e.ResolvedAt = fromMS(created), fromNullMS(resolved)
	return &e, nil
}

// EntryCount implements store.MessageTx.
func (t *Tx) EntryCount(ctx context.Context, p store.EntryListParams) (int64, error) {
	mw, margs, iw, iargs := t.entryArms(p)
	var total int64
	for _, arm := range []struct {
		from, where string
		args        []any
	}{{"messages m", mw, margs}, {"session_instructions i", iw, iargs}} {
		if arm.where == "" {
			continue
		}
		var n int64
		if err := t.row(ctx, "SELECT count(*) FROM "+arm.from+" WHERE "+arm.where, arm.args...).Scan(&n); err != nil {
			return 0, t.interpret(err)
		}
		total += n
	}
	return total, nil
}

// BackfillBatch is how many rows of each table Backfill indexes at most.
const BackfillBatch = 500

// Backfill writes the search text of up to BackfillBatch messages, as
// many instructions and as many session titles that have none: those
// written before migration 0002 (0011 for titles), which SQL alone could not index (the index holds redacted text, and
// redaction is Go). It returns how many rows it indexed; the drivers run it
// after migrating, one transaction per call, until it returns 0. Once every
// row has its text a call costs one probe of an empty partial index. A row
// without search text is not found by a query until then. It is idempotent
// and safe to run concurrently.
func Backfill(ctx context.Context, q Querier, d Dialect) (int, error) {
	total := 0
	for _, tb := range []struct{ sel, upd string }{
		{"SELECT id, 0, text FROM messages WHERE search_text IS NULL ORDER BY id LIMIT ?",
			"UPDATE messages SET search_text = ? WHERE id = ? AND 0 = ? AND search_text IS NULL"},
		{"SELECT session_id, seq, text FROM session_instructions WHERE search_text IS NULL ORDER BY session_id, seq LIMIT ?",
			"UPDATE session_instructions SET search_text = ? WHERE session_id = ? AND seq = ? AND search_text IS NULL"},
		{"SELECT id, 0, title FROM sessions WHERE search_text IS NULL ORDER BY id LIMIT ?", // migration 0011: titles
			"UPDATE sessions SET search_text = ? WHERE id = ? AND 0 = ? AND search_text IS NULL"},
	} {
		type row struct {
			id   string
			seq  int64
			text string
		}
		var rows []row
		r, err := q.QueryContext(ctx, d.Rebind(tb.sel), BackfillBatch)
		if err != nil {
			return 0, d.Interpret(err)
		}
		for r.Next() {
			var x row
			if err := r.Scan(&x.id, &x.seq, &x.text); err != nil {
				r.Close()
				return 0, err
			}
			rows = append(rows, x)
		}
		r.Close()
		if err := r.Err(); err != nil {
			return 0, d.Interpret(err)
		}
		for _, x := range rows {
			if _, err := q.ExecContext(ctx, d.Rebind(tb.upd), SearchText(x.text), x.id, x.seq); err != nil {
				return 0, d.Interpret(err)
			}
		}
		total += len(rows)
	}
	return total, nil
}
