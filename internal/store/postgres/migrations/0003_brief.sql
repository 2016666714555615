-- 0003: what the handoff brief selects by, kept as plain values so export
-- and import carry them unchanged.
--
-- messages.rank orders by importance: 2 high, 1 normal, 0 low (set at insert
-- from priority, which never changes). messages.handoff is 1 for a progress
-- message tagged handoff (set at insert; tags never change). resolved_by is
-- the answer that resolved a question. sessions.start_head is the git HEAD
-- of the checkout when the session started; the two counters keep the
-- brief's totals in the session row.

ALTER TABLE messages ADD COLUMN rank bigint NOT NULL DEFAULT 1 CHECK (rank IN (0, 1, 2));
ALTER TABLE messages ADD COLUMN handoff bigint NOT NULL DEFAULT 0 CHECK (handoff IN (0, 1));
ALTER TABLE messages ADD COLUMN resolved_by text NOT NULL DEFAULT '';

UPDATE messages SET rank = 2 WHERE priority = 'high';
UPDATE messages SET rank = 0 WHERE priority = 'low';
UPDATE messages SET handoff = 1 WHERE kind = 'progress' AND tags LIKE '%"handoff"%';

ALTER TABLE sessions ADD COLUMN start_head text NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN n_superseded_decisions bigint NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN n_resolved_questions bigint NOT NULL DEFAULT 0;

UPDATE sessions SET
    n_superseded_decisions = (SELECT count(*) FROM messages m
        WHERE m.session_id = sessions.id AND m.kind = 'decision' AND m.status = 'superseded'),
    n_resolved_questions = (SELECT count(*) FROM messages m
        WHERE m.session_id = sessions.id AND m.kind = 'question' AND m.status = 'resolved');

-- Decisions in force and open items, most important first, then newest:
-- ORDER BY rank DESC, seq DESC is a backward range scan of this index that
-- stops after LIMIT rows. The newest handoff note is one probe of the next.
CREATE INDEX messages_rank ON messages (session_id, status, kind, rank, seq);
CREATE INDEX messages_handoff ON messages (session_id, handoff, seq);
