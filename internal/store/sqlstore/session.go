package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// SessionRefNext implements store.SessionTx.
func (t *Tx) SessionRefNext(ctx context.Context, groupID string) (int64, error) {
	if !t.write {
		return 0, ErrReadOnly
	}
	var n int64
	err := t.row(ctx, "UPDATE groups SET session_ref_seq = session_ref_seq + 1 WHERE id = ? RETURNING session_ref_seq", groupID).Scan(&n)
	return n, t.interpret(err)
}

const sessionCols = `id, group_id, ref, project_id, title, lifecycle, mode, worktree_branch, worktree_path,
	root_instruction, latest_instruction, instructions, revision, message_seq, summary,
	n_decisions, n_progress, n_open_todos, n_open_risks, n_open_questions, n_open_guidance, n_messages,
	created_at, updated_at, closed_at, start_head, n_superseded_decisions, n_resolved_questions`

func scanSession(sc scanner) (*continuo.Session, error) {
	var s continuo.Session
	var lc, mode string
	var created, updated int64
	var closed sql.NullInt64
	c := &s.Counts
	err := sc.Scan(&s.ID, &s.GroupID, &s.Ref, &s.ProjectID, &s.Title, &lc, &mode, &s.WorktreeBranch, &s.WorktreePath,
		&s.RootInstr, &s.LatestInstr, &s.Instructions, &s.Revision, &s.MessageSeq, &s.Summary,
		&c.Decisions, &c.Progress, &c.OpenTodos, &c.OpenRisks, &c.OpenQuestions, &c.OpenGuidance, &c.Messages,
		&created, &updated, &closed, &s.StartHead, &c.SupersededDecisions, &c.ResolvedQuestions)
	if err != nil {
		return nil, err
	}
	s.Lifecycle, s.Mode = continuo.Lifecycle(lc), continuo.Mode(mode)
	s.CreatedAt, s.UpdatedAt, s.ClosedAt = fromMS(created), fromMS(updated), fromNullMS(closed)
	return &s, nil
}

// SessionCreate implements store.SessionTx.
func (t *Tx) SessionCreate(ctx context.Context, s *continuo.Session) error {
	c := s.Counts
	_, err := t.exec(ctx, "INSERT INTO sessions ("+sessionCols+", search_text) VALUES ("+Placeholders(29)+")",
		s.ID, s.GroupID, s.Ref, s.ProjectID, s.Title, string(s.Lifecycle), string(s.Mode), s.WorktreeBranch, s.WorktreePath,
		s.RootInstr, s.LatestInstr, s.Instructions, s.Revision, s.MessageSeq, s.Summary,
		c.Decisions, c.Progress, c.OpenTodos, c.OpenRisks, c.OpenQuestions, c.OpenGuidance, c.Messages,
		ms(s.CreatedAt), ms(s.UpdatedAt), msPtr(s.ClosedAt), s.StartHead, c.SupersededDecisions, c.ResolvedQuestions, SearchText(s.Title))
	return err
}

// SessionGet implements store.SessionTx.
func (t *Tx) SessionGet(ctx context.Context, id string) (*continuo.Session, error) {
	s, err := scanSession(t.row(ctx, "SELECT "+sessionCols+" FROM sessions WHERE id = ?", id))
	return s, t.interpret(err)
}

// SessionGetByRef implements store.SessionTx.
func (t *Tx) SessionGetByRef(ctx context.Context, groupID string, ref int64) (*continuo.Session, error) {
	s, err := scanSession(t.row(ctx, "SELECT "+sessionCols+" FROM sessions WHERE group_id = ? AND ref = ?", groupID, ref))
	return s, t.interpret(err)
}

// SessionRevision implements store.SessionTx.
func (t *Tx) SessionRevision(ctx context.Context, id string) (int64, error) {
	var rev int64
	err := t.row(ctx, "SELECT revision FROM sessions WHERE id = ?", id).Scan(&rev)
	return rev, t.interpret(err)
}

// SessionUpdate implements store.SessionTx.
func (t *Tx) SessionUpdate(ctx context.Context, s *continuo.Session, prev int64) error {
	if s.Revision <= prev {
		return errors.New("store: a session update must raise the revision")
	}
	c := s.Counts
	return t.execOne(ctx, store.ErrStale, `UPDATE sessions SET title = ?, search_text = ?, lifecycle = ?, mode = ?, worktree_branch = ?, worktree_path = ?,
		root_instruction = ?, latest_instruction = ?, instructions = ?, revision = ?, message_seq = ?, summary = ?,
		n_decisions = ?, n_progress = ?, n_open_todos = ?, n_open_risks = ?, n_open_questions = ?, n_open_guidance = ?, n_messages = ?,
		n_superseded_decisions = ?, n_resolved_questions = ?, start_head = ?, updated_at = ?, closed_at = ? WHERE id = ? AND revision = ?`,
		s.Title, SearchText(s.Title), string(s.Lifecycle), string(s.Mode), s.WorktreeBranch, s.WorktreePath,
		s.RootInstr, s.LatestInstr, s.Instructions, s.Revision, s.MessageSeq, s.Summary,
		c.Decisions, c.Progress, c.OpenTodos, c.OpenRisks, c.OpenQuestions, c.OpenGuidance, c.Messages,
		c.SupersededDecisions, c.ResolvedQuestions, s.StartHead, ms(s.UpdatedAt), msPtr(s.ClosedAt), s.ID, prev)
}

// SessionList implements store.SessionTx.
func (t *Tx) SessionList(ctx context.Context, p store.SessionListParams) ([]continuo.Session, int64, error) {
	where := "group_id = ? AND project_id = ?"
	args := []any{p.GroupID, p.ProjectID}
	if p.Lifecycle != "" {
		where += " AND lifecycle = ?"
		args = append(args, string(p.Lifecycle))
	}
	where, args = t.sessionWords(where, args, p.Words)
	var total int64
	if err := t.row(ctx, "SELECT count(*) FROM sessions WHERE "+where, args...).Scan(&total); err != nil {
		return nil, 0, t.interpret(err)
	}
	out, err := list(t, ctx, scanSession, "SELECT "+sessionCols+" FROM sessions WHERE "+where+
		" ORDER BY updated_at DESC, id DESC LIMIT ? OFFSET ?", append(args, p.Limit, p.Offset)...)
	return out, total, err
}

// InstructionAppend implements store.SessionTx.
func (t *Tx) InstructionAppend(ctx context.Context, in store.Instruction) error {
	_, err := t.exec(ctx, `INSERT INTO session_instructions (session_id, seq, text, created_at, after_seq, search_text)
		VALUES (?, ?, ?, ?, ?, ?)`,
		in.SessionID, in.Seq, in.Text, ms(in.CreatedAt), in.AfterSeq, SearchText(in.Text))
	return err
}

// SessionListByProject implements store.SessionTx.
func (t *Tx) SessionListByProject(ctx context.Context, projectID string) ([]continuo.Session, error) {
	return list(t, ctx, scanSession, "SELECT "+sessionCols+" FROM sessions WHERE project_id = ? ORDER BY id", projectID)
}

// SessionDelete implements store.SessionTx.
func (t *Tx) SessionDelete(ctx context.Context, id string) error {
	for _, q := range []string{"DELETE FROM messages WHERE session_id = ?", "DELETE FROM session_instructions WHERE session_id = ?",
		"DELETE FROM goal_plans WHERE goal_id IN (SELECT id FROM goals WHERE session_id = ?)", "DELETE FROM goals WHERE session_id = ?",
		"DELETE FROM evidence WHERE session_id = ?"} {
		if _, err := t.exec(ctx, q, id); err != nil {
			return err
		}
	}
	return t.execOne(ctx, store.ErrNotFound, "DELETE FROM sessions WHERE id = ?", id)
}
