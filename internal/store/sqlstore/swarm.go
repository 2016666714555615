package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// swarmListDefault is SwarmList's, TaskList's and AttemptsActive's limit
// when none is given.
const swarmListDefault = 100

// The columns of the swarm's tables, in declaration order.
const (
	swarmCols = `id, group_id, created_by, owner_carrier, state, worker_limit, policy, invite_hash, invite_expires_at,
	revision, created_at, updated_at`
	workerCols = `id, swarm_id, principal_id, label, epoch, carrier_hash, carrier_source, carrier_state, state,
	continuity_state, current_task_id, join_hash, checkpoint, checkpoint_hash, checkpoint_at, last_seen_at,
	revision, created_at, updated_at, counted_tokens, blocked_reason, retired_reason, retired_at, idle_ttl_ms`
	carrierCols = `hash, worker_id, swarm_id, epoch, source, state, bound_at, retired_at`
)

func scanSwarm(s scanner) (*continuo.Swarm, error) {
	var w continuo.Swarm
	var state, policy string
	var invite, created, updated int64
	if err := s.Scan(&w.ID, &w.GroupID, &w.CreatedBy, &w.OwnerCarrier, &state, &w.WorkerLimit, &policy, &w.InviteHash, &invite,
		&w.Revision, &created, &updated); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(policy), &w.Policy); err != nil {
		return nil, err
	}
	w.State, w.InviteExpiresAt = continuo.SwarmState(state), fromLeaseMS(invite)
	w.CreatedAt, w.UpdatedAt = fromMS(created), fromMS(updated)
	return &w, nil
}

// SwarmCreate implements store.SwarmTx. No invite expiry (the zero time)
// is stored as 0, as no lease is.
func (t *Tx) SwarmCreate(ctx context.Context, s *continuo.Swarm) error {
	policy, err := json.Marshal(s.Policy)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, "INSERT INTO swarms ("+swarmCols+") VALUES ("+Placeholders(12)+")",
		s.ID, s.GroupID, s.CreatedBy, s.OwnerCarrier, string(s.State), s.WorkerLimit, string(policy), s.InviteHash,
		leaseMS(s.InviteExpiresAt), s.Revision, ms(s.CreatedAt), ms(s.UpdatedAt))
	return err
}

// SwarmGet implements store.SwarmTx.
func (t *Tx) SwarmGet(ctx context.Context, id string) (*continuo.Swarm, error) {
	s, err := scanSwarm(t.row(ctx, "SELECT "+swarmCols+" FROM swarms WHERE id = ?", id))
	return s, t.interpret(err)
}

// SwarmUpdate implements store.SwarmTx. The group, creator, owner
// carrier, worker limit and policy stay as created.
func (t *Tx) SwarmUpdate(ctx context.Context, s *continuo.Swarm, prevRevision int64) error {
	if s.Revision <= prevRevision {
		return errors.New("store: a swarm update must raise the revision")
	}
	return t.useOnce(ctx, "swarms", s.ID, store.ErrStale, `UPDATE swarms SET state = ?, invite_hash = ?, invite_expires_at = ?,
		revision = ?, updated_at = ? WHERE id = ? AND revision = ?`,
		string(s.State), s.InviteHash, leaseMS(s.InviteExpiresAt), s.Revision, ms(s.UpdatedAt), s.ID, prevRevision)
}

// SwarmList implements store.SwarmTx: a range scan of swarms_group; a
// limit ≤ 0 is 100.
func (t *Tx) SwarmList(ctx context.Context, p store.SwarmListParams) ([]continuo.Swarm, error) {
	where, args := "group_id = ?", []any{p.GroupID}
	if p.BeforeID != "" {
		where += " AND id < ?"
		args = append(args, p.BeforeID)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = swarmListDefault
	}
	return list(t, ctx, scanSwarm, "SELECT "+swarmCols+" FROM swarms WHERE "+where+" ORDER BY id DESC LIMIT ?", append(args, limit)...)
}

func scanWorker(s scanner) (*continuo.Worker, error) {
	var w continuo.Worker
	var source, carrier, state, continuity string
	var blocked, retired string
	var checkpointAt, retiredAt sql.NullInt64
	var seen, created, updated, idleTTL int64
	if err := s.Scan(&w.ID, &w.SwarmID, &w.PrincipalID, &w.Label, &w.Epoch, &w.CarrierHash, &source, &carrier, &state,
		&continuity, &w.CurrentTaskID, &w.JoinHash, &w.Checkpoint, &w.CheckpointHash, &checkpointAt, &seen,
		&w.Revision, &created, &updated, &w.CountedTokens, &blocked, &retired, &retiredAt, &idleTTL); err != nil {
		return nil, err
	}
	w.CarrierSource, w.CarrierState = continuo.CarrierSource(source), continuo.CarrierState(carrier)
	w.State, w.ContinuityState = continuo.WorkerState(state), continuo.ContinuityState(continuity)
	w.BlockedReason, w.RetiredReason, w.RetiredAt = continuo.BlockedReason(blocked), continuo.RetiredReason(retired), fromNullMS(retiredAt)
	w.IdleTTL = time.Duration(idleTTL) * time.Millisecond
	w.CheckpointAt, w.LastSeenAt = fromNullMS(checkpointAt), fromMS(seen)
	w.CreatedAt, w.UpdatedAt = fromMS(created), fromMS(updated)
	return &w, nil
}

// WorkerCreate implements store.SwarmTx. No idle TTL is the default one.
func (t *Tx) WorkerCreate(ctx context.Context, w *continuo.Worker) error {
	idleTTL := w.IdleTTL
	if idleTTL <= 0 {
		idleTTL = continuo.DefaultWorkerIdleTTL
	}
	_, err := t.exec(ctx, "INSERT INTO workers ("+workerCols+") VALUES ("+Placeholders(24)+")",
		w.ID, w.SwarmID, w.PrincipalID, w.Label, w.Epoch, w.CarrierHash, string(w.CarrierSource), string(w.CarrierState), string(w.State),
		string(w.ContinuityState), w.CurrentTaskID, w.JoinHash, w.Checkpoint, w.CheckpointHash, msPtr(w.CheckpointAt), ms(w.LastSeenAt),
		w.Revision, ms(w.CreatedAt), ms(w.UpdatedAt), w.CountedTokens, string(w.BlockedReason), string(w.RetiredReason),
		msPtr(w.RetiredAt), idleTTL.Milliseconds())
	return err
}

// WorkerGet implements store.SwarmTx.
func (t *Tx) WorkerGet(ctx context.Context, id string) (*continuo.Worker, error) {
	w, err := scanWorker(t.row(ctx, "SELECT "+workerCols+" FROM workers WHERE id = ?", id))
	return w, t.interpret(err)
}

// WorkerUpdate implements store.SwarmTx: the state and carrier state
// stay as w has them.
func (t *Tx) WorkerUpdate(ctx context.Context, w *continuo.Worker, prevRevision int64) error {
	return t.workerWrite(ctx, w, prevRevision, w.State, w.CarrierState,
		[]stateGuard{keep("state", w.State), keep("carrier_state", w.CarrierState)})
}

// WorkerMove implements store.SwarmTx, as a guarded transition of both
// the worker's state and its carrier state.
func (t *Tx) WorkerMove(ctx context.Context, w *continuo.Worker, prevRevision int64, to continuo.WorkerState, carrier continuo.CarrierState) error {
	guards := []stateGuard{move("state", w.State, to), move("carrier_state", w.CarrierState, carrier)}
	if err := t.workerWrite(ctx, w, prevRevision, to, carrier, guards); err != nil {
		return err
	}
	w.State, w.CarrierState = to, carrier
	return nil
}

// workerWrite writes w's mutable fields with the states given, under
// guards. The swarm, principal, label, join hash, idle TTL and creation
// time stay as created.
func (t *Tx) workerWrite(ctx context.Context, w *continuo.Worker, prevRevision int64, to continuo.WorkerState,
	carrier continuo.CarrierState, guards []stateGuard) error {
	if w.Revision <= prevRevision {
		return errors.New("store: a worker update must raise the revision")
	}
	return t.guarded(ctx, "workers", "id", w.ID, guards, `UPDATE workers SET epoch = ?, carrier_hash = ?, carrier_source = ?,
		carrier_state = ?, state = ?, continuity_state = ?, current_task_id = ?, checkpoint = ?, checkpoint_hash = ?,
		checkpoint_at = ?, last_seen_at = ?, revision = ?, updated_at = ?, counted_tokens = ?, blocked_reason = ?,
		retired_reason = ?, retired_at = ? WHERE id = ? AND revision = ?`,
		w.Epoch, w.CarrierHash, string(w.CarrierSource), string(carrier), string(to), string(w.ContinuityState),
		w.CurrentTaskID, w.Checkpoint, w.CheckpointHash, msPtr(w.CheckpointAt), ms(w.LastSeenAt), w.Revision, ms(w.UpdatedAt),
		w.CountedTokens, string(w.BlockedReason), string(w.RetiredReason), msPtr(w.RetiredAt), w.ID, prevRevision)
}

// WorkerTouch implements store.SwarmTx. A lost carrier that calls is
// active again (lost → active, the one move of the carrier table it makes); a retired one stays fenced. The revision stays, so that a
// touch never makes an update computed before it stale.
func (t *Tx) WorkerTouch(ctx context.Context, id string, at time.Time) error {
	return t.execOne(ctx, store.ErrNotFound, `UPDATE workers SET last_seen_at = ?,
		carrier_state = CASE WHEN carrier_state = '`+string(continuo.CarrierLost)+`' THEN '`+string(continuo.CarrierActive)+`'
			ELSE carrier_state END WHERE id = ?`, ms(at), id)
}

// WorkerList implements store.SwarmTx: a range scan of workers_swarm.
func (t *Tx) WorkerList(ctx context.Context, swarmID string) ([]continuo.Worker, error) {
	return list(t, ctx, scanWorker, "SELECT "+workerCols+" FROM workers WHERE swarm_id = ? ORDER BY id", swarmID)
}

// WorkerCount implements store.SwarmTx: a range of workers_swarm.
func (t *Tx) WorkerCount(ctx context.Context, swarmID string) (int, error) {
	var n int
	err := t.row(ctx, "SELECT count(*) FROM workers WHERE swarm_id = ? AND retired_reason = ''", swarmID).Scan(&n)
	return n, t.interpret(err)
}

// workerIdle keeps the workers the idle reaper may retire, as workers_idle's
// WHERE says it, and idleAt is that index's expression: when the worker's
// carrier's silence runs past its idle TTL.
const (
	workerIdle = "retired_reason = '' AND state = '" + string(continuo.WorkerIdle) + "'"
	idleAt     = "last_seen_at + idle_ttl_ms"
)

// WorkersIdle implements store.SwarmTx: a range of workers_idle; a limit
// ≤ 0 is 100.
func (t *Tx) WorkersIdle(ctx context.Context, now time.Time, limit int) ([]continuo.Worker, error) {
	if limit <= 0 {
		limit = swarmListDefault
	}
	return list(t, ctx, scanWorker, "SELECT "+workerCols+" FROM workers WHERE "+workerIdle+" AND "+idleAt+" < ? ORDER BY "+idleAt+" LIMIT ?",
		ms(now), limit)
}

func scanCarrier(s scanner) (*continuo.Carrier, error) {
	var c continuo.Carrier
	var source, state string
	var bound int64
	var retired sql.NullInt64
	if err := s.Scan(&c.Hash, &c.WorkerID, &c.SwarmID, &c.Epoch, &source, &state, &bound, &retired); err != nil {
		return nil, err
	}
	c.Source, c.State, c.BoundAt, c.RetiredAt = continuo.CarrierSource(source), continuo.CarrierState(state), fromMS(bound), fromNullMS(retired)
	return &c, nil
}

// CarrierBind implements store.SwarmTx. The hash is the primary key of
// carriers and carriers_active allows one active row per worker: either
// violated is ErrConflict.
func (t *Tx) CarrierBind(ctx context.Context, c continuo.Carrier) error {
	_, err := t.exec(ctx, "INSERT INTO carriers ("+carrierCols+") VALUES ("+Placeholders(8)+")",
		c.Hash, c.WorkerID, c.SwarmID, c.Epoch, string(c.Source), string(c.State), ms(c.BoundAt), msPtr(c.RetiredAt))
	return err
}

// CarrierGet implements store.SwarmTx.
func (t *Tx) CarrierGet(ctx context.Context, hash string) (*continuo.Carrier, error) {
	c, err := scanCarrier(t.row(ctx, "SELECT "+carrierCols+" FROM carriers WHERE hash = ?", hash))
	return c, t.interpret(err)
}

// CarrierRetire implements store.SwarmTx, as a guarded transition of the
// carrier table: a retirement is a change, so retired → retired is not
// allowed.
func (t *Tx) CarrierRetire(ctx context.Context, hash string, at time.Time) error {
	retire := stateGuard{col: "state", allowed: []string{}}
	for _, s := range continuo.CarrierRetired.From() {
		retire.allowed = append(retire.allowed, string(s))
	}
	return t.guarded(ctx, "carriers", "hash", hash, []stateGuard{retire},
		"UPDATE carriers SET state = '"+string(continuo.CarrierRetired)+"', retired_at = ? WHERE hash = ?", ms(at), hash)
}
