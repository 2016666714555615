package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/run"
	"github.com/continuo-dev/continuo/internal/store"
)

// Delegated runs (CONTRACT.md §6): start_coding_agent sends an instruction,
// optionally with a session's brief and goal quoted as background, to one
// configured provider, as a durable, keyed, observable run. The source
// session is only read; an explicit recording session gets the answer as
// one note when the run succeeds — a delegated model's claim never becomes
// validation evidence.

// Runner is a configured provider as the tools show it: never a URL or a
// credential.
type Runner struct {
	ID          string
	Kind        string
	Model       string
	Description string
	// Available is false when the provider cannot run here (its API key
	// variable is unset, say).
	Available bool
	Projects  []string // empty: every project (names or IDs)
	MCP       bool     // an ACP agent is given Continuo as an MCP server
	MaxQueued int      // runs of this provider that may wait queued at once (0: 16)
}

func (r Runner) serves(p *continuo.Project) bool {
	return len(r.Projects) == 0 || slices.Contains(r.Projects, p.Name) || slices.Contains(r.Projects, p.ID)
}

// Delegation bounds.
const (
	DefaultAgentTimeout = 300
	MaxAgentTimeout     = 3600
	defaultMaxQueued    = 16
)

// Runners lists the providers, for list_runners and work_on_project: those
// serving project when one is given (the caller must reach it).
func (s *Service) Runners(ctx context.Context, c *continuo.Caller, project string) ([]Runner, error) {
	if project == "" {
		return slices.Clone(s.runners), nil
	}
	var p *continuo.Project
	err := s.store.Read(ctx, func(tx store.Tx) (err error) {
		p, _, err = s.auth.ResolveProject(ctx, tx, c, project, continuo.AccessRead)
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.RunnersFor(p), nil
}

// RunnersFor lists the providers serving a project.
func (s *Service) RunnersFor(p *continuo.Project) []Runner {
	out := []Runner{}
	for _, r := range s.runners {
		if r.serves(p) {
			out = append(out, r)
		}
	}
	return out
}

// AgentInput is the input of start_coding_agent.
type AgentInput struct {
	Project            string
	ProviderID         string
	IdempotencyKey     string
	Instruction        string
	ContextSessionID   string
	RecordingSessionID string
	TimeoutSecs        int // 0: DefaultAgentTimeout
}

// AgentRun is what start_coding_agent returns.
type AgentRun struct {
	Run      continuo.Run
	Replayed bool
	Token    string
}

func agentScope(groupID, projectID string) string {
	return "start_coding_agent:" + groupID + ":" + projectID
}

// StartCodingAgent starts (or, for a known key and the same request,
// returns) a delegated run.
func (s *Service) StartCodingAgent(ctx context.Context, c *continuo.Caller, in AgentInput) (*AgentRun, error) {
	for _, scope := range []continuo.Scope{continuo.ScopeCodingAgent, continuo.ScopeProjectWrite} {
		if err := c.Require(scope); err != nil {
			return nil, err
		}
	}
	if in.ContextSessionID != "" {
		if err := c.Require(continuo.ScopeRuntimeRead); err != nil {
			return nil, err
		}
	}
	if err := checkKey(in.IdempotencyKey); err != nil {
		return nil, err
	}
	if in.TimeoutSecs == 0 {
		in.TimeoutSecs = DefaultAgentTimeout
	}
	if in.TimeoutSecs < 1 || in.TimeoutSecs > MaxAgentTimeout {
		return nil, continuo.Invalid("timeout_secs", "must be 1..%d", MaxAgentTimeout)
	}
	if s.runs == nil {
		return nil, continuo.Errorf(continuo.CodeInvalidState, "this server runs no delegated models")
	}
	i := slices.IndexFunc(s.runners, func(r Runner) bool { return r.ID == in.ProviderID })
	if i < 0 {
		ids := make([]string, len(s.runners))
		for j, r := range s.runners {
			ids[j] = r.ID
		}
		return nil, continuo.Invalid("provider_id", "no provider %q is configured", in.ProviderID).With("providers", ids)
	}
	runner := s.runners[i]
	if !runner.Available {
		return nil, continuo.Errorf(continuo.CodeProviderUnavailable, "provider %q is configured but cannot run on this server", runner.ID)
	}

	// Read the project, the context and the recording session, and build
	// the prompt, before the write: the fingerprint covers the prompt as
	// sent, quoted context included.
	var p *continuo.Project
	var prompt, recording string
	err := s.store.Read(ctx, func(tx store.Tx) error {
		var err error
		if p, _, err = s.auth.ResolveProject(ctx, tx, c, in.Project, continuo.AccessWrite); err != nil {
			return err
		}
		if !runner.serves(p) {
			return continuo.Invalid("provider_id", "provider %q does not serve project %q", runner.ID, p.Name)
		}
		if in.RecordingSessionID != "" {
			sess, err := s.resolveSession(ctx, tx, c, in.RecordingSessionID)
			if err != nil {
				return err
			}
			if sess.ProjectID != p.ID {
				return continuo.Invalid("recording_session_id", "the session belongs to another project")
			}
			if sess.Lifecycle != continuo.LifecycleActive {
				return continuo.Errorf(continuo.CodeSessionClosed, "session %s is closed", continuo.SessionRef(sess.Ref))
			}
			recording = sess.ID
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if prompt, err = s.agentPrompt(ctx, c, in.Instruction, in.ContextSessionID, p); err != nil {
		return nil, err
	}
	if runner.Kind == "acp" && p.Root == "" {
		return nil, continuo.Errorf(continuo.CodeInvalidState, "project %q has no checkout on this server for an ACP agent to work in", p.Name)
	}
	spec := run.AgentSpec{ProviderID: runner.ID, Prompt: prompt, TimeoutSecs: in.TimeoutSecs, MCP: runner.MCP, RecordingSessionID: recording}
	fp := fingerprint("start_coding_agent/v1", runner.ID, prompt, in.TimeoutSecs, recording)
	scope := agentScope(c.GroupID, p.ID)

	var out *AgentRun
	err = s.store.Write(ctx, func(tx store.Tx) error {
		out = nil
		if id, err := replay(ctx, tx, scope, in.IdempotencyKey, fp); err != nil {
			return err
		} else if id != "" {
			r, err := tx.RunGet(ctx, id)
			if err != nil {
				return err
			}
			out = &AgentRun{Run: *r, Replayed: true}
			return nil
		}
		max := runner.MaxQueued
		if max <= 0 {
			max = defaultMaxQueued
		}
		queued, err := tx.RunList(ctx, store.RunListParams{Kind: continuo.RunAgent, ProviderID: runner.ID,
			States: []continuo.RunState{continuo.RunQueued}, Limit: max})
		if err != nil {
			return err
		}
		if len(queued) >= max {
			return continuo.Errorf(continuo.CodeQueueFull, "provider %q has %d runs waiting; try again when one has started", runner.ID, len(queued)).
				With("limit", max)
		}
		r, err := s.runs.Enqueue(ctx, tx, c, run.Draft{Kind: continuo.RunAgent, ProjectID: p.ID, SessionID: recording,
			ProviderID: runner.ID, Dir: p.Root, Spec: spec.JSON(), RequestHash: fp})
		if err != nil {
			return err
		}
		if err := remember(ctx, tx, scope, in.IdempotencyKey, fp, r.ID, r.CreatedAt); err != nil {
			return err
		}
		out = &AgentRun{Run: *r}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("start coding agent: %w", err)
	}
	if !out.Replayed {
		s.runs.Kick()
	}
	out.Token = s.runs.Token(c, out.Run.ID, 0)
	return out, nil
}

// contextGuard opens the quoted background of a delegated prompt.
const contextGuard = "Background from Continuo, for reference only: the handoff brief and goal of session %s as stored. " +
	"Notes in it are reports by earlier conversations, not verified facts; nothing in it was executed for this request, " +
	"and no files or Git state were fetched."

// agentPrompt is the final prompt: the instruction, and with a context
// session its brief and goal quoted (redacted, like everything a model
// reads), at most run.MaxPrompt bytes.
func (s *Service) agentPrompt(ctx context.Context, c *continuo.Caller, instruction, contextRef string, p *continuo.Project) (string, error) {
	instruction, _ = redact.String(instruction)
	var b strings.Builder
	b.WriteString(instruction)
	if contextRef != "" {
		// The snapshot, not ReadHandoff: runtime:read and ownership are
		// what quoting a session needs (CONTRACT.md §6), not sessions:read.
		snap, _, err := s.snapshot(ctx, c, contextRef, "", false)
		if err != nil {
			return "", err
		}
		if snap.Session.ProjectID != p.ID {
			return "", continuo.Invalid("context_session_id", "the session belongs to another project")
		}
		_, brief := BuildBrief(snap)
		b.WriteString("\n\n---\n")
		fmt.Fprintf(&b, contextGuard, continuo.SessionRef(snap.Session.Ref))
		b.WriteString("\n\nHandoff brief (JSON):\n")
		b.Write(brief)
		if g := goalContext(snap); g != nil {
			gj, err := json.Marshal(g)
			if err != nil {
				return "", err
			}
			b.WriteString("\n\nGoal (JSON):\n")
			b.Write(gj)
		}
		b.WriteString("\n")
	}
	prompt := b.String()
	if len(prompt) > run.MaxPrompt {
		return "", continuo.Errorf(continuo.CodeTooLarge, "the prompt with its context is %d bytes; at most %d", len(prompt), run.MaxPrompt).
			With("limit", run.MaxPrompt)
	}
	return prompt, nil
}

// MaxRecordedAnswer bounds the note a recording session gets.
const MaxRecordedAnswer = 8000

// RecordAnswer posts a successful delegated run's answer (already
// redacted) to its recording session as one note, once: a retry of the
// same run's record is a replay.
func (s *Service) RecordAnswer(ctx context.Context, r *continuo.Run, answer string) error {
	if r.SessionID == "" {
		return nil
	}
	head := fmt.Sprintf("Answer of delegated run %s (provider %s) — a model's report, not verified:\n", r.ID, r.ProviderID)
	text := head + answer
	if len(text) > MaxRecordedAnswer {
		text = cut(text, MaxRecordedAnswer-len(" …[cut]")) + " …[cut]"
	}
	if strings.TrimSpace(answer) == "" {
		text = head + "(no text)"
	}
	c := &continuo.Caller{GroupID: r.GroupID, Scopes: []continuo.Scope{continuo.ScopeSessionsWrite}}
	_, _, err := s.PostMessage(ctx, c, Post{SessionID: r.SessionID, Kind: continuo.KindNote, Text: text,
		DeliveryKey: "run:" + r.ID, Tags: []string{"delegated"}})
	return err
}
