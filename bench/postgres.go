package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// defaultPostgresURL is the local test server (trust auth), used when
// neither -postgres-url nor CONTINUO_TEST_POSTGRES_URL says otherwise.
const defaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// createDatabase creates a fresh database continuo_bench_<random> on the
// server of baseURL and returns its URL (baseURL with the database
// replaced) and name.
func createDatabase(ctx context.Context, baseURL string) (string, string, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", "", errors.New("-postgres-url: want a postgres://USER@HOST:PORT/DB URL")
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "continuo_bench_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, baseURL)
	if err != nil {
		return "", "", fmt.Errorf("connect to %s: %w", u.Redacted(), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", "", fmt.Errorf("create database: %w", err)
	}
	u.Path = "/" + name
	return u.String(), name, nil
}

// dropDatabase drops a database createDatabase made, closing what is still
// connected to it.
func dropDatabase(baseURL, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, baseURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return err
}

// pgRaw is the PostgreSQL baseline: single-row INSERT + COMMIT loops through
// pgx on the bench database, into a table made LIKE the server's messages
// table (same columns, CHECKs, primary key, UNIQUE (session_id, seq) and the
// two brief indexes; no foreign key), with synchronous_commit on. Each
// connection writes its own session's rows.
type pgRaw struct {
	pool     *pgxpool.Pool
	sessions []string
	seq      []int64
}

const pgRawInsert = `INSERT INTO bench_raw_messages (id, session_id, seq, kind, text, status, priority, tags, reply_to,
	supersedes, superseded_by, resolution, created_at, resolved_at)
	VALUES ($1, $2, $3, 'progress', $4, 'open', 'normal', '[]', '', '', '', '', $5, NULL)`

// openPGRaw connects a pool of conns+1 connections (one for the bench's
// own queries) to the bench database, which the server must already have
// migrated, and creates the baseline table.
func openPGRaw(ctx context.Context, dbURL string, conns int) (*pgRaw, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(conns + 1)
	cfg.MinConns = int32(conns + 1)
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on" // as the server asks for
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	r := &pgRaw{pool: pool, sessions: make([]string, conns), seq: make([]int64, conns)}
	var sc, fsync string
	if err := pool.QueryRow(ctx, "SELECT current_setting('synchronous_commit'), current_setting('fsync')").Scan(&sc, &fsync); err != nil {
		pool.Close()
		return nil, err
	}
	if sc != "on" || fsync != "on" {
		pool.Close()
		return nil, fmt.Errorf("baseline: want synchronous_commit=on fsync=on, got %s %s", sc, fsync)
	}
	if _, err := pool.Exec(ctx, "CREATE TABLE bench_raw_messages (LIKE messages INCLUDING ALL)"); err != nil {
		pool.Close()
		return nil, fmt.Errorf("baseline table: %w", err)
	}
	for i := range r.sessions {
		r.sessions[i] = continuo.NewID(continuo.PrefixSession, time.Now())
	}
	return r, nil
}

func (r *pgRaw) close() { r.pool.Close() }

// run has conns connections each commit single-row transactions (BEGIN;
// INSERT; COMMIT: three round trips, as SQLite's baseline runs three
// statements) for d.
func (r *pgRaw) run(conns int, d time.Duration) (postResult, error) {
	ctx := context.Background()
	lats := make([][]time.Duration, conns)
	errs := make([]error, conns)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for w := range conns {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c, err := r.pool.Acquire(ctx)
			if err != nil {
				errs[w] = err
				return
			}
			defer c.Release()
			lat := make([]time.Duration, 0, 1024)
			for time.Now().Before(deadline) {
				t0 := time.Now()
				r.seq[w]++
				tx, err := c.Begin(ctx)
				if err != nil {
					errs[w] = err
					return
				}
				if _, err := tx.Exec(ctx, pgRawInsert, continuo.NewID(continuo.PrefixMessage, t0), r.sessions[w], r.seq[w],
					messageText(int(r.seq[w]), w), t0.UnixMilli()); err != nil {
					_ = tx.Rollback(ctx)
					errs[w] = err
					return
				}
				if err := tx.Commit(ctx); err != nil {
					errs[w] = err
					return
				}
				lat = append(lat, time.Since(t0))
			}
			lats[w] = lat
		}(w)
	}
	wg.Wait()
	res := postResult{Elapsed: time.Since(start)}
	for w := range lats {
		if errs[w] != nil {
			return res, errs[w]
		}
		res.N += len(lats[w])
		res.Lat = append(res.Lat, lats[w]...)
	}
	return res, nil
}

// backends returns the PIDs of the PostgreSQL client backends connected to
// the bench database (the servers' pools and the baseline's): the
// PostgreSQL side of the CPU per operation. Background processes (WAL
// writer, checkpointer) are shared with other databases and not counted.
func (r *pgRaw) backends(ctx context.Context) ([]int, error) {
	return backendPIDs(ctx, r.pool, "pid <> pg_backend_pid()")
}

// backendPIDs returns the PIDs of the client backends connected to q's
// database that also meet cond.
func backendPIDs(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, cond string, args ...any) ([]int, error) {
	rows, err := q.Query(ctx, `SELECT pid FROM pg_stat_activity
		WHERE datname = current_database() AND backend_type = 'client backend' AND `+cond, args...)
	if err != nil {
		return nil, err
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	out := make([]int, len(pids))
	for i, p := range pids {
		out[i] = int(p)
	}
	return out, err
}

// pidsMeter measures the CPU a set of processes used between start and
// used; a process that has gone meanwhile counts up to its last reading.
type pidsMeter struct {
	pids  []int
	start []time.Duration
}

func startPIDs(pids []int) pidsMeter {
	m := pidsMeter{pids: pids, start: make([]time.Duration, len(pids))}
	for i, p := range pids {
		m.start[i], _ = procCPU(p)
	}
	return m
}

func (m pidsMeter) used() time.Duration {
	var sum time.Duration
	for i, p := range m.pids {
		if t, err := procCPU(p); err == nil && t >= m.start[i] {
			sum += t - m.start[i]
		}
	}
	return sum
}

// pgLog counts the errors the PostgreSQL server logs for the bench
// database that make the server retry a write: serialization failures
// (SQLSTATE 40001) and deadlocks (40P01). PostgreSQL logs every ERROR by
// default (log_min_messages=warning) with the user@database prefix of
// Debian's log_line_prefix; the server does not count its retries itself.
type pgLog struct {
	path, db string
	f        *os.File
	off      int64
}

// openPGLog opens the server log: path, or with "auto" the one
// /var/log/postgresql/postgresql-*-main.log when the server is on this
// machine. It returns nil when there is none to read.
func openPGLog(path, pgURL, db string) *pgLog {
	if path == "" {
		return nil
	}
	if path == "auto" {
		u, err := url.Parse(pgURL)
		if err != nil || (u.Hostname() != "127.0.0.1" && u.Hostname() != "localhost" && u.Hostname() != "::1") {
			return nil
		}
		m, _ := filepath.Glob("/var/log/postgresql/postgresql-*-main.log")
		if len(m) != 1 {
			return nil
		}
		path = m[0]
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	off, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil
	}
	return &pgLog{path: path, db: db, f: f, off: off}
}

// count returns the retried errors logged for the database since the last
// call.
func (l *pgLog) count() int {
	if l == nil {
		return 0
	}
	b, err := io.ReadAll(l.f)
	if err != nil {
		return 0
	}
	l.off += int64(len(b))
	n := 0
	tag := []byte("@" + l.db + " ERROR:  ")
	for _, line := range bytes.Split(b, []byte("\n")) {
		if i := bytes.Index(line, tag); i >= 0 {
			msg := line[i+len(tag):]
			if bytes.HasPrefix(msg, []byte("could not serialize access")) || bytes.HasPrefix(msg, []byte("deadlock detected")) {
				n++
			}
		}
	}
	return n
}

func (l *pgLog) close() {
	if l != nil {
		l.f.Close()
	}
}

// scrapeAll adds up the /metrics samples of several servers.
func scrapeAll(srvs []*server) (map[string]float64, error) {
	out := map[string]float64{}
	for _, s := range srvs {
		m, err := s.scrape()
		if err != nil {
			return nil, err
		}
		for k, v := range m {
			out[k] += v
		}
	}
	return out, nil
}

// pgPhases are the PostgreSQL throughput phases, interleaved in rounds.
type pgPhases struct {
	Raw1, RawN   phaseStats                    // baseline: 1 and N connections
	Post1, PostN phaseStats                    // keyed posts, 1 and N clients on replica A
	Ping1, PingN phaseStats                    // pings, 1 and N clients on replica A
	Replicas     phaseStats                    // keyed posts, N clients split N/2 on A and N/2 on B
	DBCPU        map[*phaseStats]time.Duration // CPU of the PostgreSQL backends during each phase
	Retried      map[*phaseStats]int           // serialization failures and deadlocks in the server log during each phase
	Log          *pgLog                        // nil: not counted
}

// pgEngine is the PostgreSQL run: a fresh database, `continuo serve
// --database-url` on it and a second replica, the raw pgx baseline, keyed
// posts, pings, two replicas against one; the large session filled with
// COPY while the server runs.
type pgEngine struct {
	dbURL, dbName string
	keep          bool
	baseURL       string // -postgres-url
	srvA, srvB    *server
	raw           *pgRaw
}

func (e *pgEngine) traits() engineTraits {
	return engineTraits{name: "postgres", handoff: "PostgreSQL", handoffUse: "handoff reads", runTime: "PostgreSQL part run time"}
}

func (e *pgEngine) open(c config, h harness, work string) ([]string, error) {
	ctx := context.Background()
	e.baseURL, e.keep = c.postgresURL, c.keep
	var err error
	if e.dbURL, e.dbName, err = createDatabase(ctx, c.postgresURL); err != nil {
		return nil, err
	}
	base, _ := url.Parse(c.postgresURL)
	env := append([]string{fmt.Sprintf("engine: PostgreSQL, fresh database %s on %s (continuo serve --database-url)", e.dbName, base.Redacted())}, h.env...)
	env = append(env, "load average at start of the PostgreSQL part: "+loadavg())
	prof := ""
	if c.cpuprofile != "" {
		prof = c.cpuprofile + "-pg-serve1.pprof"
	}
	if e.srvA, err = startServer(h.bin, filepath.Join(h.tmp, "pg-data-a"), work, prof, "--database-url", e.dbURL); err != nil {
		return nil, err
	}
	if e.srvA.Token == "" {
		return nil, errors.New("replica A did not announce an admin token (database not fresh?)")
	}
	// The baseline's table is made LIKE the server's: after replica A migrated the database.
	if e.raw, err = openPGRaw(ctx, e.dbURL, c.clients); err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	var pgVersion, sc string
	if err := e.raw.pool.QueryRow(ctx, "SELECT current_setting('server_version'), current_setting('synchronous_commit')").Scan(&pgVersion, &sc); err != nil {
		return nil, err
	}
	env = append(env, fmt.Sprintf("PostgreSQL %s on the same machine (its CPU shares the %d cores), synchronous_commit=%s; the server's writes are REPEATABLE READ transactions guarded by their session row, one write per commit (no group commit in the server)", pgVersion, runtime.NumCPU(), sc))
	if e.srvB, err = startServer(h.bin, filepath.Join(h.tmp, "pg-data-b"), work, "", "--database-url", e.dbURL); err != nil {
		return nil, fmt.Errorf("replica B: %w", err)
	}
	logf("postgres: database %s; replica A pid %d at %s, replica B pid %d at %s", e.dbName, e.srvA.pid(), e.srvA.URL, e.srvB.pid(), e.srvB.URL)
	return env, nil
}

func (e *pgEngine) close() {
	for _, s := range []*server{e.srvA, e.srvB} {
		if s != nil {
			s.kill()
		}
	}
	if e.raw != nil {
		e.raw.close()
	}
	switch {
	case e.dbName == "":
	case e.keep:
		logf("keeping database %s", e.dbName)
	default:
		if err := dropDatabase(e.baseURL, e.dbName); err != nil {
			logf("drop database %s: %v", e.dbName, err)
		} else {
			logf("dropped database %s", e.dbName)
		}
	}
}

func (e *pgEngine) server() *server { return e.srvA }

func (e *pgEngine) cli(h harness, work string, args ...string) error {
	_, err := cliJSONEnv(h.bin, filepath.Join(h.tmp, "pg-data-cli"), work, []string{"CONTINUO_DATABASE_URL=" + e.dbURL}, args...)
	return err
}

// throughput runs the raw baseline on 1 and N connections, keyed posts and
// pings from 1 and N clients on replica A, and N clients split over both
// replicas, in interleaved rounds; then it stops replica B.
func (e *pgEngine) throughput(c config, h harness, envp *[]string) ([]row, error) {
	ctx := context.Background()
	srvA, srvB, raw, token, env := e.srvA, e.srvB, e.raw, e.srvA.Token, *envp
	defer func() { *envp = env }()
	primary := c.kinds[0]
	dialSet := func(srv *server, n int, what string) ([]mcpClient, []string, error) {
		cl := make([]mcpClient, n)
		ss := make([]string, n)
		for i := range cl {
			var err error
			if cl[i], err = dial(primary, srv.URL, token); err != nil {
				return nil, nil, fmt.Errorf("%s client: %w", primary, err)
			}
			r, err := cl[i].call(bgctx, "work_on_project", map[string]any{"project": "bench",
				"instruction": fmt.Sprintf("benchmark: keyed posts from %s client %d (%s)", primary, i, what)})
			if err != nil {
				return nil, nil, err
			}
			ss[i] = r["session_id"].(string)
		}
		return cl, ss, nil
	}
	clA, ssA, err := dialSet(srvA, c.clients, "replica A")
	if err != nil {
		return nil, err
	}
	half := c.clients / 2
	clB, ssB, err := dialSet(srvB, c.clients-half, "replica B")
	if err != nil {
		return nil, err
	}
	label := clientLabel(primary, clA[0].protocol())
	cs := &clientSet{Kind: primary, Label: label, Clients: clA, Sessions: ssA, Ping: true}
	// The two-replica phase: the first half of A's clients and all of B's.
	clAB := append(append([]mcpClient{}, clA[:half]...), clB...)
	ssAB := append(append([]string{}, ssA[:half]...), ssB...)
	if _, err := postAll(clA, ssA, 20*c.clients, "warm-a", progressKind); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	if _, err := postAll(clB, ssB, 20*len(clB), "warm-b", progressKind); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	if _, err := raw.run(c.clients, 200*time.Millisecond); err != nil {
		return nil, fmt.Errorf("baseline warm-up: %w", err)
	}

	slice := c.duration / time.Duration(c.rounds)
	logf("postgres throughput: %d rounds of raw commits (1 and %d connections) / posts and pings from 1 and %d %s clients / %d+%d clients on two replicas, %s each (%s per phase)",
		c.rounds, c.clients, c.clients, primary, half, c.clients-half, slice, c.duration)
	var ph pgPhases
	ph.DBCPU, ph.Retried = map[*phaseStats]time.Duration{}, map[*phaseStats]int{}
	if ph.Log = openPGLog(c.postgresLog, c.postgresURL, e.dbName); ph.Log != nil {
		defer ph.Log.close()
		env = append(env, "retried errors (serialization failures, deadlocks) counted from the PostgreSQL server log "+ph.Log.path)
	} else {
		env = append(env, "PostgreSQL server log not readable (-postgres-log): serialization failures not counted")
	}
	stopProfile, err := profileSelf(c.cpuprofile, "-pg-bench.pprof")
	if err != nil {
		return nil, err
	}
	measure := func(p *phaseStats, srvs []*server, tag string, fn func() (postResult, error)) error {
		pids, err := raw.backends(ctx)
		if err != nil {
			return err
		}
		m0, err := scrapeAll(srvs)
		if err != nil {
			return err
		}
		var spids []int
		for _, s := range []*server{srvA, srvB} { // both replicas: an idle one costs little, but it is counted
			spids = append(spids, s.pid())
		}
		ph.Log.count()
		srvCPU, dbCPU, self := startPIDs(spids), startPIDs(pids), selfCPU()
		r, err := fn()
		if err != nil {
			return fmt.Errorf("%s: %w", tag, err)
		}
		sc, dc, bc := srvCPU.used(), dbCPU.used(), selfCPU()-self
		m1, err := scrapeAll(srvs)
		if err != nil {
			return err
		}
		if len(srvs) == 0 {
			m0, m1 = nil, nil
		}
		p.add(sc, bc, r.N, r.Elapsed, r.Lat, m0, m1)
		ph.DBCPU[p] += dc
		ph.Retried[p] += ph.Log.count()
		p.failed(r, tag)
		return nil
	}
	one := []*server{srvA}
	for round := 0; round < c.rounds; round++ {
		steps := []func() error{
			func() error {
				return measure(&ph.Raw1, nil, "raw1", func() (postResult, error) { return raw.run(1, slice) })
			},
			func() error {
				return measure(&ph.RawN, nil, "rawN", func() (postResult, error) { return raw.run(c.clients, slice) })
			},
			func() error {
				tag := fmt.Sprintf("pg-one-%d", round)
				return measure(&ph.Post1, one, tag, func() (postResult, error) {
					return postLoop(clA[:1], ssA[:1], slice, 0, tag, progressKind)
				})
			},
			func() error {
				tag := fmt.Sprintf("pg-many-%d", round)
				return measure(&ph.PostN, one, tag, func() (postResult, error) {
					return postLoop(clA, ssA, slice, 0, tag, progressKind)
				})
			},
			func() error {
				return measure(&ph.Ping1, one, "pg-ping1", func() (postResult, error) { return pingLoop(clA[:1], slice) })
			},
			func() error {
				return measure(&ph.PingN, one, "pg-pingN", func() (postResult, error) { return pingLoop(clA, slice) })
			},
			func() error {
				tag := fmt.Sprintf("pg-replicas-%d", round)
				return measure(&ph.Replicas, []*server{srvA, srvB}, tag, func() (postResult, error) {
					return postLoop(clAB, ssAB, slice, 0, tag, progressKind)
				})
			},
		}
		if round%2 == 1 {
			for i, j := 0, len(steps)-1; i < j; i, j = i+1, j-1 {
				steps[i], steps[j] = steps[j], steps[i]
			}
		}
		for _, step := range steps {
			if err := step(); err != nil {
				stopProfile()
				return nil, err
			}
		}
		logf("  round %d/%d: raw %.0f / %.0f commits/s; posts %.0f / %.0f; pings %.0f / %.0f; two replicas %.0f posts/s",
			round+1, c.rounds, last(ph.Raw1.Rates), last(ph.RawN.Rates), last(ph.Post1.Rates), last(ph.PostN.Rates),
			last(ph.Ping1.Rates), last(ph.PingN.Rates), last(ph.Replicas.Rates))
	}
	stopProfile()
	for _, cl := range clA {
		cl.close()
	}
	for _, cl := range clB {
		cl.close()
	}
	cs.One, cs.Many, cs.PingOne, cs.PingMany = ph.Post1, ph.PostN, ph.Ping1, ph.PingN
	rows := pgThroughputRows(c, cs, &ph)
	failed := ph.Post1.Failed + ph.PostN.Failed + ph.Ping1.Failed + ph.PingN.Failed + ph.Replicas.Failed
	if failed > 0 {
		env = append(env, fmt.Sprintf("WARNING: %d calls failed during the PostgreSQL throughput phases; their rates count only the calls that succeeded", failed))
	}
	srvB.stop()
	return rows, nil
}

// fill posts the large session's first 100 messages through MCP, so that
// the rows COPY adds continue what the server wrote, then adds the rest
// with COPY (pgFill) and ANALYZEs, as autovacuum would shortly after such
// a fill, so that the plans do not change in the middle of the reads.
func (e *pgEngine) fill(c config, _ harness, _ string, hc *mcpClient, sBig string) (string, error) {
	ctx := context.Background()
	if _, err := postAll([]mcpClient{*hc}, []string{sBig}, 100, "sbig", kindFor); err != nil {
		return "", err
	}
	logf("filling %s up to %d messages with COPY (rows shaped as the server writes unkeyed posts)", sBig, c.bigN)
	fillTime, err := pgFill(ctx, e.raw.pool, sBig, 101, c.bigN)
	if err != nil {
		return "", fmt.Errorf("fill: %w", err)
	}
	logf("  filled in %s (%.0f rows/s); ANALYZE", fillTime.Round(time.Millisecond), float64(c.bigN-100)/fillTime.Seconds())
	if _, err := e.raw.pool.Exec(ctx, "ANALYZE"); err != nil {
		return "", err
	}
	if err := pgCheckCounters(ctx, e.raw.pool, sBig); err != nil {
		return "", err
	}
	return fmt.Sprintf("S%dk: 100 messages posted through MCP, then %d rows added with COPY in %s (%.0f rows/s), session counters raised to match in the same transaction, then ANALYZE; counters rechecked against the rows, and a post through MCP after the reads landed on seq %d",
		c.bigN/1000, c.bigN-100, fillTime.Round(time.Millisecond), float64(c.bigN-100)/fillTime.Seconds(), c.bigN+1), nil
}

// after posts once more to the large session: the post must land on seq
// c.bigN+1, as the counters the fill set are the ones the server goes on
// from.
func (e *pgEngine) after(c config, hc mcpClient, sBig string, _ time.Duration, _ *[]string) ([]row, error) {
	if err := hc.post(bgctx, sBig, string(continuo.KindNote), messageText(c.bigN+1, 0), "after-fill"); err != nil {
		return nil, fmt.Errorf("post after the fill: %w", err)
	}
	if err := checkCount(hc, sBig, c.bigN+1); err != nil {
		return nil, err
	}
	return nil, pgCheckCounters(context.Background(), e.raw.pool, sBig)
}

func (e *pgEngine) memoryRows(big string, idle, after memory) []row {
	return []row{
		{"server RSS idle after start (replica A)", mbStr(idle.RSS), "—", "—", "≤ 30 MB", passFail(idle.RSS <= 30<<20)},
		{fmt.Sprintf("server RSS after the throughput phases and the %s handoff reads (replica A)", big), mbStr(after.RSS),
			mbStr(after.HWM) + " peak", "—", "≤ 60 MB", passFail(after.RSS <= 60<<20)},
	}
}

// pgThroughputRows is the PostgreSQL throughput table.
func pgThroughputRows(c config, cs *clientSet, ph *pgPhases) []row {
	n := c.clients
	cpu := func(p *phaseStats) string {
		if p.N == 0 {
			return "—"
		}
		s, b := p.cpuPerOp()
		return msStr(s) + " + " + msStr(ph.DBCPU[p]/time.Duration(p.N)) + " + " + msStr(b)
	}
	ceiling := func(p *phaseStats) string {
		if p.N == 0 {
			return "—"
		}
		s, b := p.cpuPerOp()
		per := s + b + ph.DBCPU[p]/time.Duration(p.N)
		return fmt.Sprintf("CPU ceiling %.0f/s on %d CPUs", float64(runtime.NumCPU())*float64(time.Second)/float64(per), runtime.NumCPU())
	}
	r1, rN := ph.Raw1.perSec(), ph.RawN.perSec()
	med1 := median(roundRatios(ph.Post1.Rates, ph.Raw1.Rates))
	medN := median(roundRatios(ph.PostN.Rates, ph.RawN.Rates))
	medRep := median(roundRatios(ph.Replicas.Rates, ph.PostN.Rates))
	medRepRaw := median(roundRatios(ph.Replicas.Rates, ph.RawN.Rates))
	retried := func(p *phaseStats) string {
		if ph.Log == nil {
			return "?"
		}
		if p.N == 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f", float64(ph.Retried[p])/float64(p.N))
	}
	txAvg := func(p *phaseStats) string { return fmt.Sprintf("%.2f ms", p.Commit.avgCommitMS()) }
	rows := []row{
		{"raw PostgreSQL commits/s (baseline, 1 connection, 1 row per commit)", fmt.Sprintf("%.0f", r1), "rounds " + minmax(ph.Raw1.Rates), "—", "—", "baseline"},
		{fmt.Sprintf("raw PostgreSQL commits/s (baseline, %d connections, 1 row per commit)", n), fmt.Sprintf("%.0f", rN), "rounds " + minmax(ph.RawN.Rates), "—", "—", "baseline"},
		{fmt.Sprintf("keyed post_session_message, 1 client, %s (posts/s)", cs.Label), fmt.Sprintf("%.0f", ph.Post1.perSec()),
			fmt.Sprintf("%.0f (raw, 1 conn.)", r1), ratioStr(med1) + " (pooled " + ratioStr(ph.Post1.perSec()/r1) + ")", "—", infoOr(&ph.Post1)},
		{fmt.Sprintf("keyed post_session_message, %d clients, %s (posts/s)", n, cs.Label), fmt.Sprintf("%.0f", ph.PostN.perSec()),
			fmt.Sprintf("%.0f (raw, %d conn.)", rN, n), ratioStr(medN) + " (pooled " + ratioStr(ph.PostN.perSec()/rN) + ")", "≥ 0.50×", verdict(medN >= 0.5, &ph.PostN)},
		{fmt.Sprintf("keyed post_session_message, %d clients on two replicas (%d + %d) (posts/s)", n, n/2, n-n/2), fmt.Sprintf("%.0f", ph.Replicas.perSec()),
			fmt.Sprintf("%.0f (%d clients, one replica)", ph.PostN.perSec(), n), ratioStr(medRep) + " (pooled " + ratioStr(ph.Replicas.perSec()/ph.PostN.perSec()) + ")",
			"—", infoOr(&ph.Replicas)},
		{"  two replicas against the raw baseline", fmt.Sprintf("%.0f", ph.Replicas.perSec()), fmt.Sprintf("%.0f (raw, %d conn.)", rN, n), ratioStr(medRepRaw), "—", "info"},
	}
	rows = append(rows, pingRows(cs, n, verdict, false)...)
	rows = append(rows,
		row{"  commit latency p50 / p95, raw baseline, 1 connection", msStr(percentile(ph.Raw1.Lat, .5)) + " / " + msStr(percentile(ph.Raw1.Lat, .95)), "—", "—", "—", "info"},
		row{fmt.Sprintf("  commit latency p50 / p95, raw baseline, %d connections", n), msStr(percentile(ph.RawN.Lat, .5)) + " / " + msStr(percentile(ph.RawN.Lat, .95)), "—", "—", "—", "info"},
		row{fmt.Sprintf("  [%s] failed calls, posts 1 / %d clients / two replicas", cs.Kind, n),
			fmt.Sprintf("%d / %d / %d", ph.Post1.Failed, ph.PostN.Failed, ph.Replicas.Failed), firstErr(&ph.Post1, &ph.PostN, &ph.Replicas), "—", "0",
			passFail(ph.Post1.Failed+ph.PostN.Failed+ph.Replicas.Failed == 0)},
		row{fmt.Sprintf("  [%s] post latency p50 / p95, 1 client", cs.Kind), msStr(percentile(ph.Post1.Lat, .5)) + " / " + msStr(percentile(ph.Post1.Lat, .95)), "—", "—", "—", "info"},
		row{fmt.Sprintf("  [%s] post latency p50 / p95, %d clients", cs.Kind, n), msStr(percentile(ph.PostN.Lat, .5)) + " / " + msStr(percentile(ph.PostN.Lat, .95)), "—", "—", "—", "info"},
		row{fmt.Sprintf("  [%s] post latency p50 / p95, %d clients on two replicas", cs.Kind, n), msStr(percentile(ph.Replicas.Lat, .5)) + " / " + msStr(percentile(ph.Replicas.Lat, .95)), "—", "—", "—", "info"},
		row{fmt.Sprintf("  [%s] server-side handler time (avg), 1 / %d clients / two replicas", cs.Kind, n),
			fmt.Sprintf("%.2f ms / %.2f ms / %.2f ms", ph.Post1.toolAvgMS(), ph.PostN.toolAvgMS(), ph.Replicas.toolAvgMS()), "—", "—", "—", "info"},
		row{fmt.Sprintf("  [%s] server write transaction, BEGIN to COMMIT (avg), 1 / %d clients / two replicas", cs.Kind, n),
			txAvg(&ph.Post1) + " / " + txAvg(&ph.PostN) + " / " + txAvg(&ph.Replicas),
			fmt.Sprintf("%.0f / %.0f / %.0f commits for %d / %d / %d posts", ph.Post1.Commit.commits, ph.PostN.Commit.commits, ph.Replicas.Commit.commits, ph.Post1.N, ph.PostN.N, ph.Replicas.N),
			"—", "—", "info"},
		row{fmt.Sprintf("  [%s] serialization failures and deadlocks per committed post (server log), 1 / %d clients / two replicas", cs.Kind, n),
			retried(&ph.Post1) + " / " + retried(&ph.PostN) + " / " + retried(&ph.Replicas),
			fmt.Sprintf("%d / %d / %d retried errors", ph.Retried[&ph.Post1], ph.Retried[&ph.PostN], ph.Retried[&ph.Replicas]), "—", "—", "info"},
		row{"  CPU per commit, raw 1 connection: continuo (idle) + PostgreSQL backends + bench", cpu(&ph.Raw1), ceiling(&ph.Raw1), "—", "—", "info"},
		row{fmt.Sprintf("  CPU per commit, raw %d connections: continuo (idle) + PostgreSQL backends + bench", n), cpu(&ph.RawN), ceiling(&ph.RawN), "—", "—", "info"},
		row{fmt.Sprintf("  [%s] CPU per post, 1 client: continuo + PostgreSQL backends + bench", cs.Kind), cpu(&ph.Post1), ceiling(&ph.Post1), "—", "—", "info"},
		row{fmt.Sprintf("  [%s] CPU per post, %d clients: continuo + PostgreSQL backends + bench", cs.Kind, n), cpu(&ph.PostN), ceiling(&ph.PostN), "—", "—", "info"},
		row{fmt.Sprintf("  [%s] CPU per post, two replicas: continuo (both) + PostgreSQL backends + bench", cs.Kind), cpu(&ph.Replicas), ceiling(&ph.Replicas), "—", "—", "info"},
		row{fmt.Sprintf("  [%s] CPU per ping, %d clients: continuo + PostgreSQL backends + bench", cs.Kind, n), cpu(&ph.PingN), ceiling(&ph.PingN), "—", "—", "info"},
	)
	return rows
}

// firstErr is the first failure of the phases, shortened, or "—".
func firstErr(ps ...*phaseStats) string {
	for _, p := range ps {
		if p.FirstFail != nil {
			s := p.FirstFail.Error()
			if len(s) > 120 {
				s = s[:120] + "…"
			}
			return s
		}
	}
	return "—"
}

// pgFill adds messages from..to (seq) to a session with COPY, shaped as
// workflow.PostMessage writes an unkeyed post (kind from kindFor, status
// open, priority normal, tags [], created_at the post's time, an ID from
// continuo.NewID at that time; no idempotency record, as there is no
// delivery key), and raises the session's counters as those posts would
// have: message_seq, revision (one per post), n_messages, n_decisions,
// n_progress, the open todo/risk/question tallies and updated_at. It all
// runs in one REPEATABLE READ transaction that locks the session row
// first, as the server's writes update it first.
func pgFill(ctx context.Context, pool *pgxpool.Pool, sessionID string, from, to int) (time.Duration, error) {
	start := time.Now()
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx)
	var seq, updated int64
	var lifecycle string
	if err := tx.QueryRow(ctx, "SELECT message_seq, updated_at, lifecycle FROM sessions WHERE id = $1 FOR UPDATE", sessionID).
		Scan(&seq, &updated, &lifecycle); err != nil {
		return 0, err
	}
	if seq != int64(from-1) || lifecycle != string(continuo.LifecycleActive) {
		return 0, fmt.Errorf("session %s: message_seq %d, lifecycle %s; want %d, active", sessionID, seq, lifecycle, from-1)
	}
	var c continuo.Counts
	last := updated
	i := from
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if i > to {
			return nil, nil
		}
		now := time.Now()
		if now.UnixMilli() < last { // keep updated_at monotonic, as bump does
			now = time.UnixMilli(last)
		}
		last = now.UnixMilli()
		k := kindFor(i)
		switch k {
		case continuo.KindDecision:
			c.Decisions++
		case continuo.KindProgress:
			c.Progress++
		case continuo.KindTodo:
			c.OpenTodos++
		case continuo.KindRisk:
			c.OpenRisks++
		case continuo.KindQuestion:
			c.OpenQuestions++
		case continuo.KindGuidance:
			c.OpenGuidance++
		}
		r := []any{continuo.NewID(continuo.PrefixMessage, now), sessionID, int64(i), string(k), messageText(i, 0),
			string(continuo.StatusOpen), string(continuo.PriorityNormal), "[]", "", "", "", "", now.UnixMilli(), nil}
		i++
		return r, nil
	})
	cols := []string{"id", "session_id", "seq", "kind", "text", "status", "priority", "tags", "reply_to", "supersedes",
		"superseded_by", "resolution", "created_at", "resolved_at"}
	n, err := tx.CopyFrom(ctx, pgx.Identifier{"messages"}, cols, src)
	if err != nil {
		return 0, err
	}
	if n != int64(to-from+1) {
		return 0, fmt.Errorf("COPY wrote %d rows, want %d", n, to-from+1)
	}
	if _, err := tx.Exec(ctx, `UPDATE sessions SET message_seq = message_seq + $2, revision = revision + $2, n_messages = n_messages + $2,
		n_decisions = n_decisions + $3, n_progress = n_progress + $4, n_open_todos = n_open_todos + $5, n_open_risks = n_open_risks + $6,
		n_open_questions = n_open_questions + $7, n_open_guidance = n_open_guidance + $8, updated_at = $9 WHERE id = $1`,
		sessionID, n, c.Decisions, c.Progress, c.OpenTodos, c.OpenRisks, c.OpenQuestions, c.OpenGuidance, last); err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// pgCheckCounters checks a session's counters against its message rows.
func pgCheckCounters(ctx context.Context, pool *pgxpool.Pool, sessionID string) error {
	var got, want [8]int64
	if err := pool.QueryRow(ctx, `SELECT message_seq, n_messages, n_decisions, n_progress, n_open_todos, n_open_risks, n_open_questions, n_open_guidance
		FROM sessions WHERE id = $1`, sessionID).Scan(&got[0], &got[1], &got[2], &got[3], &got[4], &got[5], &got[6], &got[7]); err != nil {
		return err
	}
	if err := pool.QueryRow(ctx, `SELECT coalesce(max(seq), 0), count(*),
		count(*) FILTER (WHERE kind = 'decision'), count(*) FILTER (WHERE kind = 'progress'),
		count(*) FILTER (WHERE kind = 'todo' AND status = 'open'), count(*) FILTER (WHERE kind = 'risk' AND status = 'open'),
		count(*) FILTER (WHERE kind = 'question' AND status = 'open'), count(*) FILTER (WHERE kind = 'guidance' AND status = 'open')
		FROM messages WHERE session_id = $1`, sessionID).Scan(&want[0], &want[1], &want[2], &want[3], &want[4], &want[5], &want[6], &want[7]); err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("session %s: counters (seq, messages, decisions, progress, open todos/risks/questions/guidance) %v, rows say %v", sessionID, got, want)
	}
	return nil
}
