-- 0008: worker continuity (CONTRACT.md §8): continuations that move a
-- worker to a new carrier, the context-pressure ledger, and an index of
-- tasks by worker; no older table or index changes. Times are bigint unix
-- milliseconds (UTC), set by the caller. Optional text is '' (never
-- NULL); optional times are NULL.
--
-- PostgreSQL translation of internal/store/sqlite/migrations/0008_continuity.sql:
-- same tables, columns (in the same order), constraints and indexes.

-- A continuation of a worker from its carrier at source_epoch to a new one
-- at target_epoch = source_epoch + 1. Every change raises version, which
-- guards the row. A worker has at most one open continuation (pending,
-- approved or reconcile_required); a ticket hash names one continuation.
CREATE TABLE continuations (
    id              text PRIMARY KEY CHECK (id LIKE 'cnt\_%' ESCAPE '\'),
    swarm_id        text NOT NULL REFERENCES swarms (id),
    worker_id       text NOT NULL REFERENCES workers (id),
    path            text NOT NULL CHECK (path = 'ticket' OR path = 'approval'),
    state           text NOT NULL CHECK (state IN ('pending', 'approved', 'bound', 'revoked', 'expired', 'reconcile_required')),
    version         bigint NOT NULL CHECK (version > 0),
    source_epoch    bigint NOT NULL CHECK (source_epoch >= 0),
    target_epoch    bigint NOT NULL,
    source_carrier  text NOT NULL,
    target_carrier  text NOT NULL DEFAULT '',
    target_source   text NOT NULL DEFAULT '' CHECK (target_source = '' OR target_source = 'host_meta' OR target_source = 'mcp_session' OR target_source = 'carrier_key'),
    ticket_hash     text NOT NULL DEFAULT '',
    checkpoint_hash text NOT NULL,
    capsule         text NOT NULL DEFAULT '' CHECK (CASE WHEN capsule = '' THEN true ELSE capsule::json IS NOT NULL END),
    capsule_hash    text NOT NULL DEFAULT '',
    reason          text NOT NULL DEFAULT '',
    requested_by    text NOT NULL,
    request_hash    text NOT NULL DEFAULT '',
    created_at      bigint NOT NULL,
    updated_at      bigint NOT NULL,
    expires_at      bigint NOT NULL,
    bound_at        bigint,
    carrier_op      text NOT NULL DEFAULT '' CHECK (carrier_op = '' OR carrier_op = 'prepared' OR carrier_op = 'in_flight' OR carrier_op = 'succeeded' OR carrier_op = 'unknown' OR carrier_op = 'failed'),
    carrier_proc    text NOT NULL DEFAULT '',
    carrier_token   text NOT NULL DEFAULT '',
    CONSTRAINT next_epoch CHECK (target_epoch = source_epoch + 1),
    CONSTRAINT bound_iff_bound_at CHECK ((state = 'bound') = (bound_at IS NOT NULL)),
    CONSTRAINT bound_has_target CHECK (NOT (state = 'bound' AND target_carrier = '')),
    CONSTRAINT ticket_iff_ticket_path CHECK ((path = 'ticket') = (ticket_hash <> ''))
);

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
    worker_id text NOT NULL REFERENCES workers (id),
    epoch     bigint NOT NULL CHECK (epoch >= 0),
    source    text NOT NULL CHECK (source IN ('task_prompt', 'task_result', 'capsule', 'host_exact', 'estimate')),
    ref       text NOT NULL,
    tokens    bigint NOT NULL CHECK (tokens >= 0),
    basis     text NOT NULL DEFAULT '',
    at        bigint NOT NULL,
    PRIMARY KEY (worker_id, epoch, source, ref)
);

-- A worker's tasks by ID, in either order: a capsule reads its newest.
CREATE INDEX tasks_worker ON tasks (swarm_id, worker_id, id);
