-- 0005: goals (CONTRACT.md §5) and the plans their changes replaced.
-- Tables only: nothing older changes. Times are INTEGER unix milliseconds
-- (UTC), set by the caller. Lists are JSON arrays: completion_conditions
-- of strings, steps of {"id","title","status"} objects. No current step is
-- '' (never NULL); no terminal reason is NULL, and an active goal has none.

-- A goal of a session. Every change of its plan or lifecycle raises
-- revision, which guards the row: updates name the revision they read.
CREATE TABLE goals (
    id                    TEXT PRIMARY KEY CHECK (id LIKE 'goal\_%' ESCAPE '\'),
    session_id            TEXT NOT NULL REFERENCES sessions (id),
    title                 TEXT NOT NULL,
    objective             TEXT NOT NULL,
    completion_conditions TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(completion_conditions)),
    steps                 TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(steps)),
    current_step_id       TEXT NOT NULL DEFAULT '',
    revision              INTEGER NOT NULL CHECK (revision > 0),
    lifecycle             TEXT NOT NULL CHECK (lifecycle IN ('active', 'completed', 'cancelled')),
    terminal_reason       TEXT,
    created_at            INTEGER NOT NULL,
    updated_at            INTEGER NOT NULL,
    CONSTRAINT no_terminal_reason_while_active CHECK (NOT (lifecycle = 'active' AND terminal_reason IS NOT NULL))
) STRICT;

-- A session's goals newest first, all of them or of one lifecycle: index
-- range scans that stop after LIMIT rows. A group's project lists through
-- sessions_list, then these.
CREATE INDEX goals_session ON goals (session_id, id);
CREATE INDEX goals_lifecycle ON goals (session_id, lifecycle, id);

-- A plan (steps and current step) as it was at a revision of its goal,
-- before a change replaced it, and why it was replaced.
CREATE TABLE goal_plans (
    goal_id         TEXT NOT NULL REFERENCES goals (id),
    revision        INTEGER NOT NULL CHECK (revision > 0),
    steps           TEXT NOT NULL CHECK (json_valid(steps)),
    current_step_id TEXT NOT NULL DEFAULT '',
    reason          TEXT NOT NULL DEFAULT '',
    replaced_at     INTEGER NOT NULL,
    PRIMARY KEY (goal_id, revision)
) STRICT, WITHOUT ROWID;
