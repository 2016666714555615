package mcpserver_test

import (
	"regexp"
	"strings"
	"testing"
)

// contParty is who takes part in a worker's continuity: the owner's
// connection, and fresh, which returns a new conversation of the worker
// principal (a new carrier) each time it is called.
type contParty struct {
	owner  *client
	fresh  func() *worker
	source string // the carrier_source the new carriers show
}

// TestContinuityLoop: a worker carried on by new conversations over
// stateful HTTP sessions, each session a carrier: the ticket path, the
// approval path, a revoked ticket, and context pressure up to Auto
// Compact's compact_required.
func TestContinuityLoop(t *testing.T) {
	f := newFixture(t)
	ownerTok, wTok := f.token("ada", ownerScopes...), f.token("ada", workerScopes...)
	continuityLoop(t, contParty{
		owner:  f.connectAt(ownerTok, stateful).at(t),
		fresh:  func() *worker { return &worker{c: f.connectAt(wTok, stateful).at(t)} },
		source: "mcp_session",
	})
}

// TestContinuityStateless: the same on the stateless protocol, where each
// conversation is only its carrier_key (all on one connection).
func TestContinuityStateless(t *testing.T) {
	f := newFixture(t)
	ownerTok, wTok := f.token("ada", ownerScopes...), f.token("ada", workerScopes...)
	conn := f.connectAt(wTok, stateless).at(t)
	continuityLoop(t, contParty{
		owner:  f.connectAt(ownerTok, stateless).at(t),
		fresh:  func() *worker { return &worker{c: conn, key: carrierKey()} },
		source: "carrier_key",
	})
}

var capsuleHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

// continuityLoop runs a worker's continuity with p, checking every result.
func continuityLoop(t *testing.T, p contParty) {
	owner := p.owner
	cr := owner.ok("chat_swarm_create", obj{"worker_limit": 2,
		"policy": obj{"compaction": obj{"budget_tokens": 10_000, "threshold": 0.5, "reserve_tokens": 1_000}}})
	swarmID, invite := cr.str("swarm", "swarm_id"), cr.str("invite")
	ticketJoin := func(w *worker, ticket string) obj {
		return with(obj{"swarm_id": swarmID, "continuation_ticket": ticket}, keyArg(w)...)
	}
	status := func() map[string]any {
		t.Helper()
		ws, _ := owner.ok("chat_swarm_status", obj{"swarm_id": swarmID}).Data["workers"].([]any)
		if len(ws) != 1 {
			t.Fatalf("status workers = %v, want one", ws)
		}
		return ws[0].(map[string]any)
	}

	// A joins, works a task and checkpoints.
	a := p.fresh()
	a.join(swarmID, invite, "alpha")
	t1 := owner.ok("chat_swarm_dispatch", obj{"swarm_id": swarmID, "task_key": "t1", "prompt": "add 2 and 2", "preferred_worker_id": a.id}).str("task", "task_id")
	wantEq(t, "A's task", a.ok("chat_swarm_next", a.args("wait_secs", 0)).str("task", "task_id"), t1)
	a.ok("chat_swarm_ack", a.args("task_id", t1))
	a.ok("chat_swarm_submit", a.args("task_id", t1, "result", "4"))
	a.ok("chat_swarm_checkpoint", a.args("checkpoint", obj{"summary": "added 2 and 2", "next": "wait for more"}))

	// The owner prepares a continuation: a ticket and the capsule.
	pr := owner.ok("chat_swarm_prepare_continuation", obj{"swarm_id": swarmID, "worker_id": a.id, "reason": "context full"})
	ticket, cn := pr.str("ticket"), pr.Data["continuation"].(map[string]any)
	if !strings.HasPrefix(ticket, "cto_cnt_") || !strings.HasPrefix(pr.str("continuation", "continuation_id"), "cnt_") ||
		!capsuleHash.MatchString(pr.str("continuation", "capsule_hash")) || pr.str("continuation", "expires_at") == "" || pr.Data["worker"] != nil {
		t.Fatalf("prepare = %v", pr.Data)
	}
	for field, want := range map[string]any{"worker_id": a.id, "path": "ticket", "source_epoch": 0, "target_epoch": 1, "state": "pending",
		"version": 1} {
		wantEq(t, "continuation."+field, cn[field], want)
	}
	for field, want := range map[string]any{"authority": "context_only", "version": 1, "epoch": 1, "worker_id": a.id, "swarm_id": swarmID,
		"label": "alpha"} {
		wantEq(t, "capsule."+field, dig(pr.Data, "capsule", field), want)
	}
	wantEq(t, "capsule checkpoint", dig(pr.Data, "capsule", "checkpoint", "summary"), "added 2 and 2")
	if tasks, _ := dig(pr.Data, "capsule", "recent_tasks").([]any); len(tasks) != 1 || dig(tasks[0], "task_id") != t1 ||
		dig(tasks[0], "summary") != "4" {
		t.Fatalf("capsule tasks = %v", tasks)
	}
	if strings.Contains(mustJSON(t, pr.Data["capsule"]), ticket) {
		t.Fatalf("the capsule carries its ticket: %v", pr.Data["capsule"])
	}
	wantEq(t, "continuity_state while pending", status()["continuity_state"], "continuation_pending")
	// Until the transfer commits A is the carrier; it takes no new work.
	wantEq(t, "A's next while pending", a.ok("chat_swarm_next", a.args("wait_secs", 0)).str("state"), "compact_required")

	// A new conversation B joins with the ticket: the same worker at
	// epoch 1, with the capsule; its retry is the same answer.
	b := p.fresh()
	j := b.ok("chat_swarm_join", ticketJoin(b, ticket))
	if j.str("worker", "worker_id") != a.id || j.num("worker", "epoch") != 1 || j.str("worker", "label") != "alpha" ||
		j.str("worker", "carrier_source") != p.source || j.str("worker", "continuity_state") != "steady" || j.Data["replayed"] != nil {
		t.Fatalf("join with the ticket = %v", j.Data)
	}
	wantEq(t, "capsule from the join", mustJSON(t, j.Data["capsule"]), mustJSON(t, pr.Data["capsule"]))
	b.id, b.epoch = a.id, 1
	if r := b.ok("chat_swarm_join", ticketJoin(b, ticket)); r.Data["replayed"] != true || r.str("worker", "worker_id") != a.id || r.num("worker", "epoch") != 1 {
		t.Fatalf("join with the ticket again = %v", r.Data)
	}
	third := p.fresh()
	if r := third.fails("chat_swarm_join", ticketJoin(third, ticket), "ticket_invalid"); r.details()["reason"] != "used" {
		t.Fatalf("a third conversation's ticket = %v", r.Data)
	}

	// A hears that it was continued, and is fenced; so is B at epoch 0.
	wantEq(t, "A's next", a.ok("chat_swarm_next", a.args("wait_secs", 0)).str("state"), "continued")
	wantFenced(t, a.call("chat_swarm_submit", a.args("task_id", t1, "result", "4")), 1)
	wantFenced(t, a.call("chat_swarm_checkpoint", a.args("checkpoint", obj{"summary": "still here"})), 1)
	wantFenced(t, b.call("chat_swarm_next", with(b.args("wait_secs", 0), "epoch", 0)), 1)

	// A task for the worker reaches B.
	t2 := owner.ok("chat_swarm_dispatch", obj{"swarm_id": swarmID, "task_key": "t2", "prompt": "add 3 and 3", "preferred_worker_id": a.id}).str("task", "task_id")
	n := b.ok("chat_swarm_next", b.args("wait_secs", 0))
	if n.str("state") != "task" || n.str("task", "task_id") != t2 {
		t.Fatalf("B's next = %v", n.Data)
	}
	b.ok("chat_swarm_ack", b.args("task_id", t2))
	b.ok("chat_swarm_submit", b.args("task_id", t2, "result", "6"))
	b.ok("chat_swarm_checkpoint", b.args("checkpoint", obj{"summary": "added 3 and 3"}))
	w := status()
	for field, want := range map[string]any{"worker_id": a.id, "epoch": 1, "carrier_state": "active", "carrier_source": p.source,
		"continuity_state": "steady"} {
		wantEq(t, "status worker."+field, w[field], want)
	}

	// The approval path: C asks, the owner approves at the version it
	// read, C's status read binds it at epoch 2.
	c := p.fresh()
	request := with(obj{"swarm_id": swarmID, "worker_id": a.id, "source_epoch": 1, "reason": "a new account"}, keyArg(c)...)
	rq := c.ok("chat_swarm_request_continuation", request)
	cnID := rq.str("continuation", "continuation_id")
	for field, want := range map[string]any{"worker_id": a.id, "path": "approval", "source_epoch": 1, "target_epoch": 2, "state": "pending",
		"version": 1} {
		wantEq(t, "request continuation."+field, dig(rq.Data, "continuation", field), want)
	}
	if rq.Data["replayed"] != nil || rq.Data["ticket"] != nil || rq.Data["capsule"] != nil {
		t.Fatalf("request = %v", rq.Data)
	}
	if r := c.ok("chat_swarm_request_continuation", request); r.Data["replayed"] != true || r.str("continuation", "continuation_id") != cnID {
		t.Fatalf("request again = %v", r.Data)
	}
	cstatus := with(obj{"swarm_id": swarmID}, keyArg(c)...)
	if r := c.ok("chat_swarm_continuation_status", cstatus); r.str("continuation", "state") != "pending" || r.Data["worker"] != nil ||
		r.str("continuation", "continuation_id") != cnID {
		t.Fatalf("status before approval = %v", r.Data)
	}
	approve := obj{"swarm_id": swarmID, "continuation_id": cnID, "expected_version": 2}
	if r := owner.fails("chat_swarm_approve_continuation", approve, "revision_conflict"); r.details()["version"] != 1.0 {
		t.Fatalf("approve at another version = %v", r.Data)
	}
	ap := owner.ok("chat_swarm_approve_continuation", with(approve, "expected_version", 1))
	if ap.str("continuation", "state") != "approved" || ap.num("continuation", "version") != 2 || ap.Data["replayed"] != nil {
		t.Fatalf("approve = %v", ap.Data)
	}
	if r := owner.ok("chat_swarm_approve_continuation", with(approve, "expected_version", 1)); r.Data["replayed"] != true {
		t.Fatalf("approve again = %v", r.Data)
	}
	// Approved, not bound: B is still the carrier (and takes no work).
	wantEq(t, "B's next when approved", b.ok("chat_swarm_next", b.args("wait_secs", 0)).str("state"), "compact_required")
	bound := c.ok("chat_swarm_continuation_status", cstatus)
	if bound.str("continuation", "state") != "bound" || bound.str("worker", "worker_id") != a.id || bound.num("worker", "epoch") != 2 ||
		bound.str("continuation", "bound_at") == "" || bound.Data["replayed"] != nil {
		t.Fatalf("status after approval = %v", bound.Data)
	}
	if dig(bound.Data, "capsule", "authority") != "context_only" || dig(bound.Data, "capsule", "epoch") != 2.0 ||
		dig(bound.Data, "capsule", "checkpoint", "summary") != "added 3 and 3" || !capsuleHash.MatchString(bound.str("continuation", "capsule_hash")) {
		t.Fatalf("the approval path's capsule = %v", bound.Data)
	}
	if r := c.ok("chat_swarm_continuation_status", cstatus); r.Data["replayed"] != true || r.num("worker", "epoch") != 2 {
		t.Fatalf("status again = %v", r.Data)
	}
	c.id, c.epoch = a.id, 2
	wantEq(t, "B's next", b.ok("chat_swarm_next", b.args("wait_secs", 0)).str("state"), "continued")
	wantFenced(t, b.call("chat_swarm_checkpoint", b.args("checkpoint", obj{"summary": "still here"})), 2)
	wantEq(t, "status epoch", status()["epoch"], 2)

	// A revoked ticket binds nothing; the worker stays with C.
	pr3 := owner.ok("chat_swarm_prepare_continuation", obj{"swarm_id": swarmID, "worker_id": a.id, "reason": "never mind", "ttl_secs": 30})
	revoke := obj{"swarm_id": swarmID, "continuation_id": pr3.str("continuation", "continuation_id")}
	if r := owner.ok("chat_swarm_revoke_continuation", revoke); r.str("continuation", "state") != "revoked" || r.num("continuation", "version") != 2 ||
		r.Data["replayed"] != nil || r.Data["ticket"] != nil {
		t.Fatalf("revoke = %v", r.Data)
	}
	if r := owner.ok("chat_swarm_revoke_continuation", revoke); r.Data["replayed"] != true {
		t.Fatalf("revoke again = %v", r.Data)
	}
	d := p.fresh()
	if r := d.fails("chat_swarm_join", ticketJoin(d, pr3.str("ticket")), "ticket_invalid"); r.details()["reason"] != "revoked" {
		t.Fatalf("a revoked ticket = %v", r.Data)
	}
	if w := status(); w["epoch"] != 2.0 || w["continuity_state"] != "steady" {
		t.Fatalf("status after the revoke = %v", w)
	}

	// Context pressure: at epoch 2 the ledger holds the capsule C read;
	// the reserve is added; nothing is exact until the host's figure leads.
	ctxStatus := c.ok("chat_swarm_context_status", c.args())
	capsuleTokens := ctxStatus.num("pressure", "tokens") - 1_000
	if ctxStatus.str("worker_id") != a.id || ctxStatus.num("epoch") != 2 || capsuleTokens <= 0 || dig(ctxStatus.Data, "pressure", "exact") != false ||
		ctxStatus.num("pressure", "budget_tokens") != 10_000 || ctxStatus.num("pressure", "threshold") != 0.5 ||
		ctxStatus.num("pressure", "reserve_tokens") != 1_000 || ctxStatus.Data["compact_required"] != false {
		t.Fatalf("context status = %v", ctxStatus.Data)
	}
	if srcs, _ := dig(ctxStatus.Data, "pressure", "sources").([]any); len(srcs) != 1 || dig(srcs[0], "source") != "capsule" ||
		dig(srcs[0], "tokens") != capsuleTokens || dig(srcs[0], "at") == nil {
		t.Fatalf("sources = %v", srcs)
	}
	report := func(tokens int, source string) result {
		t.Helper()
		return c.ok("chat_swarm_report_context", c.args("tokens", tokens, "source", source, "basis", "the host's counter"))
	}
	pressure := func(r result, tokens float64, exact, compact bool) {
		t.Helper()
		if r.num("pressure", "tokens") != tokens || dig(r.Data, "pressure", "exact") != exact || r.Data["compact_required"] != compact ||
			r.num("pressure", "ratio") != tokens/10_000 || r.num("epoch") != 2 {
			t.Fatalf("pressure = %v, want tokens %v exact %v compact_required %v", r.Data, tokens, exact, compact)
		}
	}
	pressure(report(2_000, "estimate"), 3_000, false, false)
	r := report(2_500, "host_exact")
	pressure(r, 3_500, true, false)
	var basis bool
	for _, s := range dig(r.Data, "pressure", "sources").([]any) {
		basis = basis || dig(s, "source") == "host_exact" && dig(s, "tokens") == 2_500.0 && dig(s, "basis") == "the host's counter"
	}
	if !basis {
		t.Fatalf("sources = %v", dig(r.Data, "pressure", "sources"))
	}
	pressure(report(1_000, "estimate"), 3_500, true, false) // a smaller figure lowers nothing
	pressure(report(100, "host_exact"), 3_500, true, false)
	wantEq(t, "C's next below the threshold", c.ok("chat_swarm_next", c.args("wait_secs", 0)).str("state"), "idle")
	pressure(report(4_000, "estimate"), 5_000, false, true) // ratio 0.5: the threshold
	pressure(c.ok("chat_swarm_context_status", c.args()), 5_000, false, true)
	wantEq(t, "C's next over the threshold", c.ok("chat_swarm_next", c.args("wait_secs", 0)).str("state"), "compact_required")
	wantEq(t, "status continuity_state", status()["continuity_state"], "compact_required")
	// The owner sees each worker's pressure in chat_swarm_status.
	if p, _ := status()["pressure"].(map[string]any); p == nil || p["tokens"] != 5_000.0 || p["ratio"] != 0.5 || p["exact"] != false {
		t.Fatalf("status pressure = %v", status())
	}
}
