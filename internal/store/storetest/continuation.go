package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// The Continuation section pins store.ContinuationTx: continuations under
// version-guarded updates (the version must rise), at most one open
// continuation (pending, approved, reconcile_required) per worker and one
// continuation per ticket hash, each as ErrConflict, also between
// concurrent Writes; and the context ledger (ledger.go). No bound time is
// nil; continuations list newest first.

func continuationTests() []test {
	return []test{
		{"CreateGet", testContinuationCreateGet},
		{"Duplicate", testContinuationDuplicate},
		{"OneOpenPerWorker", testContinuationOneOpen},
		{"OneOpenConcurrent", testContinuationOpenConcurrent},
		{"TicketUnique", testContinuationTicketUnique},
		{"Update", testContinuationUpdate},
		{"Lookups", testContinuationLookups},
		{"List", testContinuationList},
		{"ListLimit", testContinuationListLimit},
		{"LedgerAdd", testLedgerAdd},
		{"LedgerCountsTheWorker", testLedgerCountsTheWorker},
		{"LedgerReport", testLedgerReport},
		{"LedgerEntries", testLedgerEntries},
		{"LedgerOfSwarm", testLedgerOfSwarm},
		{"LedgerPrune", testLedgerPrune},
		{"LedgerConcurrent", testLedgerConcurrent},
		{"ReadRejectsWrites", testContinuationReadRejectsWrites},
		{"Checks", testContinuationChecks},
		{"CarrierOps", testContinuationCarrierOps},
	}
}

// NewContinuation returns a pending ticket-path continuation of worker w
// from its carrier at its epoch to the next, with ticket hash "ticket-"
// and its ID, checkpoint hash "cp-" and the worker's ID, requested by the
// worker's principal, no capsule and no target yet, at version 1, stamped
// Base and expiring DefaultTicketTTL later. It does not touch a store.
func NewContinuation(w *continuo.Worker) *continuo.Continuation {
	id := continuo.NewID(continuo.PrefixContinuation, Base)
	return &continuo.Continuation{
		ID:             id,
		SwarmID:        w.SwarmID,
		WorkerID:       w.ID,
		Path:           continuo.PathTicket,
		State:          continuo.ContinuationPending,
		Version:        1,
		SourceEpoch:    w.Epoch,
		TargetEpoch:    w.Epoch + 1,
		SourceCarrier:  w.CarrierHash,
		TicketHash:     "ticket-" + id,
		CheckpointHash: "cp-" + w.ID,
		Reason:         "compact",
		RequestedBy:    w.PrincipalID,
		CreatedAt:      Base,
		UpdatedAt:      Base,
		ExpiresAt:      Base.Add(continuo.DefaultTicketTTL),
	}
}

// Continuation creates a continuation (see NewContinuation); opts may
// change it before it is created.
func Continuation(t testing.TB, s store.Store, w *continuo.Worker, opts ...func(*continuo.Continuation)) *continuo.Continuation {
	t.Helper()
	c := NewContinuation(w)
	for _, o := range opts {
		o(c)
	}
	MustWrite(t, s, func(tx store.Tx) error { return tx.ContinuationCreate(t.Context(), c) })
	return c
}

// continuationIn returns an option that puts a continuation in state; a
// bound one gets a target carrier of its own, bound a second after Base.
func continuationIn(state continuo.ContinuationState) func(*continuo.Continuation) {
	return func(c *continuo.Continuation) {
		c.State = state
		if state == continuo.ContinuationBound {
			at := Base.Add(time.Second)
			c.TargetCarrier, c.TargetSource, c.BoundAt = "carrier-next-"+c.ID, continuo.CarrierFromKey, &at
		}
	}
}

// continuationApproval makes a continuation the approval path's: no
// ticket, a request hash, and the requester as its target.
func continuationApproval(c *continuo.Continuation) {
	c.Path, c.TicketHash, c.RequestHash = continuo.PathApproval, "", "req-"+c.ID
	c.TargetCarrier, c.TargetSource = "requester-"+c.ID, continuo.CarrierFromSession
}

func normContinuation(c continuo.Continuation) continuo.Continuation {
	c.CreatedAt, c.UpdatedAt, c.ExpiresAt, c.BoundAt = trunc(c.CreatedAt), trunc(c.UpdatedAt), trunc(c.ExpiresAt), truncPtr(c.BoundAt)
	return c
}

func continuationID(c continuo.Continuation) string { return c.ID }

func mustContinuation(t testing.TB, s store.Store, id string) continuo.Continuation {
	t.Helper()
	return *mustGet(t, s, "ContinuationGet", func(tx store.Tx) (*continuo.Continuation, error) {
		return tx.ContinuationGet(t.Context(), id)
	})
}

func listContinuations(t testing.TB, s store.Store, p store.ContinuationListParams) []continuo.Continuation {
	t.Helper()
	return mustGet(t, s, fmt.Sprintf("ContinuationList(%+v)", p), func(tx store.Tx) ([]continuo.Continuation, error) {
		return tx.ContinuationList(t.Context(), p)
	})
}

func openContinuation(t testing.TB, s store.Store, workerID string) (*continuo.Continuation, error) {
	t.Helper()
	return read(t, s, func(tx store.Tx) (*continuo.Continuation, error) { return tx.ContinuationOpen(t.Context(), workerID) })
}

func createContinuation(t testing.TB, s store.Store, cs ...*continuo.Continuation) error {
	return s.Write(t.Context(), func(tx store.Tx) error {
		for _, c := range cs {
			if err := tx.ContinuationCreate(t.Context(), c); err != nil {
				return err
			}
		}
		return nil
	})
}

func writeContinuation(t testing.TB, s store.Store, c *continuo.Continuation, prevVersion int64) error {
	return s.Write(t.Context(), func(tx store.Tx) error { return updateContinuation(t.Context(), tx, c, prevVersion) })
}

// Every field round-trips, set and unset: a bound ticket-path
// continuation with a capsule, and a bare pending one of the approval
// path; times at millisecond precision in UTC.
func testContinuationCreateGet(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	bound := Base.Add(2*time.Second + 1500*time.Microsecond)
	full := Continuation(t, s, f.W1, func(c *continuo.Continuation) {
		c.State, c.Version, c.SourceEpoch, c.TargetEpoch = continuo.ContinuationBound, 4, 6, 7
		c.SourceCarrier, c.TargetCarrier, c.TargetSource = "carrier \"ü\"", "carrier-next", continuo.CarrierFromMeta
		c.TicketHash, c.CheckpointHash, c.Capsule, c.CapsuleHash = "ticket-hash", "cp-hash", `{"v":1,"label":"ü"}`, "capsule-hash"
		c.Reason, c.RequestedBy, c.RequestHash = "pressure 0.9 \"ü\"", "planner", "req-hash"
		c.CarrierOp, c.CarrierProc, c.CarrierToken, c.ApprovedBy = continuo.OpSucceeded, "host 42 7", "tok_x", continuo.ApprovedByPolicy
		c.CreatedAt, c.UpdatedAt, c.ExpiresAt, c.BoundAt = Base.Add(1500*time.Microsecond), bound, Base.Add(time.Hour+1500*time.Microsecond), &bound
	})
	bare := Continuation(t, s, f.W2, continuationApproval, func(c *continuo.Continuation) {
		c.SourceEpoch, c.TargetEpoch, c.TargetCarrier, c.TargetSource = 0, 1, "", ""
		c.CheckpointHash, c.Reason, c.RequestedBy, c.RequestHash = "", "", "", ""
	})
	for _, want := range []*continuo.Continuation{full, bare} {
		same(t, "continuation "+want.ID, mustContinuation(t, s, want.ID), *want, normContinuation)
	}
	got := mustContinuation(t, s, full.ID)
	if !got.CreatedAt.Equal(Base.Add(time.Millisecond)) || got.CreatedAt.Location() != time.UTC ||
		got.BoundAt == nil || !got.BoundAt.Equal(bound.Truncate(time.Millisecond)) || got.BoundAt.Location() != time.UTC {
		t.Errorf("CreatedAt %v, BoundAt %s; want milliseconds kept, in UTC", got.CreatedAt, showTime(got.BoundAt))
	}
	if got := mustContinuation(t, s, bare.ID); got.BoundAt != nil || got.TicketHash != "" || got.Capsule != "" {
		t.Errorf("a bare continuation read back bound at %s, ticket %q, capsule %q; want none", showTime(got.BoundAt), got.TicketHash, got.Capsule)
	}
}

// An existing ID is ErrConflict, and the Write that met it keeps nothing.
func testContinuationDuplicate(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	first := Continuation(t, s, f.W1, continuationIn(continuo.ContinuationBound))
	other, dup := NewContinuation(f.W2), NewContinuation(f.W1)
	dup.ID, dup.State = first.ID, continuo.ContinuationRevoked
	wantErr(t, createContinuation(t, s, other, dup), store.ErrConflict, "ContinuationCreate of an existing ID")
	sameList(t, "continuations after the refused duplicate", listContinuations(t, s, store.ContinuationListParams{}),
		[]continuo.Continuation{*first}, normContinuation)
}

// A worker has at most one open continuation: a second, in any open
// state, is ErrConflict whether created or made open again by an update,
// and the Write keeps nothing. Bound, revoked and expired ones are any
// number, and another worker's open one is never in the way.
func testContinuationOneOpen(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	var ended []*continuo.Continuation
	for _, state := range []continuo.ContinuationState{continuo.ContinuationBound, continuo.ContinuationRevoked, continuo.ContinuationExpired} {
		ended = append(ended, Continuation(t, s, f.W1, continuationIn(state)))
	}
	open := Continuation(t, s, f.W1)
	theirs := Continuation(t, s, f.W2, continuationApproval, continuationIn(continuo.ContinuationApproved))
	for _, state := range []continuo.ContinuationState{continuo.ContinuationPending, continuo.ContinuationApproved,
		continuo.ContinuationReconcileRequired} {
		second, bystander := NewContinuation(f.W1), NewContinuation(f.W2)
		second.State, bystander.State = state, continuo.ContinuationRevoked
		wantErr(t, createContinuation(t, s, bystander, second), store.ErrConflict, "a second "+string(state)+" continuation of one worker")
	}
	revoked := ended[1]
	for _, state := range []continuo.ContinuationState{continuo.ContinuationPending, continuo.ContinuationReconcileRequired} {
		again := *revoked
		again.State, again.Version = state, revoked.Version+1
		wantErr(t, writeContinuation(t, s, &again, revoked.Version), store.ErrInvalidState,
			"ContinuationUpdate reopening a revoked continuation as "+string(state))
	}
	want := []continuo.Continuation{*open, *ended[2], *ended[1], *ended[0]}
	sameList(t, "the worker's continuations after the refusals", listContinuations(t, s, store.ContinuationListParams{WorkerID: f.W1.ID}),
		want, normContinuation)
	sameList(t, "the other worker's", listContinuations(t, s, store.ContinuationListParams{WorkerID: f.W2.ID}),
		[]continuo.Continuation{*theirs}, normContinuation)

	// Once the open one is bound, another may open.
	done := *open
	continuationIn(continuo.ContinuationBound)(&done)
	done.Version = 2
	noErr(t, writeContinuation(t, s, &done, 1), "binding the open continuation")
	reopened := NewContinuation(f.W1)
	noErr(t, createContinuation(t, s, reopened), "a new open continuation after the open one was bound")
	wantErr(t, createContinuation(t, s, NewContinuation(f.W1)), store.ErrConflict, "a second open continuation beside the new one")
	if got, err := openContinuation(t, s, f.W1.ID); err != nil || got.ID != reopened.ID {
		t.Errorf("ContinuationOpen = %v, %v; want the new %s", got, err, reopened.ID)
	}
}

// Workers racing to open a continuation of one worker, each in a Write
// of its own: exactly one succeeds, every other gets ErrConflict.
func testContinuationOpenConcurrent(t *testing.T, s store.Store) {
	const n = 8
	f := setupSwarm(t, s)
	cs := make([]*continuo.Continuation, n)
	for i := range cs {
		cs[i] = NewContinuation(f.W1)
	}
	errs := parallel(n, func(i int) error { return createContinuation(t, s, cs[i]) })
	var won []string
	for i, err := range errs {
		switch {
		case err == nil:
			won = append(won, cs[i].ID)
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("racer %d: %v, want success or ErrConflict", i, err)
		}
	}
	if len(won) != 1 {
		t.Fatalf("%d racers created an open continuation of one worker, want 1", len(won))
	}
	if got := idsOf(listContinuations(t, s, store.ContinuationListParams{WorkerID: f.W1.ID}), continuationID); !slices.Equal(got, won) {
		t.Errorf("the worker's continuations after the race: %v, want the winner's %v", got, won)
	}
}

// A ticket hash names one continuation, ever: again (for any worker,
// whatever the first's state) is ErrConflict and nothing is kept. The
// approval path's continuations have none, and share it freely.
func testContinuationTicketUnique(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	first := Continuation(t, s, f.W1, continuationIn(continuo.ContinuationBound))
	for _, w := range []*continuo.Worker{f.W1, f.W2} {
		dup := NewContinuation(w)
		dup.TicketHash = first.TicketHash
		wantErr(t, createContinuation(t, s, dup), store.ErrConflict, "ContinuationCreate of a used ticket hash")
	}
	a := Continuation(t, s, f.W2, continuationApproval, continuationIn(continuo.ContinuationRevoked))
	b := Continuation(t, s, f.W2, continuationApproval)
	sameList(t, "continuations", listContinuations(t, s, store.ContinuationListParams{}),
		[]continuo.Continuation{*b, *a, *first}, normContinuation)
}

// ContinuationUpdate replaces the state, version, target carrier and
// source, capsule and its hash, updated_at, expires_at and bound_at;
// everything else stays as created. The version must rise (by any
// amount); a stale one is ErrStale and an unknown continuation
// ErrNotFound, and neither changes anything.
func testContinuationUpdate(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	c := Continuation(t, s, f.W1)
	at := Base.Add(time.Minute + 1500*time.Microsecond)
	next := *c
	next.SwarmID, next.WorkerID, next.Path, next.SourceEpoch, next.TargetEpoch = "swm_x", "wkr_x", continuo.PathApproval, 8, 9
	next.SourceCarrier, next.TicketHash, next.CheckpointHash, next.Reason = "x", "x", "x", "x"
	next.RequestedBy, next.RequestHash, next.CreatedAt = "x", "x", Base.Add(time.Hour)
	next.State, next.Version, next.TargetCarrier, next.TargetSource = continuo.ContinuationReconcileRequired, 3, "carrier-b", continuo.CarrierFromSession
	next.Capsule, next.CapsuleHash, next.UpdatedAt, next.ExpiresAt = `{"v":1}`, "capsule-1", at, at.Add(time.Minute)
	noErr(t, writeContinuation(t, s, &next, 1), "ContinuationUpdate")
	want := *c
	want.State, want.Version, want.TargetCarrier, want.TargetSource = next.State, 3, next.TargetCarrier, next.TargetSource
	want.Capsule, want.CapsuleHash, want.UpdatedAt, want.ExpiresAt = next.Capsule, next.CapsuleHash, at, next.ExpiresAt
	same(t, "continuation after ContinuationUpdate", mustContinuation(t, s, c.ID), want, normContinuation)

	// Bound, its capsule gone.
	bound := want
	bound.State, bound.Version, bound.Capsule, bound.CapsuleHash, bound.BoundAt = continuo.ContinuationBound, 4, "", "", &at
	noErr(t, writeContinuation(t, s, &bound, 3), "ContinuationUpdate binding it")
	same(t, "continuation after binding", mustContinuation(t, s, c.ID), bound, normContinuation)

	late := bound
	late.State, late.BoundAt, late.Version = continuo.ContinuationRevoked, nil, 5
	wantErr(t, writeContinuation(t, s, &late, 3), store.ErrInvalidState, "ContinuationUpdate of a bound one from version 3 at 4")
	for _, v := range []int64{4, 2} {
		late.Version = v
		if err := writeContinuation(t, s, &late, 4); err == nil || errors.Is(err, store.ErrStale) {
			t.Errorf("ContinuationUpdate to version %d from 4: %v, want an error (the version must rise)", v, err)
		}
	}
	same(t, "continuation after the refused updates", mustContinuation(t, s, c.ID), bound, normContinuation)
	unknown := NewContinuation(f.W2)
	unknown.Version = 2
	wantErr(t, writeContinuation(t, s, unknown, 1), store.ErrNotFound, "ContinuationUpdate of an unknown continuation")
	if _, err := openContinuation(t, s, f.W2.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the unknown continuation's update created something: ContinuationOpen = %v", err)
	}
}

// ContinuationByTicket finds a continuation by its ticket hash in any
// state, none ("") never; ContinuationOpen finds a worker's open one, in
// any open state, and is ErrNotFound when it has none.
func testContinuationLookups(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := setupSwarm(t, s)
	w3 := SwarmWorker(t, s, f.Swarm.ID, "", "three")
	used := Continuation(t, s, f.W1, continuationIn(continuo.ContinuationBound))
	open := Continuation(t, s, f.W1)
	approved := Continuation(t, s, f.W2, continuationApproval, continuationIn(continuo.ContinuationApproved))
	Continuation(t, s, w3, continuationIn(continuo.ContinuationExpired))
	for _, c := range []*continuo.Continuation{used, open} {
		got := mustGet(t, s, "ContinuationByTicket", func(tx store.Tx) (*continuo.Continuation, error) {
			return tx.ContinuationByTicket(ctx, c.TicketHash)
		})
		same(t, "ContinuationByTicket", *got, *c, normContinuation)
	}
	for _, hash := range []string{"", "no-such-ticket"} {
		_, err := read(t, s, func(tx store.Tx) (*continuo.Continuation, error) { return tx.ContinuationByTicket(ctx, hash) })
		wantErr(t, err, store.ErrNotFound, fmt.Sprintf("ContinuationByTicket(%q)", hash))
	}
	for _, want := range []*continuo.Continuation{open, approved} {
		got, err := openContinuation(t, s, want.WorkerID)
		noErr(t, err, "ContinuationOpen")
		same(t, "ContinuationOpen", *got, *want, normContinuation)
	}
	_, err := openContinuation(t, s, w3.ID)
	wantErr(t, err, store.ErrNotFound, "ContinuationOpen of a worker with only an expired continuation")
	reconcile := Continuation(t, s, w3, continuationIn(continuo.ContinuationReconcileRequired))
	if got, err := openContinuation(t, s, w3.ID); err != nil || got.ID != reconcile.ID {
		t.Errorf("ContinuationOpen = %v, %v; want the reconcile_required %s", got, err, reconcile.ID)
	}
	_, err = openContinuation(t, s, continuo.NewID(continuo.PrefixWorker, Base))
	wantErr(t, err, store.ErrNotFound, "ContinuationOpen of an unknown worker")
	_, err = read(t, s, func(tx store.Tx) (*continuo.Continuation, error) {
		return tx.ContinuationGet(ctx, continuo.NewID(continuo.PrefixContinuation, Base))
	})
	wantErr(t, err, store.ErrNotFound, "ContinuationGet of an unknown continuation")
}

// Every filter of ContinuationList applies, together with the others,
// newest first; ExpiresBefore is strict.
func testContinuationList(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	sw2 := Swarm(t, s, f.Group.ID, "")
	w3 := SwarmWorker(t, s, sw2.ID, "", "three")
	expires := func(d time.Duration) func(*continuo.Continuation) {
		return func(c *continuo.Continuation) { c.ExpiresAt = Base.Add(d) }
	}
	target := func(hash string) func(*continuo.Continuation) {
		return func(c *continuo.Continuation) { c.TargetCarrier = hash }
	}
	a := Continuation(t, s, f.W1, continuationIn(continuo.ContinuationBound), target("t1"), expires(time.Minute))
	b := Continuation(t, s, f.W2, continuationApproval, target("t1"), expires(5*time.Minute))
	c := Continuation(t, s, w3, continuationIn(continuo.ContinuationExpired), expires(time.Minute))
	d := Continuation(t, s, f.W1, continuationIn(continuo.ContinuationRevoked), expires(20*time.Minute))
	e := Continuation(t, s, f.W1, expires(2*time.Minute))
	g := Continuation(t, s, w3, continuationApproval, continuationIn(continuo.ContinuationReconcileRequired), target("t2"), expires(3*time.Minute))
	id := func(cs ...*continuo.Continuation) []string {
		out := []string{}
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	pending, approved, reconcile := continuo.ContinuationPending, continuo.ContinuationApproved, continuo.ContinuationReconcileRequired
	open := []continuo.ContinuationState{pending, approved, reconcile}
	for _, tc := range []struct {
		p    store.ContinuationListParams
		want []string
	}{
		{store.ContinuationListParams{}, id(g, e, d, c, b, a)},
		{store.ContinuationListParams{SwarmID: f.Swarm.ID}, id(e, d, b, a)},
		{store.ContinuationListParams{SwarmID: sw2.ID}, id(g, c)},
		{store.ContinuationListParams{WorkerID: f.W1.ID}, id(e, d, a)},
		{store.ContinuationListParams{WorkerID: f.W1.ID, SwarmID: sw2.ID}, id()},
		{store.ContinuationListParams{WorkerID: f.W1.ID, States: []continuo.ContinuationState{continuo.ContinuationRevoked, continuo.ContinuationBound}}, id(d, a)},
		{store.ContinuationListParams{TargetCarrier: "t1"}, id(b, a)},
		{store.ContinuationListParams{TargetCarrier: "t1", WorkerID: f.W2.ID}, id(b)},
		{store.ContinuationListParams{TargetCarrier: "t2"}, id(g)},
		{store.ContinuationListParams{TargetCarrier: "none"}, id()},
		{store.ContinuationListParams{States: open}, id(g, e, b)},
		{store.ContinuationListParams{States: []continuo.ContinuationState{reconcile, pending, approved}}, id(g, e, b)},
		{store.ContinuationListParams{States: []continuo.ContinuationState{pending, approved}}, id(e, b)},
		{store.ContinuationListParams{States: []continuo.ContinuationState{continuo.ContinuationExpired}}, id(c)},
		{store.ContinuationListParams{States: open, ExpiresBefore: Base.Add(4 * time.Minute)}, id(g, e)},
		{store.ContinuationListParams{States: open, ExpiresBefore: Base.Add(4 * time.Minute), SwarmID: f.Swarm.ID}, id(e)},
		{store.ContinuationListParams{States: []continuo.ContinuationState{pending, approved}, ExpiresBefore: Base.Add(4 * time.Minute)}, id(e)},
		{store.ContinuationListParams{States: []continuo.ContinuationState{reconcile}, ExpiresBefore: Base.Add(4 * time.Minute)}, id(g)},
		{store.ContinuationListParams{ExpiresBefore: Base.Add(2 * time.Minute)}, id(c, a)},
		{store.ContinuationListParams{Limit: 2}, id(g, e)},
		{store.ContinuationListParams{SwarmID: f.Swarm.ID, Limit: 1}, id(e)},
		{store.ContinuationListParams{SwarmID: f.Swarm.ID, BeforeID: e.ID, Limit: 2}, id(d, b)},
		{store.ContinuationListParams{BeforeID: c.ID}, id(b, a)},
		{store.ContinuationListParams{BeforeID: a.ID}, id()},
	} {
		if got := idsOf(listContinuations(t, s, tc.p), continuationID); !slices.Equal(got, tc.want) {
			t.Errorf("ContinuationList(%+v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	sameList(t, "ContinuationList", listContinuations(t, s, store.ContinuationListParams{}),
		[]continuo.Continuation{*g, *e, *d, *c, *b, *a}, normContinuation)
}

// A limit ≤ 0 is 100, and keeps the newest.
func testContinuationListLimit(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := setupSwarm(t, s)
	var all []string
	MustWrite(t, s, func(tx store.Tx) error {
		var created []string
		for range 101 {
			c := NewContinuation(f.W1)
			c.State = continuo.ContinuationRevoked
			if err := tx.ContinuationCreate(ctx, c); err != nil {
				return err
			}
			created = append([]string{c.ID}, created...)
		}
		all = created
		return nil
	})
	for _, tc := range []struct {
		limit int
		want  []string
	}{{0, all[:100]}, {-1, all[:100]}, {500, all}} {
		got := idsOf(listContinuations(t, s, store.ContinuationListParams{WorkerID: f.W1.ID, Limit: tc.limit}), continuationID)
		if !slices.Equal(got, tc.want) {
			t.Errorf("ContinuationList(Limit %d): %d continuations, want the newest %d, newest first", tc.limit, len(got), len(tc.want))
		}
	}
}

// testContinuationCarrierOps: a carrier operation's state, process and
// token are kept by update; the list filters by the state; the workers
// whose continuity state is compact_required are listed by ID.
func testContinuationCarrierOps(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := setupSwarm(t, s)
	c := Continuation(t, s, f.W1)
	MustWrite(t, s, func(tx store.Tx) error {
		c.Version, c.CarrierOp, c.CarrierProc, c.CarrierToken, c.ApprovedBy = 2, continuo.OpInFlight, "server 1 2", "tok_a", "prn_owner"
		return updateContinuation(ctx, tx, c, 1)
	})
	got := mustContinuation(t, s, c.ID)
	if got.CarrierOp != continuo.OpInFlight || got.CarrierProc != "server 1 2" || got.CarrierToken != "tok_a" || got.ApprovedBy != "prn_owner" {
		t.Fatalf("after update: %+v", got)
	}
	Continuation(t, s, f.W2)
	var inFlight []continuo.Continuation
	MustRead(t, s, func(tx store.Tx) (err error) {
		inFlight, err = tx.ContinuationList(ctx, store.ContinuationListParams{CarrierOp: continuo.OpInFlight})
		return err
	})
	if len(inFlight) != 1 || inFlight[0].ID != c.ID {
		t.Fatalf("in flight: %+v", inFlight)
	}
	MustWrite(t, s, func(tx store.Tx) error {
		w, err := tx.WorkerGet(ctx, f.W2.ID)
		if err != nil {
			return err
		}
		prev := w.Revision
		w.ContinuityState, w.Revision = continuo.ContinuityCompactRequired, prev+1
		return updateWorker(ctx, tx, w, prev)
	})
	var ws []continuo.Worker
	MustRead(t, s, func(tx store.Tx) (err error) {
		ws, err = tx.WorkersCompacting(ctx, 0)
		return err
	})
	if len(ws) != 1 || ws[0].ID != f.W2.ID {
		t.Fatalf("compacting: %+v", ws)
	}
}
