package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"slices"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// continuationCols are the columns of continuations, in declaration order.
const continuationCols = `id, swarm_id, worker_id, path, state, version, source_epoch, target_epoch, source_carrier,
	target_carrier, target_source, ticket_hash, checkpoint_hash, capsule, capsule_hash, reason, requested_by, request_hash,
	created_at, updated_at, expires_at, bound_at, carrier_op, carrier_proc, carrier_token, approved_by`

// continuationOpen keeps the open continuations. It is written as the
// WHERE of the partial indexes continuations_open and
// continuations_expiry, term for term: SQLite uses a partial index only
// for a query whose WHERE holds the index's.
const continuationOpen = "(state = '" + string(continuo.ContinuationPending) + "' OR state = '" +
	string(continuo.ContinuationApproved) + "' OR state = '" + string(continuo.ContinuationReconcileRequired) + "')"

func scanContinuation(s scanner) (*continuo.Continuation, error) {
	var c continuo.Continuation
	var path, state, source, op string
	var created, updated, expires int64
	var bound sql.NullInt64
	if err := s.Scan(&c.ID, &c.SwarmID, &c.WorkerID, &path, &state, &c.Version, &c.SourceEpoch, &c.TargetEpoch, &c.SourceCarrier,
		&c.TargetCarrier, &source, &c.TicketHash, &c.CheckpointHash, &c.Capsule, &c.CapsuleHash, &c.Reason, &c.RequestedBy,
		&c.RequestHash, &created, &updated, &expires, &bound, &op, &c.CarrierProc, &c.CarrierToken, &c.ApprovedBy); err != nil {
		return nil, err
	}
	c.Path, c.State, c.TargetSource = continuo.ContinuationPath(path), continuo.ContinuationState(state), continuo.CarrierSource(source)
	c.CarrierOp = continuo.CarrierOp(op)
	c.CreatedAt, c.UpdatedAt, c.ExpiresAt, c.BoundAt = fromMS(created), fromMS(updated), fromMS(expires), fromNullMS(bound)
	return &c, nil
}

// ContinuationCreate implements store.ContinuationTx. The primary key,
// continuations_open (one open continuation per worker) and
// continuations_ticket are unique: any violated is ErrConflict.
func (t *Tx) ContinuationCreate(ctx context.Context, c *continuo.Continuation) error {
	_, err := t.exec(ctx, "INSERT INTO continuations ("+continuationCols+") VALUES ("+Placeholders(26)+")",
		c.ID, c.SwarmID, c.WorkerID, string(c.Path), string(c.State), c.Version, c.SourceEpoch, c.TargetEpoch, c.SourceCarrier,
		c.TargetCarrier, string(c.TargetSource), c.TicketHash, c.CheckpointHash, c.Capsule, c.CapsuleHash, c.Reason, c.RequestedBy,
		c.RequestHash, ms(c.CreatedAt), ms(c.UpdatedAt), ms(c.ExpiresAt), msPtr(c.BoundAt), string(c.CarrierOp), c.CarrierProc, c.CarrierToken, c.ApprovedBy)
	return err
}

// ContinuationGet implements store.ContinuationTx.
func (t *Tx) ContinuationGet(ctx context.Context, id string) (*continuo.Continuation, error) {
	c, err := scanContinuation(t.row(ctx, "SELECT "+continuationCols+" FROM continuations WHERE id = ?", id))
	return c, t.interpret(err)
}

// ContinuationByTicket implements store.ContinuationTx, through
// continuations_ticket. No ticket ("") names no continuation: the
// approval path's have none.
func (t *Tx) ContinuationByTicket(ctx context.Context, ticketHash string) (*continuo.Continuation, error) {
	if ticketHash == "" {
		return nil, store.ErrNotFound
	}
	c, err := scanContinuation(t.row(ctx, "SELECT "+continuationCols+" FROM continuations WHERE ticket_hash = ? AND ticket_hash <> ''",
		ticketHash))
	return c, t.interpret(err)
}

// ContinuationOpen implements store.ContinuationTx, through
// continuations_open.
func (t *Tx) ContinuationOpen(ctx context.Context, workerID string) (*continuo.Continuation, error) {
	c, err := scanContinuation(t.row(ctx, "SELECT "+continuationCols+" FROM continuations WHERE worker_id = ? AND "+continuationOpen,
		workerID))
	return c, t.interpret(err)
}

// ContinuationUpdate implements store.ContinuationTx: the state stays as
// c has it.
func (t *Tx) ContinuationUpdate(ctx context.Context, c *continuo.Continuation, prevVersion int64) error {
	return t.continuationWrite(ctx, c, prevVersion, c.State, keep("state", c.State))
}

// ContinuationMove implements store.ContinuationTx, as a guarded
// transition.
func (t *Tx) ContinuationMove(ctx context.Context, c *continuo.Continuation, prevVersion int64, to continuo.ContinuationState) error {
	if err := t.continuationWrite(ctx, c, prevVersion, to, move("state", c.State, to)); err != nil {
		return err
	}
	c.State = to
	return nil
}

// continuationWrite writes c's mutable fields with state to, under guard.
// The swarm, worker, path, epochs, source carrier, ticket, checkpoint,
// reason, requester, request hash and creation time stay as created.
func (t *Tx) continuationWrite(ctx context.Context, c *continuo.Continuation, prevVersion int64, to continuo.ContinuationState,
	guard stateGuard) error {
	if c.Version <= prevVersion {
		return errors.New("store: a continuation update must raise the version")
	}
	return t.guarded(ctx, "continuations", "id", c.ID, []stateGuard{guard}, `UPDATE continuations SET state = ?, version = ?,
		target_carrier = ?, target_source = ?, capsule = ?, capsule_hash = ?, updated_at = ?, expires_at = ?, bound_at = ?,
		carrier_op = ?, carrier_proc = ?, carrier_token = ?, approved_by = ?
		WHERE id = ? AND version = ?`,
		string(to), c.Version, c.TargetCarrier, string(c.TargetSource), c.Capsule, c.CapsuleHash, ms(c.UpdatedAt),
		ms(c.ExpiresAt), msPtr(c.BoundAt), string(c.CarrierOp), c.CarrierProc, c.CarrierToken, c.ApprovedBy, c.ID, prevVersion)
}

// ContinuationList implements store.ContinuationTx; a limit ≤ 0 is 100.
// A swarm's, a worker's and a target carrier's continuations are range
// scans of their indexes; States that are exactly the open ones are
// written as continuationOpen, so that the reaper's ExpiresBefore scans
// continuations_expiry.
func (t *Tx) ContinuationList(ctx context.Context, p store.ContinuationListParams) ([]continuo.Continuation, error) {
	w := newWhere("1 = 1")
	w.eq("swarm_id", p.SwarmID)
	w.eq("worker_id", p.WorkerID)
	if p.TargetCarrier != "" {
		w.and("target_carrier = ? AND target_carrier <> ''", p.TargetCarrier)
	}
	if len(p.States) > 0 {
		if !slices.ContainsFunc(p.States, func(s continuo.ContinuationState) bool { return !s.Open() }) {
			// Open states only: the partial indexes of the open ones serve.
			w.and(continuationOpen)
		}
		if !openStates(p.States) {
			in(w, "state", p.States)
		}
	}
	w.eq("carrier_op", string(p.CarrierOp))
	w.before("expires_at", p.ExpiresBefore)
	if p.BeforeID != "" {
		w.and("id < ?", p.BeforeID)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = swarmListDefault
	}
	return list(t, ctx, scanContinuation, "SELECT "+continuationCols+" FROM continuations WHERE "+w.sql+" ORDER BY id DESC LIMIT ?",
		append(w.args, limit)...)
}

// openStates reports whether states are the open states, each once, in
// any order.
func openStates(states []continuo.ContinuationState) bool {
	if len(states) != 3 {
		return false
	}
	for _, s := range []continuo.ContinuationState{continuo.ContinuationPending, continuo.ContinuationApproved,
		continuo.ContinuationReconcileRequired} {
		if !slices.Contains(states, s) {
			return false
		}
	}
	return true
}

// WorkersBlocked implements store.ContinuationTx, through workers_blocked.
func (t *Tx) WorkersBlocked(ctx context.Context) (int, error) {
	var n int
	err := t.row(ctx, "SELECT count(*) FROM workers WHERE continuity_state = '"+string(continuo.ContinuityCompactBlocked)+"'").Scan(&n)
	return n, t.interpret(err)
}

// WorkersCompacting implements store.ContinuationTx, through
// workers_compact.
func (t *Tx) WorkersCompacting(ctx context.Context, limit int) ([]continuo.Worker, error) {
	if limit <= 0 {
		limit = swarmListDefault
	}
	return list(t, ctx, scanWorker, "SELECT "+workerCols+" FROM workers WHERE continuity_state = 'compact_required' ORDER BY id LIMIT ?", limit)
}
