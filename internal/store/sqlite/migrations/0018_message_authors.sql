-- 0018: a note records who posted it and who resolved it, and whether a
-- person did so on the dashboard (issue 25): Caller.Actor, e.g. "alice" or
-- "alice via dashboard"; '' for notes written before.
ALTER TABLE messages ADD COLUMN author TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN resolver TEXT NOT NULL DEFAULT '';
