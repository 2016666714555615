-- 0016: a worker can be compact_blocked (CONTRACT.md §8: no rollover can
-- leave it room to work, blocked_reason says why) and retired (§7: it
-- left, the owner removed it, or its carrier stayed silent past its
-- swarm's worker_idle_ttl_secs; retired_reason says which, retired_at
-- when). idle_ttl_ms is its swarm's worker_idle_ttl_secs, kept on the
-- worker so that the reaper finds the silent ones by one index range
-- (workers_idle). No other table changes.
--
-- SQLite cannot change a CHECK in place: the table is rebuilt with the
-- same columns, in the same order, and the new ones after them. Other
-- tables reference workers: with foreign keys deferred, dropping it counts
-- their rows as violations and putting its rows back uncounts them, so the
-- migration's transaction commits only if every reference holds again.
PRAGMA defer_foreign_keys = ON;

CREATE TEMP TABLE workers_0016 AS SELECT * FROM workers;

DROP TABLE workers;

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
    continuity_state TEXT NOT NULL CHECK (continuity_state IN ('steady', 'compact_required', 'continuation_pending', 'reconcile_required', 'compact_blocked')),
    current_task_id  TEXT NOT NULL DEFAULT '',
    join_hash        TEXT NOT NULL,
    checkpoint       TEXT NOT NULL DEFAULT '' CHECK (checkpoint = '' OR json_valid(checkpoint)),
    checkpoint_hash  TEXT NOT NULL DEFAULT '',
    checkpoint_at    INTEGER,
    last_seen_at     INTEGER NOT NULL,
    revision         INTEGER NOT NULL CHECK (revision > 0),
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    counted_tokens   INTEGER NOT NULL DEFAULT 0 CHECK (counted_tokens >= 0),
    blocked_reason   TEXT NOT NULL DEFAULT '' CHECK (blocked_reason = '' OR blocked_reason = 'capsule_too_large' OR blocked_reason = 'carrier_start_failed' OR blocked_reason = 'not_redeemed'),
    retired_reason   TEXT NOT NULL DEFAULT '' CHECK (retired_reason = '' OR retired_reason = 'left' OR retired_reason = 'removed' OR retired_reason = 'idle'),
    retired_at       INTEGER,
    idle_ttl_ms      INTEGER NOT NULL DEFAULT 1800000 CHECK (idle_ttl_ms > 0),
    CONSTRAINT busy_iff_task CHECK ((state = 'busy') = (current_task_id <> '')),
    CONSTRAINT blocked_iff_reason CHECK ((continuity_state = 'compact_blocked') = (blocked_reason <> '')),
    CONSTRAINT retired_iff_retired_at CHECK ((retired_reason <> '') = (retired_at IS NOT NULL)),
    CONSTRAINT retired_holds_nothing CHECK (NOT (retired_reason <> '' AND (state = 'busy' OR carrier_state <> 'retired')))
) STRICT;

INSERT INTO workers (id, swarm_id, principal_id, label, epoch, carrier_hash, carrier_source, carrier_state, state,
    continuity_state, current_task_id, join_hash, checkpoint, checkpoint_hash, checkpoint_at, last_seen_at, revision,
    created_at, updated_at, counted_tokens)
SELECT id, swarm_id, principal_id, label, epoch, carrier_hash, carrier_source, carrier_state, state,
    continuity_state, current_task_id, join_hash, checkpoint, checkpoint_hash, checkpoint_at, last_seen_at, revision,
    created_at, updated_at, counted_tokens FROM workers_0016;

DROP TABLE workers_0016;

CREATE INDEX workers_swarm ON workers (swarm_id, id);
CREATE INDEX workers_compact ON workers (id) WHERE continuity_state = 'compact_required';
-- The compact_blocked workers, counted for /metrics.
CREATE INDEX workers_blocked ON workers (id) WHERE continuity_state = 'compact_blocked';
-- Workers holding no task, not retired, by when their carrier's silence
-- runs past their idle TTL: the reaper's range.
CREATE INDEX workers_idle ON workers ((last_seen_at + idle_ttl_ms)) WHERE retired_reason = '' AND state = 'idle';
