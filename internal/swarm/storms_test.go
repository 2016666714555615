package swarm_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/metrics"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/swarm"
)

// No storms (CONTRACT.md §8): a rollover leaves room to work, and a
// replacement that does not come is tried a bounded number of times.

func smallBudget(budget, reserve int64, threshold float64) *continuo.SwarmPolicy {
	p := continuo.DefaultSwarmPolicy()
	p.Compaction = continuo.Compaction{BudgetTokens: budget, Threshold: threshold, ReserveTokens: reserve}
	return &p
}

// TestCapsuleQuarter: a capsule fits in a quarter of the swarm's budget
// (budget_tokens bytes at 4 bytes a token): the summaries of the oldest
// tasks are left out to fit, never the checkpoint. A checkpoint too large
// for it blocks the worker when the planner tries (compact_blocked,
// capsule_too_large; nothing started), refuses the owner's prepare, and a
// smaller checkpoint lets the planner roll the worker over.
func TestCapsuleQuarter(t *testing.T) { stores.Each(t, testCapsuleQuarter) }

func testCapsuleQuarter(t *testing.T) {
	f, rt, _ := processFixture(t)
	ctx := t.Context()
	inv := f.create(4, smallBudget(4000, 0, 0.9))
	x := f.checkpointed(inv, "x")
	f.settled(inv, x, 10, func(i int) string { return fmt.Sprintf("result %d: ", i) + strings.Repeat("r", 600) })
	p := f.prepare(inv, x)
	var c swarm.Capsule
	if err := json.Unmarshal([]byte(p.Continuation.Capsule), &c); err != nil {
		t.Fatal(err)
	}
	if n := len(p.Continuation.Capsule); n > 4000 || c.TasksLeftOut == 0 || len(c.RecentTasks) == 0 || !strings.Contains(string(c.Checkpoint), "x at work") {
		t.Fatalf("a capsule of %d bytes (bound 4000), %d tasks, %d left out, checkpoint %s", n, len(c.RecentTasks), c.TasksLeftOut, c.Checkpoint)
	}
	if _, _, err := f.svc.Revoke(ctx, f.owner, ownerCar, inv.Swarm.ID, p.Continuation.ID); err != nil {
		t.Fatal(err)
	}

	// A checkpoint of 1,200 bytes, in a budget of 1,000 tokens.
	tight := f.create(4, smallBudget(1000, 0, 0.5))
	y := f.checkpointed(tight, "y")
	big := fmt.Sprintf(`{"summary":%q}`, strings.Repeat("s", 1200))
	if _, err := f.svc.Checkpoint(ctx, y.c, y.car, y.ref, json.RawMessage(big)); err != nil {
		t.Fatal(err)
	}
	f.compacting(y)
	if err := swarm.PlanPass(ctx, f.svc); err != nil {
		t.Fatal(err)
	}
	if got, why := f.blocked(tight, y); got != continuo.ContinuityCompactBlocked || why != continuo.BlockedCapsuleTooLarge || len(rt.starts) != 0 {
		t.Fatalf("a capsule that cannot fit: the worker is %s (%s), %d carriers started", got, why, len(rt.starts))
	}
	if d := f.next(y); d.State != swarm.NextCompactRequired {
		t.Fatalf("the blocked worker's next: %+v", d)
	}
	_, err := f.svc.Prepare(ctx, f.owner, ownerCar, tight.Swarm.ID, y.ref.WorkerID, "try", 0)
	if e := wantCode(t, err, continuo.CodeInvalidState, "the owner's prepare"); e.Details["reason"] != "capsule_too_large" {
		t.Fatalf("details %v", e.Details)
	}
	if _, err := f.svc.Checkpoint(ctx, y.c, y.car, y.ref, json.RawMessage(`{"summary":"y, shorter"}`)); err != nil {
		t.Fatal(err)
	}
	if err := swarm.PlanPass(ctx, f.svc); err != nil {
		t.Fatal(err)
	}
	if cn := f.openContinuation(y.ref.WorkerID); cn == nil || len(rt.starts) != 1 || len(cn.Capsule) > 1000 {
		t.Fatalf("after a smaller checkpoint: %+v, %d starts", cn, len(rt.starts))
	}
}

// TestNewEpochRoom: a new epoch is never compact_required by its capsule
// alone — even when the capsule and the reserve reach the threshold — but
// once a task is delivered in it, it is.
func TestNewEpochRoom(t *testing.T) { stores.Each(t, testNewEpochRoom) }

func testNewEpochRoom(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	// Threshold 500 tokens; reserve 400; the capsule is ~200 tokens.
	inv := f.create(4, smallBudget(1000, 400, 0.5))
	x := f.checkpointed(inv, "x")
	f.settled(inv, x, 4, func(i int) string { return fmt.Sprint("result ", i, " ", strings.Repeat("z", 10)) })
	p := f.prepare(inv, x)
	car := f.carrier()
	b, err := f.svc.Redeem(ctx, x.c, car, inv.Swarm.ID, p.Ticket)
	if err != nil {
		t.Fatal(err)
	}
	y := &w{c: x.c, car: car, ref: swarm.WorkerRef{WorkerID: b.Worker.ID, Epoch: b.Worker.Epoch}}
	pr, err := f.svc.ContextStatus(ctx, y.c, y.car, y.ref)
	if err != nil || pr.Ratio < pr.Threshold || pr.CompactRequired {
		t.Fatalf("the new epoch by its capsule alone: %+v %v; want over the threshold and not compact_required", pr, err)
	}
	if got := f.continuity(inv, y); got != continuo.ContinuitySteady {
		t.Fatalf("the new epoch is %s", got)
	}
	f.dispatch(inv.Swarm.ID, "after", y.ref.WorkerID)
	if d := f.next(y); d.State != swarm.NextTask {
		t.Fatalf("the new epoch's first next: %+v", d)
	}
	if got := f.continuity(inv, y); got != continuo.ContinuityCompactRequired {
		t.Fatalf("with a task delivered in it the epoch is %s", got)
	}
}

// TestNotRedeemed: a replacement carrier that starts and never redeems is
// tried again when its ticket expires, after a backoff, five times in
// all — carriers started = rollovers + retries, one each — and then the
// worker is compact_blocked (not_redeemed): the planner starts nothing
// more, whatever time passes.
func TestNotRedeemed(t *testing.T) { stores.Each(t, testNotRedeemed) }

func testNotRedeemed(t *testing.T) {
	f, rt, mint := processFixture(t)
	ctx := t.Context()
	policy := continuo.DefaultSwarmPolicy()
	policy.WorkerIdleTTLSecs = int(continuo.MaxWorkerIdleTTL / time.Second) // silent as it waits, and not retired for it
	inv := f.create(4, &policy)
	x := f.checkpointed(inv, "x")
	f.compacting(x)
	planned := func() {
		t.Helper()
		if err := f.svc.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		if err := swarm.PlanPass(ctx, f.svc); err != nil {
			t.Fatal(err)
		}
	}
	var tickets []string
	for i := range 5 {
		planned()
		planned()
		if len(rt.starts) != i+1 {
			t.Fatalf("try %d: %d carriers started", i+1, len(rt.starts))
		}
		cn := f.openContinuation(x.ref.WorkerID)
		if cn == nil || cn.CarrierOp != continuo.OpSucceeded || !cn.ExpiresAt.Before(f.clock.now().Add(3*time.Minute)) {
			t.Fatalf("try %d: %+v", i+1, cn)
		}
		tickets = append(tickets, rt.env(i, "CONTINUO_CONTINUATION_TICKET"))
		f.clock.add(cn.ExpiresAt.Sub(f.clock.now()) + time.Second) // it never redeems
		if i < 4 {
			planned() // expired, and within its backoff
			if len(rt.starts) != i+1 || f.openContinuation(x.ref.WorkerID) != nil {
				t.Fatalf("try %d: started again within the backoff", i+1)
			}
			f.clock.add(swarm.CarrierBackoff(i + 1))
		}
	}
	planned()
	if got, why := f.blocked(inv, x); got != continuo.ContinuityCompactBlocked || why != continuo.BlockedNotRedeemed {
		t.Fatalf("after five tries not redeemed the worker is %s (%s)", got, why)
	}
	f.clock.add(time.Hour)
	planned()
	if len(rt.starts) != 5 || len(mint.revoked) != 5 {
		t.Fatalf("%d carriers started, %d tokens revoked; want 5 of each", len(rt.starts), len(mint.revoked))
	}
	// A late carrier with one of the expired tickets binds nothing.
	_, err := f.svc.Redeem(ctx, x.c, f.carrier(), inv.Swarm.ID, tickets[0])
	wantCode(t, err, continuo.CodeTicketInvalid, "a late carrier")
	// The owner can still continue it by hand: a ticket it hands over.
	p := f.prepare(inv, x)
	if b, err := f.svc.Redeem(ctx, x.c, f.carrier(), inv.Swarm.ID, p.Ticket); err != nil || b.Worker.Epoch != x.ref.Epoch+1 ||
		b.Worker.ContinuityState != continuo.ContinuitySteady {
		t.Fatalf("the owner's continuation of the blocked worker: %+v %v", b, err)
	}
}

// TestSwarmMetrics: /metrics shows compact_blocked workers (a gauge read
// from the database), the planner's rollovers, retries and carrier starts,
// and the workers retired by reason.
func TestSwarmMetrics(t *testing.T) { stores.Each(t, testSwarmMetrics) }

func testSwarmMetrics(t *testing.T) {
	reg := metrics.NewRegistry()
	rt, mint := &fakeRuntime{}, &fakeMinter{}
	f := newFixture(t, func(o *swarm.Options) { o.Runtime, o.Minter, o.Metrics = rt, mint, reg })
	ctx := t.Context()
	inv := f.create(4, smallBudget(1000, 0, 0.5))
	x, y := f.checkpointed(inv, "x"), f.checkpointed(inv, "y")
	if _, err := f.svc.Checkpoint(ctx, y.c, y.car, y.ref, json.RawMessage(fmt.Sprintf(`{"summary":%q}`, strings.Repeat("s", 1200)))); err != nil {
		t.Fatal(err)
	}
	f.compacting(x)
	f.compacting(y)
	if err := swarm.PlanPass(ctx, f.svc); err != nil {
		t.Fatal(err)
	}
	gone := f.join(inv, "gone")
	if _, err := f.svc.Leave(ctx, gone.c, gone.car, gone.ref); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	reg.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		"continuo_swarm_workers_compact_blocked 1",
		`continuo_swarm_compact_blocked_total{reason="capsule_too_large"} 1`,
		"continuo_swarm_rollovers_total 1",
		"continuo_swarm_carrier_retries_total 0",
		`continuo_swarm_carrier_starts_total{outcome="started"} 1`,
		`continuo_swarm_workers_retired_total{reason="left"} 1`,
	} {
		if !strings.Contains(rec.Body.String(), want+"\n") {
			t.Errorf("/metrics lacks %q:\n%s", want, rec.Body.String())
		}
	}
}
