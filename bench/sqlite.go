package main

import (
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"time"
)

// sqliteEngine is the SQLite run: one server on the default store
// (sqlite://DATA_DIR/continuo.db); the raw SQLite baseline, keyed posts and
// pings from every client kind, the in-process write path; the large
// session filled in process with the server stopped, then the same session
// written through MCP.
type sqliteEngine struct {
	dataDir    string
	srv        *server
	prof2      string  // the restarted server's CPU profile
	rawRate    float64 // the raw baseline, for the MCP write's ratio
	memRestart memory  // the server's memory right after the restart
}

func (e *sqliteEngine) traits() engineTraits {
	return engineTraits{name: "sqlite", handoff: "no root", handoffCap: true, gitRoot: true,
		handoffUse: "handoff reads and the write of the large session through MCP", runTime: "total run time"}
}

func (e *sqliteEngine) open(c config, h harness, work string) ([]string, error) {
	prof1 := ""
	if c.cpuprofile != "" {
		prof1, e.prof2 = c.cpuprofile+"-serve1.pprof", c.cpuprofile+"-serve2.pprof"
	}
	e.dataDir = filepath.Join(h.tmp, "data")
	srv, err := startServer(h.bin, e.dataDir, work, prof1)
	if err != nil {
		return nil, err
	}
	e.srv = srv
	return append([]string{"engine: SQLite (the server's default, sqlite://DATA_DIR/continuo.db)"}, h.env...), nil
}

func (e *sqliteEngine) close() {
	if e.srv != nil {
		e.srv.kill()
	}
}

func (e *sqliteEngine) server() *server { return e.srv }

func (e *sqliteEngine) cli(h harness, work string, args ...string) error {
	_, err := cliJSON(h.bin, e.dataDir, work, args...)
	return err
}

// throughput runs the raw SQLite baseline, keyed posts and pings from 1 and
// N clients of every kind, and the in-process write path, in interleaved
// rounds (measureThroughput).
func (e *sqliteEngine) throughput(c config, h harness, envp *[]string) ([]row, error) {
	srv, token, env := e.srv, e.srv.Token, *envp
	defer func() { *envp = env }()
	raw, err := openRaw(filepath.Join(h.tmp, "raw.db"))
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	defer raw.close()
	var sets []*clientSet
	for _, kind := range c.kinds {
		cs := &clientSet{Kind: kind, Clients: make([]mcpClient, c.clients), Sessions: make([]string, c.clients)}
		for i := range cs.Clients {
			if cs.Clients[i], err = dial(kind, srv.URL, token); err != nil {
				return nil, fmt.Errorf("%s client: %w", kind, err)
			}
			r, err := cs.Clients[i].call(bgctx, "work_on_project", map[string]any{"project": "bench",
				"instruction": fmt.Sprintf("benchmark: keyed posts from %s client %d", kind, i)})
			if err != nil {
				return nil, err
			}
			cs.Sessions[i] = r["session_id"].(string)
		}
		cs.Label = clientLabel(kind, cs.Clients[0].protocol())
		cs.Ping = kind == kindLean || !slices.Contains(c.kinds, kindLean)
		env = append(env, fmt.Sprintf("%s: MCP protocol version negotiated: %s", cs.Label, cs.Clients[0].protocol()))
		if _, err := postAll(cs.Clients, cs.Sessions, 20*c.clients, "warm-"+kind, progressKind); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
		sets = append(sets, cs)
	}
	if _, err := raw.run(200 * time.Millisecond); err != nil {
		return nil, fmt.Errorf("baseline warm-up: %w", err)
	}
	slice := c.duration / time.Duration(c.rounds)
	logf("throughput: %d rounds of raw commits / 1 and %d %v clients / in process, %s each (%s per phase)", c.rounds, c.clients, c.kinds, slice, c.duration)
	ip, err := openInproc(filepath.Join(h.tmp, "inproc"), c.clients)
	if err != nil {
		return nil, fmt.Errorf("in-process store: %w", err)
	}
	if _, _, err := ip.run(c.clients, 200*time.Millisecond, "warm"); err != nil {
		return nil, err
	}
	stopProfile, err := profileSelf(c.cpuprofile, "-bench.pprof")
	if err != nil {
		return nil, err
	}
	tp, err := measureThroughput(srv, raw, ip, sets, c.clients, c.rounds, slice)
	stopProfile()
	ip.close()
	if err != nil {
		return nil, err
	}
	for _, cs := range sets {
		for _, cl := range cs.Clients {
			cl.close()
		}
	}
	rawRate := tp.Raw.perSec()
	e.rawRate = rawRate
	_, rawCPU := tp.Raw.cpuPerOp()
	rows := []row{
		{"raw SQLite commits/s (baseline, 1 writer, 1 row per commit)", fmt.Sprintf("%.0f", rawRate),
			"rounds " + minmax(tp.Raw.Rates), "—", "—", "baseline"},
	}
	for _, cs := range sets {
		medOne := median(roundRatios(cs.One.Rates, tp.Raw.Rates))
		medMany := median(roundRatios(cs.Many.Rates, tp.Raw.Rates))
		rows = append(rows,
			row{fmt.Sprintf("keyed post_session_message, 1 client, %s (posts/s)", cs.Label), fmt.Sprintf("%.0f", cs.One.perSec()),
				fmt.Sprintf("%.0f", rawRate), ratioStr(medOne) + " (pooled " + ratioStr(cs.One.perSec()/rawRate) + ")", "≥ 0.70×", verdict(medOne >= 0.7, &cs.One)},
			row{fmt.Sprintf("keyed post_session_message, %d clients, %s (posts/s)", c.clients, cs.Label), fmt.Sprintf("%.0f", cs.Many.perSec()),
				fmt.Sprintf("%.0f", rawRate), ratioStr(medMany) + " (pooled " + ratioStr(cs.Many.perSec()/rawRate) + ")", "≥ 2.00×", verdict(medMany >= 2, &cs.Many)})
	}
	for _, cs := range sets {
		if cs.Ping {
			rows = append(rows, pingRows(cs, c.clients, verdict, true)...)
		}
	}
	rows = append(rows, row{"  commit latency p50, raw baseline", msStr(percentile(tp.Raw.Lat, .5)), "p95 " + msStr(percentile(tp.Raw.Lat, .95)), "—", "—", "info"},
		row{"  CPU per commit, raw baseline (bench process)", msStr(rawCPU), "—", "—", "—", "info"})
	for _, cs := range sets {
		srvCPU1, cliCPU1 := cs.One.cpuPerOp()
		srvCPUN, cliCPUN := cs.Many.cpuPerOp()
		ceiling := float64(runtime.NumCPU()) * float64(time.Second) / float64(srvCPUN+cliCPUN)
		srvCeiling := float64(runtime.NumCPU()) * float64(time.Second) / float64(srvCPUN)
		failed := cs.One.Failed + cs.Many.Failed
		rows = append(rows,
			row{fmt.Sprintf("  [%s] failed calls (isError, JSON-RPC or HTTP error), 1 / %d clients", cs.Kind, c.clients),
				fmt.Sprintf("%d / %d", cs.One.Failed, cs.Many.Failed), firstErr(&cs.One, &cs.Many), "—", "0", passFail(failed == 0)},
			row{fmt.Sprintf("  [%s] post latency p50 / p95, 1 client", cs.Kind), msStr(percentile(cs.One.Lat, .5)) + " / " + msStr(percentile(cs.One.Lat, .95)),
				"—", "—", "—", "info"},
			row{fmt.Sprintf("  [%s] post latency p50 / p95, %d clients", cs.Kind, c.clients), msStr(percentile(cs.Many.Lat, .5)) + " / " + msStr(percentile(cs.Many.Lat, .95)),
				"—", "—", "—", "info"},
			row{fmt.Sprintf("  [%s] server-side handler time (avg), 1 / %d clients", cs.Kind, c.clients), fmt.Sprintf("%.2f ms / %.2f ms", cs.One.toolAvgMS(), cs.Many.toolAvgMS()),
				"—", "—", "—", "info"},
			row{fmt.Sprintf("  [%s] CPU per post, 1 client: server + bench client", cs.Kind), msStr(srvCPU1) + " + " + msStr(cliCPU1), "—", "—", "—", "info"},
			row{fmt.Sprintf("  [%s] CPU per post, %d clients: server + bench client", cs.Kind, c.clients), msStr(srvCPUN) + " + " + msStr(cliCPUN),
				fmt.Sprintf("CPU ceiling %.0f posts/s on %d CPUs (server alone: %.0f)", ceiling, runtime.NumCPU(), srvCeiling), ratioStr(ceiling / rawRate), "—", "info"},
			row{fmt.Sprintf("  [%s] writes per commit, 1 client", cs.Kind), fmt.Sprintf("%.2f", cs.One.Commit.perCommit()),
				fmt.Sprintf("%.0f commits, avg %.2f ms", cs.One.Commit.commits, cs.One.Commit.avgCommitMS()), "—", "—", "info"},
			row{fmt.Sprintf("  [%s] writes per commit, %d clients (group commit)", cs.Kind, c.clients), fmt.Sprintf("%.2f", cs.Many.Commit.perCommit()),
				fmt.Sprintf("%.0f commits, avg %.2f ms", cs.Many.Commit.commits, cs.Many.Commit.avgCommitMS()), "—", "> 1", passFail(cs.Many.Commit.perCommit() > 1)},
		)
		if failed > 0 {
			env = append(env, fmt.Sprintf("WARNING: %d calls of the %s failed during the throughput phases; its rates count only the calls that succeeded", failed, cs.Label))
		}
	}
	benchCPU := func(p *phaseStats) string { _, b := p.cpuPerOp(); return msStr(b) }
	rows = append(rows,
		row{"  in-process write path (no HTTP/MCP), 1 goroutine (posts/s)", fmt.Sprintf("%.0f", tp.InOne.perSec()),
			fmt.Sprintf("%.0f", rawRate), ratioStr(median(roundRatios(tp.InOne.Rates, tp.Raw.Rates))), "—",
			fmt.Sprintf("info (bench CPU %s/post)", benchCPU(&tp.InOne))},
		row{fmt.Sprintf("  in-process write path (no HTTP/MCP), %d goroutines (posts/s)", c.clients), fmt.Sprintf("%.0f", tp.InMany.perSec()),
			fmt.Sprintf("%.0f", rawRate), ratioStr(median(roundRatios(tp.InMany.Rates, tp.Raw.Rates))), "—",
			fmt.Sprintf("info (%.1f writes/commit, bench CPU %s/post)", tp.InMany.Commit.perCommit(), benchCPU(&tp.InMany))},
	)
	return rows, nil
}

// fill stops the server, writes the large session in process (through the
// store, as the server would) and restarts the server on the same data
// directory.
func (e *sqliteEngine) fill(c config, h harness, work string, hc *mcpClient, sBig string) (string, error) {
	(*hc).close()
	e.srv.stop()
	logf("filling %s with %d messages in process (server stopped)", sBig, c.bigN)
	stopProfile, err := profileSelf(c.cpuprofile, "-fill.pprof")
	if err != nil {
		return "", err
	}
	fillTime, err := fillInProcess(filepath.Join(e.dataDir, "continuo.db"), e.srv.Token, sBig, c.bigN, c.fillWorkers, "fill")
	stopProfile()
	if err != nil {
		return "", fmt.Errorf("fill: %w", err)
	}
	logf("  filled in %s (%.0f writes/s)", fillTime.Round(time.Millisecond), float64(c.bigN)/fillTime.Seconds())
	token := e.srv.Token
	if e.srv, err = startServer(h.bin, e.dataDir, work, e.prof2); err != nil {
		return "", err
	}
	e.srv.Token = token // a restart on the same store announces no new token
	e.memRestart, _ = readMemory(e.srv.pid())
	if *hc, err = dial(c.kinds[0], e.srv.URL, token); err != nil {
		return "", err
	}
	return fmt.Sprintf("in-process fill of S%dk: %s (%.0f writes/s)", c.bigN/1000, fillTime.Round(time.Millisecond),
		float64(c.bigN)/fillTime.Seconds()), nil
}

func (e *sqliteEngine) memoryRows(big string, idle, after memory) []row {
	return []row{
		{"server RSS idle after start", mbStr(idle.RSS), "—", "—", "≤ 30 MB", passFail(idle.RSS <= 30<<20)},
		{fmt.Sprintf("server RSS after %s (in-process fill) + restart + handoff reads", big), mbStr(after.RSS),
			mbStr(e.memRestart.RSS) + " at restart", "—", "≤ 60 MB", passFail(after.RSS <= 60<<20)},
	}
}

// after writes c.bigN messages into a new session through MCP from
// c.clients clients (unless -skip-mcp-write or -quick), then reads its
// handoff as the others'.
func (e *sqliteEngine) after(c config, hc mcpClient, _ string, p50s time.Duration, _ *[]string) ([]row, error) {
	if c.skipMCPBig {
		return nil, nil
	}
	srv, primary := e.srv, c.kinds[0]
	r, err := hc.call(bgctx, "work_on_project", map[string]any{"project": "bench",
		"instruction": fmt.Sprintf("benchmark: %d messages written through MCP", c.bigN)})
	if err != nil {
		return nil, err
	}
	sMCP := r["session_id"].(string)
	ws := make([]mcpClient, c.clients)
	ss := make([]string, c.clients)
	for i := range ws {
		if ws[i], err = dial(primary, srv.URL, srv.Token); err != nil {
			return nil, err
		}
		ss[i] = sMCP
	}
	logf("writing %d messages into %s through MCP with %d clients", c.bigN, sMCP, c.clients)
	b0, err := srv.scrape()
	if err != nil {
		return nil, err
	}
	res, err := postAll(ws, ss, c.bigN, "mcp", kindFor)
	if err != nil {
		return nil, err
	}
	b1, err := srv.scrape()
	if err != nil {
		return nil, err
	}
	for _, w := range ws {
		w.close()
	}
	stats := commitStats(b0, b1)
	memWrite, err := readMemory(srv.pid())
	if err != nil {
		return nil, err
	}
	logf("  %s, %.0f posts/s, %.2f writes/commit, RSS %s (peak %s)", res.Elapsed.Round(time.Millisecond), res.perSec(),
		stats.perCommit(), mbStr(memWrite.RSS), mbStr(memWrite.HWM))
	if err := checkCount(hc, sMCP, c.bigN); err != nil {
		return nil, err
	}
	l, err := handoffLatencies(hc, []string{sMCP}, c.warm, c.handoffs)
	if err != nil {
		return nil, err
	}
	p50, p95 := percentile(l[0], .5), percentile(l[0], .95)
	memRead, err := readMemory(srv.pid())
	if err != nil {
		return nil, err
	}
	logf("  handoff p50 %s p95 %s; RSS %s", msStr(p50), msStr(p95), mbStr(memRead.RSS))
	return []row{
		{fmt.Sprintf("write %d messages through MCP, %d %s clients, one session (posts/s)", c.bigN, c.clients, primary), fmt.Sprintf("%.0f", res.perSec()),
			fmt.Sprintf("%.0f", e.rawRate), ratioStr(res.perSec() / e.rawRate), "—",
			fmt.Sprintf("info (%s, %.1f writes/commit)", res.Elapsed.Round(time.Second), stats.perCommit())},
		{fmt.Sprintf("server RSS after writing %d messages through MCP", c.bigN), mbStr(memWrite.RSS),
			mbStr(memWrite.HWM) + " peak", "—", "≤ 60 MB", passFail(memWrite.RSS <= 60<<20)},
		{"handoff p50 / p95 on the MCP-written session", msStr(p50) + " / " + msStr(p95),
			msStr(p50s) + " (S100)", ratioStr(float64(p50) / float64(p50s)), "≤ 1.50×, < 5 ms",
			passFail(float64(p50)/float64(p50s) <= 1.5 && p50 < 5*time.Millisecond)},
		{"server RSS after those handoff reads", mbStr(memRead.RSS), mbStr(memRead.HWM) + " peak", "—", "≤ 60 MB",
			passFail(memRead.RSS <= 60<<20)},
	}, nil
}
