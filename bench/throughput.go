package main

import (
	"fmt"
	"sort"
	"time"
)

// phaseStats accumulates one measured phase (raw commits, 1-client posts,
// N-client posts) over all rounds.
type phaseStats struct {
	N         int
	Elapsed   time.Duration
	Lat       []time.Duration
	SrvCPU    time.Duration // server process CPU during the phase
	SelfCPU   time.Duration // bench process CPU during the phase
	Commit    commitStatsT
	ToolSec   float64 // server-side post_session_message time (sum)
	ToolN     float64
	Rates     []float64 // ops/s of each round
	Failed    int       // failed calls (posts only)
	FirstFail error
}

func (p *phaseStats) perSec() float64 {
	if p.Elapsed == 0 {
		return 0
	}
	return float64(p.N) / p.Elapsed.Seconds()
}

func (p *phaseStats) cpuPerOp() (srv, self time.Duration) {
	if p.N == 0 {
		return 0, 0
	}
	return p.SrvCPU / time.Duration(p.N), p.SelfCPU / time.Duration(p.N)
}

func (p *phaseStats) toolAvgMS() float64 {
	if p.ToolN == 0 {
		return 0
	}
	return p.ToolSec / p.ToolN * 1000
}

// clientSet is one kind of MCP client (lean or SDK): its sessions, one
// Workflow Session per client, and its 1-client and N-client phases.
type clientSet struct {
	Kind     string // kindLean or kindSDK
	Label    string // e.g. "lean client, 2025-11-25 stateful"
	Clients  []mcpClient
	Sessions []string
	One      phaseStats
	Many     phaseStats
	// Ping says whether this set also runs the ping phases: JSON-RPC ping
	// from 1 and N of its clients, the floor of the MCP stack.
	Ping              bool
	PingOne, PingMany phaseStats
}

// throughput is the outcome of the interleaved rounds: raw commits, then
// 1-client and N-client posts for every client set, then the in-process
// write path.
type throughput struct {
	Raw           phaseStats
	Sets          []*clientSet
	InOne, InMany phaseStats // in-process write path (no HTTP/MCP), 1 and N goroutines
}

// roundRatios returns the per-round ratios a/b.
func roundRatios(a, b []float64) []float64 {
	var out []float64
	for i := range a {
		if i < len(b) && b[i] > 0 {
			out = append(out, a[i]/b[i])
		}
	}
	return out
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// measureThroughput runs rounds of: raw SQLite commits, keyed posts from one
// client and from all clients of every client set, and the in-process write
// path with 1 and N goroutines — each for slice — reversing the order every
// other round, so that the load drift of a shared machine hits the baseline
// and the server alike. Per-round ratios are kept for medians.
func measureThroughput(srv *server, raw *rawDB, ip *inproc, sets []*clientSet, workers, rounds int, slice time.Duration) (*throughput, error) {
	t := &throughput{Sets: sets}
	runRaw := func() error {
		cpu := startCPU(srv.pid())
		r, err := raw.run(slice)
		if err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
		sc, bc := cpu.used()
		t.Raw.add(sc, bc, r.Commits, r.Elapsed, r.Lat, nil, nil)
		return nil
	}
	runPosts := func(p *phaseStats, cl []mcpClient, ss []string, tag string) error {
		m0, err := srv.scrape()
		if err != nil {
			return err
		}
		cpu := startCPU(srv.pid())
		r, err := postLoop(cl, ss, slice, 0, tag, progressKind)
		if err != nil {
			return fmt.Errorf("%s: %w", tag, err)
		}
		sc, bc := cpu.used() // before scraping: the scrape costs CPU too
		m1, err := srv.scrape()
		if err != nil {
			return err
		}
		p.add(sc, bc, r.N, r.Elapsed, r.Lat, m0, m1)
		p.failed(r, tag)
		return nil
	}
	runPings := func(p *phaseStats, cl []mcpClient, tag string) error {
		cpu := startCPU(srv.pid())
		r, err := pingLoop(cl, slice)
		if err != nil {
			return fmt.Errorf("%s: %w", tag, err)
		}
		sc, bc := cpu.used()
		p.add(sc, bc, r.N, r.Elapsed, r.Lat, nil, nil)
		p.failed(r, tag)
		return nil
	}
	runInproc := func(p *phaseStats, workers int, tag string) error {
		if ip == nil {
			return nil
		}
		cpu := startCPU(srv.pid())
		r, cs, err := ip.run(workers, slice, tag)
		if err != nil {
			return fmt.Errorf("in-process posts: %w", err)
		}
		sc, bc := cpu.used()
		p.add(sc, bc, r.N, r.Elapsed, r.Lat, nil, nil)
		p.Commit.writes += cs.writes
		p.Commit.commits += cs.commits
		p.Commit.seconds += cs.seconds
		return nil
	}
	for round := 0; round < rounds; round++ {
		steps := []func() error{runRaw}
		for _, cs := range sets {
			steps = append(steps,
				func() error {
					return runPosts(&cs.One, cs.Clients[:1], cs.Sessions[:1], fmt.Sprintf("one-%s-%d", cs.Kind, round))
				},
				func() error {
					return runPosts(&cs.Many, cs.Clients, cs.Sessions, fmt.Sprintf("many-%s-%d", cs.Kind, round))
				})
			if cs.Ping {
				steps = append(steps,
					func() error { return runPings(&cs.PingOne, cs.Clients[:1], fmt.Sprintf("ping1-%s-%d", cs.Kind, round)) },
					func() error { return runPings(&cs.PingMany, cs.Clients, fmt.Sprintf("pingN-%s-%d", cs.Kind, round)) })
			}
		}
		steps = append(steps,
			func() error { return runInproc(&t.InOne, 1, fmt.Sprintf("in1-%d", round)) },
			func() error { return runInproc(&t.InMany, workers, fmt.Sprintf("inN-%d", round)) })
		if round%2 == 1 { // reverse the order every other round
			for i, j := 0, len(steps)-1; i < j; i, j = i+1, j-1 {
				steps[i], steps[j] = steps[j], steps[i]
			}
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return nil, err
			}
		}
		msg := fmt.Sprintf("  round %d/%d: raw %.0f commits/s", round+1, rounds, t.Raw.Rates[round])
		for _, cs := range sets {
			msg += fmt.Sprintf("; %s: 1 client %.0f, %d clients %.0f posts/s", cs.Kind, cs.One.Rates[round], len(cs.Clients), cs.Many.Rates[round])
			if cs.Ping {
				msg += fmt.Sprintf(" (pings/s %.0f / %.0f)", cs.PingOne.Rates[round], cs.PingMany.Rates[round])
			}
		}
		logf("%s; in-process %.0f / %.0f", msg, last(t.InOne.Rates), last(t.InMany.Rates))
	}
	return t, nil
}

// add folds one slice into the phase: its CPU use (server, bench), ops,
// time, latencies and the metrics scraped before and after (posts only).
func (p *phaseStats) add(srvCPU, selfCPU time.Duration, n int, elapsed time.Duration, lat []time.Duration, m0, m1 map[string]float64) {
	p.N += n
	p.Elapsed += elapsed
	p.Lat = append(p.Lat, lat...)
	p.SrvCPU += srvCPU
	p.SelfCPU += selfCPU
	p.Rates = append(p.Rates, float64(n)/elapsed.Seconds())
	if m0 != nil {
		c := commitStats(m0, m1)
		p.Commit.writes += c.writes
		p.Commit.commits += c.commits
		p.Commit.seconds += c.seconds
		l := `{tool="post_session_message"}`
		p.ToolSec += m1["continuo_tool_duration_seconds_sum"+l] - m0["continuo_tool_duration_seconds_sum"+l]
		p.ToolN += m1["continuo_tool_duration_seconds_count"+l] - m0["continuo_tool_duration_seconds_count"+l]
	}
}

// failed adds a loop's failed calls to the phase, and logs them.
func (p *phaseStats) failed(r postResult, tag string) {
	p.Failed += r.Failed
	if p.FirstFail == nil {
		p.FirstFail = r.FirstFail
	}
	if r.Failed > 0 {
		logf("  %s: %d failed calls, first: %v", tag, r.Failed, r.FirstFail)
	}
}

func last(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return xs[len(xs)-1]
}
