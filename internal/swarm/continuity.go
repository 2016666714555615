package swarm

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/store"
)

// Worker continuity (CONTRACT.md §8): a continuation moves a worker from
// its carrier at epoch N to a new carrier at N+1 in one transaction —
// compare-and-set on the worker's epoch (its revision guards it), the
// continuation bound, the old carrier retired, the new one bound. Until
// that commits the old carrier stays current.

// ticketPrefix marks a continuation ticket as a credential.
const ticketPrefix = "cto_cnt_"

func newTicket() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	ticket := ticketPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	redact.RegisterMinted(ticket)
	return ticket
}

func ticketHash(t string) string { return digest("continuo ticket v1", t) }

// Prepared is a continuation with its one-time ticket (shown here only)
// and its capsule.
type Prepared struct {
	Continuation continuo.Continuation
	Ticket       string
}

// unsafe says why a worker cannot be continued now.
func unsafe(reason, format string, args ...any) *continuo.Error {
	return continuo.Errorf(continuo.CodeUnsafeBoundary, format, args...).With("reason", reason)
}

// boundary checks that a worker is at a safe boundary for a continuation:
// no task it holds (its effect may have started), a verified checkpoint,
// no other open continuation.
func boundary(ctx context.Context, tx store.Tx, w *continuo.Worker, except string) error {
	switch {
	case w.CarrierState == continuo.CarrierRetired:
		return unsafe("carrier_retired", "worker %s has no active carrier", w.ID)
	case w.CurrentTaskID != "":
		return unsafe("task_in_flight", "worker %s holds task %s, whose effect may have started: let it submit or fail it first", w.ID, w.CurrentTaskID).
			With("task_id", w.CurrentTaskID)
	case w.Checkpoint == "":
		return unsafe("no_checkpoint", "worker %s has no verified checkpoint to continue from (chat_swarm_checkpoint)", w.ID)
	}
	open, err := tx.ContinuationOpen(ctx, w.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return err
	case open.ID != except:
		return unsafe("continuation_pending", "worker %s has continuation %s open already", w.ID, open.ID).With("continuation_id", open.ID)
	}
	return nil
}

// ownWorker returns a worker of a swarm the caller owns.
func (s *Service) ownWorker(ctx context.Context, tx store.Tx, c *continuo.Caller, car Carrier, swarmID, workerID string) (*continuo.Swarm, *continuo.Worker, error) {
	sw, err := s.ownSwarm(ctx, tx, c, car, swarmID)
	if err != nil {
		return nil, nil, err
	}
	w, err := tx.WorkerGet(ctx, workerID)
	if errors.Is(err, store.ErrNotFound) || err == nil && w.SwarmID != sw.ID {
		return nil, nil, continuo.NotFound("worker", workerID)
	}
	return sw, w, err
}

// Prepare builds a continuation of a worker with a one-time ticket (TTL
// 30 s..15 min, default 10 min) bound to the swarm, the worker, the target
// epoch and the checkpoint, and the capsule the new carrier starts from.
func (s *Service) Prepare(ctx context.Context, c *continuo.Caller, car Carrier, swarmID, workerID, reason string, ttl time.Duration) (*Prepared, error) {
	if ttl == 0 {
		ttl = continuo.DefaultTicketTTL
	}
	if ttl < continuo.MinTicketTTL || ttl > continuo.MaxTicketTTL {
		return nil, continuo.Invalid("ttl_secs", "must be %d..%d", int(continuo.MinTicketTTL/time.Second), int(continuo.MaxTicketTTL/time.Second))
	}
	if reason == "" || len(reason) > continuo.MaxContinuationNote {
		return nil, continuo.Invalid("reason", "must be 1..%d bytes", continuo.MaxContinuationNote)
	}
	note, _ := redact.String(reason)
	ticket := newTicket()
	var out *Prepared
	err := s.db.Write(ctx, func(tx store.Tx) error {
		sw, w, err := s.ownWorker(ctx, tx, c, car, swarmID, workerID)
		if err != nil {
			return err
		}
		if sw.State != continuo.SwarmActive {
			return closedErr(sw)
		}
		if err := boundary(ctx, tx, w, ""); err != nil {
			return err
		}
		capsule, hash, err := buildCapsule(ctx, tx, w, w.Epoch+1, capsuleLimit(sw))
		if err != nil {
			return err
		}
		now := s.now()
		cn := newContinuation(w, continuo.PathTicket, note, c.PrincipalID, now, ttl)
		cn.TicketHash, cn.Capsule, cn.CapsuleHash = ticketHash(ticket), capsule, hash
		if err := s.open(ctx, tx, w, &cn, now); err != nil {
			return err
		}
		out = &Prepared{Continuation: cn, Ticket: ticket}
		return nil
	})
	return out, err
}

// newContinuation is a pending continuation of worker w from its carrier
// and epoch to the next, by path, asked for by requestedBy at now and
// open for ttl: what every path's continuation starts as. The caller adds
// what its path carries (ticket and capsule, or the requesting carrier).
func newContinuation(w *continuo.Worker, path continuo.ContinuationPath, reason, requestedBy string, now time.Time, ttl time.Duration) continuo.Continuation {
	return continuo.Continuation{ID: continuo.NewID(continuo.PrefixContinuation, now), SwarmID: w.SwarmID, WorkerID: w.ID,
		Path: path, State: continuo.ContinuationPending, Version: 1, SourceEpoch: w.Epoch, TargetEpoch: w.Epoch + 1,
		SourceCarrier: w.CarrierHash, CheckpointHash: w.CheckpointHash, Reason: reason, RequestedBy: requestedBy,
		CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(ttl)}
}

// open records a new continuation: its worker marked pending, then the
// continuation itself (a second open one of the worker is a conflict).
func (s *Service) open(ctx context.Context, tx store.Tx, w *continuo.Worker, cn *continuo.Continuation, now time.Time) error {
	if err := s.markPending(ctx, tx, w, now); err != nil {
		return err
	}
	return stale(tx.ContinuationCreate(ctx, cn), "the worker's continuation")
}

// markPending records on the worker that a continuation is open.
func (s *Service) markPending(ctx context.Context, tx store.Tx, w *continuo.Worker, now time.Time) error {
	return setContinuity(ctx, tx, w, continuo.ContinuityPending, now)
}

// Bound is a worker after a continuation bound its new carrier (or the
// receipt read again), with the continuation and its capsule.
type Bound struct {
	Worker       continuo.Worker
	Continuation continuo.Continuation
	Replayed     bool
	retired      string // the token of the carrier this retired, to revoke once committed
}

// Redeem binds the calling carrier to the worker a ticket continues
// (chat_swarm_join with continuation_ticket). The same carrier redeeming
// again gets the same receipt (replayed). A ticket nobody issued, and a
// ticket of a swarm another group owns, are the same not_found, and the
// latter is left as it was: still the rightful carrier's to redeem. A
// carrier that lost the race for the ticket to another — the ticket was
// open when its call began, bound to the other when its transaction ran —
// is told conflict, with the worker's new epoch; any other use of the
// ticket — used already when presented, expired, revoked, another swarm,
// a worker that moved on — is ticket_invalid.
func (s *Service) Redeem(ctx context.Context, c *continuo.Caller, car Carrier, swarmID, ticket string) (*Bound, error) {
	return s.redeem(ctx, c, car, swarmID, ticket, "", nil)
}

// RedeemAs is Redeem by a carrier that names the worker's label, as
// chat_swarm_join may: a label other than the worker's is invalid_input
// naming label, and binds nothing.
func (s *Service) RedeemAs(ctx context.Context, c *continuo.Caller, car Carrier, swarmID, ticket, label string) (*Bound, error) {
	return s.redeem(ctx, c, car, swarmID, ticket, label, nil)
}

// redeem is Redeem; label, if not "", must be the worker's; between, if not
// nil, runs after the ticket was first looked at and before the
// transaction that binds (a test's way to let another carrier win in
// between).
func (s *Service) redeem(ctx context.Context, c *continuo.Caller, car Carrier, swarmID, ticket, label string, between func()) (*Bound, error) {
	if err := c.Require(continuo.ScopeSwarmWork); err != nil {
		return nil, err
	}
	hash, err := car.need(c.PrincipalID)
	if err != nil {
		return nil, err
	}
	invalid := func(reason string) error {
		return continuo.Errorf(continuo.CodeTicketInvalid, "the continuation ticket is not valid here (%s)", reason).With("reason", reason)
	}
	// Was the ticket still to be had when this call began? Under a
	// single writer (SQLite), or once PostgreSQL ran a collided
	// transaction again, the loser of a race only ever sees the winner's
	// result; this look tells it from a ticket presented after its use.
	var wasOpen bool
	_ = s.db.Read(ctx, func(tx store.Tx) error {
		cn, err := ticketOf(ctx, tx, c, swarmID, ticket)
		wasOpen = err == nil && cn.State.Open()
		return nil
	})
	if between != nil {
		between()
	}
	var out *Bound
	var expired bool
	var token string // of a started carrier whose continuation this ended
	err = s.db.Write(ctx, func(tx store.Tx) error {
		out, expired, token = nil, false, ""
		cn, err := ticketOf(ctx, tx, c, swarmID, ticket)
		if err != nil {
			return err
		}
		if cn.SwarmID != swarmID {
			return invalid("another_swarm")
		}
		w, err := tx.WorkerGet(ctx, cn.WorkerID)
		if err != nil {
			return err
		}
		switch {
		case cn.State == continuo.ContinuationBound && subtle.ConstantTimeCompare([]byte(cn.TargetCarrier), []byte(hash)) == 1:
			if err := sameLabel(w, label); err != nil {
				return err
			}
			out, err = receipt(cn, w, hash)
			return err
		case cn.State == continuo.ContinuationBound && wasOpen:
			return continuo.Errorf(continuo.CodeConflict, "another carrier redeemed this ticket first: worker %s is at epoch %d with it", w.ID, w.Epoch).
				With("reason", "lost_race").With("epoch", w.Epoch)
		case cn.State == continuo.ContinuationBound:
			return invalid("used")
		case cn.State == continuo.ContinuationRevoked || cn.State == continuo.ContinuationExpired:
			return invalid(string(cn.State))
		case s.lapses(cn):
			expired = true
			token, err = s.expire(ctx, tx, cn, w)
			return err
		case !s.now().Before(cn.ExpiresAt):
			return invalid("expired") // in doubt: it stays for the owner
		}
		if err := sameLabel(w, label); err != nil {
			return err
		}
		return s.transfer(ctx, tx, cn, w, hash, car.Source, &out)
	})
	if err == nil && expired {
		s.revoke(ctx, token)
		return nil, invalid("expired")
	}
	if err == nil {
		s.revoke(ctx, out.retired)
		if !out.Replayed {
			s.meters.boundOne()
		}
	}
	return out, err
}

// sameLabel checks a label a continuing carrier gave ("" for none): it
// must be the worker's (which is stored as the join redacted it).
func sameLabel(w *continuo.Worker, label string) error {
	if label == "" {
		return nil
	}
	if l, _ := redact.String(label); l != w.Label {
		return continuo.Invalid("label", "is not the label of the worker this ticket continues: leave it out, or give the worker's own")
	}
	return nil
}

// ticketOf returns the continuation a ticket names when a swarm of the
// caller's group issued it. An unknown ticket and another group's are the
// same not_found, which names the swarm the call named (never the ticket,
// a secret), so that nothing tells the two apart.
func ticketOf(ctx context.Context, tx store.Tx, c *continuo.Caller, swarmID, ticket string) (*continuo.Continuation, error) {
	unknown := continuo.NotFound("continuation ticket for swarm", swarmID)
	cn, err := tx.ContinuationByTicket(ctx, ticketHash(ticket))
	if errors.Is(err, store.ErrNotFound) {
		return nil, unknown
	}
	if err != nil {
		return nil, err
	}
	sw, err := tx.SwarmGet(ctx, cn.SwarmID)
	if err != nil {
		return nil, err
	}
	if !visible(c, sw) {
		return nil, unknown
	}
	return cn, nil
}

// receipt is a bound continuation read again by the carrier it bound (a
// lost answer recovered): the same answer while that carrier still
// carries the worker; carrier_fenced once a later continuation replaced
// it, for the worker it would describe is another carrier's now.
func receipt(cn *continuo.Continuation, w *continuo.Worker, hash string) (*Bound, error) {
	if w.CarrierHash != hash || w.CarrierState == continuo.CarrierRetired {
		return nil, continuo.Errorf(continuo.CodeCarrierFenced, "this conversation carried worker %s at epoch %d until a continuation replaced it (the worker is at epoch %d): stop working as this worker",
			w.ID, cn.TargetEpoch, w.Epoch).With("epoch", w.Epoch).With("worker_id", w.ID)
	}
	return &Bound{Worker: *w, Continuation: *cn, Replayed: true}, nil
}

// expire ends an open continuation whose time ran out (see end).
func (s *Service) expire(ctx context.Context, tx store.Tx, cn *continuo.Continuation, w *continuo.Worker) (string, error) {
	return s.end(ctx, tx, cn, w, continuo.ContinuationExpired)
}

// end settles an open continuation (revoked or expired) and returns its
// worker to what its pressure says. It returns the token minted for the
// carrier the planner started for it, if any: that carrier can bind
// nothing now, and the caller revokes its token once tx committed.
func (s *Service) end(ctx context.Context, tx store.Tx, cn *continuo.Continuation, w *continuo.Worker, to continuo.ContinuationState) (string, error) {
	now, prev := s.now(), cn.Version
	// It binds nothing now: nobody reads its capsule again (the hash stays).
	cn.Version, cn.UpdatedAt, cn.Capsule = prev+1, now, ""
	if err := tx.ContinuationMove(ctx, cn, prev, to); err != nil {
		return "", stale(err, "the continuation")
	}
	if w.ContinuityState != continuo.ContinuityPending && w.ContinuityState != continuo.ContinuityReconcileRequired {
		return cn.CarrierToken, nil
	}
	// Back to what its pressure says: a worker whose context was full
	// still is (pressure never falls within an epoch), and the planner
	// or the owner continues it again.
	sw, err := tx.SwarmGet(ctx, w.SwarmID)
	if err != nil {
		return "", err
	}
	p, err := pressureOf(ctx, tx, sw, w)
	if err != nil {
		return "", err
	}
	state := continuo.ContinuitySteady
	if p.CompactRequired {
		state = continuo.ContinuityCompactRequired
	}
	return cn.CarrierToken, setContinuity(ctx, tx, w, state, now)
}

// setContinuity records a worker's continuity state (any but
// compact_blocked, which block records with its reason).
func setContinuity(ctx context.Context, tx store.Tx, w *continuo.Worker, to continuo.ContinuityState, now time.Time) error {
	if w.ContinuityState == to {
		return nil
	}
	prev := w.Revision
	w.ContinuityState, w.BlockedReason, w.Revision, w.UpdatedAt = to, "", prev+1, now
	return stale(tx.WorkerUpdate(ctx, w, prev), "the worker")
}

// errOwnerCarrier refuses the swarm owner's conversation as a worker's
// new carrier, as Join does: owner tools refuse workers, so the owner
// would lose its swarm from that conversation.
func errOwnerCarrier() error {
	return continuo.Errorf(continuo.CodeForbidden, "this conversation owns the swarm: a worker continues in another conversation")
}

// transfer moves worker w from its carrier at cn's source epoch to the
// carrier hash at the target epoch, in tx: the worker's epoch by
// compare-and-set, the old carrier retired, the new one bound, the
// continuation bound with its receipt, the ledger restarted from the
// capsule's size.
func (s *Service) transfer(ctx context.Context, tx store.Tx, cn *continuo.Continuation, w *continuo.Worker, hash string,
	source continuo.CarrierSource, out **Bound) error {
	switch {
	case w.Epoch != cn.SourceEpoch || w.CarrierHash != cn.SourceCarrier:
		return continuo.Errorf(continuo.CodeTicketInvalid, "worker %s moved on to epoch %d since this continuation was made", w.ID, w.Epoch).
			With("reason", "epoch_moved").With("epoch", w.Epoch)
	case w.CheckpointHash != cn.CheckpointHash:
		return continuo.Errorf(continuo.CodeTicketInvalid, "worker %s checkpointed again since this continuation was made: prepare a new one", w.ID).
			With("reason", "checkpoint_changed")
	case cn.TargetCarrier != "" && cn.TargetCarrier != hash:
		return continuo.Errorf(continuo.CodeConflict, "continuation %s names another carrier", cn.ID)
	}
	if err := boundary(ctx, tx, w, cn.ID); err != nil {
		return err
	}
	sw, err := tx.SwarmGet(ctx, w.SwarmID)
	switch {
	case err != nil:
		return err
	case sw.State != continuo.SwarmActive:
		return closedErr(sw)
	case hash == sw.OwnerCarrier:
		return errOwnerCarrier()
	}
	if prev, err := tx.CarrierGet(ctx, hash); err == nil {
		return continuo.Errorf(continuo.CodeConflict, "this conversation carries (or carried) worker %s; a carrier binds once: continue from a new conversation", prev.WorkerID).
			With("worker_id", prev.WorkerID)
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	now := s.now()
	old, prevW := w.CarrierHash, w.Revision
	token, err := supersede(ctx, tx, w, old, now)
	if err != nil {
		return err
	}
	w.Epoch, w.CarrierHash, w.CarrierSource = cn.TargetEpoch, hash, source
	w.ContinuityState, w.LastSeenAt, w.Revision, w.UpdatedAt = continuo.ContinuitySteady, now, prevW+1, now
	if err := s.restartLedger(ctx, tx, w, cn, now); err != nil {
		return err
	}
	// The compare-and-set: the row still holds the revision (so the epoch)
	// it was read with, or another transfer won.
	if err := tx.WorkerMove(ctx, w, prevW, w.State, continuo.CarrierActive); err != nil {
		return stale(err, "the worker")
	}
	if err := tx.CarrierRetire(ctx, old, now); err != nil && !errors.Is(err, store.ErrInvalidState) {
		return err
	}
	if err := tx.CarrierBind(ctx, continuo.Carrier{Hash: hash, WorkerID: w.ID, SwarmID: w.SwarmID, Epoch: w.Epoch, Source: source,
		State: continuo.CarrierActive, BoundAt: now}); err != nil {
		return stale(err, "the carrier")
	}
	pc := cn.Version
	cn.Version, cn.TargetCarrier, cn.TargetSource, cn.UpdatedAt, cn.BoundAt = pc+1, hash, source, now, &now
	if err := tx.ContinuationMove(ctx, cn, pc, continuo.ContinuationBound); err != nil {
		return stale(err, "the continuation")
	}
	*out = &Bound{Worker: *w, Continuation: *cn, retired: token}
	// The old carrier, waiting in next, hears that it was continued.
	return tx.Notify(ctx, channel(w.SwarmID), wakeAll)
}

// RequestInput is what chat_swarm_request_continuation takes.
type RequestInput struct {
	SwarmID     string
	WorkerID    string
	SourceEpoch int64
	Reason      string
}

// Request asks the owner to let the calling carrier continue a worker
// (the approval path, for unmanaged carriers). The same carrier asking
// again for the same worker and epoch gets the same continuation. Under
// the swarm's auto_approve_managed policy a request of the worker's own
// principal while the worker is compact_required is approved at once
// (approved_by "policy").
func (s *Service) Request(ctx context.Context, c *continuo.Caller, car Carrier, in RequestInput) (*continuo.Continuation, bool, error) {
	if err := c.Require(continuo.ScopeSwarmWork); err != nil {
		return nil, false, err
	}
	hash, err := car.need(c.PrincipalID)
	if err != nil {
		return nil, false, err
	}
	if len(in.Reason) > continuo.MaxContinuationNote {
		return nil, false, continuo.Invalid("reason", "must be at most %d bytes", continuo.MaxContinuationNote)
	}
	note, _ := redact.String(in.Reason)
	reqHash := digest("continuo request v1", in.SwarmID, in.WorkerID, itoa(int(in.SourceEpoch)), hash)
	var out *continuo.Continuation
	var replayed bool
	err = s.db.Write(ctx, func(tx store.Tx) error {
		out, replayed = nil, false
		w, err := tx.WorkerGet(ctx, in.WorkerID)
		if errors.Is(err, store.ErrNotFound) || err == nil && w.SwarmID != in.SwarmID {
			return continuo.NotFound("worker", in.WorkerID)
		}
		if err != nil {
			return err
		}
		sw, err := tx.SwarmGet(ctx, w.SwarmID)
		if err != nil {
			return err
		}
		if !visible(c, sw) {
			return continuo.NotFound("worker", in.WorkerID)
		}
		if open, err := tx.ContinuationOpen(ctx, w.ID); err == nil && open.RequestHash == reqHash {
			out, replayed = open, true
			return nil
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		switch {
		case sw.State != continuo.SwarmActive:
			return closedErr(sw)
		case w.Epoch != in.SourceEpoch:
			return continuo.Errorf(continuo.CodeConflict, "worker %s is at epoch %d, not %d", w.ID, w.Epoch, in.SourceEpoch).With("epoch", w.Epoch)
		case hash == w.CarrierHash:
			return continuo.Invalid("carrier_key", "this conversation is the worker's carrier already: a continuation comes from a new one")
		case hash == sw.OwnerCarrier:
			return errOwnerCarrier()
		}
		if _, err := tx.CarrierGet(ctx, hash); err == nil {
			return continuo.Errorf(continuo.CodeConflict, "this conversation carries (or carried) a worker; a carrier binds once: ask from a new conversation")
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := boundary(ctx, tx, w, ""); err != nil {
			return err
		}
		now := s.now()
		cn := newContinuation(w, continuo.PathApproval, note, c.PrincipalID, now, continuo.DefaultRequestTTL)
		cn.TargetCarrier, cn.TargetSource, cn.RequestHash = hash, car.Source, reqHash
		// A managed request — the worker's own principal asking for a
		// worker whose context is full — is approved by the swarm's
		// policy, if it says so; any other waits for the owner.
		managed := sw.Policy.AutoApproveManaged && c.PrincipalID == w.PrincipalID &&
			w.ContinuityState == continuo.ContinuityCompactRequired
		if err := s.open(ctx, tx, w, &cn, now); err != nil {
			return err
		}
		out = &cn
		if managed {
			return s.approve(ctx, tx, &cn, w, continuo.ApprovedByPolicy)
		}
		return nil
	})
	return out, replayed, err
}

// Approve approves a pending request of the approval path at its
// expected version; the requester's next continuation_status binds it.
// Approving again returns it (replayed).
func (s *Service) Approve(ctx context.Context, c *continuo.Caller, car Carrier, swarmID, id string, expected int64) (*continuo.Continuation, bool, error) {
	var out *continuo.Continuation
	var replayed, expired bool
	err := s.db.Write(ctx, func(tx store.Tx) error {
		out, replayed, expired = nil, false, false
		cn, w, err := s.ownContinuation(ctx, tx, c, car, swarmID, id)
		if err != nil {
			return err
		}
		switch {
		case cn.State == continuo.ContinuationApproved || cn.State == continuo.ContinuationBound:
			out, replayed = cn, true
			return nil
		case cn.Path != continuo.PathApproval:
			return continuo.Errorf(continuo.CodeInvalidState, "continuation %s is a ticket's: it needs no approval", cn.ID)
		case cn.State != continuo.ContinuationPending:
			return continuo.Errorf(continuo.CodeInvalidState, "continuation %s is %s", cn.ID, cn.State).With("state", string(cn.State))
		case cn.Version != expected:
			return continuo.Errorf(continuo.CodeRevisionConflict, "continuation %s is at version %d, not %d: read it again", cn.ID, cn.Version, expected).
				With("version", cn.Version)
		case s.lapses(cn):
			// An approval's continuation starts no carrier: no token.
			expired = true
			_, err := s.expire(ctx, tx, cn, w)
			return err
		case w.Epoch != cn.SourceEpoch || w.CarrierHash != cn.SourceCarrier:
			return continuo.Errorf(continuo.CodeConflict, "worker %s moved on to epoch %d", w.ID, w.Epoch).With("epoch", w.Epoch)
		}
		if err := boundary(ctx, tx, w, cn.ID); err != nil {
			return err
		}
		out = cn
		return s.approve(ctx, tx, cn, w, c.PrincipalID)
	})
	if err == nil && expired {
		return nil, false, continuo.Errorf(continuo.CodeInvalidState, "continuation %s expired", id).With("state", string(continuo.ContinuationExpired))
	}
	return out, replayed, err
}

// ownContinuation returns a continuation of a swarm the caller owns, with

// approve approves a pending request on behalf of by (the owner's
// principal, or continuo.ApprovedByPolicy) and builds the capsule the new
// carrier starts from, as Prepare builds it for a ticket (the checkpoint
// it rests on is the request's: the transfer checks that it did not
// change since).
func (s *Service) approve(ctx context.Context, tx store.Tx, cn *continuo.Continuation, w *continuo.Worker, by string) error {
	sw, err := tx.SwarmGet(ctx, w.SwarmID)
	if err != nil {
		return err
	}
	capsule, hash, err := buildCapsule(ctx, tx, w, cn.TargetEpoch, capsuleLimit(sw))
	if err != nil {
		return err
	}
	prev := cn.Version
	cn.Capsule, cn.CapsuleHash, cn.ApprovedBy = capsule, hash, by
	cn.Version, cn.UpdatedAt = prev+1, s.now()
	if err := tx.ContinuationMove(ctx, cn, prev, continuo.ContinuationApproved); err != nil {
		return stale(err, "the continuation")
	}
	return tx.Notify(ctx, channel(cn.SwarmID), wakeAll)
}

// its worker.
func (s *Service) ownContinuation(ctx context.Context, tx store.Tx, c *continuo.Caller, car Carrier, swarmID, id string) (*continuo.Continuation, *continuo.Worker, error) {
	sw, err := s.ownSwarm(ctx, tx, c, car, swarmID)
	if err != nil {
		return nil, nil, err
	}
	cn, err := tx.ContinuationGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && cn.SwarmID != sw.ID {
		return nil, nil, continuo.NotFound("continuation", id)
	}
	if err != nil {
		return nil, nil, err
	}
	w, err := tx.WorkerGet(ctx, cn.WorkerID)
	return cn, w, err
}

// Revoke ends an open continuation: its ticket or approval binds nothing
// any more. Revoking again returns it (replayed).
func (s *Service) Revoke(ctx context.Context, c *continuo.Caller, car Carrier, swarmID, id string) (*continuo.Continuation, bool, error) {
	var out *continuo.Continuation
	var replayed bool
	var token string
	err := s.db.Write(ctx, func(tx store.Tx) error {
		out, replayed, token = nil, false, ""
		cn, w, err := s.ownContinuation(ctx, tx, c, car, swarmID, id)
		if err != nil {
			return err
		}
		switch {
		case cn.State == continuo.ContinuationRevoked:
			out, replayed = cn, true
			return nil
		case !cn.State.Open():
			return continuo.Errorf(continuo.CodeTerminalImmutable, "continuation %s is %s already", cn.ID, cn.State).With("state", string(cn.State))
		}
		if token, err = s.end(ctx, tx, cn, w, continuo.ContinuationRevoked); err != nil {
			return err
		}
		out = cn
		return nil
	})
	if err == nil {
		s.revoke(ctx, token)
	}
	return out, replayed, err
}

// ReconcileContinuation settles a continuation in doubt (a carrier start
// whose outcome is unknown): no_effect revokes it (nothing used it),
// applied returns it to pending so that its carrier may still redeem it.
func (s *Service) ReconcileContinuation(ctx context.Context, c *continuo.Caller, car Carrier, swarmID, id, decision string) (*continuo.Continuation, error) {
	if decision != "no_effect" && decision != "applied" {
		return nil, continuo.Invalid("decision", "must be no_effect or applied")
	}
	var out *continuo.Continuation
	var token string
	err := s.db.Write(ctx, func(tx store.Tx) error {
		token = ""
		cn, w, err := s.ownContinuation(ctx, tx, c, car, swarmID, id)
		if err != nil {
			return err
		}
		if cn.State != continuo.ContinuationReconcileRequired {
			return continuo.Errorf(continuo.CodeInvalidState, "continuation %s is %s: only reconcile_required is reconciled", cn.ID, cn.State).
				With("state", string(cn.State))
		}
		if decision == "no_effect" {
			if token, err = s.end(ctx, tx, cn, w, continuo.ContinuationRevoked); err != nil {
				return err
			}
		} else {
			prev := cn.Version
			cn.Version, cn.UpdatedAt = prev+1, s.now()
			if err := tx.ContinuationMove(ctx, cn, prev, continuo.ContinuationPending); err != nil {
				return stale(err, "the continuation")
			}
			if err := s.markPending(ctx, tx, w, cn.UpdatedAt); err != nil {
				return err
			}
		}
		out = cn
		return nil
	})
	if err == nil {
		s.revoke(ctx, token)
	}
	return out, err
}

// ContinuationStatus is what the requesting carrier reads of its request:
// the newest continuation naming it as the target in the swarm. An
// approved one is bound here, in this call's transaction.
func (s *Service) ContinuationStatus(ctx context.Context, c *continuo.Caller, car Carrier, swarmID string) (*Bound, error) {
	if err := c.Require(continuo.ScopeSwarmWork); err != nil {
		return nil, err
	}
	hash, err := car.need(c.PrincipalID)
	if err != nil {
		return nil, err
	}
	var out *Bound
	var expired bool
	err = s.db.Write(ctx, func(tx store.Tx) error {
		out, expired = nil, false
		none := continuo.NotFound("continuation of this conversation in swarm", swarmID)
		sw, err := tx.SwarmGet(ctx, swarmID)
		if errors.Is(err, store.ErrNotFound) || err == nil && !visible(c, sw) {
			return none
		}
		if err != nil {
			return err
		}
		cs, err := tx.ContinuationList(ctx, store.ContinuationListParams{SwarmID: swarmID, TargetCarrier: hash, Limit: 1})
		if err != nil {
			return err
		}
		if len(cs) == 0 {
			return none
		}
		cn := &cs[0]
		w, err := tx.WorkerGet(ctx, cn.WorkerID)
		if err != nil {
			return err
		}
		switch {
		case s.lapses(cn):
			// An approval's continuation starts no carrier: no token.
			expired = true
			_, err := s.expire(ctx, tx, cn, w)
			return err
		case cn.State == continuo.ContinuationApproved:
			return s.transfer(ctx, tx, cn, w, hash, cn.TargetSource, &out)
		case cn.State == continuo.ContinuationBound:
			out, err = receipt(cn, w, hash)
			return err
		}
		out = &Bound{Worker: *w, Continuation: *cn, Replayed: cn.State == continuo.ContinuationBound}
		return nil
	})
	if err == nil && expired {
		return nil, continuo.Errorf(continuo.CodeInvalidState, "the continuation expired before it was approved").
			With("state", string(continuo.ContinuationExpired))
	}
	if err == nil {
		s.revoke(ctx, out.retired)
		if out.Continuation.State == continuo.ContinuationBound && !out.Replayed {
			s.meters.boundOne()
		}
	}
	return out, err
}
