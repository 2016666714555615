package mcpserver_test

import (
	"strings"
	"testing"
)

// loopParty is who takes part in a swarm's loop: the owner's connection
// and the workers', and how the workers' carriers are told apart.
type loopParty struct {
	owner *client
	a, b  *worker
	// spare is a third carrier: the full swarm refuses it.
	spare *worker
	// intruder is a carrier other than a's, on a connection of its own
	// (stateful) or on a's connection with another key (stateless).
	intruder *worker
	// again, when set, is a's carrier on another connection (the same
	// carrier_key): it acts as a.
	again *worker
	// source is the carrier_source the workers show.
	source string
}

// TestSwarmLoop: a swarm's whole life over stateful HTTP sessions, each
// session a carrier: create, invite, join, dispatch, next, ack,
// checkpoint, submit, fail, reconcile, cancel, status, collect, close.
func TestSwarmLoop(t *testing.T) {
	f := newFixture(t)
	ownerTok, aTok, bTok := f.token("ada", ownerScopes...), f.token("ada", workerScopes...), f.memberToken("bea", "ada", workerScopes...)
	swarmLoop(t, loopParty{
		owner:    f.connectAt(ownerTok, stateful).at(t),
		a:        &worker{c: f.connectAt(aTok, stateful).at(t)},
		b:        &worker{c: f.connectAt(bTok, stateful).at(t)},
		spare:    &worker{c: f.connectAt(aTok, stateful).at(t)},
		intruder: &worker{c: f.connectAt(aTok, stateful).at(t)},
		source:   "mcp_session",
	})
}

// TestSwarmStateless: the same loop on the stateless protocol, where a
// worker is only its carrier_key: the same key from another connection is
// the same carrier, another key on the same connection is not.
func TestSwarmStateless(t *testing.T) {
	f := newFixture(t)
	ownerTok, aTok, bTok := f.token("ada", ownerScopes...), f.token("ada", workerScopes...), f.memberToken("bea", "ada", workerScopes...)
	a := &worker{c: f.connectAt(aTok, stateless).at(t), key: carrierKey()}
	swarmLoop(t, loopParty{
		owner:    f.connectAt(ownerTok, stateless).at(t),
		a:        a,
		b:        &worker{c: f.connectAt(bTok, stateless).at(t), key: carrierKey()},
		spare:    &worker{c: a.c, key: carrierKey()},
		intruder: &worker{c: a.c, key: carrierKey()},
		again:    &worker{c: f.connectAt(aTok, stateless).at(t), key: a.key},
		source:   "carrier_key",
	})
}

// swarmLoop runs a swarm's whole life with p, checking every result.
func swarmLoop(t *testing.T, p loopParty) {
	owner, a, b := p.owner, p.a, p.b

	cr := owner.ok("chat_swarm_create", obj{"worker_limit": 2})
	swarmID, invite := cr.str("swarm", "swarm_id"), cr.str("invite")
	if !strings.HasPrefix(swarmID, "swm_") || !strings.HasPrefix(invite, "cto_inv_") || cr.str("invite_expires_at") == "" ||
		cr.str("swarm", "invite_expires_at") != cr.str("invite_expires_at") {
		t.Fatalf("create = %v", cr.Data)
	}
	wantEq(t, "swarm state", cr.str("swarm", "state"), "active")
	wantEq(t, "worker_limit", cr.num("swarm", "worker_limit"), 2)
	wantEq(t, "lease_ttl_secs", cr.num("swarm", "policy", "lease_ttl_secs"), 300)

	// Join, and join again: the same worker, replayed.
	j := a.join(swarmID, invite, "alpha")
	if !strings.HasPrefix(a.id, "wkr_") || j.Data["replayed"] != nil {
		t.Fatalf("join = %v", j.Data)
	}
	for field, want := range map[string]any{"swarm_id": swarmID, "label": "alpha", "epoch": 0, "state": "idle", "carrier_state": "active",
		"carrier_source": p.source, "continuity_state": "steady"} {
		wantEq(t, "worker."+field, dig(j.Data, "worker", field), want)
	}
	again := a.ok("chat_swarm_join", with(obj{"swarm_id": swarmID, "invite": invite, "label": "alpha"}, keyArg(a)...))
	if again.Data["replayed"] != true || again.str("worker", "worker_id") != a.id {
		t.Fatalf("join replay = %v", again.Data)
	}

	// A new invite: the first one admits nobody any more.
	inv := owner.ok("chat_swarm_invite", obj{"swarm_id": swarmID})
	invite2 := inv.str("invite")
	if invite2 == invite || inv.str("swarm", "swarm_id") != swarmID {
		t.Fatalf("invite = %v", inv.Data)
	}
	b.fails("chat_swarm_join", with(obj{"swarm_id": swarmID, "invite": invite, "label": "beta"}, keyArg(b)...), "not_found")
	if r := a.ok("chat_swarm_join", with(obj{"swarm_id": swarmID, "invite": invite, "label": "alpha"}, keyArg(a)...)); r.Data["replayed"] != true ||
		r.str("worker", "worker_id") != a.id {
		t.Fatalf("join replay with the replaced invite = %v", r.Data)
	}
	b.join(swarmID, invite2, "beta")
	if full := p.spare.fails("chat_swarm_join", with(obj{"swarm_id": swarmID, "invite": invite2, "label": "gamma"}, keyArg(p.spare)...),
		"capacity_full"); full.details()["limit"] != 2.0 {
		t.Fatalf("capacity_full = %v", full.Data)
	}

	// Dispatch, replay, conflict; the swarm does not close with it queued.
	dispatch := obj{"swarm_id": swarmID, "task_key": "t1", "prompt": "add 2 and 2", "payload": obj{"n": 2}}
	d := owner.ok("chat_swarm_dispatch", dispatch)
	t1 := d.str("task", "task_id")
	if !strings.HasPrefix(t1, "tsk_") || d.str("task", "state") != "queued" || d.num("task", "attempt") != 0 ||
		d.str("task", "task_key") != "t1" || d.Data["replayed"] != nil || dig(d.Data, "task", "prompt") != nil {
		t.Fatalf("dispatch = %v", d.Data)
	}
	if r := owner.ok("chat_swarm_dispatch", dispatch); r.Data["replayed"] != true || r.str("task", "task_id") != t1 {
		t.Fatalf("dispatch replay = %v", r.Data)
	}
	if r := owner.fails("chat_swarm_dispatch", with(dispatch, "prompt", "add 3 and 3"), "conflict"); r.details()["task_id"] != t1 {
		t.Fatalf("dispatch conflict = %v", r.Data)
	}
	if r := owner.fails("chat_swarm_close", obj{"swarm_id": swarmID}, "invalid_state"); dig(r.details(), "open", "queued") != 1.0 {
		t.Fatalf("close with a queued task = %v", r.Data)
	}

	// A claims t1, and gets it again until it submits; B finds nothing.
	n := a.ok("chat_swarm_next", a.args("wait_secs", 0))
	att1 := n.str("task", "attempt_id")
	if n.str("state") != "task" || n.str("task", "task_id") != t1 || !strings.HasPrefix(att1, "att_") || n.str("task", "prompt") != "add 2 and 2" ||
		dig(n.Data, "task", "payload", "n") != 2.0 || n.str("task", "state") != "claimed" || n.num("task", "attempt") != 1 ||
		n.str("task", "worker_id") != a.id || n.Data["redelivery"] != nil {
		t.Fatalf("next = %v", n.Data)
	}
	if r := a.ok("chat_swarm_next", a.args("wait_secs", 0)); r.Data["redelivery"] != true || r.str("task", "attempt_id") != att1 {
		t.Fatalf("redelivery = %v", r.Data)
	}
	wantEq(t, "B's next", b.ok("chat_swarm_next", b.args("wait_secs", 0)).str("state"), "idle")

	// Another carrier cannot act as A, nor A at another epoch.
	intruder := &worker{c: p.intruder.c, id: a.id, epoch: a.epoch, key: p.intruder.key}
	stale := &worker{c: a.c, id: a.id, epoch: a.epoch + 1, key: a.key}
	for name, args := range map[string]func(w *worker) obj{
		"chat_swarm_next":       func(w *worker) obj { return w.args("wait_secs", 0) },
		"chat_swarm_ack":        func(w *worker) obj { return w.args("task_id", t1) },
		"chat_swarm_checkpoint": func(w *worker) obj { return w.args("checkpoint", obj{"summary": "mine now"}) },
		"chat_swarm_submit":     func(w *worker) obj { return w.args("task_id", t1, "result", "5") },
		"chat_swarm_fail":       func(w *worker) obj { return w.args("task_id", t1, "reason", "taken over", "effect", "none") },
	} {
		wantFenced(t, intruder.call(name, args(intruder)), 0)
		wantFenced(t, stale.call(name, args(stale)), 0)
	}

	// A starts (from its other connection, when it has one), checkpoints,
	// and submits; the replays are inert.
	actor := a
	if p.again != nil {
		actor = &worker{c: p.again.c, id: a.id, epoch: a.epoch, key: p.again.key}
	}
	ack := actor.ok("chat_swarm_ack", actor.args("task_id", t1))
	if ack.str("task", "state") != "running" || ack.str("task", "task_id") != t1 || ack.Data["replayed"] != nil {
		t.Fatalf("ack = %v", ack.Data)
	}
	if r := a.ok("chat_swarm_ack", a.args("task_id", t1)); r.Data["replayed"] != true {
		t.Fatalf("ack replay = %v", r.Data)
	}
	cp := actor.ok("chat_swarm_checkpoint", actor.args("checkpoint", obj{"summary": "adding", "next": "submit 4"}))
	if cp.str("worker", "worker_id") != a.id || cp.str("worker", "checkpoint_at") == "" || cp.str("worker", "current_task_id") != t1 ||
		cp.str("worker", "state") != "busy" {
		t.Fatalf("checkpoint = %v", cp.Data)
	}
	sub := a.ok("chat_swarm_submit", a.args("task_id", t1, "result", "4"))
	if sub.str("task", "state") != "result_ready" || sub.Data["replayed"] != nil || dig(sub.Data, "task", "result") != nil {
		t.Fatalf("submit = %v", sub.Data)
	}
	if r := actor.ok("chat_swarm_submit", actor.args("task_id", t1, "result", "4")); r.Data["replayed"] != true || r.str("task", "state") != "result_ready" {
		t.Fatalf("submit replay = %v", r.Data)
	}
	a.fails("chat_swarm_submit", a.args("task_id", t1, "result", "5"), "terminal_immutable")
	wantEq(t, "A's next after submit", a.ok("chat_swarm_next", a.args("wait_secs", 0)).str("state"), "idle")

	// B fails t2 with no effect; fails t3 not knowing, which waits for the
	// owner's no_effect evidence, is requeued as a second attempt and done.
	t2 := owner.ok("chat_swarm_dispatch", obj{"swarm_id": swarmID, "task_key": "t2", "prompt": "impossible", "preferred_worker_id": b.id}).str("task", "task_id")
	wantEq(t, "B's task", b.ok("chat_swarm_next", b.args("wait_secs", 0)).str("task", "task_id"), t2)
	fail := obj{"task_id": t2, "reason": "cannot be done", "effect": "none"}
	if r := b.ok("chat_swarm_fail", b.args(flat(fail)...)); r.str("task", "state") != "failed" || r.str("task", "reason") != "worker_failed" || r.Data["replayed"] != nil {
		t.Fatalf("fail = %v", r.Data)
	}
	if r := b.ok("chat_swarm_fail", b.args(flat(fail)...)); r.Data["replayed"] != true {
		t.Fatalf("fail replay = %v", r.Data)
	}
	t3 := owner.ok("chat_swarm_dispatch", obj{"swarm_id": swarmID, "task_key": "t3", "prompt": "flaky"}).str("task", "task_id")
	n3 := b.ok("chat_swarm_next", b.args("wait_secs", 0))
	att3 := n3.str("task", "attempt_id")
	wantEq(t, "B's next task", n3.str("task", "task_id"), t3)
	b.ok("chat_swarm_ack", b.args("task_id", t3))
	if r := b.ok("chat_swarm_fail", b.args("task_id", t3, "reason", "crashed midway", "effect", "unknown")); r.str("task", "state") != "reconcile_required" ||
		r.str("task", "reason") != "effect_unknown" {
		t.Fatalf("fail unknown = %v", r.Data)
	}
	wantEq(t, "B's next with t3 in doubt", b.ok("chat_swarm_next", b.args("wait_secs", 0)).str("state"), "idle")
	reconcile := obj{"swarm_id": swarmID, "task_id": t3, "attempt_id": att3, "decision": "requeue",
		"evidence": obj{"disposition": "no_effect", "ref": "the repository is unchanged"}}
	if r := owner.ok("chat_swarm_reconcile", reconcile); r.str("task", "state") != "queued" || r.Data["replayed"] != nil {
		t.Fatalf("reconcile = %v", r.Data)
	}
	if r := owner.ok("chat_swarm_reconcile", reconcile); r.Data["replayed"] != true {
		t.Fatalf("reconcile replay = %v", r.Data)
	}
	n3 = b.ok("chat_swarm_next", b.args("wait_secs", 0))
	if n3.str("task", "task_id") != t3 || n3.num("task", "attempt") != 2 || n3.str("task", "attempt_id") == att3 {
		t.Fatalf("t3 again = %v", n3.Data)
	}
	b.ok("chat_swarm_submit", b.args("task_id", t3, "result", "done on the second try"))

	// A queued task is cancelled; cancelling again is inert.
	t4 := owner.ok("chat_swarm_dispatch", obj{"swarm_id": swarmID, "task_key": "t4", "prompt": "never mind"}).str("task", "task_id")
	if r := owner.ok("chat_swarm_cancel", obj{"swarm_id": swarmID, "task_id": t4}); r.str("task", "state") != "cancelled" || r.Data["replayed"] != nil {
		t.Fatalf("cancel = %v", r.Data)
	}
	if r := owner.ok("chat_swarm_cancel", obj{"swarm_id": swarmID, "task_id": t4}); r.Data["replayed"] != true {
		t.Fatalf("cancel replay = %v", r.Data)
	}

	// The owner sees the workers and the counts, and one task with its
	// result.
	st := owner.ok("chat_swarm_status", obj{"swarm_id": swarmID})
	ws, _ := st.Data["workers"].([]any)
	if len(ws) != 2 || dig(ws[0], "worker_id") != a.id || dig(ws[1], "worker_id") != b.id || dig(ws[1], "carrier_source") != p.source ||
		dig(ws[0], "epoch") != 0.0 || dig(ws[0], "checkpoint_at") == nil {
		t.Fatalf("status workers = %v", ws)
	}
	wantEq(t, "task_counts", st.Data["task_counts"], map[string]any{"result_ready": 2.0, "failed": 1.0, "cancelled": 1.0})
	one := owner.ok("chat_swarm_status", obj{"swarm_id": swarmID, "task_id": t1})
	if one.str("task", "result") != "4" || one.str("task", "attempt_id") != att1 || one.str("task", "worker_id") != a.id || one.Data["workers"] != nil {
		t.Fatalf("status of t1 = %v", one.Data)
	}

	// Collect, and collect again.
	for _, task := range []string{t1, t3} {
		c := owner.ok("chat_swarm_collect", obj{"swarm_id": swarmID, "task_id": task})
		if c.str("task", "state") != "collected" || c.str("task", "result") == "" || c.Data["replayed"] != nil {
			t.Fatalf("collect = %v", c.Data)
		}
	}
	if c := owner.ok("chat_swarm_collect", obj{"swarm_id": swarmID, "task_id": t1}); c.Data["replayed"] != true || c.str("task", "result") != "4" {
		t.Fatalf("collect replay = %v", c.Data)
	}

	// Close, and close again; the workers are told, and nothing more
	// comes in.
	cl := owner.ok("chat_swarm_close", obj{"swarm_id": swarmID})
	if cl.str("swarm", "state") != "closed" || cl.str("swarm", "invite_expires_at") != "" || cl.Data["replayed"] != nil {
		t.Fatalf("close = %v", cl.Data)
	}
	if r := owner.ok("chat_swarm_close", obj{"swarm_id": swarmID}); r.Data["replayed"] != true || r.str("swarm", "state") != "closed" {
		t.Fatalf("close replay = %v", r.Data)
	}
	wantEq(t, "A's next when closed", a.ok("chat_swarm_next", a.args("wait_secs", 0)).str("state"), "closed")
	owner.fails("chat_swarm_dispatch", obj{"swarm_id": swarmID, "task_key": "t5", "prompt": "late"}, "invalid_state")
	owner.fails("chat_swarm_invite", obj{"swarm_id": swarmID}, "invalid_state")
	p.spare.fails("chat_swarm_join", with(obj{"swarm_id": swarmID, "invite": invite2, "label": "gamma"}, keyArg(p.spare)...), "not_found")
}

// keyArg is w's carrier_key as with's pairs (none without a key).
func keyArg(w *worker) []any {
	if w.key == "" {
		return nil
	}
	return []any{"carrier_key", w.key}
}

// flat turns arguments into with's pairs.
func flat(a obj) []any {
	var kv []any
	for k, v := range a {
		kv = append(kv, k, v)
	}
	return kv
}
