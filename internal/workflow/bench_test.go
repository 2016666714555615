package workflow_test

import (
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/continuo-dev/continuo"
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

// BenchmarkReadHandoff measures the brief of a session with 1,000 messages.
func BenchmarkReadHandoff(b *testing.B) {
	f := setup(b, "", workflow.Git{})
	s := f.start(b)
	kinds := []continuo.Kind{continuo.KindProgress, continuo.KindNote, continuo.KindDecision, continuo.KindTodo}
	for i := 0; i < 1000; i++ {
		f.post(b, s.ID, kinds[i%len(kinds)], "message "+strconv.Itoa(i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.wf.ReadHandoff(f.ctx, f.caller, s.ID, "", false); err != nil {
			b.Fatal(err)
		}
	}
}
