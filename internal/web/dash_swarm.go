package web

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/swarm"
)

// The swarm area of the dashboard (CONTRACT.md §7, §8): the group's
// swarms; a swarm's workers with their carriers, continuity and context
// pressure, its tasks by state and over time, the tasks in doubt with the
// owner's reconcile forms, the open continuations with approve, revoke
// and reconcile, and the rollover history; a swarm's tasks in one state;
// one task with its attempts.
//
// Every read and every action goes through the swarm service as the
// owner tools do, with the browser as the owner's carrier: a carrier of
// its own (the browser session's ID), never one a worker binds, so the
// service's owner checks hold as they are.

func init() {
	for name, f := range swarmFuncs {
		dashFuncs[name] = f
	}
	dashArea(func(d *dash, handle dashRoute) {
		handle("GET /swarms", d.page("swarm-list", d.swarmList))
		handle("GET /w/{swarm}", d.page("swarm-page", d.swarmPage))
		handle("GET /w/{swarm}/tasks", d.page("swarm-tasks", d.swarmTasks))
		handle("GET /w/{swarm}/tasks/{task}", d.page("swarm-task", d.swarmTask))
		handle("POST /w/{swarm}/reconcile", d.action(formSwarmReconcile, d.swarmReconcile))
		handle("POST /w/{swarm}/tasks/{task}/collect", d.action(formSwarmCollect, d.swarmCollect))
		handle("POST /w/{swarm}/tasks/{task}/cancel", d.action(formSwarmCancel, d.swarmCancel))
		handle("POST /w/{swarm}/continuations/{id}/approve", d.action(formSwarmApprove, d.swarmApprove))
		handle("POST /w/{swarm}/continuations/{id}/revoke", d.action(formSwarmRevoke, d.swarmRevoke))
		handle("POST /w/{swarm}/continuations/{id}/reconcile", d.action(formSwarmSettle, d.swarmSettle))
		handle("POST /w/{swarm}/close", d.action(formSwarmClose, d.swarmClose))
	})
}

// The swarm area's form names (each form's CSRF field is bound to one).
const (
	formSwarmReconcile = "swarm-reconcile"
	formSwarmCollect   = "swarm-collect"
	formSwarmCancel    = "swarm-cancel"
	formSwarmApprove   = "swarm-approve"
	formSwarmRevoke    = "swarm-revoke"
	formSwarmSettle    = "swarm-continuation-reconcile"
	formSwarmClose     = "swarm-close"
)

// Page sizes of the swarm area.
const (
	swarmListPage    = 25
	swarmDoubtPage   = 20
	swarmHistoryPage = 20
	swarmTaskPage    = 50
	swarmChartHours  = 24
)

// ownerCarrier is the browser as the owner's carrier: the MCP-session
// source with the browser session's ID, which no worker's carrier is.
func ownerCarrier(c *continuo.Caller) swarm.Carrier {
	return swarm.Carrier{Source: continuo.CarrierFromSession, Key: "web " + c.TokenID}
}

// ---- pages ----

type swarmListView struct {
	Swarms []swarm.SwarmSummary
	Next   string
	Before string // this page's cursor ("" on the first)
}

// swarmList is GET /swarms: the swarms the caller's group owns.
func (d *dash) swarmList(r *http.Request, c *continuo.Caller) (string, any, error) {
	before := r.URL.Query().Get("before")
	p, err := d.svc.Swarm.ListSwarms(r.Context(), c, before, swarmListPage)
	if err != nil {
		return "", nil, err
	}
	return "Swarms", swarmListView{Swarms: p.Swarms, Next: p.Next, Before: before}, nil
}

// swarmWorker is one row of the workers table.
type swarmWorker struct {
	continuo.Worker
	Pressure *swarm.Pressure // nil when the worker joined after the read
}

type swarmPageView struct {
	*swarm.Status
	Workers       []swarmWorker
	Slots         int               // the workers that take a slot: those not retired
	Labels        map[string]string // worker ID → label (the workers are few: at most 64 at a time, and those retired)
	States        []swarmStateCount
	Total         int
	Chart         swarmChart
	InDoubt       []swarm.TaskStatus
	MoreInDoubt   bool
	History       []continuo.Continuation
	HistoryNext   string
	HistoryBefore string
	Close         swarmClose
}

// swarmClose is what stands between the owner and closing the swarm: the
// unsettled tasks by state, and the first of those cancel_requested (the
// ones the owner settles on the task's page when the worker never
// answers).
type swarmClose struct {
	Open      []swarmStateCount
	Cancelled []swarm.TaskStatus // cancel_requested, the first swarmDoubtPage
	More      bool
	Refused   bool // the page is the answer to a close that was refused
}

type swarmStateCount struct {
	State continuo.TaskState
	N     int
}

// swarmPage is GET /w/{swarm}: one read of the service, one snapshot.
func (d *dash) swarmPage(r *http.Request, c *continuo.Caller) (string, any, error) {
	before := r.URL.Query().Get("history")
	o, err := d.svc.Swarm.Overview(r.Context(), c, ownerCarrier(c), r.PathValue("swarm"), swarmOverview(before))
	if err != nil {
		return "", nil, err
	}
	st := o.Status
	v := swarmPageView{Status: st, Labels: map[string]string{}, InDoubt: o.InDoubt.Tasks, MoreInDoubt: o.InDoubt.Next != "",
		History: o.History.Continuations, HistoryNext: o.History.Next, HistoryBefore: before, Chart: newSwarmChart(o.Timeline)}
	for _, w := range st.Workers {
		v.Workers = append(v.Workers, swarmWorker{Worker: w, Pressure: o.Pressures[w.ID]})
		v.Labels[w.ID] = w.Label
		if !w.Retired() {
			v.Slots++
		}
	}
	for _, s := range continuo.TaskStates() {
		v.States = append(v.States, swarmStateCount{State: s, N: st.Counts[s]})
		v.Total += st.Counts[s]
		if !s.Terminal() && st.Counts[s] > 0 {
			v.Close.Open = append(v.Close.Open, swarmStateCount{State: s, N: st.Counts[s]})
		}
	}
	v.Close.Refused = r.URL.Query().Get("close") == "refused"
	if st.Swarm.State == continuo.SwarmActive && st.Counts[continuo.TaskCancelRequested] > 0 {
		p, err := d.svc.Swarm.ListTaskStatus(r.Context(), c, ownerCarrier(c), st.Swarm.ID, continuo.TaskCancelRequested, "", swarmDoubtPage)
		if err != nil {
			return "", nil, err
		}
		v.Close.Cancelled, v.Close.More = p.Tasks, p.Next != ""
	}
	return "Swarm " + st.Swarm.ID, v, nil
}

// swarmOverview is what the swarm page reads: the first tasks in doubt,
// the last day by the hour, a page of the history.
func swarmOverview(historyBefore string) swarm.OverviewInput {
	return swarm.OverviewInput{InDoubt: swarmDoubtPage, Bucket: time.Hour, Buckets: swarmChartHours, HistoryBefore: historyBefore,
		History: swarmHistoryPage}
}

type swarmTasksView struct {
	SwarmID string
	State   continuo.TaskState
	States  []swarmStateCount
	Tasks   []swarm.TaskStatus
	Labels  map[string]string
	After   string
	Next    string
}

// swarmTasks is GET /w/{swarm}/tasks?state=…&after=…: one state's tasks,
// oldest first, paged by the service's cursor.
func (d *dash) swarmTasks(r *http.Request, c *continuo.Caller) (string, any, error) {
	ctx, id, car, q := r.Context(), r.PathValue("swarm"), ownerCarrier(c), r.URL.Query()
	state := continuo.TaskState(q.Get("state"))
	if state == "" {
		state = continuo.TaskQueued
	}
	st, err := d.svc.Swarm.SwarmStatus(ctx, c, car, id)
	if err != nil {
		return "", nil, err
	}
	page, err := d.svc.Swarm.ListTaskStatus(ctx, c, car, id, state, q.Get("after"), swarmTaskPage)
	if err != nil {
		return "", nil, err
	}
	v := swarmTasksView{SwarmID: id, State: state, Tasks: page.Tasks, Labels: map[string]string{}, After: q.Get("after"), Next: page.Next}
	for _, w := range st.Workers {
		v.Labels[w.ID] = w.Label
	}
	for _, s := range continuo.TaskStates() {
		v.States = append(v.States, swarmStateCount{State: s, N: st.Counts[s]})
	}
	return "Tasks · " + string(state), v, nil
}

// swarmTask is GET /w/{swarm}/tasks/{task}: one task, its attempts and
// its result as stored (redacted when it was written).
func (d *dash) swarmTask(r *http.Request, c *continuo.Caller) (string, any, error) {
	h, err := d.svc.Swarm.TaskHistory(r.Context(), c, ownerCarrier(c), r.PathValue("swarm"), r.PathValue("task"))
	if err != nil {
		return "", nil, err
	}
	return "Task " + h.Task.TaskKey, h, nil
}

// ---- actions ----

// swarmBack is where an action of the swarm area returns: the page it
// came from (its next field), else the swarm's page.
func swarmBack(r *http.Request) string {
	if next := r.PostForm.Get("next"); next != "" {
		return next
	}
	return "/w/" + r.PathValue("swarm")
}

// swarmReconcile is POST /w/{swarm}/reconcile: the owner settles a task
// in doubt with the evidence its decision needs; the service checks it.
func (d *dash) swarmReconcile(r *http.Request, c *continuo.Caller) (string, error) {
	f := r.PostForm
	_, err := d.svc.Swarm.Reconcile(r.Context(), c, ownerCarrier(c), swarm.ReconcileInput{SwarmID: r.PathValue("swarm"),
		TaskID: f.Get("task_id"), AttemptID: f.Get("attempt_id"), Decision: swarm.Decision(f.Get("decision")),
		Disposition: swarm.Disposition(f.Get("disposition")), Evidence: f.Get("evidence"), Result: f.Get("result")})
	return swarmBack(r), err
}

// swarmCollect is POST /w/{swarm}/tasks/{task}/collect.
func (d *dash) swarmCollect(r *http.Request, c *continuo.Caller) (string, error) {
	_, err := d.svc.Swarm.Collect(r.Context(), c, ownerCarrier(c), r.PathValue("swarm"), r.PathValue("task"))
	return swarmBack(r), err
}

// swarmCancel is POST /w/{swarm}/tasks/{task}/cancel.
func (d *dash) swarmCancel(r *http.Request, c *continuo.Caller) (string, error) {
	_, err := d.svc.Swarm.Cancel(r.Context(), c, ownerCarrier(c), r.PathValue("swarm"), r.PathValue("task"))
	return swarmBack(r), err
}

// swarmApprove is POST /w/{swarm}/continuations/{id}/approve at the
// version the page showed: a request that changed since is the service's
// revision_conflict, told as "reload".
func (d *dash) swarmApprove(r *http.Request, c *continuo.Caller) (string, error) {
	version, err := strconv.ParseInt(r.PostForm.Get("expected_version"), 10, 64)
	if err != nil {
		return "", continuo.Invalid("expected_version", "must be the continuation's version, a number")
	}
	_, _, err = d.svc.Swarm.Approve(r.Context(), c, ownerCarrier(c), r.PathValue("swarm"), r.PathValue("id"), version)
	if ce := continuo.AsError(err); ce.Code == continuo.CodeRevisionConflict {
		return "", continuo.Errorf(continuo.CodeRevisionConflict, "%s. The request changed since this page was loaded: reload the swarm's page, check it again, then approve.", ce.Message)
	}
	return swarmBack(r), err
}

// swarmRevoke is POST /w/{swarm}/continuations/{id}/revoke.
func (d *dash) swarmRevoke(r *http.Request, c *continuo.Caller) (string, error) {
	_, _, err := d.svc.Swarm.Revoke(r.Context(), c, ownerCarrier(c), r.PathValue("swarm"), r.PathValue("id"))
	return swarmBack(r), err
}

// swarmSettle is POST /w/{swarm}/continuations/{id}/reconcile: a
// continuation whose carrier start is in doubt, settled no_effect or
// applied.
func (d *dash) swarmSettle(r *http.Request, c *continuo.Caller) (string, error) {
	_, err := d.svc.Swarm.ReconcileContinuation(r.Context(), c, ownerCarrier(c), r.PathValue("swarm"), r.PathValue("id"), r.PostForm.Get("decision"))
	return swarmBack(r), err
}

// swarmClose is POST /w/{swarm}/close. A swarm with unsettled tasks is
// not closed (the service's invalid_state): the owner is sent back to
// the swarm's page, whose Close section lists what to settle first and
// how (a cancel_requested task is settled on its page when its worker
// never answers).
func (d *dash) swarmClose(r *http.Request, c *continuo.Caller) (string, error) {
	back := "/w/" + url.PathEscape(r.PathValue("swarm"))
	_, err := d.svc.Swarm.CloseSwarm(r.Context(), c, ownerCarrier(c), r.PathValue("swarm"))
	if ce := continuo.AsError(err); ce.Code == continuo.CodeInvalidState && ce.Details["open"] != nil {
		return back + "?close=refused#close", nil
	}
	return back + "#close", err
}
