package metrics

import (
	"bufio"
	"compress/gzip"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// scrape returns what GET /metrics answers, with the request headers given
// as name, value pairs, and fails the test unless the answer is a 200.
func scrape(t *testing.T, r *Registry, header ...string) (body string, resp *http.Response) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, req)
	resp = rec.Result()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, rec.Body.String())
	}
	return rec.Body.String(), resp
}

// render is the body of a plain scrape.
func render(t *testing.T, r *Registry) string {
	t.Helper()
	body, _ := scrape(t, r)
	return body
}

// mustPanic runs f and fails the test unless it panics with a message
// containing want.
func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want one containing %q", want)
		}
		var msg string
		switch v := r.(type) {
		case string:
			msg = v
		case error:
			msg = v.Error()
		default:
			t.Fatalf("panic value %#v is neither a string nor an error", r)
		}
		if !strings.Contains(msg, want) {
			t.Fatalf("panic %q does not contain %q", msg, want)
		}
	}()
	f()
}

// The series of docs/OPERATIONS.md, registered as internal/mcpserver,
// internal/web and internal/cli register them, scrape as this exact text:
// families sorted by name, label pairs within a series by label name,
// series by those pairs, unlabelled series from zero, unobserved labelled
// ones absent.
func TestExposition(t *testing.T) {
	r := NewRegistry()
	calls := r.Counter("continuo_tool_calls_total", "Tool calls by tool and outcome (ok or an error code).", "tool", "outcome")
	duration := r.Histogram("continuo_tool_duration_seconds", "Tool call latency.", []float64{0.1, 1}, "tool")
	requests := r.Counter("continuo_http_requests_total", "HTTP requests by route and status code.", "route", "code")
	r.Histogram("continuo_db_commit_seconds", "Duration of database commits (one commit may carry several writes).", []float64{0.01})
	writes := r.Counter("continuo_db_commit_writes_total", "Writes committed (group commit: several per commit).")
	r.Counter("continuo_unused_total", "Labelled and never observed: absent.", "x")
	r.GaugeFunc("continuo_mcp_sessions", "Stateful MCP sessions this process holds.", func() float64 { return 3 })

	calls.Inc("post_session_message", "ok")
	calls.Add(2, "list_sessions", "ok")
	calls.Inc("post_session_message", "invalid_input")
	calls.Inc("post_session_message", "ok")
	duration.Observe(0.05, "post_session_message")
	duration.Observe(0.5, "post_session_message")
	duration.Observe(2, "post_session_message")
	duration.Observe(0.1, "list_sessions") // exactly on a bound: le is inclusive
	requests.Inc("/mcp", "200")
	writes.Add(3)

	want := `# HELP continuo_db_commit_seconds Duration of database commits (one commit may carry several writes).
# TYPE continuo_db_commit_seconds histogram
continuo_db_commit_seconds_bucket{le="0.01"} 0
continuo_db_commit_seconds_bucket{le="+Inf"} 0
continuo_db_commit_seconds_sum 0
continuo_db_commit_seconds_count 0
# HELP continuo_db_commit_writes_total Writes committed (group commit: several per commit).
# TYPE continuo_db_commit_writes_total counter
continuo_db_commit_writes_total 3
# HELP continuo_http_requests_total HTTP requests by route and status code.
# TYPE continuo_http_requests_total counter
continuo_http_requests_total{code="200",route="/mcp"} 1
# HELP continuo_mcp_sessions Stateful MCP sessions this process holds.
# TYPE continuo_mcp_sessions gauge
continuo_mcp_sessions 3
# HELP continuo_tool_calls_total Tool calls by tool and outcome (ok or an error code).
# TYPE continuo_tool_calls_total counter
continuo_tool_calls_total{outcome="invalid_input",tool="post_session_message"} 1
continuo_tool_calls_total{outcome="ok",tool="list_sessions"} 2
continuo_tool_calls_total{outcome="ok",tool="post_session_message"} 2
# HELP continuo_tool_duration_seconds Tool call latency.
# TYPE continuo_tool_duration_seconds histogram
continuo_tool_duration_seconds_bucket{tool="list_sessions",le="0.1"} 1
continuo_tool_duration_seconds_bucket{tool="list_sessions",le="1"} 1
continuo_tool_duration_seconds_bucket{tool="list_sessions",le="+Inf"} 1
continuo_tool_duration_seconds_sum{tool="list_sessions"} 0.1
continuo_tool_duration_seconds_count{tool="list_sessions"} 1
continuo_tool_duration_seconds_bucket{tool="post_session_message",le="0.1"} 1
continuo_tool_duration_seconds_bucket{tool="post_session_message",le="1"} 2
continuo_tool_duration_seconds_bucket{tool="post_session_message",le="+Inf"} 3
continuo_tool_duration_seconds_sum{tool="post_session_message"} 2.55
continuo_tool_duration_seconds_count{tool="post_session_message"} 3
`
	if got := render(t, r); got != want {
		t.Errorf("exposition mismatch\ngot:\n%s\nwant:\n%s", got, want)
	}
}

func TestHandler(t *testing.T) {
	r := NewRegistry()
	r.Counter("h_total", "H.").Inc()
	const want = "# HELP h_total H.\n# TYPE h_total counter\nh_total 1\n"

	// A scraper that names no format gets text format 0.0.4.
	body, resp := scrape(t, r)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4; charset=utf-8") {
		t.Errorf("Content-Type = %q, want text format 0.0.4", ct)
	}
	if body != want {
		t.Errorf("body = %q, want %q", body, want)
	}

	// Prometheus 3 offers OpenMetrics first; we answer in a text format it
	// accepted, with the same samples (every name of ours is a legacy name,
	// so no escaping applies).
	body, resp = scrape(t, r, "Accept", "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,"+
		"application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,"+
		"text/plain;version=0.0.4;q=0.3,*/*;q=0.2")
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain;") {
		t.Errorf("Content-Type = %q, want a text/plain format", ct)
	}
	if body != want {
		t.Errorf("body = %q, want %q", body, want)
	}

	// gzip when the scraper accepts it.
	body, resp = scrape(t, r, "Accept-Encoding", "gzip")
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Content-Encoding = %q, want gzip", resp.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if string(plain) != want {
		t.Errorf("gunzipped body = %q, want %q", plain, want)
	}
}

func TestUnlabelledHistogramStartsAtZero(t *testing.T) {
	r := NewRegistry()
	r.Histogram("lat_seconds", "Latency.", []float64{1, 2, math.Inf(+1)})
	want := `# HELP lat_seconds Latency.
# TYPE lat_seconds histogram
lat_seconds_bucket{le="1"} 0
lat_seconds_bucket{le="2"} 0
lat_seconds_bucket{le="+Inf"} 0
lat_seconds_sum 0
lat_seconds_count 0
`
	if got := render(t, r); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestEscaping(t *testing.T) {
	r := NewRegistry()
	c := r.Counter("esc_total", "Help with \\ backslash,\nnewline and \"quotes\".", "v")
	c.Inc("back\\slash \"quoted\"\nnext line")
	// Invalid UTF-8 is replaced, and every invalid spelling lands in the
	// series of its replacement (no duplicate series, no panic).
	c.Inc("bad utf8 \xff")
	c.Inc("bad utf8 \xfe")
	c.Inc("bad utf8 \uFFFD")
	want := `# HELP esc_total Help with \\ backslash,\nnewline and "quotes".
# TYPE esc_total counter
esc_total{v="back\\slash \"quoted\"\nnext line"} 1
esc_total{v="bad utf8 ` + "\uFFFD" + `"} 3
`
	if got := render(t, r); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestLabelValuesDoNotCollide(t *testing.T) {
	r := NewRegistry()
	c := r.Counter("c_total", "C.", "a", "b")
	c.Inc("ab", "")
	c.Inc("a", "b")
	c.Inc("", "ab")
	got := render(t, r)
	for _, line := range []string{
		`c_total{a="",b="ab"} 1`,
		`c_total{a="a",b="b"} 1`,
		`c_total{a="ab",b=""} 1`,
	} {
		if !strings.Contains(got, line+"\n") {
			t.Errorf("missing %q in:\n%s", line, got)
		}
	}
}

// parseSamples maps each sample line's name-and-labels to its value.
func parseSamples(t *testing.T, text string) map[string]string {
	t.Helper()
	out := make(map[string]string)
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("malformed sample line %q", line)
		}
		out[line[:i]] = line[i+1:]
	}
	return out
}

func TestHistogramBucketsAreCumulative(t *testing.T) {
	r := NewRegistry()
	bounds := []float64{0.001, 0.01, 0.1, 1, 10}
	h := r.Histogram("cum_seconds", "Cumulative.", bounds)
	obs := []float64{0, 0.0005, 0.001, 0.002, 0.05, 0.05, 0.5, 5, 50, math.NaN(), math.Inf(+1), -1}
	for _, v := range obs {
		h.Observe(v)
	}
	got := parseSamples(t, render(t, r))
	prev := 0
	for _, b := range bounds {
		want := 0
		for _, v := range obs {
			if v <= b {
				want++
			}
		}
		key := `cum_seconds_bucket{le="` + strconv.FormatFloat(b, 'g', -1, 64) + `"}`
		n, _ := strconv.Atoi(got[key])
		if got[key] != strconv.Itoa(want) {
			t.Errorf("%s = %s, want %d", key, got[key], want)
		}
		if n < prev {
			t.Errorf("bucket %s (%d) smaller than the one before (%d)", key, n, prev)
		}
		prev = n
	}
	if inf := got[`cum_seconds_bucket{le="+Inf"}`]; inf != strconv.Itoa(len(obs)) {
		t.Errorf("+Inf bucket = %s, want %d (every observation, NaN included)", inf, len(obs))
	}
	if n := got["cum_seconds_count"]; n != strconv.Itoa(len(obs)) {
		t.Errorf("count = %s, want %d", n, len(obs))
	}
	if s := got["cum_seconds_sum"]; s != "NaN" {
		t.Errorf("sum = %s, want NaN (a NaN observation poisons the sum)", s)
	}
}

func TestDefaultBuckets(t *testing.T) {
	r := NewRegistry()
	h := r.Histogram("d_seconds", "D.", nil)
	h.Observe(0.003)
	got := parseSamples(t, render(t, r))
	if len(got) != len(DefBuckets)+1+2 {
		t.Errorf("got %d samples, want %d buckets + +Inf + sum + count", len(got), len(DefBuckets))
	}
	if v := got[`d_seconds_bucket{le="0.0025"}`]; v != "0" {
		t.Errorf("le=0.0025 = %s, want 0", v)
	}
	if v := got[`d_seconds_bucket{le="0.005"}`]; v != "1" {
		t.Errorf("le=0.005 = %s, want 1", v)
	}
	if v := got[`d_seconds_bucket{le="10"}`]; v != "1" {
		t.Errorf("le=10 = %s, want 1", v)
	}
}

func TestHistogramCopiesBuckets(t *testing.T) {
	r := NewRegistry()
	b := []float64{1, 2}
	h := r.Histogram("copy_seconds", "C.", b)
	b[0] = 100
	h.Observe(1.5)
	if v := parseSamples(t, render(t, r))[`copy_seconds_bucket{le="1"}`]; v != "0" {
		t.Errorf("le=1 = %q, want 0: mutating the caller's slice changed the histogram", v)
	}
}

// Concurrent updates lose nothing, and scrapes while they run are
// race-free (this test is meant for -race).
func TestConcurrentUpdatesAreExact(t *testing.T) {
	r := NewRegistry()
	c := r.Counter("conc_total", "C.", "worker")
	h := r.Histogram("conc_seconds", "H.", []float64{0.5}, "worker")
	total := r.Counter("conc_all_total", "A.")
	const goroutines, perG = 16, 1000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			label := strconv.Itoa(g % 4)
			for i := range perG {
				c.Inc(label)
				total.Inc()
				h.Observe(float64(i%2), label) // half 0, half 1
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			_ = render(t, r)
		}
	})
	wg.Wait()

	got := parseSamples(t, render(t, r))
	if v := got["conc_all_total"]; v != strconv.Itoa(goroutines*perG) {
		t.Errorf("conc_all_total = %s, want %d", v, goroutines*perG)
	}
	per := goroutines / 4 * perG
	for w := range 4 {
		l := strconv.Itoa(w)
		if v := got[`conc_total{worker="`+l+`"}`]; v != strconv.Itoa(per) {
			t.Errorf("counter worker=%s = %s, want %d", l, v, per)
		}
		if v := got[`conc_seconds_count{worker="`+l+`"}`]; v != strconv.Itoa(per) {
			t.Errorf("histogram count worker=%s = %s, want %d", l, v, per)
		}
		if v := got[`conc_seconds_bucket{worker="`+l+`",le="0.5"}`]; v != strconv.Itoa(per/2) {
			t.Errorf("histogram le=0.5 worker=%s = %s, want %d", l, v, per/2)
		}
		if v := got[`conc_seconds_sum{worker="`+l+`"}`]; v != strconv.Itoa(per/2) {
			t.Errorf("histogram sum worker=%s = %s, want %d", l, v, per/2)
		}
	}
}

func TestObservationsDoNotAllocate(t *testing.T) {
	r := NewRegistry()
	c := r.Counter("alloc_total", "A.", "a", "b")
	h := r.Histogram("alloc_seconds", "H.", nil, "a")
	c.Inc("x", "y")
	h.Observe(1, "x")
	if n := testing.AllocsPerRun(100, func() { c.Inc("x", "y") }); n != 0 {
		t.Errorf("Counter.Inc on an existing series: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { h.Observe(0.2, "x") }); n != 0 {
		t.Errorf("Histogram.Observe on an existing series: %v allocations, want 0", n)
	}
}

func TestGaugeFuncIsEvaluatedPerScrape(t *testing.T) {
	r := NewRegistry()
	v := 0.0
	r.GaugeFunc("g", "G.", func() float64 { v += 1.5; return v })
	if got := parseSamples(t, render(t, r))["g"]; got != "1.5" {
		t.Errorf("first scrape = %s, want 1.5", got)
	}
	if got := parseSamples(t, render(t, r))["g"]; got != "3" {
		t.Errorf("second scrape = %s, want 3", got)
	}
}

// A gauge function that reads the registry, or registers in it, must not
// deadlock the scrape.
func TestGaugeFuncMayUseRegistry(t *testing.T) {
	r := NewRegistry()
	r.GaugeFunc("self", "S.", func() float64 {
		r.Counter("registered_during_scrape_total", "R.", "x")
		return 1
	})
	if got := parseSamples(t, render(t, r))["self"]; got != "1" {
		t.Errorf("self = %s, want 1", got)
	}
}

func TestSpecialFloats(t *testing.T) {
	r := NewRegistry()
	r.GaugeFunc("pinf", "P.", func() float64 { return math.Inf(+1) })
	r.GaugeFunc("ninf", "N.", func() float64 { return math.Inf(-1) })
	r.GaugeFunc("nan", "N.", func() float64 { return math.NaN() })
	r.GaugeFunc("big", "B.", func() float64 { return 1e21 })
	r.GaugeFunc("small", "S.", func() float64 { return 0.0005 })
	got := parseSamples(t, render(t, r))
	want := map[string]string{"pinf": "+Inf", "ninf": "-Inf", "nan": "NaN", "big": "1e+21", "small": "0.0005"}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %q, want %q", k, got[k], w)
		}
	}
}

func TestMisusePanics(t *testing.T) {
	r := NewRegistry()
	c := r.Counter("m_total", "M.", "a", "b")
	h := r.Histogram("m_seconds", "M.", nil, "a")
	plain := r.Counter("p_total", "P.")
	ph := r.Histogram("p_seconds", "P.", nil)

	mustPanic(t, "2 label names but got 1 label values", func() { c.Inc("x") })
	mustPanic(t, "2 label names but got 3 label values", func() { c.Inc("x", "y", "z") })
	mustPanic(t, "1 label names but got 0 label values", func() { h.Observe(1) })
	mustPanic(t, "0 label names but got 1 label values", func() { plain.Inc("x") })
	mustPanic(t, "0 label names but got 1 label values", func() { ph.Observe(1, "x") })
	mustPanic(t, "counters only go up", func() { c.Add(-1, "x", "y") })
	mustPanic(t, "counters only go up", func() { plain.Add(math.NaN()) })
	mustPanic(t, "duplicate metrics collector registration attempted", func() { r.Counter("m_total", "M.", "a", "b") })
	mustPanic(t, "previously registered descriptor with the same fully-qualified name", func() { r.Counter("m_total", "again") })
	mustPanic(t, "previously registered descriptor with the same fully-qualified name", func() { r.Histogram("m_seconds", "x", nil) })
	mustPanic(t, `invalid metric name "1bad"`, func() { r.Counter("1bad", "x") })
	mustPanic(t, `invalid metric name ""`, func() { r.Counter("", "x") })
	mustPanic(t, `invalid metric name "dotted.name"`, func() { r.Histogram("dotted.name", "x", nil) })
	mustPanic(t, `invalid label name "bad-label"`, func() { r.Counter("ok_total", "x", "bad-label") })
	mustPanic(t, `invalid label name "a:b"`, func() { r.Histogram("ok_seconds", "x", nil, "a:b") })
	mustPanic(t, `"__name" is not a valid label name`, func() { r.Counter("ok_total", "x", "__name") })
	mustPanic(t, "duplicate label names", func() { r.Counter("ok_total", "x", "a", "a") })
	mustPanic(t, `"le" is not allowed as label name in histograms`, func() { r.Histogram("ok_seconds", "x", nil, "le") })
	mustPanic(t, "previously registered descriptor with the same fully-qualified name", func() { r.GaugeFunc("m_total", "x", func() float64 { return 0 }) })
	mustPanic(t, `invalid metric name "bad gauge"`, func() { r.GaugeFunc("bad gauge", "x", func() float64 { return 0 }) })
	mustPanic(t, "nil function", func() { r.GaugeFunc("ok", "x", nil) })
	mustPanic(t, "histogram buckets must be in increasing order", func() { r.Histogram("ok_seconds", "x", []float64{1, 1}) })

	// The failed registrations above did not claim their names.
	r.Counter("ok_total", "x", "a")
	r.Histogram("ok_seconds", "x", nil)
	r.GaugeFunc("ok", "x", func() float64 { return 0 })
}

// A histogram "n" and a counter "n_sum" would interleave samples of one
// name; the scrape refuses with a 500 rather than publish them.
func TestSampleNameCollisionFailsTheScrape(t *testing.T) {
	r := NewRegistry()
	r.Histogram("n", "x", nil)
	r.Counter("n_sum", "x")
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusInternalServerError {
		t.Errorf("status = %d, want 500; body:\n%s", rec.Code, rec.Body.String())
	}
}
