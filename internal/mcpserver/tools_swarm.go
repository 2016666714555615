package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/swarm"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Chat Swarm's tools (CONTRACT.md §7). Owner tools take swarm_id; worker
// tools take worker_id and epoch, and an optional carrier_key (see
// carrier.go).

// JSONValue is an argument or result field that holds any JSON value as
// it was sent (a task's payload, a checkpoint); its schema says only that.
type JSONValue json.RawMessage

// MarshalJSON implements json.Marshaler.
func (v JSONValue) MarshalJSON() ([]byte, error) {
	if len(v) == 0 {
		return []byte("null"), nil
	}
	return v, nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (v *JSONValue) UnmarshalJSON(b []byte) error {
	*v = append((*v)[:0], b...)
	return nil
}

var jsonValueSchema = &jsonschema.Schema{}

// Swarm is a swarm as the owner reads it.
type Swarm struct {
	SwarmID         string               `json:"swarm_id"`
	State           string               `json:"state"`
	WorkerLimit     int                  `json:"worker_limit"`
	Policy          continuo.SwarmPolicy `json:"policy"`
	InviteExpiresAt string               `json:"invite_expires_at,omitempty"`
	CreatedAt       string               `json:"created_at"`
}

func swarmView(sw *continuo.Swarm) Swarm {
	v := Swarm{SwarmID: sw.ID, State: string(sw.State), WorkerLimit: sw.WorkerLimit, Policy: sw.Policy, CreatedAt: ts(sw.CreatedAt)}
	if sw.InviteHash != "" {
		v.InviteExpiresAt = ts(sw.InviteExpiresAt)
	}
	return v
}

// Worker is a worker as it and its owner read it.
type Worker struct {
	WorkerID        string `json:"worker_id"`
	SwarmID         string `json:"swarm_id"`
	Label           string `json:"label"`
	Epoch           int64  `json:"epoch"`
	State           string `json:"state"`
	CarrierState    string `json:"carrier_state"`
	CarrierSource   string `json:"carrier_source"`
	ContinuityState string `json:"continuity_state"`
	CurrentTaskID   string `json:"current_task_id,omitempty"`
	CheckpointAt    string `json:"checkpoint_at,omitempty"`
	LastSeenAt      string `json:"last_seen_at"`
	// BlockedReason says why it is compact_blocked; RetiredReason why it
	// was retired, at RetiredAt.
	BlockedReason string `json:"blocked_reason,omitempty"`
	RetiredReason string `json:"retired_reason,omitempty"`
	RetiredAt     string `json:"retired_at,omitempty"`
	// Pressure is its context pressure (chat_swarm_status): an estimate
	// unless exact; chat_swarm_context_status has its sources.
	Pressure *WorkerPressure `json:"pressure,omitempty"`
}

// WorkerPressure is a worker's context pressure in chat_swarm_status.
type WorkerPressure struct {
	Tokens int64   `json:"tokens"`
	Ratio  float64 `json:"ratio"`
	Exact  bool    `json:"exact"`
}

func workerView(w *continuo.Worker) Worker {
	v := Worker{WorkerID: w.ID, SwarmID: w.SwarmID, Label: w.Label, Epoch: w.Epoch, State: string(w.State),
		CarrierState: string(w.CarrierState), CarrierSource: string(w.CarrierSource), ContinuityState: string(w.ContinuityState),
		CurrentTaskID: w.CurrentTaskID, LastSeenAt: ts(w.LastSeenAt), BlockedReason: string(w.BlockedReason),
		RetiredReason: string(w.RetiredReason)}
	if w.CheckpointAt != nil {
		v.CheckpointAt = ts(*w.CheckpointAt)
	}
	if w.RetiredAt != nil {
		v.RetiredAt = ts(*w.RetiredAt)
	}
	return v
}

// Task is a task as the tools return it. The prompt and payload come only
// with a delivery (chat_swarm_next); the result only to the owner.
type Task struct {
	TaskID            string    `json:"task_id"`
	TaskKey           string    `json:"task_key"`
	State             string    `json:"state"`
	Attempt           int       `json:"attempt"`
	AttemptID         string    `json:"attempt_id,omitempty"`
	WorkerID          string    `json:"worker_id,omitempty"`
	PreferredWorkerID string    `json:"preferred_worker_id,omitempty"`
	Prompt            string    `json:"prompt,omitempty"`
	Payload           JSONValue `json:"payload,omitempty"`
	Reason            string    `json:"reason,omitempty"`
	Detail            string    `json:"detail,omitempty"`
	Result            string    `json:"result,omitempty"`
	UpdatedAt         string    `json:"updated_at"`
}

func taskView(t *continuo.Task, a *continuo.Attempt, withResult bool) Task {
	// The key is stored as sent, for replays to find; a model reads it.
	key, _ := redact.String(t.TaskKey)
	v := Task{TaskID: t.ID, TaskKey: key, State: string(t.State), Attempt: t.Attempt, WorkerID: t.WorkerID,
		PreferredWorkerID: t.PreferredWorkerID, Reason: t.Reason, Detail: t.Detail, UpdatedAt: ts(t.UpdatedAt)}
	if a != nil {
		v.AttemptID = a.ID
	}
	if withResult {
		v.Result = t.Result
	}
	return v
}

// ListedTask is a task in a list (chat_swarm_status, the batch forms of
// dispatch and collect, submit's next): the fields of Task, which its
// schema names once (task), not twice.
type ListedTask Task

var (
	listedTaskSchema = &jsonschema.Schema{Type: "object", Description: "as task"}
	swarmSchema      = described("also: swarm_id, worker_limit, policy, invite_expires_at?, created_at",
		map[string][]string{"state": strs(continuo.SwarmStates())})
	workerSchema = described("also: worker_id, swarm_id, label, epoch, retired_at?, current_task_id?, checkpoint_at?, last_seen_at, pressure? {tokens, ratio, exact}",
		map[string][]string{"state": strs(continuo.WorkerStates()), "carrier_state": strs(continuo.CarrierStates()),
			"carrier_source": strs(continuo.CarrierSources()), "continuity_state": strs(continuo.ContinuityStates()),
			"blocked_reason": strs(continuo.BlockedReasons()), "retired_reason": strs(continuo.RetiredReasons())})
	taskSchema = described("also: task_id, task_key, attempt, attempt_id?, worker_id?, preferred_worker_id?, prompt?, payload?, reason?, detail?, result?, updated_at",
		map[string][]string{"state": strs(continuo.TaskStates())})
)

func (s *server) registerSwarmTools(srv *mcp.Server) {
	for _, register := range []func(*mcp.Server){s.swarmCreate, s.swarmInvite, s.swarmJoin, s.swarmDispatch, s.swarmNext,
		s.swarmAck, s.swarmCheckpoint, s.swarmSubmit, s.swarmFail, s.swarmLeave, s.swarmStatus, s.swarmCollect, s.swarmCancel,
		s.swarmReconcile, s.swarmClose, s.swarmRemoveWorker, s.swarmPrepare, s.swarmRequest, s.swarmApprove, s.swarmRevoke, s.swarmReconcileContinuation,
		s.swarmContinuationStatus, s.swarmReportContext, s.swarmContextStatus} {
		register(srv)
	}
}

// ownerCarrier is the carrier of an owner call (owner tools take no
// carrier_key: without a session there is none, and scopes decide).
func (s *server) ownerCarrier(ctx context.Context) swarm.Carrier {
	car, _ := s.carrier(ctx, "")
	return car
}

// ---- owner ----

// PolicyArgs is a swarm's policy as chat_swarm_create takes it.
type PolicyArgs struct {
	LeaseTTLSecs       *int                 `json:"lease_ttl_secs,omitempty" jsonschema:"5..86400, default 300"`
	RequeueUnacked     bool                 `json:"requeue_unacked,omitempty" jsonschema:"an expired claim never acked goes back to the queue"`
	Compaction         *continuo.Compaction `json:"compaction,omitempty"`
	AutoApproveManaged bool                 `json:"auto_approve_managed,omitempty" jsonschema:"approve a continuation request at once when the worker's own principal asks while the worker is compact_required"`
	WorkerIdleTTLSecs  *int                 `json:"worker_idle_ttl_secs,omitempty" limit:"120,604800" jsonschema:"retire a worker silent this long without a task; default 1800"`
}

// SwarmCreateArgs are the arguments of chat_swarm_create.
type SwarmCreateArgs struct {
	WorkerLimit   int         `json:"worker_limit" limit:"1,64"`
	Policy        *PolicyArgs `json:"policy,omitempty"`
	InviteTTLSecs *int        `json:"invite_ttl_secs,omitempty" limit:"60,86400" jsonschema:"default 900"`
}

// SwarmInvited is the result of chat_swarm_create and chat_swarm_invite.
type SwarmInvited struct {
	Swarm           Swarm  `json:"swarm"`
	Invite          string `json:"invite"`
	InviteExpiresAt string `json:"invite_expires_at"`
	// WorkerEndpoint is where a worker conversation connects: the worker
	// toolset's endpoint, which lists its loop and nothing else.
	WorkerEndpoint string `json:"worker_endpoint"`
}

func (s *server) invited(v *swarm.Invited, err error) (*SwarmInvited, error) {
	if err != nil {
		return nil, err
	}
	return &SwarmInvited{Swarm: swarmView(&v.Swarm), Invite: v.Invite, InviteExpiresAt: ts(v.ExpiresAt),
		WorkerEndpoint: s.workerEndpoint()}, nil
}

// workerEndpoint is the URL of the worker endpoint when the server knows
// its own, else its path.
func (s *server) workerEndpoint() string {
	if u := s.opts.MCPURL; u != "" {
		return strings.TrimSuffix(u, "/") + workerPath
	}
	return "/mcp" + workerPath
}

func (s *server) swarmCreate(srv *mcp.Server) {
	add(s, srv, tool{name: "chat_swarm_create", title: "Create a swarm",
		desc: "Owner: to split work across other conversations. Returns the swarm, an invite (shown once) and the worker_endpoint where workers connect to join."},
		func(ctx context.Context, c *continuo.Caller, in *SwarmCreateArgs) (*SwarmInvited, error) {
			input := swarm.CreateInput{WorkerLimit: in.WorkerLimit, InviteTTL: secs(in.InviteTTLSecs)}
			if p := in.Policy; p != nil {
				policy := continuo.DefaultSwarmPolicy()
				if p.LeaseTTLSecs != nil {
					policy.LeaseTTLSecs = *p.LeaseTTLSecs
				}
				if p.Compaction != nil {
					policy.Compaction = *p.Compaction
				}
				if p.WorkerIdleTTLSecs != nil {
					policy.WorkerIdleTTLSecs = *p.WorkerIdleTTLSecs
				}
				policy.RequeueUnacked, policy.AutoApproveManaged = p.RequeueUnacked, p.AutoApproveManaged
				input.Policy = &policy
			}
			return s.invited(s.opts.Swarm.Create(ctx, c, s.ownerCarrier(ctx), input))
		})
}

// SwarmArgs name a swarm.
type SwarmArgs struct {
	SwarmID string `json:"swarm_id" limit:"1,64"`
}

// SwarmInviteArgs are the arguments of chat_swarm_invite.
type SwarmInviteArgs struct {
	SwarmID       string `json:"swarm_id" limit:"1,64"`
	InviteTTLSecs *int   `json:"invite_ttl_secs,omitempty" limit:"60,86400" jsonschema:"default 900"`
}

func (s *server) swarmInvite(srv *mcp.Server) {
	add(s, srv, tool{name: "chat_swarm_invite", title: "Re-issue a swarm invite",
		desc: "Owner: a new invite for more workers; the previous invite stops admitting joins."},
		func(ctx context.Context, c *continuo.Caller, in *SwarmInviteArgs) (*SwarmInvited, error) {
			return s.invited(s.opts.Swarm.Invite(ctx, c, s.ownerCarrier(ctx), in.SwarmID, secs(in.InviteTTLSecs)))
		})
}

// SwarmDispatchArgs are the arguments of chat_swarm_dispatch: one task,
// or tasks[].
type SwarmDispatchArgs struct {
	SwarmID           string         `json:"swarm_id" limit:"1,64"`
	TaskKey           string         `json:"task_key,omitempty" limit:"1,128" jsonschema:"same key and content return the same task"`
	Prompt            string         `json:"prompt,omitempty" limit:"1,65536"`
	Payload           JSONValue      `json:"payload,omitempty" jsonschema:"any JSON, at most 64 KiB"`
	PreferredWorkerID string         `json:"preferred_worker_id,omitempty" limit:"1,64" jsonschema:"only this worker claims it"`
	Tasks             []DispatchItem `json:"tasks,omitempty" limit:"1,100" jsonschema:"instead: tasks of ≤ 512 KiB of prompts and payloads in all"`
}

// DispatchItem is one task of a batch dispatch.
type DispatchItem struct {
	TaskKey           string    `json:"task_key" limit:"1,128"`
	Prompt            string    `json:"prompt" limit:"1,65536"`
	Payload           JSONValue `json:"payload,omitempty" jsonschema:"any JSON"`
	PreferredWorkerID string    `json:"preferred_worker_id,omitempty" limit:"1,64"`
}

// SwarmTaskResult is the result of the task tools.
type SwarmTaskResult struct {
	Task     Task `json:"task"`
	Replayed bool `json:"replayed,omitempty"`
}

func taskResult(r *swarm.TaskResult, err error, withResult bool) (*SwarmTaskResult, error) {
	if err != nil {
		return nil, err
	}
	return &SwarmTaskResult{Task: taskView(&r.Task, nil, withResult), Replayed: r.Replayed}, nil
}

// SwarmTasksResult is the result of chat_swarm_dispatch and
// chat_swarm_collect: one task, or (their batch forms) tasks[]; replayed
// when the call changed nothing (in a batch dispatch: when every item
// replayed).
type SwarmTasksResult struct {
	Task     *Task        `json:"task,omitempty"`
	Tasks    []ListedTask `json:"tasks,omitempty"`
	Replayed bool         `json:"replayed,omitempty"`
}

func (s *server) swarmDispatch(srv *mcp.Server) {
	add(s, srv, tool{name: "chat_swarm_dispatch", title: "Dispatch tasks", idempotent: true,
		desc: "Owner: queue a task (task_key, prompt) — or up to 100 at once in tasks[], all or none — for the swarm's workers; a waiting worker gets it at once."},
		func(ctx context.Context, c *continuo.Caller, in *SwarmDispatchArgs) (*SwarmTasksResult, error) {
			car := s.ownerCarrier(ctx)
			if len(in.Tasks) == 0 {
				switch {
				case in.TaskKey == "":
					return nil, continuo.Invalid("task_key", "give task_key and prompt, or tasks")
				case in.Prompt == "":
					return nil, continuo.Invalid("prompt", "is required with task_key")
				}
				r, err := s.opts.Swarm.Dispatch(ctx, c, car, swarm.DispatchInput{SwarmID: in.SwarmID, TaskKey: in.TaskKey,
					Prompt: in.Prompt, Payload: json.RawMessage(in.Payload), PreferredWorkerID: in.PreferredWorkerID})
				if err != nil {
					return nil, err
				}
				t := taskView(&r.Task, nil, false)
				return &SwarmTasksResult{Task: &t, Replayed: r.Replayed}, nil
			}
			if in.TaskKey != "" || in.Prompt != "" || len(in.Payload) > 0 || in.PreferredWorkerID != "" {
				return nil, continuo.Invalid("tasks", "give tasks or one task's fields, not both")
			}
			items := make([]swarm.DispatchItem, len(in.Tasks))
			for i, it := range in.Tasks {
				items[i] = swarm.DispatchItem{TaskKey: it.TaskKey, Prompt: it.Prompt, Payload: json.RawMessage(it.Payload),
					PreferredWorkerID: it.PreferredWorkerID}
			}
			rs, err := s.opts.Swarm.DispatchBatch(ctx, c, car, in.SwarmID, items)
			if err != nil {
				return nil, err
			}
			out := &SwarmTasksResult{Tasks: make([]ListedTask, len(rs)), Replayed: true}
			for i := range rs {
				out.Tasks[i] = ListedTask(taskView(&rs[i].Task, nil, false))
				out.Replayed = out.Replayed && rs[i].Replayed
			}
			return out, nil
		})
}

// SwarmStatusArgs are the arguments of chat_swarm_status.
type SwarmStatusArgs struct {
	SwarmID string `json:"swarm_id" limit:"1,64"`
	TaskID  string `json:"task_id,omitempty" limit:"1,64" jsonschema:"one task, with its result"`
	State   string `json:"state,omitempty" enum:"taskstate" jsonschema:"list the tasks in this state (e.g. result_ready to collect)"`
	After   string `json:"after,omitempty" limit:"1,64" jsonschema:"with state: next_after of the last page"`
}

// SwarmStatusResult is the result of chat_swarm_status.
type SwarmStatusResult struct {
	Swarm   *Swarm         `json:"swarm,omitempty"`
	Workers []Worker       `json:"workers,omitempty"`
	Tasks   map[string]int `json:"task_counts,omitempty"`
	Task    *Task          `json:"task,omitempty"`
	List    []ListedTask   `json:"tasks,omitempty"`
	Next    string         `json:"next_after,omitempty"`
	// Continuations are the open ones: what awaits the owner (approve,
	// revoke, reconcile).
	Continuations []Continuation `json:"continuations,omitempty"`
	// Runtime says who replaces a compact_required worker's carrier: the
	// server (process) or the owner (manual).
	Runtime string `json:"runtime,omitempty" enum:"runtime"`
}

func statusView(st *swarm.Status) *SwarmStatusResult {
	sw := swarmView(&st.Swarm)
	out := &SwarmStatusResult{Swarm: &sw, Workers: make([]Worker, len(st.Workers)), Tasks: map[string]int{}, Runtime: st.Runtime}
	for i := range st.Workers {
		out.Workers[i] = workerView(&st.Workers[i])
		if p := st.Pressures[st.Workers[i].ID]; p != nil {
			out.Workers[i].Pressure = &WorkerPressure{Tokens: p.Tokens, Ratio: p.Ratio, Exact: p.Exact}
		}
	}
	for k, n := range st.Counts {
		out.Tasks[string(k)] = n
	}
	for i := range st.Continuations {
		out.Continuations = append(out.Continuations, continuationView(&st.Continuations[i]))
	}
	return out
}

func (s *server) swarmStatus(srv *mcp.Server) {
	add(s, srv, tool{name: "chat_swarm_status", title: "Show a swarm", readOnly: true, idempotent: true,
		desc: "Owner: the swarm's workers (epoch, carrier, continuity) and task counts by state; one task with its result; or the tasks in one state."},
		func(ctx context.Context, c *continuo.Caller, in *SwarmStatusArgs) (*SwarmStatusResult, error) {
			car := s.ownerCarrier(ctx)
			if in.State != "" {
				if in.TaskID != "" {
					return nil, continuo.Invalid("state", "give task_id or state, not both")
				}
				p, err := s.opts.Swarm.ListTasks(ctx, c, car, in.SwarmID, continuo.TaskState(in.State), in.After, swarm.MaxTaskPage)
				if err != nil {
					return nil, err
				}
				out := &SwarmStatusResult{List: make([]ListedTask, len(p.Tasks)), Next: p.Next}
				for i := range p.Tasks {
					out.List[i] = ListedTask(taskView(&p.Tasks[i], nil, false))
				}
				return out, nil
			}
			if in.After != "" {
				return nil, continuo.Invalid("after", "is only for listing tasks in a state")
			}
			if in.TaskID != "" {
				ts, err := s.opts.Swarm.TaskStatus(ctx, c, car, in.SwarmID, in.TaskID)
				if err != nil {
					return nil, err
				}
				t := taskView(&ts.Task, ts.Attempt, true)
				return &SwarmStatusResult{Task: &t}, nil
			}
			st, err := s.opts.Swarm.SwarmStatus(ctx, c, car, in.SwarmID)
			if err != nil {
				return nil, err
			}
			return statusView(st), nil
		})
}

// SwarmTaskArgs name a task of a swarm.
type SwarmTaskArgs struct {
	SwarmID string `json:"swarm_id" limit:"1,64"`
	TaskID  string `json:"task_id" limit:"1,64"`
}

// SwarmCollectArgs are the arguments of chat_swarm_collect: one task, or
// the ready results.
type SwarmCollectArgs struct {
	SwarmID        string `json:"swarm_id" limit:"1,64"`
	TaskID         string `json:"task_id,omitempty" limit:"1,64" jsonschema:"one task; omit to collect every ready result, oldest first"`
	WaitSecs       *int   `json:"wait_secs,omitempty" limit:"0,25" jsonschema:"without task_id: wait this long for the first; default 0"`
	Limit          *int   `json:"limit,omitempty" limit:"1,100" jsonschema:"without task_id; default 20"`
	IdempotencyKey string `json:"idempotency_key,omitempty" limit:"1,128" jsonschema:"without task_id: the same key returns what its first call collected"`
}

func (s *server) swarmCollect(srv *mcp.Server) {
	add(s, srv, tool{name: "chat_swarm_collect", title: "Collect results", idempotent: true,
		desc: "Owner: take results: one task's (task_id), or every ready one, oldest first, waiting up to wait_secs for the first. They become collected."},
		func(ctx context.Context, c *continuo.Caller, in *SwarmCollectArgs) (*SwarmTasksResult, error) {
			car := s.ownerCarrier(ctx)
			if in.TaskID != "" {
				switch {
				case in.WaitSecs != nil:
					return nil, continuo.Invalid("wait_secs", "is only for collecting without task_id")
				case in.Limit != nil:
					return nil, continuo.Invalid("limit", "is only for collecting without task_id")
				case in.IdempotencyKey != "":
					return nil, continuo.Invalid("idempotency_key", "is only for collecting without task_id (one task's collect replays by itself)")
				}
				r, err := s.opts.Swarm.Collect(ctx, c, car, in.SwarmID, in.TaskID)
				if err != nil {
					return nil, err
				}
				t := taskView(&r.Task, nil, true)
				return &SwarmTasksResult{Task: &t, Replayed: r.Replayed}, nil
			}
			input := swarm.CollectInput{SwarmID: in.SwarmID, Wait: secs(in.WaitSecs), Key: in.IdempotencyKey}
			if in.Limit != nil {
				input.Limit = *in.Limit
			}
			r, err := s.opts.Swarm.CollectReady(ctx, c, car, input)
			if err != nil {
				return nil, err
			}
			out := &SwarmTasksResult{Tasks: make([]ListedTask, len(r.Tasks)), Replayed: r.Replayed}
			for i := range r.Tasks {
				out.Tasks[i] = ListedTask(taskView(&r.Tasks[i], nil, true))
			}
			return out, nil
		})
}

func (s *server) swarmCancel(srv *mcp.Server) {
	add(s, srv, tool{name: "chat_swarm_cancel", title: "Cancel a task", idempotent: true,
		desc: "Owner: a queued task is cancelled; one a worker holds becomes cancel_requested (its effect may exist)."},
		func(ctx context.Context, c *continuo.Caller, in *SwarmTaskArgs) (*SwarmTaskResult, error) {
			r, err := s.opts.Swarm.Cancel(ctx, c, s.ownerCarrier(ctx), in.SwarmID, in.TaskID)
			return taskResult(r, err, false)
		})
}

// EvidenceArgs is what a reconcile decision rests on.
type EvidenceArgs struct {
	Disposition string `json:"disposition" enum:"disposition" jsonschema:"no_effect|applied|unknown: what the attempt did"`
	Ref         string `json:"ref" limit:"1,4096" jsonschema:"how you know"`
}

// SwarmReconcileArgs are the arguments of chat_swarm_reconcile.
type SwarmReconcileArgs struct {
	SwarmID   string        `json:"swarm_id" limit:"1,64"`
	TaskID    string        `json:"task_id" limit:"1,64"`
	AttemptID string        `json:"attempt_id" limit:"1,64" jsonschema:"the task's latest attempt"`
	Decision  string        `json:"decision" enum:"decision"`
	Evidence  *EvidenceArgs `json:"evidence"` // a pointer: a missing one is refused by name
	Result    string        `json:"result,omitempty" limit:"1,262144" jsonschema:"with result_ready"`
}

func (s *server) swarmReconcile(srv *mcp.Server) {
	add(s, srv, tool{name: "chat_swarm_reconcile", title: "Settle a task in doubt", idempotent: true,
		desc: "Owner: decide a reconcile_required task, or a cancel_requested one its worker does not settle (not requeue). requeue needs no_effect evidence on its latest attempt."},
		func(ctx context.Context, c *continuo.Caller, in *SwarmReconcileArgs) (*SwarmTaskResult, error) {
			if err := checkEnum("evidence.disposition", "disposition", in.Evidence.Disposition); err != nil {
				return nil, err
			}
			if in.Evidence.Ref == "" || len(in.Evidence.Ref) > continuo.MaxEvidence {
				return nil, continuo.Invalid("evidence.ref", "must be 1..%d bytes", continuo.MaxEvidence)
			}
			r, err := s.opts.Swarm.Reconcile(ctx, c, s.ownerCarrier(ctx), swarm.ReconcileInput{SwarmID: in.SwarmID, TaskID: in.TaskID,
				AttemptID: in.AttemptID, Decision: swarm.Decision(in.Decision), Disposition: swarm.Disposition(in.Evidence.Disposition),
				Evidence: in.Evidence.Ref, Result: in.Result})
			return taskResult(r, err, true)
		})
}

// SwarmClosedResult is the result of chat_swarm_close: the swarm and its
// task counts, all settled.
type SwarmClosedResult struct {
	Swarm    Swarm          `json:"swarm"`
	Tasks    map[string]int `json:"task_counts"`
	Replayed bool           `json:"replayed,omitempty"`
}

func (s *server) swarmClose(srv *mcp.Server) {
	add(s, srv, tool{name: "chat_swarm_close", title: "Close a swarm", idempotent: true,
		desc: "Owner: close a swarm whose tasks are all settled; waiting workers are told it closed."},
		func(ctx context.Context, c *continuo.Caller, in *SwarmArgs) (*SwarmClosedResult, error) {
			st, err := s.opts.Swarm.CloseSwarm(ctx, c, s.ownerCarrier(ctx), in.SwarmID)
			if err != nil {
				return nil, err
			}
			out := &SwarmClosedResult{Swarm: swarmView(&st.Swarm), Tasks: map[string]int{}, Replayed: st.Replayed}
			for k, n := range st.Counts {
				out.Tasks[string(k)] = n
			}
			return out, nil
		})
}

// SwarmWorkerArgs name a worker of a swarm.
type SwarmWorkerArgs struct {
	SwarmID  string `json:"swarm_id" limit:"1,64"`
	WorkerID string `json:"worker_id" limit:"1,64"`
}

// SwarmRetiredResult is the result of chat_swarm_leave and
// chat_swarm_remove_worker.
type SwarmRetiredResult struct {
	Worker   Worker `json:"worker"`
	Replayed bool   `json:"replayed,omitempty"`
}

func retired(r *swarm.Retired, err error) (*SwarmRetiredResult, error) {
	if err != nil {
		return nil, err
	}
	return &SwarmRetiredResult{Worker: workerView(&r.Worker), Replayed: r.Replayed}, nil
}

func (s *server) swarmRemoveWorker(srv *mcp.Server) {
	add(s, srv, tool{name: "chat_swarm_remove_worker", title: "Remove a worker", idempotent: true,
		desc: "Owner: retire a worker (a stale one, say) that holds no task: its slot is free, its conversation can never act as it again."},
		func(ctx context.Context, c *continuo.Caller, in *SwarmWorkerArgs) (*SwarmRetiredResult, error) {
			return retired(s.opts.Swarm.RemoveWorker(ctx, c, s.ownerCarrier(ctx), in.SwarmID, in.WorkerID))
		})
}

// ---- worker ----

// SwarmJoinArgs are the arguments of chat_swarm_join.
type SwarmJoinArgs struct {
	SwarmID            string `json:"swarm_id" limit:"1,64"`
	Invite             string `json:"invite,omitempty" limit:"1,128" jsonschema:"a new worker: the owner's invite"`
	ContinuationTicket string `json:"continuation_ticket,omitempty" limit:"1,128" jsonschema:"or continue a worker: its one-time ticket"`
	Label              string `json:"label,omitempty" limit:"1,256" jsonschema:"for the owner (with a ticket: the worker's)"`
	CarrierKey         string `json:"carrier_key,omitempty" limit:"22,128" jsonschema:"stateless clients: a random value this conversation keeps"`
}

// SwarmJoinResult is the result of chat_swarm_join.
type SwarmJoinResult struct {
	Worker   Worker      `json:"worker"`
	Capsule  CapsuleJSON `json:"capsule,omitempty"`
	Replayed bool        `json:"replayed,omitempty"`
}

func (s *server) swarmJoin(srv *mcp.Server) {
	add(s, srv, tool{name: "chat_swarm_join", title: "Join a swarm", idempotent: true,
		desc: "Worker: join with the owner's invite, or continue a worker with its ticket. Then chat_swarm_next(ack=true), and per task chat_swarm_submit(next={ack:true})."},
		func(ctx context.Context, c *continuo.Caller, in *SwarmJoinArgs) (*SwarmJoinResult, error) {
			car, err := s.carrier(ctx, in.CarrierKey)
			if err != nil {
				return nil, err
			}
			switch {
			case (in.Invite == "") == (in.ContinuationTicket == ""):
				return nil, continuo.Invalid("invite", "give invite (a new worker) or continuation_ticket (continue one)")
			case in.ContinuationTicket != "":
				b, err := s.opts.Swarm.RedeemAs(ctx, c, car, in.SwarmID, in.ContinuationTicket, in.Label)
				if err != nil {
					return nil, err
				}
				return &SwarmJoinResult{Worker: workerView(&b.Worker), Capsule: CapsuleJSON(b.Continuation.Capsule), Replayed: b.Replayed}, nil
			case in.Label == "":
				return nil, continuo.Invalid("label", "is required with invite")
			}
			j, err := s.opts.Swarm.Join(ctx, c, car, swarm.JoinInput{SwarmID: in.SwarmID, Invite: in.Invite, Label: in.Label})
			if err != nil {
				return nil, err
			}
			return &SwarmJoinResult{Worker: workerView(&j.Worker), Replayed: j.Replayed}, nil
		})
}

// Every worker tool's arguments start with worker_id, epoch and an
// optional carrier_key (spelled out in each: argument structs are flat).
// The epoch is a pointer so that a missing one is refused, not taken
// for 0.

func (s *server) worker(ctx context.Context, workerID string, epoch int64, key string) (swarm.Carrier, swarm.WorkerRef, error) {
	car, err := s.carrier(ctx, key)
	return car, swarm.WorkerRef{WorkerID: workerID, Epoch: epoch}, err
}

// SwarmNextArgs are the arguments of chat_swarm_next.
type SwarmNextArgs struct {
	WorkerID   string `json:"worker_id" limit:"1,64"`
	Epoch      *int64 `json:"epoch" limit:"0,1000000000"`
	CarrierKey string `json:"carrier_key,omitempty" limit:"22,128" jsonschema:"as given to chat_swarm_join"`
	WaitSecs   *int   `json:"wait_secs,omitempty" limit:"0,25" jsonschema:"default 20"`
	Ack        bool   `json:"ack,omitempty"`
}

// SwarmNextResult is the result of chat_swarm_next.
type SwarmNextResult struct {
	State      string `json:"state" enum:"nextstate"`
	Task       *Task  `json:"task,omitempty"`
	Redelivery bool   `json:"redelivery,omitempty"`
}

func (s *server) swarmNext(srv *mcp.Server) {
	add(s, srv, tool{name: "chat_swarm_next", title: "Wait for a task",
		desc: "Worker: your current task again, or the next; waits up to wait_secs; ack=true starts it. compact_required: take no work; continued, closed: stop."},
		func(ctx context.Context, c *continuo.Caller, in *SwarmNextArgs) (*SwarmNextResult, error) {
			car, ref, err := s.worker(ctx, in.WorkerID, *in.Epoch, in.CarrierKey)
			if err != nil {
				return nil, err
			}
			d, err := s.opts.Swarm.Deliver(ctx, c, car, ref, swarm.NextOptions{Wait: nextWait(in.WaitSecs), Ack: in.Ack,
				Progress: progress(ctx, "waiting for a task")})
			if err != nil {
				return nil, err
			}
			return nextView(d), nil
		})
}

// nextWait is next's wait: wait_secs, or the default.
func nextWait(secs *int) time.Duration {
	if secs == nil {
		return continuo.DefaultNextWait
	}
	return time.Duration(*secs) * time.Second
}

func nextView(d *swarm.Delivery) *SwarmNextResult {
	out := &SwarmNextResult{State: string(d.State), Redelivery: d.Redelivery}
	if d.Task != nil {
		t := taskView(d.Task, d.Attempt, false)
		t.Prompt = d.Task.Prompt
		if d.Task.Payload != "" {
			t.Payload = JSONValue(d.Task.Payload)
		}
		out.Task = &t
	}
	return out
}

// SwarmWorkerTaskArgs name a task the worker holds.
type SwarmWorkerTaskArgs struct {
	WorkerID   string `json:"worker_id" limit:"1,64"`
	Epoch      *int64 `json:"epoch" limit:"0,1000000000"`
	CarrierKey string `json:"carrier_key,omitempty" limit:"22,128" jsonschema:"as given to chat_swarm_join"`
	TaskID     string `json:"task_id" limit:"1,64"`
}

func (s *server) swarmAck(srv *mcp.Server) {
	add(s, srv, tool{name: "chat_swarm_ack", title: "Start a task", idempotent: true,
		desc: "Worker: say you start executing the task (its effects may exist from now on)."},
		func(ctx context.Context, c *continuo.Caller, in *SwarmWorkerTaskArgs) (*SwarmTaskResult, error) {
			car, ref, err := s.worker(ctx, in.WorkerID, *in.Epoch, in.CarrierKey)
			if err != nil {
				return nil, err
			}
			r, err := s.opts.Swarm.Ack(ctx, c, car, ref, in.TaskID)
			return taskResult(r, err, false)
		})
}

// SwarmCheckpointArgs are the arguments of chat_swarm_checkpoint.
type SwarmCheckpointArgs struct {
	WorkerID   string    `json:"worker_id" limit:"1,64"`
	Epoch      *int64    `json:"epoch" limit:"0,1000000000"`
	CarrierKey string    `json:"carrier_key,omitempty" limit:"22,128" jsonschema:"as given to chat_swarm_join"`
	Checkpoint JSONValue `json:"checkpoint" jsonschema:"JSON object, at most 16 KiB: summary, state, blockers, next step, artifact refs; no credentials"`
}

// SwarmWorkerResult is the result of chat_swarm_checkpoint.
type SwarmWorkerResult struct {
	Worker Worker `json:"worker"`
}

func (s *server) swarmCheckpoint(srv *mcp.Server) {
	add(s, srv, tool{name: "chat_swarm_checkpoint", title: "Save a worker checkpoint",
		desc: "Worker: record where you stand; renews your task's lease. A new carrier continues from it."},
		func(ctx context.Context, c *continuo.Caller, in *SwarmCheckpointArgs) (*SwarmWorkerResult, error) {
			car, ref, err := s.worker(ctx, in.WorkerID, *in.Epoch, in.CarrierKey)
			if err != nil {
				return nil, err
			}
			w, err := s.opts.Swarm.Checkpoint(ctx, c, car, ref, json.RawMessage(in.Checkpoint))
			if err != nil {
				return nil, err
			}
			return &SwarmWorkerResult{Worker: workerView(w)}, nil
		})
}

// SwarmSubmitArgs are the arguments of chat_swarm_submit.
type SwarmSubmitArgs struct {
	WorkerID   string    `json:"worker_id" limit:"1,64"`
	Epoch      *int64    `json:"epoch" limit:"0,1000000000"`
	CarrierKey string    `json:"carrier_key,omitempty" limit:"22,128" jsonschema:"as given to chat_swarm_join"`
	TaskID     string    `json:"task_id" limit:"1,64"`
	Result     string    `json:"result" limit:"1,262144"`
	Next       *NextArgs `json:"next,omitempty"`
}

// NextArgs are submit's next: what chat_swarm_next takes, after the submit.
type NextArgs struct {
	WaitSecs *int `json:"wait_secs,omitempty" limit:"0,25"`
	Ack      bool `json:"ack,omitempty"`
}

// SwarmSubmitResult is the result of chat_swarm_submit: the task, and
// with next the answer chat_swarm_next would give, or why it could not
// (the submit stands either way).
type SwarmSubmitResult struct {
	Task      Task        `json:"task"`
	Replayed  bool        `json:"replayed,omitempty"`
	Next      *NextAnswer `json:"next,omitempty"`
	NextError *ErrorBody  `json:"next_error,omitempty"`
}

// NextAnswer is chat_swarm_next's answer inside submit's result; its task
// is described by reference to the submitted task's schema (the bytes of a
// second copy would sit in every worker's context).
type NextAnswer struct {
	State      string      `json:"state" enum:"nextstate"`
	Task       *ListedTask `json:"task,omitempty"`
	Redelivery bool        `json:"redelivery,omitempty"`
}

func (s *server) swarmSubmit(srv *mcp.Server) {
	add(s, srv, tool{name: "chat_swarm_submit", title: "Submit a result", idempotent: true,
		desc: "Worker: hand in the task's result (the same again is a safe replay); with next, also chat_swarm_next's answer (next_error: why not; the submit stands)."},
		func(ctx context.Context, c *continuo.Caller, in *SwarmSubmitArgs) (*SwarmSubmitResult, error) {
			car, ref, err := s.worker(ctx, in.WorkerID, *in.Epoch, in.CarrierKey)
			if err != nil {
				return nil, err
			}
			if in.Next == nil {
				r, err := s.opts.Swarm.Submit(ctx, c, car, ref, in.TaskID, in.Result)
				if err != nil {
					return nil, err
				}
				return &SwarmSubmitResult{Task: taskView(&r.Task, nil, false), Replayed: r.Replayed}, nil
			}
			r, err := s.opts.Swarm.SubmitNext(ctx, c, car, ref, in.TaskID, in.Result, swarm.NextOptions{Wait: nextWait(in.Next.WaitSecs),
				Ack: in.Next.Ack, Progress: progress(ctx, "waiting for the next task")})
			if err != nil {
				return nil, err
			}
			out := &SwarmSubmitResult{Task: taskView(&r.Task, nil, false), Replayed: r.Replayed}
			if r.NextErr != nil {
				body := s.errorBody(ctx, "chat_swarm_submit", r.NextErr)
				out.NextError = &body
			} else {
				n := nextView(r.Next)
				out.Next = &NextAnswer{State: n.State, Task: (*ListedTask)(n.Task), Redelivery: n.Redelivery}
			}
			return out, nil
		})
}

// SwarmFailArgs are the arguments of chat_swarm_fail.
type SwarmFailArgs struct {
	WorkerID   string `json:"worker_id" limit:"1,64"`
	Epoch      *int64 `json:"epoch" limit:"0,1000000000"`
	CarrierKey string `json:"carrier_key,omitempty" limit:"22,128" jsonschema:"as given to chat_swarm_join"`
	TaskID     string `json:"task_id" limit:"1,64"`
	Reason     string `json:"reason" limit:"1,4096"`
	Effect     string `json:"effect" enum:"effect" jsonschema:"none: nothing happened; unknown: the owner must reconcile"`
}

func (s *server) swarmFail(srv *mcp.Server) {
	add(s, srv, tool{name: "chat_swarm_fail", title: "Give up a task", idempotent: true,
		desc: "Worker: you cannot finish the task; say whether it had any effect."},
		func(ctx context.Context, c *continuo.Caller, in *SwarmFailArgs) (*SwarmTaskResult, error) {
			car, ref, err := s.worker(ctx, in.WorkerID, *in.Epoch, in.CarrierKey)
			if err != nil {
				return nil, err
			}
			r, err := s.opts.Swarm.Fail(ctx, c, car, ref, in.TaskID, in.Reason, swarm.Effect(in.Effect))
			return taskResult(r, err, false)
		})
}

// SwarmLeaveArgs are the arguments of chat_swarm_leave.
type SwarmLeaveArgs struct {
	WorkerID   string `json:"worker_id" limit:"1,64"`
	Epoch      *int64 `json:"epoch" limit:"0,1000000000"`
	CarrierKey string `json:"carrier_key,omitempty" limit:"22,128" jsonschema:"as given to chat_swarm_join"`
}

func (s *server) swarmLeave(srv *mcp.Server) {
	add(s, srv, tool{name: "chat_swarm_leave", title: "Leave a swarm", idempotent: true,
		desc: "Worker: leave the swarm for good (holding no task); its slot is freed."},
		func(ctx context.Context, c *continuo.Caller, in *SwarmLeaveArgs) (*SwarmRetiredResult, error) {
			car, ref, err := s.worker(ctx, in.WorkerID, *in.Epoch, in.CarrierKey)
			if err != nil {
				return nil, err
			}
			return retired(s.opts.Swarm.Leave(ctx, c, car, ref))
		})
}
