-- 0006: runs (CONTRACT.md §6), their output logs and the evidence sessions
-- record from them. Tables only: nothing older changes. Times are INTEGER
-- unix milliseconds (UTC), set by the caller; lease_until is 0 while a run
-- has no lease. No session, check, provider, owner, proc, error kind or
-- usage is '' (never NULL); no exit code, start or end is NULL.

-- A run of a group in a project. Every change but a lease renewal, a
-- cancel request and a log append raises revision, which guards the row:
-- updates name the revision they read. session_id has no foreign key: ''
-- means no session, and a session's removal leaves the project's runs
-- (ProjectDelete removes them).
CREATE TABLE runs (
    id               TEXT PRIMARY KEY CHECK (id LIKE 'run\_%' ESCAPE '\'),
    kind             TEXT NOT NULL CHECK (kind IN ('validation', 'agent')),
    state            TEXT NOT NULL CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out', 'interrupted')),
    group_id         TEXT NOT NULL REFERENCES groups (id),
    project_id       TEXT NOT NULL REFERENCES projects (id),
    session_id       TEXT NOT NULL DEFAULT '',
    check_name       TEXT NOT NULL DEFAULT '',
    provider_id      TEXT NOT NULL DEFAULT '',
    dir              TEXT NOT NULL,
    spec             TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(spec)),
    request_hash     TEXT NOT NULL DEFAULT '',
    source_head      TEXT NOT NULL DEFAULT '',
    source_tree      TEXT NOT NULL DEFAULT '',
    owner            TEXT NOT NULL DEFAULT '',
    lease_until      INTEGER NOT NULL DEFAULT 0 CHECK (lease_until >= 0),
    proc             TEXT NOT NULL DEFAULT '',
    cancel_requested INTEGER NOT NULL DEFAULT 0 CHECK (cancel_requested IN (0, 1)),
    exit_code        INTEGER,
    error_kind       TEXT NOT NULL DEFAULT '',
    usage            TEXT NOT NULL DEFAULT '' CHECK (usage = '' OR json_valid(usage)),
    event_seq        INTEGER NOT NULL DEFAULT 0 CHECK (event_seq >= 0),
    output_bytes     INTEGER NOT NULL DEFAULT 0 CHECK (output_bytes >= 0),
    kept_bytes       INTEGER NOT NULL DEFAULT 0 CHECK (kept_bytes >= 0),
    head_seq         INTEGER NOT NULL DEFAULT 0 CHECK (head_seq >= 0),
    dropped_through  INTEGER NOT NULL DEFAULT 0 CHECK (dropped_through >= 0),
    revision         INTEGER NOT NULL CHECK (revision > 0),
    created_at       INTEGER NOT NULL,
    started_at       INTEGER,
    ended_at         INTEGER,
    -- A run has ended exactly when it is in a terminal state, and a
    -- running run has started.
    CONSTRAINT ended_iff_ended_at CHECK ((state = 'queued' OR state = 'running') = (ended_at IS NULL)),
    CONSTRAINT running_has_started_at CHECK (NOT (state = 'running' AND started_at IS NULL))
) STRICT;

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
-- every log an export carries). A rowid table rather than WITHOUT ROWID:
-- an event's text may be up to 16 KiB, far past the small rows WITHOUT
-- ROWID suits.
CREATE TABLE run_events (
    run_id TEXT NOT NULL REFERENCES runs (id),
    seq    INTEGER NOT NULL CHECK (seq > 0),
    kind   TEXT NOT NULL CHECK (kind IN ('output', 'state', 'text', 'usage', 'tool', 'permission', 'thought')),
    text   TEXT NOT NULL,
    at     INTEGER NOT NULL,
    PRIMARY KEY (run_id, seq)
) STRICT;

-- A session ran, or shares, a validation run of a check. The brief reads
-- the newest few of each check of a session: a range scan of
-- evidence_latest per check. evidence_run serves a run's removal.
CREATE TABLE evidence (
    session_id TEXT NOT NULL REFERENCES sessions (id),
    run_id     TEXT NOT NULL REFERENCES runs (id),
    check_name TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, run_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX evidence_latest ON evidence (session_id, check_name, created_at);
CREATE INDEX evidence_run ON evidence (run_id);
