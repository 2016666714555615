package run_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/provider"
	"github.com/continuo-dev/continuo/internal/provider/providertest"
	"github.com/continuo-dev/continuo/internal/run"
	"github.com/continuo-dev/continuo/internal/store"
)

// agentService is a run service executing agent runs on one chat provider
// served by srv, with n slots.
func agentService(b *testing.B, f *fixture, srv *providertest.Server, n int) *run.Service {
	p, err := provider.New(provider.Config{ID: "bench", Kind: provider.KindChat, BaseURL: srv.BaseURL(), Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	agents := &run.Agents{Providers: map[string]provider.Provider{"bench": p}, Limits: map[string]int{"bench": n}}
	s := run.New(f.store, f.auth, run.Options{Key: []byte("k"), Executors: map[continuo.RunKind]run.Executor{continuo.RunAgent: agents}})
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	return s
}

func startAgent(b *testing.B, f *fixture, s *run.Service) *continuo.Run {
	ctx := b.Context()
	var r *continuo.Run
	if err := f.store.Write(ctx, func(tx store.Tx) (err error) {
		r, err = s.Enqueue(ctx, tx, f.admin, run.Draft{Kind: continuo.RunAgent, ProjectID: f.project.ID, ProviderID: "bench", Dir: f.dir,
			Spec: run.AgentSpec{ProviderID: "bench", Prompt: "go", TimeoutSecs: 300}.JSON()})
		return err
	}); err != nil {
		b.Fatal(err)
	}
	s.Kick()
	return r
}

// BenchmarkAgentTokenLatency measures, for each word a model streams (one
// delta "t<i> " every 10 ms, a newline after every 20th), the time from the
// test server writing it to a long-polling observe_run returning it; the
// baseline, in the same run, is one log append's commit
// (BenchmarkObserveWake's). Reported: p50 and p90 in ms and p50 ÷ commit
// p50. A word shows before its line ends because the log releases a line's
// safe start at its blanks (agentSink).
func BenchmarkAgentTokenLatency(b *testing.B) {
	benchEngines(b, func(b *testing.B) {
		f := newFixture(b)
		const n = 200
		var mu sync.Mutex
		sent := make([]time.Time, n)
		deltas := make([]string, n)
		for i := range deltas {
			deltas[i] = "t" + strconv.Itoa(i) + " " // words, as models stream them
			if i%20 == 19 {
				deltas[i] = "t" + strconv.Itoa(i) + "\n"
			}
		}
		srv := providertest.NewServer(b, providertest.Script{Deltas: deltas, Delay: 10 * time.Millisecond,
			Sent: func(i int, at time.Time) { mu.Lock(); sent[i] = time.Now(); mu.Unlock() }})
		s := agentService(b, f, srv, 1)
		commit := commitP50(b, f, s)
		var lat []time.Duration
		for b.Loop() {
			r := startAgent(b, f, s)
			seen := map[int]bool{}
			tok := s.Token(f.admin, r.ID, 0)
			for len(seen) < n {
				o, err := s.Observe(b.Context(), f.admin, r.ID, tok, 10*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				now := time.Now()
				tok = o.Token
				for _, e := range o.Events {
					if e.Kind != continuo.EventText {
						continue
					}
					for _, word := range strings.Fields(e.Text) {
						i, err := strconv.Atoi(strings.TrimPrefix(word, "t"))
						if err != nil || seen[i] {
							continue
						}
						seen[i] = true
						mu.Lock()
						lat = append(lat, now.Sub(sent[i]))
						mu.Unlock()
					}
				}
				if o.Run.State.Terminal() && !o.HasMore {
					break
				}
			}
			if len(seen) != n {
				b.Fatalf("saw %d of %d lines", len(seen), n)
			}
		}
		slices.Sort(lat)
		p := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))]) / float64(time.Millisecond) }
		b.ReportMetric(p(0.5), "p50-ms")
		b.ReportMetric(p(0.9), "p90-ms")
		b.ReportMetric(commit, "commit-p50-ms")
		b.ReportMetric(p(0.5)/commit, "p50/commit")
	})
}

// commitP50 is the median commit of one log append with its notification,
// the baseline of the latency benchmarks.
func commitP50(b *testing.B, f *fixture, s *run.Service) float64 {
	r := f.queued(s, "baseline")
	var ds []time.Duration
	for i := 0; i < 100; i++ {
		start := time.Now()
		appendEvents(b, f, r, i, 1, 64)
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	return float64(ds[len(ds)/2]) / float64(time.Millisecond)
}

// BenchmarkAgentThroughput runs 32 agent runs at once, each streaming 400
// lines at 200 a second (6,400 a second in all), each watched by a
// long-polling observer, and reports the rate at which the observers saw
// the lines (first to last) as a fraction of the rate the server sent them
// (it paces each stream from its start): rate-ratio is the median over the
// runs, rate-ratio-min the slowest run. Target ≥ 0.9.
func BenchmarkAgentThroughput(b *testing.B) {
	benchEngines(b, func(b *testing.B) {
		f := newFixture(b)
		const runs, lines, rate = 32, 400, 200.0
		deltas := make([]string, lines)
		for i := range deltas {
			deltas[i] = fmt.Sprintf("token %d\n", i)
		}
		srv := providertest.NewServer(b, providertest.Script{Deltas: deltas, Delay: providertest.Rate(rate)})
		s := agentService(b, f, srv, runs)
		ideal := float64(lines-1) / rate
		var ratios []float64
		for b.Loop() {
			var wg sync.WaitGroup
			var mu sync.Mutex
			for range runs {
				r := startAgent(b, f, s)
				wg.Add(1)
				go func() {
					defer wg.Done()
					var first, last time.Time
					seen, tok := 0, s.Token(f.admin, r.ID, 0)
					for seen < lines {
						o, err := s.Observe(b.Context(), f.admin, r.ID, tok, 10*time.Second)
						if err != nil {
							b.Error(err)
							return
						}
						tok = o.Token
						for _, e := range o.Events {
							if e.Kind == continuo.EventText {
								n := strings.Count(e.Text, "\n")
								if seen == 0 && n > 0 {
									first = time.Now()
								}
								seen += n
							}
						}
						last = time.Now()
						if o.Run.State.Terminal() && !o.HasMore {
							break
						}
					}
					if seen != lines {
						b.Errorf("saw %d of %d lines", seen, lines)
						return
					}
					mu.Lock()
					ratios = append(ratios, ideal/last.Sub(first).Seconds())
					mu.Unlock()
				}()
			}
			wg.Wait()
		}
		slices.Sort(ratios)
		b.ReportMetric(ratios[len(ratios)/2], "rate-ratio")
		b.ReportMetric(ratios[0], "rate-ratio-min")
		b.ReportMetric(float64(runs)*rate, "offered-lines/s")
	})
}
