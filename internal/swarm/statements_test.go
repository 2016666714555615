package swarm_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store/pgtest"
	"github.com/continuo-dev/continuo/internal/store/postgres"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/store/storetest"
	"github.com/continuo-dev/continuo/internal/swarm"
	"github.com/jackc/pgx/v5"
)

// counter is a pgx tracer that counts the statements the store sends
// (each its own round trip: the store sends no batches), and the
// transactions among them.
type counter struct {
	mu    sync.Mutex
	stmts []string
}

func (c *counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.mu.Lock()
	c.stmts = append(c.stmts, strings.Join(strings.Fields(d.SQL), " "))
	c.mu.Unlock()
	return ctx
}

func (c *counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// take returns the statements since the last take.
func (c *counter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stmts
	c.stmts = nil
	return s
}

// commits counts the COMMITs among stmts.
func commits(stmts []string) int {
	n := 0
	for _, s := range stmts {
		if strings.EqualFold(s, "commit") {
			n++
		}
	}
	return n
}

// TestStatementsPerTask counts, on PostgreSQL, the statements (= round
// trips) and commits of the short loop's calls: a batch dispatch of 100,
// next with ack, submit with next (ack), and a collect of the batch. It
// logs them (docs/PERFORMANCE.md quotes them) and pins what the issue
// asks: claim with ack, and submit, each commit once (the next half of a
// submit with next is its own claim: one more); a batch dispatch and a
// collect commit once for all their tasks, and a batch dispatch sends one
// notification, not one per task.
func TestStatementsPerTask(t *testing.T) {
	pgtest.BaseURL(t)
	ctx := t.Context()
	ctr := &counter{}
	s, err := postgres.Open(ctx, stores.PostgresURL(t), &postgres.Options{Tracer: ctr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	g := storetest.Group(t, s, "team")
	p := storetest.Principal(t, s, g.ID, "owner")
	wp := storetest.Principal(t, s, g.ID, "worker")
	svc := swarm.New(s, swarm.Options{Server: "test-server"})
	t.Cleanup(svc.Close)
	owner := &continuo.Caller{PrincipalID: p.ID, Principal: p.Name, GroupID: g.ID, Scopes: []continuo.Scope{continuo.ScopeSwarmOwn}}
	wc := &continuo.Caller{PrincipalID: wp.ID, Principal: wp.Name, GroupID: g.ID, Scopes: []continuo.Scope{continuo.ScopeSwarmWork}}
	inv, err := svc.Create(ctx, owner, ownerCar, swarm.CreateInput{WorkerLimit: 4})
	if err != nil {
		t.Fatal(err)
	}
	car := swarm.Carrier{Source: continuo.CarrierFromKey, Key: fmt.Sprintf("carrier-key-%022d", 1)}
	j, err := svc.Join(ctx, wc, car, swarm.JoinInput{SwarmID: inv.Swarm.ID, Invite: inv.Invite, Label: "one"})
	if err != nil {
		t.Fatal(err)
	}
	ref := swarm.WorkerRef{WorkerID: j.Worker.ID, Epoch: j.Worker.Epoch}
	const batch = 100
	items := make([]swarm.DispatchItem, batch)
	for i := range items {
		items[i] = swarm.DispatchItem{TaskKey: fmt.Sprint("k", i), Prompt: fmt.Sprint("do ", i)}
	}
	ctr.take()
	if _, err := svc.DispatchBatch(ctx, owner, ownerCar, inv.Swarm.ID, items); err != nil {
		t.Fatal(err)
	}
	dispatch := ctr.take()
	d, err := svc.Deliver(ctx, wc, car, ref, swarm.NextOptions{Ack: true})
	if err != nil || d.Task == nil {
		t.Fatalf("next with ack: %+v, %v", d, err)
	}
	next := ctr.take()
	sub, err := svc.SubmitNext(ctx, wc, car, ref, d.Task.ID, "done", swarm.NextOptions{Ack: true})
	if err != nil || sub.Next == nil || sub.Next.Task == nil {
		t.Fatalf("submit with next: %+v, %v", sub, err)
	}
	submitNext := ctr.take()
	if _, err := svc.Submit(ctx, wc, car, ref, sub.Next.Task.ID, "done"); err != nil {
		t.Fatal(err)
	}
	submit := ctr.take()
	col, err := svc.CollectReady(ctx, owner, ownerCar, swarm.CollectInput{SwarmID: inv.Swarm.ID, Wait: time.Second, Limit: batch})
	if err != nil || len(col.Tasks) != 2 {
		t.Fatalf("collect: %+v, %v", col, err)
	}
	collect := ctr.take()
	// Per dispatched task: its key looked up and its row inserted; one
	// notification for the whole batch, not one per task.
	if len(dispatch) > 2*batch+10 {
		t.Errorf("dispatch of %d tasks: %d statements, want at most %d (2 per task, one notification per batch)", batch, len(dispatch), 2*batch+10)
	}
	// The worker's row is written once per submit with next: busy with
	// its next task, not idle and then busy again.
	workerWrites := 0
	for _, st := range submitNext {
		if strings.HasPrefix(strings.TrimSpace(st), "UPDATE workers") {
			workerWrites++
		}
	}
	if workerWrites != 1 {
		t.Errorf("submit with next: %d updates of the worker's row, want 1", workerWrites)
	}
	for _, c := range []struct {
		what  string
		stmts []string
		max   int // commits
	}{
		{fmt.Sprintf("dispatch of %d tasks (tasks[])", batch), dispatch, 1},
		{"next with ack (look, then claim)", next, 1},
		{"submit with next (ack): the submit, then next's claim in a savepoint, one transaction", submitNext, 1},
		{"submit alone", submit, 1},
		{"collect of 2 ready results (waiting collect)", collect, 1},
	} {
		t.Logf("%s: %d statements (round trips), %d commits", c.what, len(c.stmts), commits(c.stmts))
		if testing.Verbose() {
			for _, s := range c.stmts {
				t.Logf("    %.110s", s)
			}
		}
		if n := commits(c.stmts); n < 1 || n > c.max {
			t.Errorf("%s: %d commits, want 1..%d", c.what, n, c.max)
		}
	}
}
