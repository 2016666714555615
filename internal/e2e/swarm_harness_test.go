package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The Chat Swarm end-to-end tests run an owner conversation and worker
// conversations, each its own MCP client session, against real servers.
// Workers record what they do in a shared ledger, which is the truth the
// tests hold the server's account to: every task executed exactly once,
// every result collected as its worker submitted it.

// swarmTokens makes the token of a swarm's owner (swarm:own) and the one
// its workers share (swarm:work; each worker is its own session), of a
// principal of the owner's group: only the group's members join its
// swarms.
func swarmTokens(t *testing.T, dataDir string) (owner, worker string) {
	t.Helper()
	owner = token(t, dataDir, "owner", "swarm:own")
	cliJSON(t, dataDir, "principal", "create", "worker", "--group", "owner")
	return owner, token(t, dataDir, "worker", "swarm:work")
}

// swarmPrompt is the prompt of task i.
func swarmPrompt(i int) string { return fmt.Sprintf("task %d: count to %d", i, i%97) }

// swarmResult is what a worker makes of a prompt; it names the worker, so
// that a result handed to another task or from another worker shows.
func swarmResult(prompt, workerID string) string { return "done: " + prompt + " by " + workerID }

// delivery is a task as chat_swarm_next handed it to a worker.
type delivery struct {
	seq                   int
	task, attempt, worker string
	redelivery            bool
}

// execution is a worker carrying a task out, once its ack succeeded.
type execution struct{ task, attempt, worker, result string }

// ledger is what the workers did: every delivery and every execution. It
// tells the owner which results are ready to collect.
type ledger struct {
	mu         sync.Mutex
	deliveries []delivery
	runs       map[string][]execution // task_id → its executions
	submitted  map[string]bool        // task_ids whose submit was acknowledged
	changed    chan struct{}          // closed and replaced on every delivery
	ready      chan string            // task_ids whose result is ready
}

func newLedger(tasks int) *ledger {
	return &ledger{runs: map[string][]execution{}, submitted: map[string]bool{}, changed: make(chan struct{}), ready: make(chan string, 4*tasks)}
}

func (l *ledger) delivered(d delivery) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d.seq = len(l.deliveries)
	l.deliveries = append(l.deliveries, d)
	close(l.changed)
	l.changed = make(chan struct{})
}

// executed records an execution; a task's second one is an error.
func (l *ledger) executed(e execution) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	prev := l.runs[e.task]
	l.runs[e.task] = append(prev, e)
	if len(prev) > 0 {
		return fmt.Errorf("task %s executed again: attempt %s by %s, after attempt %s by %s", e.task, e.attempt, e.worker, prev[0].attempt, prev[0].worker)
	}
	return nil
}

// acknowledged records a submit the server acknowledged: the result is
// ready for the owner.
func (l *ledger) acknowledged(task string) {
	l.mu.Lock()
	l.submitted[task] = true
	l.mu.Unlock()
	l.ready <- task
}

// execution returns a task's first execution.
func (l *ledger) execution(task string) (execution, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if rs := l.runs[task]; len(rs) > 0 {
		return rs[0], true
	}
	return execution{}, false
}

// seq is the number of deliveries so far.
func (l *ledger) seq() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.deliveries)
}

// since returns the deliveries from seq on.
func (l *ledger) since(seq int) []delivery {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]delivery(nil), l.deliveries[seq:]...)
}

// waitDeliveries waits until at least n deliveries were made.
func (l *ledger) waitDeliveries(ctx context.Context, n int) error {
	return waitAtLeast(ctx, &l.mu, n, func() (int, chan struct{}) { return len(l.deliveries), l.changed })
}

// waitAtLeast waits until read, called under mu, counts at least n; the
// channel it returns is closed at the next change.
func waitAtLeast(ctx context.Context, mu *sync.Mutex, n int, read func() (int, chan struct{})) error {
	for {
		mu.Lock()
		got, changed := read()
		mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// hold stops a worker at one step of its at-th delivery until its route is
// dropped, so that the server dies while the worker holds a task claimed
// (before its ack) or executed (before its submit).
type hold struct {
	at   int
	step string        // "claimed" or "executed"
	held chan struct{} // closed when the worker holds
	task string        // the task held, once held
}

func newHold(at int, step string) *hold { return &hold{at: at, step: step, held: make(chan struct{})} }

// swarmWorker is one worker conversation.
type swarmWorker struct {
	n      int
	cs     *mcp.ClientSession
	route  *route // nil: a connection never cut
	id     string
	epoch  float64
	key    string // carrier_key, on the stateless protocol
	faults bool   // servers die in this run: a task may go into doubt under the worker
	hold   *hold
	got    int // deliveries so far
	// spare is a second connection the worker alternates with, call by
	// call (nil: none); checkpoint makes it checkpoint every task.
	spare      *mcp.ClientSession
	calls      int
	checkpoint bool
	// short runs the one-call loop: next with ack for the first task,
	// then the submit of each takes the next (submit's next, with ack).
	short bool
}

// joinSwarm joins a new worker to a swarm with its invite.
func joinSwarm(t *testing.T, cs *mcp.ClientSession, swarmID, invite string, n int, key string) *swarmWorker {
	t.Helper()
	args := map[string]any{"swarm_id": swarmID, "invite": invite, "label": fmt.Sprintf("worker %d", n)}
	if key != "" {
		args["carrier_key"] = key
	}
	w := must(t, cs, "chat_swarm_join", args)["worker"].(map[string]any)
	if w["epoch"] != float64(0) || w["state"] != "idle" {
		t.Fatalf("worker %d joined as %v", n, w)
	}
	return &swarmWorker{n: n, cs: cs, id: w["worker_id"].(string), epoch: w["epoch"].(float64), key: key}
}

// args are a worker call's arguments: worker_id, epoch, carrier_key, and
// kv's names and values.
func (w *swarmWorker) args(kv ...any) map[string]any {
	a := map[string]any{"worker_id": w.id, "epoch": w.epoch}
	if w.key != "" {
		a["carrier_key"] = w.key
	}
	for i := 0; i+1 < len(kv); i += 2 {
		a[kv[i].(string)] = kv[i+1]
	}
	return a
}

// call makes a worker call, on its connection or its spare in turn.
func (w *swarmWorker) call(ctx context.Context, tool string, args map[string]any) (result, bool, error) {
	cs := w.cs
	if w.calls++; w.spare != nil && w.calls%2 == 0 {
		cs = w.spare
	}
	return swarmCall(ctx, w.route, cs, tool, args)
}

// stop holds the worker if its hold is for this step of this delivery.
func (w *swarmWorker) stop(step, task string) {
	h := w.hold
	if h == nil || w.route == nil || h.step != step || h.at != w.got {
		return
	}
	ctx, err := w.route.period()
	if err != nil {
		return
	}
	h.task = task
	close(h.held)
	<-ctx.Done()
}

// run loops until the swarm closes: the one-call loop when w.short, else
// next → ack → execute → submit.
func (w *swarmWorker) run(ctx context.Context, l *ledger) error {
	if w.short {
		return w.runShort(ctx, l)
	}
	return w.runLong(ctx, l)
}

// runShort is the one-call loop: next with ack (the task is running when
// it comes), execute, then submit with next (ack): its answer is the next
// task. A call lost with its server is made again as it was: a lost next
// re-delivers the task the worker holds, a lost submit with next replays
// the submit and re-delivers the same next task.
func (w *swarmWorker) runShort(ctx context.Context, l *ledger) error {
	fail := func(step string, r result) error { return fmt.Errorf("worker %d: %s: %v", w.n, step, r.Data) }
	var n map[string]any // the next answer to act on; nil: ask next
	for {
		if n == nil {
			r, lost, err := w.call(ctx, "chat_swarm_next", w.args("wait_secs", 25, "ack", true))
			switch {
			case err != nil:
				return err
			case lost:
				continue
			case r.IsError:
				return fail("next", r)
			}
			n = r.Data
		}
		switch n["state"] {
		case "closed":
			return nil
		case "idle":
			n = nil
			continue
		case "task":
		default:
			return fmt.Errorf("worker %d: next: %v", w.n, n)
		}
		task := n["task"].(map[string]any)
		id, attempt, prompt := task["task_id"].(string), task["attempt_id"].(string), task["prompt"].(string)
		if task["state"] != "running" && task["state"] != "cancel_requested" {
			return fmt.Errorf("worker %d: next with ack delivered %v", w.n, task)
		}
		w.got++
		l.delivered(delivery{task: id, attempt: attempt, worker: w.id, redelivery: n["redelivery"] == true})
		w.stop("claimed", id)
		out := swarmResult(prompt, w.id)
		if err := l.executed(execution{task: id, attempt: attempt, worker: w.id, result: out}); err != nil {
			return err
		}
		w.stop("executed", id)
		var r result
		for lost := true; lost; {
			var err error
			r, lost, err = w.call(ctx, "chat_swarm_submit", w.args("task_id", id, "result", out, "next", map[string]any{"ack": true, "wait_secs": 25}))
			if err != nil {
				return err
			}
		}
		n = nil
		switch {
		case !r.IsError:
			l.acknowledged(id)
			if next, ok := r.Data["next"].(map[string]any); ok {
				n = next
			} else if r.Data["next_error"] == nil {
				return fail("submit "+id+" without next", r)
			}
		case w.faults && r.code() == "reconcile_required":
			// The task went into doubt when its server died: the owner
			// settles it from what the worker did (the ledger).
		default:
			return fail("submit "+id, r)
		}
	}
}

// runLong loops next → ack → execute → submit until the swarm closes. A
// call lost with its server is taken up again where the worker stands: a
// lost next or ack from the top (next re-delivers a task the worker still
// holds), a lost submit by submitting again (a safe replay).
func (w *swarmWorker) runLong(ctx context.Context, l *ledger) error {
	fail := func(step string, r result) error { return fmt.Errorf("worker %d: %s: %v", w.n, step, r.Data) }
	for {
		r, lost, err := w.call(ctx, "chat_swarm_next", w.args("wait_secs", 25))
		switch {
		case err != nil:
			return err
		case lost:
			continue
		case r.IsError:
			return fail("next", r)
		case r.Data["state"] == "closed":
			return nil
		case r.Data["state"] == "idle":
			continue
		case r.Data["state"] != "task":
			return fail("next", r)
		}
		task := r.Data["task"].(map[string]any)
		id, attempt, prompt := task["task_id"].(string), task["attempt_id"].(string), task["prompt"].(string)
		w.got++
		l.delivered(delivery{task: id, attempt: attempt, worker: w.id, redelivery: r.Data["redelivery"] == true})
		w.stop("claimed", id)

		r, lost, err = w.call(ctx, "chat_swarm_ack", w.args("task_id", id))
		switch {
		case err != nil:
			return err
		case lost:
			continue
		case w.faults && r.code() == "reconcile_required":
			// Delivered before its server died, and in doubt since: the
			// worker never starts it.
			continue
		case r.IsError:
			return fail("ack "+id, r)
		}
		result := swarmResult(prompt, w.id)
		if err := l.executed(execution{task: id, attempt: attempt, worker: w.id, result: result}); err != nil {
			return err
		}
		w.stop("executed", id)
		if w.checkpoint {
			r, lost, err = w.call(ctx, "chat_swarm_checkpoint", w.args("checkpoint", map[string]any{
				"summary": "executed " + id, "state": "submitting", "next_step": "submit the result"}))
			switch {
			case err != nil:
				return err
			case lost: // it would only have renewed the lease
			case r.IsError || r.Data["worker"].(map[string]any)["checkpoint_at"] == nil:
				return fail("checkpoint", r)
			}
		}

		for lost = true; lost; {
			r, lost, err = w.call(ctx, "chat_swarm_submit", w.args("task_id", id, "result", result))
			if err != nil {
				return err
			}
		}
		switch {
		case !r.IsError:
			l.acknowledged(id)
		case w.faults && r.code() == "reconcile_required":
			// The task went into doubt when its server died: the owner
			// settles it from what the worker did (the ledger).
		default:
			return fail("submit "+id, r)
		}
	}
}

// swarmOwner is the owner conversation.
type swarmOwner struct {
	cs      *mcp.ClientSession
	route   *route // nil: a connection never cut
	swarmID string
	invite  string

	mu        sync.Mutex
	ids       map[string]string // task_key → task_id
	collected map[string]string // task_id → result collected
	changed   chan struct{}     // closed and replaced on every collection
}

// createSwarm creates a swarm for workers with policy (nil: the default).
func createSwarm(t *testing.T, cs *mcp.ClientSession, r *route, workers int, policy map[string]any) *swarmOwner {
	t.Helper()
	args := map[string]any{"worker_limit": workers}
	if policy != nil {
		args["policy"] = policy
	}
	c := must(t, cs, "chat_swarm_create", args)
	return &swarmOwner{cs: cs, route: r, swarmID: c["swarm"].(map[string]any)["swarm_id"].(string), invite: c["invite"].(string),
		ids: map[string]string{}, collected: map[string]string{}, changed: make(chan struct{})}
}

// call makes an owner call, again while it is lost with its server (every
// owner call the tests make is a safe replay).
func (o *swarmOwner) call(ctx context.Context, tool string, args map[string]any) (result, error) {
	args["swarm_id"] = o.swarmID
	for {
		r, lost, err := swarmCall(ctx, o.route, o.cs, tool, args)
		if err != nil || !lost {
			return r, err
		}
	}
}

// ownerCalls is how many calls the owner makes at once: an owner
// conversation's tool calls can overlap, and a lone caller would leave the
// workers waiting.
const ownerCalls = 4

// dispatch dispatches tasks 0..n-1 with at most window of them not yet
// delivered (under the queue limit).
func (o *swarmOwner) dispatch(ctx context.Context, l *ledger, n, window int) error {
	return parallel(ownerCalls, func(g int) error {
		for i := g; i < n; i += ownerCalls {
			if err := l.waitDeliveries(ctx, i-window); err != nil {
				return err
			}
			key := fmt.Sprintf("k%d", i)
			r, err := o.call(ctx, "chat_swarm_dispatch", map[string]any{"task_key": key, "prompt": swarmPrompt(i)})
			if err != nil {
				return err
			}
			if r.IsError {
				return fmt.Errorf("dispatch %s: %v", key, r.Data)
			}
			o.mu.Lock()
			o.ids[key] = r.Data["task"].(map[string]any)["task_id"].(string)
			o.mu.Unlock()
		}
		return nil
	})
}

// dispatchBatches dispatches tasks 0..n-1 in batches of up to 100 (one
// call each), with at most window of them not yet delivered. A batch lost
// with its server is sent again as it was: it replays.
func (o *swarmOwner) dispatchBatches(ctx context.Context, l *ledger, n, window int) error {
	for start := 0; start < n; start += 100 {
		end := min(start+100, n)
		if err := l.waitDeliveries(ctx, end-window); err != nil {
			return err
		}
		var tasks []map[string]any
		for i := start; i < end; i++ {
			tasks = append(tasks, map[string]any{"task_key": fmt.Sprintf("k%d", i), "prompt": swarmPrompt(i)})
		}
		r, err := o.call(ctx, "chat_swarm_dispatch", map[string]any{"tasks": tasks})
		if err != nil {
			return err
		}
		got, _ := r.Data["tasks"].([]any)
		if r.IsError || len(got) != len(tasks) {
			return fmt.Errorf("dispatch %d..%d: %v", start, end-1, r.Data)
		}
		o.mu.Lock()
		for i, x := range got {
			o.ids[tasks[i]["task_key"].(string)] = x.(map[string]any)["task_id"].(string)
		}
		o.mu.Unlock()
	}
	return nil
}

// collectReady collects every ready result, 100 a call, each call waiting
// for the first, until n tasks are collected: each result must be what
// the task's one execution submitted. Each call has its own key: one lost
// with its server is made again with it, and returns what it took.
func (o *swarmOwner) collectReady(ctx context.Context, l *ledger, n int) error {
	for call := 0; o.count() < n; call++ {
		r, err := o.call(ctx, "chat_swarm_collect", map[string]any{"wait_secs": 25, "limit": 100, "idempotency_key": fmt.Sprint("collect ", call)})
		if err != nil {
			return err
		}
		if r.IsError {
			return fmt.Errorf("collect: %v", r.Data)
		}
		tasks, _ := r.Data["tasks"].([]any)
		for _, x := range tasks {
			task := x.(map[string]any)
			id, _ := task["task_id"].(string)
			if again, err := o.took(l, id, task); err != nil {
				return err
			} else if again {
				return fmt.Errorf("task %s collected twice", id)
			}
		}
	}
	return nil
}

// took checks a collected task against its one execution, whose result it
// must carry, and records it; it reports whether it was collected before.
func (o *swarmOwner) took(l *ledger, id string, task map[string]any) (again bool, err error) {
	got, _ := task["result"].(string)
	e, ok := l.execution(id)
	switch {
	case task["state"] != "collected":
		return false, fmt.Errorf("collect %s: %v", id, task)
	case !ok || got != e.result:
		return false, fmt.Errorf("task %s collected with result %q; its execution submitted %q", id, got, e.result)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	_, again = o.collected[id]
	o.collected[id] = got
	close(o.changed)
	o.changed = make(chan struct{})
	return again, nil
}

// parallel runs fn(0..n-1) at once and returns their errors.
func parallel(n int, fn func(g int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() { errs[g] = fn(g) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// collect collects what the ledger says is ready until n tasks are
// collected: each result must be what the task's one execution submitted.
func (o *swarmOwner) collect(ctx context.Context, l *ledger, n int) error {
	full := make(chan struct{})
	var once sync.Once
	return parallel(ownerCalls, func(int) error {
		for {
			var id string
			select {
			case id = <-l.ready:
			case <-full:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
			r, err := o.call(ctx, "chat_swarm_collect", map[string]any{"task_id": id})
			if err != nil {
				return err
			}
			if r.IsError {
				return fmt.Errorf("collect %s: %v", id, r.Data)
			}
			if _, err := o.took(l, id, r.Data["task"].(map[string]any)); err != nil {
				return err
			}
			if o.count() >= n {
				once.Do(func() { close(full) })
			}
		}
	})
}

// close closes the swarm: its waiting workers are told, and stop.
func (o *swarmOwner) close(ctx context.Context) error {
	r, err := o.call(ctx, "chat_swarm_close", map[string]any{})
	if err == nil && (r.IsError || r.Data["swarm"].(map[string]any)["state"] != "closed") {
		err = fmt.Errorf("close: %v", r.Data)
	}
	return err
}

// count is how many tasks were collected.
func (o *swarmOwner) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.collected)
}

// waitCollected waits until n tasks were collected.
func (o *swarmOwner) waitCollected(ctx context.Context, n int) error {
	return waitAtLeast(ctx, &o.mu, n, func() (int, chan struct{}) { return len(o.collected), o.changed })
}

// taskIDs returns the dispatched tasks' ids.
func (o *swarmOwner) taskIDs() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	ids := make([]string, 0, len(o.ids))
	for _, id := range o.ids {
		ids = append(ids, id)
	}
	return ids
}

// crew runs the goroutines of a swarm run; the first error ends them all.
type crew struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error
}

func newCrew(t *testing.T, within time.Duration) *crew {
	ctx, cancel := context.WithTimeout(t.Context(), within)
	t.Cleanup(cancel)
	return &crew{ctx: ctx, cancel: cancel}
}

func (c *crew) spawn(fn func(ctx context.Context) error) {
	c.wg.Go(func() {
		if err := fn(c.ctx); err != nil {
			c.mu.Lock()
			c.errs = append(c.errs, err)
			c.mu.Unlock()
			c.cancel()
		}
	})
}

// wait waits for every goroutine and fails the test with their errors
// (leaving out those that only say the run was ended).
func (c *crew) wait(t *testing.T) {
	t.Helper()
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, err := range c.errs {
		if !errors.Is(err, context.Canceled) || len(c.errs) == 1 {
			t.Error(err)
		}
	}
	if len(c.errs) > 0 {
		t.FailNow()
	}
}

// await waits for ch to close, or fails the test with the crew's errors
// when the run ends first.
func (c *crew) await(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-c.ctx.Done():
		c.abort(t, c.ctx.Err())
	}
}

// abort ends the run and fails the test with err and the crew's errors.
func (c *crew) abort(t *testing.T, err error) {
	t.Helper()
	c.cancel()
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.errs {
		if !errors.Is(e, context.Canceled) {
			t.Error(e)
		}
	}
	t.Fatal(err)
}

// checkExactlyOnce checks a finished run of n tasks: each dispatched task
// executed once and collected with the result it submitted, and the swarm
// counts n tasks, all collected.
func checkExactlyOnce(t *testing.T, o *swarmOwner, l *ledger, n int) {
	t.Helper()
	ids := o.taskIDs()
	if len(ids) != n {
		t.Fatalf("%d tasks dispatched, want %d", len(ids), n)
	}
	distinct := map[string]bool{}
	for _, id := range ids {
		distinct[id] = true
		runs := l.runs[id]
		switch {
		case len(runs) != 1:
			t.Errorf("task %s executed %d times", id, len(runs))
		case o.collected[id] != runs[0].result:
			t.Errorf("task %s collected %q, submitted %q", id, o.collected[id], runs[0].result)
		}
	}
	if len(distinct) != n || len(l.runs) != n || len(o.collected) != n {
		t.Errorf("%d distinct tasks, %d executed, %d collected; want %d of each", len(distinct), len(l.runs), len(o.collected), n)
	}
	st := must(t, o.cs, "chat_swarm_status", map[string]any{"swarm_id": o.swarmID})
	counts := st["task_counts"].(map[string]any)
	if len(counts) != 1 || counts["collected"] != float64(n) {
		t.Errorf("task counts %v, want %d collected and nothing else", counts, n)
	}
}
