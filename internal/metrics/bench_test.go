package metrics

import "testing"

// tools are the label values the hot path sees: every tool call increments
// continuo_tool_calls_total{tool,outcome} and observes
// continuo_tool_duration_seconds{tool} (internal/mcpserver/server.go), and
// every HTTP request increments continuo_http_requests_total{route,code}
// (internal/web/web.go).
var tools = []string{
	"list_projects", "work_on_project", "close_session", "list_sessions",
	"post_session_message", "resolve_session_message", "list_session_messages", "read_session_handoff",
}

type hotPath struct {
	calls    *Counter
	duration *Histogram
	requests *Counter
}

func newHotPath() *hotPath {
	r := NewRegistry()
	return &hotPath{
		calls:    r.Counter("continuo_tool_calls_total", "Tool calls by tool and outcome (ok or an error code).", "tool", "outcome"),
		duration: r.Histogram("continuo_tool_duration_seconds", "Tool call latency.", DefBuckets, "tool"),
		requests: r.Counter("continuo_http_requests_total", "HTTP requests by route and status code.", "route", "code"),
	}
}

// call is what one MCP tool call over HTTP costs in metrics.
func (h *hotPath) call(i int) {
	t := tools[i%len(tools)]
	h.calls.Inc(t, "ok")
	h.duration.Observe(0.0007*float64(i%16), t)
	h.requests.Inc("/mcp", "200")
}

// BenchmarkToolCall measures the metrics work of one tool call: a labelled
// counter increment, a labelled histogram observation and the HTTP request
// counter. "parallel" runs it on every P at once (contention on one series
// set, as under load).
func BenchmarkToolCall(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		h := newHotPath()
		b.ReportAllocs()
		for i := range b.N {
			h.call(i)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		h := newHotPath()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				h.call(i)
				i++
			}
		})
	})
}
