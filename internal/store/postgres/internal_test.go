package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/pgtest"
	"github.com/jackc/pgx/v5/pgconn"
)

func openT(t *testing.T, url string) *DB {
	t.Helper()
	db, err := Open(t.Context(), url, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestSynchronousCommitForced: whatever the URL or the server default say,
// every connection commits synchronously, because an acknowledgement
// promises durability.
func TestSynchronousCommitForced(t *testing.T) {
	url := pgtest.Schema(t) + "&synchronous_commit=off"
	db := openT(t, url)
	var got string
	if err := db.pool.QueryRow(t.Context(), "SHOW synchronous_commit").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "on" {
		t.Errorf("synchronous_commit = %q on a pool connection, want on", got)
	}
}

// TestConcurrentMigration: replicas that start at once on an empty
// database migrate it once, under the advisory lock.
func TestConcurrentMigration(t *testing.T) {
	url := pgtest.Schema(t)
	const n = 4
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			db, err := Open(t.Context(), url, nil)
			if err == nil {
				db.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
		}
	}
	db := openT(t, url)
	var rows int
	if err := db.pool.QueryRow(t.Context(), "SELECT count(*) FROM schema_migrations").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != store.SchemaVersion {
		t.Errorf("schema_migrations has %d rows, want %d", rows, store.SchemaVersion)
	}
}

// TestNotifyAcrossProcesses: a notification committed through one store
// reaches the listeners of another store on the same database — two
// replicas.
func TestNotifyAcrossProcesses(t *testing.T) {
	url := pgtest.Schema(t)
	a, b := openT(t, url), openT(t, url)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	c, err := b.Listen(ctx, "wake")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Write(ctx, func(tx store.Tx) error { return tx.Notify(ctx, "wake", "from a") }); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-c:
		if got != "from a" {
			t.Errorf("payload %q", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the other store's listener heard nothing")
	}
	// Another schema on the same database hears nothing of it.
	other := openT(t, pgtest.Schema(t))
	oc, err := other.Listen(ctx, "wake")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Write(ctx, func(tx store.Tx) error { return tx.Notify(ctx, "wake", "again") }); err != nil {
		t.Fatal(err)
	}
	<-c
	select {
	case got := <-oc:
		t.Errorf("a store on another schema heard %q", got)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestCommitError: a COMMIT the server refused, or that was never sent,
// kept nothing; one that broke in flight has an unknown outcome.
func TestCommitError(t *testing.T) {
	refused := &pgconn.PgError{Code: codeSerialization}
	if err := commitError(refused); errors.Is(err, store.ErrAmbiguous) || !retryable(err) {
		t.Errorf("serialization failure at commit: %v (ambiguous %v, retryable %v)", err, errors.Is(err, store.ErrAmbiguous), retryable(err))
	}
	broken := &net.OpError{Op: "read", Net: "tcp", Err: io.ErrUnexpectedEOF}
	if err := commitError(broken); !errors.Is(err, store.ErrAmbiguous) || retryable(err) {
		t.Errorf("connection broken during commit: %v, want ErrAmbiguous and no retry", err)
	}
}
