-- 0016: a worker can be compact_blocked (CONTRACT.md §8: no rollover can
-- leave it room to work, blocked_reason says why) and retired (§7: it
-- left, the owner removed it, or its carrier stayed silent past its
-- swarm's worker_idle_ttl_secs; retired_reason says which, retired_at
-- when). idle_ttl_ms is its swarm's worker_idle_ttl_secs, kept on the
-- worker so that the reaper finds the silent ones by one index range
-- (workers_idle). No other table changes.
--
-- PostgreSQL translation of internal/store/sqlite/migrations/0016_workers.sql,
-- which rebuilds the table (SQLite cannot change a CHECK in place): here
-- the continuity_state CHECK is replaced and the columns are added, in
-- the same order.
ALTER TABLE workers DROP CONSTRAINT workers_continuity_state_check;

ALTER TABLE workers ADD CONSTRAINT workers_continuity_state_check
    CHECK (continuity_state IN ('steady', 'compact_required', 'continuation_pending', 'reconcile_required', 'compact_blocked'));

ALTER TABLE workers ADD COLUMN blocked_reason text NOT NULL DEFAULT ''
    CHECK (blocked_reason = '' OR blocked_reason = 'capsule_too_large' OR blocked_reason = 'carrier_start_failed' OR blocked_reason = 'not_redeemed');

ALTER TABLE workers ADD COLUMN retired_reason text NOT NULL DEFAULT ''
    CHECK (retired_reason = '' OR retired_reason = 'left' OR retired_reason = 'removed' OR retired_reason = 'idle');

ALTER TABLE workers ADD COLUMN retired_at bigint;

ALTER TABLE workers ADD COLUMN idle_ttl_ms bigint NOT NULL DEFAULT 1800000 CHECK (idle_ttl_ms > 0);

ALTER TABLE workers ADD CONSTRAINT blocked_iff_reason CHECK ((continuity_state = 'compact_blocked') = (blocked_reason <> ''));

ALTER TABLE workers ADD CONSTRAINT retired_iff_retired_at CHECK ((retired_reason <> '') = (retired_at IS NOT NULL));

ALTER TABLE workers ADD CONSTRAINT retired_holds_nothing CHECK (NOT (retired_reason <> '' AND (state = 'busy' OR carrier_state <> 'retired')));

-- The compact_blocked workers, counted for /metrics.
CREATE INDEX workers_blocked ON workers (id) WHERE continuity_state = 'compact_blocked';
-- Workers holding no task, not retired, by when their carrier's silence
-- runs past their idle TTL: the reaper's range.
CREATE INDEX workers_idle ON workers ((last_seen_at + idle_ttl_ms)) WHERE retired_reason = '' AND state = 'idle';
