package storetest

import (
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// Migration0009Seed is what a version 8 database holds before migration
// 0009, in either engine's SQL: a worker at epoch 1 whose ledger counted
// 10 + 5 tokens at epoch 1 (and 7 at epoch 0, and a report of 1,000).
var Migration0009Seed = []string{
	"INSERT INTO groups (id, name, created_at) VALUES ('grp_1', 'g', 0)",
	`INSERT INTO swarms (id, group_id, created_by, state, worker_limit, policy, revision, created_at, updated_at)
		VALUES ('swm_1', 'grp_1', 'prn_1', 'active', 8, '{}', 1, 0, 0)`,
	`INSERT INTO workers (id, swarm_id, principal_id, label, epoch, carrier_hash, carrier_source, carrier_state, state,
		continuity_state, join_hash, last_seen_at, revision, created_at, updated_at)
		VALUES ('wkr_1', 'swm_1', 'prn_1', 'one', 1, 'carrier-1', 'carrier_key', 'active', 'idle', 'steady', 'join-1', 0, 1, 0, 0)`,
	`INSERT INTO context_ledger (worker_id, epoch, source, ref, tokens, basis, at) VALUES
		('wkr_1', 1, 'task_prompt', 'tsk_1', 10, '', 0), ('wkr_1', 1, 'task_result', 'tsk_1', 5, '', 0),
		('wkr_1', 0, 'task_prompt', 'tsk_0', 7, '', 0), ('wkr_1', 1, 'estimate', '', 1000, 'chars', 0)`,
}

// CheckMigration0009 checks a database migrated from Migration0009Seed:
// the worker's counted tokens are its epoch's counted entries, and its
// continuations record who approved them.
func CheckMigration0009(t *testing.T, s store.Store) {
	t.Helper()
	w := mustWorker(t, s, "wkr_1")
	if w.CountedTokens != 15 {
		t.Errorf("counted tokens after 0009: %d, want 15 (the counts of epoch 1)", w.CountedTokens)
	}
	c := Continuation(t, s, &w, func(c *continuo.Continuation) { c.ApprovedBy = "prn_owner" })
	if got := mustContinuation(t, s, c.ID); got.ApprovedBy != "prn_owner" {
		t.Errorf("approved_by after 0009: %q", got.ApprovedBy)
	}
}

// Migration0017Seed is what a version 16 database holds before migration
// 0017, in either engine's SQL: a swarm with two workers, each with its
// carrier, one of them busy with a task delivered by an attempt, a bound
// continuation and ledger entries — rows of every table that references
// workers, which the migration must keep pointing at them.
var Migration0017Seed = []string{
	"INSERT INTO groups (id, name, created_at) VALUES ('grp_1', 'g', 0)",
	`INSERT INTO swarms (id, group_id, created_by, state, worker_limit, policy, revision, created_at, updated_at)
		VALUES ('swm_1', 'grp_1', 'prn_1', 'active', 8, '{}', 1, 0, 0)`,
	`INSERT INTO workers (id, swarm_id, principal_id, label, epoch, carrier_hash, carrier_source, carrier_state, state,
		continuity_state, current_task_id, join_hash, checkpoint, checkpoint_hash, checkpoint_at, last_seen_at, revision,
		created_at, updated_at, counted_tokens) VALUES
		('wkr_1', 'swm_1', 'prn_1', 'one', 1, 'carrier-1', 'carrier_key', 'active', 'busy', 'compact_required', 'tsk_1',
			'join-1', '{"step":1}', 'cp-1', 5, 7, 4, 1, 6, 15),
		('wkr_2', 'swm_1', 'prn_1', 'two', 0, 'carrier-2', 'mcp_session', 'lost', 'idle', 'steady', '', 'join-2', '', '',
			NULL, 3, 1, 2, 2, 0)`,
	`INSERT INTO carriers (hash, worker_id, swarm_id, epoch, source, state, bound_at, retired_at) VALUES
		('carrier-0', 'wkr_1', 'swm_1', 0, 'carrier_key', 'retired', 1, 3),
		('carrier-1', 'wkr_1', 'swm_1', 1, 'carrier_key', 'active', 3, NULL),
		('carrier-2', 'wkr_2', 'swm_1', 0, 'mcp_session', 'active', 2, NULL)`,
	`INSERT INTO tasks (id, swarm_id, task_key, request_hash, prompt, worker_id, state, attempt, revision, created_at, updated_at)
		VALUES ('tsk_1', 'swm_1', 'k1', 'rh', 'p', 'wkr_1', 'running', 1, 3, 1, 5)`,
	`INSERT INTO attempts (id, task_id, swarm_id, number, worker_id, epoch, server, state, lease_until, claimed_at, acked_at)
		VALUES ('att_1', 'tsk_1', 'swm_1', 1, 'wkr_1', 1, 'srv', 'running', 9, 4, 5)`,
	`INSERT INTO continuations (id, swarm_id, worker_id, path, state, version, source_epoch, target_epoch, source_carrier,
		target_carrier, target_source, ticket_hash, checkpoint_hash, requested_by, created_at, updated_at, expires_at, bound_at)
		VALUES ('cnt_1', 'swm_1', 'wkr_1', 'ticket', 'bound', 2, 0, 1, 'carrier-0', 'carrier-1', 'carrier_key', 'th', 'cp-0',
			'prn_1', 2, 3, 60, 3)`,
	`INSERT INTO context_ledger (worker_id, epoch, source, ref, tokens, basis, at) VALUES
		('wkr_1', 1, 'task_prompt', 'tsk_1', 15, '', 4), ('wkr_2', 0, 'estimate', '', 100, 'chars', 2)`,
}

// CheckMigration0017 checks a database migrated from Migration0017Seed:
// the workers are as they were, every row that references them still
// does, and the new columns hold their defaults — not blocked, not
// retired, the default idle TTL — and take the new states.
func CheckMigration0017(t *testing.T, s store.Store) {
	t.Helper()
	ms := func(n int64) time.Time { return time.UnixMilli(n).UTC() }
	at5, ttl := ms(5), continuo.DefaultWorkerIdleTTL
	want := []continuo.Worker{
		{ID: "wkr_1", SwarmID: "swm_1", PrincipalID: "prn_1", Label: "one", Epoch: 1, CarrierHash: "carrier-1",
			CarrierSource: continuo.CarrierFromKey, CarrierState: continuo.CarrierActive, State: continuo.WorkerBusy,
			ContinuityState: continuo.ContinuityCompactRequired, CurrentTaskID: "tsk_1", JoinHash: "join-1", Checkpoint: `{"step":1}`,
			CheckpointHash: "cp-1", CheckpointAt: &at5, LastSeenAt: ms(7), Revision: 4, CreatedAt: ms(1), UpdatedAt: ms(6),
			CountedTokens: 15, IdleTTL: ttl},
		{ID: "wkr_2", SwarmID: "swm_1", PrincipalID: "prn_1", Label: "two", CarrierHash: "carrier-2",
			CarrierSource: continuo.CarrierFromSession, CarrierState: continuo.CarrierLost, State: continuo.WorkerIdle,
			ContinuityState: continuo.ContinuitySteady, JoinHash: "join-2", LastSeenAt: ms(3), Revision: 1, CreatedAt: ms(2),
			UpdatedAt: ms(2), IdleTTL: ttl},
	}
	sameList(t, "workers after 0017", listWorkers(t, s, "swm_1"), want, normWorker)
	MustRead(t, s, func(tx store.Tx) error {
		ctx := t.Context()
		if c, err := tx.CarrierGet(ctx, "carrier-1"); err != nil || c.WorkerID != "wkr_1" {
			t.Errorf("carrier-1 after 0017: %v, %v", c, err)
		}
		if a, err := tx.AttemptOf(ctx, "tsk_1", 1); err != nil || a.WorkerID != "wkr_1" || a.State != continuo.AttemptRunning {
			t.Errorf("the attempt after 0017: %v, %v", a, err)
		}
		if c, err := tx.ContinuationGet(ctx, "cnt_1"); err != nil || c.WorkerID != "wkr_1" {
			t.Errorf("the continuation after 0017: %v, %v", c, err)
		}
		if es, err := tx.LedgerEntries(ctx, "wkr_2", 0); err != nil || len(es) != 1 || es[0].Tokens != 100 {
			t.Errorf("the ledger after 0017: %v, %v", es, err)
		}
		if n, err := tx.WorkerCount(ctx, "swm_1"); err != nil || n != 2 {
			t.Errorf("WorkerCount after 0017 = %d, %v", n, err)
		}
		return nil
	})
	// The new states take.
	w := want[1]
	gone := ms(9)
	w.ContinuityState, w.BlockedReason = continuo.ContinuityCompactBlocked, continuo.BlockedCapsuleTooLarge
	w.CarrierState, w.RetiredReason, w.RetiredAt, w.Revision = continuo.CarrierRetired, continuo.RetiredIdle, &gone, 2
	MustWrite(t, s, func(tx store.Tx) error { return updateWorker(t.Context(), tx, &w, 1) })
	same(t, "the worker blocked and retired after 0017", mustWorker(t, s, "wkr_2"), w, normWorker)
	// A worker of the old schema still refers to its swarm: one of an
	// unknown swarm is refused.
	bad := NewSwarmWorker("swm_unknown", "", "x")
	if err := s.Write(t.Context(), func(tx store.Tx) error { return tx.WorkerCreate(t.Context(), bad) }); err == nil {
		t.Error("after 0017 a worker of an unknown swarm was accepted: the foreign key is gone")
	}
}
