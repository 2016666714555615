package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
)

// swarmBad is one bad call of a swarm tool.
type swarmBad struct {
	name string
	by   *client // nil: the tool's usual caller
	args any
	code string // default invalid_input
	// field is details.field, when the error names one; details are
	// other facts the error must carry.
	field   string
	details obj
}

// twin pairs the not_found of an unknown ID with that of another group's
// object, which must read the same but for the ID.
type twin struct {
	tool, unknown, foreign string // case names
	unknownID, foreignID   string
}

// TestSwarmBadInput: every swarm tool refuses bad input, the wrong caller,
// carrier, epoch and objects with a structured error of the right code,
// naming the field, and writes nothing.
func TestSwarmBadInput(t *testing.T) {
	f := newFixture(t)
	both := []continuo.Scope{continuo.ScopeSwarmOwn, continuo.ScopeSwarmWork}
	ownerTok := f.token("ada", both...)
	ownOnlyTok := f.token("ada", ownerScopes...)
	w1Tok := f.token("ada", both...) // a worker that may own swarms too
	w2Tok := f.memberToken("bea", "ada", workerScopes...)
	eveTok := f.token("eve", continuo.AllScopes()...)

	owner := f.connectAt(ownerTok, stateful).at(t)
	ownOnly := f.connectAt(ownOnlyTok, stateful).at(t)
	other := f.connectAt(w2Tok, stateful).at(t) // of the group, carrying no worker
	sl := f.connectAt(w2Tok, stateless).at(t)
	w1 := &worker{c: f.connectAt(w1Tok, stateful).at(t)}
	w2 := &worker{c: f.connectAt(w2Tok, stateful).at(t)}
	wk := &worker{c: sl, key: carrierKey()}

	// Swarm S: W1 holds T (running) and submitted D; W2's R is in doubt
	// after two attempts; WK is a stateless worker.
	cr := owner.ok("chat_swarm_create", obj{"worker_limit": 8})
	sID, oldInvite := cr.str("swarm", "swarm_id"), cr.str("invite")
	invite := owner.ok("chat_swarm_invite", obj{"swarm_id": sID}).str("invite")
	w1.join(sID, invite, "w1")
	w2.join(sID, invite, "w2")
	wk.join(sID, invite, "wk")
	dispatch := func(key, prefer string) string {
		return owner.ok("chat_swarm_dispatch", obj{"swarm_id": sID, "task_key": key, "prompt": "do " + key, "preferred_worker_id": prefer}).str("task", "task_id")
	}
	next := func(w *worker) (taskID, attemptID string) {
		r := w.ok("chat_swarm_next", w.args("wait_secs", 0))
		return r.str("task", "task_id"), r.str("task", "attempt_id")
	}
	dID := dispatch("d", w1.id)
	next(w1)
	w1.ok("chat_swarm_submit", w1.args("task_id", dID, "result", "done"))
	rID := dispatch("r", w2.id)
	_, r1 := next(w2)
	w2.ok("chat_swarm_fail", w2.args("task_id", rID, "reason", "crashed", "effect", "unknown"))
	owner.ok("chat_swarm_reconcile", obj{"swarm_id": sID, "task_id": rID, "attempt_id": r1, "decision": "requeue",
		"evidence": obj{"disposition": "no_effect", "ref": "nothing changed"}})
	_, r2 := next(w2)
	w2.ok("chat_swarm_fail", w2.args("task_id", rID, "reason", "crashed again", "effect", "unknown"))
	tID := dispatch("t", w1.id)
	_, tAtt := next(w1)
	w1.ok("chat_swarm_ack", w1.args("task_id", tID))

	// Swarm F is full; swarm C is closed.
	crF := owner.ok("chat_swarm_create", obj{"worker_limit": 1})
	fID, fInvite := crF.str("swarm", "swarm_id"), crF.str("invite")
	(&worker{c: sl, key: carrierKey()}).join(fID, fInvite, "only")
	crC := owner.ok("chat_swarm_create", obj{"worker_limit": 1})
	cID, cInvite := crC.str("swarm", "swarm_id"), crC.str("invite")
	owner.ok("chat_swarm_close", obj{"swarm_id": cID})

	// Another group's swarm E, with a worker holding a task.
	eve := f.connectAt(eveTok, stateful).at(t)
	eveW := &worker{c: f.connectAt(eveTok, stateful).at(t)}
	crE := eve.ok("chat_swarm_create", obj{"worker_limit": 2})
	eID := crE.str("swarm", "swarm_id")
	eveW.join(eID, crE.str("invite"), "eve's")
	eTask := eve.ok("chat_swarm_dispatch", obj{"swarm_id": eID, "task_key": "e", "prompt": "eve's"}).str("task", "task_id")
	_, eAtt := next(eveW)

	// Continuity in swarm S: WC's pending request comes from carrier REQ;
	// WT has a pending ticket; WB was continued to NB (its ticket used);
	// WR's ticket was revoked. Eve's EC has a ticket of its own.
	eveSl := f.connectAt(eveTok, stateless).at(t)
	checkpointedBy := func(c *client, swarmID, invite, label string) *worker {
		x := &worker{c: c, key: carrierKey()}
		x.join(swarmID, invite, label)
		x.ok("chat_swarm_checkpoint", x.args("checkpoint", obj{"summary": label + " at a boundary"}))
		return x
	}
	checkpointed := func(swarmID, invite, label string) *worker { return checkpointedBy(sl, swarmID, invite, label) }
	prepare := func(owner *client, swarmID string, x *worker) (id, ticket string) {
		r := owner.ok("chat_swarm_prepare_continuation", obj{"swarm_id": swarmID, "worker_id": x.id, "reason": "context full"})
		return r.str("continuation", "continuation_id"), r.str("ticket")
	}
	req := f.connectAt(w2Tok, stateful).at(t)
	wc := checkpointed(sID, invite, "wc")
	cnA := req.ok("chat_swarm_request_continuation", obj{"swarm_id": sID, "worker_id": wc.id, "source_epoch": 0}).str("continuation", "continuation_id")
	wt := checkpointed(sID, invite, "wt")
	cnT, tkT := prepare(owner, sID, wt)
	wb := checkpointed(sID, invite, "wb")
	cnB, tkB := prepare(owner, sID, wb)
	nb := &worker{c: sl, key: carrierKey()}
	nb.ok("chat_swarm_join", obj{"swarm_id": sID, "continuation_ticket": tkB, "carrier_key": nb.key})
	wr := checkpointed(sID, invite, "wr")
	cnR, tkR := prepare(owner, sID, wr)
	owner.ok("chat_swarm_revoke_continuation", obj{"swarm_id": sID, "continuation_id": cnR})
	eCn, eTicket := prepare(eve, eID, checkpointedBy(eveSl, eID, crE.str("invite"), "eve's ec"))

	unknown := func(prefix string) string { return continuo.NewID(prefix, time.Now()) }
	// Another group's ticket and invite read as unknown ones do.
	noTicket, noSwarm := "cto_cnt_"+carrierKey(), unknown(continuo.PrefixSwarm)
	twins := []twin{
		{tool: "chat_swarm_join", unknown: "ticket unknown", foreign: "ticket of another group", unknownID: noTicket, foreignID: eTicket},
		{tool: "chat_swarm_join", unknown: "ticket unknown, swarm unknown", foreign: "ticket of another group, its swarm", unknownID: noSwarm, foreignID: eID},
		{tool: "chat_swarm_join", unknown: "invite of another group, swarm unknown", foreign: "invite of another group", unknownID: noSwarm, foreignID: eID},
	}
	// foreign is an ID argument set to an unknown ID and to another
	// group's: both not_found, alike.
	foreign := func(tool, arg string, base obj, foreignID, prefix string) []swarmBad {
		u := unknown(prefix)
		tw := twin{tool: tool, unknown: arg + " unknown", foreign: arg + " of another group", unknownID: u, foreignID: foreignID}
		twins = append(twins, tw)
		return []swarmBad{{name: tw.unknown, args: with(base, arg, u), code: "not_found"},
			{name: tw.foreign, args: with(base, arg, foreignID), code: "not_found"}}
	}
	common := func(valid obj) []swarmBad {
		return []swarmBad{
			{name: "unknown argument", args: with(valid, "bogus", 1), field: "bogus"},
			{name: "array", args: json.RawMessage(`["swarm_id", 1]`)},
			{name: "string", args: json.RawMessage(`"hello"`)},
			{name: "number", args: json.RawMessage(`42`)},
		}
	}
	id := func(arg string, base obj) []swarmBad { // a bounded ID argument
		return []swarmBad{
			{name: arg + " number", args: with(base, arg, 5), field: arg},
			{name: arg + " 65", args: with(base, arg, strings.Repeat("x", 65)), field: arg},
			{name: arg + " empty", args: with(base, arg, ""), field: arg},
			{name: "missing " + arg, args: with(base, arg, absent), field: arg},
		}
	}
	fenced := obj{"epoch": 0.0}
	// ownerCases are the cases of every owner tool on swarm S.
	ownerCases := func(tool string, base obj) []swarmBad {
		return slices.Concat(common(base), id("swarm_id", base), foreign(tool, "swarm_id", base, eID, continuo.PrefixSwarm), []swarmBad{
			{name: "from a worker's carrier", by: w1.c, args: base, code: "forbidden", details: obj{"worker_id": w1.id}},
			{name: "without swarm:own", by: w2.c, args: base, code: "forbidden", details: obj{"scope": "swarm:own"}},
		})
	}
	// ownerTask are the cases of an owner tool's task_id.
	ownerTask := func(tool string, base obj) []swarmBad {
		return slices.Concat(foreign(tool, "task_id", base, eTask, continuo.PrefixTask), []swarmBad{
			{name: "task of another swarm", args: with(base, "swarm_id", fID), code: "not_found"},
			{name: "task_id number", args: with(base, "task_id", 5), field: "task_id"},
			{name: "task_id 65", args: with(base, "task_id", strings.Repeat("t", 65)), field: "task_id"},
		})
	}
	// workerCases are the cases of every worker tool, called as W1.
	workerCases := func(tool string, as func(w *worker) obj) []swarmBad {
		base := as(w1)
		stranger := &worker{c: other, id: w1.id}
		keyless := &worker{c: sl, id: wk.id}
		wrongKey := &worker{c: sl, id: wk.id, key: carrierKey()}
		return slices.Concat(common(base), id("worker_id", base), foreign(tool, "worker_id", base, eveW.id, continuo.PrefixWorker), []swarmBad{
			{name: "missing epoch", args: with(base, "epoch", absent), field: "epoch"},
			{name: "epoch -1", args: with(base, "epoch", -1), field: "epoch"},
			{name: "epoch string", args: with(base, "epoch", "0"), field: "epoch"},
			{name: "epoch fraction", args: with(base, "epoch", 0.5), field: "epoch"},
			{name: "wrong epoch", args: with(base, "epoch", 1), code: "carrier_fenced", details: fenced},
			{name: "another carrier", by: other, args: as(stranger), code: "carrier_fenced", details: fenced},
			{name: "without swarm:work", by: ownOnly, args: base, code: "forbidden", details: obj{"scope": "swarm:work"}},
			{name: "carrier_key 21", args: with(base, "carrier_key", carrierKey()[:21]), field: "carrier_key"},
			{name: "carrier_key 129", args: with(base, "carrier_key", strings.Repeat("k", 129)), field: "carrier_key"},
			{name: "carrier_key number", args: with(base, "carrier_key", 7), field: "carrier_key"},
			{name: "stateless without carrier_key", by: sl, args: as(keyless), field: "carrier_key"},
			{name: "stateless carrier_key 21", by: sl, args: with(as(keyless), "carrier_key", wk.key[:21]), field: "carrier_key"},
			{name: "stateless other carrier_key", by: sl, args: as(wrongKey), code: "carrier_fenced", details: fenced},
		})
	}
	// workerTask are the cases of a worker tool's task_id.
	workerTask := func(tool string, base obj) []swarmBad {
		return slices.Concat(foreign(tool, "task_id", base, eTask, continuo.PrefixTask), []swarmBad{
			{name: "task_id number", args: with(base, "task_id", 5), field: "task_id"},
			{name: "task_id 65", args: with(base, "task_id", strings.Repeat("t", 65)), field: "task_id"},
			{name: "missing task_id", args: with(base, "task_id", absent), field: "task_id"},
			{name: "another worker's task", args: with(base, "task_id", rID), code: "conflict"},
		})
	}

	policy := func(kv ...any) obj { return obj{"worker_limit": 2, "policy": with(obj{}, kv...)} }
	compaction := func(kv ...any) obj {
		return policy("compaction", with(obj{"budget_tokens": 1000, "threshold": 0.5, "reserve_tokens": 10}, kv...))
	}
	join := obj{"swarm_id": sID, "invite": invite, "label": "new"}
	dispatchArgs := obj{"swarm_id": sID, "task_key": "new", "prompt": "p"}
	reconcile := obj{"swarm_id": sID, "task_id": rID, "attempt_id": r2, "decision": "requeue",
		"evidence": obj{"disposition": "no_effect", "ref": "checked"}}
	evidence := func(kv ...any) obj {
		return with(reconcile, "evidence", with(obj{"disposition": "no_effect", "ref": "checked"}, kv...))
	}
	secret := "sk-proj-abcdefghijklmnopqrstuvwx"
	nextArgs := func(w *worker) obj { return w.args("wait_secs", 0) }
	ackArgs := func(w *worker) obj { return w.args("task_id", tID) }
	checkpointArgs := func(w *worker) obj { return w.args("checkpoint", obj{"summary": "s"}) }
	submitArgs := func(w *worker) obj { return w.args("task_id", tID, "result", "r") }
	failArgs := func(w *worker) obj { return w.args("task_id", tID, "reason", "why", "effect", "none") }
	leaveArgs := func(w *worker) obj { return w.args() }
	removeArgs := obj{"swarm_id": sID, "worker_id": w1.id}
	item := func(key string) obj { return obj{"task_key": key, "prompt": "do " + key} }
	batch := func(n int) obj {
		items := make([]obj, n)
		for i := range items {
			items[i] = item(fmt.Sprint("b", i))
		}
		return obj{"swarm_id": sID, "tasks": items}
	}
	bigItems := func(n int) []obj {
		items := make([]obj, n)
		for i := range items {
			items[i] = with(item(fmt.Sprint("big", i)), "prompt", strings.Repeat("p", 64<<10))
		}
		return items
	}

	// as sets the caller of cases.
	as := func(by *client, cases []swarmBad) []swarmBad {
		for i := range cases {
			cases[i].by = by
		}
		return cases
	}
	// contID are the cases of an owner tool's continuation_id.
	contID := func(tool string, base obj) []swarmBad {
		return slices.Concat(id("continuation_id", base), foreign(tool, "continuation_id", base, eCn, continuo.PrefixContinuation), []swarmBad{
			{name: "continuation of another swarm", args: with(base, "swarm_id", fID), code: "not_found"},
		})
	}
	prepareArgs := obj{"swarm_id": sID, "worker_id": w1.id, "reason": "context full"}
	requestArgs := obj{"swarm_id": sID, "worker_id": w1.id, "source_epoch": 0}
	approveArgs := obj{"swarm_id": sID, "continuation_id": cnA, "expected_version": 1}
	revokeArgs := obj{"swarm_id": sID, "continuation_id": cnT}
	reconcileCont := obj{"swarm_id": sID, "continuation_id": cnT, "decision": "no_effect"}
	reportArgs := func(w *worker) obj { return w.args("tokens", 100, "source", "estimate") }
	contextArgs := func(w *worker) obj { return w.args() }
	ticketJoin := obj{"swarm_id": sID, "continuation_ticket": tkT}
	replaced := func(args func(w *worker) obj) swarmBad {
		return swarmBad{name: "a replaced carrier", by: sl, args: args(wb), code: "carrier_fenced", details: obj{"epoch": 1.0}}
	}

	tables := map[string][]swarmBad{
		"chat_swarm_create": slices.Concat(common(obj{"worker_limit": 2}), []swarmBad{
			{name: "worker_limit 0", args: obj{"worker_limit": 0}, field: "worker_limit"},
			{name: "worker_limit 65", args: obj{"worker_limit": 65}, field: "worker_limit"},
			{name: "missing worker_limit", args: obj{}, field: "worker_limit"},
			{name: "worker_limit string", args: obj{"worker_limit": "2"}, field: "worker_limit"},
			{name: "worker_limit fraction", args: obj{"worker_limit": 1.5}, field: "worker_limit"},
			{name: "policy string", args: obj{"worker_limit": 2, "policy": "strict"}, field: "policy"},
			{name: "lease_ttl_secs 1", args: policy("lease_ttl_secs", 1), field: "policy.lease_ttl_secs"},
			{name: "lease_ttl_secs 86401", args: policy("lease_ttl_secs", 86401), field: "policy.lease_ttl_secs"},
			{name: "lease_ttl_secs string", args: policy("lease_ttl_secs", "60"), field: "policy.lease_ttl_secs"},
			{name: "requeue_unacked string", args: policy("requeue_unacked", "yes"), field: "policy.requeue_unacked"},
			{name: "policy unknown key", args: policy("bogus", 1), field: "policy.bogus"},
			{name: "threshold 2", args: compaction("threshold", 2), field: "policy.compaction.threshold"},
			{name: "threshold 0", args: compaction("threshold", 0), field: "policy.compaction.threshold"},
			{name: "threshold missing", args: compaction("threshold", absent), field: "policy.compaction.threshold"},
			{name: "budget_tokens 0", args: compaction("budget_tokens", 0), field: "policy.compaction.budget_tokens"},
			{name: "reserve_tokens = budget", args: compaction("reserve_tokens", 1000), field: "policy.compaction.reserve_tokens"},
			{name: "invite_ttl_secs 59", args: obj{"worker_limit": 2, "invite_ttl_secs": 59}, field: "invite_ttl_secs"},
			{name: "invite_ttl_secs 86401", args: obj{"worker_limit": 2, "invite_ttl_secs": 86401}, field: "invite_ttl_secs"},
			{name: "worker_idle_ttl_secs 119", args: policy("worker_idle_ttl_secs", 119), field: "policy.worker_idle_ttl_secs"},
			{name: "worker_idle_ttl_secs 604801", args: policy("worker_idle_ttl_secs", 604801), field: "policy.worker_idle_ttl_secs"},
			{name: "worker_idle_ttl_secs string", args: policy("worker_idle_ttl_secs", "1800"), field: "policy.worker_idle_ttl_secs"},
			{name: "without swarm:own", by: w2.c, args: obj{"worker_limit": 2}, code: "forbidden", details: obj{"scope": "swarm:own"}},
		}),
		"chat_swarm_invite": slices.Concat(ownerCases("chat_swarm_invite", obj{"swarm_id": sID}), []swarmBad{
			{name: "invite_ttl_secs 59", args: obj{"swarm_id": sID, "invite_ttl_secs": 59}, field: "invite_ttl_secs"},
			{name: "invite_ttl_secs string", args: obj{"swarm_id": sID, "invite_ttl_secs": "60"}, field: "invite_ttl_secs"},
			{name: "closed swarm", args: obj{"swarm_id": cID}, code: "invalid_state"},
		}),
		"chat_swarm_join": slices.Concat(common(join), id("swarm_id", join), foreign("chat_swarm_join", "swarm_id", join, eID, continuo.PrefixSwarm), []swarmBad{
			{name: "missing invite", args: with(join, "invite", absent), field: "invite"},
			{name: "invite 129", args: with(join, "invite", strings.Repeat("i", 129)), field: "invite"},
			{name: "wrong invite", args: with(join, "invite", "cto_inv_"+carrierKey()), code: "not_found"},
			{name: "replaced invite", args: with(join, "invite", oldInvite), code: "not_found"},
			{name: "missing label", args: with(join, "label", absent), field: "label"},
			{name: "empty label", args: with(join, "label", ""), field: "label"},
			{name: "label 257", args: with(join, "label", strings.Repeat("l", 257)), field: "label"},
			{name: "label number", args: with(join, "label", 3), field: "label"},
			{name: "carrier_key 21", args: with(join, "carrier_key", carrierKey()[:21]), field: "carrier_key"},
			{name: "carrier_key 129", args: with(join, "carrier_key", strings.Repeat("k", 129)), field: "carrier_key"},
			{name: "stateless without carrier_key", by: sl, args: join, field: "carrier_key"},
			{name: "stateless carrier_key 21", by: sl, args: with(join, "carrier_key", carrierKey()[:21]), field: "carrier_key"},
			{name: "closed swarm", args: obj{"swarm_id": cID, "invite": cInvite, "label": "late"}, code: "not_found"},
			{name: "full swarm", args: obj{"swarm_id": fID, "invite": fInvite, "label": "one more"}, code: "capacity_full", details: obj{"limit": 1.0}},
			{name: "without swarm:work", by: ownOnly, args: join, code: "forbidden", details: obj{"scope": "swarm:work"}},
			{name: "the owner's carrier", by: owner, args: join, code: "forbidden"},
			{name: "a bound carrier, another label", by: w1.c, args: with(join, "label", "w1 again"), code: "conflict", details: obj{"worker_id": w1.id}},
			{name: "invite and ticket", args: with(join, "label", absent, "continuation_ticket", tkT), field: "invite"},
			{name: "ticket with a label", args: with(ticketJoin, "label", "new"), field: "label"},
			{name: "ticket 129", args: with(ticketJoin, "continuation_ticket", strings.Repeat("t", 129)), field: "continuation_ticket"},
			{name: "ticket number", args: with(ticketJoin, "continuation_ticket", 7), field: "continuation_ticket"},
			{name: "ticket unknown", args: with(ticketJoin, "continuation_ticket", noTicket), code: "not_found"},
			{name: "ticket of another group", args: with(ticketJoin, "continuation_ticket", eTicket), code: "not_found"},
			{name: "ticket unknown, swarm unknown", args: with(ticketJoin, "swarm_id", noSwarm, "continuation_ticket", noTicket), code: "not_found"},
			{name: "ticket of another group, its swarm", args: with(ticketJoin, "swarm_id", eID, "continuation_ticket", eTicket), code: "not_found"},
			{name: "invite of another group, swarm unknown", args: obj{"swarm_id": noSwarm, "invite": crE.str("invite"), "label": "x"}, code: "not_found"},
			{name: "invite of another group", args: obj{"swarm_id": eID, "invite": crE.str("invite"), "label": "x"}, code: "not_found"},
			{name: "ticket of another swarm", args: with(ticketJoin, "swarm_id", fID), code: "ticket_invalid", details: obj{"reason": "another_swarm"}},
			{name: "ticket used", args: with(ticketJoin, "continuation_ticket", tkB), code: "ticket_invalid", details: obj{"reason": "used"}},
			{name: "ticket revoked", args: with(ticketJoin, "continuation_ticket", tkR), code: "ticket_invalid", details: obj{"reason": "revoked"}},
			{name: "ticket from a bound carrier", by: w1.c, args: ticketJoin, code: "conflict", details: obj{"worker_id": w1.id}},
			{name: "ticket from the owner's carrier", by: owner, args: ticketJoin, code: "forbidden"},
			{name: "ticket without swarm:work", by: ownOnly, args: ticketJoin, code: "forbidden", details: obj{"scope": "swarm:work"}},
			{name: "ticket, stateless without carrier_key", by: sl, args: ticketJoin, field: "carrier_key"},
		}),
		"chat_swarm_dispatch": slices.Concat(ownerCases("chat_swarm_dispatch", dispatchArgs), []swarmBad{
			{name: "missing task_key", args: with(dispatchArgs, "task_key", absent), field: "task_key"},
			{name: "task_key 129", args: with(dispatchArgs, "task_key", strings.Repeat("k", 129)), field: "task_key"},
			{name: "missing prompt", args: with(dispatchArgs, "prompt", absent), field: "prompt"},
			{name: "empty prompt", args: with(dispatchArgs, "prompt", ""), field: "prompt"},
			{name: "prompt 65537", args: with(dispatchArgs, "prompt", strings.Repeat("p", 65537)), field: "prompt"},
			{name: "prompt object", args: with(dispatchArgs, "prompt", obj{"text": "p"}), field: "prompt"},
			{name: "payload over 64 KiB", args: with(dispatchArgs, "payload", obj{"blob": strings.Repeat("b", 64<<10)}), code: "too_large", field: "payload"},
			{name: "preferred_worker_id unknown", args: with(dispatchArgs, "preferred_worker_id", unknown(continuo.PrefixWorker)), field: "preferred_worker_id"},
			{name: "preferred_worker_id of another group", args: with(dispatchArgs, "preferred_worker_id", eveW.id), field: "preferred_worker_id"},
			{name: "preferred_worker_id 65", args: with(dispatchArgs, "preferred_worker_id", strings.Repeat("w", 65)), field: "preferred_worker_id"},
			{name: "task_key of another prompt", args: with(dispatchArgs, "task_key", "d"), code: "conflict", details: obj{"task_id": dID}},
			{name: "closed swarm", args: with(dispatchArgs, "swarm_id", cID), code: "invalid_state"},
			{name: "tasks and task_key", args: with(dispatchArgs, "tasks", []obj{item("x")}), field: "tasks"},
			{name: "tasks 101", args: batch(101), field: "tasks"},
			{name: "tasks string", args: with(batch(0), "tasks", "many"), field: "tasks"},
			{name: "tasks item missing prompt", args: with(batch(0), "tasks", []obj{item("x"), with(item("y"), "prompt", absent)}), field: "tasks[1].prompt"},
			{name: "tasks item task_key 129", args: with(batch(0), "tasks", []obj{item(strings.Repeat("k", 129))}), field: "tasks[0].task_key"},
			{name: "tasks item unknown key", args: with(batch(0), "tasks", []obj{item("x"), with(item("y"), "bogus", 1)}), field: "tasks[1].bogus"},
			{name: "tasks item payload over 64 KiB", args: with(batch(0), "tasks", []obj{with(item("x"), "payload", obj{"blob": strings.Repeat("b", 64<<10)})}),
				code: "too_large", field: "tasks[0].payload", details: obj{"index": 0.0}},
			{name: "tasks over 512 KiB", args: with(batch(0), "tasks", bigItems(9)), code: "too_large", field: "tasks", details: obj{"limit": 524288.0}},
			{name: "tasks item of another prompt", args: with(batch(0), "tasks", []obj{item("fresh"), item("d")}), code: "conflict",
				details: obj{"index": 1.0, "task_id": dID}},
			{name: "tasks item preferring another group's worker", args: with(batch(0), "tasks", []obj{item("fresh"), with(item("y"), "preferred_worker_id", eveW.id)}),
				field: "tasks[1].preferred_worker_id", details: obj{"index": 1.0}},
			{name: "tasks in a closed swarm", args: with(batch(3), "swarm_id", cID), code: "invalid_state"},
		}),
		"chat_swarm_next": slices.Concat(workerCases("chat_swarm_next", nextArgs), []swarmBad{
			{name: "wait_secs 26", args: with(nextArgs(w1), "wait_secs", 26), field: "wait_secs"},
			{name: "wait_secs -1", args: with(nextArgs(w1), "wait_secs", -1), field: "wait_secs"},
			{name: "wait_secs string", args: with(nextArgs(w1), "wait_secs", "5"), field: "wait_secs"},
			{name: "wait_secs fraction", args: with(nextArgs(w1), "wait_secs", 2.5), field: "wait_secs"},
			{name: "ack string", args: with(nextArgs(w1), "ack", "yes"), field: "ack"},
		}),
		"chat_swarm_ack": slices.Concat(workerCases("chat_swarm_ack", ackArgs), workerTask("chat_swarm_ack", ackArgs(w1)), []swarmBad{
			{name: "a settled task", args: with(ackArgs(w1), "task_id", dID), code: "terminal_immutable"},
		}),
		"chat_swarm_checkpoint": slices.Concat(workerCases("chat_swarm_checkpoint", checkpointArgs), []swarmBad{
			{name: "missing checkpoint", args: with(checkpointArgs(w1), "checkpoint", absent), field: "checkpoint"},
			{name: "checkpoint null", args: with(checkpointArgs(w1), "checkpoint", nil), field: "checkpoint"},
			{name: "checkpoint string", args: with(checkpointArgs(w1), "checkpoint", "halfway"), field: "checkpoint"},
			{name: "checkpoint array", args: with(checkpointArgs(w1), "checkpoint", []any{"a", 1}), field: "checkpoint"},
			{name: "checkpoint over 16 KiB", args: with(checkpointArgs(w1), "checkpoint", obj{"summary": strings.Repeat("s", 16<<10)}),
				code: "too_large", field: "checkpoint"},
			{name: "credential in summary", args: with(checkpointArgs(w1), "checkpoint", obj{"summary": "deploy with " + secret}),
				field: "checkpoint", details: obj{"path": "summary"}},
			{name: "credential in a list", args: with(checkpointArgs(w1), "checkpoint", obj{"summary": "s", "artifacts": []any{"notes.md", secret}}),
				field: "checkpoint", details: obj{"path": "artifacts[1]"}},
			{name: "credential nested", args: with(checkpointArgs(w1), "checkpoint", obj{"summary": "s", "state": obj{"env": "OPENAI_API_KEY=" + secret}}),
				field: "checkpoint", details: obj{"path": "state.env"}},
		}),
		"chat_swarm_submit": slices.Concat(workerCases("chat_swarm_submit", submitArgs), workerTask("chat_swarm_submit", submitArgs(w1)), []swarmBad{
			{name: "missing result", args: with(submitArgs(w1), "result", absent), field: "result"},
			{name: "empty result", args: with(submitArgs(w1), "result", ""), field: "result"},
			{name: "result 262145", args: with(submitArgs(w1), "result", strings.Repeat("r", 262145)), field: "result"},
			{name: "result object", args: with(submitArgs(w1), "result", obj{"r": 1}), field: "result"},
			{name: "another result for a settled task", args: with(submitArgs(w1), "task_id", dID), code: "terminal_immutable"},
			{name: "a task in doubt", by: w2.c, args: w2.args("task_id", rID, "result", "r"), code: "reconcile_required"},
			{name: "next string", args: with(submitArgs(w1), "next", "yes"), field: "next"},
			{name: "next.wait_secs 26", args: with(submitArgs(w1), "next", obj{"wait_secs": 26}), field: "next.wait_secs"},
			{name: "next.ack string", args: with(submitArgs(w1), "next", obj{"ack": "yes"}), field: "next.ack"},
			{name: "next unknown key", args: with(submitArgs(w1), "next", obj{"bogus": 1}), field: "next.bogus"},
			{name: "with next, a task in doubt", by: w2.c, args: w2.args("task_id", rID, "result", "r", "next", obj{"ack": true}),
				code: "reconcile_required"},
		}),
		"chat_swarm_fail": slices.Concat(workerCases("chat_swarm_fail", failArgs), workerTask("chat_swarm_fail", failArgs(w1)), []swarmBad{
			{name: "missing reason", args: with(failArgs(w1), "reason", absent), field: "reason"},
			{name: "reason 4097", args: with(failArgs(w1), "reason", strings.Repeat("r", 4097)), field: "reason"},
			{name: "missing effect", args: with(failArgs(w1), "effect", absent), field: "effect"},
			{name: "effect maybe", args: with(failArgs(w1), "effect", "maybe"), field: "effect"},
			{name: "effect case", args: with(failArgs(w1), "effect", "None"), field: "effect"},
			{name: "effect bool", args: with(failArgs(w1), "effect", false), field: "effect"},
			{name: "a settled task", args: with(failArgs(w1), "task_id", dID), code: "terminal_immutable"},
		}),
		"chat_swarm_status": slices.Concat(ownerCases("chat_swarm_status", obj{"swarm_id": sID}), ownerTask("chat_swarm_status", obj{"swarm_id": sID, "task_id": tID}),
			[]swarmBad{
				{name: "state enum", args: obj{"swarm_id": sID, "state": "done"}, field: "state"},
				{name: "state and task_id", args: obj{"swarm_id": sID, "state": "queued", "task_id": tID}, field: "state"},
				{name: "after without state", args: obj{"swarm_id": sID, "after": tID}, field: "after"},
				{name: "after 65", args: obj{"swarm_id": sID, "state": "queued", "after": strings.Repeat("t", 65)}, field: "after"},
			}),
		"chat_swarm_collect": slices.Concat(ownerCases("chat_swarm_collect", obj{"swarm_id": sID, "task_id": dID}),
			ownerTask("chat_swarm_collect", obj{"swarm_id": sID, "task_id": dID}), []swarmBad{
				{name: "a running task", args: obj{"swarm_id": sID, "task_id": tID}, code: "invalid_state"},
				{name: "a task in doubt", args: obj{"swarm_id": sID, "task_id": rID}, code: "invalid_state"},
				{name: "task_id and wait_secs", args: obj{"swarm_id": sID, "task_id": dID, "wait_secs": 1}, field: "wait_secs"},
				{name: "task_id and limit", args: obj{"swarm_id": sID, "task_id": dID, "limit": 5}, field: "limit"},
				{name: "task_id and idempotency_key", args: obj{"swarm_id": sID, "task_id": dID, "idempotency_key": "k"}, field: "idempotency_key"},
				{name: "wait_secs 26", args: obj{"swarm_id": sID, "wait_secs": 26}, field: "wait_secs"},
				{name: "limit 0", args: obj{"swarm_id": sID, "limit": 0}, field: "limit"},
				{name: "limit 101", args: obj{"swarm_id": sID, "limit": 101}, field: "limit"},
				{name: "idempotency_key 129", args: obj{"swarm_id": sID, "idempotency_key": strings.Repeat("k", 129)}, field: "idempotency_key"},
				{name: "ready results of another group's swarm", args: obj{"swarm_id": eID}, code: "not_found"},
			}),
		"chat_swarm_leave": slices.Concat(workerCases("chat_swarm_leave", leaveArgs), []swarmBad{
			replaced(leaveArgs),
			{name: "holding a task", args: leaveArgs(w1), code: "unsafe_boundary", details: obj{"reason": "task_in_flight", "task_id": tID}},
			{name: "a continuation open", by: sl, args: leaveArgs(wt), code: "unsafe_boundary",
				details: obj{"reason": "continuation_pending", "continuation_id": cnT}},
		}),
		"chat_swarm_remove_worker": slices.Concat(ownerCases("chat_swarm_remove_worker", removeArgs), id("worker_id", removeArgs),
			foreign("chat_swarm_remove_worker", "worker_id", removeArgs, eveW.id, continuo.PrefixWorker), []swarmBad{
				{name: "worker of another swarm", args: with(removeArgs, "swarm_id", fID), code: "not_found"},
				{name: "holding a task", args: removeArgs, code: "unsafe_boundary", details: obj{"reason": "task_in_flight", "task_id": tID}},
				{name: "a continuation open", args: with(removeArgs, "worker_id", wc.id), code: "unsafe_boundary",
					details: obj{"reason": "continuation_pending", "continuation_id": cnA}},
			}),
		"chat_swarm_cancel": slices.Concat(ownerCases("chat_swarm_cancel", obj{"swarm_id": sID, "task_id": tID}),
			ownerTask("chat_swarm_cancel", obj{"swarm_id": sID, "task_id": tID}), []swarmBad{
				{name: "missing task_id", args: obj{"swarm_id": sID}, field: "task_id"},
				{name: "a settled task", args: obj{"swarm_id": sID, "task_id": dID}, code: "terminal_immutable"},
				{name: "a task in doubt", args: obj{"swarm_id": sID, "task_id": rID}, code: "invalid_state"},
			}),
		"chat_swarm_reconcile": slices.Concat(ownerCases("chat_swarm_reconcile", reconcile), ownerTask("chat_swarm_reconcile", reconcile),
			foreign("chat_swarm_reconcile", "attempt_id", reconcile, eAtt, continuo.PrefixAttempt), []swarmBad{
				{name: "missing task_id", args: with(reconcile, "task_id", absent), field: "task_id"},
				{name: "missing attempt_id", args: with(reconcile, "attempt_id", absent), field: "attempt_id"},
				{name: "an older attempt", args: with(reconcile, "attempt_id", r1), code: "conflict", details: obj{"attempt_id": r2}},
				{name: "a running task", args: with(reconcile, "task_id", tID, "attempt_id", tAtt), code: "invalid_state"},
				{name: "missing decision", args: with(reconcile, "decision", absent), field: "decision"},
				{name: "decision retry", args: with(reconcile, "decision", "retry"), field: "decision"},
				{name: "decision case", args: with(reconcile, "decision", "Requeue"), field: "decision"},
				{name: "missing evidence", args: with(reconcile, "evidence", absent), field: "evidence"},
				{name: "evidence string", args: with(reconcile, "evidence", "trust me"), field: "evidence"},
				{name: "disposition none", args: evidence("disposition", "none"), field: "evidence.disposition"},
				{name: "missing disposition", args: evidence("disposition", absent), field: "evidence.disposition"},
				{name: "missing ref", args: evidence("ref", absent), field: "evidence.ref"},
				{name: "ref 4097", args: evidence("ref", strings.Repeat("e", 4097)), field: "evidence.ref"},
				{name: "evidence unknown key", args: evidence("bogus", 1), field: "evidence.bogus"},
				{name: "requeue without no_effect", args: evidence("disposition", "unknown"), code: "reconcile_required",
					field: "evidence.disposition"},
				{name: "result with requeue", args: with(reconcile, "result", "r"), field: "result"},
				{name: "result_ready without result", args: with(reconcile, "decision", "result_ready"), field: "result"},
				{name: "result 262145", args: with(reconcile, "decision", "result_ready", "result", strings.Repeat("r", 262145)), field: "result"},
			}),
		"chat_swarm_close": slices.Concat(ownerCases("chat_swarm_close", obj{"swarm_id": sID}), []swarmBad{
			{name: "unsettled tasks", args: obj{"swarm_id": sID}, code: "invalid_state", details: obj{"open": obj{"running": 1.0, "reconcile_required": 1.0}}},
		}),
		"chat_swarm_prepare_continuation": slices.Concat(ownerCases("chat_swarm_prepare_continuation", prepareArgs), id("worker_id", prepareArgs),
			foreign("chat_swarm_prepare_continuation", "worker_id", prepareArgs, eveW.id, continuo.PrefixWorker), []swarmBad{
				{name: "worker of another swarm", args: with(prepareArgs, "swarm_id", fID), code: "not_found"},
				{name: "missing reason", args: with(prepareArgs, "reason", absent), field: "reason"},
				{name: "reason 1025", args: with(prepareArgs, "reason", strings.Repeat("r", 1025)), field: "reason"},
				{name: "reason number", args: with(prepareArgs, "reason", 1), field: "reason"},
				{name: "ttl_secs 29", args: with(prepareArgs, "ttl_secs", 29), field: "ttl_secs"},
				{name: "ttl_secs 901", args: with(prepareArgs, "ttl_secs", 901), field: "ttl_secs"},
				{name: "ttl_secs string", args: with(prepareArgs, "ttl_secs", "60"), field: "ttl_secs"},
				{name: "ttl_secs fraction", args: with(prepareArgs, "ttl_secs", 30.5), field: "ttl_secs"},
				{name: "a task in flight", args: prepareArgs, code: "unsafe_boundary", details: obj{"reason": "task_in_flight", "task_id": tID}},
				{name: "no checkpoint", args: with(prepareArgs, "worker_id", w2.id), code: "unsafe_boundary", details: obj{"reason": "no_checkpoint"}},
				{name: "a pending request", args: with(prepareArgs, "worker_id", wc.id), code: "unsafe_boundary",
					details: obj{"reason": "continuation_pending", "continuation_id": cnA}},
				{name: "a pending ticket", args: with(prepareArgs, "worker_id", wt.id), code: "unsafe_boundary",
					details: obj{"reason": "continuation_pending", "continuation_id": cnT}},
			}),
		"chat_swarm_request_continuation": slices.Concat(common(requestArgs), id("swarm_id", requestArgs), id("worker_id", requestArgs),
			foreign("chat_swarm_request_continuation", "swarm_id", requestArgs, eID, continuo.PrefixSwarm),
			foreign("chat_swarm_request_continuation", "worker_id", requestArgs, eveW.id, continuo.PrefixWorker), []swarmBad{
				{name: "worker of another swarm", args: with(requestArgs, "swarm_id", fID), code: "not_found"},
				{name: "missing source_epoch", args: with(requestArgs, "source_epoch", absent), field: "source_epoch"},
				{name: "source_epoch -1", args: with(requestArgs, "source_epoch", -1), field: "source_epoch"},
				{name: "source_epoch string", args: with(requestArgs, "source_epoch", "0"), field: "source_epoch"},
				{name: "source_epoch fraction", args: with(requestArgs, "source_epoch", 0.5), field: "source_epoch"},
				{name: "source_epoch 1000000001", args: with(requestArgs, "source_epoch", 1000000001), field: "source_epoch"},
				{name: "reason 1025", args: with(requestArgs, "reason", strings.Repeat("r", 1025)), field: "reason"},
				{name: "carrier_key 21", args: with(requestArgs, "carrier_key", carrierKey()[:21]), field: "carrier_key"},
				{name: "carrier_key 129", args: with(requestArgs, "carrier_key", strings.Repeat("k", 129)), field: "carrier_key"},
				{name: "stateless without carrier_key", by: sl, args: requestArgs, field: "carrier_key"},
				{name: "another epoch", args: with(requestArgs, "source_epoch", 1), code: "conflict", details: obj{"epoch": 0.0}},
				{name: "the worker's own carrier", by: w1.c, args: requestArgs, field: "carrier_key"},
				{name: "a carrier of another worker", by: w2.c, args: requestArgs, code: "conflict"},
				{name: "a task in flight", args: requestArgs, code: "unsafe_boundary", details: obj{"reason": "task_in_flight"}},
				{name: "a second requester", args: with(requestArgs, "worker_id", wc.id), code: "unsafe_boundary",
					details: obj{"reason": "continuation_pending", "continuation_id": cnA}},
				{name: "the owner's carrier", by: owner, args: with(requestArgs, "worker_id", wr.id), code: "forbidden"},
				{name: "without swarm:work", by: ownOnly, args: requestArgs, code: "forbidden", details: obj{"scope": "swarm:work"}},
			}),
		"chat_swarm_approve_continuation": slices.Concat(ownerCases("chat_swarm_approve_continuation", approveArgs),
			contID("chat_swarm_approve_continuation", approveArgs), []swarmBad{
				{name: "missing expected_version", args: with(approveArgs, "expected_version", absent), field: "expected_version"},
				{name: "expected_version 0", args: with(approveArgs, "expected_version", 0), field: "expected_version"},
				{name: "expected_version string", args: with(approveArgs, "expected_version", "1"), field: "expected_version"},
				{name: "expected_version fraction", args: with(approveArgs, "expected_version", 1.5), field: "expected_version"},
				{name: "another version", args: with(approveArgs, "expected_version", 2), code: "revision_conflict", details: obj{"version": 1.0}},
				{name: "a ticket's", args: with(approveArgs, "continuation_id", cnT), code: "invalid_state"},
				{name: "a revoked one", args: with(approveArgs, "continuation_id", cnR), code: "invalid_state"},
			}),
		"chat_swarm_revoke_continuation": slices.Concat(ownerCases("chat_swarm_revoke_continuation", revokeArgs),
			contID("chat_swarm_revoke_continuation", revokeArgs), []swarmBad{
				{name: "a bound one", args: with(revokeArgs, "continuation_id", cnB), code: "terminal_immutable", details: obj{"state": "bound"}},
			}),
		"chat_swarm_reconcile_continuation": slices.Concat(ownerCases("chat_swarm_reconcile_continuation", reconcileCont),
			contID("chat_swarm_reconcile_continuation", reconcileCont), []swarmBad{
				{name: "missing decision", args: with(reconcileCont, "decision", absent), field: "decision"},
				{name: "decision revoke", args: with(reconcileCont, "decision", "revoke"), field: "decision"},
				{name: "decision case", args: with(reconcileCont, "decision", "No_effect"), field: "decision"},
				{name: "decision number", args: with(reconcileCont, "decision", 1), field: "decision"},
				{name: "not in doubt", args: reconcileCont, code: "invalid_state", details: obj{"state": "pending"}},
				{name: "a bound one", args: with(reconcileCont, "continuation_id", cnB), code: "invalid_state", details: obj{"state": "bound"}},
			}),
		"chat_swarm_continuation_status": slices.Concat(as(req, slices.Concat(common(obj{"swarm_id": sID}), id("swarm_id", obj{"swarm_id": sID}),
			foreign("chat_swarm_continuation_status", "swarm_id", obj{"swarm_id": sID}, eID, continuo.PrefixSwarm))), []swarmBad{
			{name: "carrier_key 21", args: obj{"swarm_id": sID, "carrier_key": carrierKey()[:21]}, field: "carrier_key"},
			{name: "carrier_key number", args: obj{"swarm_id": sID, "carrier_key": 7}, field: "carrier_key"},
			{name: "a conversation that asked nothing", by: other, args: obj{"swarm_id": sID}, code: "not_found"},
			{name: "stateless without carrier_key", by: sl, args: obj{"swarm_id": sID}, field: "carrier_key"},
			{name: "stateless, another carrier_key", by: sl, args: obj{"swarm_id": sID, "carrier_key": carrierKey()}, code: "not_found"},
			{name: "without swarm:work", by: ownOnly, args: obj{"swarm_id": sID}, code: "forbidden", details: obj{"scope": "swarm:work"}},
		}),
		"chat_swarm_report_context": slices.Concat(workerCases("chat_swarm_report_context", reportArgs), []swarmBad{
			replaced(reportArgs),
			{name: "missing tokens", args: with(reportArgs(w1), "tokens", absent), field: "tokens"},
			{name: "tokens -1", args: with(reportArgs(w1), "tokens", -1), field: "tokens"},
			{name: "tokens 2^40+1", args: with(reportArgs(w1), "tokens", 1<<40+1), field: "tokens"},
			{name: "tokens string", args: with(reportArgs(w1), "tokens", "100"), field: "tokens"},
			{name: "tokens fraction", args: with(reportArgs(w1), "tokens", 99.5), field: "tokens"},
			{name: "missing source", args: with(reportArgs(w1), "source", absent), field: "source"},
			{name: "source exact", args: with(reportArgs(w1), "source", "exact"), field: "source"},
			{name: "source a counted one", args: with(reportArgs(w1), "source", "task_prompt"), field: "source"},
			{name: "source case", args: with(reportArgs(w1), "source", "Estimate"), field: "source"},
			{name: "source number", args: with(reportArgs(w1), "source", 1), field: "source"},
			{name: "basis 1025", args: with(reportArgs(w1), "basis", strings.Repeat("b", 1025)), field: "basis"},
			{name: "basis object", args: with(reportArgs(w1), "basis", obj{"b": 1}), field: "basis"},
		}),
		"chat_swarm_context_status": slices.Concat(workerCases("chat_swarm_context_status", contextArgs), []swarmBad{
			replaced(contextArgs),
		}),
	}
	for _, tool := range swarmTools {
		if len(tables[tool]) == 0 {
			t.Errorf("tool %s has no bad-input table", tool)
		}
	}
	for tool := range tables {
		if !slices.Contains(swarmTools, tool) {
			t.Errorf("table for %s, which is not in swarmTools", tool)
		}
	}

	workerTools := []string{"chat_swarm_join", "chat_swarm_next", "chat_swarm_ack", "chat_swarm_checkpoint", "chat_swarm_submit", "chat_swarm_fail",
		"chat_swarm_leave", "chat_swarm_report_context", "chat_swarm_context_status"}
	got := map[string]result{}
	before := f.swarmFingerprint()
	for _, tool := range swarmTools {
		for _, bc := range tables[tool] {
			t.Run(tool+"/"+bc.name, func(t *testing.T) {
				by := bc.by
				switch {
				case by != nil:
				case tool == "chat_swarm_join", tool == "chat_swarm_request_continuation":
					by = other // a new conversation
				case tool == "chat_swarm_continuation_status":
					by = req // the conversation that asked for WC
				case slices.Contains(workerTools, tool):
					by = w1.c
				default:
					by = owner
				}
				code := bc.code
				if code == "" {
					code = "invalid_input"
				}
				defer func() {
					// One call that wrote must not fail every case after it.
					if after := f.swarmFingerprint(); after != before {
						t.Errorf("a rejected call wrote:\n%s", lineDiff(before, after))
						before = after
					}
				}()
				r := by.at(t).fails(tool, bc.args, code)
				if bc.field != "" && r.details()["field"] != bc.field {
					t.Fatalf("details.field = %v, want %q (%v)", r.details()["field"], bc.field, r.Data)
				}
				for k, want := range bc.details {
					if got := r.details()[k]; mustJSON(t, got) != mustJSON(t, want) {
						t.Fatalf("details.%s = %v, want %v (%v)", k, got, want, r.Data)
					}
				}
				if !strings.HasPrefix(r.Text, code+": ") {
					t.Fatalf("text mirror = %q", r.Text)
				}
				got[tool+"/"+bc.name] = r
			})
		}
	}

	// Another group's objects are refused as unknown ones are, word for
	// word but for the ID.
	for _, tw := range twins {
		u, fo := got[tw.tool+"/"+tw.unknown], got[tw.tool+"/"+tw.foreign]
		if u.Data == nil || fo.Data == nil {
			continue // failed above
		}
		un := strings.ReplaceAll(mustJSON(t, u.Data), tw.unknownID, "ID")
		fn := strings.ReplaceAll(mustJSON(t, fo.Data), tw.foreignID, "ID")
		if un != fn {
			t.Errorf("%s: %q and %q read differently:\n%s\n%s", tw.tool, tw.foreign, tw.unknown, fn, un)
		}
	}
}

// lineDiff shows the lines only one of two texts has.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for _, l := range al {
		if !slices.Contains(bl, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range bl {
		if !slices.Contains(al, l) {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}
