package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// continuityWorld is a worker's open continuation and a count of its
// ledger, for tests that check nothing changed; the second worker has
// neither.
type continuityWorld struct {
	*swarmFixture
	Open  *continuo.Continuation
	Count continuo.LedgerEntry
}

func setupContinuity(t testing.TB, s store.Store) *continuityWorld {
	t.Helper()
	w := &continuityWorld{swarmFixture: setupSwarm(t, s)}
	w.Open = Continuation(t, s, w.W1)
	w.Count = ledgerEntry(w.W1.ID, 1, continuo.LedgerTaskPrompt, "tsk_a", 100, Base)
	ledgerAdd(t, s, w.Count)
	return w
}

// unchanged fails the test unless the store holds w exactly.
func (w *continuityWorld) unchanged(t testing.TB, s store.Store) {
	t.Helper()
	sameList(t, "continuations", listContinuations(t, s, store.ContinuationListParams{}), []continuo.Continuation{*w.Open}, normContinuation)
	sum := w.Count
	sum.Ref = ""
	sameList(t, "ledger entries", ledgerEntries(t, s, w.W1.ID, 1), []continuo.LedgerEntry{sum}, normLedger)
	for _, epoch := range []int64{0, 2} {
		if got := ledgerEntries(t, s, w.W1.ID, epoch); len(got) != 0 {
			t.Errorf("ledger entries of epoch %d: %v", epoch, got)
		}
	}
	if got := ledgerEntries(t, s, w.W2.ID, 1); len(got) != 0 {
		t.Errorf("ledger entries of the second worker: %v", got)
	}
}

// Inside Read every ContinuationTx write fails and changes nothing.
func testContinuationReadRejectsWrites(t *testing.T, s store.Store) {
	ctx := t.Context()
	w := setupContinuity(t, s)
	wantRefusedInRead(t, s, map[string]func(tx store.Tx) error{
		"ContinuationCreate": func(tx store.Tx) error { return tx.ContinuationCreate(ctx, NewContinuation(w.W2)) },
		"ContinuationUpdate": func(tx store.Tx) error {
			next := *w.Open
			next.State, next.Version = continuo.ContinuationRevoked, 2
			return updateContinuation(ctx, tx, &next, 1)
		},
		"LedgerAdd": func(tx store.Tx) error {
			_, err := tx.LedgerAdd(ctx, ledgerEntry(w.W2.ID, 1, continuo.LedgerTaskPrompt, "tsk_a", 1, Base))
			return err
		},
		"LedgerReport": func(tx store.Tx) error {
			return tx.LedgerReport(ctx, ledgerEntry(w.W2.ID, 1, continuo.LedgerEstimate, "", 1, Base))
		},
		"LedgerPrune": func(tx store.Tx) error { return tx.LedgerPrune(ctx, w.W1.ID, 5) },
	})
	w.unchanged(t, s)
}

// testContinuationChecks: the schema refuses what no continuity service
// should write (unknown states, paths, target sources, ID prefixes and
// parents; a target epoch other than the next; bound without a time or a
// target, or a time while not bound; the ticket path without a ticket
// and the approval path with one; a capsule that is not JSON; a zero
// version; a ledger entry of an unknown source or worker, or negative),
// as a CHECK, cast or foreign-key error — never ErrConflict — and nothing
// is kept.
func testContinuationChecks(t *testing.T, s store.Store) {
	ctx := t.Context()
	w := setupContinuity(t, s)
	at := Base.Add(time.Minute)
	create := func(o func(*continuo.Continuation)) func(tx store.Tx) error {
		return func(tx store.Tx) error { c := NewContinuation(w.W2); o(c); return tx.ContinuationCreate(ctx, c) }
	}
	update := func(o func(*continuo.Continuation)) func(tx store.Tx) error {
		return func(tx store.Tx) error { c := *w.Open; c.Version = 2; o(&c); return updateContinuation(ctx, tx, &c, 1) }
	}
	add := func(o func(*continuo.LedgerEntry)) func(tx store.Tx) error {
		return func(tx store.Tx) error {
			e := ledgerEntry(w.W2.ID, 1, continuo.LedgerTaskPrompt, "tsk_a", 1, Base)
			o(&e)
			_, err := tx.LedgerAdd(ctx, e)
			return err
		}
	}
	bound := continuationIn(continuo.ContinuationBound)
	bad := map[string]func(tx store.Tx) error{
		"IDPrefix":            create(func(c *continuo.Continuation) { c.ID = continuo.NewID(continuo.PrefixTask, Base) }),
		"UnknownState":        create(func(c *continuo.Continuation) { c.State = "paused" }),
		"UnknownPath":         create(func(c *continuo.Continuation) { c.Path = "magic" }),
		"UnknownSource":       create(func(c *continuo.Continuation) { c.TargetSource = "cookie" }),
		"OfUnknownWorker":     create(func(c *continuo.Continuation) { c.WorkerID = continuo.NewID(continuo.PrefixWorker, Base) }),
		"OfUnknownSwarm":      create(func(c *continuo.Continuation) { c.SwarmID = continuo.NewID(continuo.PrefixSwarm, Base) }),
		"ZeroVersion":         create(func(c *continuo.Continuation) { c.Version = 0 }),
		"NegativeEpoch":       create(func(c *continuo.Continuation) { c.SourceEpoch, c.TargetEpoch = -1, 0 }),
		"TargetSameEpoch":     create(func(c *continuo.Continuation) { c.TargetEpoch = c.SourceEpoch }),
		"TargetEpochPlus2":    create(func(c *continuo.Continuation) { c.TargetEpoch = c.SourceEpoch + 2 }),
		"BoundWithoutTime":    create(func(c *continuo.Continuation) { bound(c); c.BoundAt = nil }),
		"BoundWithoutTarget":  create(func(c *continuo.Continuation) { bound(c); c.TargetCarrier = "" }),
		"BoundAtWhilePending": create(func(c *continuo.Continuation) { c.BoundAt = &at }),
		"TicketPathNoTicket":  create(func(c *continuo.Continuation) { c.TicketHash = "" }),
		"ApprovalWithTicket":  create(func(c *continuo.Continuation) { continuationApproval(c); c.TicketHash = "ticket-x" }),
		"CapsuleNotJSON":      create(func(c *continuo.Continuation) { c.Capsule = "{" }),
		"UnknownStateUpdate":  update(func(c *continuo.Continuation) { c.State = "paused" }),
		"BoundWithoutTimeUpdate": update(func(c *continuo.Continuation) {
			c.State, c.TargetCarrier, c.TargetSource = continuo.ContinuationBound, "carrier-b", continuo.CarrierFromKey
		}),
		"BoundAtWhileOpenUpdate": update(func(c *continuo.Continuation) { c.BoundAt = &at }),
		"CapsuleNotJSONUpdate":   update(func(c *continuo.Continuation) { c.Capsule = "capsule" }),
		"LedgerUnknownSource":    add(func(e *continuo.LedgerEntry) { e.Source = "guess" }),
		"LedgerNegativeTokens":   add(func(e *continuo.LedgerEntry) { e.Tokens = -1 }),
		"LedgerNegativeEpoch":    add(func(e *continuo.LedgerEntry) { e.Epoch = -1 }),
		"LedgerOfUnknownWorker":  add(func(e *continuo.LedgerEntry) { e.WorkerID = continuo.NewID(continuo.PrefixWorker, Base) }),
		"LedgerReportNegative": func(tx store.Tx) error {
			return tx.LedgerReport(ctx, ledgerEntry(w.W2.ID, 1, continuo.LedgerEstimate, "", -1, Base))
		},
		"LedgerReportUnknownWorker": func(tx store.Tx) error {
			return tx.LedgerReport(ctx, ledgerEntry(continuo.NewID(continuo.PrefixWorker, Base), 1, continuo.LedgerEstimate, "", 1, Base))
		},
	}
	for name, fn := range bad {
		t.Run(name, func(t *testing.T) {
			err := s.Write(ctx, fn)
			if err == nil {
				t.Fatal("the schema accepted it")
			}
			if errors.Is(err, store.ErrConflict) {
				t.Errorf("a CHECK or foreign-key violation is reported as ErrConflict: %v", err)
			}
		})
	}
	w.unchanged(t, s)
}
