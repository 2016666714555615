package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/swarm"
	"github.com/continuo-dev/continuo/internal/web/webtest"
)

// swarmRow is the table row of page with the given id (a worker's or an
// open continuation's), or fails the test.
func swarmRow(t *testing.T, page, id string) string {
	t.Helper()
	i := strings.Index(page, `<tr id="`+id+`">`)
	if i < 0 {
		t.Fatalf("no row %s:\n%s", id, page)
	}
	return page[i : i+strings.Index(page[i:], "</tr>")]
}

// TestDashSwarmList: /swarms lists the group's swarms newest first with
// their worker and task counts, a page at a time; another group's swarm
// is not there; a browser signed in without swarm:own is refused as the
// service refuses it.
func TestDashSwarmList(t *testing.T) { stores.Each(t, testDashSwarmList) }

func testDashSwarmList(t *testing.T) {
	s := newDashServer(t)
	w := newSwarmWorld(t, s, "alice", nil)
	bob := newSwarmWorld(t, s, "bob", nil)
	x := w.join("one")
	w.join("two")
	w.dispatch("k1", "p1", "")
	w.dispatch("k2", "p2", "")
	w.inDoubt(x, "k3", "lost")
	var newer []string
	for range 25 {
		inv, err := s.swarm.Create(t.Context(), w.owner, w.car, swarm.CreateInput{WorkerLimit: 2})
		if err != nil {
			t.Fatal(err)
		}
		newer = append(newer, inv.Swarm.ID)
	}
	first := w.b.page("/swarms")
	swarmHas(t, "the first page", first.body, `href="/w/`+newer[24]+`"`, `href="/w/`+newer[0]+`"`, `href="/swarms?before=`+newer[0]+`"`)
	swarmLacks(t, "the first page", first.body, w.id(), bob.id())
	if n := strings.Count(first.body, `<td><a href="/w/`); n != 25 {
		t.Fatalf("the first page has %d rows, want 25", n)
	}
	second := w.b.page("/swarms?before=" + newer[0])
	swarmHas(t, "the second page", second.body, `href="/w/`+w.id()+`"`, "<td>2 / 8</td>", `<td>2</td>`,
		`<a class="badge badge-reconcile_required" href="/w/`+w.id()+`#in-doubt">1</a>`, `href="/swarms"`)
	swarmLacks(t, "the second page", second.body, newer[0], bob.id(), "Older swarms")
	swarmHas(t, "bob's list", bob.b.page("/swarms").body, bob.id())
	swarmLacks(t, "bob's list", bob.b.page("/swarms").body, w.id())

	reader := s.browser(s.token("alice", continuo.ScopeSessionsRead))
	for _, p := range []string{"/swarms", "/w/" + w.id(), "/w/" + w.id() + "/tasks"} {
		if r := reader.get(p); r.StatusCode != http.StatusForbidden || !strings.Contains(r.body, "swarm:own") {
			t.Fatalf("%s without swarm:own: %d %s", p, r.StatusCode, r.body)
		}
	}
}

// TestDashSwarmPage: the swarm page shows each worker's label, epoch,
// states and a pressure gauge labelled "estimate" with its leading source
// — or "exact" when a host's figure leads — the task counts by state with
// links to their lists, a chart of tasks over time, and the runtime.
func TestDashSwarmPage(t *testing.T) { stores.Each(t, testDashSwarmPage) }

func testDashSwarmPage(t *testing.T) {
	s := newDashServer(t)
	policy := continuo.DefaultSwarmPolicy()
	policy.Compaction = continuo.Compaction{BudgetTokens: 10_000, Threshold: 0.5, ReserveTokens: 1_000}
	w := newSwarmWorld(t, s, "alice", &policy)
	quiet, est, exact, worker := w.join("quiet one"), w.join("estimator"), w.join("exact one"), w.join("busy one")
	for x, r := range map[*swarmHand]swarm.ReportInput{est: {Tokens: 2_000, Source: continuo.LedgerEstimate, Basis: "my count"},
		exact: {Tokens: 4_500, Source: continuo.LedgerHostExact}} {
		if _, err := s.swarm.ReportContext(t.Context(), w.crew, x.car, x.ref, r); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		w.dispatch(fmt.Sprintf("k%d", i), "do it", worker.ref.WorkerID)
	}
	busy := w.next(worker)
	page := w.b.page("/w/" + w.id())
	swarmHas(t, "the swarm page", page.body, "<code>manual</code>", "budget 10,000 tokens, threshold 50%, reserve 1,000")
	swarmLacks(t, "the swarm page (its CSP allows no style attribute, no inline script)", page.body, "style=", "<script>")
	swarmHas(t, "the quiet worker", swarmRow(t, page.body, quiet.ref.WorkerID), "quiet one", `<td data-label="Epoch" class="mono">0</td>`,
		"badge-idle", "badge-steady", "carrier_key", "1,000</span> / 10,000 tokens", `width="10"`, `x1="50"`, ">estimate</span> from no signal yet")
	swarmHas(t, "the busy worker", swarmRow(t, page.body, worker.ref.WorkerID), "busy one", "badge-busy",
		`href="/w/`+w.id()+`/tasks/`+busy.Task.ID+`"`, ">estimate</span> from server count")
	swarmHas(t, "the estimator", swarmRow(t, page.body, est.ref.WorkerID), "3,000</span> / 10,000 tokens · 30%", `width="30"`,
		">estimate</span> from the worker&#39;s estimate")
	row := swarmRow(t, page.body, exact.ref.WorkerID)
	swarmHas(t, "the exact one", row, "5,500</span> / 10,000 tokens · 55%", `width="55"`, ">exact</span> host_exact", "badge-compact_required",
		`fill="#b42318"`)
	swarmLacks(t, "the exact one", row, "estimate")
	// Counts by state, each a link to its list; the chart has the hour's
	// bar at the full height (3 dispatched is the largest count).
	swarmHas(t, "the counts", page.body,
		`<a href="/w/`+w.id()+`/tasks?state=queued"><span class="badge badge-queued">queued</span> <span class="mono">2</span></a>`,
		`<a href="/w/`+w.id()+`/tasks?state=claimed"><span class="badge badge-claimed">claimed</span> <span class="mono">1</span></a>`,
		"3 tasks in all.", "<svg viewBox=", ": 3 dispatched, 0 settled</title>", `class="swarm-bar swarm-bar-dispatched"`, `height="100" fill="#2f5bd3"`,
		"dispatched (3)", "settled (0)")
	if n := strings.Count(page.body, `class="swarm-bar `); n != 1 {
		t.Fatalf("%d bars, want the one of this hour", n)
	}

	// A settled task shows in the chart as settled.
	if _, err := s.swarm.Submit(t.Context(), w.crew, worker.car, worker.ref, busy.Task.ID, "done"); err != nil {
		t.Fatal(err)
	}
	page = w.b.page("/w/" + w.id())
	swarmHas(t, "the chart after a submit", page.body, ": 3 dispatched, 1 settled</title>", `class="swarm-bar swarm-bar-settled"`,
		`<a href="/w/`+w.id()+`/tasks?state=result_ready"><span class="badge badge-result_ready">result_ready</span> <span class="mono">1</span></a>`)

	// An unknown swarm is the service's not_found.
	if r := w.b.get("/w/" + continuo.NewID(continuo.PrefixSwarm, busy.Task.CreatedAt)); r.StatusCode != http.StatusNotFound {
		t.Fatalf("an unknown swarm: %d", r.StatusCode)
	}
}

// TestDashSwarmTasks: the list of one state's tasks, paged by the
// service's cursor, and one task with its attempts and result.
func TestDashSwarmTasks(t *testing.T) { stores.Each(t, testDashSwarmTasks) }

func testDashSwarmTasks(t *testing.T) {
	s := newDashServer(t)
	w := newSwarmWorld(t, s, "alice", nil)
	x := w.join("worker x")
	var ids []string
	for i := range 52 {
		ids = append(ids, w.dispatch(fmt.Sprintf("task-%02d", i), "prompt of "+fmt.Sprint(i), "").ID)
	}
	first := w.b.page("/w/" + w.id() + "/tasks?state=queued")
	swarmHas(t, "the first page", first.body, "task-00", "task-49", `/tasks?after=`+ids[49]+`&amp;state=queued"`, `<option value="queued" selected>queued (52)</option>`)
	swarmLacks(t, "the first page", first.body, "task-50")
	second := w.b.page("/w/" + w.id() + "/tasks?state=queued&after=" + ids[49])
	swarmHas(t, "the second page", second.body, "task-50", "task-51")
	swarmLacks(t, "the second page", second.body, "task-49", "Next →")
	if r := w.b.get("/w/" + w.id() + "/tasks?state=nonsense"); r.StatusCode != http.StatusBadRequest {
		t.Fatalf("an unknown state: %d %s", r.StatusCode, r.body)
	}

	d := w.next(x)
	if _, err := s.swarm.Ack(t.Context(), w.crew, x.car, x.ref, d.Task.ID); err != nil {
		t.Fatal(err)
	}
	running := w.b.page("/w/" + w.id() + "/tasks?state=running")
	swarmHas(t, "the running list", running.body, d.Task.TaskKey, "worker x", `1 <span class="badge badge-running">running</span>`)
	if _, err := s.swarm.Submit(t.Context(), w.crew, x.car, x.ref, d.Task.ID, "the result of task-00"); err != nil {
		t.Fatal(err)
	}
	task := w.b.page("/w/" + w.id() + "/tasks/" + d.Task.ID)
	swarmHas(t, "the task page", task.body, "Task task-00", "<pre>prompt of 0</pre>", "<pre>the result of task-00</pre>", d.Attempt.ID,
		`<span class="badge badge-submitted">submitted</span>`, "badge-result_ready", `id="collect"`)
	swarmLacks(t, "the task page", task.body, `id="cancel"`)
	if r := w.b.submit(task, "collect", nil); r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/w/"+w.id()+"/tasks/"+d.Task.ID {
		t.Fatalf("collect: %d %s", r.StatusCode, r.body)
	}
	if st := w.task(d.Task.ID); st.Task.State != continuo.TaskCollected {
		t.Fatalf("after collect: %s", st.Task.State)
	}
	queued := w.b.page("/w/" + w.id() + "/tasks/" + ids[1])
	swarmHas(t, "a queued task", queued.body, "No worker has claimed it yet.", `id="cancel"`)
	if r := w.b.submit(queued, "cancel", nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("cancel: %d %s", r.StatusCode, r.body)
	}
	if st := w.task(ids[1]); st.Task.State != continuo.TaskCancelled {
		t.Fatalf("after cancel: %s", st.Task.State)
	}
	// The task of another swarm of the group is not found through this one.
	other, err := s.swarm.Create(t.Context(), w.owner, w.car, swarm.CreateInput{WorkerLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r := w.b.get("/w/" + other.Swarm.ID + "/tasks/" + ids[2]); r.StatusCode != http.StatusNotFound {
		t.Fatalf("a task through another swarm: %d", r.StatusCode)
	}
}

// TestDashSwarmApprove: a pending request is approved from the page at
// the version it shows; the worker's epoch moves once the requester reads
// its status, as the service works; the history shows the bound
// continuation approved by the owner; a stale version is the service's
// revision_conflict, told to reload; revoke ends a request; a policy's
// approval reads "policy", never a principal.
func TestDashSwarmApprove(t *testing.T) { stores.Each(t, testDashSwarmApprove) }

func testDashSwarmApprove(t *testing.T) {
	s := newDashServer(t)
	ctx := t.Context()
	w := newSwarmWorld(t, s, "alice", nil)
	x, y := w.checkpointed("xavier"), w.checkpointed("yolanda")
	cn, newCar := w.request(x, "a fresh conversation")
	page := w.b.page("/w/" + w.id())
	swarmHas(t, "the open request", swarmRow(t, page.body, cn.ID), "xavier", "0 → 1", "approval", "badge-pending", "version 1",
		"a fresh conversation", `id="approve-`+cn.ID+`"`, `id="revoke-`+cn.ID+`"`)

	stale := w.b.submit(page, "approve-"+cn.ID, url.Values{"expected_version": {"7"}})
	if stale.StatusCode != http.StatusConflict || !strings.Contains(stale.body, "revision_conflict") || !strings.Contains(stale.body, "reload") {
		t.Fatalf("a stale version: %d %s", stale.StatusCode, stale.body)
	}
	if c := w.continuation(cn.ID); c.State != continuo.ContinuationPending || c.Version != 1 {
		t.Fatalf("after the stale approval: %+v", c)
	}
	r := w.b.submit(page, "approve-"+cn.ID, nil)
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/w/"+w.id() {
		t.Fatalf("approve: %d %s", r.StatusCode, r.body)
	}
	if c := w.continuation(cn.ID); c.State != continuo.ContinuationApproved || c.ApprovedBy != w.owner.PrincipalID {
		t.Fatalf("after approve: %+v", c)
	}
	if r := w.b.submit(page, "approve-"+cn.ID, nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("approve again (the tool replays): %d %s", r.StatusCode, r.body)
	}
	// The epoch moves when the requester reads its status.
	swarmHas(t, "approved, not yet bound", swarmRow(t, w.b.page("/w/"+w.id()).body, x.ref.WorkerID), `<td data-label="Epoch" class="mono">0</td>`)
	b, err := s.swarm.ContinuationStatus(ctx, w.crew, newCar, w.id())
	if err != nil || b.Continuation.State != continuo.ContinuationBound || b.Worker.Epoch != 1 {
		t.Fatalf("the requester's status: %+v %v", b, err)
	}
	page = w.b.page("/w/" + w.id())
	swarmHas(t, "the worker after the transfer", swarmRow(t, page.body, x.ref.WorkerID), `<td data-label="Epoch" class="mono">1</td>`, "badge-steady")
	hist := page.body[strings.Index(page.body, `id="history"`):]
	swarmHas(t, "the history", hist, `<td data-label="Worker">xavier</td>`, "0 → 1", `<td data-label="Path">approval</td>`, `<td data-label="Approved by">owner</td>`,
		"<code title=\"carrier hash prefix\">"+b.Continuation.TargetCarrier[:12]+"</code> <span class=\"muted\">carrier_key</span>", "badge-bound")
	// Its receipt: the capsule the new carrier started from and the
	// checkpoint it rests on, short, each whole in its title.
	capsule, checkpoint := b.Continuation.CapsuleHash, b.Continuation.CheckpointHash
	if len(capsule) != 64 || len(checkpoint) != 64 {
		t.Fatalf("the bound continuation's receipt: capsule %q, checkpoint %q", capsule, checkpoint)
	}
	swarmHas(t, "the history's receipt", hist,
		`<td data-label="Receipt" class="swarm-receipt"><span>capsule <code title="`+capsule+`">`+capsule[:12]+`</code></span>`,
		`<span>checkpoint <code title="`+checkpoint+`">`+checkpoint[:12]+`</code></span>`)
	swarmLacks(t, "the page", page.body, w.owner.PrincipalID, b.Continuation.TargetCarrier, `id="approve-`+cn.ID+`"`)

	// Revoke ends a request; again, it replays.
	cy, _ := w.request(y, "")
	page = w.b.page("/w/" + w.id())
	if r := w.b.submit(page, "revoke-"+cy.ID, nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("revoke: %d %s", r.StatusCode, r.body)
	}
	if c := w.continuation(cy.ID); c.State != continuo.ContinuationRevoked {
		t.Fatalf("after revoke: %+v", c)
	}
	if r := w.b.submit(page, "revoke-"+cy.ID, nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("revoke again: %d %s", r.StatusCode, r.body)
	}
	// Approving what was revoked is the service's refusal.
	if r := w.b.submit(page, "approve-"+cy.ID, nil); r.StatusCode != http.StatusConflict || !strings.Contains(r.body, "revoked") {
		t.Fatalf("approve a revoked request: %d %s", r.StatusCode, r.body)
	}

	// The policy approves a worker's own request while its context is full.
	policy := continuo.DefaultSwarmPolicy()
	policy.AutoApproveManaged = true
	policy.Compaction = continuo.Compaction{BudgetTokens: 1_000, Threshold: 0.5, ReserveTokens: 0}
	p := newSwarmWorld(t, s, "carol", &policy)
	z := p.checkpointed("zed")
	if _, err := s.swarm.ReportContext(ctx, p.crew, z.car, z.ref, swarm.ReportInput{Tokens: 900, Source: continuo.LedgerEstimate}); err != nil {
		t.Fatal(err)
	}
	cz, _ := p.request(z, "context full")
	if cz.State != continuo.ContinuationApproved || cz.ApprovedBy != continuo.ApprovedByPolicy {
		t.Fatalf("the policy's approval: %+v", cz)
	}
	hist = p.b.page("/w/" + p.id()).body
	swarmHas(t, "the policy's history", hist[strings.Index(hist, `id="history"`):], `<td data-label="Worker">zed</td>`, `<td data-label="Approved by">policy</td>`, "badge-approved")
}

// TestDashSwarmReconcile: a task in doubt is settled from its forms, each
// asking for what the contract demands: requeue on no_effect evidence
// naming the latest attempt (without it, the service's refusal is shown
// and nothing changes), failed, or result_ready with the result; a
// continuation in doubt is reconciled no_effect or applied.
func TestDashSwarmReconcile(t *testing.T) { stores.Each(t, testDashSwarmReconcile) }

func testDashSwarmReconcile(t *testing.T) {
	s := newDashServer(t)
	w := newSwarmWorld(t, s, "alice", nil)
	x := w.join("xavier")
	t1, a1 := w.inDoubt(x, "first", "the carrier died mid-way")
	page := w.b.page("/w/" + w.id())
	doubt := page.body[strings.Index(page.body, `id="doubt-`+t1.ID+`"`):]
	swarmHas(t, "the task in doubt", doubt, "effect_unknown", a1.ID, "by xavier", "the carrier died mid-way",
		`id="requeue-`+t1.ID+`"`, `id="fail-`+t1.ID+`"`, `id="result-`+t1.ID+`"`,
		`<input type="checkbox" name="disposition" value="no_effect" required>`)
	if f, _ := webtest.FormFields(page.body, "requeue-"+t1.ID); f.Get("attempt_id") != a1.ID || f.Get("decision") != "requeue" || f.Has("disposition") {
		t.Fatalf("the requeue form's fields: %v", f)
	}

	// Wrong evidence: the box unticked (no no_effect), or none at all.
	for _, set := range []url.Values{{"evidence": {"I think it is fine"}}, {"disposition": {"unknown"}, "evidence": {"I think it is fine"}}} {
		r := w.b.submit(page, "requeue-"+t1.ID, set)
		if r.StatusCode != http.StatusConflict || !strings.Contains(r.body, "requeue needs no_effect evidence") {
			t.Fatalf("requeue without no_effect (%v): %d %s", set, r.StatusCode, r.body)
		}
	}
	if r := w.b.submit(page, "requeue-"+t1.ID, url.Values{"disposition": {"no_effect"}}); r.StatusCode != http.StatusBadRequest ||
		!strings.Contains(r.body, "evidence") {
		t.Fatalf("requeue without evidence: %d %s", r.StatusCode, r.body)
	}
	if st := w.task(t1.ID); st.Task.State != continuo.TaskReconcileRequired || st.Attempt.State != continuo.AttemptInDoubt {
		t.Fatalf("after the refusals: %s %s", st.Task.State, st.Attempt.State)
	}
	ok := url.Values{"disposition": {"no_effect"}, "evidence": {"the worker's log ends before it touched anything"}}
	if r := w.b.submit(page, "requeue-"+t1.ID, ok); r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/w/"+w.id() {
		t.Fatalf("requeue: %d %s", r.StatusCode, r.body)
	}
	st := w.task(t1.ID)
	if st.Task.State != continuo.TaskQueued || st.Attempt.State != continuo.AttemptRequeued ||
		!strings.Contains(st.Task.Detail, "no_effect: the worker's log ends") {
		t.Fatalf("after requeue: %+v %+v", st.Task, st.Attempt)
	}
	if r := w.b.submit(page, "requeue-"+t1.ID, ok); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("the same requeue again (the tool replays): %d %s", r.StatusCode, r.body)
	}
	swarmHas(t, "the page after requeue", w.b.page("/w/"+w.id()).body, "No task is in doubt.")

	// result_ready from the task's own page needs the result.
	w.next(x) // first again (x's preferred)
	if _, err := s.swarm.Fail(t.Context(), w.crew, x.car, x.ref, t1.ID, "again", swarm.EffectMaybe); err != nil {
		t.Fatal(err)
	}
	t2, _ := w.inDoubt(x, "second", "unsure")
	tp := w.b.page("/w/" + w.id() + "/tasks/" + t2.ID)
	if r := w.b.submit(tp, "result-"+t2.ID, url.Values{"evidence": {"the output file exists"}}); r.StatusCode != http.StatusBadRequest ||
		!strings.Contains(r.body, "result_ready needs the result") {
		t.Fatalf("result_ready without the result: %d %s", r.StatusCode, r.body)
	}
	r := w.b.submit(tp, "result-"+t2.ID, url.Values{"evidence": {"the output file exists"}, "result": {"42 files converted"}})
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/w/"+w.id()+"/tasks/"+t2.ID {
		t.Fatalf("result_ready: %d %s", r.StatusCode, r.body)
	}
	if st := w.task(t2.ID); st.Task.State != continuo.TaskResultReady || st.Task.Result != "42 files converted" {
		t.Fatalf("after result_ready: %+v", st.Task)
	}
	swarmHas(t, "the settled task", w.b.page("/w/"+w.id()+"/tasks/"+t2.ID).body, "<pre>42 files converted</pre>", `id="collect"`)

	// failed, with what the owner knows of the effect.
	page = w.b.page("/w/" + w.id())
	if r := w.b.submit(page, "fail-"+t1.ID, url.Values{"disposition": {"applied"}, "evidence": {"it half-wrote the report"}}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("failed: %d %s", r.StatusCode, r.body)
	}
	if st := w.task(t1.ID); st.Task.State != continuo.TaskFailed || !strings.HasPrefix(st.Task.Detail, "applied: ") {
		t.Fatalf("after failed: %+v", st.Task)
	}

	// Continuations in doubt: applied returns one to pending, no_effect
	// revokes another.
	y, z := w.checkpointed("yolanda"), w.checkpointed("zed")
	cy, cz := w.inDoubtContinuation(y), w.inDoubtContinuation(z)
	page = w.b.page("/w/" + w.id())
	swarmHas(t, "a continuation in doubt", swarmRow(t, page.body, cy.ID), "badge-reconcile_required", "carrier start unknown",
		`id="settle-no_effect-`+cy.ID+`"`, `id="settle-applied-`+cy.ID+`"`, `id="revoke-`+cy.ID+`"`)
	swarmLacks(t, "a ticket's continuation", swarmRow(t, page.body, cy.ID), `id="approve-`)
	if r := w.b.submit(page, "settle-applied-"+cy.ID, nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("reconcile applied: %d %s", r.StatusCode, r.body)
	}
	if r := w.b.submit(page, "settle-no_effect-"+cz.ID, nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("reconcile no_effect: %d %s", r.StatusCode, r.body)
	}
	if c := w.continuation(cy.ID); c.State != continuo.ContinuationPending {
		t.Fatalf("after applied: %s", c.State)
	}
	if c := w.continuation(cz.ID); c.State != continuo.ContinuationRevoked {
		t.Fatalf("after no_effect: %s", c.State)
	}
	if r := w.b.submit(page, "settle-applied-"+cz.ID, nil); r.StatusCode != http.StatusConflict || !strings.Contains(r.body, "only reconcile_required") {
		t.Fatalf("reconcile a revoked continuation: %d %s", r.StatusCode, r.body)
	}
}

// noRuntime is a carrier runtime that the test expects never to start
// anything, and a minter that mints for it.
type noRuntime struct{ t *testing.T }

func (r noRuntime) Start(context.Context, string, []string) (string, error) {
	r.t.Error("a carrier was started for a worker whose capsule cannot fit")
	return "", errors.New("no")
}
func (noRuntime) Mint(context.Context, string, time.Duration) (string, string, error) {
	return "cto_pat_x", "tok_x", nil
}
func (noRuntime) Revoke(context.Context, string) error { return nil }

// TestDashSwarmRetiredBlocked: the swarm page shows a worker that left and
// one the owner removed as retired, each with why, and counts only the
// others against the limit; and a worker whose capsule cannot leave room
// to work as compact_blocked, with what unblocks it.
func TestDashSwarmRetiredBlocked(t *testing.T) { stores.Each(t, testDashSwarmRetiredBlocked) }

func testDashSwarmRetiredBlocked(t *testing.T) {
	s := newDashServer(t, func(o *dashOptions) { o.swarm.Runtime, o.swarm.Minter = noRuntime{t}, noRuntime{t} })
	policy := continuo.DefaultSwarmPolicy()
	policy.Compaction = continuo.Compaction{BudgetTokens: 1_000, Threshold: 0.5, ReserveTokens: 0}
	w := newSwarmWorld(t, s, "alice", &policy)
	gone, removed, big := w.join("gone"), w.join("removed"), w.join("big")
	ctx := t.Context()
	if _, err := s.swarm.Leave(ctx, w.crew, gone.car, gone.ref); err != nil {
		t.Fatal(err)
	}
	if _, err := s.swarm.RemoveWorker(ctx, w.owner, w.car, w.id(), removed.ref.WorkerID); err != nil {
		t.Fatal(err)
	}
	cp, _ := json.Marshal(map[string]string{"summary": strings.Repeat("s", 1_200)})
	if _, err := s.swarm.Checkpoint(ctx, w.crew, big.car, big.ref, cp); err != nil {
		t.Fatal(err)
	}
	if _, err := s.swarm.ReportContext(ctx, w.crew, big.car, big.ref, swarm.ReportInput{Tokens: 900, Source: continuo.LedgerEstimate}); err != nil {
		t.Fatal(err)
	}
	// The report wakes the planner (in the service's reaper loop), which
	// finds the capsule cannot fit.
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := s.swarm.SwarmStatus(ctx, w.owner, w.car, w.id())
		if err != nil {
			t.Fatal(err)
		}
		if st.Workers[2].ContinuityState == continuo.ContinuityCompactBlocked {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker is %s, not compact_blocked", st.Workers[2].ContinuityState)
		}
		time.Sleep(20 * time.Millisecond) // the planner runs in the reaper's loop: a deadline, not a timing
	}
	page := w.b.page("/w/" + w.id())
	swarmHas(t, "the swarm page", page.body, "1 of at most 8", "(and 3 in all, with those retired)", "is retired, its slot freed")
	swarmHas(t, "the worker that left", swarmRow(t, page.body, gone.ref.WorkerID), "badge-retired", "it left")
	swarmHas(t, "the removed worker", swarmRow(t, page.body, removed.ref.WorkerID), "badge-retired", "you removed it")
	swarmHas(t, "the blocked worker", swarmRow(t, page.body, big.ref.WorkerID), "badge-compact_blocked", "its checkpoint leaves no room to work")
}

// TestDashSwarmSettleCancelled: a task cancelled while its worker holds it
// (cancel_requested) can be settled from its page — failed, or with its
// result; never requeued — and the swarm then closes.
func TestDashSwarmSettleCancelled(t *testing.T) { stores.Each(t, testDashSwarmSettleCancelled) }

func testDashSwarmSettleCancelled(t *testing.T) {
	s := newDashServer(t)
	w := newSwarmWorld(t, s, "alice", nil)
	x := w.join("xavier")
	task := w.dispatch("slow", "do it slowly", x.ref.WorkerID)
	d := w.next(x)
	if _, err := s.swarm.Cancel(t.Context(), w.owner, w.car, w.id(), task.ID); err != nil {
		t.Fatal(err)
	}
	page := w.b.page("/w/" + w.id() + "/tasks/" + task.ID)
	swarmHas(t, "the cancel_requested task's page", page.body, "the worker settles it when it answers", `id="fail-`+task.ID+`"`, `id="result-`+task.ID+`"`)
	swarmLacks(t, "the cancel_requested task's page", page.body, `id="requeue-`+task.ID+`"`)
	r := w.b.submit(page, "fail-"+task.ID, url.Values{"disposition": {"unknown"}, "evidence": {"the worker never answered"}})
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("settle as failed: %d %s", r.StatusCode, r.body)
	}
	if st := w.task(task.ID); st.Task.State != continuo.TaskFailed || st.Attempt.ID != d.Attempt.ID || st.Attempt.State != continuo.AttemptSettled {
		t.Fatalf("after settling: %+v %+v", st.Task, st.Attempt)
	}
	if _, err := s.swarm.CloseSwarm(t.Context(), w.owner, w.car, w.id()); err != nil {
		t.Fatalf("close once every task is settled: %v", err)
	}
}
