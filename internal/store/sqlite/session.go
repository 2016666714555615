package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

func (t *tx) SessionNextRef(ctx context.Context, groupID string) (int64, error) {
	if !t.write {
		return 0, errReadOnly
	}
	var n int64
	err := t.q.QueryRowContext(ctx, "UPDATE groups SET session_ref_seq = session_ref_seq + 1 WHERE id = ? RETURNING session_ref_seq", groupID).Scan(&n)
	return n, interpret(err)
}

const sessionCols = `id, group_id, ref, project_id, title, lifecycle, mode, worktree_branch, worktree_path,
	root_instruction, latest_instruction, instructions, revision, message_seq, summary,
	n_decisions, n_progress, n_open_todos, n_open_risks, n_open_questions, n_open_guidance, n_messages,
	created_at, updated_at, closed_at`

func sessionArgs(s *continuo.Session) []any {
	c := s.Counts
	return []any{s.ID, s.GroupID, s.Ref, s.ProjectID, s.Title, string(s.Lifecycle), string(s.Mode), s.WorktreeBranch, s.WorktreePath,
		s.RootInstr, s.LatestInstr, s.Instructions, s.Revision, s.MessageSeq, s.Summary,
		c.Decisions, c.Progress, c.OpenTodos, c.OpenRisks, c.OpenQuestions, c.OpenGuidance, c.Messages,
		ms(s.CreatedAt), ms(s.UpdatedAt), msPtr(s.ClosedAt)}
}

func scanSession(sc interface{ Scan(...any) error }) (*continuo.Session, error) {
	var s continuo.Session
	var lc, mode string
	var created, updated int64
	var closed sql.NullInt64
	c := &s.Counts
	err := sc.Scan(&s.ID, &s.GroupID, &s.Ref, &s.ProjectID, &s.Title, &lc, &mode, &s.WorktreeBranch, &s.WorktreePath,
		&s.RootInstr, &s.LatestInstr, &s.Instructions, &s.Revision, &s.MessageSeq, &s.Summary,
		&c.Decisions, &c.Progress, &c.OpenTodos, &c.OpenRisks, &c.OpenQuestions, &c.OpenGuidance, &c.Messages,
		&created, &updated, &closed)
	if err != nil {
		return nil, interpret(err)
	}
	s.Lifecycle, s.Mode = continuo.Lifecycle(lc), continuo.Mode(mode)
	s.CreatedAt, s.UpdatedAt, s.ClosedAt = fromMS(created), fromMS(updated), fromNullMS(closed)
	return &s, nil
}

func (t *tx) SessionCreate(ctx context.Context, s *continuo.Session) error {
	_, err := t.exec(ctx, "INSERT INTO sessions ("+sessionCols+") VALUES ("+placeholders(25)+")", sessionArgs(s)...)
	return err
}

func (t *tx) SessionGet(ctx context.Context, id string) (*continuo.Session, error) {
	return scanSession(t.q.QueryRowContext(ctx, "SELECT "+sessionCols+" FROM sessions WHERE id = ?", id))
}

func (t *tx) SessionByRef(ctx context.Context, groupID string, ref int64) (*continuo.Session, error) {
	return scanSession(t.q.QueryRowContext(ctx, "SELECT "+sessionCols+" FROM sessions WHERE group_id = ? AND ref = ?", groupID, ref))
}

func (t *tx) SessionRevision(ctx context.Context, id string) (int64, error) {
	var rev int64
	err := t.q.QueryRowContext(ctx, "SELECT revision FROM sessions WHERE id = ?", id).Scan(&rev)
	return rev, interpret(err)
}

func (t *tx) SessionUpdate(ctx context.Context, s *continuo.Session) error {
	c := s.Counts
	return t.execOne(ctx, `UPDATE sessions SET title = ?, lifecycle = ?, mode = ?, worktree_branch = ?, worktree_path = ?,
		root_instruction = ?, latest_instruction = ?, instructions = ?, revision = ?, message_seq = ?, summary = ?,
		n_decisions = ?, n_progress = ?, n_open_todos = ?, n_open_risks = ?, n_open_questions = ?, n_open_guidance = ?, n_messages = ?,
		updated_at = ?, closed_at = ? WHERE id = ?`,
		s.Title, string(s.Lifecycle), string(s.Mode), s.WorktreeBranch, s.WorktreePath,
		s.RootInstr, s.LatestInstr, s.Instructions, s.Revision, s.MessageSeq, s.Summary,
		c.Decisions, c.Progress, c.OpenTodos, c.OpenRisks, c.OpenQuestions, c.OpenGuidance, c.Messages,
		ms(s.UpdatedAt), msPtr(s.ClosedAt), s.ID)
}

func (t *tx) SessionList(ctx context.Context, p store.SessionListParams) ([]continuo.Session, int64, error) {
	where := "group_id = ? AND project_id = ?"
	args := []any{p.GroupID, p.ProjectID}
	if p.Lifecycle != "" {
		where += " AND lifecycle = ?"
		args = append(args, string(p.Lifecycle))
	}
	var total int64
	if err := t.q.QueryRowContext(ctx, "SELECT count(*) FROM sessions WHERE "+where, args...).Scan(&total); err != nil {
		return nil, 0, interpret(err)
	}
	rows, err := t.q.QueryContext(ctx, "SELECT "+sessionCols+" FROM sessions WHERE "+where+
		" ORDER BY updated_at DESC, id DESC LIMIT ? OFFSET ?", append(args, p.Limit, p.Offset)...)
	if err != nil {
		return nil, 0, interpret(err)
	}
	defer rows.Close()
	var out []continuo.Session
	for rows.Next() {
		s, err := scanSession(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, *s)
	}
	return out, total, rows.Err()
}

func (t *tx) InstructionAppend(ctx context.Context, in store.Instruction) error {
	_, err := t.exec(ctx, "INSERT INTO session_instructions (session_id, seq, text, created_at) VALUES (?, ?, ?, ?)",
		in.SessionID, in.Seq, in.Text, ms(in.CreatedAt))
	return err
}

const messageCols = `id, session_id, seq, kind, text, status, priority, tags, reply_to, supersedes, superseded_by,
	resolution, created_at, resolved_at`

func scanMessage(sc interface{ Scan(...any) error }) (*continuo.Message, error) {
	var m continuo.Message
	var kind, status, prio, tags string
	var created int64
	var resolved sql.NullInt64
	err := sc.Scan(&m.ID, &m.SessionID, &m.Seq, &kind, &m.Text, &status, &prio, &tags, &m.ReplyTo, &m.Supersedes,
		&m.SupersededBy, &m.Resolution, &created, &resolved)
	if err != nil {
		return nil, interpret(err)
	}
	m.Kind, m.Status, m.Priority = continuo.Kind(kind), continuo.Status(status), continuo.Priority(prio)
	if err := json.Unmarshal([]byte(tags), &m.Tags); err != nil {
		return nil, err
	}
	m.CreatedAt, m.ResolvedAt = fromMS(created), fromNullMS(resolved)
	return &m, nil
}

func (t *tx) MessageInsert(ctx context.Context, m *continuo.Message) error {
	tags := m.Tags
	if tags == nil {
		tags = []string{}
	}
	tj, err := json.Marshal(tags)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, "INSERT INTO messages ("+messageCols+") VALUES ("+placeholders(14)+")",
		m.ID, m.SessionID, m.Seq, string(m.Kind), m.Text, string(m.Status), string(m.Priority), string(tj), m.ReplyTo,
		m.Supersedes, m.SupersededBy, m.Resolution, ms(m.CreatedAt), msPtr(m.ResolvedAt))
	return err
}

func (t *tx) MessageGet(ctx context.Context, sessionID, id string) (*continuo.Message, error) {
	return scanMessage(t.q.QueryRowContext(ctx, "SELECT "+messageCols+" FROM messages WHERE id = ? AND session_id = ?", id, sessionID))
}

func (t *tx) MessageUpdate(ctx context.Context, m *continuo.Message) error {
	return t.execOne(ctx, "UPDATE messages SET status = ?, superseded_by = ?, resolution = ?, resolved_at = ? WHERE id = ? AND session_id = ?",
		string(m.Status), m.SupersededBy, m.Resolution, msPtr(m.ResolvedAt), m.ID, m.SessionID)
}

// messageWhere builds the filter shared by MessageList and MessageCount.
func messageWhere(p store.MessageListParams) (string, []any) {
	where := "session_id = ?"
	args := []any{p.SessionID}
	if len(p.Kinds) > 0 {
		where += " AND kind IN (" + placeholders(len(p.Kinds)) + ")"
		for _, k := range p.Kinds {
			args = append(args, string(k))
		}
	}
	if len(p.Statuses) > 0 {
		where += " AND status IN (" + placeholders(len(p.Statuses)) + ")"
		for _, s := range p.Statuses {
			args = append(args, string(s))
		}
	}
	return where, args
}

func (t *tx) MessageList(ctx context.Context, p store.MessageListParams) ([]continuo.Message, error) {
	where, args := messageWhere(p)
	if p.BeforeSeq > 0 {
		where += " AND seq < ?"
		args = append(args, p.BeforeSeq)
	}
	rows, err := t.q.QueryContext(ctx, "SELECT "+messageCols+" FROM messages WHERE "+where+" ORDER BY seq DESC LIMIT ?", append(args, p.Limit)...)
	if err != nil {
		return nil, interpret(err)
	}
	defer rows.Close()
	var out []continuo.Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *m)
	}
	return out, rows.Err()
}

func (t *tx) MessageCount(ctx context.Context, p store.MessageListParams) (int64, error) {
	where, args := messageWhere(p)
	var n int64
	err := t.q.QueryRowContext(ctx, "SELECT count(*) FROM messages WHERE "+where, args...).Scan(&n)
	return n, interpret(err)
}
