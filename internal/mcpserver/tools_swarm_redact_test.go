package mcpserver_test

import (
	"strings"
	"testing"
)

// TestSwarmRedacted: a credential a caller puts in what a swarm shows (a
// task key, prompt, payload, label, result, failure reason, evidence)
// reaches no result, worker's or owner's; the task key still replays.
func TestSwarmRedacted(t *testing.T) {
	f := newFixture(t)
	owner := f.connectAt(f.token("ada", ownerScopes...), stateful).at(t)
	w := &worker{c: f.connectAt(f.token("ada", workerScopes...), stateful).at(t)}
	secret := "sk-proj-abcdefghijklmnopqrstuvwx"
	var shown []result
	see := func(r result) result { shown = append(shown, r); return r }

	cr := owner.ok("chat_swarm_create", obj{"worker_limit": 1})
	swarmID := cr.str("swarm", "swarm_id")
	see(w.join(swarmID, cr.str("invite"), "label "+secret))
	dispatch := obj{"swarm_id": swarmID, "task_key": "key " + secret, "prompt": "use " + secret, "payload": obj{"api_key": "abc123", "note": secret}}
	task := see(owner.ok("chat_swarm_dispatch", dispatch)).str("task", "task_id")
	if r := see(owner.ok("chat_swarm_dispatch", dispatch)); r.Data["replayed"] != true || r.str("task", "task_id") != task {
		t.Fatalf("dispatch replay under a key with a credential = %v", r.Data)
	}
	see(w.ok("chat_swarm_next", w.args("wait_secs", 0)))
	see(w.ok("chat_swarm_submit", w.args("task_id", task, "result", "the key is "+secret)))
	see(owner.ok("chat_swarm_collect", obj{"swarm_id": swarmID, "task_id": task}))

	failed := see(owner.ok("chat_swarm_dispatch", obj{"swarm_id": swarmID, "task_key": "f", "prompt": "p"})).str("task", "task_id")
	see(w.ok("chat_swarm_next", w.args("wait_secs", 0)))
	see(w.ok("chat_swarm_fail", w.args("task_id", failed, "reason", "login with "+secret+" failed", "effect", "unknown")))
	attempt := see(owner.ok("chat_swarm_status", obj{"swarm_id": swarmID, "task_id": failed})).str("task", "attempt_id")
	see(owner.ok("chat_swarm_reconcile", obj{"swarm_id": swarmID, "task_id": failed, "attempt_id": attempt, "decision": "failed",
		"evidence": obj{"disposition": "applied", "ref": "the log shows " + secret}}))
	see(owner.ok("chat_swarm_status", obj{"swarm_id": swarmID, "task_id": failed}))
	see(owner.ok("chat_swarm_status", obj{"swarm_id": swarmID}))

	for _, r := range shown {
		if s := r.Text + mustJSON(t, r.Data); strings.Contains(s, "abcdefghijklmnop") || strings.Contains(s, "abc123") {
			t.Errorf("a credential is shown: %s", s)
		}
	}
}
