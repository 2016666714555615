package swarm_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/continuo-dev/continuo/internal/store/pgtest"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/swarm"
)

// BenchmarkWake: 32 workers wait in next; each iteration dispatches one
// task and takes the time from the dispatch's commit (its return) to the
// waiting worker's next returning it. Reported: p50 and p99 of that, and
// of the dispatch itself (a committed write: the baseline of the same run).
func BenchmarkWake(b *testing.B) {
	eachEngine(b, func(b *testing.B, f *fixture) {
		ctx := b.Context()
		inv := f.create(64, nil)
		const waiters = 32
		ws := make([]*w, waiters)
		for i := range ws {
			ws[i] = f.join(inv, fmt.Sprint("w", i))
		}
		got := make(chan time.Time, waiters)
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for _, x := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					d, err := f.svc.Next(ctx, x.c, x.car, x.ref, 2*time.Second, nil)
					if err != nil {
						return
					}
					if d.Task != nil {
						got <- time.Now()
						if _, err := f.svc.Submit(ctx, x.c, x.car, x.ref, d.Task.ID, "r"); err != nil {
							b.Error(err)
							return
						}
					}
				}
			}()
		}
		time.Sleep(200 * time.Millisecond) // every worker waits
		wakes := make([]time.Duration, 0, b.N)
		commits := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			f.dispatch(inv.Swarm.ID, fmt.Sprint("k", i), "")
			t1 := time.Now()
			at := <-got
			wakes = append(wakes, at.Sub(t1))
			commits = append(commits, t1.Sub(t0))
			time.Sleep(2 * time.Millisecond) // the winner submits and waits again
		}
		b.StopTimer()
		close(stop)
		wg.Wait()
		p := quantileMS
		b.ReportMetric(p(wakes, 0.5), "wake-p50-ms")
		b.ReportMetric(p(wakes, 0.99), "wake-p99-ms")
		b.ReportMetric(p(commits, 0.5), "dispatch-p50-ms")
	})
}

// BenchmarkRollover: a worker is continued again and again; each
// iteration times the new carrier's redeem and its first next (the
// rollover as the new carrier sees it), and, as the baseline of the same
// run, one idle next of the worker on its own.
func BenchmarkRollover(b *testing.B) {
	eachEngine(b, func(b *testing.B, f *fixture) {
		ctx := b.Context()
		inv := f.create(4, nil)
		x := f.checkpointed(inv, "x")
		rolls := make([]time.Duration, 0, b.N)
		nexts := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			p := f.prepare(inv, x)
			car := f.carrier()
			b.StartTimer()
			t0 := time.Now()
			bd, err := f.svc.Redeem(ctx, x.c, car, inv.Swarm.ID, p.Ticket)
			if err != nil {
				b.Fatal(err)
			}
			x = &w{c: x.c, car: car, ref: swarm.WorkerRef{WorkerID: bd.Worker.ID, Epoch: bd.Worker.Epoch}}
			if _, err := f.svc.Next(ctx, x.c, x.car, x.ref, 0, nil); err != nil {
				b.Fatal(err)
			}
			rolls = append(rolls, time.Since(t0))
			t1 := time.Now()
			if _, err := f.svc.Next(ctx, x.c, x.car, x.ref, 0, nil); err != nil {
				b.Fatal(err)
			}
			nexts = append(nexts, time.Since(t1))
		}
		b.StopTimer()
		p := quantileMS
		b.ReportMetric(p(rolls, 0.5), "rollover-p50-ms")
		b.ReportMetric(p(rolls, 0.99), "rollover-p99-ms")
		b.ReportMetric(p(nexts, 0.5), "next-p50-ms")
	})
}

// eachEngine runs a benchmark once per engine, with a fresh fixture.
func eachEngine(b *testing.B, fn func(b *testing.B, f *fixture), opts ...func(*swarm.Options)) {
	for _, engine := range stores.Engines {
		b.Run(engine, func(b *testing.B) {
			if engine == "postgres" {
				pgtest.BaseURL(b)
			}
			fn(b, newFixture(b, opts...))
		})
	}
}

// quantileMS is the q-quantile of ds, in milliseconds.
func quantileMS(ds []time.Duration, q float64) float64 {
	slices.Sort(ds)
	return float64(ds[int(q*float64(len(ds)-1))].Microseconds()) / 1000
}

// BenchmarkPlannerCost: what Auto Compact adds to a worker's next. Each
// iteration times a next that claims a task (the baseline of the same
// run), and, in a transaction of its own, the part of such a next that is
// Auto Compact's — counting the prompt in the ledger and checking the
// pressure — and an idle planner pass (which runs in the background, not
// per call; with a runtime, so that it looks for compacting workers).
// Reported: the p50s and the share of a next the per-call part is.
func BenchmarkPlannerCost(b *testing.B) {
	withRuntime := func(o *swarm.Options) { o.Runtime, o.Minter = &fakeRuntime{}, &fakeMinter{} }
	eachEngine(b, func(b *testing.B, f *fixture) {
		ctx := b.Context()
		inv := f.create(4, nil)
		x := f.checkpointed(inv, "x")
		nexts := make([]time.Duration, 0, b.N)
		costs := make([]time.Duration, 0, b.N)
		passes := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			f.dispatch(inv.Swarm.ID, fmt.Sprint("k", i), x.ref.WorkerID)
			b.StartTimer()
			t0 := time.Now()
			d := f.next(x)
			nexts = append(nexts, time.Since(t0))
			b.StopTimer()
			if d.Task == nil {
				b.Fatalf("next %d: %+v", i, d)
			}
			if _, err := f.svc.Submit(ctx, x.c, x.car, x.ref, d.Task.ID, "r"); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			c, err := swarm.PressureCost(ctx, f.svc, x.ref.WorkerID, fmt.Sprint("cost", i), d.Task.Prompt)
			if err != nil {
				b.Fatal(err)
			}
			costs = append(costs, c)
			t1 := time.Now()
			if err := swarm.PlanPass(ctx, f.svc); err != nil {
				b.Fatal(err)
			}
			passes = append(passes, time.Since(t1))
		}
		b.StopTimer()
		p := quantileMS
		b.ReportMetric(p(nexts, 0.5), "next-p50-ms")
		b.ReportMetric(p(costs, 0.5), "pressure-p50-ms")
		b.ReportMetric(100*p(costs, 0.5)/p(nexts, 0.5), "share-%")
		b.ReportMetric(p(passes, 0.5), "idle-pass-p50-ms")
	}, withRuntime)
}
