-- 0007: Chat Swarm (CONTRACT.md §7): swarms, their workers, the carriers
-- bound to them, tasks and the attempts that delivered them. Tables only:
-- nothing older changes. Times are INTEGER unix milliseconds (UTC), set by
-- the caller; a lease is 0 when there is none. Optional text is '' (never
-- NULL); optional times are NULL. The states are the closed sets of the
-- root package's swarm.go; the transitions are the swarm service's, drawn
-- in docs/ARCHITECTURE.md.

-- A swarm of a group. Every change raises revision, which guards the row.
-- invite_hash is the hash of the one invite that admits joins ('' when
-- none does) until invite_expires_at.
CREATE TABLE swarms (
    id                TEXT PRIMARY KEY CHECK (id LIKE 'swm\_%' ESCAPE '\'),
    group_id          TEXT NOT NULL REFERENCES groups (id),
    created_by        TEXT NOT NULL,
    owner_carrier     TEXT NOT NULL DEFAULT '',
    state             TEXT NOT NULL CHECK (state IN ('active', 'closed')),
    worker_limit      INTEGER NOT NULL CHECK (worker_limit BETWEEN 1 AND 64),
    policy            TEXT NOT NULL CHECK (json_valid(policy)),
    invite_hash       TEXT NOT NULL DEFAULT '',
    invite_expires_at INTEGER NOT NULL DEFAULT 0,
    revision          INTEGER NOT NULL CHECK (revision > 0),
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL
) STRICT;

CREATE INDEX swarms_group ON swarms (group_id, id);

-- A worker: a durable identity, carried at epoch by the carrier whose hash
-- it names. A busy worker names its one active task. Every change but a
-- last-seen touch raises revision, which guards the row.
CREATE TABLE workers (
    id               TEXT PRIMARY KEY CHECK (id LIKE 'wkr\_%' ESCAPE '\'),
    swarm_id         TEXT NOT NULL REFERENCES swarms (id),
    principal_id     TEXT NOT NULL,
    label            TEXT NOT NULL,
    epoch            INTEGER NOT NULL CHECK (epoch >= 0),
    carrier_hash     TEXT NOT NULL,
    carrier_source   TEXT NOT NULL CHECK (carrier_source IN ('host_meta', 'mcp_session', 'carrier_key')),
    carrier_state    TEXT NOT NULL CHECK (carrier_state IN ('active', 'lost', 'retired')),
    state            TEXT NOT NULL CHECK (state IN ('idle', 'busy')),
    continuity_state TEXT NOT NULL CHECK (continuity_state IN ('steady', 'compact_required', 'continuation_pending', 'reconcile_required')),
    current_task_id  TEXT NOT NULL DEFAULT '',
    join_hash        TEXT NOT NULL,
    checkpoint       TEXT NOT NULL DEFAULT '' CHECK (checkpoint = '' OR json_valid(checkpoint)),
    checkpoint_hash  TEXT NOT NULL DEFAULT '',
    checkpoint_at    INTEGER,
    last_seen_at     INTEGER NOT NULL,
    revision         INTEGER NOT NULL CHECK (revision > 0),
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    CONSTRAINT busy_iff_task CHECK ((state = 'busy') = (current_task_id <> ''))
) STRICT;

CREATE INDEX workers_swarm ON workers (swarm_id, id);

-- Every binding of a carrier to a worker. The hash is the primary key: a
-- carrier is bound once, ever, so a retired carrier never binds again and
-- no carrier carries two workers. A worker has one active carrier.
CREATE TABLE carriers (
    hash       TEXT PRIMARY KEY,
    worker_id  TEXT NOT NULL REFERENCES workers (id),
    swarm_id   TEXT NOT NULL REFERENCES swarms (id),
    epoch      INTEGER NOT NULL CHECK (epoch >= 0),
    source     TEXT NOT NULL CHECK (source IN ('host_meta', 'mcp_session', 'carrier_key')),
    state      TEXT NOT NULL CHECK (state IN ('active', 'retired')),
    bound_at   INTEGER NOT NULL,
    retired_at INTEGER,
    CONSTRAINT retired_iff_retired_at CHECK ((state = 'retired') = (retired_at IS NOT NULL))
) STRICT, WITHOUT ROWID;

CREATE UNIQUE INDEX carriers_active ON carriers (worker_id) WHERE state = 'active';
CREATE INDEX carriers_swarm ON carriers (swarm_id);

-- A task of a swarm, unique by task key. worker_id names the worker of
-- the latest attempt. Every change raises revision, which guards the row.
CREATE TABLE tasks (
    id                  TEXT PRIMARY KEY CHECK (id LIKE 'tsk\_%' ESCAPE '\'),
    swarm_id            TEXT NOT NULL REFERENCES swarms (id),
    task_key            TEXT NOT NULL CHECK (length(CAST(task_key AS BLOB)) BETWEEN 1 AND 128),
    request_hash        TEXT NOT NULL,
    prompt              TEXT NOT NULL,
    payload             TEXT NOT NULL DEFAULT '' CHECK (payload = '' OR json_valid(payload)),
    preferred_worker_id TEXT NOT NULL DEFAULT '',
    worker_id           TEXT NOT NULL DEFAULT '',
    state               TEXT NOT NULL CHECK (state IN ('queued', 'claimed', 'running', 'cancel_requested', 'result_ready',
                            'collected', 'failed', 'cancelled', 'reconcile_required')),
    attempt             INTEGER NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    result              TEXT NOT NULL DEFAULT '',
    result_hash         TEXT NOT NULL DEFAULT '',
    reason              TEXT NOT NULL DEFAULT '',
    detail              TEXT NOT NULL DEFAULT '',
    revision            INTEGER NOT NULL CHECK (revision > 0),
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    ended_at            INTEGER,
    -- Settled exactly when terminal; held by a worker whenever claimed or
    -- past; a result exactly when result_ready or collected. (Table
    -- constraints spell states with OR: an IN list in a CHECK is a
    -- column's closed set to the schema test.)
    CONSTRAINT ended_iff_terminal CHECK ((state = 'result_ready' OR state = 'collected' OR state = 'failed' OR state = 'cancelled')
        = (ended_at IS NOT NULL)),
    CONSTRAINT active_has_worker CHECK (NOT ((state = 'claimed' OR state = 'running' OR state = 'cancel_requested') AND worker_id = '')),
    CONSTRAINT result_iff_ready CHECK ((state = 'result_ready' OR state = 'collected') = (result_hash <> ''))
) STRICT;

CREATE UNIQUE INDEX tasks_key ON tasks (swarm_id, task_key);
-- At most one active task per worker: two claims racing for one worker
-- collide here.
CREATE UNIQUE INDEX tasks_active_worker ON tasks (worker_id) WHERE state IN ('claimed', 'running', 'cancel_requested');
-- The queue: TaskClaim's two range scans (preferring this worker, then
-- preferring none), oldest first.
CREATE INDEX tasks_queue ON tasks (swarm_id, preferred_worker_id, id) WHERE state = 'queued';
-- Counts by state, and listings by state.
CREATE INDEX tasks_state ON tasks (swarm_id, state, id);

-- One delivery of a task to a worker, numbered from 1. An active attempt
-- (claimed or running) holds the task's lease; a task has at most one, so
-- at most one unexpired lease. server names the process that delivered it.
CREATE TABLE attempts (
    id          TEXT PRIMARY KEY CHECK (id LIKE 'att\_%' ESCAPE '\'),
    task_id     TEXT NOT NULL REFERENCES tasks (id),
    swarm_id    TEXT NOT NULL REFERENCES swarms (id),
    number      INTEGER NOT NULL CHECK (number > 0),
    worker_id   TEXT NOT NULL REFERENCES workers (id),
    epoch       INTEGER NOT NULL CHECK (epoch >= 0),
    server      TEXT NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('claimed', 'running', 'submitted', 'failed', 'cancelled', 'in_doubt', 'requeued', 'settled')),
    lease_until INTEGER NOT NULL DEFAULT 0 CHECK (lease_until >= 0),
    claimed_at  INTEGER NOT NULL,
    acked_at    INTEGER,
    ended_at    INTEGER,
    CONSTRAINT ended_iff_inactive CHECK ((state = 'claimed' OR state = 'running') = (ended_at IS NULL)),
    CONSTRAINT running_was_acked CHECK (NOT (state = 'running' AND acked_at IS NULL))
) STRICT;

CREATE UNIQUE INDEX attempts_number ON attempts (task_id, number);
CREATE UNIQUE INDEX attempts_active ON attempts (task_id) WHERE state IN ('claimed', 'running');
-- The lease reaper's scans: active attempts whose lease ran out, and those
-- of one server (whose process may have died).
CREATE INDEX attempts_lease ON attempts (lease_until) WHERE state IN ('claimed', 'running');
CREATE INDEX attempts_server ON attempts (server) WHERE state IN ('claimed', 'running');
CREATE INDEX attempts_swarm ON attempts (swarm_id);
CREATE INDEX attempts_worker ON attempts (worker_id);
