package workflow_test

import (
	"strconv"
	"sync/atomic"
	"testing"

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

// BenchmarkReadHandoff measures the brief of a session of 100 and of
// 100,000 messages on each engine. Every query of the brief is an index
// range scan that stops after a few rows and every total comes from the
// session row, so the two sizes should cost about the same (CONTRACT.md §4;
// the budget is 1.5×):
//
//	go test -run '^$' -bench ReadHandoff ./internal/workflow/
func BenchmarkReadHandoff(b *testing.B) {
	for _, engine := range stores.Engines {
		b.Run(engine, func(b *testing.B) {
			if engine == "postgres" {
				pgtest.BaseURL(b)
			}
			for _, n := range []int{100, 100_000} {
				b.Run(strconv.Itoa(n), func(b *testing.B) {
					f := setup(b, "", workflow.Git{})
					s := f.start(b)
					storetest.BigSession(b, f.store, s.ID, n)
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						if _, err := f.wf.ReadHandoff(f.ctx, f.caller, s.ID, "", false); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}
