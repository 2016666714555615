package mcpserver

import (
	"context"
	"encoding/json"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/run"
	"github.com/continuo-dev/continuo/internal/workflow"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Run is a run as a model reads it (CONTRACT.md §6).
type Run struct {
	RunID           string          `json:"run_id"`
	Kind            string          `json:"kind"`
	State           string          `json:"state"`
	SessionID       string          `json:"session_id,omitempty"`
	ProjectID       string          `json:"project_id"`
	Check           string          `json:"check,omitempty"`
	ProviderID      string          `json:"provider_id,omitempty"`
	CreatedAt       string          `json:"created_at"`
	StartedAt       string          `json:"started_at,omitempty"`
	EndedAt         string          `json:"ended_at,omitempty"`
	ExitCode        *int            `json:"exit_code,omitempty"`
	ErrorKind       string          `json:"error_kind,omitempty"`
	Usage           json.RawMessage `json:"usage,omitempty"`
	CancelRequested bool            `json:"cancel_requested,omitempty"`
	Source          *RunSource      `json:"source,omitempty"`
	Output          RunOutput       `json:"output"`
}

// RunSource is the source fingerprint a validation run ran on. ByStat
// names the files it took by size and modification time instead of
// content (too large to read within one call).
type RunSource struct {
	Head     string              `json:"head"`
	TreeHash string              `json:"tree_hash"`
	Clean    bool                `json:"clean"`
	ByStat   *workflow.StatFiles `json:"by_stat,omitempty"`
}

// RunOutput counts a run's log: bytes the run produced (its output; the
// log's state lines are not counted), bytes of the log kept, and whether
// some were dropped (the first 256 KiB and the newest up to 1 MiB stay).
type RunOutput struct {
	Bytes     int64 `json:"bytes"`
	KeptBytes int64 `json:"kept_bytes"`
	Truncated bool  `json:"truncated"`
}

func runView(r *continuo.Run) Run {
	v := Run{RunID: r.ID, Kind: string(r.Kind), State: string(r.State), SessionID: r.SessionID, ProjectID: r.ProjectID,
		Check: r.Check, ProviderID: r.ProviderID, CreatedAt: ts(r.CreatedAt), ExitCode: r.ExitCode, ErrorKind: r.ErrorKind,
		CancelRequested: r.CancelRequested && !r.State.Terminal(),
		Output:          RunOutput{Bytes: r.OutputBytes, KeptBytes: r.KeptBytes, Truncated: r.DroppedThrough > 0}}
	if r.StartedAt != nil {
		v.StartedAt = ts(*r.StartedAt)
	}
	if r.EndedAt != nil {
		v.EndedAt = ts(*r.EndedAt)
	}
	if r.Usage != "" {
		v.Usage = json.RawMessage(r.Usage)
	}
	if src := workflow.RunSource(r); src != nil {
		v.Source = &RunSource{Head: src.Head, TreeHash: src.TreeHash(), Clean: src.Clean, ByStat: src.ByStat}
	}
	return v
}

// runSchema names a run's fields once, for the tools that return one.
var runSchema = described("run_id, kind, state, session_id?, project_id, check?, provider_id?, created_at, started_at?, ended_at?, exit_code?, error_kind?, usage?, cancel_requested?, source? {head, tree_hash: of head + uncommitted changes, clean: no changes, by_stat? {paths, total}: files taken by size and mtime}, output {bytes, kept_bytes, truncated}",
	map[string][]string{"kind": strs(continuo.RunKinds()), "state": strs(continuo.RunStates())})

var runEventSchema = described("seq, kind, text", map[string][]string{"kind": strs(continuo.RunEventKinds())})

func (s *server) registerRunTools(srv *mcp.Server) {
	for _, register := range []func(*mcp.Server){s.runValidation, s.observeRun, s.cancelRun, s.listRunners, s.startCodingAgent} {
		register(srv)
	}
}

// ---- run_validation ----

// RunValidationArgs are the arguments of run_validation.
type RunValidationArgs struct {
	SessionID string `json:"session_id" limit:"1,64" jsonschema:"ses_… or ~sN"`
	Check     string `json:"check" limit:"1,64" jsonschema:"a check the project names (list_projects)"`
	WaitSecs  *int   `json:"wait_secs,omitempty" limit:"0,60" jsonschema:"wait this long for the run to end"`
}

// RunValidationResult is the result of run_validation.
type RunValidationResult struct {
	Run              Run    `json:"run"`
	Shared           bool   `json:"shared,omitempty"`
	ObservationToken string `json:"observation_token"`
}

func (s *server) runValidation(srv *mcp.Server) {
	add(s, srv, tool{name: "run_validation", title: "Run a check",
		desc: "Use to prove work: runs a named check of the project in the session's checkout and records the result as the session's evidence. A check already running on the same source is shared."},
		func(ctx context.Context, c *continuo.Caller, in *RunValidationArgs) (*RunValidationResult, error) {
			v, err := s.opts.Workflow.RunValidation(ctx, c, in.SessionID, in.Check, secs(in.WaitSecs))
			if err != nil {
				return nil, err
			}
			return &RunValidationResult{Run: runView(&v.Run), Shared: v.Shared, ObservationToken: v.Token}, nil
		})
}

func secs(n *int) time.Duration {
	if n == nil {
		return 0
	}
	return time.Duration(*n) * time.Second
}

// ---- observe_run ----

// ObserveRunArgs are the arguments of observe_run.
type ObserveRunArgs struct {
	RunID            string `json:"run_id" limit:"1,64"`
	ObservationToken string `json:"observation_token,omitempty" limit:"1,128" jsonschema:"from the last call: only newer output"`
	WaitSecs         *int   `json:"wait_secs,omitempty" limit:"0,60" jsonschema:"wait this long for new output"`
}

// RunEvent is one entry of a run's log.
type RunEvent struct {
	Seq  int64  `json:"seq"`
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// ObserveRunResult is the result of observe_run.
type ObserveRunResult struct {
	Run              Run        `json:"run"`
	Events           []RunEvent `json:"events"`
	ObservationToken string     `json:"observation_token"`
	HasMore          bool       `json:"has_more"`
	HistoryLost      bool       `json:"history_lost"`
}

// observeRun registers observe_run and its alias for delegated runs
// (CONTRACT.md §6), one handler under two names.
func (s *server) observeRun(srv *mcp.Server) {
	for _, t := range []tool{
		{name: "observe_run", title: "Read a run's output", readOnly: true, idempotent: true,
			desc: "Use to follow a run: its state and output, all of it kept, or with observation_token only what is new; waits up to wait_secs for more."},
		{name: "observe_coding_agent", title: "Read a delegated run's output", readOnly: true, idempotent: true,
			desc: "Use to follow a start_coding_agent run (as observe_run): the model's text as it arrives, usage at the end."},
	} {
		s.addObserve(srv, t)
	}
}

func (s *server) addObserve(srv *mcp.Server, t tool) {
	add(s, srv, t,
		func(ctx context.Context, c *continuo.Caller, in *ObserveRunArgs) (*ObserveRunResult, error) {
			o, err := s.opts.Runs.Observe(ctx, c, in.RunID, in.ObservationToken, secs(in.WaitSecs))
			if err != nil {
				return nil, err
			}
			out := &ObserveRunResult{Run: runView(&o.Run), Events: make([]RunEvent, len(o.Events)), ObservationToken: o.Token,
				HasMore: o.HasMore, HistoryLost: o.HistoryLost}
			for i, e := range o.Events {
				out.Events[i] = RunEvent{Seq: e.Seq, Kind: string(e.Kind), Text: e.Text}
			}
			return out, nil
		})
}

// ---- cancel_run ----

// CancelRunArgs are the arguments of cancel_run.
type CancelRunArgs struct {
	RunID string `json:"run_id" limit:"1,64"`
}

// CancelRunResult is the result of cancel_run.
type CancelRunResult struct {
	Run Run `json:"run"`
}

// cancelRun registers cancel_run and its alias for delegated runs.
func (s *server) cancelRun(srv *mcp.Server) {
	for _, t := range []tool{
		{name: "cancel_run", title: "Cancel a run", idempotent: true,
			desc: "Use to stop a run wherever it runs: it ends cancelled unless it finished first."},
		{name: "cancel_coding_agent", title: "Cancel a delegated run", idempotent: true,
			desc: "Use to stop a start_coding_agent run (as cancel_run): stops the stream or the agent."},
	} {
		s.addCancel(srv, t)
	}
}

func (s *server) addCancel(srv *mcp.Server, t tool) {
	add(s, srv, t,
		func(ctx context.Context, c *continuo.Caller, in *CancelRunArgs) (*CancelRunResult, error) {
			r, err := s.opts.Runs.Cancel(ctx, c, in.RunID, run.CancelWait)
			if err != nil {
				return nil, err
			}
			return &CancelRunResult{Run: runView(r)}, nil
		})
}

// ---- list_runners ----

// ListRunnersArgs are the arguments of list_runners.
type ListRunnersArgs struct {
	Project string `json:"project,omitempty" limit:"1,128" jsonschema:"only the providers serving this project"`
}

// ListRunnersResult is the result of list_runners.
type ListRunnersResult struct {
	Providers []Provider `json:"providers"`
}

func (s *server) listRunners(srv *mcp.Server) {
	add(s, srv, tool{name: "list_runners", title: "List model providers", readOnly: true, idempotent: true,
		desc: "Use before delegating: the configured model APIs and coding agents start_coding_agent can use."},
		func(ctx context.Context, c *continuo.Caller, in *ListRunnersArgs) (*ListRunnersResult, error) {
			rs, err := s.opts.Workflow.Runners(ctx, c, in.Project)
			if err != nil {
				return nil, err
			}
			return &ListRunnersResult{Providers: providers(rs)}, nil
		})
}

// ---- start_coding_agent ----

// StartCodingAgentArgs are the arguments of start_coding_agent.
type StartCodingAgentArgs struct {
	Project            string `json:"project" limit:"1,128"`
	ProviderID         string `json:"provider_id" limit:"1,64" jsonschema:"from list_runners"`
	IdempotencyKey     string `json:"idempotency_key" limit:"1,128" jsonschema:"same key and request return the same run"`
	Instruction        string `json:"instruction" limit:"1,65536"`
	ContextSessionID   string `json:"context_session_id,omitempty" limit:"1,64" jsonschema:"quote this session's brief and goal as background"`
	RecordingSessionID string `json:"recording_session_id,omitempty" limit:"1,64" jsonschema:"post the answer to this session as a note"`
	TimeoutSecs        *int   `json:"timeout_secs,omitempty" limit:"1,3600" jsonschema:"default 300"`
}

// StartCodingAgentResult is the result of start_coding_agent.
type StartCodingAgentResult struct {
	Run              Run    `json:"run"`
	Replayed         bool   `json:"replayed"`
	ObservationToken string `json:"observation_token"`
}

func (s *server) startCodingAgent(srv *mcp.Server) {
	add(s, srv, tool{name: "start_coding_agent", title: "Delegate to a model", idempotent: true,
		desc: "Use for a second opinion or a delegated task: one turn on a configured provider, as a run to observe. It does not resume the context session."},
		func(ctx context.Context, c *continuo.Caller, in *StartCodingAgentArgs) (*StartCodingAgentResult, error) {
			timeout := 0
			if in.TimeoutSecs != nil {
				timeout = *in.TimeoutSecs
			}
			r, err := s.opts.Workflow.StartCodingAgent(ctx, c, workflow.AgentInput{Project: in.Project, ProviderID: in.ProviderID,
				IdempotencyKey: in.IdempotencyKey, Instruction: in.Instruction, ContextSessionID: in.ContextSessionID,
				RecordingSessionID: in.RecordingSessionID, TimeoutSecs: timeout})
			if err != nil {
				return nil, err
			}
			return &StartCodingAgentResult{Run: runView(&r.Run), Replayed: r.Replayed, ObservationToken: r.Token}, nil
		})
}
