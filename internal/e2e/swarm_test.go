package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// swarmWorkers is how many worker conversations the swarm tests run.
const swarmWorkers = 8

// TestSwarmExactlyOnce: one owner and eight worker conversations, each its
// own stateful MCP session, run 2,000 tasks on a real server: the owner
// dispatches them 100 a call while the workers work them — half in the
// one-call loop (next with ack, then each submit takes the next task),
// half in next → ack → execute → submit — and collects the ready results
// 100 a call, each call waiting for the first. Every task is executed
// exactly once and collected with the result its worker submitted.
func TestSwarmExactlyOnce(t *testing.T) { eachEngine(t, swarmExactlyOnce) }

func swarmExactlyOnce(t *testing.T, engine string) {
	const tasks = 2000
	data := dataDir(t, engine)
	srv := start(t, data, t.TempDir())
	ownerTok, workerTok := swarmTokens(t, data)
	o := createSwarm(t, connectAt(t, at(srv.URL, "swarm"), ownerTok, "2025-11-25"), nil, swarmWorkers, nil)
	var workers []*swarmWorker
	for i := range swarmWorkers {
		w := joinSwarm(t, connectAt(t, at(srv.URL, "worker"), workerTok, "2025-11-25"), o.swarmID, o.invite, i, "")
		w.short = i%2 == 1
		workers = append(workers, w)
	}
	l := newLedger(tasks)
	t0 := time.Now()
	c := newCrew(t, 4*time.Minute)
	c.spawn(func(ctx context.Context) error { return o.dispatchBatches(ctx, l, tasks, 256) })
	for _, w := range workers {
		c.spawn(func(ctx context.Context) error { return w.run(ctx, l) })
	}
	c.spawn(func(ctx context.Context) error {
		if err := o.collectReady(ctx, l, tasks); err != nil {
			return err
		}
		return o.close(ctx)
	})
	c.wait(t)
	t.Logf("%s: %d tasks through %d workers in %v", engine, tasks, swarmWorkers, time.Since(t0))

	checkExactlyOnce(t, o, l, tasks)
	perWorker := map[string]int{}
	for _, d := range l.deliveries {
		perWorker[d.worker]++
		if d.redelivery {
			t.Errorf("task %s redelivered to %s in a run without faults", d.task, d.worker)
		}
	}
	if len(l.deliveries) != tasks {
		t.Errorf("%d deliveries for %d tasks", len(l.deliveries), tasks)
	}
	t.Logf("deliveries per worker: %v", perWorker)
	if log := srv.stderr.String(); strings.Contains(log, "level=ERROR") {
		t.Errorf("serve logged an error:\n%s", log)
	}
}

// carrierKey is a new random carrier_key (192 bits).
func carrierKey() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// TestSwarmStatelessLoop: on the stateless protocol (2026-07-28), with no
// MCP session, workers identified by their carrier_key alone run the whole
// loop — join, next, ack, checkpoint, submit — for a few dozen tasks. A
// second connection with a worker's key continues as that worker (one
// worker alternates between two connections call by call); without a key
// a worker call is refused, and with another key it is carrier_fenced.
func TestSwarmStatelessLoop(t *testing.T) {
	const tasks, workers = 36, 3
	data := dataDir(t, "sqlite")
	srv := start(t, data, t.TempDir())
	ownerTok, workerTok := swarmTokens(t, data)
	o := createSwarm(t, connectAt(t, at(srv.URL, "swarm"), ownerTok, "2026-07-28"), nil, workers, nil)
	stateless := func() *mcp.ClientSession { return connectAt(t, at(srv.URL, "worker"), workerTok, "2026-07-28") }

	join := map[string]any{"swarm_id": o.swarmID, "invite": o.invite, "label": "worker 0"}
	r := call(t, stateless(), "chat_swarm_join", join)
	if e, _ := r.Data["error"].(map[string]any); r.code() != "invalid_input" || e["details"].(map[string]any)["field"] != "carrier_key" {
		t.Fatalf("a stateless join without carrier_key: %v", r.Data)
	}
	var ws []*swarmWorker
	for i := range workers {
		w := joinSwarm(t, stateless(), o.swarmID, o.invite, i, carrierKey())
		w.checkpoint = true
		ws = append(ws, w)
	}
	ws[0].spare = stateless()
	join["carrier_key"] = ws[0].key
	if again := must(t, ws[0].spare, "chat_swarm_join", join); again["replayed"] != true || again["worker"].(map[string]any)["worker_id"] != ws[0].id {
		t.Fatalf("the same carrier_key joining again from another connection: %v", again)
	}
	other := *ws[0]
	other.key = carrierKey()
	r = call(t, ws[1].cs, "chat_swarm_next", other.args("wait_secs", 0))
	if e, _ := r.Data["error"].(map[string]any); r.code() != "carrier_fenced" || e["details"].(map[string]any)["epoch"] != float64(0) {
		t.Fatalf("worker 0's next with another carrier_key: %v", r.Data)
	}
	other.key = ""
	if r = call(t, ws[1].cs, "chat_swarm_next", other.args("wait_secs", 0)); r.code() != "invalid_input" {
		t.Fatalf("worker 0's next without a carrier_key: %v", r.Data)
	}

	l := newLedger(tasks)
	c := newCrew(t, 2*time.Minute)
	c.spawn(func(ctx context.Context) error { return o.dispatch(ctx, l, tasks, tasks) })
	for _, w := range ws {
		c.spawn(func(ctx context.Context) error { return w.run(ctx, l) })
	}
	c.spawn(func(ctx context.Context) error {
		if err := o.collect(ctx, l, tasks); err != nil {
			return err
		}
		return o.close(ctx)
	})
	c.wait(t)
	checkExactlyOnce(t, o, l, tasks)
	st := must(t, o.cs, "chat_swarm_status", map[string]any{"swarm_id": o.swarmID})
	for _, w := range st["workers"].([]any) {
		w := w.(map[string]any)
		if w["carrier_source"] != "carrier_key" || w["checkpoint_at"] == nil || w["epoch"] != float64(0) {
			t.Errorf("worker after the run: %v", w)
		}
	}
	if len(st["workers"].([]any)) != workers {
		t.Errorf("%d workers, want %d", len(st["workers"].([]any)), workers)
	}
	got := map[string]int{}
	for _, d := range l.deliveries {
		got[d.worker]++
	}
	if got[ws[0].id] == 0 {
		t.Errorf("worker 0, on two connections, got no task: %v", got)
	}
	t.Logf("deliveries per worker: %v", got)
}
