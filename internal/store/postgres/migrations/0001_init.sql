-- 0001: groups, principals, tokens, projects, grants, sessions, messages,
-- idempotency. Times are bigint unix milliseconds (UTC), set by the caller.
--
-- PostgreSQL translation of internal/store/sqlite/migrations/0001_init.sql:
-- same tables, columns (in the same order), constraints and indexes.
-- SQLite INTEGER is bigint here, including writable, which stays 0/1 with its
-- CHECK (not boolean) so that exports are identical across engines.
-- json_valid(x) becomes CHECK (x::json IS NOT NULL): a value that is not
-- valid JSON fails the cast, which raises an error and so rejects the row, as
-- the SQLite check does (but the error is invalid_text_representation,
-- SQLSTATE 22P02, not check_violation, 23514). The json type, not jsonb:
-- like json_valid it checks only the syntax, while jsonb would also reject
-- \u0000 and lone surrogate escapes, which SQLite accepts.

CREATE TABLE meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);

CREATE TABLE groups (
    id              text PRIMARY KEY CHECK (id LIKE 'grp\_%' ESCAPE '\'),
    name            text NOT NULL UNIQUE,
    session_ref_seq bigint NOT NULL DEFAULT 0,
    created_at      bigint NOT NULL
);

CREATE TABLE principals (
    id         text PRIMARY KEY CHECK (id LIKE 'prn\_%' ESCAPE '\'),
    name       text NOT NULL UNIQUE,
    group_id   text NOT NULL REFERENCES groups (id),
    created_at bigint NOT NULL
);

CREATE TABLE tokens (
    id           text PRIMARY KEY CHECK (id LIKE 'tok\_%' ESCAPE '\'),
    principal_id text NOT NULL REFERENCES principals (id),
    hash         text NOT NULL UNIQUE,
    scopes       text NOT NULL,
    created_at   bigint NOT NULL,
    expires_at   bigint,
    revoked_at   bigint
);

CREATE TABLE projects (
    id         text PRIMARY KEY CHECK (id LIKE 'prj\_%' ESCAPE '\'),
    name       text NOT NULL UNIQUE,
    root       text NOT NULL DEFAULT '',
    checks     text NOT NULL DEFAULT '{}' CHECK (checks::json IS NOT NULL),
    writable   bigint NOT NULL CHECK (writable IN (0, 1)),
    created_at bigint NOT NULL
);

CREATE TABLE grants (
    project_id text NOT NULL REFERENCES projects (id),
    group_id   text NOT NULL REFERENCES groups (id),
    access     text NOT NULL CHECK (access IN ('read', 'write')),
    PRIMARY KEY (project_id, group_id)
);

CREATE INDEX grants_group ON grants (group_id);

CREATE TABLE sessions (
    id                 text PRIMARY KEY CHECK (id LIKE 'ses\_%' ESCAPE '\'),
    group_id           text NOT NULL REFERENCES groups (id),
    ref                bigint NOT NULL CHECK (ref > 0),
    project_id         text NOT NULL REFERENCES projects (id),
    title              text NOT NULL,
    lifecycle          text NOT NULL CHECK (lifecycle IN ('active', 'closed')),
    mode               text NOT NULL CHECK (mode IN ('checkout', 'worktree')),
    worktree_branch    text NOT NULL DEFAULT '',
    worktree_path      text NOT NULL DEFAULT '',
    root_instruction   text NOT NULL,
    latest_instruction text NOT NULL,
    instructions       bigint NOT NULL CHECK (instructions > 0),
    revision           bigint NOT NULL CHECK (revision > 0),
    message_seq        bigint NOT NULL CHECK (message_seq >= 0),
    summary            text NOT NULL DEFAULT '',
    n_decisions        bigint NOT NULL DEFAULT 0,
    n_progress         bigint NOT NULL DEFAULT 0,
    n_open_todos       bigint NOT NULL DEFAULT 0,
    n_open_risks       bigint NOT NULL DEFAULT 0,
    n_open_questions   bigint NOT NULL DEFAULT 0,
    n_open_guidance    bigint NOT NULL DEFAULT 0,
    n_messages         bigint NOT NULL DEFAULT 0,
    created_at         bigint NOT NULL,
    updated_at         bigint NOT NULL,
    closed_at          bigint,
    UNIQUE (group_id, ref),
    CONSTRAINT closed_iff_closed_at CHECK ((lifecycle = 'closed') = (closed_at IS NOT NULL))
);

CREATE INDEX sessions_list ON sessions (group_id, project_id, lifecycle, updated_at DESC, id DESC);

CREATE TABLE session_instructions (
    session_id text NOT NULL REFERENCES sessions (id),
    seq        bigint NOT NULL CHECK (seq > 0),
    text       text NOT NULL,
    created_at bigint NOT NULL,
    PRIMARY KEY (session_id, seq)
);

CREATE TABLE messages (
    id            text PRIMARY KEY CHECK (id LIKE 'msg\_%' ESCAPE '\'),
    session_id    text NOT NULL REFERENCES sessions (id),
    seq           bigint NOT NULL CHECK (seq > 0),
    kind          text NOT NULL CHECK (kind IN ('decision', 'progress', 'todo', 'risk', 'question', 'guidance', 'note', 'answer')),
    text          text NOT NULL,
    status        text NOT NULL CHECK (status IN ('open', 'resolved', 'superseded')),
    priority      text NOT NULL CHECK (priority IN ('low', 'normal', 'high')),
    tags          text NOT NULL DEFAULT '[]' CHECK (tags::json IS NOT NULL),
    reply_to      text NOT NULL DEFAULT '',
    supersedes    text NOT NULL DEFAULT '',
    superseded_by text NOT NULL DEFAULT '',
    resolution    text NOT NULL DEFAULT '',
    created_at    bigint NOT NULL,
    resolved_at   bigint,
    UNIQUE (session_id, seq)
);

-- The brief reads the newest few messages of one kind, or the newest open
-- ones of one kind: both are index range scans that stop after LIMIT rows,
-- whatever the size of the session.
CREATE INDEX messages_kind ON messages (session_id, kind, seq);
CREATE INDEX messages_status ON messages (session_id, status, kind, seq);

CREATE TABLE idempotency (
    scope        text NOT NULL,
    key_hash     text NOT NULL,
    request_hash text NOT NULL,
    result_id    text NOT NULL,
    created_at   bigint NOT NULL,
    PRIMARY KEY (scope, key_hash)
);
