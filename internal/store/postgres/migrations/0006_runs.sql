-- 0006: runs (CONTRACT.md §6), their output logs and the evidence sessions
-- record from them. Tables only: nothing older changes. Times are bigint
-- unix milliseconds (UTC), set by the caller; lease_until is 0 while a run
-- has no lease. No session, check, provider, owner, proc, error kind or
-- usage is '' (never NULL); no exit code, start or end is NULL.
--
-- PostgreSQL translation of internal/store/sqlite/migrations/0006_runs.sql:
-- same tables, columns (in the same order), constraints and indexes.
-- usage's "'' or JSON" is a CASE: PostgreSQL does not promise to evaluate
-- an OR's left side first, and ''::json raises an error.

-- A run of a group in a project. Every change but a lease renewal, a
-- cancel request and a log append raises revision, which guards the row:
-- updates name the revision they read. session_id has no foreign key: ''
-- means no session, and a session's removal leaves the project's runs
-- (ProjectDelete removes them).
CREATE TABLE runs (
    id               text PRIMARY KEY CHECK (id LIKE 'run\_%' ESCAPE '\'),
    kind             text NOT NULL CHECK (kind IN ('validation', 'agent')),
    state            text NOT NULL CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out', 'interrupted')),
    group_id         text NOT NULL REFERENCES groups (id),
    project_id       text NOT NULL REFERENCES projects (id),
    session_id       text NOT NULL DEFAULT '',
    check_name       text NOT NULL DEFAULT '',
    provider_id      text NOT NULL DEFAULT '',
    dir              text NOT NULL,
    spec             text NOT NULL DEFAULT '{}' CHECK (spec::json IS NOT NULL),
    request_hash     text NOT NULL DEFAULT '',
    source_head      text NOT NULL DEFAULT '',
    source_tree      text NOT NULL DEFAULT '',
    owner            text NOT NULL DEFAULT '',
    lease_until      bigint NOT NULL DEFAULT 0 CHECK (lease_until >= 0),
    proc             text NOT NULL DEFAULT '',
    cancel_requested bigint NOT NULL DEFAULT 0 CHECK (cancel_requested IN (0, 1)),
    exit_code        bigint,
    error_kind       text NOT NULL DEFAULT '',
    usage            text NOT NULL DEFAULT '' CHECK (CASE WHEN usage = '' THEN true ELSE usage::json IS NOT NULL END),
    event_seq        bigint NOT NULL DEFAULT 0 CHECK (event_seq >= 0),
    output_bytes     bigint NOT NULL DEFAULT 0 CHECK (output_bytes >= 0),
    kept_bytes       bigint NOT NULL DEFAULT 0 CHECK (kept_bytes >= 0),
    head_seq         bigint NOT NULL DEFAULT 0 CHECK (head_seq >= 0),
    dropped_through  bigint NOT NULL DEFAULT 0 CHECK (dropped_through >= 0),
    revision         bigint NOT NULL CHECK (revision > 0),
    created_at       bigint NOT NULL,
    started_at       bigint,
    ended_at         bigint,
    -- A run has ended exactly when it is in a terminal state, and a
    -- running run has started.
    CONSTRAINT ended_iff_ended_at CHECK ((state = 'queued' OR state = 'running') = (ended_at IS NULL)),
    CONSTRAINT running_has_started_at CHECK (NOT (state = 'running' AND started_at IS NULL))
);

-- At most one validation run of a check in a directory runs at a time: a
-- second start shares the running one (or waits), and two replicas racing
-- to start one collide here (ErrConflict) rather than both running it.
CREATE UNIQUE INDEX runs_running_check ON runs (dir, check_name) WHERE kind = 'validation' AND state = 'running';

-- RunList's filters, each an index range scan: runs in some states whose
-- lease ran out (the sweeper), one owner's runs (lease renewal), one
-- check's runs in one directory; and a project's runs, for its removal
-- and for the foreign key's check when the project row goes.
CREATE INDEX runs_lease ON runs (state, lease_until);
CREATE INDEX runs_owner ON runs (owner, state);
CREATE INDEX runs_check ON runs (dir, check_name, state);
CREATE INDEX runs_project ON runs (project_id);

-- One entry of a run's output log, numbered from 1. text is valid UTF-8
-- without NUL (the run service's redaction guarantees it, and the store
-- refuses anything else, so that PostgreSQL, whose text refuses NUL, takes
-- every log an export carries).
CREATE TABLE run_events (
    run_id text NOT NULL REFERENCES runs (id),
    seq    bigint NOT NULL CHECK (seq > 0),
    kind   text NOT NULL CHECK (kind IN ('output', 'state', 'text', 'usage', 'tool', 'permission', 'thought')),
    text   text NOT NULL,
    at     bigint NOT NULL,
    PRIMARY KEY (run_id, seq)
);

-- A session ran, or shares, a validation run of a check. The brief reads
-- the newest few of each check of a session: a range scan of
-- evidence_latest per check. evidence_run serves a run's removal.
CREATE TABLE evidence (
    session_id text NOT NULL REFERENCES sessions (id),
    run_id     text NOT NULL REFERENCES runs (id),
    check_name text NOT NULL,
    created_at bigint NOT NULL,
    PRIMARY KEY (session_id, run_id)
);

CREATE INDEX evidence_latest ON evidence (session_id, check_name, created_at);
CREATE INDEX evidence_run ON evidence (run_id);
