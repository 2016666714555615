package mcpserver

import (
	"context"
	"encoding/json"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/workflow"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func ts(t time.Time) string { return t.UTC().Format(continuo.TimeFormat) }

// Message is a session message as a model sees it: text is redacted.
type Message struct {
	MessageID    string   `json:"message_id"`
	SessionID    string   `json:"session_id"`
	Seq          int64    `json:"seq"`
	Kind         string   `json:"kind"`
	Text         string   `json:"text"`
	Redacted     bool     `json:"redacted,omitempty"`
	Status       string   `json:"status"`
	Priority     string   `json:"priority"`
	Tags         []string `json:"tags"`
	ReplyTo      string   `json:"reply_to,omitempty"`
	Supersedes   string   `json:"supersedes,omitempty"`
	SupersededBy string   `json:"superseded_by,omitempty"`
	Resolution   string   `json:"resolution,omitempty"`
	ResolvedBy   string   `json:"resolved_by,omitempty"`
	CreatedAt    string   `json:"created_at"`
	ResolvedAt   string   `json:"resolved_at,omitempty"`
}

func message(m *continuo.Message) Message {
	text, red := redact.String(m.Text)
	res, red2 := redact.String(m.Resolution)
	tags, red3 := redact.Strings(m.Tags)
	if tags == nil {
		tags = []string{}
	}
	out := Message{MessageID: m.ID, SessionID: m.SessionID, Seq: m.Seq, Kind: string(m.Kind), Text: text, Redacted: red || red2 || red3,
		Status: string(m.Status), Priority: string(m.Priority), Tags: tags, ReplyTo: m.ReplyTo, Supersedes: m.Supersedes,
		SupersededBy: m.SupersededBy, Resolution: res, ResolvedBy: m.ResolvedBy, CreatedAt: ts(m.CreatedAt)}
	if m.ResolvedAt != nil {
		out.ResolvedAt = ts(*m.ResolvedAt)
	}
	return out
}

// registerSessionTools registers the Workflow Session tools (CONTRACT.md §3),
// one function each.
func (s *server) registerSessionTools(srv *mcp.Server) {
	for _, register := range []func(*mcp.Server){
		s.listProjects, s.workOnProject, s.closeSession, s.listSessions,
		s.postSessionMessage, s.resolveSessionMessage, s.listSessionMessages, s.readSessionHandoff, s.readSessionWorkingSet,
	} {
		register(srv)
	}
}

// ---- list_projects ----

// ListProjectsArgs takes nothing.
type ListProjectsArgs struct{}

// ProjectsResult is the result of list_projects.
type ProjectsResult struct {
	Projects []workflow.ProjectView `json:"projects"`
	// Hint says, when there are no projects, why and what to ask for.
	Hint string `json:"hint,omitempty"`
}

func (s *server) listProjects(srv *mcp.Server) {
	add(s, srv, tool{name: "list_projects", title: "List projects", readOnly: true, idempotent: true,
		desc: "Use first when starting or continuing work: the projects your group can reach, your access, checkout and named checks."},
		func(ctx context.Context, c *continuo.Caller, _ *ListProjectsArgs) (*ProjectsResult, error) {
			ps, hint, err := s.opts.Workflow.Projects(ctx, c)
			if err != nil {
				return nil, err
			}
			return &ProjectsResult{Projects: ps, Hint: hint}, nil
		})
}

// ---- work_on_project ----

// WorkOnProjectArgs are the arguments of work_on_project.
type WorkOnProjectArgs struct {
	Project        string   `json:"project,omitempty" limit:"1,128" jsonschema:"prj_… id or name; optional when resuming or with one project"`
	SessionID      string   `json:"session_id,omitempty" limit:"1,64" jsonschema:"ses_… or ~sN to resume; omit to start"`
	Instruction    string   `json:"instruction" limit:"1,16384" jsonschema:"the task, or the next instruction of a resumed session"`
	Title          string   `json:"title,omitempty" limit:"1,240" jsonschema:"default: the instruction's first line"`
	Mode           string   `json:"mode,omitempty" enum:"mode" jsonschema:"checkout (default), or worktree: the session's own git worktree and branch"`
	Context        []string `json:"context,omitempty" limit:"0,2" each:"64" enum:"material" jsonschema:"context materials to attach"`
	IdempotencyKey string   `json:"idempotency_key,omitempty" limit:"1,128" jsonschema:"retry key: same key and arguments return the original session (replayed=true)"`
}

// Worktree is a session's own git worktree.
type Worktree struct {
	Path   string `json:"path"`
	Branch string `json:"branch"`
}

// Provider is a delegated-model provider the session can use.
type Provider struct {
	ProviderID  string `json:"provider_id"`
	Kind        string `json:"kind"`
	Model       string `json:"model"`
	Description string `json:"description"`
	Available   bool   `json:"available"`
}

func providers(rs []workflow.Runner) []Provider {
	out := make([]Provider, len(rs))
	for i, r := range rs {
		out[i] = Provider{ProviderID: r.ID, Kind: r.Kind, Model: r.Model, Description: r.Description, Available: r.Available}
	}
	return out
}

// WorkOnProjectResult is the result of work_on_project.
type WorkOnProjectResult struct {
	SessionID            string              `json:"session_id"`
	SessionRef           string              `json:"session_ref"`
	ProjectID            string              `json:"project_id"`
	Lifecycle            string              `json:"lifecycle"`
	Resumed              bool                `json:"resumed"`
	Replayed             bool                `json:"replayed"`
	Worktree             *Worktree           `json:"worktree,omitempty"`
	CodingAgentProviders []Provider          `json:"coding_agent_providers"`
	HandoffBrief         json.RawMessage     `json:"handoff_brief,omitempty"`
	Context              []workflow.Material `json:"context,omitempty"`
}

func (s *server) workOnProject(srv *mcp.Server) {
	add(s, srv, tool{name: "work_on_project", title: "Start or resume a session",
		desc: "Use when beginning a task: starts a Workflow Session (omit session_id); or, after reading its handoff, resumes that active session_id with the new instruction (returns the brief)."},
		func(ctx context.Context, c *continuo.Caller, in *WorkOnProjectArgs) (*WorkOnProjectResult, error) {
			wf := s.opts.Workflow
			r, err := wf.WorkOnProject(ctx, c, workflow.WorkOn{Project: in.Project, SessionID: in.SessionID,
				Instruction: in.Instruction, Title: in.Title, Mode: continuo.Mode(in.Mode), IdempotencyKey: in.IdempotencyKey})
			if err != nil {
				return nil, err
			}
			out := &WorkOnProjectResult{SessionID: r.Session.ID, SessionRef: continuo.SessionRef(r.Session.Ref),
				ProjectID: r.Project.ID, Lifecycle: string(r.Session.Lifecycle), Resumed: r.Resumed, Replayed: r.Replayed,
				CodingAgentProviders: providers(wf.RunnersFor(r.Project))}
			if r.Session.WorktreePath != "" {
				out.Worktree = &Worktree{Path: r.Session.WorktreePath, Branch: r.Session.WorktreeBranch}
			}
			if r.Resumed {
				h, err := wf.ReadHandoff(ctx, c, r.Session.ID, "", false)
				if err != nil {
					return nil, err
				}
				out.HandoffBrief = h.BriefJSON
			}
			out.Context = wf.Materials(r, in.Context)
			return out, nil
		})
}

// ---- close_session ----

// CloseSessionArgs are the arguments of close_session.
type CloseSessionArgs struct {
	SessionID string `json:"session_id" limit:"1,64" jsonschema:"ses_… or ~sN"`
	Summary   string `json:"summary,omitempty" limit:"1,8000" jsonschema:"closing summary, kept with the session"`
}

// CloseSessionResult is the result of close_session.
type CloseSessionResult struct {
	SessionID  string `json:"session_id"`
	SessionRef string `json:"session_ref"`
	Lifecycle  string `json:"lifecycle"`
	ClosedAt   string `json:"closed_at"`
	Changed    bool   `json:"changed"`
}

func (s *server) closeSession(srv *mcp.Server) {
	add(s, srv, tool{name: "close_session", title: "Close a session", idempotent: true,
		desc: "Use when the task is finished: closes the session (it stays readable, is never reopened; closing twice changes nothing)."},
		func(ctx context.Context, c *continuo.Caller, in *CloseSessionArgs) (*CloseSessionResult, error) {
			sess, changed, err := s.opts.Workflow.CloseSession(ctx, c, in.SessionID, in.Summary)
			if err != nil {
				return nil, err
			}
			return &CloseSessionResult{SessionID: sess.ID, SessionRef: continuo.SessionRef(sess.Ref),
				Lifecycle: string(sess.Lifecycle), ClosedAt: ts(*sess.ClosedAt), Changed: changed}, nil
		})
}

// ---- list_sessions ----

// ListSessionsArgs are the arguments of list_sessions.
type ListSessionsArgs struct {
	Project   string `json:"project" limit:"1,128" jsonschema:"project id (prj_…) or name"`
	Lifecycle string `json:"lifecycle,omitempty" enum:"lifecycle" jsonschema:"only sessions in this lifecycle"`
	Offset    int    `json:"offset,omitempty" limit:"0,1000000" jsonschema:"skip this many sessions"`
	Limit     *int   `json:"limit,omitempty" limit:"1,50" jsonschema:"page size, 1..50 (default 20)"`
}

// SessionSummary is one session in list_sessions.
type SessionSummary struct {
	SessionID  string `json:"session_id"`
	SessionRef string `json:"session_ref"`
	Title      string `json:"title"`
	Lifecycle  string `json:"lifecycle"`
	CreatedAt  string `json:"created_at"`
	UpdatedAt  string `json:"updated_at"`
	OpenTodos  int64  `json:"open_todos"`
	OpenRisks  int64  `json:"open_risks"`
}

// ListSessionsResult is the result of list_sessions.
type ListSessionsResult struct {
	TotalCount int64            `json:"total_count"`
	Sessions   []SessionSummary `json:"sessions"`
	NextOffset *int             `json:"next_offset"`
}

func (s *server) listSessions(srv *mcp.Server) {
	add(s, srv, tool{name: "list_sessions", title: "List sessions", readOnly: true, idempotent: true,
		desc: "Use when asked to continue earlier work: your group's sessions in a project, newest first. Pick by title, not order; ask the user when several fit."},
		func(ctx context.Context, c *continuo.Caller, in *ListSessionsArgs) (*ListSessionsResult, error) {
			limit := 20
			if in.Limit != nil {
				limit = *in.Limit
			}
			page, err := s.opts.Workflow.ListSessions(ctx, c, in.Project, continuo.Lifecycle(in.Lifecycle), in.Offset, limit)
			if err != nil {
				return nil, err
			}
			out := &ListSessionsResult{TotalCount: page.Total, Sessions: []SessionSummary{}, NextOffset: page.NextOffset}
			for _, x := range page.Sessions {
				title, _ := redact.String(x.Title)
				out.Sessions = append(out.Sessions, SessionSummary{SessionID: x.ID, SessionRef: continuo.SessionRef(x.Ref),
					Title: title, Lifecycle: string(x.Lifecycle), CreatedAt: ts(x.CreatedAt), UpdatedAt: ts(x.UpdatedAt),
					OpenTodos: x.Counts.OpenTodos, OpenRisks: x.Counts.OpenRisks})
			}
			return out, nil
		})
}

// ---- post_session_message ----

// PostSessionMessageArgs are the arguments of post_session_message.
type PostSessionMessageArgs struct {
	SessionID   string   `json:"session_id" limit:"1,64" jsonschema:"ses_… or ~sN"`
	Kind        string   `json:"kind" enum:"kind" jsonschema:"what the message is"`
	Text        string   `json:"text" limit:"1,8000" jsonschema:"the message; never credentials"`
	DeliveryKey string   `json:"delivery_key,omitempty" limit:"1,128" jsonschema:"retry key: same key and payload return the original message"`
	Supersedes  string   `json:"supersedes,omitempty" limit:"1,64" jsonschema:"msg_… this one replaces"`
	ReplyTo     string   `json:"reply_to,omitempty" limit:"1,64" jsonschema:"msg_… this one answers (an answer resolves that question)"`
	Tags        []string `json:"tags,omitempty" limit:"0,16" each:"64" jsonschema:"up to 16 tags of up to 64 bytes"`
	Priority    string   `json:"priority,omitempty" enum:"priority" jsonschema:"default normal"`
}

// PostSessionMessageResult is the result of post_session_message.
type PostSessionMessageResult struct {
	Message  Message `json:"message"`
	Replayed bool    `json:"replayed"`
}

func (s *server) postSessionMessage(srv *mcp.Server) {
	add(s, srv, tool{name: "post_session_message", title: "Post a session message",
		desc: "Use as you work: record a decision, progress, todo, risk, question (for the user), guidance (standing instruction), note or answer. Before stopping, post progress tagged handoff: done, doing, next, how to verify."},
		func(ctx context.Context, c *continuo.Caller, in *PostSessionMessageArgs) (*PostSessionMessageResult, error) {
			m, replayed, err := s.opts.Workflow.PostMessage(ctx, c, workflow.Post{SessionID: in.SessionID, Kind: continuo.Kind(in.Kind), Text: in.Text,
				DeliveryKey: in.DeliveryKey, Supersedes: in.Supersedes, ReplyTo: in.ReplyTo, Tags: in.Tags, Priority: continuo.Priority(in.Priority)})
			if err != nil {
				return nil, err
			}
			return &PostSessionMessageResult{Message: message(m), Replayed: replayed}, nil
		})
}

// ---- resolve_session_message ----

// ResolveSessionMessageArgs are the arguments of resolve_session_message.
type ResolveSessionMessageArgs struct {
	SessionID  string `json:"session_id" limit:"1,64" jsonschema:"ses_… or ~sN"`
	MessageID  string `json:"message_id" limit:"1,64" jsonschema:"the todo, question or risk to resolve"`
	Resolution string `json:"resolution,omitempty" limit:"1,8000" jsonschema:"how it was resolved"`
}

// ResolveSessionMessageResult is the result of resolve_session_message.
type ResolveSessionMessageResult struct {
	Message Message `json:"message"`
	Changed bool    `json:"changed"`
}

func (s *server) resolveSessionMessage(srv *mcp.Server) {
	add(s, srv, tool{name: "resolve_session_message", title: "Resolve a todo, question or risk", idempotent: true,
		desc: "Use when a todo is done, a risk is handled or a question is settled: marks it resolved. Resolving twice changes nothing."},
		func(ctx context.Context, c *continuo.Caller, in *ResolveSessionMessageArgs) (*ResolveSessionMessageResult, error) {
			m, changed, err := s.opts.Workflow.ResolveMessage(ctx, c, in.SessionID, in.MessageID, in.Resolution)
			if err != nil {
				return nil, err
			}
			return &ResolveSessionMessageResult{Message: message(m), Changed: changed}, nil
		})
}

// ---- list_session_messages ----

// ListSessionMessagesArgs are the arguments of list_session_messages.
type ListSessionMessagesArgs struct {
	SessionID string   `json:"session_id" limit:"1,64" jsonschema:"ses_… or ~sN"`
	Kinds     []string `json:"kinds,omitempty" limit:"0,8" each:"16" enum:"listkind" jsonschema:"only these kinds (instruction: the instructions given to the session)"`
	Status    string   `json:"status,omitempty" enum:"status" jsonschema:"only messages in this status"`
	Query     string   `json:"query,omitempty" limit:"1,256" jsonschema:"only messages holding every word of this, whole words, any case"`
	Order     string   `json:"order,omitempty" enum:"order" jsonschema:"newest (default) or oldest first"`
	Cursor    string   `json:"cursor,omitempty" limit:"1,64" jsonschema:"next_cursor of the previous page (same order)"`
	Limit     *int     `json:"limit,omitempty" limit:"1,100" jsonschema:"page size, 1..100 (default 50)"`
}

// ListSessionMessagesResult is the result of list_session_messages.
type ListSessionMessagesResult struct {
	Messages   []Message `json:"messages"`
	NextCursor *string   `json:"next_cursor"`
	TotalCount int64     `json:"total_count"`
}

func (s *server) listSessionMessages(srv *mcp.Server) {
	add(s, srv, tool{name: "list_session_messages", title: "List session messages", readOnly: true, idempotent: true,
		desc: "Use to search a session's history or read older progress: its messages and instructions (in full), newest or oldest first, by kinds, status, words."},
		func(ctx context.Context, c *continuo.Caller, in *ListSessionMessagesArgs) (*ListSessionMessagesResult, error) {
			limit := 50
			if in.Limit != nil {
				limit = *in.Limit
			}
			q := workflow.MessageQuery{SessionID: in.SessionID, Query: in.Query, Oldest: in.Order == string(continuo.OrderOldest),
				Cursor: in.Cursor, Limit: limit}
			for _, k := range in.Kinds {
				q.Kinds = append(q.Kinds, continuo.Kind(k))
			}
			if in.Status != "" {
				q.Statuses = []continuo.Status{continuo.Status(in.Status)}
			}
			page, err := s.opts.Workflow.ListMessages(ctx, c, q)
			if err != nil {
				return nil, err
			}
			out := &ListSessionMessagesResult{Messages: []Message{}, TotalCount: page.Total}
			for i := range page.Messages {
				out.Messages = append(out.Messages, message(&page.Messages[i]))
			}
			if page.NextCursor != "" {
				out.NextCursor = &page.NextCursor
			}
			return out, nil
		})
}

// ---- read_session_handoff ----

// ReadSessionHandoffArgs are the arguments of read_session_handoff.
type ReadSessionHandoffArgs struct {
	SessionID  string `json:"session_id" limit:"1,64" jsonschema:"ses_… or ~sN"`
	Project    string `json:"project,omitempty" limit:"1,128" jsonschema:"if given, must be the session's project"`
	Diagnostic bool   `json:"diagnostic,omitempty" jsonschema:"also return full tallies and more of the open work"`
}

// ReadSessionHandoffResult is the result of read_session_handoff.
type ReadSessionHandoffResult struct {
	SessionID    string                `json:"session_id"`
	ProjectID    string                `json:"project_id"`
	HandoffBrief json.RawMessage       `json:"handoff_brief"`
	GoalContext  *workflow.GoalContext `json:"goal_context,omitempty"`
	Diagnostic   *workflow.Diagnostic  `json:"diagnostic,omitempty"`
}

func (s *server) readSessionHandoff(srv *mcp.Server) {
	add(s, srv, tool{name: "read_session_handoff", title: "Read a session's handoff brief", readOnly: true, idempotent: true,
		desc: "Use before continuing a session: its deterministic brief (≤ 8 KiB) — task, constraints, decisions in force, current state, open work, workspace, next actions. If it cut anything, next_actions[0] is the read_session_working_set call to make before acting. Check basis.complete."},
		func(ctx context.Context, c *continuo.Caller, in *ReadSessionHandoffArgs) (*ReadSessionHandoffResult, error) {
			h, err := s.opts.Workflow.ReadHandoff(ctx, c, in.SessionID, in.Project, in.Diagnostic)
			if err != nil {
				return nil, err
			}
			return &ReadSessionHandoffResult{SessionID: h.SessionID, ProjectID: h.ProjectID, HandoffBrief: h.BriefJSON, GoalContext: h.GoalContext, Diagnostic: h.Diagnostic}, nil
		})
}

// ---- read_session_working_set ----

// ReadSessionWorkingSetArgs are the arguments of read_session_working_set.
type ReadSessionWorkingSetArgs struct {
	SessionID string `json:"session_id" limit:"1,64" jsonschema:"ses_… or ~sN"`
	Cursor    string `json:"cursor,omitempty" limit:"1,128" jsonschema:"next_cursor of the previous page"`
}

// ReadSessionWorkingSetResult is the result of read_session_working_set:
// one page.
type ReadSessionWorkingSetResult struct {
	WorkingSet *workflow.WorkingSet `json:"working_set"`
}

func (s *server) readSessionWorkingSet(srv *mcp.Server) {
	add(s, srv, tool{name: "read_session_working_set", title: "Read a session's working set", readOnly: true, idempotent: true,
		desc: "Use right after read_session_handoff whenever the brief cut anything (its next_actions[0] is then this exact call), before acting: " +
			"everything still in force, in full — constraints verbatim, decisions in force, answered and open questions, todos, risks, " +
			"active goals, current state, workspace, validation. Pages of ≤ 32 KiB: follow next_cursor until null."},
		func(ctx context.Context, c *continuo.Caller, in *ReadSessionWorkingSetArgs) (*ReadSessionWorkingSetResult, error) {
			ws, err := s.opts.Workflow.ReadWorkingSet(ctx, c, in.SessionID, in.Cursor)
			if err != nil {
				return nil, err
			}
			return &ReadSessionWorkingSetResult{WorkingSet: ws}, nil
		})
}
