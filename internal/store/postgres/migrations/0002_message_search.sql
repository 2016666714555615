-- 0002: list_session_messages lists instructions with the messages and
-- finds entries by words (store/search.go).
--
-- search_text is the redacted text's lower-case words (store.SearchDoc),
-- written by Continuo; NULL until then (rows of older versions are indexed
-- by the driver after this migration: redaction is Go, not SQL).
ALTER TABLE messages ADD COLUMN search_text text;
ALTER TABLE session_instructions ADD COLUMN search_text text;

-- after_seq: the session's message_seq when the instruction was given; the
-- listing shows the instruction after that message. Older instructions take
-- the newest message not created after them.
ALTER TABLE session_instructions ADD COLUMN after_seq bigint NOT NULL DEFAULT 0;
UPDATE session_instructions i SET after_seq = COALESCE((SELECT max(m.seq) FROM messages m
    WHERE m.session_id = i.session_id AND m.created_at <= i.created_at), 0);

-- Rows still to be indexed, found without a scan.
CREATE INDEX messages_unindexed ON messages (id) WHERE search_text IS NULL;

-- The word index: the text is already split and lower-cased, so the
-- 'simple' configuration (no stemming, no stop words) keeps every word.
CREATE INDEX messages_search ON messages USING gin (to_tsvector('simple', search_text));
