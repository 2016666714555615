package storetest

import (
	"testing"

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
