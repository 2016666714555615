package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// The Swarm section pins store.SwarmTx: swarms, workers, carriers, tasks
// and attempts under revision- (attempts: state-) guarded updates, and the
// invariants the schema keeps — one active task per worker, one active
// attempt per task, one active carrier per worker, a carrier hash bound
// once ever, unique task keys — each as ErrConflict. TaskClaim takes the
// oldest queued task preferring the worker, else the oldest preferring
// none, and concurrent claimers never take one task twice. No invite
// expiry and no lease are the zero time; no checkpoint time, retirement,
// end or ack is nil.

func swarmTests() []test {
	return []test{
		{"SwarmCreateGet", testSwarmCreateGet},
		{"SwarmDuplicate", testSwarmDuplicate},
		{"SwarmUpdate", testSwarmUpdate},
		{"SwarmList", testSwarmList},
		{"Missing", testSwarmMissing},
		{"WorkerCreateGet", testWorkerCreateGet},
		{"WorkerDuplicate", testWorkerDuplicate},
		{"WorkerUpdate", testWorkerUpdate},
		{"WorkerTouch", testWorkerTouch},
		{"WorkerListCount", testWorkerListCount},
		{"WorkersIdle", testWorkersIdle},
		{"WorkersBlocked", testWorkersBlocked},
		{"CarrierBindGet", testCarrierBindGet},
		{"CarrierBoundOnce", testCarrierBoundOnce},
		{"CarrierOneActive", testCarrierOneActive},
		{"CarrierRetire", testCarrierRetire},
		{"TaskCreateGet", testTaskCreateGet},
		{"TaskDuplicate", testTaskDuplicate},
		{"TaskUpdate", testTaskUpdate},
		{"TaskOneActivePerWorker", testTaskOneActivePerWorker},
		{"TaskClaimOrder", testTaskClaimOrder},
		{"TaskClaimNone", testTaskClaimNone},
		{"TaskClaimConcurrent", testTaskClaimConcurrent},
		{"TaskClaimDrain", testTaskClaimDrain},
		{"TaskClaimAck", testTaskClaimAck},
		{"TaskSubmit", testTaskSubmit},
		{"TaskQueued", testTaskQueued},
		{"TaskCounts", testTaskCounts},
		{"TaskList", testTaskList},
		{"TaskListLimit", testTaskListLimit},
		{"TaskListWorker", testTaskListWorker},
		{"TaskTimeline", testTaskTimeline},
		{"AttemptsLatest", testAttemptsLatest},
		{"AttemptCreateGet", testAttemptCreateGet},
		{"AttemptDuplicate", testAttemptDuplicate},
		{"AttemptUpdate", testAttemptUpdate},
		{"AttemptsActive", testAttemptsActive},
		{"AttemptServers", testAttemptServers},
		{"ReadRejectsWrites", testSwarmReadRejectsWrites},
		{"Checks", testSwarmChecks},
	}
}

// NewSwarm returns an active swarm of group groupID created by createdBy,
// with room for 8 workers, the default policy and no invite, at revision
// 1, stamped Base. It does not touch a store.
func NewSwarm(groupID, createdBy string) *continuo.Swarm {
	return &continuo.Swarm{
		ID:           continuo.NewID(continuo.PrefixSwarm, Base),
		GroupID:      groupID,
		CreatedBy:    createdBy,
		OwnerCarrier: "owner-carrier",
		State:        continuo.SwarmActive,
		WorkerLimit:  8,
		Policy:       continuo.DefaultSwarmPolicy(),
		Revision:     1,
		CreatedAt:    Base,
		UpdatedAt:    Base,
	}
}

// Swarm creates a swarm (see NewSwarm); opts may change it before it is
// created.
func Swarm(t testing.TB, s store.Store, groupID, createdBy string, opts ...func(*continuo.Swarm)) *continuo.Swarm {
	t.Helper()
	sw := NewSwarm(groupID, createdBy)
	for _, o := range opts {
		o(sw)
	}
	MustWrite(t, s, func(tx store.Tx) error { return tx.SwarmCreate(t.Context(), sw) })
	return sw
}

// NewSwarmWorker returns an idle, steady worker of swarm swarmID that
// principalID joined as label, carried at epoch 1 by an active carrier of
// its own key (hash "carrier-" and the worker's ID), with no checkpoint,
// at revision 1, stamped Base. It does not touch a store.
func NewSwarmWorker(swarmID, principalID, label string) *continuo.Worker {
	id := continuo.NewID(continuo.PrefixWorker, Base)
	return &continuo.Worker{
		ID:              id,
		SwarmID:         swarmID,
		PrincipalID:     principalID,
		Label:           label,
		Epoch:           1,
		CarrierHash:     "carrier-" + id,
		CarrierSource:   continuo.CarrierFromKey,
		CarrierState:    continuo.CarrierActive,
		State:           continuo.WorkerIdle,
		ContinuityState: continuo.ContinuitySteady,
		JoinHash:        "join-" + label,
		LastSeenAt:      Base,
		IdleTTL:         continuo.DefaultWorkerIdleTTL,
		Revision:        1,
		CreatedAt:       Base,
		UpdatedAt:       Base,
	}
}

// SwarmWorker creates a worker (see NewSwarmWorker) and binds its carrier
// in one Write; opts may change the worker before it is created.
func SwarmWorker(t testing.TB, s store.Store, swarmID, principalID, label string, opts ...func(*continuo.Worker)) *continuo.Worker {
	t.Helper()
	ctx := t.Context()
	w := NewSwarmWorker(swarmID, principalID, label)
	for _, o := range opts {
		o(w)
	}
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.WorkerCreate(ctx, w); err != nil {
			return err
		}
		return tx.CarrierBind(ctx, continuo.Carrier{Hash: w.CarrierHash, WorkerID: w.ID, SwarmID: w.SwarmID, Epoch: w.Epoch,
			Source: w.CarrierSource, State: continuo.CarrierActive, BoundAt: w.CreatedAt})
	})
	return w
}

// NewSwarmTask returns a queued task of swarm swarmID under key, for any
// worker, never claimed, at revision 1, stamped Base. It does not touch a
// store.
func NewSwarmTask(swarmID, key string) *continuo.Task {
	return &continuo.Task{
		ID:          continuo.NewID(continuo.PrefixTask, Base),
		SwarmID:     swarmID,
		TaskKey:     key,
		RequestHash: "req-" + key,
		Prompt:      "do " + key,
		State:       continuo.TaskQueued,
		Revision:    1,
		CreatedAt:   Base,
		UpdatedAt:   Base,
	}
}

// SwarmTask creates a task (see NewSwarmTask); opts may change it before
// it is created.
func SwarmTask(t testing.TB, s store.Store, swarmID, key string, opts ...func(*continuo.Task)) *continuo.Task {
	t.Helper()
	k := NewSwarmTask(swarmID, key)
	for _, o := range opts {
		o(k)
	}
	MustWrite(t, s, func(tx store.Tx) error { return tx.TaskCreate(t.Context(), k) })
	return k
}

// NewSwarmAttempt returns the claimed attempt number k.Attempt of task k
// by its worker (k.WorkerID) at epoch 1, delivered by server at Base with
// a lease of a minute. It does not touch a store.
func NewSwarmAttempt(k *continuo.Task, server string) *continuo.Attempt {
	return &continuo.Attempt{
		ID:         continuo.NewID(continuo.PrefixAttempt, Base),
		TaskID:     k.ID,
		SwarmID:    k.SwarmID,
		Number:     k.Attempt,
		WorkerID:   k.WorkerID,
		Epoch:      1,
		Server:     server,
		State:      continuo.AttemptClaimed,
		LeaseUntil: Base.Add(time.Minute),
		ClaimedAt:  Base,
	}
}

// SwarmAttempt creates an attempt (see NewSwarmAttempt); opts may change
// it before it is created.
func SwarmAttempt(t testing.TB, s store.Store, k *continuo.Task, server string, opts ...func(*continuo.Attempt)) *continuo.Attempt {
	t.Helper()
	a := NewSwarmAttempt(k, server)
	for _, o := range opts {
		o(a)
	}
	MustWrite(t, s, func(tx store.Tx) error { return tx.AttemptCreate(t.Context(), a) })
	return a
}

// swarmFixture is a group's swarm with two workers.
type swarmFixture struct {
	*Fixture
	Swarm  *continuo.Swarm
	W1, W2 *continuo.Worker
}

func setupSwarm(t testing.TB, s store.Store) *swarmFixture {
	t.Helper()
	f := &swarmFixture{Fixture: Setup(t, s, "alpha")}
	f.Swarm = Swarm(t, s, f.Group.ID, f.Principal.ID)
	f.W1 = SwarmWorker(t, s, f.Swarm.ID, f.Principal.ID, "one")
	f.W2 = SwarmWorker(t, s, f.Swarm.ID, f.Principal.ID, "two")
	return f
}

func normSwarm(s continuo.Swarm) continuo.Swarm {
	s.InviteExpiresAt, s.CreatedAt, s.UpdatedAt = trunc(s.InviteExpiresAt), trunc(s.CreatedAt), trunc(s.UpdatedAt)
	return s
}

func normWorker(w continuo.Worker) continuo.Worker {
	w.CheckpointAt, w.LastSeenAt, w.RetiredAt = truncPtr(w.CheckpointAt), trunc(w.LastSeenAt), truncPtr(w.RetiredAt)
	w.CreatedAt, w.UpdatedAt = trunc(w.CreatedAt), trunc(w.UpdatedAt)
	return w
}

func normCarrier(c continuo.Carrier) continuo.Carrier {
	c.BoundAt, c.RetiredAt = trunc(c.BoundAt), truncPtr(c.RetiredAt)
	return c
}

func mustSwarm(t testing.TB, s store.Store, id string) continuo.Swarm {
	t.Helper()
	return *mustGet(t, s, "SwarmGet", func(tx store.Tx) (*continuo.Swarm, error) { return tx.SwarmGet(t.Context(), id) })
}

func mustWorker(t testing.TB, s store.Store, id string) continuo.Worker {
	t.Helper()
	return *mustGet(t, s, "WorkerGet", func(tx store.Tx) (*continuo.Worker, error) { return tx.WorkerGet(t.Context(), id) })
}

func mustCarrier(t testing.TB, s store.Store, hash string) continuo.Carrier {
	t.Helper()
	return *mustGet(t, s, "CarrierGet", func(tx store.Tx) (*continuo.Carrier, error) { return tx.CarrierGet(t.Context(), hash) })
}

func listSwarms(t testing.TB, s store.Store, groupID string, limit int) []continuo.Swarm {
	t.Helper()
	return mustGet(t, s, "SwarmList", func(tx store.Tx) ([]continuo.Swarm, error) {
		return tx.SwarmList(t.Context(), store.SwarmListParams{GroupID: groupID, Limit: limit})
	})
}

func listWorkers(t testing.TB, s store.Store, swarmID string) []continuo.Worker {
	t.Helper()
	return mustGet(t, s, "WorkerList", func(tx store.Tx) ([]continuo.Worker, error) { return tx.WorkerList(t.Context(), swarmID) })
}

func idsOf[T any](xs []T, id func(T) string) []string {
	out := []string{}
	for _, x := range xs {
		out = append(out, id(x))
	}
	return out
}

func swarmID(s continuo.Swarm) string { return s.ID }

// Every field round-trips, set and unset: a policy other than the
// default, an invite and its expiry (none is the zero time), times at
// millisecond precision in UTC.
func testSwarmCreateGet(t *testing.T, s store.Store) {
	f := Setup(t, s, "alpha")
	expires := Base.Add(15*time.Minute + 1500*time.Microsecond)
	full := Swarm(t, s, f.Group.ID, f.Principal.ID, func(sw *continuo.Swarm) {
		sw.OwnerCarrier, sw.State, sw.WorkerLimit = "owner \"ü\"", continuo.SwarmClosed, continuo.MaxSwarmWorkers
		sw.Policy = continuo.SwarmPolicy{LeaseTTLSecs: 90, RequeueUnacked: true, AutoApproveManaged: true,
			Compaction: continuo.Compaction{BudgetTokens: 200_000, Threshold: 0.75, ReserveTokens: 1_000}}
		sw.InviteHash, sw.InviteExpiresAt, sw.Revision = "invite-hash", expires, 7
		sw.CreatedAt, sw.UpdatedAt = Base.Add(1500*time.Microsecond), Base.Add(2*time.Second)
	})
	bare := Swarm(t, s, f.Group.ID, "", func(sw *continuo.Swarm) { sw.OwnerCarrier, sw.WorkerLimit = "", 1 })
	for _, want := range []*continuo.Swarm{full, bare} {
		same(t, "swarm "+want.ID, mustSwarm(t, s, want.ID), *want, normSwarm)
	}
	got := mustSwarm(t, s, full.ID)
	if !got.CreatedAt.Equal(Base.Add(time.Millisecond)) || got.CreatedAt.Location() != time.UTC ||
		!got.InviteExpiresAt.Equal(expires.Truncate(time.Millisecond)) || got.InviteExpiresAt.Location() != time.UTC {
		t.Errorf("CreatedAt %v, InviteExpiresAt %v; want milliseconds kept, in UTC", got.CreatedAt, got.InviteExpiresAt)
	}
	if got := mustSwarm(t, s, bare.ID); !got.InviteExpiresAt.IsZero() || got.Policy != continuo.DefaultSwarmPolicy() {
		t.Errorf("a bare swarm read back invite expiry %v, policy %+v; want none, the default", got.InviteExpiresAt, got.Policy)
	}
}

// An existing ID is ErrConflict, and the Write that met it keeps nothing.
func testSwarmDuplicate(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	sw := Swarm(t, s, f.Group.ID, f.Principal.ID)
	other, dup := NewSwarm(f.Group.ID, f.Principal.ID), NewSwarm(f.Group.ID, "someone")
	dup.ID = sw.ID
	err := s.Write(ctx, func(tx store.Tx) error {
		if err := tx.SwarmCreate(ctx, other); err != nil {
			return err
		}
		return tx.SwarmCreate(ctx, dup)
	})
	wantErr(t, err, store.ErrConflict, "SwarmCreate of an existing ID")
	sameList(t, "swarms after the refused duplicate", listSwarms(t, s, f.Group.ID, 0), []continuo.Swarm{*sw}, normSwarm)
}

// SwarmUpdate replaces the state, invite, revision and updated_at;
// everything else stays as created. It must raise the revision; a stale
// revision is ErrStale and an unknown swarm ErrNotFound, and neither
// changes anything.
func testSwarmUpdate(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	sw := Swarm(t, s, f.Group.ID, f.Principal.ID)
	next := *sw
	next.GroupID, next.CreatedBy, next.OwnerCarrier, next.WorkerLimit = "grp_x", "prn_x", "other", 3
	next.Policy.LeaseTTLSecs, next.CreatedAt = 1, Base.Add(time.Hour)
	next.State, next.InviteHash, next.InviteExpiresAt = continuo.SwarmClosed, "invite", Base.Add(time.Minute)
	next.Revision, next.UpdatedAt = 2, Base.Add(time.Second)
	MustWrite(t, s, func(tx store.Tx) error { return tx.SwarmUpdate(ctx, &next, 1) })
	want := *sw
	want.State, want.InviteHash, want.InviteExpiresAt, want.Revision, want.UpdatedAt = next.State, "invite", next.InviteExpiresAt, 2, next.UpdatedAt
	same(t, "swarm after SwarmUpdate", mustSwarm(t, s, sw.ID), want, normSwarm)

	// The invite goes back to none.
	back := want
	back.InviteHash, back.InviteExpiresAt, back.Revision = "", time.Time{}, 3
	MustWrite(t, s, func(tx store.Tx) error { return tx.SwarmUpdate(ctx, &back, 2) })
	same(t, "swarm after clearing its invite", mustSwarm(t, s, sw.ID), back, normSwarm)

	late := back
	late.State, late.Revision = continuo.SwarmActive, 3
	wantErr(t, s.Write(ctx, func(tx store.Tx) error { return tx.SwarmUpdate(ctx, &late, 2) }), store.ErrStale, "SwarmUpdate from revision 2 at 3")
	late.Revision = 3
	if err := s.Write(ctx, func(tx store.Tx) error { return tx.SwarmUpdate(ctx, &late, 3) }); err == nil {
		t.Error("SwarmUpdate that keeps the revision succeeded")
	}
	same(t, "swarm after the refused updates", mustSwarm(t, s, sw.ID), back, normSwarm)
	unknown := NewSwarm(f.Group.ID, "")
	unknown.Revision = 2
	wantErr(t, s.Write(ctx, func(tx store.Tx) error { return tx.SwarmUpdate(ctx, unknown, 1) }), store.ErrNotFound, "SwarmUpdate of an unknown swarm")
}

// A group's swarms come newest first, another group's never; a limit
// keeps the newest, ≤ 0 is 100.
func testSwarmList(t *testing.T, s store.Store) {
	f := Setup(t, s, "alpha")
	other := Group(t, s, "beta")
	a := Swarm(t, s, f.Group.ID, f.Principal.ID)
	Swarm(t, s, other.ID, "")
	b := Swarm(t, s, f.Group.ID, f.Principal.ID, func(sw *continuo.Swarm) { sw.State = continuo.SwarmClosed })
	c := Swarm(t, s, f.Group.ID, f.Principal.ID)
	sameList(t, "SwarmList", listSwarms(t, s, f.Group.ID, 0), []continuo.Swarm{*c, *b, *a}, normSwarm)
	for _, tc := range []struct {
		limit int
		want  []string
	}{{2, []string{c.ID, b.ID}}, {-1, []string{c.ID, b.ID, a.ID}}, {100, []string{c.ID, b.ID, a.ID}}} {
		if got := idsOf(listSwarms(t, s, f.Group.ID, tc.limit), swarmID); !slices.Equal(got, tc.want) {
			t.Errorf("SwarmList(limit %d) = %v, want %v", tc.limit, got, tc.want)
		}
	}
	if got := listSwarms(t, s, continuo.NewID(continuo.PrefixGroup, Base), 0); len(got) != 0 {
		t.Errorf("SwarmList of a group with none = %v", idsOf(got, swarmID))
	}
	// BeforeID pages on: the swarms older than it, newest first.
	for _, tc := range []struct {
		before string
		limit  int
		want   []string
	}{{c.ID, 0, []string{b.ID, a.ID}}, {c.ID, 1, []string{b.ID}}, {b.ID, 1, []string{a.ID}}, {a.ID, 0, []string{}}} {
		got := mustGet(t, s, "SwarmList", func(tx store.Tx) ([]continuo.Swarm, error) {
			return tx.SwarmList(t.Context(), store.SwarmListParams{GroupID: f.Group.ID, BeforeID: tc.before, Limit: tc.limit})
		})
		if ids := idsOf(got, swarmID); !slices.Equal(ids, tc.want) {
			t.Errorf("SwarmList(before %s, limit %d) = %v, want %v", tc.before, tc.limit, ids, tc.want)
		}
	}
}

// Every lookup of something unknown is ErrNotFound.
func testSwarmMissing(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := setupSwarm(t, s)
	k := SwarmTask(t, s, f.Swarm.ID, "k")
	for name, fn := range map[string]func(tx store.Tx) error{
		"SwarmGet": func(tx store.Tx) error {
			_, err := tx.SwarmGet(ctx, continuo.NewID(continuo.PrefixSwarm, Base))
			return err
		},
		"WorkerGet": func(tx store.Tx) error {
			_, err := tx.WorkerGet(ctx, continuo.NewID(continuo.PrefixWorker, Base))
			return err
		},
		"CarrierGet": func(tx store.Tx) error {
			_, err := tx.CarrierGet(ctx, "no-such-carrier")
			return err
		},
		"TaskGet": func(tx store.Tx) error {
			_, err := tx.TaskGet(ctx, continuo.NewID(continuo.PrefixTask, Base))
			return err
		},
		"TaskByKey": func(tx store.Tx) error { _, err := tx.TaskByKey(ctx, f.Swarm.ID, "other"); return err },
		"TaskByKeyOtherSwarm": func(tx store.Tx) error {
			_, err := tx.TaskByKey(ctx, continuo.NewID(continuo.PrefixSwarm, Base), "k")
			return err
		},
		"AttemptGet": func(tx store.Tx) error {
			_, err := tx.AttemptGet(ctx, continuo.NewID(continuo.PrefixAttempt, Base))
			return err
		},
		"AttemptOf": func(tx store.Tx) error { _, err := tx.AttemptOf(ctx, k.ID, 1); return err },
	} {
		wantErr(t, s.Read(ctx, fn), store.ErrNotFound, name+" of something unknown")
	}
}

// Every field round-trips, set and unset: a busy worker with a
// checkpoint, a lost carrier and a continuity state, and an idle one
// with none; times at millisecond precision.
func testWorkerCreateGet(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	at := Base.Add(2*time.Second + 1500*time.Microsecond)
	busy := SwarmWorker(t, s, f.Swarm.ID, f.Principal.ID, "busy \"ü\"", func(w *continuo.Worker) {
		w.Epoch, w.CarrierSource, w.CarrierState = 3, continuo.CarrierFromMeta, continuo.CarrierLost
		w.State, w.ContinuityState, w.CurrentTaskID = continuo.WorkerBusy, continuo.ContinuityPending, continuo.NewID(continuo.PrefixTask, Base)
		w.Checkpoint, w.CheckpointHash, w.CheckpointAt = `{"step":2,"notes":"ü"}`, "cp-hash", &at
		w.LastSeenAt, w.Revision = at.Add(time.Second), 9
		w.CreatedAt, w.UpdatedAt = Base.Add(1500*time.Microsecond), at
	})
	retiredAt := at.Add(time.Minute)
	retired := SwarmWorker(t, s, f.Swarm.ID, f.Principal.ID, "retired", func(w *continuo.Worker) {
		w.CarrierState, w.RetiredReason, w.RetiredAt, w.IdleTTL = continuo.CarrierRetired, continuo.RetiredRemoved, &retiredAt, 90*time.Second
		w.ContinuityState, w.BlockedReason = continuo.ContinuityCompactBlocked, continuo.BlockedNotRedeemed
	})
	unset := SwarmWorker(t, s, f.Swarm.ID, f.Principal.ID, "no idle TTL", func(w *continuo.Worker) { w.IdleTTL = 0 })
	unset.IdleTTL = continuo.DefaultWorkerIdleTTL // none given: the default
	for _, want := range []*continuo.Worker{f.W1, busy, retired, unset} {
		same(t, "worker "+want.Label, mustWorker(t, s, want.ID), *want, normWorker)
	}
	if got := mustWorker(t, s, busy.ID); got.CheckpointAt == nil || !got.CheckpointAt.Equal(at.Truncate(time.Millisecond)) ||
		got.CheckpointAt.Location() != time.UTC {
		t.Errorf("CheckpointAt %s, want %v in UTC", showTime(got.CheckpointAt), at.Truncate(time.Millisecond))
	}
	if got := mustWorker(t, s, f.W1.ID); got.CheckpointAt != nil || got.Checkpoint != "" || got.CurrentTaskID != "" {
		t.Errorf("an idle worker read back checkpoint %q at %s, task %q; want none", got.Checkpoint, showTime(got.CheckpointAt), got.CurrentTaskID)
	}
}

// An existing ID is ErrConflict, and the Write that met it keeps nothing.
func testWorkerDuplicate(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := setupSwarm(t, s)
	other, dup := NewSwarmWorker(f.Swarm.ID, "", "three"), NewSwarmWorker(f.Swarm.ID, "", "four")
	dup.ID = f.W1.ID
	err := s.Write(ctx, func(tx store.Tx) error {
		if err := tx.WorkerCreate(ctx, other); err != nil {
			return err
		}
		return tx.WorkerCreate(ctx, dup)
	})
	wantErr(t, err, store.ErrConflict, "WorkerCreate of an existing ID")
	sameList(t, "workers after the refused duplicate", listWorkers(t, s, f.Swarm.ID), []continuo.Worker{*f.W1, *f.W2}, normWorker)
}

// WorkerUpdate replaces the epoch, carrier, states, current task,
// checkpoint, last seen, revision and updated_at; the swarm, principal,
// label, join hash and creation time stay. It must raise the revision; a
// stale revision is ErrStale and an unknown worker ErrNotFound, and
// neither changes anything.
func testWorkerUpdate(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := setupSwarm(t, s)
	at := Base.Add(time.Minute)
	next := *f.W1
	next.SwarmID, next.PrincipalID, next.Label, next.JoinHash, next.CreatedAt = "swm_x", "prn_x", "renamed", "join-x", Base.Add(time.Hour)
	next.Epoch, next.CarrierHash, next.CarrierSource, next.CarrierState = 2, "carrier-next", continuo.CarrierFromSession, continuo.CarrierLost
	next.State, next.ContinuityState, next.CurrentTaskID = continuo.WorkerBusy, continuo.ContinuityCompactRequired, "tsk_x"
	next.Checkpoint, next.CheckpointHash, next.CheckpointAt = `{"n":1}`, "h1", &at
	next.LastSeenAt, next.Revision, next.UpdatedAt = at, 2, at
	MustWrite(t, s, func(tx store.Tx) error { return updateWorker(ctx, tx, &next, 1) })
	want := next
	want.SwarmID, want.PrincipalID, want.Label, want.JoinHash, want.CreatedAt = f.W1.SwarmID, f.W1.PrincipalID, f.W1.Label, f.W1.JoinHash, f.W1.CreatedAt
	same(t, "worker after WorkerUpdate", mustWorker(t, s, f.W1.ID), want, normWorker)

	// The task and checkpoint go back to none.
	back := want
	back.State, back.CurrentTaskID, back.Checkpoint, back.CheckpointHash, back.CheckpointAt = continuo.WorkerIdle, "", "", "", nil
	back.Revision = 3
	MustWrite(t, s, func(tx store.Tx) error { return updateWorker(ctx, tx, &back, 2) })
	same(t, "worker after clearing its task and checkpoint", mustWorker(t, s, f.W1.ID), back, normWorker)

	late := back
	late.Epoch, late.Revision = 9, 3
	wantErr(t, s.Write(ctx, func(tx store.Tx) error { return updateWorker(ctx, tx, &late, 2) }), store.ErrStale, "WorkerUpdate from revision 2 at 3")
	if err := s.Write(ctx, func(tx store.Tx) error { return updateWorker(ctx, tx, &late, 3) }); err == nil {
		t.Error("WorkerUpdate that keeps the revision succeeded")
	}
	same(t, "worker after the refused updates", mustWorker(t, s, f.W1.ID), back, normWorker)
	unknown := NewSwarmWorker(f.Swarm.ID, "", "x")
	unknown.Revision = 2
	wantErr(t, s.Write(ctx, func(tx store.Tx) error { return updateWorker(ctx, tx, unknown, 1) }), store.ErrNotFound, "WorkerUpdate of an unknown worker")
}

// WorkerTouch moves last_seen_at and brings a lost carrier back to
// active, never a retired one; the revision and updated_at stay, so an
// update read before the touch still applies. An unknown worker is
// ErrNotFound.
func testWorkerTouch(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := setupSwarm(t, s)
	lost := SwarmWorker(t, s, f.Swarm.ID, "", "lost", func(w *continuo.Worker) { w.CarrierState, w.Revision = continuo.CarrierLost, 4 })
	retired := SwarmWorker(t, s, f.Swarm.ID, "", "retired", func(w *continuo.Worker) { w.CarrierState = continuo.CarrierRetired })
	at := Base.Add(time.Minute + 1500*time.Microsecond)
	for _, w := range []*continuo.Worker{f.W1, lost, retired} {
		MustWrite(t, s, func(tx store.Tx) error { return tx.WorkerTouch(ctx, w.ID, at) })
	}
	for _, tc := range []struct {
		w     *continuo.Worker
		state continuo.CarrierState
	}{{f.W1, continuo.CarrierActive}, {lost, continuo.CarrierActive}, {retired, continuo.CarrierRetired}} {
		want := *tc.w
		want.LastSeenAt, want.CarrierState = at, tc.state
		same(t, "touched worker "+tc.w.Label, mustWorker(t, s, tc.w.ID), want, normWorker)
	}
	next := *lost
	next.Epoch, next.Revision = 2, 5
	MustWrite(t, s, func(tx store.Tx) error { return updateWorker(ctx, tx, &next, 4) })
	wantErr(t, s.Write(ctx, func(tx store.Tx) error { return tx.WorkerTouch(ctx, continuo.NewID(continuo.PrefixWorker, Base), at) }),
		store.ErrNotFound, "WorkerTouch of an unknown worker")
}

// A swarm's workers come oldest first, another swarm's never, and
// WorkerCount counts them.
// testWorkersIdle: WorkersIdle lists the workers that hold no task and
// are not retired whose carrier stayed silent past their own idle TTL,
// the longest past first, up to the limit.
func testWorkersIdle(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	now := Base.Add(time.Hour)
	silent := func(label string, seen time.Time, ttl time.Duration, o ...func(*continuo.Worker)) *continuo.Worker {
		return SwarmWorker(t, s, f.Swarm.ID, "", label, append([]func(*continuo.Worker){func(w *continuo.Worker) {
			w.LastSeenAt, w.IdleTTL = seen, ttl
		}}, o...)...)
	}
	// f.W1 and f.W2 were seen at Base with the default TTL (30 min): past it.
	long := silent("long ttl", Base, 2*time.Hour)
	justPast := silent("just past", now.Add(-10*time.Minute-time.Millisecond), 10*time.Minute)
	atLimit := silent("at the limit", now.Add(-10*time.Minute), 10*time.Minute)
	busy := silent("busy", Base, time.Minute, func(w *continuo.Worker) {
		w.State, w.CurrentTaskID = continuo.WorkerBusy, continuo.NewID(continuo.PrefixTask, Base)
	})
	gone := Base.Add(time.Second)
	retired := silent("retired", Base, time.Minute, func(w *continuo.Worker) {
		w.CarrierState, w.RetiredReason, w.RetiredAt = continuo.CarrierRetired, continuo.RetiredIdle, &gone
	})
	idle := func(limit int) []string {
		ws := mustGet(t, s, "WorkersIdle", func(tx store.Tx) ([]continuo.Worker, error) { return tx.WorkersIdle(t.Context(), now, limit) })
		var ids []string
		for _, w := range ws {
			ids = append(ids, w.ID)
		}
		return ids
	}
	want := []string{f.W1.ID, f.W2.ID, justPast.ID}
	if got := idle(0); !slices.Equal(got, want) {
		t.Errorf("WorkersIdle = %v, want %v (not %s, %s, %s, %s)", got, want, long.ID, atLimit.ID, busy.ID, retired.ID)
	}
	if got := idle(2); !slices.Equal(got, want[:2]) {
		t.Errorf("WorkersIdle limit 2 = %v, want %v", got, want[:2])
	}
}

// testWorkersBlocked: WorkersBlocked counts the compact_blocked workers
// of every swarm.
func testWorkersBlocked(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	other := Swarm(t, s, f.Group.ID, "")
	count := func() int {
		return mustGet(t, s, "WorkersBlocked", func(tx store.Tx) (int, error) { return tx.WorkersBlocked(t.Context()) })
	}
	if n := count(); n != 0 {
		t.Fatalf("WorkersBlocked with none = %d", n)
	}
	for i, sw := range []string{f.Swarm.ID, other.ID} {
		SwarmWorker(t, s, sw, "", fmt.Sprint("blocked ", i), func(w *continuo.Worker) {
			w.ContinuityState, w.BlockedReason = continuo.ContinuityCompactBlocked, continuo.BlockedReasons()[i]
		})
	}
	if n := count(); n != 2 {
		t.Errorf("WorkersBlocked = %d, want 2", n)
	}
}

func testWorkerListCount(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	other := Swarm(t, s, f.Group.ID, "")
	SwarmWorker(t, s, other.ID, "", "elsewhere")
	w3 := SwarmWorker(t, s, f.Swarm.ID, "", "three")
	// A retired worker is listed, and takes no slot.
	gone := Base.Add(time.Hour)
	w4 := SwarmWorker(t, s, f.Swarm.ID, "", "four", func(w *continuo.Worker) {
		w.CarrierState, w.RetiredReason, w.RetiredAt = continuo.CarrierRetired, continuo.RetiredLeft, &gone
	})
	sameList(t, "WorkerList", listWorkers(t, s, f.Swarm.ID), []continuo.Worker{*f.W1, *f.W2, *w3, *w4}, normWorker)
	empty := Swarm(t, s, f.Group.ID, "")
	for _, tc := range []struct {
		id   string
		want int
	}{{f.Swarm.ID, 3}, {other.ID, 1}, {empty.ID, 0}} {
		n := mustGet(t, s, "WorkerCount", func(tx store.Tx) (int, error) { return tx.WorkerCount(t.Context(), tc.id) })
		if n != tc.want {
			t.Errorf("WorkerCount = %d, want %d", n, tc.want)
		}
	}
	if got := listWorkers(t, s, empty.ID); len(got) != 0 {
		t.Errorf("WorkerList of a swarm with none: %d workers", len(got))
	}
}

// Every field of a carrier round-trips: an active one (no retirement)
// and a retired one.
func testCarrierBindGet(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := setupSwarm(t, s)
	retiredAt := Base.Add(time.Minute + 1500*time.Microsecond)
	old := continuo.Carrier{Hash: "carrier-old \"ü\"", WorkerID: f.W1.ID, SwarmID: f.Swarm.ID, Epoch: 0, Source: continuo.CarrierFromSession,
		State: continuo.CarrierRetired, BoundAt: Base.Add(-time.Hour + 1500*time.Microsecond), RetiredAt: &retiredAt}
	MustWrite(t, s, func(tx store.Tx) error { return tx.CarrierBind(ctx, old) })
	same(t, "retired carrier", mustCarrier(t, s, old.Hash), old, normCarrier)
	want := continuo.Carrier{Hash: f.W1.CarrierHash, WorkerID: f.W1.ID, SwarmID: f.Swarm.ID, Epoch: 1, Source: continuo.CarrierFromKey,
		State: continuo.CarrierActive, BoundAt: Base}
	same(t, "active carrier", mustCarrier(t, s, f.W1.CarrierHash), want, normCarrier)
}

// A carrier hash binds once, ever: again to another worker, or to its own
// after it retired, is ErrConflict, and the Write keeps nothing.
func testCarrierBoundOnce(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := setupSwarm(t, s)
	first := mustCarrier(t, s, f.W1.CarrierHash)
	again := first
	again.WorkerID, again.Epoch = f.W2.ID, 2
	w3 := NewSwarmWorker(f.Swarm.ID, "", "three")
	err := s.Write(ctx, func(tx store.Tx) error {
		if err := tx.WorkerCreate(ctx, w3); err != nil {
			return err
		}
		return tx.CarrierBind(ctx, again)
	})
	wantErr(t, err, store.ErrConflict, "CarrierBind of a hash bound to another worker")
	same(t, "carrier after the refused bind", mustCarrier(t, s, first.Hash), first, normCarrier)
	_, err = read(t, s, func(tx store.Tx) (*continuo.Worker, error) { return tx.WorkerGet(ctx, w3.ID) })
	wantErr(t, err, store.ErrNotFound, "WorkerGet of a worker created in the failed Write")

	MustWrite(t, s, func(tx store.Tx) error { return tx.CarrierRetire(ctx, first.Hash, Base.Add(time.Minute)) })
	rebind := first
	rebind.Epoch, rebind.BoundAt = 2, Base.Add(2*time.Minute)
	wantErr(t, s.Write(ctx, func(tx store.Tx) error { return tx.CarrierBind(ctx, rebind) }), store.ErrConflict,
		"CarrierBind of a retired carrier to its own worker")
	if got := mustCarrier(t, s, first.Hash); got.State != continuo.CarrierRetired || got.Epoch != 1 {
		t.Errorf("retired carrier after the refused bind: %+v", got)
	}
}

// A worker has one active carrier: a second is ErrConflict until the
// first retires; retired ones are any number.
func testCarrierOneActive(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := setupSwarm(t, s)
	next := continuo.Carrier{Hash: "carrier-next", WorkerID: f.W1.ID, SwarmID: f.Swarm.ID, Epoch: 2, Source: continuo.CarrierFromMeta,
		State: continuo.CarrierActive, BoundAt: Base.Add(time.Minute)}
	wantErr(t, s.Write(ctx, func(tx store.Tx) error { return tx.CarrierBind(ctx, next) }), store.ErrConflict,
		"CarrierBind of a second active carrier of one worker")
	_, err := read(t, s, func(tx store.Tx) (*continuo.Carrier, error) { return tx.CarrierGet(ctx, next.Hash) })
	wantErr(t, err, store.ErrNotFound, "CarrierGet of the refused carrier")

	at := Base.Add(time.Second)
	for i, hash := range []string{"retired-1", "retired-2"} {
		MustWrite(t, s, func(tx store.Tx) error {
			return tx.CarrierBind(ctx, continuo.Carrier{Hash: hash, WorkerID: f.W1.ID, SwarmID: f.Swarm.ID, Epoch: int64(i),
				Source: continuo.CarrierFromKey, State: continuo.CarrierRetired, BoundAt: Base, RetiredAt: &at})
		})
	}
	// A continuation: the old carrier retires and the next binds, in one Write.
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.CarrierRetire(ctx, f.W1.CarrierHash, next.BoundAt); err != nil {
			return err
		}
		return tx.CarrierBind(ctx, next)
	})
	same(t, "the next carrier", mustCarrier(t, s, next.Hash), next, normCarrier)
	// Another worker's active carrier was never in the way.
	same(t, "the other worker's carrier", mustCarrier(t, s, f.W2.CarrierHash).State, continuo.CarrierActive, identity)
}

// CarrierRetire retires an active carrier at the time given; a retired
// one is ErrInvalidState (its retirement stays) and an unknown one ErrNotFound.
func testCarrierRetire(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := setupSwarm(t, s)
	at := Base.Add(time.Minute + 1500*time.Microsecond)
	MustWrite(t, s, func(tx store.Tx) error { return tx.CarrierRetire(ctx, f.W1.CarrierHash, at) })
	want := continuo.Carrier{Hash: f.W1.CarrierHash, WorkerID: f.W1.ID, SwarmID: f.Swarm.ID, Epoch: 1, Source: continuo.CarrierFromKey,
		State: continuo.CarrierRetired, BoundAt: Base, RetiredAt: &at}
	same(t, "retired carrier", mustCarrier(t, s, want.Hash), want, normCarrier)
	wantErr(t, s.Write(ctx, func(tx store.Tx) error { return tx.CarrierRetire(ctx, want.Hash, at.Add(time.Hour)) }), store.ErrInvalidState,
		"CarrierRetire of a retired carrier")
	same(t, "carrier retired twice", mustCarrier(t, s, want.Hash), want, normCarrier)
	wantErr(t, s.Write(ctx, func(tx store.Tx) error { return tx.CarrierRetire(ctx, "no-such-carrier", at) }), store.ErrNotFound,
		"CarrierRetire of an unknown carrier")
	same(t, "the other worker's carrier", mustCarrier(t, s, f.W2.CarrierHash).State, continuo.CarrierActive, identity)
}
