package postgres_test

import (
	"errors"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/pgtest"
	"github.com/continuo-dev/continuo/internal/store/postgres"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/store/storetest"
	"github.com/jackc/pgx/v5"
)

func open(t testing.TB, url string, opts *postgres.Options) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(t.Context(), url, opts)
	if err != nil {
		t.Fatalf("postgres.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

func TestConformance(t *testing.T) {
	pgtest.BaseURL(t)
	// Each test a copy of one migrated database (stores.PostgresURL):
	// migrating per test was most of the suite's time under -race.
	storetest.Run(t, func(t *testing.T) store.Store { return open(t, stores.PostgresURL(t), nil) })
}

// TestExisting: with Existing, an empty database is ErrNoDatabase and is
// left empty; once migrated, it opens.
func TestExisting(t *testing.T) {
	pgtest.BaseURL(t)
	url := pgtest.Schema(t)
	if _, err := postgres.Open(t.Context(), url, &postgres.Options{Existing: true}); !errors.Is(err, store.ErrNoDatabase) {
		t.Fatalf("Open(empty, Existing) = %v, want ErrNoDatabase", err)
	}
	// It stays refused: the first look created nothing that counts as a schema.
	if _, err := postgres.Open(t.Context(), url, &postgres.Options{Existing: true}); !errors.Is(err, store.ErrNoDatabase) {
		t.Fatalf("second Open(empty, Existing) = %v, want ErrNoDatabase", err)
	}
	open(t, url, nil).Close()
	open(t, url, &postgres.Options{Existing: true})
}

// Migration 0004 only adds the OAuth and sign-in tables: a version 3
// database is refused until `migrate up`, then keeps every row, and its
// principals can authorize clients.
func TestMigration0004FromV3(t *testing.T) {
	pgtest.BaseURL(t)
	ctx := t.Context()
	url := pgtest.Schema(t)
	ms, err := postgres.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE schema_migrations (version bigint PRIMARY KEY, name text NOT NULL)",
		ms[0].SQL, ms[1].SQL, ms[2].SQL,
		"INSERT INTO schema_migrations (version, name) VALUES (1, '" + ms[0].Name + "'), (2, '" + ms[1].Name + "'), (3, '" + ms[2].Name + "')",
		"INSERT INTO groups (id, name, created_at) VALUES ('grp_1', 'g', 0)",
		"INSERT INTO principals (id, name, group_id, created_at) VALUES ('prn_1', 'ann', 'grp_1', 0)",
		"INSERT INTO tokens (id, principal_id, hash, scopes, created_at) VALUES ('tok_1', 'prn_1', 'h', 'admin', 0)",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	conn.Close(ctx)
	if _, err := postgres.Open(ctx, url, nil); !errors.Is(err, store.ErrSchema) {
		t.Fatalf("Open of a version 3 database without migrate up = %v, want ErrSchema", err)
	}
	db := open(t, url, &postgres.Options{Migrate: store.MigrateUp})
	storetest.MustRead(t, db, func(tx store.Tx) error {
		k, err := tx.TokenGetByHash(ctx, "h")
		if err != nil || k.ID != "tok_1" || k.PrincipalID != "prn_1" {
			t.Errorf("token after 0004: %+v, %v", k, err)
		}
		return nil
	})
	c := storetest.OAuthClient(t, db, "cli")
	storetest.OAuthGrant(t, db, c.ID, "prn_1")
	db.Close()
	open(t, url, nil) // at the binary's version now: opens without migrate up
}

// Migration 0005 only adds the goal tables: a version 4 database is
// refused until `migrate up`, then keeps every row, and its sessions take
// goals and their plans.
func TestMigration0005FromV4(t *testing.T) {
	pgtest.BaseURL(t)
	ctx := t.Context()
	url := pgtest.Schema(t)
	ms, err := postgres.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE schema_migrations (version bigint PRIMARY KEY, name text NOT NULL)",
		ms[0].SQL, ms[1].SQL, ms[2].SQL, ms[3].SQL,
		"INSERT INTO schema_migrations (version, name) VALUES (1, '" + ms[0].Name + "'), (2, '" + ms[1].Name + "'), (3, '" +
			ms[2].Name + "'), (4, '" + ms[3].Name + "')",
		"INSERT INTO groups (id, name, created_at) VALUES ('grp_1', 'g', 0)",
		"INSERT INTO projects (id, name, writable, created_at) VALUES ('prj_1', 'p', 1, 0)",
		`INSERT INTO sessions (id, group_id, ref, project_id, title, lifecycle, mode, root_instruction, latest_instruction,
			instructions, revision, message_seq, created_at, updated_at) VALUES ('ses_1', 'grp_1', 1, 'prj_1', 't', 'active', 'checkout', 'i', 'i', 1, 1, 0, 0, 0)`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	conn.Close(ctx)
	if _, err := postgres.Open(ctx, url, nil); !errors.Is(err, store.ErrSchema) {
		t.Fatalf("Open of a version 4 database without migrate up = %v, want ErrSchema", err)
	}
	db := open(t, url, &postgres.Options{Migrate: store.MigrateUp})
	g := storetest.Goal(t, db, "ses_1", "ship")
	storetest.MustWrite(t, db, func(tx store.Tx) error {
		return tx.GoalPlanAdd(ctx, store.PlanSnapshot{GoalID: g.ID, Revision: 1, ReplacedAt: storetest.Base})
	})
	storetest.MustRead(t, db, func(tx store.Tx) error {
		s, err := tx.SessionGet(ctx, "ses_1")
		if err != nil || s.ProjectID != "prj_1" {
			t.Errorf("session after 0005: %+v, %v", s, err)
		}
		gs, err := tx.GoalList(ctx, store.GoalListParams{GroupID: "grp_1", ProjectID: "prj_1"})
		if err != nil || len(gs) != 1 || gs[0].ID != g.ID {
			t.Errorf("goals after 0005: %+v, %v", gs, err)
		}
		return nil
	})
	db.Close()
	open(t, url, nil) // at the binary's version now: opens without migrate up
}

// Migration 0006 only adds the run tables: a version 5 database is
// refused until `migrate up`, then keeps every row, and its projects and
// sessions take runs, their logs and evidence.
func TestMigration0006FromV5(t *testing.T) {
	pgtest.BaseURL(t)
	ctx := t.Context()
	url := pgtest.Schema(t)
	ms, err := postgres.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE schema_migrations (version bigint PRIMARY KEY, name text NOT NULL)",
		ms[0].SQL, ms[1].SQL, ms[2].SQL, ms[3].SQL, ms[4].SQL,
		"INSERT INTO schema_migrations (version, name) VALUES (1, '" + ms[0].Name + "'), (2, '" + ms[1].Name + "'), (3, '" +
			ms[2].Name + "'), (4, '" + ms[3].Name + "'), (5, '" + ms[4].Name + "')",
		"INSERT INTO groups (id, name, created_at) VALUES ('grp_1', 'g', 0)",
		"INSERT INTO projects (id, name, writable, created_at) VALUES ('prj_1', 'p', 1, 0)",
		`INSERT INTO sessions (id, group_id, ref, project_id, title, lifecycle, mode, root_instruction, latest_instruction,
			instructions, revision, message_seq, created_at, updated_at) VALUES ('ses_1', 'grp_1', 1, 'prj_1', 't', 'active', 'checkout', 'i', 'i', 1, 1, 0, 0, 0)`,
		`INSERT INTO goals (id, session_id, title, objective, revision, lifecycle, created_at, updated_at)
			VALUES ('goal_1', 'ses_1', 'ship', 'o', 1, 'active', 0, 0)`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	conn.Close(ctx)
	if _, err := postgres.Open(ctx, url, nil); !errors.Is(err, store.ErrSchema) {
		t.Fatalf("Open of a version 5 database without migrate up = %v, want ErrSchema", err)
	}
	db := open(t, url, &postgres.Options{Migrate: store.MigrateUp})
	r := storetest.CreateRun(t, db, "grp_1", "prj_1", "/src", "test", func(r *continuo.Run) { r.SessionID = "ses_1" })
	storetest.MustWrite(t, db, func(tx store.Tx) error {
		if err := tx.RunAppend(ctx, store.RunAppend{RunID: r.ID, Events: []continuo.RunEvent{
			{Seq: 1, Kind: continuo.EventOutput, Text: "ok", At: storetest.Base}}, OutputBytes: 2, KeptBytes: 2, HeadSeq: 1}); err != nil {
			return err
		}
		return tx.EvidenceAdd(ctx, continuo.Evidence{SessionID: "ses_1", Check: "test", RunID: r.ID, CreatedAt: storetest.Base})
	})
	storetest.MustRead(t, db, func(tx store.Tx) error {
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
	db.Close()
	open(t, url, nil) // at version 6 now: opens without migrate up
}
