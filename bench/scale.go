package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// The scaling run (-scale): R `continuo serve` replicas on one fresh
// PostgreSQL database, W workers long-polling over MCP HTTP (lean
// clients, loopback only), spread round robin over the replicas, in
// swarms of at most 64 workers (a swarm's worker limit), each with its
// owner on replica 1. For every (R, W) of -scale-replicas × -scale-workers
// in turn: the short loop's tasks/s (every swarm its share of -scale-tasks
// at once), the wake latency (every swarm's owner dispatching one task at
// a time while all W workers wait), the PostgreSQL client connections of
// the replicas, the NOTIFY rate the bench's own LISTEN connection
// receives, and the CPU per task of the replicas, the PostgreSQL backends
// and this process (the clients). The raw commit baseline of the same run
// is measured once, on 32 connections, first. The replicas run with
// max_sessions_per_principal = 1000 (scaleConfig): every client uses the
// one admin token.

// benchApp is the application_name of the bench's own PostgreSQL
// connections: they are left out of the connection and CPU counts.
const benchApp = "continuo-bench"

// scaleResult is one (replicas, workers) point.
type scaleResult struct {
	replicas, workers, swarms, tasks int
	elapsed                          time.Duration
	wake                             []time.Duration // from the dispatch's answer
	conns                            int             // PostgreSQL client backends of the replicas, at the end of the throughput phase
	notifies                         int64           // notifications received during the throughput phase
	srvCPU, dbCPU, cliCPU            time.Duration   // during the throughput phase
}

func (r scaleResult) perSec() float64 { return float64(r.tasks) / r.elapsed.Seconds() }

func (r scaleResult) perTask(d time.Duration) time.Duration { return d / time.Duration(r.tasks) }

// ints parses a comma-separated list of positive integers.
func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want positive integers separated by commas", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// runScale is -scale.
func runScale(c config, h harness) error {
	ctx := context.Background()
	dbURL, dbName, err := createDatabase(ctx, c.postgresURL)
	if err != nil {
		return err
	}
	defer func() {
		if err := dropDatabase(c.postgresURL, dbName); err != nil {
			logf("drop database %s: %v", dbName, err)
		}
	}()
	work := filepath.Join(h.tmp, "scale-work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	env := append([]string{fmt.Sprintf("scaling run: replicas %v × workers %v on one fresh PostgreSQL database (%s), %d tasks per point, short loop, loopback only",
		c.scaleReplicas, c.scaleWorkers, dbName, c.scaleTasks)}, h.env...)
	// The first replica migrates the database; the baseline table needs it.
	first, err := startReplicas(h, work, dbURL, 1, "scale-migrate")
	if err != nil {
		return err
	}
	token := first[0].Token // only the first start on a fresh database announces it
	raw, err := openPGRaw(ctx, dbURL, 32)
	if err != nil {
		stopAll(first)
		return err
	}
	res, err := raw.run(32, 3*time.Second)
	raw.close()
	stopAll(first)
	if err != nil {
		return err
	}
	base := rawBase{rate: res.perSec(), p50: percentile(res.Lat, .5)}
	logf("PostgreSQL raw commits: %.0f/s on 32 connections, p50 %s", base.rate, msStr(base.p50))
	rows := []row{{"raw PostgreSQL commits/s (baseline, 32 connections, 1 row per commit)", fmt.Sprintf("%.0f", base.rate),
		"p50 " + msStr(base.p50), "—", "—", "baseline"}}
	for _, r := range c.scaleReplicas {
		for _, w := range c.scaleWorkers {
			p, err := scalePoint(ctx, h, work, dbURL, token, r, w, c.scaleTasks)
			if err != nil {
				return fmt.Errorf("%d replicas, %d workers: %w", r, w, err)
			}
			logf("%d replicas, %d workers (%d swarms): %.0f tasks/s, wake p50 %s p99 %s, %d connections, %.0f NOTIFY/s, CPU/task %s + %s + %s",
				r, w, p.swarms, p.perSec(), msStr(percentile(p.wake, .5)), msStr(percentile(p.wake, .99)), p.conns,
				float64(p.notifies)/p.elapsed.Seconds(), msStr(p.perTask(p.srvCPU)), msStr(p.perTask(p.dbCPU)), msStr(p.perTask(p.cliCPU)))
			label := fmt.Sprintf("%d replica(s), %d workers (%d swarms)", r, w, p.swarms)
			rows = append(rows,
				row{label + ": tasks/s, short loop", fmt.Sprintf("%.0f/s", p.perSec()), fmt.Sprintf("raw commits %.0f/s", base.rate),
					ratioStr(p.perSec() / base.rate), "—", "info"},
				row{"  " + label + ": wake p50 / p99 (dispatch's answer → next returns)",
					msStr(percentile(p.wake, .5)) + " / " + msStr(percentile(p.wake, .99)), "raw commit p50 " + msStr(base.p50),
					ratioStr(float64(percentile(p.wake, .5)) / float64(base.p50)), "—", "info"},
				row{"  " + label + ": PostgreSQL connections of the replicas; NOTIFY received/s (per task)",
					fmt.Sprintf("%d; %.0f/s (%.2f)", p.conns, float64(p.notifies)/p.elapsed.Seconds(), float64(p.notifies)/float64(p.tasks)),
					fmt.Sprintf("%.1f connections per replica", float64(p.conns)/float64(r)), "—", "—", "info"},
				row{"  " + label + ": CPU per task: replicas + PostgreSQL backends + clients (bench)",
					msStr(p.perTask(p.srvCPU)) + " + " + msStr(p.perTask(p.dbCPU)) + " + " + msStr(p.perTask(p.cliCPU)),
					fmt.Sprintf("PostgreSQL: %.0f tasks/s per core", float64(time.Second)/float64(p.perTask(p.dbCPU))), "—", "—", "info"},
			)
		}
	}
	env = append(env, "load average at end: "+loadavg())
	report(c, env, rows)
	return nil
}

// scaleConfig lets one principal (the bench's admin token) hold a
// session per worker: 256 workers and their owners are more than the
// default 100 sessions per principal.
const scaleConfig = "[server]\nmax_sessions_per_principal = 1000\n"

func startReplicas(h harness, work, dbURL string, n int, tag string) ([]*server, error) {
	cfg := filepath.Join(h.tmp, "scale.toml")
	if err := os.WriteFile(cfg, []byte(scaleConfig), 0o600); err != nil {
		return nil, err
	}
	var srvs []*server
	for i := range n {
		s, err := startServer(h.bin, filepath.Join(h.tmp, fmt.Sprintf("%s-%d", tag, i)), work, "", "--database-url", dbURL, "--config", cfg)
		if err != nil {
			stopAll(srvs)
			return nil, err
		}
		srvs = append(srvs, s)
	}
	return srvs, nil
}

func stopAll(srvs []*server) {
	for _, s := range srvs {
		s.stop()
	}
}

// scalePoint measures one (replicas, workers) point on fresh replicas.
func scalePoint(ctx context.Context, h harness, work, dbURL, token string, replicas, workers, tasks int) (scaleResult, error) {
	p := scaleResult{replicas: replicas, workers: workers}
	srvs, err := startReplicas(h, work, dbURL, replicas, fmt.Sprintf("scale-%d-%d", replicas, workers))
	if err != nil {
		return p, err
	}
	defer stopAll(srvs)
	urls := make([]string, len(srvs))
	for i, s := range srvs {
		urls[i] = s.URL
	}
	var fs []*swarmFixture
	defer func() {
		for _, f := range fs {
			f.close()
		}
	}()
	for left, i := workers, 0; left > 0; i++ {
		n := min(left, 64)
		// Workers of this swarm continue the round robin where the last left off.
		wurls := make([]string, len(urls))
		for j := range wurls {
			wurls[j] = urls[(i*64+j)%len(urls)]
		}
		f, err := newSwarm(ctx, swarmEnv{ownerURL: urls[0], workerURLs: wurls, token: token}, n)
		if err != nil {
			return p, err
		}
		fs = append(fs, f)
		left -= n
	}
	p.swarms = len(fs)
	logf("%d replicas: %d workers joined in %d swarms", replicas, workers, len(fs))
	per := max(100, tasks/len(fs))
	p.tasks = per * len(fs)
	// Warm-up: every pool opens its connections.
	if err := eachFixture(fs, func(f *swarmFixture) error { _, err := shortLoop(ctx, f, 100); return err }); err != nil {
		return p, err
	}
	logf("warmed up")
	notes, stopListen, err := listenCount(ctx, dbURL)
	if err != nil {
		return p, err
	}
	defer stopListen()
	pids, err := replicaBackends(ctx, dbURL)
	if err != nil {
		return p, err
	}
	var spids []int
	for _, s := range srvs {
		spids = append(spids, s.pid())
	}
	srvM, dbM, self := startPIDs(spids), startPIDs(pids), selfCPU()
	n0 := notes.Load()
	start := time.Now()
	if err := eachFixture(fs, func(f *swarmFixture) error { _, err := shortLoop(ctx, f, per); return err }); err != nil {
		return p, err
	}
	p.elapsed = time.Since(start)
	p.notifies = notes.Load() - n0
	p.srvCPU, p.dbCPU, p.cliCPU = srvM.used(), dbM.used(), selfCPU()-self
	if pids, err = replicaBackends(ctx, dbURL); err != nil {
		return p, err
	}
	p.conns = len(pids)
	logf("throughput done; wake")
	var mu sync.Mutex
	err = eachFixture(fs, func(f *swarmFixture) error {
		_, answered, err := swarmWakes(ctx, f, 40)
		mu.Lock()
		p.wake = append(p.wake, answered...)
		mu.Unlock()
		return err
	})
	return p, err
}

// eachFixture runs fn on every fixture at once and returns the first
// error.
func eachFixture(fs []*swarmFixture, fn func(*swarmFixture) error) error {
	errs := make([]error, len(fs))
	var wg sync.WaitGroup
	for i, f := range fs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = fn(f) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// replicaBackends returns the PIDs of the database's client backends that
// are not the bench's own: the replicas' pools and LISTEN connections.
func replicaBackends(ctx context.Context, dbURL string) ([]int, error) {
	conn, err := benchConn(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	return backendPIDs(ctx, conn, "application_name <> $1", benchApp)
}

func benchConn(ctx context.Context, dbURL string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = benchApp
	return pgx.ConnectConfig(ctx, cfg)
}

// listenCount LISTENs on the replicas' channel (the schema is public:
// "continuo") and counts what arrives, until stop.
func listenCount(ctx context.Context, dbURL string) (*atomic.Int64, func(), error) {
	conn, err := benchConn(ctx, dbURL)
	if err != nil {
		return nil, nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN continuo"); err != nil {
		conn.Close(ctx)
		return nil, nil, err
	}
	var n atomic.Int64
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, err := conn.WaitForNotification(lctx); err != nil {
				return
			}
			n.Add(1)
		}
	}()
	return &n, func() { cancel(); <-done; conn.Close(context.Background()) }, nil
}
