package storetest

import (
	"reflect"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// testTaskTimeline: TaskTimeline counts a swarm's tasks by the bucket of
// their creation (dispatched) and of their end (settled): every bucket is
// returned, empty ones as zeros; a bucket is [start, start+length); times
// before Since or from the end of the last bucket on count nowhere, and
// neither do another swarm's tasks or a task that has not ended.
func testTaskTimeline(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	other := Swarm(t, s, f.Group.ID, f.Principal.ID)
	since, hour := Base.Truncate(time.Hour), time.Hour
	at := func(created time.Time, ended *time.Time) func(*continuo.Task) {
		return func(k *continuo.Task) {
			k.CreatedAt, k.UpdatedAt = created, created
			if ended != nil {
				k.State, k.Reason, k.EndedAt, k.UpdatedAt = continuo.TaskFailed, continuo.ReasonWorkerFailed, ended, *ended
			}
		}
	}
	ptr := func(d time.Duration) *time.Time { v := since.Add(d); return &v }
	SwarmTask(t, s, f.Swarm.ID, "before", at(since.Add(-time.Millisecond), ptr(0)))           // settled in bucket 0 only
	SwarmTask(t, s, f.Swarm.ID, "first", at(since, nil))                                      // dispatched in bucket 0
	SwarmTask(t, s, f.Swarm.ID, "edge", at(since.Add(hour-time.Millisecond), ptr(2*hour)))    // 0, settled in 2
	SwarmTask(t, s, f.Swarm.ID, "second", at(since.Add(hour), ptr(hour+time.Minute)))         // 1 and 1
	SwarmTask(t, s, f.Swarm.ID, "third", at(since.Add(2*hour+time.Second), nil))              // 2
	SwarmTask(t, s, f.Swarm.ID, "late", at(since.Add(2*hour+time.Minute), ptr(3*hour)))       // 2, settled past the end
	SwarmTask(t, s, f.Swarm.ID, "after", at(since.Add(3*hour), ptr(3*hour+time.Minute)))      // past the end
	SwarmTask(t, s, other.ID, "elsewhere", at(since.Add(time.Minute), ptr(hour+time.Minute))) // another swarm
	got := mustGet(t, s, "TaskTimeline", func(tx store.Tx) ([]store.TaskBucket, error) {
		return tx.TaskTimeline(t.Context(), store.TaskTimelineParams{SwarmID: f.Swarm.ID, Since: since, Bucket: hour, Buckets: 3})
	})
	want := []store.TaskBucket{
		{Start: since, Dispatched: 2, Settled: 1},
		{Start: since.Add(hour), Dispatched: 1, Settled: 1},
		{Start: since.Add(2 * hour), Dispatched: 2, Settled: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("TaskTimeline = %+v, want %+v", got, want)
	}
	empty := mustGet(t, s, "TaskTimeline", func(tx store.Tx) ([]store.TaskBucket, error) {
		return tx.TaskTimeline(t.Context(), store.TaskTimelineParams{SwarmID: f.Swarm.ID, Since: since.Add(-72 * hour), Bucket: 24 * hour, Buckets: 2})
	})
	if len(empty) != 2 || empty[0] != (store.TaskBucket{Start: since.Add(-72 * hour)}) || empty[1] != (store.TaskBucket{Start: since.Add(-48 * hour)}) {
		t.Errorf("TaskTimeline of a window without tasks = %+v", empty)
	}
	for _, p := range []store.TaskTimelineParams{
		{SwarmID: f.Swarm.ID, Since: since, Bucket: 0, Buckets: 3},
		{SwarmID: f.Swarm.ID, Since: since, Bucket: hour, Buckets: 0},
		{SwarmID: f.Swarm.ID, Since: since, Bucket: hour, Buckets: store.MaxTimelineBuckets + 1},
	} {
		err := s.Read(t.Context(), func(tx store.Tx) error {
			_, err := tx.TaskTimeline(t.Context(), p)
			return err
		})
		if err == nil {
			t.Errorf("TaskTimeline(%+v): no error", p)
		}
	}
}

// testLedgerOfSwarm: LedgerOfSwarm is LedgerEntries of every worker of
// the swarm at the worker's current epoch, by worker: not another epoch's
// entries, nor another swarm's.
func testLedgerOfSwarm(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	other := SwarmWorker(t, s, Swarm(t, s, f.Group.ID, f.Principal.ID).ID, f.Principal.ID, "elsewhere")
	w1, w2 := f.W1.ID, f.W2.ID
	ledgerAdd(t, s,
		ledgerEntry(w1, 1, continuo.LedgerTaskPrompt, "tsk_a", 100, Base),
		ledgerEntry(w1, 1, continuo.LedgerTaskPrompt, "tsk_b", 250, Base.Add(time.Second)),
		ledgerEntry(w1, 0, continuo.LedgerTaskPrompt, "tsk_old", 5000, Base),
		ledgerEntry(w2, 1, continuo.LedgerCapsule, "cnt_a", 700, Base),
		ledgerEntry(other.ID, 1, continuo.LedgerTaskPrompt, "tsk_x", 9999, Base),
	)
	for _, e := range []continuo.LedgerEntry{ledgerEntry(w1, 1, continuo.LedgerEstimate, "", 2000, Base), ledgerEntry(w2, 1, continuo.LedgerHostExact, "", 1500, Base),
		ledgerEntry(w1, 0, continuo.LedgerHostExact, "", 7777, Base), ledgerEntry(other.ID, 1, continuo.LedgerEstimate, "", 6666, Base)} {
		ledgerReport(t, s, e)
	}
	want := append(ledgerEntries(t, s, w1, 1), ledgerEntries(t, s, w2, 1)...)
	if len(want) != 4 {
		t.Fatalf("the fixture's entries: %v", want)
	}
	got := mustGet(t, s, "LedgerOfSwarm", func(tx store.Tx) ([]continuo.LedgerEntry, error) { return tx.LedgerOfSwarm(t.Context(), f.Swarm.ID) })
	sameList(t, "LedgerOfSwarm", got, want, normLedger)
	none := mustGet(t, s, "LedgerOfSwarm", func(tx store.Tx) ([]continuo.LedgerEntry, error) {
		return tx.LedgerOfSwarm(t.Context(), continuo.NewID(continuo.PrefixSwarm, Base))
	})
	if len(none) != 0 {
		t.Errorf("LedgerOfSwarm of an unknown swarm: %v", none)
	}
}

// testAttemptsLatest: each task's attempt of its own number — not an
// earlier one — and none for a task never claimed or unknown; at most
// MaxAttemptsLatest tasks.
func testAttemptsLatest(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	twice := heldTask(t, s, f.Swarm.ID, f.W1.ID, "twice", 2)
	SwarmAttempt(t, s, twice, "host-1", func(a *continuo.Attempt) { a.Number = 1; attemptEnded(continuo.AttemptRequeued)(a) })
	second := SwarmAttempt(t, s, twice, "host-1")
	once := heldTask(t, s, f.Swarm.ID, f.W2.ID, "once", 1)
	first := SwarmAttempt(t, s, once, "host-2")
	queued := SwarmTask(t, s, f.Swarm.ID, "queued")
	get := func(ids []string) (map[string]continuo.Attempt, error) {
		var out map[string]continuo.Attempt
		err := s.Read(t.Context(), func(tx store.Tx) (err error) {
			out, err = tx.AttemptsLatest(t.Context(), ids)
			return err
		})
		return out, err
	}
	got, err := get([]string{twice.ID, once.ID, queued.ID, continuo.NewID(continuo.PrefixTask, Base)})
	if err != nil || len(got) != 2 {
		t.Fatalf("AttemptsLatest = %v, %v", got, err)
	}
	sameList(t, "AttemptsLatest", []continuo.Attempt{got[twice.ID], got[once.ID]}, []continuo.Attempt{*second, *first}, normAttempt)
	if none, err := get(nil); err != nil || len(none) != 0 {
		t.Errorf("AttemptsLatest of no task = %v, %v", none, err)
	}
	many := make([]string, store.MaxAttemptsLatest+1)
	for i := range many {
		many[i] = twice.ID
	}
	if _, err := get(many); err == nil {
		t.Errorf("AttemptsLatest of %d tasks: no error", len(many))
	}
}
