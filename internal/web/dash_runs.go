package web

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/workflow"
)

// The dashboard's runs and evidence (issue 13, item 4):
//
//	GET  /p/{project}/evidence      each session's checks, judged as the brief judges them
//	POST /p/{project}/evidence/run  run a check for a session (run_validation)
//	GET  /p/{project}/runs          the project's runs, newest first
//	GET  /r/{run}                   one run: its record and its output so far
//	POST /r/{run}/cancel            cancel it (cancel_run)
//	GET  /r/{run}/events            its new output as server-sent events (dash_runs_events.go)

// The runs area's form names (csrf.go).
const (
	formRunCheck  = "runs-check"
	formRunCancel = "runs-cancel"
)

// runCancelWait is how long a cancel from the run page waits for the run
// to end before it shows the run: a process group gets SIGTERM at once,
// and the page follows the rest live.
const runCancelWait = 2 * time.Second

func init() {
	dashFuncs["runsTook"] = runTook
	dashFuncs["runsRef"] = continuo.SessionRef
	dashArea(func(d *dash, handle dashRoute) {
		handle("GET /p/{project}/evidence", d.page("evidence-project", d.evidencePage))
		handle("POST /p/{project}/evidence/run", d.action(formRunCheck, d.runCheck))
		handle("GET /p/{project}/runs", d.page("runs-list", d.runsPage))
		handle("GET /r/{run}", d.page("runs-run", d.runPage))
		handle("POST /r/{run}/cancel", d.action(formRunCancel, d.cancelRun))
		handle("GET /r/{run}/events", d.runEvents)
	})
}

// runTook is how long a run ran (so far, while it runs): "" before it
// started.
func runTook(r continuo.Run) string {
	if r.StartedAt == nil {
		return ""
	}
	end := time.Now()
	if r.EndedAt != nil {
		end = *r.EndedAt
	}
	d := end.Sub(*r.StartedAt)
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	}
	return d.Round(time.Second).String()
}

// ---- evidence ----

// evidenceView is the evidence page: a page of sessions and the filter
// that chose them.
type evidenceView struct {
	*workflow.ProjectEvidence
	Lifecycle  string // active | closed | all
	Prev, Next string // the offsets of the pages before and after, "" when none
}

// The lifecycle filter: the page shows active sessions unless asked.
var evidenceLifecycles = map[string]continuo.Lifecycle{"": continuo.LifecycleActive, "active": continuo.LifecycleActive,
	"closed": continuo.LifecycleClosed, "all": ""}

func (d *dash) evidencePage(r *http.Request, c *continuo.Caller) (string, any, error) {
	q := r.URL.Query()
	lc, ok := evidenceLifecycles[q.Get("lifecycle")]
	if !ok {
		return "", nil, continuo.Invalid("lifecycle", "must be active, closed or all")
	}
	offset, err := queryInt(q, "offset")
	if err != nil {
		return "", nil, err
	}
	ev, err := d.svc.Workflow.Evidence(r.Context(), c, r.PathValue("project"), lc, offset, 0)
	if err != nil {
		return "", nil, err
	}
	v := &evidenceView{ProjectEvidence: ev, Lifecycle: q.Get("lifecycle")}
	if v.Lifecycle == "" {
		v.Lifecycle = "active"
	}
	if offset > 0 {
		v.Prev = strconv.Itoa(max(0, offset-workflow.EvidenceDefault))
	}
	if ev.NextOffset != nil {
		v.Next = strconv.Itoa(*ev.NextOffset)
	}
	return "Evidence · " + ev.Project.Name, v, nil
}

// queryInt reads a non-negative integer parameter; absent is 0.
func queryInt(q url.Values, name string) (int, error) {
	s := q.Get(name)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, continuo.Invalid(name, "must be a number ≥ 0")
	}
	return n, nil
}

// runCheck runs a check for a session, as run_validation does (sharing a
// run of the same check on the same source under way), and shows the run.
// The session decides where it runs; the project in the path is the page
// the form is on.
func (d *dash) runCheck(r *http.Request, c *continuo.Caller) (string, error) {
	v, err := d.svc.Workflow.RunValidation(r.Context(), c, r.PostForm.Get("session"), r.PostForm.Get("check"), 0)
	if err != nil {
		return "", err
	}
	return "/r/" + v.Run.ID, nil
}

// ---- runs ----

// runsView is the runs list.
type runsView struct {
	Project  continuo.Project
	Runs     []continuo.Run
	Sessions map[string]string // session ID → its name (sessionNames)
	Next     string
	First    bool // the newest page
}

func (d *dash) runsPage(r *http.Request, c *continuo.Caller) (string, any, error) {
	before := r.URL.Query().Get("before")
	page, err := d.svc.Runs.List(r.Context(), c, r.PathValue("project"), before, 0)
	if err != nil {
		return "", nil, err
	}
	ids := make([]string, 0, len(page.Runs))
	for _, run := range page.Runs {
		ids = append(ids, run.SessionID)
	}
	names, err := d.sessionNames(r, c, ids...)
	if err != nil {
		return "", nil, err
	}
	return "Runs · " + page.Project.Name, &runsView{Project: page.Project, Runs: page.Runs, Sessions: names, Next: page.Next,
		First: before == ""}, nil
}

// runView is the run page: the record, and one page of its output.
type runView struct {
	Run         continuo.Run
	Project     string // its name; its ID when the caller may not list projects
	Session     string // its session's name (sessionNames), "" when it has none
	Source      *workflow.Source
	Events      []continuo.RunEvent
	HistoryLost bool   // output between the page's start and its events was dropped
	Paged       bool   // the page starts after an observation token, not at the beginning
	Next        string // the observation token of the next page, when there is more
	Live        string // the events URL that continues this page, while the run has not ended
	Tail        string // a failed check's last lines (run.ReadTail)
}

func (d *dash) runPage(r *http.Request, c *continuo.Caller) (string, any, error) {
	id, after := r.PathValue("run"), r.URL.Query().Get("after")
	o, err := d.svc.Runs.Observe(r.Context(), c, id, after, 0)
	if err != nil {
		return "", nil, err
	}
	v := &runView{Run: o.Run, Project: o.Run.ProjectID, Source: workflow.RunSource(&o.Run), Events: o.Events,
		HistoryLost: o.HistoryLost, Paged: after != ""}
	if o.HasMore {
		v.Next = o.Token
	}
	names, err := d.sessionNames(r, c, o.Run.SessionID)
	if err != nil {
		return "", nil, err
	}
	v.Session = names[o.Run.SessionID]
	if o.Run.Kind == continuo.RunValidation && (o.Run.State == continuo.RunFailed || o.Run.State == continuo.RunTimedOut) {
		if v.Tail, err = d.svc.Runs.Tail(r.Context(), c, id); err != nil {
			return "", nil, err
		}
	}
	if !o.Run.State.Terminal() || o.HasMore {
		v.Live = "/r/" + o.Run.ID + "/events" + "?" + url.Values{"after": {o.Token}}.Encode()
	}
	if ps, _, err := d.svc.Workflow.Projects(r.Context(), c); err == nil {
		for _, p := range ps {
			if p.ProjectID == o.Run.ProjectID {
				v.Project = p.Name
			}
		}
	} else if continuo.ErrorCode(err) != continuo.CodeForbidden {
		return "", nil, err
	}
	title := "Check " + o.Run.Check
	if o.Run.Kind == continuo.RunAgent {
		title = "Agent run on " + o.Run.ProviderID
	}
	return title, v, nil
}

// cancelRun asks a run to stop, as cancel_run does (idempotent; the
// service decides who may), and shows it.
func (d *dash) cancelRun(r *http.Request, c *continuo.Caller) (string, error) {
	run, err := d.svc.Runs.Cancel(r.Context(), c, r.PathValue("run"), runCancelWait)
	if err != nil {
		return "", err
	}
	return "/r/" + run.ID, nil
}

// sessionNames names sessions as people know them: "~s3 · its title"
// (redacted), by ID. A session the caller may not read keeps no name (the
// page shows its ID, as the record holds it); "" IDs are skipped.
func (d *dash) sessionNames(r *http.Request, c *continuo.Caller, ids ...string) (map[string]string, error) {
	out := map[string]string{}
	for _, id := range ids {
		if _, done := out[id]; done || id == "" {
			continue
		}
		sess, _, err := d.svc.Workflow.GetSession(r.Context(), c, id)
		switch code := continuo.ErrorCode(err); {
		case err == nil:
			out[id] = continuo.SessionRef(sess.Ref) + " · " + sessionsRedact(sess.Title)
		case code == continuo.CodeNotFound || code == continuo.CodeForbidden:
			out[id] = ""
		default:
			return nil, err
		}
	}
	return out, nil
}
