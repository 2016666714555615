package swarm_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/swarm"
)

// newSwarm is how most tests start: a fixture and a swarm of at most four
// workers.
func newSwarm(t *testing.T) (*fixture, *swarm.Invited) {
	f := newFixture(t)
	return f, f.create(4, nil)
}

// checkpointed joins a worker and gives it a checkpoint.
func (f *fixture) checkpointed(inv *swarm.Invited, label string) *w {
	f.t.Helper()
	x := f.join(inv, label)
	if _, err := f.svc.Checkpoint(f.t.Context(), x.c, x.car, x.ref, json.RawMessage(`{"summary":"`+label+` at work","blockers":["none"]}`)); err != nil {
		f.t.Fatal(err)
	}
	return x
}

func (f *fixture) prepare(inv *swarm.Invited, x *w) *swarm.Prepared {
	f.t.Helper()
	p, err := f.svc.Prepare(f.t.Context(), f.owner, ownerCar, inv.Swarm.ID, x.ref.WorkerID, "context full", 0)
	if err != nil {
		f.t.Fatal(err)
	}
	return p
}

func TestTicketPath(t *testing.T) { stores.Each(t, testTicketPath) }

func testTicketPath(t *testing.T) {
	f, inv := newSwarm(t)
	ctx := t.Context()
	x := f.checkpointed(inv, "x")
	p := f.prepare(inv, x)
	if p.Ticket == "" || p.Continuation.SourceEpoch != 0 || p.Continuation.TargetEpoch != 1 || p.Continuation.State != continuo.ContinuationPending {
		t.Fatalf("prepared %+v", p)
	}
	var capsule swarm.Capsule
	if err := json.Unmarshal([]byte(p.Continuation.Capsule), &capsule); err != nil || capsule.Authority != "context_only" ||
		capsule.Version != swarm.CapsuleVersion || capsule.Epoch != 1 || capsule.WorkerID != x.ref.WorkerID || !strings.Contains(string(capsule.Checkpoint), "x at work") {
		t.Fatalf("capsule %s (%v)", p.Continuation.Capsule, err)
	}
	// Until the transfer commits the old carrier stays current.
	if d := f.next(x); d.State != swarm.NextCompactRequired {
		t.Fatalf("old carrier while a continuation is open: %+v", d)
	}
	c2, car2 := x.c, f.carrier()
	b, err := f.svc.Redeem(ctx, c2, car2, inv.Swarm.ID, p.Ticket)
	if err != nil || b.Worker.ID != x.ref.WorkerID || b.Worker.Epoch != 1 || b.Continuation.State != continuo.ContinuationBound || b.Replayed {
		t.Fatalf("redeem: %+v %v", b, err)
	}
	if again, err := f.svc.Redeem(ctx, c2, car2, inv.Swarm.ID, p.Ticket); err != nil || !again.Replayed || again.Worker.Epoch != 1 {
		t.Fatalf("redeem replay (a lost answer): %+v %v", again, err)
	}
	_, err = f.svc.Redeem(ctx, c2, f.carrier(), inv.Swarm.ID, p.Ticket)
	wantCode(t, err, continuo.CodeTicketInvalid, "the ticket from a third carrier")
	// The old carrier: a polite next says continued; anything else is fenced.
	if d := f.next(x); d.State != swarm.NextContinued {
		t.Fatalf("old carrier's next: %+v", d)
	}
	_, err = f.svc.Checkpoint(ctx, x.c, x.car, x.ref, json.RawMessage(`{"s":1}`))
	wantCode(t, err, continuo.CodeCarrierFenced, "old carrier's checkpoint")
	_, err = f.svc.Checkpoint(ctx, c2, car2, x.ref, json.RawMessage(`{"s":1}`))
	wantCode(t, err, continuo.CodeCarrierFenced, "new carrier at the old epoch")
	// A task for this worker reaches the new carrier.
	task := f.dispatch(inv.Swarm.ID, "after", x.ref.WorkerID)
	y := &w{c: c2, car: car2, ref: swarm.WorkerRef{WorkerID: x.ref.WorkerID, Epoch: 1}}
	if d := f.next(y); d.Task == nil || d.Task.ID != task.ID {
		t.Fatalf("new carrier's next: %+v", d)
	}
	// A retired carrier never joins again.
	_, err = f.svc.Join(ctx, x.c, x.car, swarm.JoinInput{SwarmID: inv.Swarm.ID, Invite: inv.Invite, Label: "again"})
	wantCode(t, err, continuo.CodeConflict, "a retired carrier joining")
	// The join took no worker slot.
	st, _ := f.svc.SwarmStatus(ctx, f.owner, ownerCar, inv.Swarm.ID)
	if len(st.Workers) != 1 {
		t.Fatalf("workers after a continuation: %d", len(st.Workers))
	}
}

func TestContinuationBoundary(t *testing.T) { stores.Each(t, testContinuationBoundary) }

func testContinuationBoundary(t *testing.T) {
	f, inv := newSwarm(t)
	ctx := t.Context()
	bare := f.join(inv, "bare")
	_, err := f.svc.Prepare(ctx, f.owner, ownerCar, inv.Swarm.ID, bare.ref.WorkerID, "r", 0)
	if e := wantCode(t, err, continuo.CodeUnsafeBoundary, "no checkpoint"); e.Details["reason"] != "no_checkpoint" {
		t.Errorf("details %v", e.Details)
	}
	x := f.checkpointed(inv, "x")
	f.dispatch(inv.Swarm.ID, "t", x.ref.WorkerID)
	f.next(x)
	_, err = f.svc.Prepare(ctx, f.owner, ownerCar, inv.Swarm.ID, x.ref.WorkerID, "r", 0)
	if e := wantCode(t, err, continuo.CodeUnsafeBoundary, "a task in flight"); e.Details["reason"] != "task_in_flight" {
		t.Errorf("details %v", e.Details)
	}
	y := f.checkpointed(inv, "y")
	f.prepare(inv, y)
	_, err = f.svc.Prepare(ctx, f.owner, ownerCar, inv.Swarm.ID, y.ref.WorkerID, "r", 0)
	if e := wantCode(t, err, continuo.CodeUnsafeBoundary, "a second continuation"); e.Details["reason"] != "continuation_pending" {
		t.Errorf("details %v", e.Details)
	}
	_, err = f.svc.Prepare(ctx, f.owner, ownerCar, inv.Swarm.ID, y.ref.WorkerID, "r", 5*time.Second)
	wantCode(t, err, continuo.CodeInvalidInput, "a ttl under 30 s")
	_, err = f.svc.Prepare(ctx, y.c, y.car, inv.Swarm.ID, y.ref.WorkerID, "r", 0)
	wantCode(t, err, continuo.CodeForbidden, "a worker preparing")
}

func TestTicketRefusals(t *testing.T) { stores.Each(t, testTicketRefusals) }

func testTicketRefusals(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	inv := f.create(8, nil)
	other := f.create(8, nil)
	reason := func(b *swarm.Bound, err error) any {
		t.Helper()
		return wantCode(t, err, continuo.CodeTicketInvalid, "redeem").Details["reason"]
	}
	x := f.checkpointed(inv, "x")
	p := f.prepare(inv, x)
	if r := reason(f.svc.Redeem(ctx, f.member(), f.carrier(), other.Swarm.ID, p.Ticket)); r != "another_swarm" {
		t.Errorf("another swarm: %v", r)
	}
	// A ticket nobody issued is unknown, as another group's is.
	_, err := f.svc.Redeem(ctx, f.member(), f.carrier(), inv.Swarm.ID, "cto_cnt_made-up")
	wantCode(t, err, continuo.CodeNotFound, "an unknown ticket")
	if _, _, err := f.svc.Revoke(ctx, f.owner, ownerCar, inv.Swarm.ID, p.Continuation.ID); err != nil {
		t.Fatal(err)
	}
	if r := reason(f.svc.Redeem(ctx, f.member(), f.carrier(), inv.Swarm.ID, p.Ticket)); r != "revoked" {
		t.Errorf("revoked: %v", r)
	}
	// Expired: refused, and the expiry is kept.
	p2 := f.prepare(inv, x)
	f.clock.add(continuo.DefaultTicketTTL)
	if r := reason(f.svc.Redeem(ctx, f.member(), f.carrier(), inv.Swarm.ID, p2.Ticket)); r != "expired" {
		t.Errorf("expired: %v", r)
	}
	if r := reason(f.svc.Redeem(ctx, f.member(), f.carrier(), inv.Swarm.ID, p2.Ticket)); r != "expired" {
		t.Errorf("expired, again: %v", r)
	}
	// The worker checkpointed again after the ticket was made.
	p3 := f.prepare(inv, x)
	if _, err := f.svc.Checkpoint(ctx, x.c, x.car, x.ref, json.RawMessage(`{"summary":"moved on"}`)); err != nil {
		t.Fatal(err)
	}
	if r := reason(f.svc.Redeem(ctx, f.member(), f.carrier(), inv.Swarm.ID, p3.Ticket)); r != "checkpoint_changed" {
		t.Errorf("checkpoint changed: %v", r)
	}
}

// TestConcurrentRedeem: two new carriers redeem one ticket at once:
// exactly one is bound, the other refused, and the epoch moves once.
// Each trial is the same race; in 200 the loser is told both answers
// (conflict, used) tens of times on PostgreSQL (always conflict on
// SQLite's one writer), where 1,000 took three minutes of the package's
// five under -race; the test logs the count. TestRedeemLostRace pins each
// loser's answer, and the e2e TestContinuityStress makes ≥ 1,000
// rollovers through real carrier processes.
func TestConcurrentRedeem(t *testing.T) { stores.Each(t, testConcurrentRedeem) }

func testConcurrentRedeem(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	trials := 200
	if testing.Short() {
		trials = 50
	}
	inv := f.create(64, nil)
	x := f.checkpointed(inv, "x")
	losers := map[string]int{} // what the losers were told
	for trial := 0; trial < trials; trial++ {
		p := f.prepare(inv, x)
		var wg sync.WaitGroup
		results := make([]*swarm.Bound, 2)
		errs := make([]error, 2)
		cars := []swarm.Carrier{f.carrier(), f.carrier()}
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = f.svc.Redeem(ctx, x.c, cars[i], inv.Swarm.ID, p.Ticket)
			}()
		}
		wg.Wait()
		won := -1
		for i := range 2 {
			if errs[i] == nil {
				if won >= 0 {
					t.Fatalf("trial %d: both carriers bound", trial)
				}
				won = i
			} else if !lostRace(errs[i]) {
				t.Fatalf("trial %d: the loser got %v", trial, errs[i])
			} else {
				var e *continuo.Error
				errors.As(errs[i], &e)
				losers[fmt.Sprint(e.Code, " ", e.Details["reason"])]++
			}
		}
		if won < 0 {
			t.Fatalf("trial %d: nobody bound: %v", trial, errs)
		}
		if results[won].Worker.Epoch != int64(trial+1) {
			t.Fatalf("trial %d: epoch %d", trial, results[won].Worker.Epoch)
		}
		x = &w{c: x.c, car: cars[won], ref: swarm.WorkerRef{WorkerID: x.ref.WorkerID, Epoch: int64(trial + 1)}}
	}
	t.Logf("%d trials, the losers told %v", trials, losers)
	// Bounded state: the ledger keeps two epochs at most.
	storetestRows(t, f, "context_ledger", 3)
}

// lostRace reports whether err tells the loser of a race for a ticket
// that it lost: conflict when the ticket was open as its call began, or
// ticket_invalid (used) when the winner had committed by then.
func lostRace(err error) bool {
	var e *continuo.Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Code == continuo.CodeConflict && e.Details["reason"] == "lost_race" ||
		e.Code == continuo.CodeTicketInvalid && e.Details["reason"] == "used"
}

// TestRedeemLostRace: a carrier whose redeem began while the ticket was
// open and found it bound to another is told conflict with the worker's
// new epoch; presented again, or by anyone after its use, the ticket is
// ticket_invalid (used). Neither binds anything.
func TestRedeemLostRace(t *testing.T) { stores.Each(t, testRedeemLostRace) }

func testRedeemLostRace(t *testing.T) {
	f, inv := newSwarm(t)
	ctx := t.Context()
	x := f.checkpointed(inv, "x")
	p := f.prepare(inv, x)
	winner, loser := f.carrier(), f.carrier()
	_, err := swarm.RedeemBetween(ctx, f.svc, x.c, loser, inv.Swarm.ID, p.Ticket, func() {
		if _, err := f.svc.Redeem(ctx, x.c, winner, inv.Swarm.ID, p.Ticket); err != nil {
			t.Fatalf("the winner: %v", err)
		}
	})
	e := wantCode(t, err, continuo.CodeConflict, "the loser of the race")
	if e.Details["reason"] != "lost_race" || fmt.Sprint(e.Details["epoch"]) != "1" {
		t.Fatalf("the loser's details: %v", e.Details)
	}
	for _, car := range []swarm.Carrier{loser, f.carrier()} {
		_, err := f.svc.Redeem(ctx, x.c, car, inv.Swarm.ID, p.Ticket)
		if e := wantCode(t, err, continuo.CodeTicketInvalid, "the used ticket presented again"); e.Details["reason"] != "used" {
			t.Fatalf("details: %v", e.Details)
		}
	}
	if d := f.next(&w{c: x.c, car: winner, ref: swarm.WorkerRef{WorkerID: x.ref.WorkerID, Epoch: 1}}); d.State != swarm.NextIdle {
		t.Fatalf("the winner's next: %+v", d)
	}
	_, err = f.svc.Next(ctx, x.c, loser, swarm.WorkerRef{WorkerID: x.ref.WorkerID, Epoch: 1}, 0, nil)
	wantCode(t, err, continuo.CodeCarrierFenced, "the loser as the worker")
}

// storetestRows fails when table holds more than max rows.
func storetestRows(t *testing.T, f *fixture, table string, max int) {
	t.Helper()
	n := 0
	if err := f.store.Read(t.Context(), func(tx store.Tx) error {
		return tx.TableRows(t.Context(), table, func(map[string]any) error { n++; return nil })
	}); err != nil {
		t.Fatal(err)
	}
	if n > max {
		t.Fatalf("%s holds %d rows, want at most %d", table, n, max)
	}
}

func TestApprovalPath(t *testing.T) { stores.Each(t, testApprovalPath) }

func testApprovalPath(t *testing.T) {
	f, inv := newSwarm(t)
	ctx := t.Context()
	x := f.checkpointed(inv, "x")
	newCar := f.carrier()
	cn, replayed, err := f.svc.Request(ctx, x.c, newCar, swarm.RequestInput{SwarmID: inv.Swarm.ID, WorkerID: x.ref.WorkerID, SourceEpoch: 0, Reason: "new account"})
	if err != nil || replayed || cn.State != continuo.ContinuationPending || cn.Version != 1 {
		t.Fatalf("request: %+v %v", cn, err)
	}
	if again, replayed, err := f.svc.Request(ctx, x.c, newCar, swarm.RequestInput{SwarmID: inv.Swarm.ID, WorkerID: x.ref.WorkerID, SourceEpoch: 0}); err != nil || !replayed || again.ID != cn.ID {
		t.Fatalf("request replay: %+v %v", again, err)
	}
	_, _, err = f.svc.Request(ctx, x.c, f.carrier(), swarm.RequestInput{SwarmID: inv.Swarm.ID, WorkerID: x.ref.WorkerID, SourceEpoch: 0})
	wantCode(t, err, continuo.CodeUnsafeBoundary, "a second requester")
	if b, err := f.svc.ContinuationStatus(ctx, x.c, newCar, inv.Swarm.ID); err != nil || b.Continuation.State != continuo.ContinuationPending || b.Worker.Epoch != 0 {
		t.Fatalf("status before approval: %+v %v", b, err)
	}
	_, _, err = f.svc.Approve(ctx, f.owner, ownerCar, inv.Swarm.ID, cn.ID, 7)
	wantCode(t, err, continuo.CodeRevisionConflict, "approve at a wrong version")
	ap, _, err := f.svc.Approve(ctx, f.owner, ownerCar, inv.Swarm.ID, cn.ID, 1)
	if err != nil || ap.State != continuo.ContinuationApproved || ap.Version != 2 {
		t.Fatalf("approve: %+v %v", ap, err)
	}
	if _, replayed, err := f.svc.Approve(ctx, f.owner, ownerCar, inv.Swarm.ID, cn.ID, 1); err != nil || !replayed {
		t.Fatalf("approve replay: %v", err)
	}
	// Approved, not yet bound: the old carrier is still the carrier.
	if _, err := f.svc.Checkpoint(ctx, x.c, x.car, x.ref, json.RawMessage(`{"summary":"x moved on"}`)); err != nil {
		t.Fatalf("old carrier before the transfer: %v", err)
	}
	b, err := f.svc.ContinuationStatus(ctx, x.c, newCar, inv.Swarm.ID)
	if code := continuo.ErrorCode(err); err == nil || code != continuo.CodeTicketInvalid {
		// The checkpoint above changed it: the approval no longer holds.
		t.Fatalf("status after the checkpoint moved: %+v %v", b, err)
	}
	// A fresh request from another new carrier, approved and bound.
	car3 := f.carrier()
	if _, _, err := f.svc.Revoke(ctx, f.owner, ownerCar, inv.Swarm.ID, cn.ID); err != nil {
		t.Fatal(err)
	}
	cn3, _, err := f.svc.Request(ctx, x.c, car3, swarm.RequestInput{SwarmID: inv.Swarm.ID, WorkerID: x.ref.WorkerID, SourceEpoch: 0})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.svc.Approve(ctx, f.owner, ownerCar, inv.Swarm.ID, cn3.ID, cn3.Version); err != nil {
		t.Fatal(err)
	}
	b, err = f.svc.ContinuationStatus(ctx, x.c, car3, inv.Swarm.ID)
	if err != nil || b.Continuation.State != continuo.ContinuationBound || b.Worker.Epoch != 1 {
		t.Fatalf("status after approval: %+v %v", b, err)
	}
	// The new carrier starts from a capsule, as on the ticket path.
	var capsule swarm.Capsule
	if err := json.Unmarshal([]byte(b.Continuation.Capsule), &capsule); err != nil || capsule.Authority != "context_only" || capsule.Epoch != 1 ||
		!strings.Contains(string(capsule.Checkpoint), "x moved on") || b.Continuation.CapsuleHash == "" {
		t.Fatalf("the approval path's capsule %q (hash %q): %v", b.Continuation.Capsule, b.Continuation.CapsuleHash, err)
	}
	if again, err := f.svc.ContinuationStatus(ctx, x.c, car3, inv.Swarm.ID); err != nil || !again.Replayed || again.Worker.Epoch != 1 {
		t.Fatalf("status again: %+v %v", again, err)
	}
	if d := f.next(x); d.State != swarm.NextContinued {
		t.Fatalf("old carrier: %+v", d)
	}
}

func TestPressure(t *testing.T) { stores.Each(t, testPressure) }

func testPressure(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	inv := f.create(4, smallBudget(10_000, 1_000, 0.5))
	x := f.checkpointed(inv, "x")
	status := func() *swarm.Pressure {
		t.Helper()
		p, err := f.svc.ContextStatus(ctx, x.c, x.car, x.ref)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := status(); p.Tokens != 1_000 || p.Exact || p.CompactRequired {
		t.Fatalf("fresh: %+v", p)
	}
	r, err := f.svc.Dispatch(ctx, f.owner, ownerCar, swarm.DispatchInput{SwarmID: inv.Swarm.ID, TaskKey: "big", Prompt: strings.Repeat("p", 8_000)})
	if err != nil {
		t.Fatal(err)
	}
	f.next(x)
	f.next(x) // a redelivery counts nothing more
	if p := status(); p.Tokens != 3_000 {
		t.Fatalf("after one prompt of 2,000 tokens, counted once: %+v", p)
	}
	report := func(tokens int64, source continuo.LedgerSource) *swarm.Pressure {
		t.Helper()
		p, err := f.svc.ReportContext(ctx, x.c, x.car, x.ref, swarm.ReportInput{Tokens: tokens, Source: source, Basis: "test"})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := report(3_000, continuo.LedgerEstimate); p.Tokens != 4_000 || p.Exact {
		t.Fatalf("an estimate above the count: %+v", p)
	}
	if p := report(100, continuo.LedgerEstimate); p.Tokens != 4_000 {
		t.Fatalf("a smaller later estimate lowered pressure: %+v", p)
	}
	if p := report(3_500, continuo.LedgerHostExact); p.Tokens != 4_500 || !p.Exact || p.CompactRequired {
		t.Fatalf("an exact figure on top: %+v", p)
	}
	if _, err := f.svc.Submit(ctx, x.c, x.car, x.ref, r.Task.ID, strings.Repeat("r", 4_000)); err != nil {
		t.Fatal(err)
	}
	// Counted 2,000 + 1,000 = 3,000 is below the exact 3,500: it leads.
	if p := status(); p.Tokens != 4_500 || !p.Exact || p.CompactRequired {
		t.Fatalf("after the result: %+v", p)
	}
	if d := f.next(x); d.State != swarm.NextIdle {
		t.Fatalf("next below the threshold: %+v", d)
	}
	if p := report(5_000, continuo.LedgerEstimate); p.Tokens != 6_000 || p.Exact || !p.CompactRequired {
		t.Fatalf("over the threshold: %+v", p)
	}
	if d := f.next(x); d.State != swarm.NextCompactRequired {
		t.Fatalf("next at the threshold: %+v", d)
	}
	_, err = f.svc.ReportContext(ctx, x.c, x.car, x.ref, swarm.ReportInput{Tokens: 1, Source: continuo.LedgerTaskPrompt})
	wantCode(t, err, continuo.CodeInvalidInput, "a count reported")
	// After a continuation the ledger starts from the capsule.
	pr := f.prepare(inv, x)
	car := f.carrier()
	b, err := f.svc.Redeem(ctx, x.c, car, inv.Swarm.ID, pr.Ticket)
	if err != nil || b.Worker.Epoch != 1 || b.Worker.ContinuityState != continuo.ContinuitySteady {
		t.Fatalf("the continuation: %+v %v", b, err)
	}
	after, err := f.svc.ContextStatus(ctx, x.c, car, swarm.WorkerRef{WorkerID: x.ref.WorkerID, Epoch: 1})
	if err != nil || after.Epoch != 1 || after.CompactRequired || after.Tokens >= 4_500 || after.Tokens <= 1_000 ||
		len(after.Sources) != 1 || after.Sources[0].Source != continuo.LedgerCapsule {
		t.Fatalf("pressure of the new epoch: %+v %v", after, err)
	}
}

// TestContinuationLapse: the reaper expires an open continuation whose
// time ran out; the worker is steady again and takes work; the owner's
// status showed it while it was open.
func TestContinuationLapse(t *testing.T) { stores.Each(t, testContinuationLapse) }

func testContinuationLapse(t *testing.T) {
	f, inv := newSwarm(t)
	ctx := t.Context()
	x := f.checkpointed(inv, "x")
	p := f.prepare(inv, x)
	st, err := f.svc.SwarmStatus(ctx, f.owner, ownerCar, inv.Swarm.ID)
	if err != nil || len(st.Continuations) != 1 || st.Continuations[0].ID != p.Continuation.ID {
		t.Fatalf("status while open: %+v %v", st, err)
	}
	f.clock.add(continuo.DefaultTicketTTL + time.Second)
	if err := f.svc.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	st, _ = f.svc.SwarmStatus(ctx, f.owner, ownerCar, inv.Swarm.ID)
	if len(st.Continuations) != 0 || st.Workers[0].ContinuityState != continuo.ContinuitySteady {
		t.Fatalf("after the sweep: %+v", st)
	}
	task := f.dispatch(inv.Swarm.ID, "k", "")
	if d := f.next(x); d.Task == nil || d.Task.ID != task.ID {
		t.Fatalf("the worker takes work again: %+v", d)
	}
	_, err = f.svc.Redeem(ctx, x.c, f.carrier(), inv.Swarm.ID, p.Ticket)
	wantCode(t, err, continuo.CodeTicketInvalid, "a lapsed ticket")
}

// TestOwnerCarrierNeverContinues: the owner's conversation cannot become
// a worker's carrier by a ticket or a request (a join refuses it too):
// owner tools refuse workers, so it would lock the owner out of its swarm.
func TestOwnerCarrierNeverContinues(t *testing.T) { stores.Each(t, testOwnerCarrierNeverContinues) }

func testOwnerCarrierNeverContinues(t *testing.T) {
	f, inv := newSwarm(t)
	ctx := t.Context()
	both := *f.owner
	both.Scopes = []continuo.Scope{continuo.ScopeSwarmOwn, continuo.ScopeSwarmWork}
	x := f.checkpointed(inv, "x")
	p := f.prepare(inv, x)
	_, err := f.svc.Redeem(ctx, &both, ownerCar, inv.Swarm.ID, p.Ticket)
	wantCode(t, err, continuo.CodeForbidden, "the owner's conversation redeeming")
	y := f.checkpointed(inv, "y")
	_, _, err = f.svc.Request(ctx, &both, ownerCar, swarm.RequestInput{SwarmID: inv.Swarm.ID, WorkerID: y.ref.WorkerID, SourceEpoch: 0})
	wantCode(t, err, continuo.CodeForbidden, "the owner's conversation requesting")
	// The owner still owns the swarm, and the ticket still serves a new
	// carrier.
	if _, err := f.svc.SwarmStatus(ctx, f.owner, ownerCar, inv.Swarm.ID); err != nil {
		t.Fatalf("the owner's status: %v", err)
	}
	if b, err := f.svc.Redeem(ctx, x.c, f.carrier(), inv.Swarm.ID, p.Ticket); err != nil || b.Worker.Epoch != 1 {
		t.Fatalf("redeem by a new carrier: %+v %v", b, err)
	}
}

func TestReceiptAfterReplacement(t *testing.T) { stores.Each(t, testReceiptAfterReplacement) }

// testReceiptAfterReplacement: a carrier re-reading the receipt of its
// continuation (a ticket redeemed again, the approval path's status read
// again) once a later continuation replaced it is carrier_fenced with the
// current epoch — never told that it carries the worker at that epoch.
func testReceiptAfterReplacement(t *testing.T) {
	f, inv := newSwarm(t)
	ctx := t.Context()
	x := f.checkpointed(inv, "x")
	checkpoint := func(y *w) {
		t.Helper()
		if _, err := f.svc.Checkpoint(ctx, y.c, y.car, y.ref, json.RawMessage(`{"summary":"at epoch"}`)); err != nil {
			t.Fatal(err)
		}
	}
	p1 := f.prepare(inv, x)
	y := &w{c: x.c, car: f.carrier(), ref: swarm.WorkerRef{WorkerID: x.ref.WorkerID, Epoch: 1}}
	if _, err := f.svc.Redeem(ctx, y.c, y.car, inv.Swarm.ID, p1.Ticket); err != nil {
		t.Fatal(err)
	}
	checkpoint(y)
	z := &w{c: x.c, car: f.carrier(), ref: swarm.WorkerRef{WorkerID: x.ref.WorkerID, Epoch: 2}}
	cn, _, err := f.svc.Request(ctx, z.c, z.car, swarm.RequestInput{SwarmID: inv.Swarm.ID, WorkerID: x.ref.WorkerID, SourceEpoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.svc.Approve(ctx, f.owner, ownerCar, inv.Swarm.ID, cn.ID, cn.Version); err != nil {
		t.Fatal(err)
	}
	if b, err := f.svc.ContinuationStatus(ctx, z.c, z.car, inv.Swarm.ID); err != nil || b.Worker.Epoch != 2 {
		t.Fatalf("status after approval: %+v %v", b, err)
	}
	checkpoint(z)
	p3 := f.prepare(inv, z)
	last := f.carrier()
	if _, err := f.svc.Redeem(ctx, x.c, last, inv.Swarm.ID, p3.Ticket); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.Redeem(ctx, y.c, y.car, inv.Swarm.ID, p1.Ticket)
	if e := wantCode(t, err, continuo.CodeCarrierFenced, "a replaced carrier redeeming its ticket again"); e.Details["epoch"] != int64(3) {
		t.Errorf("details %v", e.Details)
	}
	_, err = f.svc.ContinuationStatus(ctx, z.c, z.car, inv.Swarm.ID)
	if e := wantCode(t, err, continuo.CodeCarrierFenced, "a replaced carrier reading its continuation status again"); e.Details["epoch"] != int64(3) {
		t.Errorf("details %v", e.Details)
	}
	if again, err := f.svc.Redeem(ctx, x.c, last, inv.Swarm.ID, p3.Ticket); err != nil || !again.Replayed || again.Worker.Epoch != 3 {
		t.Fatalf("the current carrier's replay: %+v %v", again, err)
	}
}

// TestAutoApproveManaged: under auto_approve_managed a request of the
// worker's own principal while the worker is compact_required is approved
// in the request itself (approved_by policy) and binds on the requester's
// readback; a request while the worker is steady, one from another
// principal of the group, and any request without the policy wait for the
// owner, whose approval is recorded as the owner's.
func TestAutoApproveManaged(t *testing.T) { stores.Each(t, testAutoApproveManaged) }

func testAutoApproveManaged(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	policy := continuo.DefaultSwarmPolicy()
	policy.AutoApproveManaged = true
	inv := f.create(4, &policy)
	x := f.checkpointed(inv, "x")
	request := func(c *continuo.Caller, car swarm.Carrier) *continuo.Continuation {
		t.Helper()
		cn, _, err := f.svc.Request(ctx, c, car, swarm.RequestInput{SwarmID: inv.Swarm.ID, WorkerID: x.ref.WorkerID, SourceEpoch: x.ref.Epoch})
		if err != nil {
			t.Fatal(err)
		}
		return cn
	}
	waits := func(what string, cn *continuo.Continuation) {
		t.Helper()
		if cn.State != continuo.ContinuationPending || cn.ApprovedBy != "" || cn.Version != 1 {
			t.Fatalf("%s: %+v", what, cn)
		}
		if _, _, err := f.svc.Revoke(ctx, f.owner, ownerCar, inv.Swarm.ID, cn.ID); err != nil {
			t.Fatal(err)
		}
	}
	waits("the worker's principal while the worker is steady", request(x.c, f.carrier()))
	f.compacting(x)
	waits("another principal of the group", request(f.member(), f.carrier()))
	newCar := f.carrier()
	cn := request(x.c, newCar)
	if cn.State != continuo.ContinuationApproved || cn.ApprovedBy != continuo.ApprovedByPolicy || cn.Version != 2 || cn.CapsuleHash == "" {
		t.Fatalf("a managed request under the policy: %+v", cn)
	}
	b, err := f.svc.ContinuationStatus(ctx, x.c, newCar, inv.Swarm.ID)
	if err != nil || b.Continuation.State != continuo.ContinuationBound || b.Worker.Epoch != 1 || b.Continuation.ApprovedBy != continuo.ApprovedByPolicy {
		t.Fatalf("the requester's readback: %+v %v", b, err)
	}
	if d := f.next(x); d.State != swarm.NextContinued {
		t.Fatalf("the old carrier: %+v", d)
	}

	// Without the policy the owner approves, and is recorded.
	inv2 := f.create(4, nil)
	y := f.checkpointed(inv2, "y")
	f.compacting(y)
	cn2, _, err := f.svc.Request(ctx, y.c, f.carrier(), swarm.RequestInput{SwarmID: inv2.Swarm.ID, WorkerID: y.ref.WorkerID})
	if err != nil || cn2.State != continuo.ContinuationPending {
		t.Fatalf("a managed request without the policy: %+v %v", cn2, err)
	}
	ap, _, err := f.svc.Approve(ctx, f.owner, ownerCar, inv2.Swarm.ID, cn2.ID, cn2.Version)
	if err != nil || ap.ApprovedBy != f.owner.PrincipalID {
		t.Fatalf("the owner's approval: %+v %v", ap, err)
	}
}

// TestCountedTokens: the running sum a next checks pressure with is the
// ledger's sum of counted entries — after claims, redeliveries, submits,
// replays, and a rollover, which starts it again from the capsule.
func TestCountedTokens(t *testing.T) { stores.Each(t, testCountedTokens) }

func testCountedTokens(t *testing.T) {
	f, inv := newSwarm(t)
	ctx := t.Context()
	x := f.checkpointed(inv, "x")
	same := func(what string) {
		t.Helper()
		storeRead(f, func(tx store.Tx) error {
			w, err := tx.WorkerGet(ctx, x.ref.WorkerID)
			if err != nil {
				return err
			}
			es, err := tx.LedgerEntries(ctx, w.ID, w.Epoch)
			if err != nil {
				return err
			}
			var sum int64
			for _, e := range es {
				if !e.Source.Reported() {
					sum += e.Tokens
				}
			}
			if sum == 0 || w.CountedTokens != sum {
				t.Fatalf("%s: the worker counted %d tokens, its ledger %d", what, w.CountedTokens, sum)
			}
			return nil
		})
	}
	for i := range 3 {
		f.dispatch(inv.Swarm.ID, fmt.Sprint("k", i), "")
		d := f.next(x)
		if again := f.next(x); !again.Redelivery {
			t.Fatalf("no redelivery: %+v", again)
		}
		for range 2 {
			if _, err := f.svc.Submit(ctx, x.c, x.car, x.ref, d.Task.ID, strings.Repeat("result ", 100*(i+1))); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := f.svc.ReportContext(ctx, x.c, x.car, x.ref, swarm.ReportInput{Tokens: 10, Source: continuo.LedgerEstimate}); err != nil {
			t.Fatal(err)
		}
		same(fmt.Sprint("after task ", i))
	}
	p := f.prepare(inv, x)
	if _, err := f.svc.Redeem(ctx, x.c, f.carrier(), inv.Swarm.ID, p.Ticket); err != nil {
		t.Fatal(err)
	}
	same("after the rollover")
}

// TestCapsulesDoNotPileUp: after rollovers, a revoke and a lapse, only
// the continuation that bound the worker's current carrier still holds a
// capsule; every other keeps its hash.
func TestCapsulesDoNotPileUp(t *testing.T) { stores.Each(t, testCapsulesDoNotPileUp) }

func testCapsulesDoNotPileUp(t *testing.T) {
	f, inv := newSwarm(t)
	ctx := t.Context()
	x := f.checkpointed(inv, "x")
	p := f.prepare(inv, x)
	if _, _, err := f.svc.Revoke(ctx, f.owner, ownerCar, inv.Swarm.ID, p.Continuation.ID); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		p := f.prepare(inv, x)
		car := f.carrier()
		b, err := f.svc.Redeem(ctx, x.c, car, inv.Swarm.ID, p.Ticket)
		if err != nil {
			t.Fatal(err)
		}
		x = &w{c: x.c, car: car, ref: swarm.WorkerRef{WorkerID: b.Worker.ID, Epoch: b.Worker.Epoch}}
	}
	storeRead(f, func(tx store.Tx) error {
		cs, err := tx.ContinuationList(ctx, store.ContinuationListParams{WorkerID: x.ref.WorkerID})
		if err != nil {
			return err
		}
		held := 0
		for _, c := range cs {
			if c.CapsuleHash == "" {
				t.Errorf("continuation %s (%s) lost its capsule's hash", c.ID, c.State)
			}
			if c.Capsule != "" {
				held++
				if c.State != continuo.ContinuationBound || c.TargetEpoch != x.ref.Epoch {
					t.Errorf("continuation %s (%s, epoch %d) still holds its capsule", c.ID, c.State, c.TargetEpoch)
				}
			}
		}
		if len(cs) != 4 || held != 1 {
			t.Errorf("%d continuations, %d holding a capsule", len(cs), held)
		}
		return nil
	})
	// The current carrier's receipt still reads its capsule.
	if b, err := f.svc.ContinuationStatus(ctx, x.c, x.car, inv.Swarm.ID); err == nil && b.Continuation.Capsule == "" {
		t.Errorf("the current carrier's receipt has no capsule")
	}
}
