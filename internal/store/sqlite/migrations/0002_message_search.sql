-- 0002: list_session_messages lists instructions with the messages and
-- finds entries by words (store/search.go).
--
-- search_text is the redacted text's lower-case words (store.SearchDoc),
-- written by Continuo; NULL until then (rows of older versions are indexed
-- by the driver after this migration: redaction is Go, not SQL).
ALTER TABLE messages ADD COLUMN search_text TEXT;
ALTER TABLE session_instructions ADD COLUMN search_text TEXT;

-- after_seq: the session's message_seq when the instruction was given; the
-- listing shows the instruction after that message. Older instructions take
-- the newest message not created after them.
ALTER TABLE session_instructions ADD COLUMN after_seq INTEGER NOT NULL DEFAULT 0;
UPDATE session_instructions SET after_seq = COALESCE((SELECT max(m.seq) FROM messages m
    WHERE m.session_id = session_instructions.session_id AND m.created_at <= session_instructions.created_at), 0);

-- Rows still to be indexed, found without a scan.
CREATE INDEX messages_unindexed ON messages (id) WHERE search_text IS NULL;

-- The word index: FTS5 over search_text, kept by triggers. The text is
-- already split and lower-cased; remove_diacritics 0 keeps FTS5 from
-- folding what PostgreSQL does not.
CREATE VIRTUAL TABLE messages_fts USING fts5(search_text, content = 'messages', content_rowid = 'rowid',
    tokenize = 'unicode61 remove_diacritics 0');

CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, search_text) VALUES (new.rowid, new.search_text);
END;

CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, search_text) VALUES ('delete', old.rowid, old.search_text);
END;

CREATE TRIGGER messages_fts_update AFTER UPDATE OF search_text ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, search_text) VALUES ('delete', old.rowid, old.search_text);
    INSERT INTO messages_fts (rowid, search_text) VALUES (new.rowid, new.search_text);
END;
