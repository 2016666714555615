package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/workflow"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Prompts (CONTRACT.md §4): clients that show MCP prompts as commands get
// the recovery sequence and the save-the-current-state request as one
// click. Both are built from the caller's own work; neither chooses among
// several sessions.

const (
	maxCandidateProjects = 5
	maxCandidateSessions = 10
)

func (s *server) registerPrompts(srv *mcp.Server) {
	s.addPrompt(srv, &mcp.Prompt{Name: "continue_work", Title: "Continue earlier work",
		Description: "The recovery sequence: the candidate sessions of your projects (or the one named), and how to read its handoff and resume it.",
		Arguments: []*mcp.PromptArgument{
			{Name: "project", Description: "project id or name (default: every project you can reach)"},
			{Name: "session", Description: "session id or ~sN, when you know which one"},
		}}, s.continueWork)
	s.addPrompt(srv, &mcp.Prompt{Name: "save_handoff", Title: "Save the current state",
		Description: "Asks the model to post the session's current state (a progress note tagged handoff) before the conversation ends or its context is compacted.",
		Arguments:   []*mcp.PromptArgument{{Name: "session", Description: "session id or ~sN (default: the one you are working on)"}},
	}, s.saveHandoff)
}

// addPrompt registers a prompt on the endpoints of its toolsets.
func (s *server) addPrompt(srv *mcp.Server, p *mcp.Prompt, h mcp.PromptHandler) {
	if serves(promptToolsets, "prompt", p.Name, s.sets) {
		srv.AddPrompt(p, h)
	}
}

func promptText(desc, text string) *mcp.GetPromptResult {
	red, _ := redact.String(text)
	return &mcp.GetPromptResult{Description: desc,
		Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: red}}}}
}

// promptError turns a contract error into a JSON-RPC error a prompt client
// shows (prompts have no structured result).
func promptError(err error) error {
	e := continuo.AsError(err)
	msg, _ := redact.String(e.Message)
	return fmt.Errorf("%s: %s", e.Code, msg)
}

func (s *server) continueWork(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	c, err := s.callerOf(req.Extra)
	if err != nil {
		return nil, promptError(err)
	}
	wf := s.opts.Workflow
	args := req.Params.Arguments
	var b strings.Builder
	b.WriteString("Continue earlier work kept in Continuo.\n\n")
	if ref := args["session"]; ref != "" {
		h, err := wf.ReadHandoff(ctx, c, ref, args["project"], false)
		if err != nil {
			return nil, promptError(err)
		}
		fmt.Fprintf(&b, "The session to continue is %s. Its handoff brief:\n\n%s\n\n", h.SessionID, h.BriefJSON)
		if a := h.Brief.NextActions; len(a) > 0 && a[0] == workflow.WorkingSetCall(h.Brief.Session.SessionRef) {
			fmt.Fprintf(&b, "The brief cut something: first call %s, following next_cursor until null, and read it before acting. ", a[0])
		}
		fmt.Fprintf(&b, "Check basis.complete; follow the constraints word for word; then call "+
			"work_on_project(session_id=%q, instruction=<what the user asks now>) and keep recording decisions and progress.", h.SessionID)
		return promptText("Continue "+h.SessionID, b.String()), nil
	}
	projects, _, err := wf.Projects(ctx, c)
	if err != nil {
		return nil, promptError(err)
	}
	if p := args["project"]; p != "" {
		var kept = projects[:0]
		for _, x := range projects {
			if x.ProjectID == p || x.Name == p {
				kept = append(kept, x)
			}
		}
		if len(kept) == 0 {
			return nil, promptError(continuo.NotFound("project", p))
		}
		projects = kept
	}
	found := 0
	for i, p := range projects {
		if i == maxCandidateProjects {
			fmt.Fprintf(&b, "(%d more projects: call list_projects)\n", len(projects)-i)
			break
		}
		page, err := wf.ListSessions(ctx, c, p.ProjectID, continuo.LifecycleActive, 0, maxCandidateSessions)
		if err != nil {
			return nil, promptError(err)
		}
		fmt.Fprintf(&b, "Project %s (%s): %d active session(s)\n", p.Name, p.ProjectID, page.Total)
		for _, x := range page.Sessions {
			found++
			fmt.Fprintf(&b, "- %s %s %q, updated %s, %d open todo(s), %d open risk(s)\n", continuo.SessionRef(x.Ref), x.ID, x.Title,
				ts(x.UpdatedAt), x.Counts.OpenTodos, x.Counts.OpenRisks)
		}
		if int64(len(page.Sessions)) < page.Total {
			fmt.Fprintf(&b, "  (more: list_sessions(project=%q, lifecycle=\"active\"))\n", p.Name)
		}
	}
	switch {
	case len(projects) == 0:
		b.WriteString("Your group can reach no project yet: ask the operator for a grant (continuo project grant).\n")
	case found == 0:
		b.WriteString("\nThere is no active session: start one with work_on_project(project, instruction).\n")
	case found == 1:
		b.WriteString("\nIf that is the work the user means, read it with read_session_handoff(session_id) (and read_session_working_set(session_id) when the brief cut anything), then resume it with work_on_project(session_id, instruction).\n")
	default:
		b.WriteString("\nDo not pick one yourself: ask the user which session to continue (by its title), then read it with " +
			"read_session_handoff(session_id) (and read_session_working_set(session_id) when the brief cut anything) and resume it with work_on_project(session_id, instruction).\n")
	}
	return promptText("Candidate sessions to continue", b.String()), nil
}

func (s *server) saveHandoff(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	if _, err := s.callerOf(req.Extra); err != nil {
		return nil, promptError(err)
	}
	target := "the session you are working on"
	if ref := req.Params.Arguments["session"]; ref != "" {
		target = fmt.Sprintf("session %s", ref)
	}
	text := fmt.Sprintf("Save the current state of %s now, so that a new conversation can continue exactly here: call "+
		"post_session_message(session_id=<its id>, kind=\"progress\", tags=[\"handoff\"], delivery_key=<a new key>, text=...) with, "+
		"in a few lines: what is done (and how it was verified), what is in progress, what comes next, and how to verify it. "+
		"Record any decision not yet recorded (kind=\"decision\") and any standing instruction of the user (kind=\"guidance\") first. "+
		"Never include credentials.", target)
	return promptText("Save the current state", text), nil
}
