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
//   - throughput: W workers loop next → ack → submit while owner sessions
//     dispatch N tasks and collect each result as it is submitted; tasks/s
//     end to end (first dispatch to last collect), against the raw commit
//     rate of the same run (one single-row transaction per commit: a task
//     costs five commits, so its ceiling is a fifth of that rate);
//   - wake latency: W workers wait in next; the owner dispatches one task;
//     the time from sending the dispatch to the waiting worker's next
//     returning it (an upper bound of "dispatch committed → next returns"),
//     against a ping's round trip on the same server;
//   - on PostgreSQL also with the workers split over two replicas, and the
//     wake of a worker waiting on replica B for a dispatch on replica A.

// swarmEnv is one server set of the swarm run: where owners and workers
// connect.
type swarmEnv struct {
	ownerURL   string
	workerURLs []string // workers are spread over these, round robin
	token      string
}

// swarmBench runs the swarm phases on e and returns its rows.
func swarmBench(label string, e swarmEnv, workers, tasks int, baseline float64) ([]row, error) {
	ctx := context.Background()
	owner, err := dialLean(e.ownerURL, e.token)
	if err != nil {
		return nil, err
	}
	defer owner.close()
	created, err := owner.call(ctx, "chat_swarm_create", map[string]any{"worker_limit": 64,
		"policy": map[string]any{"lease_ttl_secs": 600}})
	if err != nil {
		return nil, err
	}
	swarmID := created["swarm"].(map[string]any)["swarm_id"].(string)
	invite := created["invite"].(string)
	ws := make([]*swarmWorker, workers)
	for i := range ws {
		c, err := dialLean(e.workerURLs[i%len(e.workerURLs)], e.token)
		if err != nil {
			return nil, err
		}
		defer c.close()
		j, err := c.call(ctx, "chat_swarm_join", map[string]any{"swarm_id": swarmID, "invite": invite, "label": fmt.Sprint("bench-", i)})
		if err != nil {
			return nil, err
		}
		ws[i] = &swarmWorker{c: c, id: j["worker"].(map[string]any)["worker_id"].(string)}
	}

	// ---- throughput ----
	owners := make([]*leanClient, 8) // 4 dispatch, 4 collect: a lean client serves one caller at a time
	for i := range owners {
		if owners[i], err = dialLean(e.ownerURL, e.token); err != nil {
			return nil, err
		}
		defer owners[i].close()
	}
	tput, err := swarmThroughput(ctx, swarmID, owners, ws, tasks)
	if err != nil {
		return nil, err
	}
	logf("%s: %d tasks, %d workers: %.0f tasks/s (raw commits %.0f/s)", label, tasks, workers, tput, baseline)

	// ---- wake latency ----
	pings := make([]time.Duration, 0, 200)
	for range 200 {
		t0 := time.Now()
		if err := owner.ping(ctx); err != nil {
			return nil, err
		}
		pings = append(pings, time.Since(t0))
	}
	wakes, answered, err := swarmWakes(ctx, swarmID, owner, ws, 200)
	if err != nil {
		return nil, err
	}
	p50, p99, ping50 := percentile(wakes, 0.50), percentile(wakes, 0.99), percentile(pings, 0.50)
	a50, a99 := percentile(answered, 0.50), percentile(answered, 0.99)
	logf("%s: wake p50 %s p99 %s from the dispatch sent, %s %s from its answer (ping p50 %s)", label,
		msStr(p50), msStr(p99), msStr(a50), msStr(a99), msStr(ping50))
	wakeTarget := 2 * time.Millisecond
	if e.workerURLs[0] != e.ownerURL {
		wakeTarget = 5 * time.Millisecond // across replicas
	}
	return []row{
		{Metric: fmt.Sprintf("%s: swarm tasks/s end to end, %d workers (dispatch → next → ack → submit → collect)", label, workers),
			Value: fmt.Sprintf("%.0f/s", tput), Baseline: fmt.Sprintf("raw commits %.0f/s", baseline), Ratio: ratioStr(tput / baseline),
			Target: "≥ 1,000/s", Result: passFail(tput >= 1000)},
		{Metric: fmt.Sprintf("%s: wake latency p50, %d waiting workers (dispatch sent → next returns)", label, workers),
			Value: msStr(p50), Baseline: "ping p50 " + msStr(ping50), Ratio: ratioStr(float64(p50) / float64(ping50)),
			Target: "p50 ≤ " + msStr(wakeTarget), Result: passFail(p50 <= wakeTarget)},
		{Metric: fmt.Sprintf("%s: wake latency p99", label), Value: msStr(p99), Baseline: "ping p50 " + msStr(ping50),
			Ratio: ratioStr(float64(p99) / float64(ping50)), Target: "p99 ≤ 20 ms", Result: passFail(p99 <= 20*time.Millisecond)},
		{Metric: fmt.Sprintf("%s: wake latency from the dispatch's answer (the commit precedes it: a lower bound), p50 / p99", label),
			Value: msStr(a50) + " / " + msStr(a99), Baseline: "ping p50 " + msStr(ping50), Ratio: ratioStr(float64(a50) / float64(ping50)),
			Target: "—", Result: "info"},
	}, nil
}

type swarmWorker struct {
	c  *leanClient
	id string
}

// swarmThroughput runs tasks through the swarm: owners dispatch them (each
// owner its share), workers loop until every task is collected, owners
// collect each task as its worker submits it.
func swarmThroughput(ctx context.Context, swarmID string, owners []*leanClient, ws []*swarmWorker, tasks int) (float64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	submitted := make(chan string, tasks)
	var collected atomic.Int64
	var firstErr error
	var errOnce sync.Once
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel() })
	}
	var wg sync.WaitGroup
	start := time.Now()
	prefix := fmt.Sprint("t", start.UnixNano(), "-")
	dispatchers, collectors := owners[:len(owners)/2], owners[len(owners)/2:]
	for oi, o := range dispatchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := oi; i < tasks; i += len(dispatchers) {
				if _, err := o.call(ctx, "chat_swarm_dispatch", map[string]any{"swarm_id": swarmID, "task_key": prefix + fmt.Sprint(i),
					"prompt": fmt.Sprint("benchmark task ", i)}); err != nil {
					fail(err)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	for _, o := range collectors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case id := <-submitted:
					if _, err := o.call(ctx, "chat_swarm_collect", map[string]any{"swarm_id": swarmID, "task_id": id}); err != nil {
						fail(err)
						return
					}
					if collected.Add(1) == int64(tasks) {
						close(done)
						return
					}
				}
			}
		}()
	}
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				d, err := w.c.call(ctx, "chat_swarm_next", map[string]any{"worker_id": w.id, "epoch": 0, "wait_secs": 1})
				if err != nil {
					if ctx.Err() == nil {
						fail(err)
					}
					return
				}
				t, ok := d["task"].(map[string]any)
				if !ok {
					continue
				}
				id := t["task_id"].(string)
				args := map[string]any{"worker_id": w.id, "epoch": 0, "task_id": id}
				if err := w.c.callFast(ctx, "chat_swarm_ack", args); err != nil {
					fail(err)
					return
				}
				args["result"] = "done: " + t["prompt"].(string)
				if err := w.c.callFast(ctx, "chat_swarm_submit", args); err != nil {
					fail(err)
					return
				}
				submitted <- id
			}
		}()
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
	elapsed := time.Since(start)
	cancel()
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	return float64(tasks) / elapsed.Seconds(), nil
}

// swarmWakes measures n wake-ups: every worker waits in next, one task is
// dispatched, and the time until some worker's next returns it is taken.
// The winner submits, and waits again.
func swarmWakes(ctx context.Context, swarmID string, owner *leanClient, ws []*swarmWorker, n int) (sent, answered []time.Duration, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan time.Time, len(ws))
	errs := make(chan error, len(ws))
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				d, err := w.c.call(ctx, "chat_swarm_next", map[string]any{"worker_id": w.id, "epoch": 0, "wait_secs": 25})
				at := time.Now()
				if err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				t, ok := d["task"].(map[string]any)
				if !ok {
					continue
				}
				got <- at
				if err := w.c.callFast(ctx, "chat_swarm_submit", map[string]any{"worker_id": w.id, "epoch": 0,
					"task_id": t["task_id"].(string), "result": "woken"}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	// Let every worker reach its wait.
	time.Sleep(500 * time.Millisecond)
	prefix := fmt.Sprint("w", time.Now().UnixNano(), "-")
	for i := range n {
		t0 := time.Now()
		if _, err := owner.call(ctx, "chat_swarm_dispatch", map[string]any{"swarm_id": swarmID, "task_key": prefix + fmt.Sprint(i),
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
	cancel()
	wg.Wait()
	return sent, answered, nil
}

// runSwarm is -swarm: the swarm phases on each engine of -engine.
func runSwarm(c config, h harness) error {
	var rows []row
	env := append([]string{"swarm run: lean MCP clients (stateful 2025-11-25 sessions), each worker its own session"}, h.env...)
	workers := c.clients
	tasks := 2000
	if c.quick {
		tasks = 500
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
			raw, err := openRaw(filepath.Join(h.tmp, "swarm-raw.db"))
			if err != nil {
				srv.kill()
				return err
			}
			res, err := raw.run(3 * time.Second)
			raw.close()
			if err != nil {
				srv.kill()
				return err
			}
			baseline := float64(res.Commits) / res.Elapsed.Seconds()
			r, err := swarmBench("SQLite", swarmEnv{ownerURL: srv.URL, workerURLs: []string{srv.URL}, token: srv.Token}, workers, tasks, baseline)
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
	report(c, env, rows)
	return nil
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
	baseline := res.perSec()
	logf("PostgreSQL raw commits: %.0f/s on %d connections", baseline, workers)
	var rows []row
	for _, set := range []struct {
		label string
		env   swarmEnv
	}{
		{"PostgreSQL, 1 replica", swarmEnv{ownerURL: a.URL, workerURLs: []string{a.URL}, token: a.Token}},
		{"PostgreSQL, 2 replicas", swarmEnv{ownerURL: a.URL, workerURLs: []string{a.URL, b.URL}, token: a.Token}},
		{"PostgreSQL, owner on A, workers on B", swarmEnv{ownerURL: a.URL, workerURLs: []string{b.URL}, token: a.Token}},
	} {
		r, err := swarmBench(set.label, set.env, workers, tasks, baseline)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", set.label, err)
		}
		rows = append(rows, r...)
	}
	return rows, nil
}
