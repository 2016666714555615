package e2e

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/continuo-dev/continuo/internal/store/pgtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestContinuityReplicas: worker continuity (CONTRACT.md §8) on two
// replicas of one PostgreSQL database. A worker joined through replica 1
// works a task and checkpoints; the owner prepares its continuation on
// replica 1 and a new session on replica 2 redeems the ticket: the same
// worker at epoch 1. The old carrier, told compact_required while the
// ticket waits, then hears continued from next on replica 1 and is fenced
// from everything else; a task dispatched for the
// worker on replica 1 reaches the new carrier waiting on replica 2. Then
// the worker is continued 50 times by two new sessions at once, one on each
// replica, redeeming one ticket: each time exactly one wins, the epoch
// moves once, and the loser carries nothing.
func TestContinuityReplicas(t *testing.T) {
	pgtest.BaseURL(t)
	db := pgtest.Database(t)
	d1, d2 := filepath.Join(t.TempDir(), "r1"), filepath.Join(t.TempDir(), "r2")
	useDatabase(d1, db)
	useDatabase(d2, db)
	r1 := start(t, d1, t.TempDir())
	r2 := start(t, d2, t.TempDir())
	ownerTok, workerTok := swarmTokens(t, d1)
	o := createSwarm(t, connectAt(t, at(r1.URL, "swarm"), ownerTok, "2025-11-25"), nil, 1, nil)

	// (a) A worker on replica 1 works a task.
	a := joinSwarm(t, connectAt(t, at(r1.URL, "worker"), workerTok, "2025-11-25"), o.swarmID, o.invite, 0, "")
	t1 := must(t, o.cs, "chat_swarm_dispatch", map[string]any{"swarm_id": o.swarmID, "task_key": "before",
		"prompt": "summarise the design", "preferred_worker_id": a.id})["task"].(map[string]any)["task_id"].(string)
	if d := must(t, a.cs, "chat_swarm_next", a.args("wait_secs", 0)); d["state"] != "task" || d["task"].(map[string]any)["task_id"] != t1 {
		t.Fatalf("next with task %s queued for the worker: %v", t1, d)
	}
	must(t, a.cs, "chat_swarm_ack", a.args("task_id", t1))
	checkpoint(t, a, "summarising")
	r := call(t, o.cs, "chat_swarm_prepare_continuation", map[string]any{"swarm_id": o.swarmID, "worker_id": a.id, "reason": "too early"})
	if e, _ := r.Data["error"].(map[string]any); r.code() != "unsafe_boundary" || e["details"].(map[string]any)["reason"] != "task_in_flight" {
		t.Fatalf("prepare while the worker holds a task: %v", r.Data)
	}
	must(t, a.cs, "chat_swarm_submit", a.args("task_id", t1, "result", "the design, summarised"))
	checkpoint(t, a, "design summarised")
	if got := must(t, o.cs, "chat_swarm_collect", map[string]any{"swarm_id": o.swarmID, "task_id": t1})["task"].(map[string]any); got["result"] != "the design, summarised" {
		t.Fatalf("collect %s: %v", t1, got)
	}

	ticket, cn := prepare(t, o, a.id, 0)
	csB, waitingB := waitingSession(t, at(r2.URL, "worker"), workerTok)
	b := carrierFor(a, csB, "")
	// Until the ticket is redeemed the old carrier is the worker's, told to
	// take no more work.
	oneCarrier(t, o, a, "compact_required", nil, []*swarmWorker{b})
	j := redeem(t, b, o.swarmID, ticket, false)
	capsule, _ := j["capsule"].(map[string]any)
	if capsule["worker_id"] != a.id || capsule["epoch"] != float64(1) || capsule["authority"] != "context_only" || cn["capsule_hash"] == nil {
		t.Fatalf("the capsule of the redeem: %v (continuation %v)", j["capsule"], cn)
	}
	if r := call(t, a.cs, "chat_swarm_next", a.args("wait_secs", 0)); r.IsError || r.Data["state"] != "continued" {
		t.Fatalf("the old carrier's next on replica 1, continued on replica 2: %v", r.Data)
	}
	fencedCode(t, a, "submit", call(t, a.cs, "chat_swarm_submit", a.args("task_id", t1, "result", "the design, summarised")), 1)
	oneCarrier(t, o, b, "idle", []*swarmWorker{a}, nil)

	// The new carrier waits on replica 2 for a task dispatched on replica 1.
	got := waitInNext(t, b, waitingB)
	t2 := must(t, o.cs, "chat_swarm_dispatch", map[string]any{"swarm_id": o.swarmID, "task_key": "after",
		"prompt": "carry on", "preferred_worker_id": a.id})["task"].(map[string]any)["task_id"].(string)
	if d := awaitAnswer(t, "the new carrier's waiting next", got); d.IsError || d.Data["state"] != "task" || d.Data["task"].(map[string]any)["task_id"] != t2 {
		t.Fatalf("the new carrier waiting on replica 2 got %v, want task %s", d.Data, t2)
	}
	must(t, b.cs, "chat_swarm_ack", b.args("task_id", t2))
	must(t, b.cs, "chat_swarm_submit", b.args("task_id", t2, "result", "carried on"))
	if got := must(t, o.cs, "chat_swarm_collect", map[string]any{"swarm_id": o.swarmID, "task_id": t2})["task"].(map[string]any); got["result"] != "carried on" || got["worker_id"] != a.id {
		t.Fatalf("collect %s: %v", t2, got)
	}
	checkpoint(t, b, "carried on")

	// (b) Two new sessions, one per replica, redeem one ticket at once.
	const trials = 50
	cur := b
	retired := []*swarmWorker{a}
	losses := map[string]int{}
	for trial := range trials {
		ticket, _ := prepare(t, o, cur.id, cur.epoch)
		racers := []*swarmWorker{carrierFor(cur, connectAt(t, at(r1.URL, "worker"), workerTok, "2025-11-25"), ""),
			carrierFor(cur, connectAt(t, at(r2.URL, "worker"), workerTok, "2025-11-25"), "")}
		answers := make([]answer, len(racers))
		gate := make(chan struct{})
		var wg sync.WaitGroup
		for i, c := range racers {
			wg.Go(func() {
				<-gate
				answers[i].r, answers[i].err = tryCall(t.Context(), c.cs, "chat_swarm_join", redeemArgs(o.swarmID, ticket, c))
			})
		}
		close(gate)
		wg.Wait()
		var winner, loser *swarmWorker
		for i, a := range answers {
			switch {
			case a.err != nil:
				t.Fatalf("trial %d: racer %d: %v", trial, i, a.err)
			case !a.r.IsError:
				w := a.r.Data["worker"].(map[string]any)
				if winner != nil || w["worker_id"] != cur.id || w["epoch"] != cur.epoch+1 || a.r.Data["replayed"] == true {
					t.Fatalf("trial %d: racer %d won with %v (the other: %v)", trial, i, a.r.Data, answers[1-i].r.Data)
				}
				winner = racers[i]
			case a.r.code() == "conflict" && a.r.reason() == "lost_race", a.r.code() == "ticket_invalid" && a.r.reason() == "used":
				// conflict when its redeem began while the ticket was
				// open; ticket_invalid when the winner had committed.
				losses[a.r.code()]++
				loser = racers[i]
			default:
				t.Fatalf("trial %d: racer %d: %v", trial, i, a.r.Data)
			}
		}
		if winner == nil || loser == nil {
			t.Fatalf("trial %d: %v and %v: want one winner", trial, answers[0].r.Data, answers[1].r.Data)
		}
		// The loser redeeming again is refused too: the ticket is used.
		if r := call(t, loser.cs, "chat_swarm_join", redeemArgs(o.swarmID, ticket, loser)); r.code() != "ticket_invalid" {
			t.Fatalf("trial %d: the loser redeeming the used ticket again: %v", trial, r.Data)
		}
		retired = append(retired, cur)
		// The carriers retired before the last one were checked already.
		oneCarrier(t, o, winner, "idle", retired[len(retired)-1:], []*swarmWorker{loser})
		checkpoint(t, winner, fmt.Sprintf("trial %d won", trial))
		for _, c := range []*mcp.ClientSession{loser.cs, cur.cs} {
			c.Close()
		}
		cur = winner
	}
	if cur.epoch != 1+trials {
		t.Fatalf("after %d trials the worker is at epoch %v, want %d", trials, cur.epoch, 1+trials)
	}
	// Every retired carrier of the run is still told it was continued.
	for _, c := range retired[:1] {
		if r := call(t, c.cs, "chat_swarm_next", c.args("wait_secs", 0)); r.IsError || r.Data["state"] != "continued" {
			t.Errorf("the carrier retired at epoch %v, at the end: %v", c.epoch, r.Data)
		}
	}
	t.Logf("%d racing redeems across two replicas: the losers got %v", trials, losses)
}

// TestContinuityKillRestart: a prepared ticket outlives a SIGKILL of its
// server and redeems after the restart (epoch 1); a redeem whose answer was
// lost with its server (killed right after it committed) is recovered by
// the same new carrier joining with the same ticket again — replayed, the
// same worker at the same epoch, no second move — while anyone else is
// refused the ticket. After every step exactly one carrier is the worker's.
// The conversations are stateful sessions behind routes, which outlive
// their server (dialRoute).
func TestContinuityKillRestart(t *testing.T) { eachEngine(t, continuityKillRestart) }

func continuityKillRestart(t *testing.T, engine string) {
	data := dataDir(t, engine)
	srv := start(t, data, t.TempDir())
	ownerTok, workerTok := swarmTokens(t, data)
	var routes []*route
	dial := func(tok, toolset string) *mcp.ClientSession {
		r := newRoute(t.Context(), srv.Base, tok)
		routes = append(routes, r)
		return dialRoute(t, r, srv.Base, toolset)
	}
	restart := func() {
		cut(srv.kill, routes...)
		srv = start(t, data, t.TempDir())
		for _, r := range routes {
			r.restore(srv.Base)
		}
	}
	o := createSwarm(t, dial(ownerTok, "swarm"), nil, 1, nil)
	a := joinSwarm(t, dial(workerTok, "worker"), o.swarmID, o.invite, 0, "")
	checkpoint(t, a, "joined")
	oneCarrier(t, o, a, "idle", nil, nil)

	t1, _ := prepare(t, o, a.id, 0)
	b := carrierFor(a, dial(workerTok, "worker"), "")
	oneCarrier(t, o, a, "compact_required", nil, []*swarmWorker{b})
	restart()
	oneCarrier(t, o, a, "compact_required", nil, []*swarmWorker{b})
	st := must(t, o.cs, "chat_swarm_status", map[string]any{"swarm_id": o.swarmID})
	if w := st["workers"].([]any)[0].(map[string]any); w["continuity_state"] != "continuation_pending" {
		t.Fatalf("after the restart the worker with a prepared ticket is %v", w)
	}
	redeem(t, b, o.swarmID, t1, false)
	oneCarrier(t, o, b, "idle", []*swarmWorker{a}, nil)

	checkpoint(t, b, "continued once")
	t2, _ := prepare(t, o, b.id, 1)
	c := carrierFor(b, dial(workerTok, "worker"), "")
	redeem(t, c, o.swarmID, t2, false)
	restart() // the redeem's answer is lost with its server
	oneCarrier(t, o, c, "idle", []*swarmWorker{a, b}, nil)
	redeem(t, c, o.swarmID, t2, true)
	d := carrierFor(b, dial(workerTok, "worker"), "")
	for i, tk := range []string{t1, t2} {
		if r := call(t, d.cs, "chat_swarm_join", redeemArgs(o.swarmID, tk, d)); r.code() != "ticket_invalid" {
			t.Fatalf("another conversation redeeming used ticket %d: %v", i+1, r.Data)
		}
	}
	oneCarrier(t, o, c, "idle", []*swarmWorker{a, b}, []*swarmWorker{d})
	// b's receipt no longer describes the worker: re-read now, it says b
	// is fenced, not that b carries the worker at its current epoch.
	fencedCode(t, b, "b redeeming its ticket again once c replaced it", call(t, b.cs, "chat_swarm_join", redeemArgs(o.swarmID, t1, b)), 2)
	checkpoint(t, c, "continued twice")
	if w := must(t, o.cs, "chat_swarm_status", map[string]any{"swarm_id": o.swarmID})["workers"].([]any)[0].(map[string]any); w["epoch"] != float64(2) {
		t.Fatalf("after two continuations and a replay the worker is %v", w)
	}
}

// TestContinuityRollovers: 200 continuations in a row on SQLite, each to a
// fresh stateless carrier_key: prepare → redeem → next → checkpoint. The
// epochs go 1..200, each once; every old carrier hears continued and is
// fenced; no ticket redeems twice; every tenth epoch works a task; and the
// swarm's state stays bounded: one worker, a context ledger of a handful
// of entries per epoch and a few epochs in all.
func TestContinuityRollovers(t *testing.T) {
	const n = 200
	data := dataDir(t, "sqlite")
	srv := start(t, data, t.TempDir())
	ownerTok, workerTok := swarmTokens(t, data)
	o := createSwarm(t, connectAt(t, at(srv.URL, "swarm"), ownerTok, "2026-07-28"), nil, 1, nil)
	ws := connectAt(t, at(srv.URL, "worker"), workerTok, "2026-07-28")
	cur := joinSwarm(t, ws, o.swarmID, o.invite, 0, carrierKey())
	checkpoint(t, cur, "joined")
	epochs := map[float64]int{}
	var retired []*swarmWorker
	prevTicket := ""
	tasks := 0
	for i := 1; i <= n; i++ {
		ticket, _ := prepare(t, o, cur.id, cur.epoch)
		next := carrierFor(cur, ws, carrierKey())
		j := redeem(t, next, o.swarmID, ticket, false)
		epochs[j["worker"].(map[string]any)["epoch"].(float64)]++
		if r := call(t, ws, "chat_swarm_next", cur.args("wait_secs", 0)); r.IsError || r.Data["state"] != "continued" {
			t.Fatalf("rollover %d: the old carrier's next: %v", i, r.Data)
		}
		fencedCode(t, cur, "checkpoint", call(t, ws, "chat_swarm_checkpoint", cur.args("checkpoint", map[string]any{"summary": "stale"})), next.epoch)
		other := carrierFor(cur, ws, carrierKey())
		for _, tk := range []string{ticket, prevTicket} {
			if tk == "" {
				continue
			}
			if r := call(t, ws, "chat_swarm_join", redeemArgs(o.swarmID, tk, other)); r.code() != "ticket_invalid" {
				t.Fatalf("rollover %d: a used ticket redeemed by another carrier: %v", i, r.Data)
			}
		}
		if i%10 == 0 {
			id := must(t, o.cs, "chat_swarm_dispatch", map[string]any{"swarm_id": o.swarmID, "task_key": fmt.Sprintf("k%d", i),
				"prompt": swarmPrompt(i), "preferred_worker_id": cur.id})["task"].(map[string]any)["task_id"].(string)
			d := must(t, ws, "chat_swarm_next", next.args("wait_secs", 0))
			if d["state"] != "task" || d["task"].(map[string]any)["task_id"] != id {
				t.Fatalf("rollover %d: next with task %s queued: %v", i, id, d)
			}
			must(t, ws, "chat_swarm_ack", next.args("task_id", id))
			must(t, ws, "chat_swarm_submit", next.args("task_id", id, "result", swarmResult(swarmPrompt(i), cur.id)))
			must(t, o.cs, "chat_swarm_collect", map[string]any{"swarm_id": o.swarmID, "task_id": id})
			tasks++
		} else if d := must(t, ws, "chat_swarm_next", next.args("wait_secs", 0)); d["state"] != "idle" {
			t.Fatalf("rollover %d: the new carrier's next: %v", i, d)
		}
		checkpoint(t, next, fmt.Sprintf("epoch %d", i))
		p := must(t, ws, "chat_swarm_context_status", next.args())
		// The epoch's ledger: the capsule it started from, and the task's
		// prompt and result on a task's epoch.
		sources := p["pressure"].(map[string]any)["sources"].([]any)
		capsules := 0
		for _, e := range sources {
			if e.(map[string]any)["source"] == "capsule" {
				capsules++
			}
		}
		if want := map[bool]int{true: 3, false: 1}[i%10 == 0]; p["epoch"] != next.epoch || capsules != 1 || len(sources) != want {
			t.Fatalf("rollover %d: context status %v", i, p)
		}
		retired = append(retired, cur)
		prevTicket, cur = ticket, next
	}
	for e := 1; e <= n; e++ {
		if epochs[float64(e)] != 1 {
			t.Errorf("epoch %d reached %d times", e, epochs[float64(e)])
		}
	}
	if len(epochs) != n {
		t.Errorf("%d epochs reached, want %d", len(epochs), n)
	}
	for _, c := range retired {
		if r := call(t, ws, "chat_swarm_next", c.args("wait_secs", 0)); r.IsError || r.Data["state"] != "continued" {
			t.Fatalf("the carrier retired at epoch %v, at the end: %v", c.epoch, r.Data)
		}
	}
	oneCarrier(t, o, cur, "idle", retired[len(retired)-1:], nil)
	srv.stop()
	rows := exportRows(t, data, filepath.Join(t.TempDir(), "export.jsonl"))
	t.Logf("after %d rollovers and %d tasks: %v", n, tasks, rows)
	switch {
	case rows["workers"] != 1:
		t.Errorf("%d workers", rows["workers"])
	case rows["context_ledger"] > 6:
		t.Errorf("the context ledger holds %d entries after %d rollovers: it grows", rows["context_ledger"], n)
	case rows["continuations"] != n || rows["carriers"] != n+1:
		t.Errorf("%d continuations and %d carriers after %d rollovers", rows["continuations"], rows["carriers"], n)
	}
}
