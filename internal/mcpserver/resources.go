package mcpserver

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The handoff brief and the working set of every session the caller can
// read are resources (CONTRACT.md §4): continuo://sessions/{session_id}/handoff
// and continuo://sessions/{session_id}/working-set (its first page; the
// tool's next_cursor reads on).

const (
	handoffScheme    = "continuo://sessions/"
	handoffSuffix    = "/handoff"
	workingSetSuffix = "/working-set"
	maxListedBriefs  = 100
)

func handoffURI(sessionID string) string { return handoffScheme + sessionID + handoffSuffix }

func (s *server) registerResources(srv *mcp.Server) {
	s.addTemplate(srv, &mcp.ResourceTemplate{Name: "handoff", Title: "Session handoff brief",
		URITemplate: handoffScheme + "{session_id}" + handoffSuffix, MIMEType: "application/json",
		Description: "The deterministic handoff brief of a session (session_id: ses_… or ~sN)."},
		s.readSessionResource(handoffSuffix, func(ctx context.Context, c *continuo.Caller, ref string) ([]byte, error) {
			h, err := s.opts.Workflow.ReadHandoff(ctx, c, ref, "", false)
			if err != nil {
				return nil, err
			}
			return h.BriefJSON, nil
		}))
	s.addTemplate(srv, &mcp.ResourceTemplate{Name: "working-set", Title: "Session working set",
		URITemplate: handoffScheme + "{session_id}" + workingSetSuffix, MIMEType: "application/json",
		Description: "Everything in force in a session, in full (session_id: ses_… or ~sN): the first page; read_session_working_set's next_cursor reads on."},
		s.readSessionResource(workingSetSuffix, func(ctx context.Context, c *continuo.Caller, ref string) ([]byte, error) {
			ws, err := s.opts.Workflow.ReadWorkingSet(ctx, c, ref, "")
			if err != nil {
				return nil, err
			}
			return json.Marshal(ws)
		}))
}

// addTemplate registers a resource template on the endpoints of its
// toolsets.
func (s *server) addTemplate(srv *mcp.Server, t *mcp.ResourceTemplate, h mcp.ResourceHandler) {
	if serves(resourceToolsets, "resource template", t.Name, s.sets) {
		srv.AddResourceTemplate(t, h)
	}
}

// readSessionResource serves continuo://sessions/{session_id}{suffix} with
// read. A session the caller may not see is not found, like a malformed
// URI.
func (s *server) readSessionResource(suffix string, read func(ctx context.Context, c *continuo.Caller, ref string) ([]byte, error)) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		c, err := s.callerOf(req.Extra)
		if err != nil {
			return nil, promptError(err)
		}
		uri := req.Params.URI
		ref, ok := strings.CutPrefix(uri, handoffScheme)
		if ok {
			ref, ok = strings.CutSuffix(ref, suffix)
		}
		if !ok || ref == "" || strings.Contains(ref, "/") {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		text, err := read(ctx, c, ref)
		if err != nil {
			if continuo.ErrorCode(err) == continuo.CodeNotFound || continuo.ErrorCode(err) == continuo.CodeInvalidInput {
				return nil, mcp.ResourceNotFoundError(uri)
			}
			return nil, promptError(err)
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(text)}}}, nil
	}
}

// resourceList answers resources/list with the caller's own sessions (the
// SDK lists only resources registered for everyone): the active ones of
// every project the caller reaches, newest activity first, at most
// maxListedBriefs; the template reaches every other.
func (s *server) resourceList(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "resources/list" {
			return next(ctx, method, req)
		}
		c, err := s.callerOf(req.GetExtra())
		if err != nil {
			return nil, promptError(err)
		}
		wf := s.opts.Workflow
		projects, _, err := wf.Projects(ctx, c)
		if err != nil {
			return nil, promptError(err)
		}
		// The list is the caller's own and changes as it works: private,
		// stale at once.
		out := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}}
		out.TTLMs, out.CacheScope = 0, cachePrivate
		for _, p := range projects {
			page, err := wf.ListSessions(ctx, c, p.ProjectID, continuo.LifecycleActive, 0, 50)
			if err != nil {
				return nil, promptError(err)
			}
			for _, x := range page.Sessions {
				if len(out.Resources) == maxListedBriefs {
					return out, nil
				}
				out.Resources = append(out.Resources, &mcp.Resource{URI: handoffURI(x.ID), Name: continuo.SessionRef(x.Ref),
					Title: redactTitle(x.Title), MIMEType: "application/json", Description: "handoff brief of " + continuo.SessionRef(x.Ref) + " in " + p.Name})
			}
		}
		return out, nil
	}
}

func redactTitle(t string) string {
	out, _ := redact.String(t)
	return out
}
