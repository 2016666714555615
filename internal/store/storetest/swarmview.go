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
