// Command bench measures Continuo against the targets in docs/PERFORMANCE.md
// on the machine it runs on. Every throughput number is reported as a ratio
// to a baseline measured in the same run (raw single-row SQLite commits/s
// with the server's writer pragmas), and handoff latency of a large session
// as a ratio to that of a small one, because absolute numbers on a shared
// machine are noisy.
//
//	go run ./bench [-quick] [-markdown] [-engine sqlite|postgres|both]
//
// It builds cmd/continuo, runs it as a real process on a fresh data
// directory, and talks to it over streamable HTTP with a bearer token, the
// way an agent would, with two MCP clients (-client): a lean client over
// net/http (lean.go) that costs this process little CPU, so that its rows
// measure the server as wrk would, and the official MCP Go SDK client.
// Both speak the stateful protocol 2025-11-25 unless -protocol says
// otherwise for the SDK. Throughput phases (raw baseline, 1 client and N
// clients of each kind, and the same write path in process without
// HTTP/MCP) run interleaved in short rounds so that load
// drift hits all of them alike; the headline ratio is the median of the
// per-round ratios. The CPU used per operation by the server and by this
// process is reported too: unlike throughput, it barely moves with the
// machine's load.
//
// A ping phase (JSON-RPC ping from 1 and N lean clients over the same
// stateful sessions, bearer token and server) is the floor of the MCP
// stack; keyed posts are also reported as a ratio to it.
//
//	go run ./bench -engine postgres|both [-postgres-url URL]
//
// runs the server on PostgreSQL too (-engine both: SQLite first, then
// PostgreSQL, each with its own baseline and report). On the server of
// -postgres-url (default $CONTINUO_TEST_POSTGRES_URL, else the local test
// server) it creates a fresh database continuo_bench_<random>, dropped at
// the end, and starts `continuo serve --database-url` on it, and a second
// replica on the same database. Its phases, interleaved in rounds like
// SQLite's: the raw baseline (single-row INSERT + COMMIT through pgx into a
// table LIKE messages, synchronous_commit on) on 1 and N connections,
// keyed posts and pings from 1 and N clients, and N clients split half and
// half over the two replicas. Then the handoff of a 100-message session
// against a 100,000-message one, filled with COPY (postgres.go). The CPU
// of the PostgreSQL backends is counted per operation too, and the
// server's retried transactions (serialization failures) are counted in
// the PostgreSQL server log when it is readable (-postgres-log).
//
// Both engines run one program, runEngine (engine.go); what differs (the
// store and server processes, the throughput phases and their baseline,
// the fill of the large session) is an engine: sqlite.go, postgres.go.
//
// -cpuprofile PREFIX builds ./bench/profserver (cmd/continuo plus a CPU and
// allocation profile) instead, for `go tool pprof`.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

type config struct {
	quick         bool
	markdown      bool
	keep          bool
	duration      time.Duration
	clients       int
	handoffs      int
	warm          int
	bigN          int
	skipMCPBig    bool
	fillWorkers   int
	cpuprofile    string
	postsOnly     bool
	swarm         bool
	scale         bool  // -scale: the scaling run (scale.go)
	scaleReplicas []int // -scale-replicas
	scaleWorkers  []int // -scale-workers
	scaleTasks    int   // -scale-tasks
	rounds        int
	kinds         []string // client kinds to measure (-client), the first one also does handoffs and the MCP write
	engines       []string // -engine: engineSQLite and/or enginePostgres, in that order
	postgresURL   string   // -postgres-url: the server a fresh database is created on
	postgresLog   string   // -postgres-log: its log, to count serialization failures ("auto", a path or "")
}

func main() {
	var c config
	flag.BoolVar(&c.quick, "quick", false, "short run: 2 s per phase in 2 rounds, 100 handoff reads, no 100k write through MCP")
	flag.BoolVar(&c.markdown, "markdown", false, "also print the results as a markdown table")
	flag.BoolVar(&c.keep, "keep", false, "keep the temporary directory (binary, data dir, baseline DB)")
	flag.DurationVar(&c.duration, "duration", 0, "time per throughput phase (raw, 1 client, N clients), split into -rounds slices (default 5s, 2s with -quick)")
	flag.IntVar(&c.clients, "clients", 16, "concurrent MCP clients for the concurrent post test")
	flag.IntVar(&c.handoffs, "handoffs", 0, "measured handoff reads per session (default 300, 100 with -quick)")
	flag.IntVar(&c.warm, "warmup", 20, "handoff reads per session before measuring")
	flag.IntVar(&c.bigN, "messages", 100000, "messages in the large session")
	flag.BoolVar(&c.skipMCPBig, "skip-mcp-write", false, "skip writing the large session through MCP (always skipped with -quick)")
	flag.IntVar(&c.fillWorkers, "fill-workers", 64, "concurrent writers for the in-process fill of the large session")
	flag.StringVar(&c.cpuprofile, "cpuprofile", "", "write CPU profiles PREFIX-serve1.pprof (posts), PREFIX-serve2.pprof (handoffs, MCP write) of the server, PREFIX-bench.pprof of this process during the throughput phases (clients, raw baseline, in-process path) and PREFIX-fill.pprof of the in-process fill")
	flag.StringVar(&protocolVersion, "protocol", "2025-11-25", "MCP protocol version the SDK clients request (2025-11-25: stateful sessions; 2026-07-28, the SDK's default: stateless); the lean client always speaks 2025-11-25")
	clientFlag := flag.String("client", "both", "MCP client for the throughput phases: lean (minimal net/http client, measures the server), sdk (official Go SDK client) or both; handoff reads and the MCP write use lean unless -client sdk")
	flag.IntVar(&c.rounds, "rounds", 0, "interleaved rounds the throughput phases are split into (default 5, 2 with -quick)")
	flag.StringVar(&serverGOGC, "server-gogc", "", "GOGC for the server process only (default: inherited)")
	flag.BoolVar(&c.postsOnly, "posts-only", false, "run only the baseline and the keyed-post tests")
	flag.BoolVar(&c.swarm, "swarm", false, "run only the Chat Swarm phases (-clients workers, 2,000 tasks, wake latency) on each engine of -engine")
	flag.BoolVar(&c.scale, "scale", false, "run only the scaling simulation: -scale-replicas replicas × -scale-workers long-polling workers on one PostgreSQL database (docs/SCALING.md)")
	replicasFlag := flag.String("scale-replicas", "1,2,4", "with -scale: replica counts, in turn")
	workersFlag := flag.String("scale-workers", "32,256", "with -scale: worker counts, in turn (swarms of at most 64)")
	flag.IntVar(&c.scaleTasks, "scale-tasks", 2000, "with -scale: tasks per point, split over the swarms")
	engineFlag := flag.String("engine", engineSQLite, "database engine of the server: sqlite, postgres or both (each in turn, with its own baseline and report)")
	defURL := os.Getenv("CONTINUO_TEST_POSTGRES_URL")
	if defURL == "" {
		defURL = defaultPostgresURL
	}
	flag.StringVar(&c.postgresURL, "postgres-url", defURL, "PostgreSQL server for -engine postgres (default $CONTINUO_TEST_POSTGRES_URL, else the local test server): a fresh database continuo_bench_<random> is created on it for the run and dropped at the end (kept with -keep)")
	flag.StringVar(&c.postgresLog, "postgres-log", "auto", "PostgreSQL server log to count the server's retried errors (serialization failures, deadlocks) in, per phase; auto: the one /var/log/postgresql/postgresql-*-main.log when the server is local; empty: do not count")
	flag.Parse()
	if c.duration == 0 {
		c.duration = 5 * time.Second
		if c.quick {
			c.duration = 2 * time.Second
		}
	}
	if c.rounds == 0 {
		c.rounds = 5
		if c.quick {
			c.rounds = 2
		}
	}
	if c.handoffs == 0 {
		c.handoffs = 300
		if c.quick {
			c.handoffs = 100
		}
	}
	if c.quick {
		c.skipMCPBig = true
	}
	var err error
	if c.scaleReplicas, err = ints(*replicasFlag); err == nil {
		c.scaleWorkers, err = ints(*workersFlag)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: -scale-replicas / -scale-workers:", err)
		os.Exit(2)
	}
	switch *clientFlag {
	case "both":
		c.kinds = []string{kindLean, kindSDK}
	case kindLean, kindSDK:
		c.kinds = []string{*clientFlag}
	default:
		fmt.Fprintf(os.Stderr, "bench: -client %q: want lean, sdk or both\n", *clientFlag)
		os.Exit(2)
	}
	switch *engineFlag {
	case engineSQLite, enginePostgres:
		c.engines = []string{*engineFlag}
	case "both":
		c.engines = []string{engineSQLite, enginePostgres}
	default:
		fmt.Fprintf(os.Stderr, "bench: -engine %q: want sqlite, postgres or both\n", *engineFlag)
		os.Exit(2)
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

var bgctx = context.Background()

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// row is one line of the result table.
type row struct {
	Metric, Value, Baseline, Ratio, Target, Result string
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// minmax formats the range of per-round rates.
func minmax(xs []float64) string {
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return fmt.Sprintf("%.0f–%.0f", lo, hi)
}

// verdict is passFail for a throughput phase: a phase with failed calls
// cannot pass, as its rate counts only the calls that succeeded.
func verdict(ok bool, p *phaseStats) string {
	if p.Failed > 0 {
		return fmt.Sprintf("FAIL (%d failed calls)", p.Failed)
	}
	return passFail(ok)
}

func ratioStr(r float64) string { return strconv.FormatFloat(r, 'f', 2, 64) + "×" }

func run(c config) error {
	started := time.Now()
	tmp, err := os.MkdirTemp("", "continuo-bench-")
	if err != nil {
		return err
	}
	if c.keep {
		logf("keeping %s", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	env := environment(tmp)
	env = append(env, "bench command: go run ./bench "+strings.Join(os.Args[1:], " "))
	if serverGOGC != "" {
		env = append(env, "server GOGC="+serverGOGC)
	}
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		dirty := ""
		if st, err := exec.Command("git", "status", "--porcelain", "--", ".", ":!bench", ":!docs").Output(); err == nil && len(st) > 0 {
			dirty = " PLUS UNCOMMITTED CHANGES outside bench/ and docs/"
		} else if st, err := exec.Command("git", "status", "--porcelain", "--", "bench").Output(); err == nil && len(st) > 0 {
			dirty = " (server code as committed; bench/ as in the work tree)"
		}
		env = append(env, "commit: "+strings.TrimSpace(string(out))+dirty)
	}
	logf("building continuo")
	pkg := "./cmd/continuo"
	if c.cpuprofile != "" {
		if c.cpuprofile, err = filepath.Abs(c.cpuprofile); err != nil {
			return err
		}
		pkg = "./bench/profserver"
		env = append(env, "server built from ./bench/profserver (cmd/continuo + CPU profile): numbers include profiling overhead")
	}
	bin, err := buildBinary(tmp, pkg)
	if err != nil {
		return err
	}
	h := harness{tmp: tmp, bin: bin, env: env}
	if c.swarm {
		return runSwarm(c, h)
	}
	if c.scale {
		return runScale(c, h)
	}
	for _, name := range c.engines {
		var e engine = &sqliteEngine{}
		if name == enginePostgres {
			e = &pgEngine{}
		}
		if err := runEngine(c, h, e); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if len(c.engines) > 1 {
		logf("total run time (build and every engine): %s", time.Since(started).Round(time.Second))
	}
	return nil
}

// harness is what every engine's run shares: the temporary directory, the
// server binary and the lines describing the machine and the commit.
type harness struct {
	tmp, bin string
	env      []string
}

// Engines (-engine).
const (
	engineSQLite   = "sqlite"
	enginePostgres = "postgres"
)

// pingRows reports a client set's ping phases and keyed posts as a ratio
// to them: how close a post comes to the floor of the MCP stack (HTTP,
// bearer auth, JSON-RPC and the stateful session, without a tool).
// With target, the N-client ratio is held against the target
// (≥ 0.6×, stated for SQLite); without, it is reported as info.
func pingRows(cs *clientSet, n int, verdict func(bool, *phaseStats) string, target bool) []row {
	postPing1 := median(roundRatios(cs.One.Rates, cs.PingOne.Rates))
	postPingN := median(roundRatios(cs.Many.Rates, cs.PingMany.Rates))
	srv1, cli1 := cs.PingOne.cpuPerOp()
	srvN, cliN := cs.PingMany.cpuPerOp()
	both := &phaseStats{Failed: cs.One.Failed + cs.PingOne.Failed}
	bothN := &phaseStats{Failed: cs.Many.Failed + cs.PingMany.Failed}
	tgt, res := "≥ 0.60×", verdict(postPingN >= 0.6, bothN)
	if !target {
		tgt, res = "— (≥ 0.60× on SQLite)", infoOr(bothN)
	}
	return []row{
		{fmt.Sprintf("JSON-RPC ping, 1 client, %s (pings/s)", cs.Label), fmt.Sprintf("%.0f", cs.PingOne.perSec()),
			"—", "—", "—", fmt.Sprintf("info (%d failed)", cs.PingOne.Failed)},
		{fmt.Sprintf("JSON-RPC ping, %d clients, %s (pings/s)", n, cs.Label), fmt.Sprintf("%.0f", cs.PingMany.perSec()),
			"—", "—", "—", fmt.Sprintf("info (%d failed)", cs.PingMany.Failed)},
		{fmt.Sprintf("keyed post ÷ ping, 1 client, %s", cs.Kind), fmt.Sprintf("%.0f posts/s", cs.One.perSec()),
			fmt.Sprintf("%.0f pings/s", cs.PingOne.perSec()), ratioStr(postPing1) + " (pooled " + ratioStr(cs.One.perSec()/cs.PingOne.perSec()) + ")",
			"—", infoOr(both)},
		{fmt.Sprintf("keyed post ÷ ping, %d clients, %s", n, cs.Kind), fmt.Sprintf("%.0f posts/s", cs.Many.perSec()),
			fmt.Sprintf("%.0f pings/s", cs.PingMany.perSec()), ratioStr(postPingN) + " (pooled " + ratioStr(cs.Many.perSec()/cs.PingMany.perSec()) + ")",
			tgt, res},
		{fmt.Sprintf("  [%s] ping latency p50 / p95, 1 / %d clients", cs.Kind, n),
			msStr(percentile(cs.PingOne.Lat, .5)) + " / " + msStr(percentile(cs.PingOne.Lat, .95)),
			msStr(percentile(cs.PingMany.Lat, .5)) + " / " + msStr(percentile(cs.PingMany.Lat, .95)) + fmt.Sprintf(" (%d clients)", n), "—", "—", "info"},
		{fmt.Sprintf("  [%s] CPU per ping, 1 / %d clients: server + bench client", cs.Kind, n), msStr(srv1) + " + " + msStr(cli1),
			msStr(srvN) + " + " + msStr(cliN) + fmt.Sprintf(" (%d clients)", n), "—", "—", "info"},
	}
}

// infoOr is "info" for an informational row, unless its phases had
// failed calls.
func infoOr(p *phaseStats) string {
	if p.Failed > 0 {
		return fmt.Sprintf("info (%d failed calls)", p.Failed)
	}
	return "info"
}

func report(c config, env []string, rows []row) {
	printTable(os.Stdout, env, rows)
	if c.markdown {
		fmt.Println()
		printMarkdown(os.Stdout, env, rows)
	}
}

// checkCount verifies, through the diagnostic handoff, that a session holds
// want messages.
func checkCount(h mcpClient, sid string, want int) error {
	r, err := h.call(bgctx, "read_session_handoff", map[string]any{"session_id": sid, "diagnostic": true})
	if err != nil {
		return err
	}
	d, _ := r["diagnostic"].(map[string]any)
	counts, _ := d["counts"].(map[string]any)
	got, _ := counts["messages"].(float64)
	if int(got) != want {
		return fmt.Errorf("session %s: %v messages, want %d", sid, counts["messages"], want)
	}
	return nil
}

// commitStatsT is the group-commit activity between two scrapes.
type commitStatsT struct {
	writes, commits, seconds float64
}

func commitStats(a, b map[string]float64) commitStatsT {
	return commitStatsT{
		writes:  b["continuo_db_commit_writes_total"] - a["continuo_db_commit_writes_total"],
		commits: b["continuo_db_commit_seconds_count"] - a["continuo_db_commit_seconds_count"],
		seconds: b["continuo_db_commit_seconds_sum"] - a["continuo_db_commit_seconds_sum"],
	}
}

func (s commitStatsT) perCommit() float64 {
	if s.commits == 0 {
		return 0
	}
	return s.writes / s.commits
}

func (s commitStatsT) avgCommitMS() float64 {
	if s.commits == 0 {
		return 0
	}
	return s.seconds / s.commits * 1000
}

// profileSelf starts a CPU profile of this process into prefix+suffix when
// prefix is set, and returns the function that stops it.
func profileSelf(prefix, suffix string) (func(), error) {
	if prefix == "" {
		return func() {}, nil
	}
	f, err := os.Create(prefix + suffix)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// environment describes the machine for the report.
func environment(tmp string) []string {
	out := []string{
		"date: " + time.Now().Format("2006-01-02 15:04 MST"),
		fmt.Sprintf("go: %s %s/%s, CPUs: %d", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU()),
	}
	if b, err := exec.Command("df", "-T", tmp).Output(); err == nil {
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if f := strings.Fields(lines[len(lines)-1]); len(f) >= 2 {
			out = append(out, fmt.Sprintf("temp dir %s on %s (%s)", tmp, f[0], f[1]))
		}
	}
	out = append(out, "load average at start: "+loadavg())
	return out
}

func printTable(w io.Writer, env []string, rows []row) {
	for _, e := range env {
		fmt.Fprintln(w, "# "+e)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "METRIC\tVALUE\tBASELINE\tRATIO\tTARGET\tRESULT")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Metric, r.Value, r.Baseline, r.Ratio, r.Target, r.Result)
	}
	tw.Flush()
}

func printMarkdown(w io.Writer, env []string, rows []row) {
	for _, e := range env {
		fmt.Fprintln(w, "- "+e)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| metric | value | baseline | ratio | target | result |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	esc := func(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "|", `\|`) }
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", esc(r.Metric), esc(r.Value), esc(r.Baseline), esc(r.Ratio), esc(r.Target), esc(r.Result))
	}
}
