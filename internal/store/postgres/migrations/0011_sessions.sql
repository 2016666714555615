-- 0011: the dashboard finds a project's sessions by the words of their
-- titles as well as of their notes (store/search.go).
--
-- search_text is the redacted title's lower-case words (store.SearchDoc),
-- written by Continuo with the row; NULL until then (sessions of older
-- versions are indexed by the driver after this migration: redaction is Go,
-- not SQL). A session has one title, and a search reads only the sessions of
-- one group in one project (sessions_list), so a LIKE per word on this
-- column, as for instructions, needs no word index.
ALTER TABLE sessions ADD COLUMN search_text text;

-- Sessions still to be indexed, found without a scan.
CREATE INDEX sessions_unindexed ON sessions (id) WHERE search_text IS NULL;
