package web

import (
	"net/http"
	"net/url"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/continuo-dev/continuo/internal/workflow"
)

// The sessions area's actions: a person answers an open question, adds a
// standing instruction (guidance) or retires one, resolves a todo or a
// risk. Each is the tools' own call (post_session_message,
// resolve_session_message) through workflow.Service with the signed-in
// caller: the same scope (sessions:write), the same group isolation (a
// session of another group is not_found), the same rules; what it writes
// records the person and that they acted on the dashboard
// (Caller.Actor), and the next brief carries it.

func init() {
	dashArea(func(d *dash, handle dashRoute) {
		handle("POST /s/{session}/m/{message}/answer", d.action(formSessionsAnswer, d.sessionsAnswer))
		handle("POST /s/{session}/guidance", d.action(formSessionsGuidance, d.sessionsGuidance))
		handle("POST /s/{session}/m/{message}/retire", d.action(formSessionsRetire, d.sessionsRetire))
		handle("POST /s/{session}/m/{message}/resolve", d.action(formSessionsResolve, d.sessionsResolve))
	})
}

// The sessions area's form names.
const (
	formSessionsAnswer   = "sessions-answer"
	formSessionsGuidance = "sessions-guidance"
	formSessionsRetire   = "sessions-retire"
	formSessionsResolve  = "sessions-resolve"
)

// sessionsBack is the session's page, at the note an action wrote or
// changed.
func sessionsBack(r *http.Request, m *continuo.Message) string {
	back := "/s/" + url.PathEscape(r.PathValue("session"))
	if m != nil {
		back += "#" + m.ID
	}
	return back
}

// sessionsPost posts a note as the caller, as post_session_message does,
// with that tool's checks of its arguments.
func (d *dash) sessionsPost(r *http.Request, c *continuo.Caller, p workflow.Post) (string, error) {
	p.SessionID = r.PathValue("session")
	if err := mcpserver.CheckArgs(&mcpserver.PostSessionMessageArgs{SessionID: p.SessionID, Kind: string(p.Kind), Text: p.Text,
		Supersedes: p.Supersedes, ReplyTo: p.ReplyTo, Priority: string(p.Priority)}); err != nil {
		return "", err
	}
	m, _, err := d.svc.Workflow.PostMessage(r.Context(), c, p)
	return sessionsBack(r, m), err
}

// sessionsAnswer is POST /s/{session}/m/{message}/answer: an answer that
// replies to an open question, which resolves it.
func (d *dash) sessionsAnswer(r *http.Request, c *continuo.Caller) (string, error) {
	return d.sessionsPost(r, c, workflow.Post{Kind: continuo.KindAnswer, Text: r.PostForm.Get("text"), ReplyTo: r.PathValue("message")})
}

// sessionsGuidance is POST /s/{session}/guidance: a standing instruction,
// which every brief carries verbatim while it is open.
func (d *dash) sessionsGuidance(r *http.Request, c *continuo.Caller) (string, error) {
	prio := continuo.Priority(r.PostForm.Get("priority"))
	return d.sessionsPost(r, c, workflow.Post{Kind: continuo.KindGuidance, Text: r.PostForm.Get("text"), Priority: prio})
}

// sessionsRetire is POST /s/{session}/m/{message}/retire: a note that
// supersedes a standing instruction and says why, which takes it out of
// the brief's constraints.
func (d *dash) sessionsRetire(r *http.Request, c *continuo.Caller) (string, error) {
	ctx, ref, id := r.Context(), r.PathValue("session"), r.PathValue("message")
	m, err := d.svc.Workflow.GetMessage(ctx, c, ref, id)
	if err != nil {
		return "", err
	}
	if m.Kind != continuo.KindGuidance {
		return "", continuo.Errorf(continuo.CodeInvalidState, "only a standing instruction (guidance) is retired here; message %s is a %s", id, m.Kind).
			With("kind", string(m.Kind))
	}
	text := "Retired the standing instruction " + id
	if why := r.PostForm.Get("reason"); why != "" {
		text += ": " + why
	}
	return d.sessionsPost(r, c, workflow.Post{Kind: continuo.KindNote, Text: text, Supersedes: id})
}

// sessionsResolve is POST /s/{session}/m/{message}/resolve: an open todo
// or risk resolved with what settled it.
func (d *dash) sessionsResolve(r *http.Request, c *continuo.Caller) (string, error) {
	in := &mcpserver.ResolveSessionMessageArgs{SessionID: r.PathValue("session"), MessageID: r.PathValue("message"),
		Resolution: r.PostForm.Get("resolution")}
	if err := mcpserver.CheckArgs(in); err != nil {
		return "", err
	}
	m, _, err := d.svc.Workflow.ResolveMessage(r.Context(), c, in.SessionID, in.MessageID, in.Resolution)
	return sessionsBack(r, m), err
}
