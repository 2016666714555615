package sqlstore

import (
	"context"
	"errors"

	"github.com/continuo-dev/continuo/internal/store"
)

// TaskTimeline implements store.SwarmTx: two aggregates over the swarm's
// tasks, one by creation time and one by end time, each grouped by bucket
// number in SQL (integer division on both engines), so that only the
// counts leave the database.
func (t *Tx) TaskTimeline(ctx context.Context, p store.TaskTimelineParams) ([]store.TaskBucket, error) {
	bucket := p.Bucket.Milliseconds()
	if bucket < 1 || p.Buckets < 1 || p.Buckets > store.MaxTimelineBuckets {
		return nil, errors.New("store: a timeline needs a bucket of at least 1 ms and 1..MaxTimelineBuckets buckets")
	}
	since := ms(p.Since)
	until := since + bucket*int64(p.Buckets)
	out := make([]store.TaskBucket, p.Buckets)
	for i := range out {
		out[i].Start = fromMS(since + bucket*int64(i))
	}
	for _, col := range []string{"created_at", "ended_at"} {
		rows, err := t.rows(ctx, "SELECT ("+col+" - ?) / ?, count(*) FROM tasks WHERE swarm_id = ? AND "+col+" >= ? AND "+col+" < ? GROUP BY 1",
			since, bucket, p.SwarmID, since, until)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var b int64
			var n int
			if err := rows.Scan(&b, &n); err != nil {
				rows.Close()
				return nil, err
			}
			if b < 0 || b >= int64(p.Buckets) {
				continue
			}
			if col == "created_at" {
				out[b].Dispatched = n
			} else {
				out[b].Settled = n
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, t.interpret(err)
		}
	}
	return out, nil
}
