package workflow_test

import (
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store/pgtest"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/store/storetest"
	"github.com/continuo-dev/continuo/internal/workflow"
)

// BenchmarkPostMessage measures the keyed write path without HTTP: one
// transaction per post (session, grant, replay lookup, insert, counters).
func BenchmarkPostMessage(b *testing.B) {
	f := setup(b, "", workflow.Git{})
	s := f.start(b)
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k := strconv.FormatInt(n.Add(1), 10)
			if _, _, err := f.wf.PostMessage(f.ctx, f.caller, workflow.Post{SessionID: s.ID, Kind: continuo.KindProgress,
				Text: "benchmark progress note " + k, DeliveryKey: "k" + k}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkReadHandoff measures the brief and the working set of sessions
// of 100, 10,000 and 100,000 messages with 50 and 500 decisions in force
// (storetest.HistorySession: the rest is history — progress, superseded
// decisions, resolved todos and risks), on each engine. Every read of
// either is an index range scan of what is in force, or a lookup by id,
// and every total comes from the session row, so the cost follows what is
// in force and not the length of the history (CONTRACT.md §4; the bar is
// 1.5× from 100 to 100,000 messages). Each reports its p50 and p95
// besides the mean; the working set is its first page:
//
//	go test -run '^$' -bench ReadHandoff ./internal/workflow/
func BenchmarkReadHandoff(b *testing.B) {
	for _, engine := range stores.Engines {
		b.Run(engine, func(b *testing.B) {
			if engine == "postgres" {
				pgtest.BaseURL(b)
			}
			for _, decisions := range []int{50, 500} {
				for _, n := range []int{100, 10_000, 100_000} {
					if n < 2*decisions {
						continue
					}
					b.Run(fmt.Sprintf("decisions=%d/messages=%d", decisions, n), func(b *testing.B) {
						f := setup(b, "", workflow.Git{})
						s := f.start(b)
						storetest.HistorySession(b, f.store, s.ID, n, decisions)
						b.Run("brief", func(b *testing.B) {
							percentiles(b, func() error {
								_, err := f.wf.ReadHandoff(f.ctx, f.caller, s.ID, "", false)
								return err
							})
						})
						b.Run("working_set", func(b *testing.B) {
							percentiles(b, func() error {
								_, err := f.wf.ReadWorkingSet(f.ctx, f.caller, s.ID, "")
								return err
							})
						})
					})
				}
			}
		})
	}
}

// percentiles runs read b.N times and reports the p50 and p95 of its
// latency, in milliseconds.
func percentiles(b *testing.B, read func() error) {
	b.ReportAllocs()
	took := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		if err := read(); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	at := func(q float64) float64 { return float64(took[int(q*float64(len(took)-1))]) / 1e6 }
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.95), "p95-ms")
}
