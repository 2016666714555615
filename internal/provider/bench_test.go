package provider_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/continuo-dev/continuo/internal/provider"
	"github.com/continuo-dev/continuo/internal/provider/providertest"
)

// countSink counts text deltas and, when seen is set, notes when each
// arrived.
type countSink struct {
	n    int
	seen []time.Time
}

func (s *countSink) Text(string) {
	if s.seen != nil {
		s.seen = append(s.seen, time.Now())
	}
	s.n++
}
func (s *countSink) Event(string, string) {}

// BenchmarkThroughput: deltas a second through a whole turn (request, SSE
// reading, JSON decoding, the sink), with a server that sends as fast as
// it can; one op is one delta, in turns of 1000.
func BenchmarkThroughput(b *testing.B) {
	const turn = 1000
	for _, k := range kinds {
		b.Run(k.kind, func(b *testing.B) {
			srv := providertest.NewServer(b, providertest.Script{Deltas: providertest.Tokens(turn, "token")})
			p, err := provider.New(provider.Config{Kind: k.kind, BaseURL: srv.BaseURL(), Model: "m"})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for done := 0; done < b.N; done += turn {
				sink := &countSink{}
				if res := p.Run(b.Context(), provider.Request{Prompt: "x"}, sink); res.ErrorKind != "" || sink.n != turn {
					b.Fatalf("result %+v after %d deltas", res, sink.n)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deltas/s")
		})
	}
}

// BenchmarkLatency: the time from a delta leaving the server (the write
// began) to the sink having it, on a stream paced at 1000 deltas a second
// (so that deltas do not queue behind each other); one op is one delta.
func BenchmarkLatency(b *testing.B) {
	const turn = 500
	for _, k := range kinds {
		b.Run(k.kind, func(b *testing.B) {
			var mu sync.Mutex
			var sent []time.Time
			srv := providertest.NewServer(b, providertest.Script{
				Deltas: providertest.Tokens(turn, "token"),
				Delay:  providertest.Rate(1000),
				Sent: func(i int, at time.Time) {
					mu.Lock()
					sent = append(sent, at)
					mu.Unlock()
				},
			})
			p, err := provider.New(provider.Config{Kind: k.kind, BaseURL: srv.BaseURL(), Model: "m"})
			if err != nil {
				b.Fatal(err)
			}
			var lat []time.Duration
			b.ResetTimer()
			for done := 0; done < b.N; done += turn {
				mu.Lock()
				sent = sent[:0]
				mu.Unlock()
				sink := &countSink{seen: make([]time.Time, 0, turn)}
				if res := p.Run(b.Context(), provider.Request{Prompt: "x"}, sink); res.ErrorKind != "" || sink.n != turn {
					b.Fatalf("result %+v after %d deltas", res, sink.n)
				}
				mu.Lock()
				for i, at := range sent {
					lat = append(lat, sink.seen[i].Sub(at))
				}
				mu.Unlock()
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
		})
	}
}
