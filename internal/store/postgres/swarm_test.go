package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/pgtest"
	"github.com/continuo-dev/continuo/internal/store/postgres"
	"github.com/continuo-dev/continuo/internal/store/storetest"
	"github.com/jackc/pgx/v5"
)

// TestTaskClaimSkipsLocked: a claim never waits for another claim's open
// transaction. It passes over the task that one locked and takes the
// next at once; without SKIP LOCKED it would wait on the row until the
// first committed (here: never, so it would time out).
func TestTaskClaimSkipsLocked(t *testing.T) {
	pgtest.BaseURL(t)
	ctx := t.Context()
	db := open(t, pgtest.Schema(t), nil)
	f := storetest.Setup(t, db, "alpha")
	sw := storetest.Swarm(t, db, f.Group.ID, f.Principal.ID)
	w1 := storetest.SwarmWorker(t, db, sw.ID, f.Principal.ID, "one")
	w2 := storetest.SwarmWorker(t, db, sw.ID, f.Principal.ID, "two")
	k1, k2 := storetest.SwarmTask(t, db, sw.ID, "k1"), storetest.SwarmTask(t, db, sw.ID, "k2")

	locked, release, first := make(chan string, 1), make(chan struct{}), make(chan error, 1)
	go func() {
		first <- db.Write(ctx, func(tx store.Tx) error {
			k, err := tx.TaskClaim(ctx, sw.ID, w1.ID, storetest.Base, false)
			if err != nil {
				return err
			}
			select {
			case locked <- k.ID:
			default:
			}
			<-release
			return nil
		})
	}()
	var lockedID string
	select {
	case lockedID = <-locked:
	case err := <-first:
		t.Fatalf("the first claim ended before it held its task: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the first claim never took a task")
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Second)
	var second *continuo.Task
	err := db.Write(short, func(tx store.Tx) error {
		k, err := tx.TaskClaim(short, sw.ID, w2.ID, storetest.Base, false)
		second = k
		return err
	})
	cancel()
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("the first claim: %v", err)
	}
	if err != nil {
		t.Fatalf("a claim while another claim's transaction was open: %v", err)
	}
	if lockedID != k1.ID || second.ID != k2.ID || second.WorkerID != w2.ID {
		t.Errorf("the first claim took %s, the second %s (worker %s); want %s, then %s for %s", lockedID, second.ID, second.WorkerID,
			k1.ID, k2.ID, w2.ID)
	}
}

// Migration 0007 only adds the swarm tables: a version 6 database is
// refused until `migrate up`, then keeps every row, and its groups take
// swarms whose workers claim tasks.
func TestMigration0007FromV6(t *testing.T) {
	storetest.CheckMigration0007(t, upgradedFrom(t, 6, storetest.Migration0007Seed))
}

// upgradedFrom builds a database at schema version n holding seed, checks
// that Open refuses it without migrate up, and returns it migrated up,
// after checking that it then opens without migrate up.
func upgradedFrom(t *testing.T, n int, seed []string) store.Store {
	t.Helper()
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
	for _, q := range append(schemaAt(ms, n), seed...) {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	conn.Close(ctx)
	if _, err := postgres.Open(ctx, url, nil); !errors.Is(err, store.ErrSchema) {
		t.Fatalf("Open of a version %d database without migrate up = %v, want ErrSchema", n, err)
	}
	db := open(t, url, &postgres.Options{Migrate: store.MigrateUp})
	open(t, url, nil) // at the binary's version now: opens without migrate up
	return db
}

// schemaAt returns the statements that make an empty schema one at
// schema version n, as a binary of that version left it.
func schemaAt(ms []store.Migration, n int) []string {
	qs := []string{"CREATE TABLE schema_migrations (version bigint PRIMARY KEY, name text NOT NULL)"}
	for _, m := range ms[:n] {
		qs = append(qs, m.SQL, fmt.Sprintf("INSERT INTO schema_migrations (version, name) VALUES (%d, '%s')", m.Version, m.Name))
	}
	return qs
}

// Migration 0008 adds the continuity tables and indexes: a version 7
// database is refused until `migrate up`, then keeps its swarm, whose
// worker's tasks list by worker and whose worker may now have a
// continuation and a ledger.
func TestMigration0008FromV7(t *testing.T) {
	storetest.CheckMigration0008(t, upgradedFrom(t, 7, storetest.Migration0008Seed))
}

// Migration 0009 adds who approved a continuation and a worker's counted
// tokens, computed from the ledger of its current epoch.
func TestMigration0009FromV8(t *testing.T) {
	storetest.CheckMigration0009(t, upgradedFrom(t, 8, storetest.Migration0009Seed))
}

// Migration 0017 adds compact_blocked, retirement and the idle TTL to
// workers; SQLite rebuilds the table, whose rows other tables reference.
func TestMigration0017FromV16(t *testing.T) {
	storetest.CheckMigration0017(t, upgradedFrom(t, 16, storetest.Migration0017Seed))
}
