package swarm_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/swarm"
	"time"
)

// fakeRuntime records the carriers it was asked to start.
type fakeRuntime struct {
	mu     sync.Mutex
	starts [][]string
	fail   error
}

func (r *fakeRuntime) Start(_ context.Context, _ string, env []string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts = append(r.starts, env)
	if r.fail != nil {
		return "", r.fail
	}
	return "host 4242 1", nil
}

func (r *fakeRuntime) env(i int, name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, kv := range r.starts[i] {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// fakeMinter mints numbered tokens and records revocations.
type fakeMinter struct {
	mu      sync.Mutex
	n       int
	revoked []string
}

func (m *fakeMinter) Mint(_ context.Context, principalID string, ttl time.Duration) (string, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	return "cto_pat_carrier" + string(rune('a'+m.n)), "tok_" + string(rune('a'+m.n)), nil
}

func (m *fakeMinter) Revoke(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.revoked = append(m.revoked, id)
	return nil
}

// processFixture is a fixture whose service has the process runtime,
// with a fake runtime and minter that record what they were asked.
func processFixture(t *testing.T) (*fixture, *fakeRuntime, *fakeMinter) {
	rt, mint := &fakeRuntime{}, &fakeMinter{}
	return newFixture(t, func(o *swarm.Options) { o.Runtime, o.Minter = rt, mint }), rt, mint
}

// compacting makes x compact_required at a safe boundary.
func (f *fixture) compacting(x *w) {
	f.t.Helper()
	if _, err := f.svc.ReportContext(f.t.Context(), x.c, x.car, x.ref, swarm.ReportInput{Tokens: 2_000_000, Source: continuo.LedgerEstimate}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) openContinuation(workerID string) *continuo.Continuation {
	f.t.Helper()
	var cn *continuo.Continuation
	storeRead(f, func(tx store.Tx) (err error) {
		cn, err = tx.ContinuationOpen(f.t.Context(), workerID)
		if errors.Is(err, store.ErrNotFound) {
			cn, err = nil, nil
		}
		return err
	})
	return cn
}

// blocked is worker x's continuity state and blocked reason, as the owner
// sees them.
func (f *fixture) blocked(inv *swarm.Invited, x *w) (continuo.ContinuityState, continuo.BlockedReason) {
	f.t.Helper()
	st, err := f.svc.SwarmStatus(f.t.Context(), f.owner, ownerCar, inv.Swarm.ID)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, w := range st.Workers {
		if w.ID == x.ref.WorkerID {
			return w.ContinuityState, w.BlockedReason
		}
	}
	f.t.Fatalf("no worker %s", x.ref.WorkerID)
	return "", ""
}

// continuity is worker x's continuity state, as the owner sees it.
func (f *fixture) continuity(inv *swarm.Invited, x *w) continuo.ContinuityState {
	f.t.Helper()
	st, err := f.svc.SwarmStatus(f.t.Context(), f.owner, ownerCar, inv.Swarm.ID)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, w := range st.Workers {
		if w.ID == x.ref.WorkerID {
			return w.ContinuityState
		}
	}
	f.t.Fatalf("no worker %s", x.ref.WorkerID)
	return ""
}

func storeRead(f *fixture, fn func(tx store.Tx) error) {
	f.t.Helper()
	if err := f.store.Read(f.t.Context(), fn); err != nil {
		f.t.Fatal(err)
	}
}

// TestPlanner: a compact_required worker at a safe boundary gets a
// continuation and a started carrier — its ticket, swarm, worker and a
// minted token in the carrier's environment — once; the carrier that
// redeems it retires the old one, whose minted token is revoked; a failed
// start is tried again after a backoff, five times, then the worker is
// compact_blocked until a new checkpoint; a start in flight when its
// server died is unknown, never started again.
func TestPlanner(t *testing.T) { stores.Each(t, testPlanner) }

func testPlanner(t *testing.T) {
	f, rt, mint := processFixture(t)
	ctx := t.Context()
	inv := f.create(4, nil)
	if st, _ := f.svc.SwarmStatus(ctx, f.owner, ownerCar, inv.Swarm.ID); st.Runtime != swarm.RuntimeProcess {
		t.Fatalf("runtime %q", st.Runtime)
	}
	x := f.checkpointed(inv, "x")
	f.compacting(x)
	if err := f.svc.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	planned := func() {
		t.Helper()
		// The planner runs in the reaper's loop; a test drives it through
		// the exported pass.
		if err := swarm.PlanPass(ctx, f.svc); err != nil {
			t.Fatal(err)
		}
	}
	planned()
	planned() // nothing twice
	if len(rt.starts) != 1 {
		t.Fatalf("starts: %d", len(rt.starts))
	}
	cn := f.openContinuation(x.ref.WorkerID)
	if cn == nil || cn.CarrierOp != continuo.OpSucceeded || cn.CarrierProc != "host 4242 1" || cn.CarrierToken != "tok_b" ||
		cn.RequestedBy != "planner" {
		t.Fatalf("the planner's continuation: %+v", cn)
	}
	if rt.env(0, "CONTINUO_SWARM_ID") != inv.Swarm.ID || rt.env(0, "CONTINUO_WORKER_ID") != x.ref.WorkerID ||
		rt.env(0, "CONTINUO_TOKEN") != "cto_pat_carrierb" || !strings.HasPrefix(rt.env(0, "CONTINUO_CONTINUATION_TICKET"), "cto_cnt_") {
		t.Fatalf("the carrier's environment: %v", rt.starts[0])
	}
	// The started carrier redeems; the planner's next round finds nothing.
	carA := f.carrier()
	b, err := f.svc.Redeem(ctx, x.c, carA, inv.Swarm.ID, rt.env(0, "CONTINUO_CONTINUATION_TICKET"))
	if err != nil || b.Worker.Epoch != 1 {
		t.Fatalf("redeem: %+v %v", b, err)
	}
	y := &w{c: x.c, car: carA, ref: swarm.WorkerRef{WorkerID: x.ref.WorkerID, Epoch: 1}}
	if len(mint.revoked) != 0 {
		t.Fatalf("revoked %v: the first carrier was not a started one", mint.revoked)
	}
	// It compacts in turn; its replacement retires it and revokes its token.
	if _, err := f.svc.Checkpoint(ctx, y.c, y.car, y.ref, []byte(`{"summary":"epoch 1"}`)); err != nil {
		t.Fatal(err)
	}
	f.compacting(y)
	planned()
	if len(rt.starts) != 2 {
		t.Fatalf("starts: %d", len(rt.starts))
	}
	if _, err := f.svc.Redeem(ctx, x.c, f.carrier(), inv.Swarm.ID, rt.env(1, "CONTINUO_CONTINUATION_TICKET")); err != nil {
		t.Fatal(err)
	}
	if len(mint.revoked) != 1 || mint.revoked[0] != "tok_b" {
		t.Fatalf("revoked %v, want the retired carrier's tok_b", mint.revoked)
	}

	// A start that fails: nothing started, so the continuation is revoked
	// (its start failed), the token revoked, and the worker
	// compact_required again; the planner tries again after a backoff,
	// five times in all, then the worker is compact_blocked
	// (carrier_start_failed) and nothing more is started.
	z := f.checkpointed(inv, "z")
	rt.fail = errors.New("no such command")
	f.compacting(z)
	before, revoked := len(rt.starts), len(mint.revoked)
	for i := range 5 {
		planned()
		planned() // within its backoff: nothing
		if len(rt.starts) != before+i+1 || len(mint.revoked) != revoked+i+1 {
			t.Fatalf("try %d: %d starts, %d tokens revoked; want %d and %d", i+1, len(rt.starts)-before, len(mint.revoked)-revoked, i+1, i+1)
		}
		if cz := f.openContinuation(z.ref.WorkerID); cz != nil {
			t.Fatalf("try %d left a continuation open: %+v", i+1, cz)
		}
		if got := f.continuity(inv, z); got != continuo.ContinuityCompactRequired && i < 4 {
			t.Fatalf("after try %d the worker is %s", i+1, got)
		}
		if i < 4 {
			f.clock.add(swarm.CarrierBackoff(i + 1)) // its backoff is over
		}
	}
	planned()
	if got, why := f.blocked(inv, z); got != continuo.ContinuityCompactBlocked || why != continuo.BlockedCarrierStartFailed || len(rt.starts) != before+5 {
		t.Fatalf("after five failed starts the worker is %s (%s), %d starts", got, why, len(rt.starts)-before)
	}
	// A new checkpoint looks again, with the tries afresh: the command
	// works now (below).
	rt.fail = nil
	if _, err := f.svc.Checkpoint(ctx, z.c, z.car, z.ref, []byte(`{"summary":"z, again"}`)); err != nil {
		t.Fatal(err)
	}
	if got := f.continuity(inv, z); got != continuo.ContinuityCompactRequired {
		t.Fatalf("after a new checkpoint the blocked worker is %s", got)
	}
	starts := len(rt.starts)

	// A start in flight when its server died: unknown, reconcile_required
	// (inDoubt checks it), and never started again.
	rt.fail = nil
	v := f.checkpointed(inv, "v")
	f.compacting(v)
	_, later := f.inDoubt(v, rt, mint)
	if err := swarm.PlanPass(ctx, later); err != nil {
		t.Fatal(err)
	}
	cv := f.openContinuation(v.ref.WorkerID)
	if cz := f.openContinuation(z.ref.WorkerID); cz == nil || cz.CarrierOp != continuo.OpSucceeded {
		t.Fatalf("z's second continuation: %+v", cz)
	}
	if cv == nil || cv.State != continuo.ContinuationReconcileRequired || cv.CarrierOp != continuo.OpUnknown || len(rt.starts) != starts+2 {
		t.Fatalf("after the server died in flight: %+v, %d starts", cv, len(rt.starts))
	}
}

// TestPlannerManual: a runtime that cannot start carriers (the manual
// one) is blocked explicitly, with no effect and no fallback: the planner
// prepares nothing and starts nothing, the compact_required worker takes
// no new work (a task targeted at it stays queued), and the owner is shown
// the worker compact_required under the manual runtime.
func TestPlannerManual(t *testing.T) { stores.Each(t, testPlannerManual) }

func testPlannerManual(t *testing.T) {
	f := newFixture(t)
	inv := f.create(4, nil)
	x := f.checkpointed(inv, "x")
	f.compacting(x)
	task := f.dispatch(inv.Swarm.ID, "k", x.ref.WorkerID)
	for range 2 {
		if err := swarm.PlanPass(t.Context(), f.svc); err != nil {
			t.Fatal(err)
		}
		if err := f.svc.Sweep(t.Context()); err != nil {
			t.Fatal(err)
		}
		if d := f.next(x); d.State != swarm.NextCompactRequired || d.Task != nil {
			t.Fatalf("the compact_required worker's next: %+v", d)
		}
	}
	if cn := f.openContinuation(x.ref.WorkerID); cn != nil {
		t.Fatalf("a manual runtime prepared %+v", cn)
	}
	if ts := f.task(inv.Swarm.ID, task.ID); ts.Task.State != continuo.TaskQueued {
		t.Fatalf("the task targeted at it is %s", ts.Task.State)
	}
	st, _ := f.svc.SwarmStatus(t.Context(), f.owner, ownerCar, inv.Swarm.ID)
	if st.Workers[0].ContinuityState != continuo.ContinuityCompactRequired || st.Runtime != swarm.RuntimeManual {
		t.Fatalf("the owner sees %s under runtime %q", st.Workers[0].ContinuityState, st.Runtime)
	}
}

// TestCloseRevokesContinuations: closing a swarm revokes its open
// continuations — a started carrier's ticket and an approved request
// alike — and the token minted for the started carrier; neither binds
// afterwards.
func TestCloseRevokesContinuations(t *testing.T) { stores.Each(t, testCloseRevokesContinuations) }

func testCloseRevokesContinuations(t *testing.T) {
	f, rt, mint := processFixture(t)
	ctx := t.Context()
	inv := f.create(4, nil)
	x, y := f.checkpointed(inv, "x"), f.checkpointed(inv, "y")
	f.compacting(x)
	if err := swarm.PlanPass(ctx, f.svc); err != nil || len(rt.starts) != 1 {
		t.Fatalf("planned %d starts: %v", len(rt.starts), err)
	}
	cx := f.openContinuation(x.ref.WorkerID)
	yCar := f.carrier()
	cy, _, err := f.svc.Request(ctx, y.c, yCar, swarm.RequestInput{SwarmID: inv.Swarm.ID, WorkerID: y.ref.WorkerID})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.svc.Approve(ctx, f.owner, ownerCar, inv.Swarm.ID, cy.ID, cy.Version); err != nil {
		t.Fatal(err)
	}
	st, err := f.svc.CloseSwarm(ctx, f.owner, ownerCar, inv.Swarm.ID)
	if err != nil || len(st.Continuations) != 0 {
		t.Fatalf("close: %+v %v", st, err)
	}
	for _, id := range []string{cx.ID, cy.ID} {
		var cn *continuo.Continuation
		storeRead(f, func(tx store.Tx) (err error) { cn, err = tx.ContinuationGet(ctx, id); return err })
		if cn.State != continuo.ContinuationRevoked {
			t.Fatalf("continuation %s after the close: %s", id, cn.State)
		}
	}
	if len(mint.revoked) != 1 || mint.revoked[0] != cx.CarrierToken {
		t.Fatalf("revoked %v, want the started carrier's %s", mint.revoked, cx.CarrierToken)
	}
	_, err = f.svc.Redeem(ctx, x.c, f.carrier(), inv.Swarm.ID, rt.env(0, "CONTINUO_CONTINUATION_TICKET"))
	wantCode(t, err, continuo.CodeTicketInvalid, "the started carrier redeeming after the close")
	if b, err := f.svc.ContinuationStatus(ctx, y.c, yCar, inv.Swarm.ID); err == nil && b.Continuation.State == continuo.ContinuationBound {
		t.Fatalf("the approved request bound after the close: %+v", b)
	}
}

// inDoubt makes the planner's start for x look in flight on a server that
// died, and has a surviving service sweep it: the continuation is then
// reconcile_required with its carrier operation unknown.
func (f *fixture) inDoubt(x *w, rt *fakeRuntime, mint *fakeMinter) (*continuo.Continuation, *swarm.Service) {
	f.t.Helper()
	ctx := f.t.Context()
	if err := swarm.PlanPass(ctx, f.svc); err != nil {
		f.t.Fatal(err)
	}
	cn := f.openContinuation(x.ref.WorkerID)
	if err := f.store.Write(ctx, func(tx store.Tx) error {
		c, err := tx.ContinuationGet(ctx, cn.ID)
		if err != nil {
			return err
		}
		prev := c.Version
		c.CarrierOp, c.CarrierProc, c.Version = continuo.OpInFlight, "dead-server", prev+1
		return tx.ContinuationUpdate(ctx, c, prev)
	}); err != nil {
		f.t.Fatal(err)
	}
	later := swarm.New(f.store, swarm.Options{Now: f.clock.now, Server: "later", Runtime: rt, Minter: mint,
		Alive: func(s string) (bool, bool) { return s != "dead-server", true }})
	f.t.Cleanup(later.Close)
	if err := later.Sweep(ctx); err != nil {
		f.t.Fatal(err)
	}
	cn = f.openContinuation(x.ref.WorkerID)
	if cn == nil || cn.State != continuo.ContinuationReconcileRequired || cn.CarrierOp != continuo.OpUnknown {
		f.t.Fatalf("after the server died in flight: %+v", cn)
	}
	return cn, later
}

// TestInDoubtOutlivesItsTicket: a carrier start in doubt waits for the
// owner however long it takes. Its ticket's time running out neither
// expires it nor makes the worker compact_required again, so the planner
// starts no second replacement; the ticket binds nothing any more; the
// owner's no_effect ends it and revokes the token minted for the carrier
// that may have started, and only then does the planner start another.
func TestInDoubtOutlivesItsTicket(t *testing.T) { stores.Each(t, testInDoubtOutlivesItsTicket) }

func testInDoubtOutlivesItsTicket(t *testing.T) {
	f, rt, mint := processFixture(t)
	ctx := t.Context()
	inv := f.create(4, nil)
	x := f.checkpointed(inv, "x")
	f.compacting(x)
	cn, later := f.inDoubt(x, rt, mint)

	f.clock.add(continuo.MaxTicketTTL + time.Minute)
	for range 2 {
		if err := later.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		if err := swarm.PlanPass(ctx, later); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.openContinuation(x.ref.WorkerID); got == nil || got.ID != cn.ID || got.State != continuo.ContinuationReconcileRequired {
		t.Fatalf("past its ticket's time the continuation in doubt is %+v", got)
	}
	if got := f.continuity(inv, x); got != continuo.ContinuityReconcileRequired || len(rt.starts) != 1 {
		t.Fatalf("the worker is %s after %d starts", got, len(rt.starts))
	}
	_, err := f.svc.Redeem(ctx, x.c, f.carrier(), inv.Swarm.ID, rt.env(0, "CONTINUO_CONTINUATION_TICKET"))
	wantCode(t, err, continuo.CodeTicketInvalid, "the late carrier redeeming an expired ticket in doubt")
	if got := f.openContinuation(x.ref.WorkerID); got == nil || got.State != continuo.ContinuationReconcileRequired || len(mint.revoked) != 0 {
		t.Fatalf("the refused redeem changed %+v (revoked %v)", got, mint.revoked)
	}

	r, err := f.svc.ReconcileContinuation(ctx, f.owner, ownerCar, inv.Swarm.ID, cn.ID, "no_effect")
	if err != nil || r.State != continuo.ContinuationRevoked {
		t.Fatalf("no_effect: %+v %v", r, err)
	}
	if len(mint.revoked) != 1 || mint.revoked[0] != cn.CarrierToken {
		t.Fatalf("revoked %v, want the carrier's %s", mint.revoked, cn.CarrierToken)
	}
	if err := swarm.PlanPass(ctx, later); err != nil {
		t.Fatal(err)
	}
	if next := f.openContinuation(x.ref.WorkerID); next == nil || next.ID == cn.ID || next.CarrierOp != continuo.OpSucceeded || len(rt.starts) != 2 {
		t.Fatalf("after the owner's decision: %+v, %d starts", next, len(rt.starts))
	}
}

// TestEndedContinuationRevokesToken: a started carrier whose continuation
// ends without it — its ticket's time ran out, or the owner revoked it —
// can bind nothing, and the token minted for it is revoked with it.
func TestEndedContinuationRevokesToken(t *testing.T) {
	stores.Each(t, testEndedContinuationRevokesToken)
}

func testEndedContinuationRevokesToken(t *testing.T) {
	f, _, mint := processFixture(t)
	ctx := t.Context()
	inv := f.create(4, nil)
	x, y := f.checkpointed(inv, "x"), f.checkpointed(inv, "y")
	f.compacting(x)
	if err := swarm.PlanPass(ctx, f.svc); err != nil {
		t.Fatal(err)
	}
	cx := f.openContinuation(x.ref.WorkerID)
	f.clock.add(continuo.DefaultTicketTTL + time.Second)
	if err := f.svc.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	var lapsed *continuo.Continuation
	storeRead(f, func(tx store.Tx) (err error) { lapsed, err = tx.ContinuationGet(ctx, cx.ID); return err })
	if lapsed.State != continuo.ContinuationExpired || len(mint.revoked) != 1 || mint.revoked[0] != cx.CarrierToken {
		t.Fatalf("lapsed: %s, revoked %v, want %s", lapsed.State, mint.revoked, cx.CarrierToken)
	}

	f.compacting(y)
	if err := swarm.PlanPass(ctx, f.svc); err != nil {
		t.Fatal(err)
	}
	cy := f.openContinuation(y.ref.WorkerID)
	for range 2 { // the second is a replay: nothing more is revoked
		if r, _, err := f.svc.Revoke(ctx, f.owner, ownerCar, inv.Swarm.ID, cy.ID); err != nil || r.State != continuo.ContinuationRevoked {
			t.Fatalf("revoke: %+v %v", r, err)
		}
	}
	if len(mint.revoked) != 2 || mint.revoked[1] != cy.CarrierToken || cy.CarrierToken == cx.CarrierToken {
		t.Fatalf("revoked %v, want %s too", mint.revoked, cy.CarrierToken)
	}
}

// TestReconcileApplied: the owner's applied says the carrier in doubt did
// start: the continuation is pending again, its carrier redeems it (the
// worker at epoch 1, its token kept), and nothing else is started.
// Applied on a ticket whose time ran out lets it lapse: the token is
// revoked and the planner, decided by the owner, starts a replacement.
func TestReconcileApplied(t *testing.T) { stores.Each(t, testReconcileApplied) }

func testReconcileApplied(t *testing.T) {
	f, rt, mint := processFixture(t)
	ctx := t.Context()
	inv := f.create(4, nil)
	x, y := f.checkpointed(inv, "x"), f.checkpointed(inv, "y")
	f.compacting(x)
	cx, later := f.inDoubt(x, rt, mint)
	r, err := f.svc.ReconcileContinuation(ctx, f.owner, ownerCar, inv.Swarm.ID, cx.ID, "applied")
	if err != nil || r.State != continuo.ContinuationPending || r.Version <= cx.Version {
		t.Fatalf("applied: %+v %v", r, err)
	}
	if got := f.continuity(inv, x); got != continuo.ContinuityPending {
		t.Fatalf("after applied the worker is %s", got)
	}
	_, err = f.svc.ReconcileContinuation(ctx, f.owner, ownerCar, inv.Swarm.ID, cx.ID, "applied")
	wantCode(t, err, continuo.CodeInvalidState, "applied again")
	b, err := f.svc.Redeem(ctx, x.c, f.carrier(), inv.Swarm.ID, rt.env(0, "CONTINUO_CONTINUATION_TICKET"))
	if err != nil || b.Worker.Epoch != 1 || b.Continuation.ID != cx.ID {
		t.Fatalf("the started carrier's redeem: %+v %v", b, err)
	}
	if err := swarm.PlanPass(ctx, later); err != nil || len(rt.starts) != 1 || len(mint.revoked) != 0 {
		t.Fatalf("after the redeem: %d starts, revoked %v, %v", len(rt.starts), mint.revoked, err)
	}

	f.compacting(y)
	cy, _ := f.inDoubt(y, rt, mint)
	f.clock.add(continuo.MaxTicketTTL + time.Minute)
	if _, err := f.svc.ReconcileContinuation(ctx, f.owner, ownerCar, inv.Swarm.ID, cy.ID, "applied"); err != nil {
		t.Fatal(err)
	}
	if err := later.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if len(mint.revoked) != 1 || mint.revoked[0] != cy.CarrierToken {
		t.Fatalf("revoked %v, want %s", mint.revoked, cy.CarrierToken)
	}
	// Its carrier started (the owner said) and never redeemed: a failed
	// try, tried again after its backoff.
	if err := swarm.PlanPass(ctx, later); err != nil || len(rt.starts) != 2 {
		t.Fatalf("within the backoff: %d starts, %v", len(rt.starts), err)
	}
	f.clock.add(swarm.CarrierBackoff(1))
	if err := swarm.PlanPass(ctx, later); err != nil {
		t.Fatal(err)
	}
	if next := f.openContinuation(y.ref.WorkerID); next == nil || next.ID == cy.ID || len(rt.starts) != 3 {
		t.Fatalf("after the lapse: %+v, %d starts", next, len(rt.starts))
	}
}
