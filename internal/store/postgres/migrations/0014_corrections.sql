-- 0014: the decisions that correct another (CONTRACT.md §4: the brief
-- carries corrections right after the high-priority decisions). A
-- correction is a message whose supersedes is set; the brief asks for the
-- newest corrections in force, which this partial index serves as a
-- backward range scan of (session_id, status, kind) that stops after LIMIT
-- rows, however long the history. Messages that supersede nothing (nearly
-- all) are not in it. No table changes.
CREATE INDEX messages_corrections ON messages (session_id, status, kind, seq) WHERE supersedes <> '';
