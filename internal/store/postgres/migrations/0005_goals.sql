-- 0005: goals (CONTRACT.md §5) and the plans their changes replaced.
-- Tables only: nothing older changes. Times are bigint unix milliseconds
-- (UTC), set by the caller. Lists are JSON arrays: completion_conditions
-- of strings, steps of {"id","title","status"} objects. No current step is
-- '' (never NULL); no terminal reason is NULL, and an active goal has none.
--
-- PostgreSQL translation of internal/store/sqlite/migrations/0005_goals.sql:
-- same tables, columns (in the same order), constraints and indexes.

-- A goal of a session. Every change of its plan or lifecycle raises
-- revision, which guards the row: updates name the revision they read.
CREATE TABLE goals (
    id                    text PRIMARY KEY CHECK (id LIKE 'goal\_%' ESCAPE '\'),
    session_id            text NOT NULL REFERENCES sessions (id),
    title                 text NOT NULL,
    objective             text NOT NULL,
    completion_conditions text NOT NULL DEFAULT '[]' CHECK (completion_conditions::json IS NOT NULL),
    steps                 text NOT NULL DEFAULT '[]' CHECK (steps::json IS NOT NULL),
    current_step_id       text NOT NULL DEFAULT '',
    revision              bigint NOT NULL CHECK (revision > 0),
    lifecycle             text NOT NULL CHECK (lifecycle IN ('active', 'completed', 'cancelled')),
    terminal_reason       text,
    created_at            bigint NOT NULL,
    updated_at            bigint NOT NULL,
    CONSTRAINT no_terminal_reason_while_active CHECK (NOT (lifecycle = 'active' AND terminal_reason IS NOT NULL))
);

-- A session's goals newest first, all of them or of one lifecycle: index
-- range scans that stop after LIMIT rows. A group's project lists through
-- sessions_list, then these.
CREATE INDEX goals_session ON goals (session_id, id);
CREATE INDEX goals_lifecycle ON goals (session_id, lifecycle, id);

-- A plan (steps and current step) as it was at a revision of its goal,
-- before a change replaced it, and why it was replaced.
CREATE TABLE goal_plans (
    goal_id         text NOT NULL REFERENCES goals (id),
    revision        bigint NOT NULL CHECK (revision > 0),
    steps           text NOT NULL CHECK (steps::json IS NOT NULL),
    current_step_id text NOT NULL DEFAULT '',
    reason          text NOT NULL DEFAULT '',
    replaced_at     bigint NOT NULL,
    PRIMARY KEY (goal_id, revision)
);
