package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

const messageCols = `id, session_id, seq, kind, text, status, priority, tags, reply_to, supersedes, superseded_by,
	resolution, created_at, resolved_at`

func scanMessage(sc scanner) (*continuo.Message, error) {
	var m continuo.Message
	var kind, status, prio, tags string
	var created int64
	var resolved sql.NullInt64
	err := sc.Scan(&m.ID, &m.SessionID, &m.Seq, &kind, &m.Text, &status, &prio, &tags, &m.ReplyTo, &m.Supersedes,
		&m.SupersededBy, &m.Resolution, &created, &resolved)
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
	_, err = t.exec(ctx, "INSERT INTO messages ("+messageCols+") VALUES ("+Placeholders(14)+")",
		m.ID, m.SessionID, m.Seq, string(m.Kind), m.Text, string(m.Status), string(m.Priority), string(tj), m.ReplyTo,
		m.Supersedes, m.SupersededBy, m.Resolution, ms(m.CreatedAt), msPtr(m.ResolvedAt))
	return err
}

// MessageGet implements store.MessageTx.
func (t *Tx) MessageGet(ctx context.Context, sessionID, id string) (*continuo.Message, error) {
	m, err := scanMessage(t.row(ctx, "SELECT "+messageCols+" FROM messages WHERE id = ? AND session_id = ?", id, sessionID))
	return m, t.interpret(err)
}

// MessageUpdate implements store.MessageTx.
func (t *Tx) MessageUpdate(ctx context.Context, m *continuo.Message, prev continuo.Status) error {
	return t.execOne(ctx, store.ErrStale, `UPDATE messages SET status = ?, superseded_by = ?, resolution = ?, resolved_at = ?
		WHERE id = ? AND session_id = ? AND status = ?`,
		string(m.Status), m.SupersededBy, m.Resolution, msPtr(m.ResolvedAt), m.ID, m.SessionID, string(prev))
}

// messageWhere builds the filter shared by MessageList and MessageCount.
func messageWhere(p store.MessageListParams) (string, []any) {
	where := "session_id = ?"
	args := []any{p.SessionID}
	if len(p.Kinds) > 0 {
		where += " AND kind IN (" + Placeholders(len(p.Kinds)) + ")"
		for _, k := range p.Kinds {
			args = append(args, string(k))
		}
	}
	if len(p.Statuses) > 0 {
		where += " AND status IN (" + Placeholders(len(p.Statuses)) + ")"
		for _, s := range p.Statuses {
			args = append(args, string(s))
		}
	}
	return where, args
}

// MessageList implements store.MessageTx.
func (t *Tx) MessageList(ctx context.Context, p store.MessageListParams) ([]continuo.Message, error) {
	where, args := messageWhere(p)
	if p.BeforeSeq > 0 {
		where += " AND seq < ?"
		args = append(args, p.BeforeSeq)
	}
	return list(t, ctx, scanMessage, "SELECT "+messageCols+" FROM messages WHERE "+where+" ORDER BY seq DESC LIMIT ?", append(args, p.Limit)...)
}

// MessageCount implements store.MessageTx.
func (t *Tx) MessageCount(ctx context.Context, p store.MessageListParams) (int64, error) {
	where, args := messageWhere(p)
	var n int64
	err := t.row(ctx, "SELECT count(*) FROM messages WHERE "+where, args...).Scan(&n)
	return n, t.interpret(err)
}
