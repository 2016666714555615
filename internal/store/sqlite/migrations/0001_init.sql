-- 0001: groups, principals, tokens, projects, grants, sessions, messages,
-- idempotency. Times are INTEGER unix milliseconds (UTC), set by the caller.

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;

CREATE TABLE groups (
    id              TEXT PRIMARY KEY CHECK (id LIKE 'grp\_%' ESCAPE '\'),
    name            TEXT NOT NULL UNIQUE,
    session_ref_seq INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL
) STRICT;

CREATE TABLE principals (
    id         TEXT PRIMARY KEY CHECK (id LIKE 'prn\_%' ESCAPE '\'),
    name       TEXT NOT NULL UNIQUE,
    group_id   TEXT NOT NULL REFERENCES groups (id),
    created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE tokens (
    id           TEXT PRIMARY KEY CHECK (id LIKE 'tok\_%' ESCAPE '\'),
    principal_id TEXT NOT NULL REFERENCES principals (id),
    hash         TEXT NOT NULL UNIQUE,
    scopes       TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER,
    revoked_at   INTEGER
) STRICT;

CREATE TABLE projects (
    id         TEXT PRIMARY KEY CHECK (id LIKE 'prj\_%' ESCAPE '\'),
    name       TEXT NOT NULL UNIQUE,
    root       TEXT NOT NULL DEFAULT '',
    checks     TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(checks)),
    writable   INTEGER NOT NULL CHECK (writable IN (0, 1)),
    created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE grants (
    project_id TEXT NOT NULL REFERENCES projects (id),
    group_id   TEXT NOT NULL REFERENCES groups (id),
    access     TEXT NOT NULL CHECK (access IN ('read', 'write')),
    PRIMARY KEY (project_id, group_id)
) STRICT;

CREATE INDEX grants_group ON grants (group_id);

CREATE TABLE sessions (
    id                 TEXT PRIMARY KEY CHECK (id LIKE 'ses\_%' ESCAPE '\'),
    group_id           TEXT NOT NULL REFERENCES groups (id),
    ref                INTEGER NOT NULL CHECK (ref > 0),
    project_id         TEXT NOT NULL REFERENCES projects (id),
    title              TEXT NOT NULL,
    lifecycle          TEXT NOT NULL CHECK (lifecycle IN ('active', 'closed')),
    mode               TEXT NOT NULL CHECK (mode IN ('checkout', 'worktree')),
    worktree_branch    TEXT NOT NULL DEFAULT '',
    worktree_path      TEXT NOT NULL DEFAULT '',
    root_instruction   TEXT NOT NULL,
    latest_instruction TEXT NOT NULL,
    instructions       INTEGER NOT NULL CHECK (instructions > 0),
    revision           INTEGER NOT NULL CHECK (revision > 0),
    message_seq        INTEGER NOT NULL CHECK (message_seq >= 0),
    summary            TEXT NOT NULL DEFAULT '',
    n_decisions        INTEGER NOT NULL DEFAULT 0,
    n_progress         INTEGER NOT NULL DEFAULT 0,
    n_open_todos       INTEGER NOT NULL DEFAULT 0,
    n_open_risks       INTEGER NOT NULL DEFAULT 0,
    n_open_questions   INTEGER NOT NULL DEFAULT 0,
    n_open_guidance    INTEGER NOT NULL DEFAULT 0,
    n_messages         INTEGER NOT NULL DEFAULT 0,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    closed_at          INTEGER,
    UNIQUE (group_id, ref),
    CONSTRAINT closed_iff_closed_at CHECK ((lifecycle = 'closed') = (closed_at IS NOT NULL))
) STRICT;

CREATE INDEX sessions_list ON sessions (group_id, project_id, lifecycle, updated_at DESC, id DESC);

CREATE TABLE session_instructions (
    session_id TEXT NOT NULL REFERENCES sessions (id),
    seq        INTEGER NOT NULL CHECK (seq > 0),
    text       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
) STRICT, WITHOUT ROWID;

CREATE TABLE messages (
    id            TEXT PRIMARY KEY CHECK (id LIKE 'msg\_%' ESCAPE '\'),
    session_id    TEXT NOT NULL REFERENCES sessions (id),
    seq           INTEGER NOT NULL CHECK (seq > 0),
    kind          TEXT NOT NULL CHECK (kind IN ('decision', 'progress', 'todo', 'risk', 'question', 'guidance', 'note', 'answer')),
    text          TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('open', 'resolved', 'superseded')),
    priority      TEXT NOT NULL CHECK (priority IN ('low', 'normal', 'high')),
    tags          TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(tags)),
    reply_to      TEXT NOT NULL DEFAULT '',
    supersedes    TEXT NOT NULL DEFAULT '',
    superseded_by TEXT NOT NULL DEFAULT '',
    resolution    TEXT NOT NULL DEFAULT '',
    created_at    INTEGER NOT NULL,
    resolved_at   INTEGER,
    UNIQUE (session_id, seq)
) STRICT;

-- The brief reads the newest few messages of one kind, or the newest open
-- ones of one kind: both are index range scans that stop after LIMIT rows,
-- whatever the size of the session.
CREATE INDEX messages_kind ON messages (session_id, kind, seq);
CREATE INDEX messages_status ON messages (session_id, status, kind, seq);

CREATE TABLE idempotency (
    scope        TEXT NOT NULL,
    key_hash     TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    result_id    TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (scope, key_hash)
) STRICT, WITHOUT ROWID;
