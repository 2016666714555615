-- 0009: who approved a continuation, and a worker's counted context
-- (CONTRACT.md §8). No other table or index changes.

-- '' while no one approved it, the owner principal that did, or 'policy'
-- when the swarm's auto_approve_managed policy did.
ALTER TABLE continuations ADD COLUMN approved_by text NOT NULL DEFAULT '';

-- The sum of the worker's counted ledger entries (task prompts and
-- results, the capsule) at its current epoch, kept as they are added, so
-- that a next checks its pressure without summing the ledger.
ALTER TABLE workers ADD COLUMN counted_tokens bigint NOT NULL DEFAULT 0 CHECK (counted_tokens >= 0);
UPDATE workers SET counted_tokens = (SELECT coalesce(sum(l.tokens), 0) FROM context_ledger l
    WHERE l.worker_id = workers.id AND l.epoch = workers.epoch AND l.source NOT IN ('host_exact', 'estimate'));
