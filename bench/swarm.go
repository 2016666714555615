package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// The swarm run (-swarm): Chat Swarm over MCP HTTP with lean clients, each
// its own stateful session and so its own carrier.
//
//   - throughput of two loops on the same swarm and workers, alternated
//     (short, old, old, short: half the tasks each time):
//     the short loop a worker uses since issue 24 — the owner dispatches
//     batches of 100 (tasks[]) and collects with a waiting collect without
//     task_id; a worker calls chat_swarm_next with ack once, then
//     chat_swarm_submit with next (ack) for every task — and the old
//     five-call loop (dispatch one task, next, ack, submit, collect it by
//     task_id). Per loop: tasks/s end to end (first dispatch to last
//     collect) against the raw commit rate of the same run, tool calls per
//     task and the model-context bytes per task (callMeter);
//   - wake latency: W workers wait in next (ack); the owner dispatches one
//     task; the time from the dispatch's answer to the waiting worker's
//     next returning it, against the raw commit's p50 of the same run;
//   - on PostgreSQL also with the workers split over two replicas, and the
//     wake of a worker waiting on replica B for a dispatch on replica A.

// swarmEnv is one server set of the swarm run: where owners and workers
// connect.
type swarmEnv struct {
	ownerURL   string
	workerURLs []string // workers are spread over these, round robin
	token      string
	pids       []int // server processes whose CPU is counted per task (SQLite only)
}

// rawBase is the same run's raw commit baseline.
type rawBase struct {
	rate float64       // commits/s
	p50  time.Duration // one commit's latency
}

// loopRun is one loop's share of the throughput phase.
type loopRun struct {
	tasks   int
	elapsed time.Duration
	meter   callMeter     // owners and workers together
	srvCPU  time.Duration // CPU of the servers of swarmEnv.pids
	selfCPU time.Duration // CPU of this process (the clients)
}

func (l loopRun) perSec() float64 { return float64(l.tasks) / l.elapsed.Seconds() }

func (l loopRun) perTask(n int64) float64 { return float64(n) / float64(l.tasks) }

// swarmFixture is a swarm with its owner clients and joined workers.
type swarmFixture struct {
	id     string
	owner  *leanClient   // wake dispatches
	owners []*leanClient // throughput: half dispatch, half collect
	ws     []*swarmWorker
}

// close closes every client at once: a worker's session may still end a
// cancelled long poll, and its DELETE waits for it.
func (f *swarmFixture) close() {
	var wg sync.WaitGroup
	for _, c := range append(f.clients(), f.owner) {
		wg.Add(1)
		go func() { defer wg.Done(); c.close() }()
	}
	wg.Wait()
}

func newSwarm(ctx context.Context, e swarmEnv, workers int) (*swarmFixture, error) {
	owner, err := dialLean(e.ownerURL, e.token)
	if err != nil {
		return nil, err
	}
	f := &swarmFixture{owner: owner}
	created, err := owner.call(ctx, "chat_swarm_create", map[string]any{"worker_limit": max(64, workers),
		"policy": map[string]any{"lease_ttl_secs": 600}})
	if err != nil {
		f.close()
		return nil, err
	}
	f.id = created["swarm"].(map[string]any)["swarm_id"].(string)
	invite := created["invite"].(string)
	for i := range workers {
		c, err := dialLean(e.workerURLs[i%len(e.workerURLs)], e.token)
		if err != nil {
			f.close()
			return nil, err
		}
		f.ws = append(f.ws, &swarmWorker{c: c})
		j, err := c.call(ctx, "chat_swarm_join", map[string]any{"swarm_id": f.id, "invite": invite, "label": fmt.Sprint("bench-", i)})
		if err != nil {
			f.close()
			return nil, err
		}
		f.ws[i].id = j["worker"].(map[string]any)["worker_id"].(string)
	}
	for range 8 { // old loop: 4 dispatch, 4 collect (a lean client serves one caller at a time); short loop: 2 and 2
		o, err := dialLean(e.ownerURL, e.token)
		if err != nil {
			f.close()
			return nil, err
		}
		f.owners = append(f.owners, o)
	}
	return f, nil
}

// clients are the fixture's clients that take part in throughput.
func (f *swarmFixture) clients() []*leanClient {
	cs := append([]*leanClient{}, f.owners...)
	for _, w := range f.ws {
		cs = append(cs, w.c)
	}
	return cs
}

// metered runs fn with every client's meter reset, and returns their sum.
func (f *swarmFixture) metered(fn func() error) (callMeter, error) {
	cs := f.clients()
	for _, c := range cs {
		c.meter = callMeter{}
	}
	err := fn()
	var m callMeter
	for _, c := range cs {
		m.Calls += c.meter.Calls
		m.ArgBytes += c.meter.ArgBytes
		m.ResultBytes += c.meter.ResultBytes
	}
	return m, err
}

// swarmLoops runs tasks through f's swarm in both loops, alternated.
func swarmLoops(ctx context.Context, f *swarmFixture, tasks int, pids []int) (short, old loopRun, err error) {
	half := tasks / 2
	for _, fn := range []struct {
		into *loopRun
		run  func(context.Context, *swarmFixture, int) (time.Duration, error)
	}{{&short, shortLoop}, {&old, oldLoop}, {&old, oldLoop}, {&short, shortLoop}} {
		var d time.Duration
		srv0, self0 := serversCPU(pids), selfCPU()
		m, err := f.metered(func() error {
			var err error
			d, err = fn.run(ctx, f, half)
			return err
		})
		if err != nil {
			return short, old, err
		}
		fn.into.srvCPU += serversCPU(pids) - srv0
		fn.into.selfCPU += selfCPU() - self0
		fn.into.tasks += half
		fn.into.elapsed += d
		fn.into.meter.Calls += m.Calls
		fn.into.meter.ArgBytes += m.ArgBytes
		fn.into.meter.ResultBytes += m.ResultBytes
	}
	return short, old, nil
}

// swarmBench runs the swarm phases on e and returns its rows: with tput,
// both loops' throughput (and the loops, for ratios between sets); with
// wake, the wake latency.
func swarmBench(label string, e swarmEnv, workers, tasks int, base rawBase, tput, wake bool) ([]row, *loopRun, error) {
	ctx := context.Background()
	f, err := newSwarm(ctx, e, workers)
	if err != nil {
		return nil, nil, err
	}
	defer f.close()
	var rows []row
	var shortRun *loopRun
	if tput {
		short, old, err := swarmLoops(ctx, f, tasks, e.pids)
		if err != nil {
			return nil, nil, err
		}
		shortRun = &short
		for _, l := range []struct {
			name string
			r    loopRun
			tgt  bool
		}{
			{"short loop (dispatch tasks[] ≤ 100, next ack once, submit with next ack, waiting collect)", short, true},
			{"old loop (dispatch one, next, ack, submit, collect by task_id)", old, false},
		} {
			r := l.r
			logf("%s: %s: %d tasks, %d workers: %.0f tasks/s (raw commits %.0f/s), %.2f calls/task, %.0f B/task", label, l.name, r.tasks, workers,
				r.perSec(), base.rate, r.perTask(r.meter.Calls), r.perTask(r.meter.ArgBytes+r.meter.ResultBytes))
			target, result := "—", "info"
			if l.tgt {
				target, result = "≥ 1,000/s", passFail(r.perSec() >= 1000)
			}
			rows = append(rows,
				row{fmt.Sprintf("%s: tasks/s end to end, %d workers, %s", label, workers, l.name), fmt.Sprintf("%.0f/s", r.perSec()),
					fmt.Sprintf("raw commits %.0f/s", base.rate), ratioStr(r.perSec() / base.rate), target, result},
				row{fmt.Sprintf("  %s: tool calls per task (owner + worker), %s", label, l.name), fmt.Sprintf("%.2f", r.perTask(r.meter.Calls)),
					fmt.Sprintf("%d calls, %d tasks", r.meter.Calls, r.tasks), "—", "—", "info"},
				row{fmt.Sprintf("  %s: tool-call bytes per task (arguments + result text), %s", label, l.name),
					fmt.Sprintf("%.0f B", r.perTask(r.meter.ArgBytes+r.meter.ResultBytes)),
					fmt.Sprintf("%.0f B arguments + %.0f B results", r.perTask(r.meter.ArgBytes), r.perTask(r.meter.ResultBytes)), "—", "—", "info"},
			)
			if len(e.pids) > 0 {
				rows = append(rows, row{fmt.Sprintf("  %s: CPU per task, server / bench clients, %s", label, l.name),
					msStr(r.srvCPU/time.Duration(r.tasks)) + " / " + msStr(r.selfCPU/time.Duration(r.tasks)),
					fmt.Sprintf("%.0f ms / %.0f ms for %d tasks", r.srvCPU.Seconds()*1000, r.selfCPU.Seconds()*1000, r.tasks), "—", "—", "info"})
			}
		}
		rows = append(rows, row{fmt.Sprintf("  %s: short loop ÷ old loop, tasks/s", label), ratioStr(short.perSec() / old.perSec()),
			fmt.Sprintf("%.0f/s vs %.0f/s", short.perSec(), old.perSec()), "—", "—", "info"})
	}
	if wake {
		sent, answered, err := swarmWakes(ctx, f, 200)
		if err != nil {
			return nil, nil, err
		}
		p50, p99 := percentile(answered, 0.50), percentile(answered, 0.99)
		s50, s99 := percentile(sent, 0.50), percentile(sent, 0.99)
		logf("%s: wake p50 %s p99 %s from the dispatch's answer, %s %s from it sent (raw commit p50 %s)", label,
			msStr(p50), msStr(p99), msStr(s50), msStr(s99), msStr(base.p50))
		wakeTarget := 2 * time.Millisecond
		if e.workerURLs[0] != e.ownerURL {
			wakeTarget = 5 * time.Millisecond // across replicas
		}
		rows = append(rows,
			row{fmt.Sprintf("%s: wake latency p50, %d waiting workers (dispatch's answer → next returns)", label, workers),
				msStr(p50), "raw commit p50 " + msStr(base.p50), ratioStr(float64(p50) / float64(base.p50)),
				"p50 ≤ " + msStr(wakeTarget), passFail(p50 <= wakeTarget)},
			row{fmt.Sprintf("%s: wake latency p99", label), msStr(p99), "raw commit p50 " + msStr(base.p50),
				ratioStr(float64(p99) / float64(base.p50)), "p99 ≤ 20 ms", passFail(p99 <= 20*time.Millisecond)},
			row{fmt.Sprintf("  %s: wake latency from the dispatch sent (an upper bound), p50 / p99", label),
				msStr(s50) + " / " + msStr(s99), "raw commit p50 " + msStr(base.p50), ratioStr(float64(s50) / float64(base.p50)), "—", "info"},
		)
	}
	return rows, shortRun, nil
}

type swarmWorker struct {
	c  *leanClient
	id string
}

// loopRig runs one throughput loop: it cancels everything on the first
// error, and ends when every task is collected.
type loopRig struct {
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	once      sync.Once
	err       error
	collected atomic.Int64
	done      chan struct{}
	tasks     int
	mu        sync.Mutex
	seen      map[string]bool // collected task IDs: none twice
}

func newRig(ctx context.Context, tasks int) *loopRig {
	r := &loopRig{done: make(chan struct{}), tasks: tasks, seen: make(map[string]bool, tasks)}
	r.ctx, r.cancel = context.WithCancel(ctx)
	return r
}

func (r *loopRig) fail(err error) {
	r.once.Do(func() { r.err = err; r.cancel() })
}

func (r *loopRig) spawn(fn func()) {
	r.wg.Add(1)
	go func() { defer r.wg.Done(); fn() }()
}

// got records collected tasks; it reports false when the run is over.
func (r *loopRig) got(ids ...string) bool {
	r.mu.Lock()
	for _, id := range ids {
		if r.seen[id] {
			r.mu.Unlock()
			r.fail(fmt.Errorf("task %s collected twice", id))
			return false
		}
		r.seen[id] = true
	}
	r.mu.Unlock()
	if n := r.collected.Add(int64(len(ids))); n == int64(r.tasks) {
		close(r.done)
		return false
	} else if n > int64(r.tasks) {
		r.fail(fmt.Errorf("%d tasks collected, %d dispatched", n, r.tasks))
		return false
	}
	return true
}

// wait waits for the end of the run and returns its time since start.
// Callers see the end between calls (r.over): a call is cancelled only
// on a failure, as a cancelled long poll leaves its server-side call
// running, and a stateful session busy with it answers nothing else.
func (r *loopRig) wait(start time.Time) (time.Duration, error) {
	select {
	case <-r.done:
	case <-r.ctx.Done():
	}
	elapsed := time.Since(start)
	r.wg.Wait()
	r.cancel()
	return elapsed, r.err
}

// over reports whether the run has ended (every task collected) or
// failed.
func (r *loopRig) over() bool {
	select {
	case <-r.done:
		return true
	default:
		return r.ctx.Err() != nil
	}
}

// shortLoop: two owners dispatch batches of up to 100 tasks, two collect
// with a waiting collect; each worker calls next (ack) until it has a
// task, then submit with next (ack) while the answer carries one.
func shortLoop(ctx context.Context, f *swarmFixture, tasks int) (time.Duration, error) {
	r := newRig(ctx, tasks)
	start := time.Now()
	prefix := fmt.Sprint("s", start.UnixNano(), "-")
	dispatchers, collectors := f.owners[:2], f.owners[2:4]
	for di, o := range dispatchers {
		r.spawn(func() {
			for b := di * 100; b < tasks; b += 100 * len(dispatchers) {
				items := make([]map[string]any, 0, 100)
				for i := b; i < min(b+100, tasks); i++ {
					items = append(items, map[string]any{"task_key": prefix + fmt.Sprint(i), "prompt": fmt.Sprint("benchmark task ", i)})
				}
				if _, err := o.call(r.ctx, "chat_swarm_dispatch", map[string]any{"swarm_id": f.id, "tasks": items}); err != nil {
					r.fail(err)
					return
				}
			}
		})
	}
	for _, o := range collectors {
		r.spawn(func() {
			for !r.over() {
				res, err := o.call(r.ctx, "chat_swarm_collect", map[string]any{"swarm_id": f.id, "wait_secs": 1, "limit": 100})
				if err != nil {
					if r.ctx.Err() == nil {
						r.fail(err)
					}
					return
				}
				ts, _ := res["tasks"].([]any)
				ids := make([]string, len(ts))
				for i, t := range ts {
					ids[i] = t.(map[string]any)["task_id"].(string)
				}
				if len(ids) > 0 && !r.got(ids...) {
					return
				}
			}
		})
	}
	for _, w := range f.ws {
		r.spawn(func() {
			var task map[string]any
			for !r.over() {
				var err error
				if task == nil {
					var d map[string]any
					d, err = w.c.call(r.ctx, "chat_swarm_next", map[string]any{"worker_id": w.id, "epoch": 0, "wait_secs": 1, "ack": true})
					task, _ = d["task"].(map[string]any)
				} else {
					var s map[string]any
					s, err = w.c.call(r.ctx, "chat_swarm_submit", map[string]any{"worker_id": w.id, "epoch": 0,
						"task_id": task["task_id"], "result": "done", "next": map[string]any{"ack": true, "wait_secs": 1}})
					if err == nil && s["next_error"] != nil {
						err = fmt.Errorf("chat_swarm_submit: next_error %v", s["next_error"])
					}
					n, _ := s["next"].(map[string]any)
					task, _ = n["task"].(map[string]any)
				}
				if err != nil {
					if r.ctx.Err() == nil {
						r.fail(err)
					}
					return
				}
			}
		})
	}
	return r.wait(start)
}

// oldLoop: four owners dispatch one task per call, four collect each task
// by task_id as its worker submits it; workers loop next → ack → submit.
func oldLoop(ctx context.Context, f *swarmFixture, tasks int) (time.Duration, error) {
	r := newRig(ctx, tasks)
	submitted := make(chan string, tasks)
	start := time.Now()
	prefix := fmt.Sprint("o", start.UnixNano(), "-")
	dispatchers, collectors := f.owners[:4], f.owners[4:]
	for oi, o := range dispatchers {
		r.spawn(func() {
			for i := oi; i < tasks; i += len(dispatchers) {
				if _, err := o.call(r.ctx, "chat_swarm_dispatch", map[string]any{"swarm_id": f.id, "task_key": prefix + fmt.Sprint(i),
					"prompt": fmt.Sprint("benchmark task ", i)}); err != nil {
					r.fail(err)
					return
				}
			}
		})
	}
	for _, o := range collectors {
		r.spawn(func() {
			for {
				select {
				case <-r.ctx.Done():
					return
				case <-r.done:
					return
				case id := <-submitted:
					if _, err := o.call(r.ctx, "chat_swarm_collect", map[string]any{"swarm_id": f.id, "task_id": id}); err != nil {
						r.fail(err)
						return
					}
					if !r.got(id) {
						return
					}
				}
			}
		})
	}
	for _, w := range f.ws {
		r.spawn(func() {
			for !r.over() {
				d, err := w.c.call(r.ctx, "chat_swarm_next", map[string]any{"worker_id": w.id, "epoch": 0, "wait_secs": 1})
				if err != nil {
					if r.ctx.Err() == nil {
						r.fail(err)
					}
					return
				}
				t, ok := d["task"].(map[string]any)
				if !ok {
					continue
				}
				id := t["task_id"].(string)
				args := map[string]any{"worker_id": w.id, "epoch": 0, "task_id": id}
				if err := w.c.callFast(r.ctx, "chat_swarm_ack", args); err != nil {
					r.fail(err)
					return
				}
				args["result"] = "done"
				if err := w.c.callFast(r.ctx, "chat_swarm_submit", args); err != nil {
					r.fail(err)
					return
				}
				submitted <- id
			}
		})
	}
	return r.wait(start)
}

// swarmWakes measures n wake-ups: every worker waits (next with ack, then
// submit with next, 5 s at a time), one task is dispatched, and the time
// until some worker's call returns it is taken, from the dispatch sent and
// from its answer. At the end the workers stop between calls (at most one
// wait later), as in loopRig.
func swarmWakes(ctx context.Context, f *swarmFixture, n int) (sent, answered []time.Duration, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stop atomic.Bool
	got := make(chan time.Time, len(f.ws))
	errs := make(chan error, len(f.ws))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop.Store(true)
	for _, w := range f.ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var task map[string]any
			for !stop.Load() {
				var d map[string]any
				var err error
				if task == nil {
					d, err = w.c.call(ctx, "chat_swarm_next", map[string]any{"worker_id": w.id, "epoch": 0, "wait_secs": 5, "ack": true})
				} else {
					var s map[string]any
					s, err = w.c.call(ctx, "chat_swarm_submit", map[string]any{"worker_id": w.id, "epoch": 0,
						"task_id": task["task_id"], "result": "woken", "next": map[string]any{"ack": true, "wait_secs": 5}})
					d, _ = s["next"].(map[string]any)
				}
				at := time.Now()
				if err != nil {
					errs <- err
					return
				}
				task, _ = d["task"].(map[string]any)
				if task != nil {
					got <- at
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond) // let every worker reach its wait
	prefix := fmt.Sprint("w", time.Now().UnixNano(), "-")
	for i := range n {
		t0 := time.Now()
		if _, err := f.owner.call(ctx, "chat_swarm_dispatch", map[string]any{"swarm_id": f.id, "task_key": prefix + fmt.Sprint(i),
			"prompt": "wake"}); err != nil {
			return nil, nil, err
		}
		t1 := time.Now()
		select {
		case at := <-got:
			sent = append(sent, at.Sub(t0))
			answered = append(answered, max(0, at.Sub(t1)))
		case err := <-errs:
			return nil, nil, err
		case <-time.After(30 * time.Second):
			return nil, nil, errors.New("no worker woke within 30 s")
		}
		time.Sleep(20 * time.Millisecond) // the winner submits and waits again
	}
	return sent, answered, nil
}

// runSwarm is -swarm: the swarm phases on each engine of -engine.
func runSwarm(c config, h harness) error {
	var rows []row
	env := append([]string{"swarm run: lean MCP clients (stateful 2025-11-25 sessions), each worker its own session; tool-call bytes are the JSON of the arguments plus the text of the result's content"}, h.env...)
	workers := c.clients
	tasks := 2000
	if c.quick {
		tasks = 800
	}
	for _, engine := range c.engines {
		switch engine {
		case engineSQLite:
			dataDir, work := filepath.Join(h.tmp, "swarm-data"), filepath.Join(h.tmp, "swarm-work")
			if err := os.MkdirAll(work, 0o755); err != nil {
				return err
			}
			prof := ""
			if c.cpuprofile != "" {
				prof = c.cpuprofile + "-swarm.pprof"
			}
			srv, err := startServer(h.bin, dataDir, work, prof)
			if err != nil {
				return err
			}
			base, err := sqliteBase(filepath.Join(h.tmp, "swarm-raw.db"))
			if err != nil {
				srv.kill()
				return err
			}
			rows = append(rows, row{"raw SQLite commits/s (baseline, 1 writer, 1 row per commit)", fmt.Sprintf("%.0f", base.rate),
				"p50 " + msStr(base.p50), "—", "—", "baseline"})
			r, _, err := swarmBench("SQLite", swarmEnv{ownerURL: srv.URL, workerURLs: []string{srv.URL}, token: srv.Token, pids: []int{srv.pid()}}, workers, tasks, base, true, true)
			srv.stop()
			if err != nil {
				return err
			}
			rows = append(rows, r...)
		case enginePostgres:
			r, err := runSwarmPostgres(c, h, workers, tasks)
			if err != nil {
				return err
			}
			rows = append(rows, r...)
		}
	}
	env = append(env, "load average at end: "+loadavg())
	report(c, env, rows)
	return nil
}

// sqliteBase measures the raw SQLite baseline for 3 s on a fresh file.
func sqliteBase(path string) (rawBase, error) {
	raw, err := openRaw(path)
	if err != nil {
		return rawBase{}, err
	}
	defer raw.close()
	res, err := raw.run(3 * time.Second)
	if err != nil {
		return rawBase{}, err
	}
	return rawBase{rate: float64(res.Commits) / res.Elapsed.Seconds(), p50: percentile(res.Lat, .5)}, nil
}

// runSwarmPostgres runs the swarm phases on a fresh PostgreSQL database:
// one replica, then the workers split over two, then workers on replica B
// woken by dispatches on replica A.
func runSwarmPostgres(c config, h harness, workers, tasks int) ([]row, error) {
	ctx := context.Background()
	dbURL, dbName, err := createDatabase(ctx, c.postgresURL)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := dropDatabase(c.postgresURL, dbName); err != nil {
			logf("drop database %s: %v", dbName, err)
		}
	}()
	work := filepath.Join(h.tmp, "swarm-pg-work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	a, err := startServer(h.bin, filepath.Join(h.tmp, "swarm-pg-a"), work, "", "--database-url", dbURL)
	if err != nil {
		return nil, err
	}
	defer a.kill()
	b, err := startServer(h.bin, filepath.Join(h.tmp, "swarm-pg-b"), work, "", "--database-url", dbURL)
	if err != nil {
		return nil, err
	}
	defer b.kill()
	raw, err := openPGRaw(ctx, dbURL, workers)
	if err != nil {
		return nil, err
	}
	defer raw.close()
	res, err := raw.run(workers, 3*time.Second)
	if err != nil {
		return nil, err
	}
	base := rawBase{rate: res.perSec(), p50: percentile(res.Lat, .5)}
	logf("PostgreSQL raw commits: %.0f/s on %d connections, p50 %s", base.rate, workers, msStr(base.p50))
	rows := []row{{fmt.Sprintf("raw PostgreSQL commits/s (baseline, %d connections, 1 row per commit)", workers), fmt.Sprintf("%.0f", base.rate),
		"p50 " + msStr(base.p50), "—", "—", "baseline"}}
	one, err := pgSet(&rows, "PostgreSQL, 1 replica", swarmEnv{ownerURL: a.URL, workerURLs: []string{a.URL}, token: a.Token}, workers, tasks, base, true, true)
	if err != nil {
		return nil, err
	}
	two, err := pgSet(&rows, "PostgreSQL, 2 replicas", swarmEnv{ownerURL: a.URL, workerURLs: []string{a.URL, b.URL}, token: a.Token}, workers, tasks, base, true, false)
	if err != nil {
		return nil, err
	}
	if _, err := pgSet(&rows, "PostgreSQL, owner on A, workers on B", swarmEnv{ownerURL: a.URL, workerURLs: []string{b.URL}, token: a.Token}, workers, tasks, base, false, true); err != nil {
		return nil, err
	}
	ratio := two.perSec() / one.perSec()
	rows = append(rows, row{"PostgreSQL: 2 replicas ÷ 1 replica, short loop tasks/s", ratioStr(ratio),
		fmt.Sprintf("%.0f/s vs %.0f/s", two.perSec(), one.perSec()), "—", "≥ 0.90×", passFail(ratio >= 0.9)})
	return rows, nil
}

func pgSet(rows *[]row, label string, e swarmEnv, workers, tasks int, base rawBase, tput, wake bool) (*loopRun, error) {
	r, l, err := swarmBench(label, e, workers, tasks, base, tput, wake)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	*rows = append(*rows, r...)
	return l, nil
}

// serversCPU is the CPU the processes of pids have used so far.
func serversCPU(pids []int) time.Duration {
	var t time.Duration
	for _, pid := range pids {
		c, _ := procCPU(pid)
		t += c
	}
	return t
}
