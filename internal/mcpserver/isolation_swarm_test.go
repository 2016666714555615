package mcpserver_test

import (
	"bytes"
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/hook"
	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/stores"
	carrierworker "github.com/continuo-dev/continuo/internal/worker"
)

// export is every row of every table as continuo export writes it: equal
// exports are the same database, byte for byte.
func (f *fixture) export() []byte {
	f.t.Helper()
	var b bytes.Buffer
	if _, err := store.Export(f.ctx, f.db, store.SchemaVersion, &b); err != nil {
		f.t.Fatal(err)
	}
	return b.Bytes()
}

// someID matches the IDs a result may name.
var someID = regexp.MustCompile(`\b[a-z]{3}_[0-9A-Z]{10,}\b`)

// masked is a tool result as its caller reads it, with the IDs masked.
func masked(t *testing.T, r result) string {
	return someID.ReplaceAllString(mustJSON(t, r.Data)+"\n"+r.Text, "ID")
}

// TestSwarmGroupIsolation (issue 23): another group's principal, with a
// valid token holding swarm:own and swarm:work and a swarm of its own, is
// given every identifier and secret of this group's swarm — the swarm,
// its invite, its workers and their carrier keys, tasks, an attempt, a
// pending ticket and a pending request — and calls every Chat Swarm tool
// with them, over both protocols, and runs `continuo worker`'s join with
// them. Each call is answered exactly as the same call naming an unknown
// object is (not_found, word for word but for the IDs), the database is
// byte for byte what it was, and afterwards the rightful carrier redeems
// the ticket. On both engines.
func TestSwarmGroupIsolation(t *testing.T) { stores.Each(t, testSwarmGroupIsolation) }

func testSwarmGroupIsolation(t *testing.T) {
	f := newFixtureWith(t, fixtureOptions{engines: true})
	owner := f.connectAt(f.token("ada", ownerScopes...), stateful).at(t)
	crew := f.connectAt(f.memberToken("ava", "ada", workerScopes...), stateless).at(t)
	member := func() *worker { return &worker{c: crew, key: carrierKey()} }

	// Group A's swarm: X checkpointed with a pending ticket, Y holding a
	// task, Z asked to be continued, U's task in doubt, V's result ready,
	// a task queued.
	cr := owner.ok("chat_swarm_create", obj{"worker_limit": 8})
	aID, invite := cr.str("swarm", "swarm_id"), cr.str("invite")
	dispatch := func(key, prefer string) string {
		return owner.ok("chat_swarm_dispatch", obj{"swarm_id": aID, "task_key": key, "prompt": "do " + key, "preferred_worker_id": prefer}).str("task", "task_id")
	}
	checkpointed := func(label string) *worker {
		x := member()
		x.join(aID, invite, label)
		x.ok("chat_swarm_checkpoint", x.args("checkpoint", obj{"summary": label + " at work"}))
		return x
	}
	x := checkpointed("x")
	prepared := owner.ok("chat_swarm_prepare_continuation", obj{"swarm_id": aID, "worker_id": x.id, "reason": "context full"})
	ticket, ticketCn := prepared.str("ticket"), prepared.str("continuation", "continuation_id")
	y := member()
	y.join(aID, invite, "y")
	held := dispatch("held", y.id)
	y.ok("chat_swarm_next", y.args("wait_secs", 0))
	z := checkpointed("z")
	asked := crew.ok("chat_swarm_request_continuation", obj{"swarm_id": aID, "worker_id": z.id, "source_epoch": 0, "carrier_key": carrierKey()})
	requestCn, requestV := asked.str("continuation", "continuation_id"), asked.num("continuation", "version")
	u := member()
	u.join(aID, invite, "u")
	doubt := dispatch("doubt", u.id)
	attempt := u.ok("chat_swarm_next", u.args("wait_secs", 0)).str("task", "attempt_id")
	u.ok("chat_swarm_fail", u.args("task_id", doubt, "reason", "crashed", "effect", "unknown"))
	v := member()
	v.join(aID, invite, "v")
	ready := dispatch("ready", v.id)
	v.ok("chat_swarm_next", v.args("wait_secs", 0))
	v.ok("chat_swarm_submit", v.args("task_id", ready, "result", "done"))
	queued := dispatch("queued", "")

	// Group B: a valid token with every swarm scope, a swarm and a bound
	// worker of its own.
	bobTok := f.token("bob", continuo.ScopeSwarmOwn, continuo.ScopeSwarmWork)
	bob := f.connectAt(bobTok, stateful).at(t)
	bobSl := f.connectAt(bobTok, stateless).at(t)
	bcr := bob.ok("chat_swarm_create", obj{"worker_limit": 2})
	bID := bcr.str("swarm", "swarm_id")
	bw := &worker{c: bobSl, key: carrierKey()}
	bw.join(bID, bcr.str("invite"), "b")
	bTask := bob.ok("chat_swarm_dispatch", obj{"swarm_id": bID, "task_key": "bt", "prompt": "b's"}).str("task", "task_id")

	unknown := func(prefix string) string { return continuo.NewID(prefix, time.Now()) }
	noSwarm, noWorker, noTask, noCn := unknown(continuo.PrefixSwarm), unknown(continuo.PrefixWorker), unknown(continuo.PrefixTask),
		unknown(continuo.PrefixContinuation)
	noTicket := "cto_cnt_" + carrierKey()
	key := func() string { return carrierKey() } // a new conversation of B's
	evidence := obj{"disposition": "unknown", "ref": "b says so"}
	// as B's worker, stateless, naming worker w with carrier key k.
	as := func(w string, k string, kv ...any) obj {
		return with(obj{"worker_id": w, "epoch": 0, "carrier_key": k}, kv...)
	}

	type tc struct {
		tool         string
		name         string
		by           *client // bob (owner tools) unless set
		theirs, none obj
		code         string // not_found unless set
	}
	cases := []tc{
		{tool: "chat_swarm_invite", theirs: obj{"swarm_id": aID}, none: obj{"swarm_id": noSwarm}},
		{tool: "chat_swarm_join", name: "invite", theirs: obj{"swarm_id": aID, "invite": invite, "label": "b"},
			none: obj{"swarm_id": noSwarm, "invite": invite, "label": "b"}},
		{tool: "chat_swarm_join", name: "invite, stateless", by: bobSl, theirs: obj{"swarm_id": aID, "invite": invite, "label": "b", "carrier_key": key()},
			none: obj{"swarm_id": noSwarm, "invite": invite, "label": "b", "carrier_key": key()}},
		{tool: "chat_swarm_join", name: "invite from B's bound carrier", by: bobSl, theirs: obj{"swarm_id": aID, "invite": invite, "label": "b", "carrier_key": bw.key},
			none: obj{"swarm_id": noSwarm, "invite": invite, "label": "b", "carrier_key": bw.key}},
		{tool: "chat_swarm_join", name: "ticket", theirs: obj{"swarm_id": aID, "continuation_ticket": ticket},
			none: obj{"swarm_id": aID, "continuation_ticket": noTicket}},
		{tool: "chat_swarm_join", name: "ticket, stateless", by: bobSl, theirs: obj{"swarm_id": aID, "continuation_ticket": ticket, "carrier_key": key()},
			none: obj{"swarm_id": aID, "continuation_ticket": noTicket, "carrier_key": key()}},
		{tool: "chat_swarm_join", name: "ticket with X's carrier key", by: bobSl, theirs: obj{"swarm_id": aID, "continuation_ticket": ticket, "carrier_key": x.key},
			none: obj{"swarm_id": aID, "continuation_ticket": noTicket, "carrier_key": x.key}},
		{tool: "chat_swarm_join", name: "ticket into B's swarm", by: bobSl, theirs: obj{"swarm_id": bID, "continuation_ticket": ticket, "carrier_key": key()},
			none: obj{"swarm_id": bID, "continuation_ticket": noTicket, "carrier_key": key()}},
		{tool: "chat_swarm_join", name: "ticket from B's bound carrier", by: bobSl, theirs: obj{"swarm_id": aID, "continuation_ticket": ticket, "carrier_key": bw.key},
			none: obj{"swarm_id": aID, "continuation_ticket": noTicket, "carrier_key": bw.key}},
		{tool: "chat_swarm_dispatch", theirs: obj{"swarm_id": aID, "task_key": "held", "prompt": "p"}, none: obj{"swarm_id": noSwarm, "task_key": "held", "prompt": "p"}},
		{tool: "chat_swarm_dispatch", name: "B's swarm, A's preferred worker", code: "invalid_input",
			theirs: obj{"swarm_id": bID, "task_key": "pref", "prompt": "p", "preferred_worker_id": y.id},
			none:   obj{"swarm_id": bID, "task_key": "pref", "prompt": "p", "preferred_worker_id": noWorker}},
		{tool: "chat_swarm_next", by: bobSl, theirs: as(y.id, key(), "wait_secs", 0), none: as(noWorker, key(), "wait_secs", 0)},
		{tool: "chat_swarm_next", name: "Y's carrier key, waiting", by: bobSl, theirs: as(y.id, y.key, "wait_secs", 1), none: as(noWorker, y.key, "wait_secs", 1)},
		{tool: "chat_swarm_next", name: "stateful", by: bob, theirs: obj{"worker_id": y.id, "epoch": 0, "wait_secs": 0},
			none: obj{"worker_id": noWorker, "epoch": 0, "wait_secs": 0}},
		{tool: "chat_swarm_ack", by: bobSl, theirs: as(y.id, y.key, "task_id", held), none: as(noWorker, y.key, "task_id", held)},
		{tool: "chat_swarm_checkpoint", by: bobSl, theirs: as(x.id, x.key, "checkpoint", obj{"summary": "b"}), none: as(noWorker, x.key, "checkpoint", obj{"summary": "b"})},
		{tool: "chat_swarm_submit", by: bobSl, theirs: as(y.id, y.key, "task_id", held, "result", "b's"), none: as(noWorker, y.key, "task_id", held, "result", "b's")},
		{tool: "chat_swarm_fail", by: bobSl, theirs: as(y.id, y.key, "task_id", held, "reason", "b", "effect", "unknown"),
			none: as(noWorker, y.key, "task_id", held, "reason", "b", "effect", "unknown")},
		{tool: "chat_swarm_fail", name: "B's task as A's worker", by: bobSl, theirs: as(y.id, bw.key, "task_id", bTask, "reason", "b", "effect", "none"),
			none: as(noWorker, bw.key, "task_id", bTask, "reason", "b", "effect", "none")},
		{tool: "chat_swarm_status", theirs: obj{"swarm_id": aID}, none: obj{"swarm_id": noSwarm}},
		{tool: "chat_swarm_status", name: "a task", theirs: obj{"swarm_id": aID, "task_id": ready}, none: obj{"swarm_id": noSwarm, "task_id": ready}},
		{tool: "chat_swarm_status", name: "a state", theirs: obj{"swarm_id": aID, "state": "result_ready"}, none: obj{"swarm_id": noSwarm, "state": "result_ready"}},
		{tool: "chat_swarm_status", name: "A's task in B's swarm", theirs: obj{"swarm_id": bID, "task_id": ready}, none: obj{"swarm_id": bID, "task_id": noTask}},
		{tool: "chat_swarm_collect", theirs: obj{"swarm_id": aID, "task_id": ready}, none: obj{"swarm_id": noSwarm, "task_id": ready}},
		{tool: "chat_swarm_collect", name: "A's task in B's swarm", theirs: obj{"swarm_id": bID, "task_id": ready}, none: obj{"swarm_id": bID, "task_id": noTask}},
		{tool: "chat_swarm_cancel", theirs: obj{"swarm_id": aID, "task_id": queued}, none: obj{"swarm_id": noSwarm, "task_id": queued}},
		{tool: "chat_swarm_reconcile", theirs: obj{"swarm_id": aID, "task_id": doubt, "attempt_id": attempt, "decision": "failed", "evidence": evidence},
			none: obj{"swarm_id": noSwarm, "task_id": doubt, "attempt_id": attempt, "decision": "failed", "evidence": evidence}},
		{tool: "chat_swarm_reconcile", name: "A's task in B's swarm", theirs: obj{"swarm_id": bID, "task_id": doubt, "attempt_id": attempt, "decision": "failed", "evidence": evidence},
			none: obj{"swarm_id": bID, "task_id": noTask, "attempt_id": attempt, "decision": "failed", "evidence": evidence}},
		{tool: "chat_swarm_close", theirs: obj{"swarm_id": aID}, none: obj{"swarm_id": noSwarm}},
		{tool: "chat_swarm_prepare_continuation", theirs: obj{"swarm_id": aID, "worker_id": y.id, "reason": "b"}, none: obj{"swarm_id": noSwarm, "worker_id": y.id, "reason": "b"}},
		{tool: "chat_swarm_prepare_continuation", name: "A's worker in B's swarm", theirs: obj{"swarm_id": bID, "worker_id": y.id, "reason": "b"},
			none: obj{"swarm_id": bID, "worker_id": noWorker, "reason": "b"}},
		{tool: "chat_swarm_request_continuation", by: bobSl, theirs: obj{"swarm_id": aID, "worker_id": y.id, "source_epoch": 0, "carrier_key": key()},
			none: obj{"swarm_id": aID, "worker_id": noWorker, "source_epoch": 0, "carrier_key": key()}},
		{tool: "chat_swarm_approve_continuation", theirs: obj{"swarm_id": aID, "continuation_id": requestCn, "expected_version": requestV},
			none: obj{"swarm_id": noSwarm, "continuation_id": requestCn, "expected_version": requestV}},
		{tool: "chat_swarm_approve_continuation", name: "A's continuation in B's swarm", theirs: obj{"swarm_id": bID, "continuation_id": requestCn, "expected_version": requestV},
			none: obj{"swarm_id": bID, "continuation_id": noCn, "expected_version": requestV}},
		{tool: "chat_swarm_revoke_continuation", theirs: obj{"swarm_id": aID, "continuation_id": ticketCn}, none: obj{"swarm_id": noSwarm, "continuation_id": ticketCn}},
		{tool: "chat_swarm_revoke_continuation", name: "A's continuation in B's swarm", theirs: obj{"swarm_id": bID, "continuation_id": ticketCn},
			none: obj{"swarm_id": bID, "continuation_id": noCn}},
		{tool: "chat_swarm_reconcile_continuation", theirs: obj{"swarm_id": aID, "continuation_id": requestCn, "decision": "no_effect"},
			none: obj{"swarm_id": noSwarm, "continuation_id": requestCn, "decision": "no_effect"}},
		{tool: "chat_swarm_continuation_status", by: bobSl, theirs: obj{"swarm_id": aID, "carrier_key": key()}, none: obj{"swarm_id": noSwarm, "carrier_key": key()}},
		{tool: "chat_swarm_report_context", by: bobSl, theirs: as(y.id, y.key, "tokens", 1<<30, "source", "host_exact"),
			none: as(noWorker, y.key, "tokens", 1<<30, "source", "host_exact")},
		{tool: "chat_swarm_context_status", by: bobSl, theirs: as(y.id, y.key), none: as(noWorker, y.key)},
		// The one-call protocol's forms, and retiring a worker.
		{tool: "chat_swarm_dispatch", name: "tasks", theirs: obj{"swarm_id": aID, "tasks": []obj{{"task_key": "held", "prompt": "p"}}},
			none: obj{"swarm_id": noSwarm, "tasks": []obj{{"task_key": "held", "prompt": "p"}}}},
		{tool: "chat_swarm_next", name: "ack", by: bobSl, theirs: as(y.id, y.key, "ack", true, "wait_secs", 0), none: as(noWorker, y.key, "ack", true, "wait_secs", 0)},
		{tool: "chat_swarm_submit", name: "with next", by: bobSl, theirs: as(y.id, y.key, "task_id", held, "result", "b's", "next", obj{"ack": true}),
			none: as(noWorker, y.key, "task_id", held, "result", "b's", "next", obj{"ack": true})},
		{tool: "chat_swarm_collect", name: "ready results", theirs: obj{"swarm_id": aID, "wait_secs": 1}, none: obj{"swarm_id": noSwarm, "wait_secs": 1}},
		{tool: "chat_swarm_leave", by: bobSl, theirs: as(x.id, x.key), none: as(noWorker, x.key)},
		{tool: "chat_swarm_remove_worker", theirs: obj{"swarm_id": aID, "worker_id": x.id}, none: obj{"swarm_id": noSwarm, "worker_id": x.id}},
		{tool: "chat_swarm_remove_worker", name: "A's worker in B's swarm", theirs: obj{"swarm_id": bID, "worker_id": x.id},
			none: obj{"swarm_id": bID, "worker_id": noWorker}},
	}
	before := f.export()
	covered := map[string]bool{"chat_swarm_create": true} // names nothing of another group's
	for _, c := range cases {
		covered[c.tool] = true
		t.Run(c.tool+"/"+c.name, func(t *testing.T) {
			by := c.by
			if by == nil {
				by = bob
			}
			code := c.code
			if code == "" {
				code = "not_found"
			}
			theirs := by.at(t).fails(c.tool, c.theirs, code)
			none := by.at(t).fails(c.tool, c.none, code)
			if masked(t, theirs) != masked(t, none) {
				t.Errorf("B naming A's object and an unknown one read differently:\n%s\n%s", masked(t, theirs), masked(t, none))
			}
		})
	}
	for _, tool := range swarmTools {
		if !covered[tool] {
			t.Errorf("%s has no isolation case", tool)
		}
	}

	// `continuo worker` run with B's token and A's ticket or invite stops
	// at its join with not_found.
	for name, cfg := range map[string]carrierworker.Config{
		"ticket": {SwarmID: aID, Ticket: ticket},
		"invite": {SwarmID: aID, Invite: invite, Label: "b's"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		c, err := hook.Dial(ctx, f.url, bobTok, "worker,delegation", mcpserver.Version)
		if err != nil {
			t.Fatal(err)
		}
		why, err := carrierworker.Run(ctx, c, cfg)
		if !hook.IsCode(err, "not_found") {
			t.Errorf("continuo worker with B's token and A's %s: %q, %v; want not_found", name, why, err)
		}
		c.Close()
		cancel()
	}

	if after := f.export(); !bytes.Equal(after, before) {
		t.Errorf("B's calls changed the database:\n%s", lineDiff(string(before), string(after)))
	}

	// The rightful carrier redeems the ticket: X at epoch 1, with its
	// capsule.
	nx := member()
	r := nx.ok("chat_swarm_join", obj{"swarm_id": aID, "continuation_ticket": ticket, "carrier_key": nx.key})
	if r.str("worker", "worker_id") != x.id || r.num("worker", "epoch") != 1 || r.str("capsule", "checkpoint", "summary") != "x at work" {
		t.Fatalf("the rightful carrier's redeem after B: %v", r.Data)
	}
}
