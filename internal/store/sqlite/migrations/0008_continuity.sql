-- 0008: worker continuity (CONTRACT.md §8): continuations that move a
-- worker to a new carrier, the context-pressure ledger, and an index of
-- tasks by worker; no older table or index changes. Times are INTEGER unix
-- milliseconds (UTC), set by the caller. Optional text is '' (never
-- NULL); optional times are NULL.

-- A continuation of a worker from its carrier at source_epoch to a new one
-- at target_epoch = source_epoch + 1. Every change raises version, which
-- guards the row. A worker has at most one open continuation (pending,
-- approved or reconcile_required); a ticket hash names one continuation.
CREATE TABLE continuations (
    id              TEXT PRIMARY KEY CHECK (id LIKE 'cnt\_%' ESCAPE '\'),
    swarm_id        TEXT NOT NULL REFERENCES swarms (id),
    worker_id       TEXT NOT NULL REFERENCES workers (id),
    path            TEXT NOT NULL CHECK (path = 'ticket' OR path = 'approval'),
    state           TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'bound', 'revoked', 'expired', 'reconcile_required')),
    version         INTEGER NOT NULL CHECK (version > 0),
    source_epoch    INTEGER NOT NULL CHECK (source_epoch >= 0),
    target_epoch    INTEGER NOT NULL,
    source_carrier  TEXT NOT NULL,
    target_carrier  TEXT NOT NULL DEFAULT '',
    target_source   TEXT NOT NULL DEFAULT '' CHECK (target_source = '' OR target_source = 'host_meta' OR target_source = 'mcp_session' OR target_source = 'carrier_key'),
    ticket_hash     TEXT NOT NULL DEFAULT '',
    checkpoint_hash TEXT NOT NULL,
    capsule         TEXT NOT NULL DEFAULT '' CHECK (capsule = '' OR json_valid(capsule)),
    capsule_hash    TEXT NOT NULL DEFAULT '',
    reason          TEXT NOT NULL DEFAULT '',
    requested_by    TEXT NOT NULL,
    request_hash    TEXT NOT NULL DEFAULT '',
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    expires_at      INTEGER NOT NULL,
    bound_at        INTEGER,
    carrier_op      TEXT NOT NULL DEFAULT '' CHECK (carrier_op = '' OR carrier_op = 'prepared' OR carrier_op = 'in_flight' OR carrier_op = 'succeeded' OR carrier_op = 'unknown' OR carrier_op = 'failed'),
    carrier_proc    TEXT NOT NULL DEFAULT '',
    carrier_token   TEXT NOT NULL DEFAULT '',
    CONSTRAINT next_epoch CHECK (target_epoch = source_epoch + 1),
    CONSTRAINT bound_iff_bound_at CHECK ((state = 'bound') = (bound_at IS NOT NULL)),
    CONSTRAINT bound_has_target CHECK (NOT (state = 'bound' AND target_carrier = '')),
    CONSTRAINT ticket_iff_ticket_path CHECK ((path = 'ticket') = (ticket_hash <> ''))
) STRICT;

CREATE UNIQUE INDEX continuations_open ON continuations (worker_id) WHERE state = 'pending' OR state = 'approved' OR state = 'reconcile_required';
CREATE UNIQUE INDEX continuations_ticket ON continuations (ticket_hash) WHERE ticket_hash <> '';
-- A swarm's and a worker's continuations newest first (status, history),
-- a target carrier's (its readback), and the open ones by expiry (the
-- reaper).
CREATE INDEX continuations_swarm ON continuations (swarm_id, id);
-- The carrier starts whose outcome a crash may have left unknown (the
-- sweep at start).
CREATE INDEX continuations_op ON continuations (carrier_op) WHERE carrier_op = 'in_flight';
-- Workers whose pressure reached the threshold: the Auto Compact planner.
CREATE INDEX workers_compact ON workers (id) WHERE continuity_state = 'compact_required';
CREATE INDEX continuations_worker ON continuations (worker_id, id);
CREATE INDEX continuations_target ON continuations (target_carrier, id) WHERE target_carrier <> '';
CREATE INDEX continuations_expiry ON continuations (expires_at) WHERE state = 'pending' OR state = 'approved' OR state = 'reconcile_required';

-- A worker's context ledger, per epoch: counts (a task's prompt and
-- result, the capsule a carrier started from) each once by ref, and
-- reported figures (host_exact, estimate), each source keeping its
-- largest. The primary key makes a replayed count change nothing.
CREATE TABLE context_ledger (
    worker_id TEXT NOT NULL REFERENCES workers (id),
    epoch     INTEGER NOT NULL CHECK (epoch >= 0),
    source    TEXT NOT NULL CHECK (source IN ('task_prompt', 'task_result', 'capsule', 'host_exact', 'estimate')),
    ref       TEXT NOT NULL,
    tokens    INTEGER NOT NULL CHECK (tokens >= 0),
    basis     TEXT NOT NULL DEFAULT '',
    at        INTEGER NOT NULL,
    PRIMARY KEY (worker_id, epoch, source, ref)
) STRICT, WITHOUT ROWID;

-- A worker's tasks by ID, in either order: a capsule reads its newest.
CREATE INDEX tasks_worker ON tasks (swarm_id, worker_id, id);
