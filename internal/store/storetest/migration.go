package storetest

import (
	"slices"
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

// Migration0004Seed is what a version 3 database holds before migration
// 0004, in either engine's SQL: a principal and its token.
var Migration0004Seed = []string{
	"INSERT INTO groups (id, name, created_at) VALUES ('grp_1', 'g', 0)",
	"INSERT INTO principals (id, name, group_id, created_at) VALUES ('prn_1', 'ann', 'grp_1', 0)",
	"INSERT INTO tokens (id, principal_id, hash, scopes, created_at) VALUES ('tok_1', 'prn_1', 'h', 'admin', 0)",
}

// CheckMigration0004 checks a database migrated from Migration0004Seed:
// migration 0004 only adds the OAuth and sign-in tables, so the token is
// kept and its principal can authorize clients.
func CheckMigration0004(t *testing.T, s store.Store) {
	t.Helper()
	MustRead(t, s, func(tx store.Tx) error {
		k, err := tx.TokenGetByHash(t.Context(), "h")
		if err != nil || k.ID != "tok_1" || k.PrincipalID != "prn_1" {
			t.Errorf("token after 0004: %+v, %v", k, err)
		}
		return nil
	})
	c := OAuthClient(t, s, "cli")
	OAuthGrant(t, s, c.ID, "prn_1")
}

// migrationSessionSeed is a project and a session in it, the rows the
// seeds of 0005 and 0006 start from.
var migrationSessionSeed = []string{
	"INSERT INTO groups (id, name, created_at) VALUES ('grp_1', 'g', 0)",
	"INSERT INTO projects (id, name, writable, created_at) VALUES ('prj_1', 'p', 1, 0)",
	`INSERT INTO sessions (id, group_id, ref, project_id, title, lifecycle, mode, root_instruction, latest_instruction,
		instructions, revision, message_seq, created_at, updated_at) VALUES ('ses_1', 'grp_1', 1, 'prj_1', 't', 'active', 'checkout', 'i', 'i', 1, 1, 0, 0, 0)`,
}

// Migration0005Seed is what a version 4 database holds before migration
// 0005, in either engine's SQL: a session in a project.
var Migration0005Seed = migrationSessionSeed

// CheckMigration0005 checks a database migrated from Migration0005Seed:
// migration 0005 only adds the goal tables, so the session is kept and
// takes goals and their plans.
func CheckMigration0005(t *testing.T, s store.Store) {
	t.Helper()
	ctx := t.Context()
	g := Goal(t, s, "ses_1", "ship")
	MustWrite(t, s, func(tx store.Tx) error {
		return tx.GoalPlanAdd(ctx, store.PlanSnapshot{GoalID: g.ID, Revision: 1, ReplacedAt: Base})
	})
	MustRead(t, s, func(tx store.Tx) error {
		ses, err := tx.SessionGet(ctx, "ses_1")
		if err != nil || ses.ProjectID != "prj_1" {
			t.Errorf("session after 0005: %+v, %v", ses, err)
		}
		gs, err := tx.GoalList(ctx, store.GoalListParams{GroupID: "grp_1", ProjectID: "prj_1"})
		if err != nil || len(gs) != 1 || gs[0].ID != g.ID {
			t.Errorf("goals after 0005: %+v, %v", gs, err)
		}
		return nil
	})
}

// Migration0006Seed is what a version 5 database holds before migration
// 0006, in either engine's SQL: a session in a project, with a goal.
var Migration0006Seed = append(slices.Clone(migrationSessionSeed),
	`INSERT INTO goals (id, session_id, title, objective, revision, lifecycle, created_at, updated_at)
		VALUES ('goal_1', 'ses_1', 'ship', 'o', 1, 'active', 0, 0)`)

// CheckMigration0006 checks a database migrated from Migration0006Seed:
// migration 0006 only adds the run tables, so the goal is kept and the
// project and session take runs, their logs and evidence.
func CheckMigration0006(t *testing.T, s store.Store) {
	t.Helper()
	ctx := t.Context()
	r := CreateRun(t, s, "grp_1", "prj_1", "/src", "test", func(r *continuo.Run) { r.SessionID = "ses_1" })
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.RunAppend(ctx, store.RunAppend{RunID: r.ID, Events: []continuo.RunEvent{
			{Seq: 1, Kind: continuo.EventOutput, Text: "ok", At: Base}}, OutputBytes: 2, KeptBytes: 2, HeadSeq: 1}); err != nil {
			return err
		}
		return tx.EvidenceAdd(ctx, continuo.Evidence{SessionID: "ses_1", Check: "test", RunID: r.ID, CreatedAt: Base})
	})
	MustRead(t, s, func(tx store.Tx) error {
		g, err := tx.GoalGet(ctx, "goal_1")
		if err != nil || g.SessionID != "ses_1" {
			t.Errorf("goal after 0006: %+v, %v", g, err)
		}
		ev, err := tx.EvidenceLatest(ctx, "ses_1", 1)
		if err != nil || len(ev) != 1 || ev[0].Run.ID != r.ID || ev[0].Run.EventSeq != 1 {
			t.Errorf("evidence after 0006: %+v, %v", ev, err)
		}
		es, err := tx.RunEvents(ctx, store.RunEventsParams{RunID: r.ID, MaxBytes: 100})
		if err != nil || len(es) != 1 || es[0].Text != "ok" {
			t.Errorf("run events after 0006: %+v, %v", es, err)
		}
		return nil
	})
}

// Migration0007Seed is what a version 6 database holds before migration
// 0007, in either engine's SQL: a queued run in a project.
var Migration0007Seed = []string{
	"INSERT INTO groups (id, name, created_at) VALUES ('grp_1', 'g', 0)",
	"INSERT INTO projects (id, name, writable, created_at) VALUES ('prj_1', 'p', 1, 0)",
	`INSERT INTO runs (id, kind, state, group_id, project_id, dir, revision, created_at)
		VALUES ('run_1', 'validation', 'queued', 'grp_1', 'prj_1', '/src', 1, 0)`,
}

// CheckMigration0007 checks a database migrated from Migration0007Seed:
// migration 0007 only adds the swarm tables, so the run is kept and the
// group takes swarms whose workers claim tasks.
func CheckMigration0007(t *testing.T, s store.Store) {
	t.Helper()
	ctx := t.Context()
	sw := Swarm(t, s, "grp_1", "prn_1")
	w := SwarmWorker(t, s, sw.ID, "prn_1", "one")
	k := SwarmTask(t, s, sw.ID, "k")
	var claimed string
	MustWrite(t, s, func(tx store.Tx) error {
		got, err := tx.TaskClaim(ctx, sw.ID, w.ID, Base, false)
		if err == nil {
			claimed = got.ID
		}
		return err
	})
	if claimed != k.ID {
		t.Errorf("claimed %s, want %s", claimed, k.ID)
	}
	MustRead(t, s, func(tx store.Tx) error {
		if r, err := tx.RunGet(ctx, "run_1"); err != nil || r.Dir != "/src" {
			t.Errorf("run after 0007: %+v, %v", r, err)
		}
		return nil
	})
}

// Migration0008Seed is what a version 7 database holds before migration
// 0008, in either engine's SQL: a swarm whose worker holds a task.
var Migration0008Seed = []string{
	"INSERT INTO groups (id, name, created_at) VALUES ('grp_1', 'g', 0)",
	`INSERT INTO swarms (id, group_id, created_by, state, worker_limit, policy, revision, created_at, updated_at)
		VALUES ('swm_1', 'grp_1', 'prn_1', 'active', 8, '{}', 1, 0, 0)`,
	`INSERT INTO workers (id, swarm_id, principal_id, label, epoch, carrier_hash, carrier_source, carrier_state, state,
		continuity_state, join_hash, last_seen_at, revision, created_at, updated_at)
		VALUES ('wkr_1', 'swm_1', 'prn_1', 'one', 1, 'carrier-1', 'carrier_key', 'active', 'idle', 'steady', 'join-1', 0, 1, 0, 0)`,
	`INSERT INTO tasks (id, swarm_id, task_key, request_hash, prompt, worker_id, state, attempt, result_hash, revision,
		created_at, updated_at, ended_at) VALUES ('tsk_1', 'swm_1', 'k', 'r', 'do k', 'wkr_1', 'result_ready', 1, 'h', 2, 0, 0, 0)`,
}

// CheckMigration0008 checks a database migrated from Migration0008Seed:
// migration 0008 adds the continuity tables and an index of tasks, so the
// worker's tasks list by worker and the worker may now have a
// continuation and a ledger.
func CheckMigration0008(t *testing.T, s store.Store) {
	t.Helper()
	ctx := t.Context()
	w := &continuo.Worker{ID: "wkr_1", SwarmID: "swm_1", PrincipalID: "prn_1", Epoch: 1, CarrierHash: "carrier-1"}
	c := Continuation(t, s, w)
	MustWrite(t, s, func(tx store.Tx) error {
		_, err := tx.LedgerAdd(ctx, continuo.LedgerEntry{WorkerID: w.ID, Epoch: 1, Source: continuo.LedgerTaskPrompt, Ref: "tsk_1",
			Tokens: 10, At: Base})
		return err
	})
	MustRead(t, s, func(tx store.Tx) error {
		ks, err := tx.TaskList(ctx, store.TaskListParams{SwarmID: "swm_1", WorkerID: w.ID, Newest: true})
		if err != nil || len(ks) != 1 || ks[0].ID != "tsk_1" {
			t.Errorf("the worker's tasks after 0008: %v, %v", ks, err)
		}
		if got, err := tx.ContinuationOpen(ctx, w.ID); err != nil || got.ID != c.ID {
			t.Errorf("ContinuationOpen after 0008: %v, %v", got, err)
		}
		return nil
	})
}
