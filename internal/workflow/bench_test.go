package workflow_test

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/pgtest"
	"github.com/continuo-dev/continuo/internal/store/stores"
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
					fill(b, f, s.ID, n)
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

// fill adds n messages to a session directly through the store, in large
// transactions, keeping the session's tallies true: mostly progress, then
// decisions, notes, todos (a third resolved), some guidance, questions and
// answers, every 37th high priority, every 50th progress a handoff note.
func fill(b *testing.B, f *fixture, sid string, n int) {
	b.Helper()
	kinds := []continuo.Kind{continuo.KindProgress, continuo.KindProgress, continuo.KindProgress, continuo.KindDecision,
		continuo.KindNote, continuo.KindTodo, continuo.KindProgress, continuo.KindDecision, continuo.KindQuestion, continuo.KindGuidance}
	const batch = 5000
	for done := 0; done < n; done += batch {
		err := f.store.Write(f.ctx, func(tx store.Tx) error {
			sess, err := tx.SessionGet(f.ctx, sid)
			if err != nil {
				return err
			}
			prev := sess.Revision
			sess.Revision++
			c := &sess.Counts
			for i := done; i < min(done+batch, n); i++ {
				sess.MessageSeq++
				at := sess.UpdatedAt.Add(time.Duration(i) * time.Millisecond)
				m := &continuo.Message{ID: continuo.NewID(continuo.PrefixMessage, at), SessionID: sid, Seq: sess.MessageSeq,
					Kind: kinds[i%len(kinds)], Text: "benchmark message " + strconv.Itoa(i) + " " + strings.Repeat("x", i%300),
					Status: continuo.StatusOpen, Priority: continuo.PriorityNormal, CreatedAt: at}
				if i%37 == 0 {
					m.Priority = continuo.PriorityHigh
				}
				switch m.Kind {
				case continuo.KindProgress:
					c.Progress++
					if i%50 == 0 {
						m.Tags = []string{continuo.HandoffTag}
					}
				case continuo.KindDecision:
					c.Decisions++
				case continuo.KindTodo:
					if i%3 == 0 {
						m.Status, m.Resolution, m.ResolvedAt = continuo.StatusResolved, "done", &at
					} else {
						c.OpenTodos++
					}
				case continuo.KindQuestion:
					m.Status, m.Resolution, m.ResolvedAt = continuo.StatusResolved, "yes", &at
					c.ResolvedQuestions++
				case continuo.KindGuidance:
					c.OpenGuidance++
				}
				c.Messages++
				if err := tx.MessageCreate(f.ctx, m); err != nil {
					return err
				}
			}
			return tx.SessionUpdate(f.ctx, sess, prev)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
