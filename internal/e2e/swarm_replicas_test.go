package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/continuo-dev/continuo/internal/store/pgtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSwarmReplicas: Chat Swarm on two replicas of one PostgreSQL
// database. A worker waiting in next on replica 2 gets a task dispatched
// on replica 1. Then 2,000 tasks: the owner on replica 1, the workers on
// both; replica 2 is killed mid-run, with two of its workers holding a
// task (one claimed, one executed), and its workers fail over to replica 1
// in their own client sessions. The survivor's reaper puts what the dead
// replica had delivered in doubt, nothing in doubt is delivered again
// until the owner settles it, and every task is executed exactly once.
func TestSwarmReplicas(t *testing.T) {
	pgtest.BaseURL(t)
	const tasks = 2000
	db := pgtest.Database(t)
	d1, d2 := filepath.Join(t.TempDir(), "r1"), filepath.Join(t.TempDir(), "r2")
	useDatabase(d1, db)
	useDatabase(d2, db)
	r1 := start(t, d1, t.TempDir())
	r2 := start(t, d2, t.TempDir())
	ownerTok, workerTok := swarmTokens(t, d1)
	wakeAcrossReplicas(t, r1, r2, ownerTok, workerTok)

	c := newCrew(t, 4*time.Minute)
	o := createSwarm(t, connectAt(t, at(r1.URL, "swarm"), ownerTok, "2025-11-25"), nil, swarmWorkers, map[string]any{"lease_ttl_secs": 3600})
	var workers, onR2 []*swarmWorker
	r2ids := map[string]bool{}
	for i := range swarmWorkers {
		srv := []*server{r1, r2}[i%2]
		r := newRoute(c.ctx, srv.Base, workerTok)
		w := joinSwarm(t, dialRoute(t, r, srv.Base, "worker"), o.swarmID, o.invite, i, "")
		w.route, w.faults, w.short = r, true, i%2 == 1
		workers = append(workers, w)
		if srv == r2 {
			onR2, r2ids[w.id] = append(onR2, w), true
		}
	}
	claimed, executed := newHold(60, "claimed"), newHold(60, "executed")
	onR2[0].hold, onR2[1].hold = claimed, executed

	l := newLedger(tasks)
	t0 := time.Now()
	c.spawn(func(ctx context.Context) error { return o.dispatchBatches(ctx, l, tasks, 256) })
	for _, w := range workers {
		c.spawn(func(ctx context.Context) error { return w.run(ctx, l) })
	}
	c.spawn(func(ctx context.Context) error { return o.collectReady(ctx, l, tasks) })

	c.await(t, claimed.held)
	c.await(t, executed.held)
	var routes []*route
	for _, w := range onR2 {
		routes = append(routes, w.route)
	}
	cut(r2.kill, routes...)
	killed := time.Now()
	for _, w := range onR2 {
		c.await(t, w.route.stalled())
	}
	atKill, collectedAtKill := l.seq(), o.count()
	held := l.heldAt(atKill, r2ids)

	// The survivor's reaper finds the dead replica's attempts (a process of
	// this host that no longer runs) within a few sweeps: until then its
	// workers still hold their tasks.
	deadline := time.Now().Add(30 * time.Second)
	for holding := true; holding; {
		holding = false
		for _, w := range must(t, o.cs, "chat_swarm_status", map[string]any{"swarm_id": o.swarmID})["workers"].([]any) {
			w := w.(map[string]any)
			holding = holding || r2ids[w["worker_id"].(string)] && w["current_task_id"] != nil
		}
		if holding && time.Now().After(deadline) {
			t.Fatal("30 s after replica 2 died, its workers still hold their tasks")
		}
		if holding {
			time.Sleep(50 * time.Millisecond) // polling the survivor's state, with a deadline
		}
	}
	settled := time.Since(killed)
	// Replica 1 carries on alone meanwhile: its workers take more tasks.
	if err := l.waitDeliveries(c.ctx, atKill+20); err != nil {
		c.abort(t, err)
	}
	found := o.inDoubt(t, l)
	checkHeld(t, o, held, found)
	for _, h := range []*hold{claimed, executed} {
		if _, ok := found[h.task]; !ok {
			t.Errorf("task %s held %s when replica 2 died is not in doubt: %v", h.task, h.step, o.task(t, h.task))
		}
	}
	t.Logf("replica 2 killed after %d deliveries, %d collected, %v; its tasks settled %v later: %d held, %d in doubt",
		atKill, collectedAtKill, killed.Sub(t0), settled, len(held), len(found))

	// Replica 2's workers carry on through replica 1, as themselves.
	completeAfterFault(t, c, o, l, onR2, r1.Base, tasks, atKill, found, t0)
}

// wakeAcrossReplicas: a worker waiting in next on replica 2 (it has sent a
// progress notification: it waits) gets the task that the owner dispatches
// on replica 1, before its wait ends.
func wakeAcrossReplicas(t *testing.T, r1, r2 *server, ownerTok, workerTok string) {
	t.Helper()
	o := createSwarm(t, connectAt(t, at(r1.URL, "swarm"), ownerTok, "2025-11-25"), nil, 1, nil)
	waiting := make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-swarm", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			select {
			case waiting <- struct{}{}:
			default:
			}
		}})
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: at(r2.URL, "worker"),
		HTTPClient: &http.Client{Transport: bearerTransport{workerTok}}, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	w := joinSwarm(t, cs, o.swarmID, o.invite, 0, "")

	type answer struct {
		r   result
		err error
		at  time.Time
	}
	answered := make(chan answer, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "chat_swarm_next", Arguments: w.args("wait_secs", 25)}
		params.SetProgressToken("wait")
		var a answer
		res, err := cs.CallTool(t.Context(), params)
		a.at, a.err = time.Now(), err
		if err == nil {
			a.r.IsError = res.IsError
			b, _ := json.Marshal(res.StructuredContent)
			a.err = json.Unmarshal(b, &a.r.Data)
		}
		answered <- a
	}()
	select {
	case <-waiting:
	case a := <-answered:
		t.Fatalf("next answered before it waited: %v %v", a.r.Data, a.err)
	case <-time.After(20 * time.Second):
		t.Fatal("no progress notification from the waiting next within 20 s")
	}
	sent := time.Now()
	task := must(t, o.cs, "chat_swarm_dispatch", map[string]any{"swarm_id": o.swarmID, "task_key": "wake", "prompt": "wake up"})["task"].(map[string]any)
	dispatched := time.Now()
	var a answer
	select {
	case a = <-answered:
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting next did not answer within 30 s")
	}
	if a.err != nil || a.r.IsError || a.r.Data["state"] != "task" || a.r.Data["task"].(map[string]any)["task_id"] != task["task_id"] {
		t.Fatalf("the worker waiting on replica 2 got %v %v, want task %v", a.r.Data, a.err, task["task_id"])
	}
	t.Logf("the worker waiting on replica 2 got the task %v after the dispatch on replica 1 returned (%v after it was sent)",
		a.at.Sub(dispatched), a.at.Sub(sent))
	id := task["task_id"].(string)
	must(t, cs, "chat_swarm_ack", w.args("task_id", id))
	must(t, cs, "chat_swarm_submit", w.args("task_id", id, "result", "awake"))
	if got := must(t, o.cs, "chat_swarm_collect", map[string]any{"swarm_id": o.swarmID, "task_id": id})["task"].(map[string]any); got["result"] != "awake" {
		t.Errorf("collected %v", got)
	}
	if err := o.close(t.Context()); err != nil {
		t.Fatal(err)
	}
}
