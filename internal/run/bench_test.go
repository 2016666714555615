package run_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/run"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/pgtest"
)

// benchEngines runs fn on SQLite, and on PostgreSQL when it is configured.
func benchEngines(b *testing.B, fn func(b *testing.B)) {
	for _, e := range []string{"sqlite", "postgres"} {
		b.Run(e, func(b *testing.B) {
			if e == "postgres" {
				pgtest.BaseURL(b)
			}
			fn(b)
		})
	}
}

// appendEvents appends n events of size bytes to a run, directly through
// the store (as the log does), counting them as produced.
func appendEvents(b *testing.B, f *fixture, r *continuo.Run, from, n, size int) {
	ctx := b.Context()
	text := strings.Repeat("x", size-1) + "\n"
	for i := 0; i < n; i++ {
		seq := int64(from + i + 1)
		a := store.RunAppend{RunID: r.ID, PrevSeq: seq - 1, Events: []continuo.RunEvent{{RunID: r.ID, Seq: seq, Kind: continuo.EventOutput, Text: text, At: time.Now()}},
			OutputBytes: seq * int64(size), KeptBytes: seq * int64(size), HeadSeq: seq}
		err := f.store.Write(ctx, func(tx store.Tx) error {
			if err := tx.RunAppend(ctx, a); err != nil {
				return err
			}
			return tx.Notify(ctx, run.EventChannel(r.ID), "")
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkObserveAfterToken reads the newest event of a run after a
// token, on a run whose log holds 10 MB and, as the baseline in the same
// run, on one whose log holds 16 KiB: the read is a key range from the
// token on, so the two cost the same.
func BenchmarkObserveAfterToken(b *testing.B) {
	benchEngines(b, func(b *testing.B) {
		f := newFixture(b)
		s := run.New(f.store, f.auth, run.Options{Key: []byte("k")})
		for _, tc := range []struct {
			name   string
			events int
		}{{"log=16KiB", 1}, {"log=10MB", 640}} {
			r := f.queued(s, tc.name)
			appendEvents(b, f, r, 0, tc.events, continuo.MaxRunEvent)
			appendEvents(b, f, r, tc.events, 1, 100) // the new output
			token := s.Token(f.admin, r.ID, int64(tc.events))
			b.Run(tc.name, func(b *testing.B) {
				for b.Loop() {
					o, err := s.Observe(b.Context(), f.admin, r.ID, token, 0)
					if err != nil || len(o.Events) != 1 || len(o.Events[0].Text) != 100 {
						b.Fatalf("observe: %v %+v", err, o)
					}
				}
			})
		}
	})
}

// BenchmarkObserveWake measures how long a waiting observe_run takes to
// return once output is appended (the append committed and notified), and
// the append's own commit as the baseline measured in the same run.
// Reported: wake-p50-ms, wake-p90-ms, commit-p50-ms and their ratio.
func BenchmarkObserveWake(b *testing.B) {
	benchEngines(b, func(b *testing.B) {
		f := newFixture(b)
		s := run.New(f.store, f.auth, run.Options{Key: []byte("k")})
		r := f.queued(s, "wake")
		ctx := b.Context()
		var wakes, commits []time.Duration
		seq := 0
		for b.Loop() {
			token := s.Token(f.admin, r.ID, int64(seq))
			got := make(chan time.Time, 1)
			ready := make(chan struct{})
			go func() {
				close(ready)
				o, err := s.Observe(ctx, f.admin, r.ID, token, 10*time.Second)
				if err != nil || len(o.Events) == 0 {
					b.Errorf("observe: %v", err)
				}
				got <- time.Now()
			}()
			<-ready
			time.Sleep(2 * time.Millisecond) // let it subscribe and find nothing new
			start := time.Now()
			appendEvents(b, f, r, seq, 1, 64)
			committed := time.Now()
			woke := <-got
			seq++
			wakes = append(wakes, woke.Sub(start))
			commits = append(commits, committed.Sub(start))
		}
		p := func(ds []time.Duration, q float64) float64 {
			s := slices.Clone(ds)
			slices.Sort(s)
			return float64(s[int(q*float64(len(s)-1))]) / float64(time.Millisecond)
		}
		b.ReportMetric(p(wakes, 0.5), "wake-p50-ms")
		b.ReportMetric(p(wakes, 0.9), "wake-p90-ms")
		b.ReportMetric(p(commits, 0.5), "commit-p50-ms")
		b.ReportMetric(p(wakes, 0.5)/p(commits, 0.5), "wake/commit")
	})
}

// queued creates a queued run for a benchmark (nothing executes it).
func (f *fixture) queued(s *run.Service, check string) *continuo.Run {
	ctx := f.t.Context()
	var r *continuo.Run
	if err := f.store.Write(ctx, func(tx store.Tx) (err error) {
		r, err = s.Enqueue(ctx, tx, f.admin, run.Draft{Kind: continuo.RunValidation, ProjectID: f.project.ID, Check: check, Dir: f.dir,
			Spec: fmt.Sprintf(`{"command":["true"],"n":%q}`, check)})
		return err
	}); err != nil {
		f.t.Fatal(err)
	}
	return r
}
