package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// doubt is a task in reconcile_required: its latest attempt, and why.
type doubt struct{ attempt, reason string }

// heldAt returns the tasks that the ledger's first seq deliveries handed
// to workers and whose submit was not acknowledged: the tasks those workers
// held when their server died, each with whether it was executed.
func (l *ledger) heldAt(seq int, workers map[string]bool) map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	held := map[string]bool{}
	for _, d := range l.deliveries[:seq] {
		if workers[d.worker] && !l.submitted[d.task] {
			held[d.task] = len(l.runs[d.task]) > 0
		}
	}
	return held
}

// inDoubt reads every task whose result the owner may still not have (not
// collected, no submit acknowledged) and returns those in doubt. Their
// number must be the swarm's count of reconcile_required tasks.
func (o *swarmOwner) inDoubt(t *testing.T, l *ledger) map[string]doubt {
	t.Helper()
	o.mu.Lock()
	var ids []string
	for _, id := range o.ids {
		if _, ok := o.collected[id]; !ok {
			ids = append(ids, id)
		}
	}
	o.mu.Unlock()
	l.mu.Lock()
	ids = slices.DeleteFunc(ids, func(id string) bool { return l.submitted[id] })
	l.mu.Unlock()
	var mu sync.Mutex
	found := map[string]doubt{}
	err := parallel(ownerCalls, func(g int) error {
		for i := g; i < len(ids); i += ownerCalls {
			r, err := tryCall(t.Context(), o.cs, "chat_swarm_status", map[string]any{"swarm_id": o.swarmID, "task_id": ids[i]})
			if err != nil || r.IsError {
				return fmt.Errorf("status of %s: %v %v", ids[i], err, r.Data)
			}
			if task := r.Data["task"].(map[string]any); task["state"] == "reconcile_required" {
				mu.Lock()
				found[ids[i]] = doubt{attempt: task["attempt_id"].(string), reason: task["reason"].(string)}
				mu.Unlock()
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	counts := must(t, o.cs, "chat_swarm_status", map[string]any{"swarm_id": o.swarmID})["task_counts"].(map[string]any)
	if n, _ := counts["reconcile_required"].(float64); int(n) != len(found) {
		t.Fatalf("%d tasks found in doubt, the swarm counts %v", len(found), counts)
	}
	return found
}

// task reads one task.
func (o *swarmOwner) task(t *testing.T, id string) map[string]any {
	t.Helper()
	return must(t, o.cs, "chat_swarm_status", map[string]any{"swarm_id": o.swarmID, "task_id": id})["task"].(map[string]any)
}

// checkHeld checks what became of the tasks held when a server died: one
// never executed is in doubt; one executed is in doubt, or result_ready if
// its submit committed before the server died (its answer lost: a submit
// with next dies waiting for the next task) — or collected since, as the
// owner collects every ready result. Every task in doubt is there because
// the server that delivered it died.
func checkHeld(t *testing.T, o *swarmOwner, held map[string]bool, found map[string]doubt) {
	t.Helper()
	for id, executed := range held {
		_, isDoubt := found[id]
		if state := o.task(t, id)["state"]; !isDoubt && (!executed || state != "result_ready" && state != "collected") {
			t.Errorf("task %s (executed: %v) held when its server died is %v", id, executed, o.task(t, id))
		}
	}
	for id, d := range found {
		if d.reason != "server_restart" {
			t.Errorf("task %s is in doubt for %q, want server_restart", id, d.reason)
		}
	}
}

// neverRedelivered checks that no delivery since seq handed out a task in
// doubt.
func neverRedelivered(t *testing.T, l *ledger, seq int, found map[string]doubt) {
	t.Helper()
	for _, d := range l.since(seq) {
		if _, ok := found[d.task]; ok {
			t.Errorf("task %s in doubt was delivered again (attempt %s to %s)", d.task, d.attempt, d.worker)
		}
	}
}

// reconcile settles the tasks in doubt from the ledger, as an owner who
// asked its workers would: a task the ledger shows executed (by its latest
// attempt) is result_ready with the worker's result; one never executed is
// requeued on no_effect evidence naming its latest attempt. It returns how
// many were requeued.
func reconcile(t *testing.T, o *swarmOwner, l *ledger, found map[string]doubt) (requeued int) {
	t.Helper()
	refused := false
	for id, d := range found {
		args := map[string]any{"swarm_id": o.swarmID, "task_id": id, "attempt_id": d.attempt}
		e, executed := l.execution(id)
		switch {
		case executed && e.attempt != d.attempt:
			t.Fatalf("task %s: executed by attempt %s, in doubt with attempt %s", id, e.attempt, d.attempt)
		case executed && !refused:
			// Requeue needs no_effect evidence: an attempt that applied its
			// effect is never run again.
			args["decision"], args["evidence"] = "requeue", map[string]any{"disposition": "applied", "ref": "the worker did it"}
			if r := call(t, o.cs, "chat_swarm_reconcile", args); r.code() != "reconcile_required" {
				t.Errorf("requeue of an applied attempt: %v", r.Data)
			}
			refused = true
			fallthrough
		case executed:
			args["decision"], args["result"] = "result_ready", e.result
			args["evidence"] = map[string]any{"disposition": "applied", "ref": fmt.Sprintf("worker %s executed attempt %s", e.worker, e.attempt)}
		default:
			args["decision"] = "requeue"
			args["evidence"] = map[string]any{"disposition": "no_effect", "ref": fmt.Sprintf("no worker executed attempt %s", d.attempt)}
			requeued++
		}
		task := must(t, o.cs, "chat_swarm_reconcile", args)["task"].(map[string]any)
		want := map[bool]string{true: "result_ready", false: "queued"}[executed]
		if task["state"] != want {
			t.Fatalf("reconcile %s as %s: %v", id, args["decision"], task)
		}
		if executed {
			l.ready <- id
		}
	}
	return requeued
}

// TestSwarmKillRestart: SIGKILL of the server in the middle of a run, with
// one worker holding a task it was delivered and did not ack, another one
// holding a task it executed and did not submit, and the rest running. The
// server restarts on the same data directory, and the workers carry on in
// their own client sessions (the SDK's session outlives the connection:
// its signed ID is served by the new process, so each worker stays the
// same worker). Nothing is lost; every task held at the kill is
// reconcile_required (server_restart) and never delivered again until the
// owner, who settles each from the ledger, decides; the run completes with
// every task executed exactly once.
func TestSwarmKillRestart(t *testing.T) { eachEngine(t, swarmKillRestart) }

func swarmKillRestart(t *testing.T, engine string) {
	const tasks = 600
	data := dataDir(t, engine)
	srv := start(t, data, t.TempDir())
	ownerTok, workerTok := swarmTokens(t, data)
	c := newCrew(t, 3*time.Minute)
	ownerRoute := newRoute(c.ctx, srv.Base, ownerTok)
	// Leases outlast the run: what goes into doubt does so because its
	// server died.
	o := createSwarm(t, dialRoute(t, ownerRoute, srv.Base, "swarm"), ownerRoute, swarmWorkers, map[string]any{"lease_ttl_secs": 3600})
	routes := []*route{ownerRoute}
	var workers []*swarmWorker
	ids := map[string]bool{}
	for i := range swarmWorkers {
		r := newRoute(c.ctx, srv.Base, workerTok)
		w := joinSwarm(t, dialRoute(t, r, srv.Base, "worker"), o.swarmID, o.invite, i, "")
		w.route, w.faults, w.short = r, true, i%2 == 1
		workers, routes, ids[w.id] = append(workers, w), append(routes, r), true
	}
	claimed, executed := newHold(20, "claimed"), newHold(20, "executed")
	workers[0].hold, workers[1].hold = claimed, executed

	l := newLedger(tasks)
	t0 := time.Now()
	c.spawn(func(ctx context.Context) error { return o.dispatchBatches(ctx, l, tasks, 128) })
	for _, w := range workers {
		c.spawn(func(ctx context.Context) error { return w.run(ctx, l) })
	}
	c.spawn(func(ctx context.Context) error { return o.collectReady(ctx, l, tasks) })

	c.await(t, claimed.held)
	c.await(t, executed.held)
	cut(srv.kill, routes...)
	for _, w := range workers {
		c.await(t, w.route.stalled())
	}
	atKill, collectedAtKill := l.seq(), o.count()
	held := l.heldAt(atKill, ids)
	srv = start(t, data, t.TempDir())
	ownerRoute.restore(srv.Base)

	// The restarted server settled what the dead one had delivered before
	// it served anything: no worker holds a task.
	st := must(t, o.cs, "chat_swarm_status", map[string]any{"swarm_id": o.swarmID})
	counts := st["task_counts"].(map[string]any)
	if counts["claimed"] != nil || counts["running"] != nil {
		t.Errorf("after the restart: task counts %v", counts)
	}
	for _, w := range st["workers"].([]any) {
		if w := w.(map[string]any); w["current_task_id"] != nil {
			t.Errorf("after the restart worker %v holds %v", w["worker_id"], w["current_task_id"])
		}
	}
	found := o.inDoubt(t, l)
	checkHeld(t, o, held, found)
	for _, h := range []*hold{claimed, executed} {
		if _, ok := found[h.task]; !ok {
			t.Errorf("task %s held %s at the kill is not in doubt: %v", h.task, h.step, o.task(t, h.task))
		}
	}
	t.Logf("killed after %d deliveries, %d collected, %v: %d tasks held, %d in doubt", atKill, collectedAtKill, time.Since(t0), len(held), len(found))

	// The workers carry on as themselves; everything else completes, and
	// nothing in doubt is delivered meanwhile.
	completeAfterFault(t, c, o, l, workers, srv.Base, tasks, atKill, found, t0)
	if n := len(st["workers"].([]any)); n != swarmWorkers {
		t.Errorf("%d workers after the restart, want the %d that joined", n, swarmWorkers)
	}
}

// completeAfterFault moves the workers ws onto the server at base, lets
// the run complete, settles what is in doubt from the ledger (found), and
// checks that all tasks ran exactly once, that nothing in doubt was
// delivered again, and that every worker of ws took work after the fault
// (seq atKill of the ledger).
func completeAfterFault(t *testing.T, c *crew, o *swarmOwner, l *ledger, ws []*swarmWorker, base string, tasks, atKill int,
	found map[string]doubt, t0 time.Time) {
	t.Helper()
	for _, w := range ws {
		w.route.restore(base)
	}
	if err := o.waitCollected(c.ctx, tasks-len(found)); err != nil {
		c.abort(t, err)
	}
	neverRedelivered(t, l, atKill, found)
	requeued := reconcile(t, o, l, found)
	if err := o.waitCollected(c.ctx, tasks); err != nil {
		c.abort(t, err)
	}
	if err := o.close(c.ctx); err != nil {
		c.abort(t, err)
	}
	c.wait(t)
	t.Logf("%d tasks in %v: %d reconciled as result_ready, %d requeued", tasks, time.Since(t0), len(found)-requeued, requeued)

	checkExactlyOnce(t, o, l, tasks)
	after := map[string]int{}
	for _, d := range l.since(atKill) {
		after[d.worker]++
		if doubtful, ok := found[d.task]; ok && d.attempt == doubtful.attempt {
			t.Errorf("task %s: its attempt %s in doubt was delivered again", d.task, d.attempt)
		}
	}
	for _, w := range ws {
		if after[w.id] == 0 {
			t.Errorf("worker %d got no task after the fault", w.n)
		}
	}
}
