package sqlstore

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// LedgerOfSwarm implements store.ContinuationTx: LedgerEntries for every
// worker of the swarm at once (a range of workers_swarm, each joined to
// its epoch's range of the ledger's primary key).
func (t *Tx) LedgerOfSwarm(ctx context.Context, swarmID string) ([]continuo.LedgerEntry, error) {
	const join = ` FROM workers w JOIN context_ledger l ON l.worker_id = w.id AND l.epoch = w.epoch WHERE w.swarm_id = ? AND l.`
	return list(t, ctx, scanLedger, `SELECT l.worker_id, l.epoch, l.source, '', CAST(SUM(l.tokens) AS BIGINT), '', MAX(l.at)`+join+
		ledgerCounted+` GROUP BY l.worker_id, l.epoch, l.source
		UNION ALL
		SELECT l.worker_id, l.epoch, l.source, l.ref, l.tokens, l.basis, l.at`+join+ledgerReported+`
		ORDER BY 1, 3, 4`, swarmID, swarmID)
}

// TaskTimeline implements store.SwarmTx: per count, one statement of one
// count per bucket (UNION ALL), each over a range of an index —
// tasks_created (swarm_id, created_at) for the tasks dispatched,
// tasks_ended (swarm_id, ended_at) for those settled — so that only the
// index entries of the window are read, and no row: a GROUP BY of a
// computed bucket would sort every entry first.
func (t *Tx) TaskTimeline(ctx context.Context, p store.TaskTimelineParams) ([]store.TaskBucket, error) {
	bucket := p.Bucket.Milliseconds()
	if bucket < 1 || p.Buckets < 1 || p.Buckets > store.MaxTimelineBuckets {
		return nil, errors.New("store: a timeline needs a bucket of at least 1 ms and 1..MaxTimelineBuckets buckets")
	}
	since := ms(p.Since)
	out := make([]store.TaskBucket, p.Buckets)
	for i := range out {
		out[i].Start = fromMS(since + bucket*int64(i))
	}
	for _, col := range []string{"created_at", "ended_at"} {
		var q strings.Builder
		args := make([]any, 0, 3*p.Buckets)
		for i := range p.Buckets {
			if i > 0 {
				q.WriteString(" UNION ALL ")
			}
			q.WriteString("SELECT " + strconv.Itoa(i) + ", count(*) FROM tasks WHERE swarm_id = ? AND " + col + " >= ? AND " + col + " < ?")
			from := since + bucket*int64(i)
			args = append(args, p.SwarmID, from, from+bucket)
		}
		rows, err := t.rows(ctx, q.String(), args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var b, n int
			if err := rows.Scan(&b, &n); err != nil {
				rows.Close()
				return nil, err
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

// AttemptsLatest implements store.SwarmTx: the tasks by primary key, each
// joined to its attempt by attempts_number.
func (t *Tx) AttemptsLatest(ctx context.Context, taskIDs []string) (map[string]continuo.Attempt, error) {
	if len(taskIDs) > store.MaxAttemptsLatest {
		return nil, errors.New("store: AttemptsLatest takes at most MaxAttemptsLatest tasks")
	}
	out := make(map[string]continuo.Attempt, len(taskIDs))
	if len(taskIDs) == 0 {
		return out, nil
	}
	args := make([]any, len(taskIDs))
	for i, id := range taskIDs {
		args[i] = id
	}
	as, err := list(t, ctx, scanAttempt, "SELECT a."+strings.ReplaceAll(attemptCols, ", ", ", a.")+
		" FROM tasks k JOIN attempts a ON a.task_id = k.id AND a.number = k.attempt WHERE k.id IN ("+Placeholders(len(args))+")", args...)
	for _, a := range as {
		out[a.TaskID] = a
	}
	return out, err
}
