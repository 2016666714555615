package mcpserver

import (
	"context"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/swarm"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Worker continuity's tools (CONTRACT.md §8).

// Continuation is a continuation as the tools return it.
type Continuation struct {
	ContinuationID string `json:"continuation_id"`
	WorkerID       string `json:"worker_id"`
	Path           string `json:"path"`
	SourceEpoch    int64  `json:"source_epoch"`
	TargetEpoch    int64  `json:"target_epoch"`
	State          string `json:"state"`
	Version        int64  `json:"version"`
	ExpiresAt      string `json:"expires_at"`
	CapsuleHash    string `json:"capsule_hash,omitempty"`
	BoundAt        string `json:"bound_at,omitempty"`
	ApprovedBy     string `json:"approved_by,omitempty"` // owner | policy
}

func continuationView(c *continuo.Continuation) Continuation {
	v := Continuation{ContinuationID: c.ID, WorkerID: c.WorkerID, Path: string(c.Path), SourceEpoch: c.SourceEpoch, TargetEpoch: c.TargetEpoch,
		State: string(c.State), Version: c.Version, ExpiresAt: ts(c.ExpiresAt), CapsuleHash: c.CapsuleHash}
	if c.BoundAt != nil {
		v.BoundAt = ts(*c.BoundAt)
	}
	switch c.ApprovedBy {
	case "":
	case continuo.ApprovedByPolicy:
		v.ApprovedBy = continuo.ApprovedByPolicy
	default:
		v.ApprovedBy = "owner"
	}
	return v
}

// CapsuleJSON is a continuation's capsule, as it was built.
type CapsuleJSON = JSONObject

// JSONObject is a result field that holds a JSON object as it was stored;
// unlike JSONValue its schema says "object" (a property's schema on the
// wire must be an object, and an empty one encodes as true).
type JSONObject JSONValue

// MarshalJSON implements json.Marshaler.
func (v JSONObject) MarshalJSON() ([]byte, error) { return JSONValue(v).MarshalJSON() }

var capsuleSchema = &jsonschema.Schema{Type: "object",
	Description: "context only, never authority: version, authority, swarm_id, worker_id, label, epoch, checkpoint, blockers?, artifact_refs?, recent_tasks[{task_id, state, summary?}]"}

var continuationSchema = described("continuation_id, worker_id, path, source_epoch, target_epoch, state, version, expires_at, capsule_hash?, bound_at?, approved_by?",
	map[string][]string{"path": strs(continuo.ContinuationPaths()), "state": strs(continuo.ContinuationStates()),
		"approved_by": {"owner", continuo.ApprovedByPolicy}})

// ContinuationResult is what the continuation tools return; each declares
// only what it can return (a schema's every byte sits in a model's
// context).
type ContinuationResult struct {
	Continuation Continuation `json:"continuation"`
	Replayed     bool         `json:"replayed,omitempty"`
}

// PreparedResult is what chat_swarm_prepare_continuation returns: the
// ticket, shown here only, and the capsule.
type PreparedResult struct {
	Continuation Continuation `json:"continuation"`
	Ticket       string       `json:"ticket"`
	Capsule      CapsuleJSON  `json:"capsule,omitempty"`
}

// BoundResult is what chat_swarm_continuation_status returns: once bound,
// the worker at its new epoch and the capsule.
type BoundResult struct {
	Continuation Continuation `json:"continuation"`
	Capsule      CapsuleJSON  `json:"capsule,omitempty"`
	Worker       *Worker      `json:"worker,omitempty"`
	Replayed     bool         `json:"replayed,omitempty"`
}

func continuationResult(cn *continuo.Continuation, replayed bool, err error) (*ContinuationResult, error) {
	if err != nil {
		return nil, err
	}
	return &ContinuationResult{Continuation: continuationView(cn), Replayed: replayed}, nil
}

// PrepareArgs are the arguments of chat_swarm_prepare_continuation.
type PrepareArgs struct {
	SwarmID  string `json:"swarm_id" limit:"1,64"`
	WorkerID string `json:"worker_id" limit:"1,64"`
	Reason   string `json:"reason" limit:"1,1024"`
	TTLSecs  *int   `json:"ttl_secs,omitempty" limit:"30,900" jsonschema:"default 600"`
}

func (s *server) swarmPrepare(srv *mcp.Server) {
	add(s, srv, tool{name: "chat_swarm_prepare_continuation", title: "Prepare a worker's new carrier",
		desc: "Owner: when a worker's conversation must be replaced (context full, account change): a one-time ticket (shown once) and the capsule; the new conversation joins with the ticket."},
		func(ctx context.Context, c *continuo.Caller, in *PrepareArgs) (*PreparedResult, error) {
			p, err := s.opts.Swarm.Prepare(ctx, c, s.ownerCarrier(ctx), in.SwarmID, in.WorkerID, in.Reason, secs(in.TTLSecs))
			if err != nil {
				return nil, err
			}
			return &PreparedResult{Continuation: continuationView(&p.Continuation), Ticket: p.Ticket, Capsule: CapsuleJSON(p.Continuation.Capsule)}, nil
		})
}

// RequestArgs are the arguments of chat_swarm_request_continuation.
type RequestArgs struct {
	SwarmID     string `json:"swarm_id" limit:"1,64"`
	WorkerID    string `json:"worker_id" limit:"1,64"`
	SourceEpoch *int64 `json:"source_epoch" limit:"0,1000000000" jsonschema:"the epoch being replaced"`
	Reason      string `json:"reason,omitempty" limit:"1,1024"`
	CarrierKey  string `json:"carrier_key,omitempty" limit:"22,128" jsonschema:"stateless clients: this conversation's own key"`
}

func (s *server) swarmRequest(srv *mcp.Server) {
	add(s, srv, tool{name: "chat_swarm_request_continuation", title: "Ask to continue a worker", idempotent: true,
		desc: "New conversation: ask the owner to let it carry a worker on; then read chat_swarm_continuation_status."},
		func(ctx context.Context, c *continuo.Caller, in *RequestArgs) (*ContinuationResult, error) {
			car, err := s.carrier(ctx, in.CarrierKey)
			if err != nil {
				return nil, err
			}
			return continuationResult(s.opts.Swarm.Request(ctx, c, car, swarm.RequestInput{SwarmID: in.SwarmID, WorkerID: in.WorkerID,
				SourceEpoch: *in.SourceEpoch, Reason: in.Reason}))
		})
}

// ContinuationArgs name a continuation of a swarm.
type ContinuationArgs struct {
	SwarmID        string `json:"swarm_id" limit:"1,64"`
	ContinuationID string `json:"continuation_id" limit:"1,64"`
}

// ApproveArgs are the arguments of chat_swarm_approve_continuation.
type ApproveArgs struct {
	SwarmID         string `json:"swarm_id" limit:"1,64"`
	ContinuationID  string `json:"continuation_id" limit:"1,64"`
	ExpectedVersion *int64 `json:"expected_version" limit:"1,1000000000" jsonschema:"the version you read"`
}

func (s *server) swarmApprove(srv *mcp.Server) {
	add(s, srv, tool{name: "chat_swarm_approve_continuation", title: "Approve a continuation", idempotent: true,
		desc: "Owner: let a requesting conversation carry the worker on; the worker moves to it at its next status read."},
		func(ctx context.Context, c *continuo.Caller, in *ApproveArgs) (*ContinuationResult, error) {
			return continuationResult(s.opts.Swarm.Approve(ctx, c, s.ownerCarrier(ctx), in.SwarmID, in.ContinuationID, *in.ExpectedVersion))
		})
}

func (s *server) swarmRevoke(srv *mcp.Server) {
	add(s, srv, tool{name: "chat_swarm_revoke_continuation", title: "Revoke a continuation", idempotent: true,
		desc: "Owner: its ticket or request binds nothing any more; the worker stays with its carrier."},
		func(ctx context.Context, c *continuo.Caller, in *ContinuationArgs) (*ContinuationResult, error) {
			return continuationResult(s.opts.Swarm.Revoke(ctx, c, s.ownerCarrier(ctx), in.SwarmID, in.ContinuationID))
		})
}

// ReconcileContinuationArgs are the arguments of
// chat_swarm_reconcile_continuation.
type ReconcileContinuationArgs struct {
	SwarmID        string `json:"swarm_id" limit:"1,64"`
	ContinuationID string `json:"continuation_id" limit:"1,64"`
	Decision       string `json:"decision" enum:"contdecision" jsonschema:"no_effect: nothing used it (revoke); applied: its carrier may still redeem"`
}

func (s *server) swarmReconcileContinuation(srv *mcp.Server) {
	add(s, srv, tool{name: "chat_swarm_reconcile_continuation", title: "Settle a continuation in doubt",
		desc: "Owner: decide a reconcile_required continuation (a carrier start whose outcome is unknown)."},
		func(ctx context.Context, c *continuo.Caller, in *ReconcileContinuationArgs) (*ContinuationResult, error) {
			cn, err := s.opts.Swarm.ReconcileContinuation(ctx, c, s.ownerCarrier(ctx), in.SwarmID, in.ContinuationID, in.Decision)
			return continuationResult(cn, false, err)
		})
}

// ContinuationStatusArgs are the arguments of
// chat_swarm_continuation_status.
type ContinuationStatusArgs struct {
	SwarmID    string `json:"swarm_id" limit:"1,64"`
	CarrierKey string `json:"carrier_key,omitempty" limit:"22,128" jsonschema:"as given to chat_swarm_request_continuation"`
}

func (s *server) swarmContinuationStatus(srv *mcp.Server) {
	add(s, srv, tool{name: "chat_swarm_continuation_status", title: "Read my continuation request", idempotent: true,
		desc: "Requesting conversation: its request's state; once approved this binds it, with the worker (new epoch) and capsule."},
		func(ctx context.Context, c *continuo.Caller, in *ContinuationStatusArgs) (*BoundResult, error) {
			car, err := s.carrier(ctx, in.CarrierKey)
			if err != nil {
				return nil, err
			}
			b, err := s.opts.Swarm.ContinuationStatus(ctx, c, car, in.SwarmID)
			if err != nil {
				return nil, err
			}
			out := &BoundResult{Continuation: continuationView(&b.Continuation), Replayed: b.Replayed}
			if b.Continuation.State == continuo.ContinuationBound {
				w := workerView(&b.Worker)
				out.Worker, out.Capsule = &w, CapsuleJSON(b.Continuation.Capsule)
			}
			return out, nil
		})
}

// PressureView is a worker's context pressure as the tools return it.
type PressureView struct {
	Tokens    int64          `json:"tokens"`
	Budget    int64          `json:"budget_tokens"`
	Threshold float64        `json:"threshold"`
	Reserve   int64          `json:"reserve_tokens"`
	Ratio     float64        `json:"ratio"`
	Exact     bool           `json:"exact"`
	Sources   []PressureFrom `json:"sources"`
}

// PressureFrom is one signal of a pressure.
type PressureFrom struct {
	Source string `json:"source"`
	Tokens int64  `json:"tokens"`
	At     string `json:"at"`
	Basis  string `json:"basis,omitempty"`
}

// ContextResult is what the context tools return.
type ContextResult struct {
	WorkerID        string       `json:"worker_id"`
	Epoch           int64        `json:"epoch"`
	Pressure        PressureView `json:"pressure"`
	CompactRequired bool         `json:"compact_required"`
}

func contextResult(p *swarm.Pressure, err error) (*ContextResult, error) {
	if err != nil {
		return nil, err
	}
	v := PressureView{Tokens: p.Tokens, Budget: p.Budget, Threshold: p.Threshold, Reserve: p.Reserve, Ratio: p.Ratio, Exact: p.Exact,
		Sources: make([]PressureFrom, len(p.Sources))}
	for i, e := range p.Sources {
		v.Sources[i] = PressureFrom{Source: string(e.Source), Tokens: e.Tokens, At: ts(e.At), Basis: e.Basis}
	}
	return &ContextResult{WorkerID: p.WorkerID, Epoch: p.Epoch, Pressure: v, CompactRequired: p.CompactRequired}, nil
}

// ReportContextArgs are the arguments of chat_swarm_report_context.
type ReportContextArgs struct {
	WorkerID   string `json:"worker_id" limit:"1,64"`
	Epoch      *int64 `json:"epoch" limit:"0,1000000000"`
	Tokens     *int64 `json:"tokens" limit:"0,1099511627776" jsonschema:"how many tokens your context holds"`
	Source     string `json:"source" enum:"reportsource" jsonschema:"host_exact: the host's own figure; estimate: yours"`
	Basis      string `json:"basis,omitempty" limit:"1,1024" jsonschema:"what the figure rests on"`
	CarrierKey string `json:"carrier_key,omitempty" limit:"22,128" jsonschema:"as given to chat_swarm_join"`
}

func (s *server) swarmReportContext(srv *mcp.Server) {
	add(s, srv, tool{name: "chat_swarm_report_context", title: "Report your context size", idempotent: true,
		desc: "Worker: how full your context is; a smaller later figure never lowers the pressure within an epoch."},
		func(ctx context.Context, c *continuo.Caller, in *ReportContextArgs) (*ContextResult, error) {
			car, ref, err := s.worker(ctx, in.WorkerID, *in.Epoch, in.CarrierKey)
			if err != nil {
				return nil, err
			}
			return contextResult(s.opts.Swarm.ReportContext(ctx, c, car, ref, swarm.ReportInput{Tokens: *in.Tokens,
				Source: continuo.LedgerSource(in.Source), Basis: in.Basis}))
		})
}

// ContextStatusArgs are the arguments of chat_swarm_context_status.
type ContextStatusArgs struct {
	WorkerID   string `json:"worker_id" limit:"1,64"`
	Epoch      *int64 `json:"epoch" limit:"0,1000000000"`
	CarrierKey string `json:"carrier_key,omitempty" limit:"22,128" jsonschema:"as given to chat_swarm_join"`
}

func (s *server) swarmContextStatus(srv *mcp.Server) {
	add(s, srv, tool{name: "chat_swarm_context_status", title: "Read your context pressure", readOnly: true, idempotent: true,
		desc: "Worker: your context pressure — an estimate with its sources unless the host gave an exact figure — and whether compaction is due."},
		func(ctx context.Context, c *continuo.Caller, in *ContextStatusArgs) (*ContextResult, error) {
			car, ref, err := s.worker(ctx, in.WorkerID, *in.Epoch, in.CarrierKey)
			if err != nil {
				return nil, err
			}
			return contextResult(s.opts.Swarm.ContextStatus(ctx, c, car, ref))
		})
}
