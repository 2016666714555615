package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// The columns of tasks and attempts, in declaration order.
const (
	taskCols = `id, swarm_id, task_key, request_hash, prompt, payload, preferred_worker_id, worker_id, state, attempt,
	result, result_hash, reason, detail, revision, created_at, updated_at, ended_at`
	attemptCols = `id, task_id, swarm_id, number, worker_id, epoch, server, state, lease_until, claimed_at, acked_at, ended_at`
)

// attemptActive keeps the active attempts. It is written as the WHERE of
// the partial indexes attempts_lease and attempts_server, term for term:
// SQLite uses a partial index only for a query whose WHERE holds the
// index's.
const attemptActive = "state IN ('" + string(continuo.AttemptClaimed) + "', '" + string(continuo.AttemptRunning) + "')"

// taskQueued keeps the queued tasks, as tasks_queue's WHERE says it.
const taskQueued = "state = '" + string(continuo.TaskQueued) + "'"

func scanTask(s scanner) (*continuo.Task, error) {
	var k continuo.Task
	var state string
	var created, updated int64
	var ended sql.NullInt64
	if err := s.Scan(&k.ID, &k.SwarmID, &k.TaskKey, &k.RequestHash, &k.Prompt, &k.Payload, &k.PreferredWorkerID, &k.WorkerID, &state,
		&k.Attempt, &k.Result, &k.ResultHash, &k.Reason, &k.Detail, &k.Revision, &created, &updated, &ended); err != nil {
		return nil, err
	}
	k.State, k.CreatedAt, k.UpdatedAt, k.EndedAt = continuo.TaskState(state), fromMS(created), fromMS(updated), fromNullMS(ended)
	return &k, nil
}

// TaskCreate implements store.SwarmTx.
func (t *Tx) TaskCreate(ctx context.Context, k *continuo.Task) error {
	_, err := t.exec(ctx, "INSERT INTO tasks ("+taskCols+") VALUES ("+Placeholders(18)+")",
		k.ID, k.SwarmID, k.TaskKey, k.RequestHash, k.Prompt, k.Payload, k.PreferredWorkerID, k.WorkerID, string(k.State),
		k.Attempt, k.Result, k.ResultHash, k.Reason, k.Detail, k.Revision, ms(k.CreatedAt), ms(k.UpdatedAt), msPtr(k.EndedAt))
	return err
}

// TaskGet implements store.SwarmTx.
func (t *Tx) TaskGet(ctx context.Context, id string) (*continuo.Task, error) {
	k, err := scanTask(t.row(ctx, "SELECT "+taskCols+" FROM tasks WHERE id = ?", id))
	return k, t.interpret(err)
}

// TaskByKey implements store.SwarmTx, through tasks_key.
func (t *Tx) TaskByKey(ctx context.Context, swarmID, taskKey string) (*continuo.Task, error) {
	k, err := scanTask(t.row(ctx, "SELECT "+taskCols+" FROM tasks WHERE swarm_id = ? AND task_key = ?", swarmID, taskKey))
	return k, t.interpret(err)
}

// TaskUpdate implements store.SwarmTx: the state stays as k has it.
func (t *Tx) TaskUpdate(ctx context.Context, k *continuo.Task, prevRevision int64) error {
	return t.taskWrite(ctx, k, prevRevision, k.State, keep("state", k.State))
}

// TaskMove implements store.SwarmTx, as a guarded transition.
func (t *Tx) TaskMove(ctx context.Context, k *continuo.Task, prevRevision int64, to continuo.TaskState) error {
	if err := t.taskWrite(ctx, k, prevRevision, to, move("state", k.State, to)); err != nil {
		return err
	}
	k.State = to
	return nil
}

// taskWrite writes k's mutable fields with state to, under guard. The
// swarm, key, request hash, prompt, payload, preferred worker and
// creation time stay as created.
func (t *Tx) taskWrite(ctx context.Context, k *continuo.Task, prevRevision int64, to continuo.TaskState, guard stateGuard) error {
	if k.Revision <= prevRevision {
		return errors.New("store: a task update must raise the revision")
	}
	return t.guarded(ctx, "tasks", "id", k.ID, []stateGuard{guard}, `UPDATE tasks SET worker_id = ?, state = ?, attempt = ?, result = ?,
		result_hash = ?, reason = ?, detail = ?, revision = ?, updated_at = ?, ended_at = ? WHERE id = ? AND revision = ?`,
		k.WorkerID, string(to), k.Attempt, k.Result, k.ResultHash, k.Reason, k.Detail, k.Revision, ms(k.UpdatedAt),
		msPtr(k.EndedAt), k.ID, prevRevision)
}

// stateIn is the guard "state IN (…)" of an update to a task state: the
// states the task transition table lets become to (constants, written
// as literals).
func stateIn(to continuo.TaskState) string {
	from := to.From()
	q := make([]string, len(from))
	for i, s := range from {
		q[i] = "'" + string(s) + "'"
	}
	return "state IN (" + strings.Join(q, ", ") + ")"
}

// The guards of the claim and submit statements.
var (
	claimFrom  = stateIn(continuo.TaskClaimed)
	submitFrom = stateIn(continuo.TaskResultReady)
)

// TaskClaim implements store.SwarmTx: one UPDATE whose sub-SELECTs each
// take the oldest queued task of one preference (the first row of a
// range scan of tasks_queue), the worker's own first; the outer state guard (the states
// that may become claimed) keeps a claim from taking a task another claim
// took first. A worker that already holds an active task meets
// tasks_active_worker: ErrConflict.
func (t *Tx) TaskClaim(ctx context.Context, swarmID, workerID string, at time.Time, ack bool) (*continuo.Task, error) {
	if !t.write {
		return nil, ErrReadOnly
	}
	if workerID == "" {
		return nil, errors.New("store: TaskClaim needs a worker")
	}
	state := continuo.TaskClaimed
	if ack {
		state = continuo.TaskRunning
	}
	// One statement for both tries, each a range of tasks_queue: the
	// worker's preferred tasks first, then the oldest of anyone's.
	// COALESCE runs the second only when the first found nothing (both
	// engines evaluate it lazily).
	pick := `(SELECT id FROM tasks WHERE swarm_id = ? AND ` + taskQueued + ` AND preferred_worker_id = ?
			ORDER BY id LIMIT 1` + t.d.SkipLocked() + `)`
	k, err := scanTask(t.row(ctx, `UPDATE tasks SET state = ?, worker_id = ?, attempt = attempt + 1,
		revision = revision + 1, updated_at = ?
		WHERE id = COALESCE(`+pick+`, `+pick+`) AND `+claimFrom+`
		RETURNING `+taskCols, string(state), workerID, ms(at), swarmID, workerID, swarmID, ""))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	return k, t.interpret(err)
}

// TaskSubmit implements store.SwarmTx: one UPDATE guarded by the revision
// and by the states that may become result_ready.
func (t *Tx) TaskSubmit(ctx context.Context, k *continuo.Task, prevRevision int64) error {
	if k.Revision <= prevRevision {
		return errors.New("store: a submit raises the task's revision")
	}
	if err := t.useOnce(ctx, "tasks", k.ID, store.ErrStale, `UPDATE tasks SET state = ?, result = ?, result_hash = ?, reason = ?,
		detail = ?, revision = ?, updated_at = ?, ended_at = ? WHERE id = ? AND revision = ? AND `+submitFrom,
		string(continuo.TaskResultReady), k.Result, k.ResultHash, k.Reason, k.Detail, k.Revision, ms(k.UpdatedAt), msPtr(k.EndedAt),
		k.ID, prevRevision); err != nil {
		return err
	}
	k.State = continuo.TaskResultReady
	return nil
}

// TaskQueued implements store.SwarmTx: the first row of the two ranges
// of tasks_queue that TaskClaim scans.
func (t *Tx) TaskQueued(ctx context.Context, swarmID, workerID string) (bool, error) {
	var one int
	err := t.row(ctx, "SELECT 1 FROM tasks WHERE swarm_id = ? AND "+taskQueued+" AND preferred_worker_id IN (?, '') LIMIT 1",
		swarmID, workerID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, t.interpret(err)
}

// TaskCount implements store.SwarmTx: a range of the tasks_state index.
func (t *Tx) TaskCount(ctx context.Context, swarmID string, state continuo.TaskState) (int, error) {
	var n int
	err := t.row(ctx, "SELECT count(*) FROM tasks WHERE swarm_id = ? AND state = ?", swarmID, string(state)).Scan(&n)
	return n, t.interpret(err)
}

// TaskCounts implements store.SwarmTx, from tasks_state alone.
func (t *Tx) TaskCounts(ctx context.Context, swarmID string) (map[continuo.TaskState]int, error) {
	rows, err := t.rows(ctx, "SELECT state, count(*) FROM tasks WHERE swarm_id = ? GROUP BY state", swarmID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[continuo.TaskState]int{}
	for rows.Next() {
		var state string
		var n int
		if err := rows.Scan(&state, &n); err != nil {
			return nil, err
		}
		out[continuo.TaskState(state)] = n
	}
	return out, t.interpret(rows.Err())
}

// TaskList implements store.SwarmTx; a limit ≤ 0 is 100. A worker's
// tasks are a range scan of tasks_worker, in either order.
func (t *Tx) TaskList(ctx context.Context, p store.TaskListParams) ([]continuo.Task, error) {
	w := newWhere("swarm_id = ?", p.SwarmID)
	w.eq("worker_id", p.WorkerID)
	in(w, "state", p.States)
	if p.AfterID != "" {
		w.and("id > ?", p.AfterID)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = swarmListDefault
	}
	order := "id"
	if p.Newest {
		order = "id DESC"
	}
	return list(t, ctx, scanTask, "SELECT "+taskCols+" FROM tasks WHERE "+w.sql+" ORDER BY "+order+" LIMIT ?", append(w.args, limit)...)
}

func scanAttempt(s scanner) (*continuo.Attempt, error) {
	var a continuo.Attempt
	var state string
	var lease, claimed int64
	var acked, ended sql.NullInt64
	if err := s.Scan(&a.ID, &a.TaskID, &a.SwarmID, &a.Number, &a.WorkerID, &a.Epoch, &a.Server, &state, &lease, &claimed,
		&acked, &ended); err != nil {
		return nil, err
	}
	a.State, a.LeaseUntil, a.ClaimedAt = continuo.AttemptState(state), fromLeaseMS(lease), fromMS(claimed)
	a.AckedAt, a.EndedAt = fromNullMS(acked), fromNullMS(ended)
	return &a, nil
}

// AttemptCreate implements store.SwarmTx. attempts_number and
// attempts_active are unique: either violated is ErrConflict.
func (t *Tx) AttemptCreate(ctx context.Context, a *continuo.Attempt) error {
	_, err := t.exec(ctx, "INSERT INTO attempts ("+attemptCols+") VALUES ("+Placeholders(12)+")",
		a.ID, a.TaskID, a.SwarmID, a.Number, a.WorkerID, a.Epoch, a.Server, string(a.State), leaseMS(a.LeaseUntil),
		ms(a.ClaimedAt), msPtr(a.AckedAt), msPtr(a.EndedAt))
	return err
}

// AttemptGet implements store.SwarmTx.
func (t *Tx) AttemptGet(ctx context.Context, id string) (*continuo.Attempt, error) {
	a, err := scanAttempt(t.row(ctx, "SELECT "+attemptCols+" FROM attempts WHERE id = ?", id))
	return a, t.interpret(err)
}

// AttemptOf implements store.SwarmTx, through attempts_number.
func (t *Tx) AttemptOf(ctx context.Context, taskID string, n int) (*continuo.Attempt, error) {
	a, err := scanAttempt(t.row(ctx, "SELECT "+attemptCols+" FROM attempts WHERE task_id = ? AND number = ?", taskID, n))
	return a, t.interpret(err)
}

// AttemptUpdate implements store.SwarmTx: the state stays as a has it.
func (t *Tx) AttemptUpdate(ctx context.Context, a *continuo.Attempt) error {
	return t.attemptWrite(ctx, a, a.State)
}

// AttemptMove implements store.SwarmTx.
func (t *Tx) AttemptMove(ctx context.Context, a *continuo.Attempt, to continuo.AttemptState) error {
	if err := t.attemptWrite(ctx, a, to); err != nil {
		return err
	}
	a.State = to
	return nil
}

// attemptWrite writes a's state as to, its lease, acked_at and ended_at,
// if the stored state is still a's. The task, swarm, number, worker,
// epoch, server and claim time stay as created.
func (t *Tx) attemptWrite(ctx context.Context, a *continuo.Attempt, to continuo.AttemptState) error {
	return t.useOnce(ctx, "attempts", a.ID, store.ErrStale, `UPDATE attempts SET state = ?, lease_until = ?, acked_at = ?,
		ended_at = ? WHERE id = ? AND state = ?`,
		string(to), leaseMS(a.LeaseUntil), msPtr(a.AckedAt), msPtr(a.EndedAt), a.ID, string(a.State))
}

// AttemptsActive implements store.SwarmTx; a limit ≤ 0 is 100. No lease
// (0) is before every time, as RunList has it.
func (t *Tx) AttemptsActive(ctx context.Context, p store.AttemptListParams) ([]continuo.Attempt, error) {
	w := newWhere(attemptActive)
	w.eq("swarm_id", p.SwarmID)
	w.eq("server", p.Server)
	w.before("lease_until", p.LeaseBefore)
	limit := p.Limit
	if limit <= 0 {
		limit = swarmListDefault
	}
	return list(t, ctx, scanAttempt, "SELECT "+attemptCols+" FROM attempts WHERE "+w.sql+" ORDER BY id LIMIT ?",
		append(w.args, limit)...)
}

// AttemptServers implements store.SwarmTx, from attempts_server alone.
func (t *Tx) AttemptServers(ctx context.Context) ([]string, error) {
	return list(t, ctx, func(s scanner) (*string, error) {
		var server string
		return &server, s.Scan(&server)
	}, "SELECT DISTINCT server FROM attempts WHERE "+attemptActive+" ORDER BY server")
}
