package web

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/workflow"
)

// The sessions area of the dashboard (read-only): a project's sessions
// (GET /p/{project}), a session — its handoff brief for people, its notes
// and its goals — (GET /s/{session}), one note with what it links to
// (GET /s/{session}/m/{message}) and a goal with its plan and the plan's
// history (GET /g/{goal}, dash_sessions_goal.go). Every page reads through
// workflow.Service with the signed-in caller, so what another group owns is
// not_found here as it is for the tools; every text a person reads is
// redacted as a model's is.

func init() {
	dashArea(func(d *dash, handle dashRoute) {
		handle("GET /p/{project}", d.page("sessions-project", d.sessionsProject))
		handle("GET /s/{session}", d.page("sessions-session", d.sessionsSession))
		handle("GET /s/{session}/m/{message}", d.page("sessions-message", d.sessionsMessage))
		handle("GET /g/{goal}", d.page("goals-goal", d.goalsGoal))
	})
	dashFuncs["sessionsTime"] = sessionsTime
	dashFuncs["sessionsShort"] = func(s string) string { return sessionsCut(s, 12) }
	dashFuncs["sessionsRef"] = continuo.SessionRef
	dashFuncs["sessionsBool"] = func(p *bool) bool { return p != nil && *p }
	dashFuncs["sessionsItem"] = func(sessionID string, it workflow.Item) sessionsItemArgs {
		return sessionsItemArgs{Session: sessionID, Item: it}
	}
	dashFuncs["sessionsAct"] = func(v *view, sessionID string, it any, act string) sessionsItemArgs {
		a := sessionsItemArgs{Session: sessionID, V: v, Act: act}
		switch x := it.(type) {
		case workflow.Item:
			a.Item = x
		case workflow.Constraint:
			a.Item = workflow.Item{MessageID: x.MessageID, Excerpt: x.Text}
		}
		return a
	}
	dashFuncs["sessionsCutNote"] = func(truncated bool, pointer, link string) sessionsCutArgs {
		return sessionsCutArgs{Truncated: truncated, Pointer: pointer, Link: link}
	}
}

// sessionsItemArgs are the arguments of the sessions-item partial, and of
// sessions-act: the page's view (its CSRF fields) and the action to offer
// on the item ("answer", "resolve", "retire"; "" for none).
type sessionsItemArgs struct {
	Session string
	Item    workflow.Item
	V       *view
	Act     string
}

// sessionsCutArgs are the arguments of the sessions-cut partial: whether
// a section was cut, the brief's next action that reads the rest, and the
// notes of this page that show it.
type sessionsCutArgs struct {
	Truncated     bool
	Pointer, Link string
}

// Page sizes: the sessions of a project, the notes of a session.
const (
	sessionsPageSize      = 20
	sessionsNotesPageSize = 50
	sessionsMaxOffset     = 1_000_000 // list_sessions' bound
)

// sessionsTime reads a time of a result (continuo.TimeFormat), for the
// dashboard's "when"; zero (shown as nothing) when it is not one.
func sessionsTime(s string) time.Time {
	t, _ := time.Parse(continuo.TimeFormat, s)
	return t
}

func sessionsCut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func sessionsRedact(s string) string { r, _ := redact.String(s); return r }

// ---- GET /p/{project} ----

type sessionsProjectView struct {
	Project   *continuo.Project
	Access    continuo.Access
	Lifecycle string
	Query     string
	Sessions  []sessionsRow
	Total     int64
	From, To  int    // 1-based positions of this page's rows
	Prev      string // links to the neighbouring pages, "" at an end
	Next      string
	Goals     []sessionsGoalRow
	GoalsAll  bool // every lifecycle, not only the active goals
	GoalsMore bool
	AllGoals  string // the link that shows every goal (or only the active)
}

type sessionsRow struct {
	ID, Ref, Title                            string
	Lifecycle                                 continuo.Lifecycle
	Created, Updated                          time.Time
	Todos, Risks, Questions, Notes, Decisions int64
	Search                                    string // the session page with the query, when searching
}

type sessionsGoalRow struct {
	ID, Title, Session string
	Lifecycle          continuo.GoalLifecycle
	Revision           int64
	Current            string // the current step's title
	Done, Steps        int
	Updated            time.Time
}

func (d *dash) sessionsProject(r *http.Request, c *continuo.Caller) (string, any, error) {
	q := r.URL.Query()
	offset := 0
	if o := q.Get("offset"); o != "" {
		n, err := strconv.Atoi(o)
		if err != nil || n < 0 || n > sessionsMaxOffset {
			return "", nil, continuo.Invalid("offset", "must be a number 0..%d", sessionsMaxOffset)
		}
		offset = n
	}
	v := &sessionsProjectView{Lifecycle: q.Get("lifecycle"), Query: strings.TrimSpace(q.Get("q")), GoalsAll: q.Get("goals") == "all"}
	page, err := d.svc.Workflow.FindSessions(r.Context(), c, workflow.SessionQuery{Project: r.PathValue("project"),
		Lifecycle: continuo.Lifecycle(v.Lifecycle), Query: v.Query, Offset: offset, Limit: sessionsPageSize})
	if err != nil {
		return "", nil, err
	}
	v.Project, v.Access, v.Total = page.Project, page.Access, page.Total
	for _, s := range page.Sessions {
		row := sessionsRow{ID: s.ID, Ref: continuo.SessionRef(s.Ref), Title: sessionsRedact(s.Title), Lifecycle: s.Lifecycle,
			Created: s.CreatedAt, Updated: s.UpdatedAt, Todos: s.Counts.OpenTodos, Risks: s.Counts.OpenRisks,
			Questions: s.Counts.OpenQuestions, Notes: s.Counts.Messages, Decisions: s.Counts.Decisions - s.Counts.SupersededDecisions}
		if v.Query != "" {
			row.Search = "/s/" + s.ID + "?" + url.Values{"q": {v.Query}}.Encode() + "#timeline"
		}
		v.Sessions = append(v.Sessions, row)
	}
	if len(v.Sessions) > 0 {
		v.From, v.To = offset+1, offset+len(v.Sessions)
	}
	base := "/p/" + url.PathEscape(page.Project.Name)
	link := func(offset int) string {
		u := url.Values{}
		for k, val := range map[string]string{"lifecycle": v.Lifecycle, "q": v.Query} {
			if val != "" {
				u.Set(k, val)
			}
		}
		if v.GoalsAll {
			u.Set("goals", "all")
		}
		if offset > 0 {
			u.Set("offset", strconv.Itoa(offset))
		}
		if len(u) == 0 {
			return base
		}
		return base + "?" + u.Encode()
	}
	if page.NextOffset != nil {
		v.Next = link(*page.NextOffset)
	}
	if offset > 0 {
		v.Prev = link(max(0, offset-sessionsPageSize))
	}
	gq := workflow.GoalQuery{Project: page.Project.ID, Lifecycle: continuo.GoalActive}
	if v.GoalsAll {
		gq.Lifecycle = ""
	}
	goals, more, err := d.svc.Workflow.ListGoals(r.Context(), c, gq)
	if err != nil {
		return "", nil, err
	}
	v.Goals, v.GoalsMore = sessionsGoalRows(goals), more
	v.AllGoals = base + "?goals=all#goals"
	if v.GoalsAll {
		v.AllGoals = base + "#goals"
	}
	return page.Project.Name, v, nil
}

func sessionsGoalRows(goals []continuo.Goal) []sessionsGoalRow {
	out := make([]sessionsGoalRow, 0, len(goals))
	for _, g := range goals {
		g, _ = workflow.RedactGoal(g)
		row := sessionsGoalRow{ID: g.ID, Title: g.Title, Session: g.SessionID, Lifecycle: g.Lifecycle, Revision: g.Revision,
			Steps: len(g.Steps), Updated: g.UpdatedAt}
		for _, st := range g.Steps {
			if st.Status == continuo.StepCompleted {
				row.Done++
			}
			if st.ID == g.CurrentStepID {
				row.Current = st.Title
			}
		}
		out = append(out, row)
	}
	return out
}

// ---- GET /s/{session} ----

type sessionsSessionView struct {
	Session   *continuo.Session // for its IDs and dates; texts come from the brief
	Project   *continuo.Project
	Brief     *workflow.Brief
	Cut       map[string]string // section → the brief's own next action that fetches what it cut
	Goals     []sessionsGoalRow
	GoalsMore bool
	Timeline  *sessionsTimeline
}

func (d *dash) sessionsSession(r *http.Request, c *continuo.Caller) (string, any, error) {
	ctx := r.Context()
	ref := r.PathValue("session")
	sess, p, err := d.svc.Workflow.GetSession(ctx, c, ref)
	if err != nil {
		return "", nil, err
	}
	tl, err := d.sessionsTimeline(r, c, sess)
	if err != nil {
		return "", nil, err
	}
	h, err := d.svc.Workflow.ReadHandoff(ctx, c, sess.ID, "", false)
	if err != nil {
		return "", nil, err
	}
	goals, more, err := d.svc.Workflow.ListGoals(ctx, c, workflow.GoalQuery{SessionID: sess.ID})
	if err != nil {
		return "", nil, err
	}
	v := &sessionsSessionView{Session: sess, Project: p, Brief: h.Brief, Cut: sessionsCutPointers(h.Brief),
		Goals: sessionsGoalRows(goals), GoalsMore: more, Timeline: tl}
	return h.Brief.Session.SessionRef + " · " + h.Brief.Session.Title.Excerpt, v, nil
}

// sessionsCutPointers gives, for each section of the brief that was cut,
// the brief's own next action that reads the rest: the working-set call,
// which the brief puts first whenever it cut anything in force (CONTRACT.md
// §4).
func sessionsCutPointers(b *workflow.Brief) map[string]string {
	out := map[string]string{}
	call := workflow.WorkingSetCall(b.Session.SessionRef)
	if len(b.NextActions) == 0 || b.NextActions[0] != call {
		return out
	}
	for section, truncated := range map[string]bool{
		"constraints": b.Constraints.Truncated,
		"decisions":   b.Task.Decisions.Truncated,
		"root":        b.Task.RootInstruction.Truncated,
		"latest":      b.Task.LatestInstruction != nil && b.Task.LatestInstruction.Truncated,
		"questions":   b.Open.Questions.Truncated,
		"todos":       b.Open.Todos.Truncated,
		"risks":       b.Open.Risks.Truncated,
	} {
		if truncated {
			out[section] = call
		}
	}
	return out
}

// ---- the notes timeline ----

type sessionsTimeline struct {
	Kinds    []sessionsKind
	Statuses []string
	Status   string
	Query    string
	Oldest   bool
	Items    []sessionsNote
	Total    int64
	Filtered bool   // a filter or query is set
	First    string // the first page, when this is a later one
	Next     string // the next page, "" at the end
}

type sessionsKind struct {
	Kind    continuo.Kind
	Checked bool
}

// note is one entry of a session's listing as a person reads it.
type sessionsNote struct {
	continuo.Message // redacted
	Anchor           string
	Redacted         bool
	Handoff          bool
	Href             func(id string) string // a link to another note: its anchor on this page, else its own page
	Answers          []string               // answers on this page that reply to this note
}

func (d *dash) sessionsTimeline(r *http.Request, c *continuo.Caller, sess *continuo.Session) (*sessionsTimeline, error) {
	q := r.URL.Query()
	tl := &sessionsTimeline{Status: q.Get("status"), Query: strings.TrimSpace(q.Get("q")), Oldest: q.Get("order") == string(continuo.OrderOldest)}
	mq := workflow.MessageQuery{SessionID: sess.ID, Query: tl.Query, Oldest: tl.Oldest, Cursor: q.Get("cursor"), Limit: sessionsNotesPageSize}
	kinds := q["kind"]
	for _, k := range kinds {
		if !continuo.Kind(k).Listable() {
			return nil, continuo.Invalid("kind", "unknown kind %q", k)
		}
	}
	for _, k := range continuo.ListKinds() {
		on := slices.Contains(kinds, string(k))
		tl.Kinds = append(tl.Kinds, sessionsKind{Kind: k, Checked: on})
		if on {
			mq.Kinds = append(mq.Kinds, k)
		}
	}
	for _, s := range continuo.Statuses() {
		tl.Statuses = append(tl.Statuses, string(s))
	}
	if tl.Status != "" {
		if !continuo.Status(tl.Status).Valid() {
			return nil, continuo.Invalid("status", "unknown status %q", tl.Status)
		}
		mq.Statuses = []continuo.Status{continuo.Status(tl.Status)}
	}
	page, err := d.svc.Workflow.ListMessages(r.Context(), c, mq)
	if err != nil {
		return nil, err
	}
	tl.Total, tl.Filtered = page.Total, len(mq.Kinds) > 0 || tl.Status != "" || tl.Query != ""
	link := func(cursor string) string {
		u := url.Values{}
		for _, k := range mq.Kinds {
			u.Add("kind", string(k))
		}
		if tl.Status != "" {
			u.Set("status", tl.Status)
		}
		if tl.Query != "" {
			u.Set("q", tl.Query)
		}
		if tl.Oldest {
			u.Set("order", string(continuo.OrderOldest))
		}
		if cursor != "" {
			u.Set("cursor", cursor)
		}
		s := "/s/" + sess.ID
		if len(u) > 0 {
			s += "?" + u.Encode()
		}
		return s + "#timeline"
	}
	if page.NextCursor != "" {
		tl.Next = link(page.NextCursor)
	}
	if mq.Cursor != "" {
		tl.First = link("")
	}
	tl.Items = sessionsNotes(sess.ID, page.Messages)
	return tl, nil
}

// notes makes the entries of one page of a listing: redacted, each with
// an anchor, the links between them on this page (an answer and its
// question) and links to the pages of notes elsewhere.
func sessionsNotes(sessionID string, msgs []continuo.Message) []sessionsNote {
	here := map[string]int{}
	for i, m := range msgs {
		if m.ID != "" {
			here[m.ID] = i
		}
	}
	href := func(id string) string {
		if _, ok := here[id]; ok {
			return "#" + id
		}
		return "/s/" + sessionID + "/m/" + id
	}
	out := make([]sessionsNote, len(msgs))
	for i, m := range msgs {
		out[i] = sessionsRedactedNote(m, href)
	}
	for _, n := range out {
		if n.Kind == continuo.KindAnswer && n.ReplyTo != "" {
			if j, ok := here[n.ReplyTo]; ok && n.ID != out[j].ResolvedBy {
				out[j].Answers = append(out[j].Answers, n.ID)
			}
		}
	}
	return out
}

func sessionsRedactedNote(m continuo.Message, href func(string) string) sessionsNote {
	n := sessionsNote{Message: m, Href: href, Handoff: m.Handoff()}
	var r [3]bool
	n.Text, r[0] = redact.String(m.Text)
	n.Resolution, r[1] = redact.String(m.Resolution)
	n.Tags, r[2] = redact.Strings(m.Tags)
	n.Redacted = r[0] || r[1] || r[2]
	n.Anchor = m.ID
	if m.Kind == continuo.KindInstruction {
		n.Anchor = "instruction-" + strconv.FormatInt(m.Seq, 10)
	}
	return n
}

// ---- GET /s/{session}/m/{message} ----

type sessionsMessageView struct {
	Session *continuo.Session
	Title   string
	Note    sessionsNote
	Related []sessionsRelated // what it answers, what answered it, what it replaced and what replaced it
}

type sessionsRelated struct {
	Label string
	Note  sessionsNote
}

func (d *dash) sessionsMessage(r *http.Request, c *continuo.Caller) (string, any, error) {
	ctx := r.Context()
	sess, _, err := d.svc.Workflow.GetSession(ctx, c, r.PathValue("session"))
	if err != nil {
		return "", nil, err
	}
	m, err := d.svc.Workflow.GetMessage(ctx, c, sess.ID, r.PathValue("message"))
	if err != nil {
		return "", nil, err
	}
	href := func(id string) string { return "/s/" + sess.ID + "/m/" + id }
	v := &sessionsMessageView{Session: sess, Title: sessionsRedact(sess.Title), Note: sessionsRedactedNote(*m, href)}
	for _, rel := range []struct{ label, id string }{
		{"In reply to", m.ReplyTo},
		{"Answered by", m.ResolvedBy},
		{"Supersedes", m.Supersedes},
		{"Superseded by", m.SupersededBy},
	} {
		if rel.id == "" {
			continue
		}
		o, err := d.svc.Workflow.GetMessage(ctx, c, sess.ID, rel.id)
		if err != nil {
			return "", nil, err
		}
		v.Related = append(v.Related, sessionsRelated{Label: rel.label, Note: sessionsRedactedNote(*o, href)})
	}
	return continuo.SessionRef(sess.Ref) + " · " + string(m.Kind) + " " + m.ID, v, nil
}
