package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// The swarm's attempts (see swarm.go for the section's rules).

func normAttempt(a continuo.Attempt) continuo.Attempt {
	a.LeaseUntil, a.ClaimedAt, a.AckedAt, a.EndedAt = trunc(a.LeaseUntil), trunc(a.ClaimedAt), truncPtr(a.AckedAt), truncPtr(a.EndedAt)
	return a
}

func attemptID(a continuo.Attempt) string { return a.ID }

func mustAttempt(t testing.TB, s store.Store, id string) continuo.Attempt {
	t.Helper()
	return *mustGet(t, s, "AttemptGet", func(tx store.Tx) (*continuo.Attempt, error) { return tx.AttemptGet(t.Context(), id) })
}

func activeAttempts(t testing.TB, s store.Store, p store.AttemptListParams) []continuo.Attempt {
	t.Helper()
	return mustGet(t, s, fmt.Sprintf("AttemptsActive(%+v)", p), func(tx store.Tx) ([]continuo.Attempt, error) {
		return tx.AttemptsActive(t.Context(), p)
	})
}

// attemptEnded returns an option that ends an attempt (acked a second
// after Base, ended two seconds after) in state, with no lease.
func attemptEnded(state continuo.AttemptState) func(*continuo.Attempt) {
	return func(a *continuo.Attempt) {
		acked, ended := Base.Add(time.Second), Base.Add(2*time.Second)
		a.State, a.AckedAt, a.EndedAt, a.LeaseUntil = state, &acked, &ended, time.Time{}
	}
}

// attemptRunning makes an attempt running, acked a second after Base.
func attemptRunning(a *continuo.Attempt) {
	acked := Base.Add(time.Second)
	a.State, a.AckedAt = continuo.AttemptRunning, &acked
}

// heldTask creates a task of swarmID claimed by workerID, at attempt n.
func heldTask(t testing.TB, s store.Store, swarmID, workerID, key string, n int) *continuo.Task {
	t.Helper()
	return SwarmTask(t, s, swarmID, key, func(k *continuo.Task) { k.WorkerID, k.State, k.Attempt = workerID, continuo.TaskClaimed, n })
}

// Every field round-trips, set and unset: a running attempt with a lease
// and an ack, an ended one with no lease; AttemptOf finds each by number.
func testAttemptCreateGet(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := setupSwarm(t, s)
	k := heldTask(t, s, f.Swarm.ID, f.W1.ID, "k", 2)
	lease := Base.Add(time.Minute + 1500*time.Microsecond)
	first := SwarmAttempt(t, s, k, "host-1 42", func(a *continuo.Attempt) {
		a.Number, a.Epoch, a.ClaimedAt = 1, 0, Base.Add(-time.Hour+1500*time.Microsecond)
		attemptEnded(continuo.AttemptInDoubt)(a)
	})
	second := SwarmAttempt(t, s, k, "host-2 \"ü\"", func(a *continuo.Attempt) {
		attemptRunning(a)
		a.Epoch, a.LeaseUntil = 3, lease
	})
	for _, want := range []*continuo.Attempt{first, second} {
		same(t, "attempt "+want.ID, mustAttempt(t, s, want.ID), *want, normAttempt)
		got := mustGet(t, s, "AttemptOf", func(tx store.Tx) (*continuo.Attempt, error) { return tx.AttemptOf(ctx, k.ID, want.Number) })
		same(t, fmt.Sprintf("attempt %d of the task", want.Number), *got, *want, normAttempt)
	}
	if got := mustAttempt(t, s, second.ID); !got.LeaseUntil.Equal(lease.Truncate(time.Millisecond)) || got.LeaseUntil.Location() != time.UTC {
		t.Errorf("LeaseUntil %v, want %v in UTC", got.LeaseUntil, lease.Truncate(time.Millisecond))
	}
	if got := mustAttempt(t, s, first.ID); !got.LeaseUntil.IsZero() {
		t.Errorf("an ended attempt read back lease %v, want none", got.LeaseUntil)
	}
}

// An existing ID or number of the task is ErrConflict, and so is a second
// active attempt of one task; the Write keeps nothing. Ended attempts are
// any number, and another task's active attempt is no conflict.
func testAttemptDuplicate(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := setupSwarm(t, s)
	k := heldTask(t, s, f.Swarm.ID, f.W1.ID, "k", 3)
	other := heldTask(t, s, f.Swarm.ID, f.W2.ID, "other", 1)
	ended := SwarmAttempt(t, s, k, "s", func(a *continuo.Attempt) { a.Number = 1; attemptEnded(continuo.AttemptRequeued)(a) })
	SwarmAttempt(t, s, k, "s", func(a *continuo.Attempt) { a.Number = 2; attemptEnded(continuo.AttemptSubmitted)(a) })
	active := SwarmAttempt(t, s, k, "s")
	SwarmAttempt(t, s, other, "s")
	byID, byNumber, secondActive := NewSwarmAttempt(k, "s"), NewSwarmAttempt(k, "s"), NewSwarmAttempt(k, "s")
	byID.ID, byID.Number = active.ID, 9
	attemptEnded(continuo.AttemptFailed)(byNumber)
	byNumber.Number = ended.Number
	secondActive.Number = 4
	attemptRunning(secondActive)
	for name, dup := range map[string]*continuo.Attempt{"an existing ID": byID, "an existing number": byNumber, "a second active attempt": secondActive} {
		fresh := NewSwarmAttempt(other, "s")
		fresh.Number = 7
		attemptEnded(continuo.AttemptFailed)(fresh)
		err := s.Write(ctx, func(tx store.Tx) error {
			if err := tx.AttemptCreate(ctx, fresh); err != nil {
				return err
			}
			return tx.AttemptCreate(ctx, dup)
		})
		wantErr(t, err, store.ErrConflict, "AttemptCreate of "+name)
		_, err = read(t, s, func(tx store.Tx) (*continuo.Attempt, error) { return tx.AttemptGet(ctx, fresh.ID) })
		wantErr(t, err, store.ErrNotFound, "AttemptGet of an attempt created in the failed Write ("+name+")")
	}
	same(t, "the active attempt after the refused ones", mustAttempt(t, s, active.ID), *active, normAttempt)
	if n := len(activeAttempts(t, s, store.AttemptListParams{})); n != 2 {
		t.Errorf("%d active attempts after the refused ones, want 2", n)
	}
}

// AttemptUpdate replaces the state, lease, ack and end if the state is
// still the one named; the task, swarm, number, worker, epoch, server and
// claim time stay. Another state is ErrStale and an unknown attempt
// ErrNotFound, and neither changes anything; making a second attempt of
// a task active is ErrConflict.
func testAttemptUpdate(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := setupSwarm(t, s)
	k := heldTask(t, s, f.Swarm.ID, f.W1.ID, "k", 2)
	old := SwarmAttempt(t, s, k, "s", func(a *continuo.Attempt) { a.Number = 1; attemptEnded(continuo.AttemptRequeued)(a) })
	a := SwarmAttempt(t, s, k, "host-1")
	next := *a
	next.TaskID, next.SwarmID, next.Number, next.WorkerID, next.Epoch = "tsk_x", "swm_x", 9, f.W2.ID, 7
	next.Server, next.ClaimedAt = "host-2", Base.Add(time.Hour)
	attemptRunning(&next)
	next.LeaseUntil = Base.Add(5 * time.Minute)
	MustWrite(t, s, func(tx store.Tx) error { return updateAttempt(ctx, tx, &next, continuo.AttemptClaimed) })
	want := *a
	want.State, want.AckedAt, want.LeaseUntil = next.State, next.AckedAt, next.LeaseUntil
	same(t, "attempt after AttemptUpdate", mustAttempt(t, s, a.ID), want, normAttempt)

	late := want
	attemptEnded(continuo.AttemptSubmitted)(&late)
	wantErr(t, s.Write(ctx, func(tx store.Tx) error { return updateAttempt(ctx, tx, &late, continuo.AttemptClaimed) }), store.ErrStale,
		"AttemptUpdate from claimed of a running attempt")
	same(t, "attempt after the stale update", mustAttempt(t, s, a.ID), want, normAttempt)
	back := *old
	back.State, back.EndedAt = continuo.AttemptRunning, nil
	wantErr(t, s.Write(ctx, func(tx store.Tx) error { return updateAttempt(ctx, tx, &back, continuo.AttemptRequeued) }), store.ErrConflict,
		"AttemptUpdate making a second attempt of a task active")
	same(t, "the old attempt after the refused update", mustAttempt(t, s, old.ID), *old, normAttempt)
	MustWrite(t, s, func(tx store.Tx) error { return updateAttempt(ctx, tx, &late, continuo.AttemptRunning) })
	same(t, "attempt after it ended", mustAttempt(t, s, a.ID), late, normAttempt)
	unknown := NewSwarmAttempt(k, "s")
	wantErr(t, s.Write(ctx, func(tx store.Tx) error { return updateAttempt(ctx, tx, unknown, continuo.AttemptClaimed) }), store.ErrNotFound,
		"AttemptUpdate of an unknown attempt")
}

// AttemptsActive lists claimed and running attempts by ID, as every
// filter given selects; no lease (0) is before every time.
func testAttemptsActive(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	other := Swarm(t, s, f.Group.ID, "")
	w3 := SwarmWorker(t, s, other.ID, "", "three")
	soon, later := Base.Add(time.Minute), Base.Add(time.Hour)
	lease := func(at time.Time) func(*continuo.Attempt) { return func(a *continuo.Attempt) { a.LeaseUntil = at } }
	a1 := SwarmAttempt(t, s, heldTask(t, s, f.Swarm.ID, f.W1.ID, "k1", 1), "s1", lease(soon))
	a2 := SwarmAttempt(t, s, heldTask(t, s, f.Swarm.ID, f.W2.ID, "k2", 1), "s2", lease(later), attemptRunning)
	a3 := SwarmAttempt(t, s, heldTask(t, s, other.ID, w3.ID, "k3", 1), "s1", lease(later))
	done := SwarmTask(t, s, f.Swarm.ID, "k4", func(k *continuo.Task) { k.WorkerID, k.Attempt = f.W1.ID, 1 })
	SwarmAttempt(t, s, done, "s4", attemptEnded(continuo.AttemptSubmitted))
	a5 := SwarmAttempt(t, s, SwarmTask(t, s, f.Swarm.ID, "k5", func(k *continuo.Task) { k.WorkerID, k.Attempt = f.W2.ID, 1 }), "s3",
		lease(time.Time{}))
	id := func(as ...*continuo.Attempt) []string {
		out := []string{}
		for _, a := range as {
			out = append(out, a.ID)
		}
		return out
	}
	for _, tc := range []struct {
		p    store.AttemptListParams
		want []string
	}{
		{store.AttemptListParams{}, id(a1, a2, a3, a5)},
		{store.AttemptListParams{SwarmID: f.Swarm.ID}, id(a1, a2, a5)},
		{store.AttemptListParams{SwarmID: other.ID}, id(a3)},
		{store.AttemptListParams{Server: "s1"}, id(a1, a3)},
		{store.AttemptListParams{Server: "s4"}, id()},
		{store.AttemptListParams{LeaseBefore: soon.Add(time.Millisecond)}, id(a1, a5)},
		{store.AttemptListParams{LeaseBefore: soon}, id(a5)},
		{store.AttemptListParams{SwarmID: f.Swarm.ID, Server: "s1"}, id(a1)},
		{store.AttemptListParams{SwarmID: other.ID, Server: "s1", LeaseBefore: later}, id()},
		{store.AttemptListParams{Server: "s1", LeaseBefore: later.Add(time.Millisecond)}, id(a1, a3)},
		{store.AttemptListParams{Limit: 2}, id(a1, a2)},
		{store.AttemptListParams{Limit: -1}, id(a1, a2, a3, a5)},
	} {
		if got := idsOf(activeAttempts(t, s, tc.p), attemptID); !slices.Equal(got, tc.want) {
			t.Errorf("AttemptsActive(%+v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	sameList(t, "AttemptsActive", activeAttempts(t, s, store.AttemptListParams{}), []continuo.Attempt{*a1, *a2, *a3, *a5}, normAttempt)
}

// AttemptServers lists each server of an active attempt once, in order;
// servers of ended attempts only are absent.
func testAttemptServers(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := setupSwarm(t, s)
	servers := func() []string {
		return mustGet(t, s, "AttemptServers", func(tx store.Tx) ([]string, error) { return tx.AttemptServers(ctx) })
	}
	if got := servers(); len(got) != 0 {
		t.Errorf("AttemptServers with no attempts = %v", got)
	}
	SwarmAttempt(t, s, heldTask(t, s, f.Swarm.ID, f.W1.ID, "k1", 1), "host-b")
	SwarmAttempt(t, s, heldTask(t, s, f.Swarm.ID, f.W2.ID, "k2", 1), "host-a", attemptRunning)
	done := SwarmTask(t, s, f.Swarm.ID, "k3", func(k *continuo.Task) { k.WorkerID, k.Attempt = f.W1.ID, 1 })
	SwarmAttempt(t, s, done, "host-c", attemptEnded(continuo.AttemptFailed))
	w3 := SwarmWorker(t, s, f.Swarm.ID, "", "three")
	SwarmAttempt(t, s, heldTask(t, s, f.Swarm.ID, w3.ID, "k4", 1), "host-b")
	if got, want := servers(), []string{"host-a", "host-b"}; !slices.Equal(got, want) {
		t.Errorf("AttemptServers = %v, want %v", got, want)
	}
}
