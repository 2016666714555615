package mcpserver_test

import (
	"fmt"
	"testing"
)

// TestSwarmShortLoop: the one-call protocol over the tools, on stateful
// sessions and on the stateless protocol: the owner dispatches a batch in
// one call, a worker takes the first task with next(ack) and then each
// next one with the submit of the last (submit's next), the owner collects
// the ready results in one call (its keyed replay returns the same
// tasks). Replays of the new forms are inert; leave and remove_worker
// retire a worker each, its slot freed, and status says why; a join with
// a ticket may name the worker's own label.
func TestSwarmShortLoop(t *testing.T) {
	for _, version := range []string{stateful, stateless} {
		t.Run(version, func(t *testing.T) {
			f := newFixture(t)
			ownerTok, wTok := f.token("ada", ownerScopes...), f.token("ada", workerScopes...)
			key := func() string {
				if version == stateless {
					return carrierKey()
				}
				return ""
			}
			owner := f.connectAt(ownerTok, version).at(t)
			a := &worker{c: f.connectAt(wTok, version).at(t), key: key()}
			b := &worker{c: f.connectAt(wTok, version).at(t), key: key()}
			shortLoop(t, owner, a, b, func() *worker { return &worker{c: f.connectAt(wTok, version).at(t), key: key()} })
		})
	}
}

func shortLoop(t *testing.T, owner *client, a, b *worker, fresh func() *worker) {
	cr := owner.ok("chat_swarm_create", obj{"worker_limit": 2, "policy": obj{"worker_idle_ttl_secs": 600}})
	swarmID, invite := cr.str("swarm", "swarm_id"), cr.str("invite")
	wantEq(t, "worker_idle_ttl_secs", cr.num("swarm", "policy", "worker_idle_ttl_secs"), 600)
	a.join(swarmID, invite, "alpha")

	// One call dispatches three tasks; the same call again replays them.
	tasks := []obj{{"task_key": "t1", "prompt": "one"}, {"task_key": "t2", "prompt": "two", "payload": obj{"n": 2}}, {"task_key": "t3", "prompt": "three"}}
	d := owner.ok("chat_swarm_dispatch", obj{"swarm_id": swarmID, "tasks": tasks})
	list := d.Data["tasks"].([]any)
	if len(list) != 3 || d.Data["replayed"] != nil || d.Data["task"] != nil {
		t.Fatalf("batch dispatch = %v", d.Data)
	}
	ids := make([]string, 3)
	for i, x := range list {
		x := x.(map[string]any)
		ids[i] = x["task_id"].(string)
		if x["task_key"] != tasks[i]["task_key"] || x["state"] != "queued" {
			t.Fatalf("task %d = %v", i, x)
		}
	}
	if again := owner.ok("chat_swarm_dispatch", obj{"swarm_id": swarmID, "tasks": tasks}); again.Data["replayed"] != true ||
		again.Data["tasks"].([]any)[0].(map[string]any)["task_id"] != ids[0] {
		t.Fatalf("batch replay = %v", again.Data)
	}

	// The worker: next(ack), then submit with next for each.
	n := a.ok("chat_swarm_next", a.args("ack", true, "wait_secs", 0))
	if n.str("state") != "task" || n.str("task", "task_id") != ids[0] || n.str("task", "state") != "running" || n.str("task", "prompt") != "one" {
		t.Fatalf("next(ack) = %v", n.Data)
	}
	for i := range 3 {
		args := a.args("task_id", ids[i], "result", fmt.Sprint("R", i+1), "next", obj{"ack": true, "wait_secs": 0})
		s := a.ok("chat_swarm_submit", args)
		if s.str("task", "state") != "result_ready" || s.Data["replayed"] != nil {
			t.Fatalf("submit %d = %v", i, s.Data)
		}
		if i == 2 {
			if s.str("next", "state") != "idle" || s.Data["next_error"] != nil {
				t.Fatalf("the last submit's next = %v", s.Data)
			}
			continue
		}
		if s.str("next", "state") != "task" || s.str("next", "task", "task_id") != ids[i+1] || s.str("next", "task", "state") != "running" {
			t.Fatalf("submit %d's next = %v", i, s.Data)
		}
		if i == 0 { // t2, with its payload
			wantEq(t, "payload", dig(s.Data, "next", "task", "payload", "n"), 2)
		}
		// The identical replay (an answer lost): the same next task.
		r := a.ok("chat_swarm_submit", args)
		if r.Data["replayed"] != true || r.str("next", "task", "task_id") != ids[i+1] || r.Data["next"].(map[string]any)["redelivery"] != true {
			t.Fatalf("submit %d replay = %v", i, r.Data)
		}
	}

	// The owner collects the three ready results in one call; its keyed
	// replay returns the same; nothing is left.
	c := owner.ok("chat_swarm_collect", obj{"swarm_id": swarmID, "wait_secs": 1, "limit": 10, "idempotency_key": "c1"})
	got := c.Data["tasks"].([]any)
	if len(got) != 3 || c.Data["replayed"] != nil {
		t.Fatalf("collect = %v", c.Data)
	}
	for i, x := range got {
		x := x.(map[string]any)
		if x["task_id"] != ids[i] || x["state"] != "collected" || x["result"] != fmt.Sprint("R", i+1) {
			t.Fatalf("collected %d = %v", i, x)
		}
	}
	if r := owner.ok("chat_swarm_collect", obj{"swarm_id": swarmID, "wait_secs": 1, "limit": 10, "idempotency_key": "c1"}); r.Data["replayed"] != true ||
		len(r.Data["tasks"].([]any)) != 3 {
		t.Fatalf("collect replay = %v", r.Data)
	}
	if r := owner.ok("chat_swarm_collect", obj{"swarm_id": swarmID}); r.Data["tasks"] != nil {
		t.Fatalf("collect of nothing ready = %v", r.Data)
	}
	if r := owner.ok("chat_swarm_collect", obj{"swarm_id": swarmID, "task_id": ids[0]}); r.Data["replayed"] != true || r.str("task", "result") != "R1" {
		t.Fatalf("collect of one collected task = %v", r.Data)
	}

	// A checkpoint, a ticket, and a new carrier naming the worker's own
	// label: the same worker at epoch 1. Another label is refused.
	a.ok("chat_swarm_checkpoint", a.args("checkpoint", obj{"summary": "three done"}))
	p := owner.ok("chat_swarm_prepare_continuation", obj{"swarm_id": swarmID, "worker_id": a.id, "reason": "fresh context"})
	a2 := fresh()
	join := obj{"swarm_id": swarmID, "continuation_ticket": p.str("ticket"), "label": "someone"}
	if a2.key != "" {
		join["carrier_key"] = a2.key
	}
	if r := a2.fails("chat_swarm_join", join, "invalid_input"); r.details()["field"] != "label" {
		t.Fatalf("a ticket with another label = %v", r.Data)
	}
	join["label"] = "alpha"
	j := a2.ok("chat_swarm_join", join)
	a2.id, a2.epoch = j.str("worker", "worker_id"), j.num("worker", "epoch")
	if a2.id != a.id || a2.epoch != 1 || j.str("worker", "label") != "alpha" {
		t.Fatalf("the continuing join = %v", j.Data)
	}

	// b fills the swarm; a leaves (and leaves again: a replay); c takes its
	// slot; the owner removes c; status says why each went.
	b.join(swarmID, invite, "beta")
	l := a2.ok("chat_swarm_leave", a2.args())
	if l.str("worker", "retired_reason") != "left" || l.str("worker", "carrier_state") != "retired" || l.Data["replayed"] != nil {
		t.Fatalf("leave = %v", l.Data)
	}
	if r := a2.ok("chat_swarm_leave", a2.args()); r.Data["replayed"] != true {
		t.Fatalf("leave again = %v", r.Data)
	}
	if r := a2.fails("chat_swarm_next", a2.args("wait_secs", 0), "carrier_fenced"); r.details()["retired_reason"] != "left" {
		t.Fatalf("next after leaving = %v", r.Data)
	}
	c3 := fresh()
	c3.join(swarmID, invite, "gamma")
	rm := owner.ok("chat_swarm_remove_worker", obj{"swarm_id": swarmID, "worker_id": c3.id})
	if rm.str("worker", "retired_reason") != "removed" || rm.Data["replayed"] != nil {
		t.Fatalf("remove = %v", rm.Data)
	}
	if r := owner.ok("chat_swarm_remove_worker", obj{"swarm_id": swarmID, "worker_id": c3.id}); r.Data["replayed"] != true {
		t.Fatalf("remove again = %v", r.Data)
	}
	st := owner.ok("chat_swarm_status", obj{"swarm_id": swarmID})
	why := map[string]any{}
	for _, w := range st.Data["workers"].([]any) {
		w := w.(map[string]any)
		why[w["label"].(string)] = w["retired_reason"]
	}
	if why["alpha"] != "left" || why["gamma"] != "removed" || why["beta"] != nil || len(why) != 3 {
		t.Fatalf("status shows the workers retired as %v", why)
	}
	owner.ok("chat_swarm_close", obj{"swarm_id": swarmID})
	// A submit with next whose next half says the swarm closed: b never had
	// a task, so its next (plain) says closed.
	if r := b.ok("chat_swarm_next", b.args("wait_secs", 0, "ack", true)); r.str("state") != "closed" {
		t.Fatalf("next in a closed swarm = %v", r.Data)
	}
}
