package metrics

import (
	"bufio"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// render returns the registry's exposition as a string.
func render(t *testing.T, r *Registry) string {
	t.Helper()
	var sb strings.Builder
	n, err := r.WriteTo(&sb)
	if err != nil {
		t.Fatalf("WriteTo: %v", err)
	}
	if int(n) != sb.Len() {
		t.Fatalf("WriteTo reported %d bytes, wrote %d", n, sb.Len())
	}
	return sb.String()
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
		msg, ok := r.(string)
		if !ok {
			t.Fatalf("panic value %#v is not a string", r)
		}
		if !strings.Contains(msg, want) {
			t.Fatalf("panic %q does not contain %q", msg, want)
		}
	}()
	f()
}

func TestWriteToExactOutput(t *testing.T) {
	r := NewRegistry()
	// Registered out of order on purpose: output must be sorted by name.
	h := r.Histogram("continuo_tool_duration_seconds", "Tool call latency.", []float64{0.1, 1}, "tool")
	c := r.Counter("continuo_requests_total", "Requests handled.", "method", "code")
	r.GaugeFunc("continuo_sessions", "Open sessions.", func() float64 { return 3 })
	r.Counter("continuo_errors_total", "Errors, no labels.")

	c.Inc("POST", "200")
	c.Add(2, "GET", "200")
	c.Inc("GET", "500")
	c.Inc("GET", "200")
	h.Observe(0.05, "b")
	h.Observe(0.5, "b")
	h.Observe(2, "b")
	h.Observe(0.1, "a") // exactly on a bound: le is inclusive

	want := `# HELP continuo_errors_total Errors, no labels.
# TYPE continuo_errors_total counter
continuo_errors_total 0
# HELP continuo_requests_total Requests handled.
# TYPE continuo_requests_total counter
continuo_requests_total{method="GET",code="200"} 3
continuo_requests_total{method="GET",code="500"} 1
continuo_requests_total{method="POST",code="200"} 1
# HELP continuo_sessions Open sessions.
# TYPE continuo_sessions gauge
continuo_sessions 3
# HELP continuo_tool_duration_seconds Tool call latency.
# TYPE continuo_tool_duration_seconds histogram
continuo_tool_duration_seconds_bucket{tool="a",le="0.1"} 1
continuo_tool_duration_seconds_bucket{tool="a",le="1"} 1
continuo_tool_duration_seconds_bucket{tool="a",le="+Inf"} 1
continuo_tool_duration_seconds_sum{tool="a"} 0.1
continuo_tool_duration_seconds_count{tool="a"} 1
continuo_tool_duration_seconds_bucket{tool="b",le="0.1"} 1
continuo_tool_duration_seconds_bucket{tool="b",le="1"} 2
continuo_tool_duration_seconds_bucket{tool="b",le="+Inf"} 3
continuo_tool_duration_seconds_sum{tool="b"} 2.55
continuo_tool_duration_seconds_count{tool="b"} 3
`
	if got := render(t, r); got != want {
		t.Errorf("exposition mismatch\ngot:\n%s\nwant:\n%s", got, want)
	}
}

func TestUnobservedLabelledMetricsAreOmitted(t *testing.T) {
	r := NewRegistry()
	r.Counter("a_total", "A.", "x")
	r.Histogram("b_seconds", "B.", nil, "y")
	if got := render(t, r); got != "" {
		t.Errorf("got %q, want empty exposition", got)
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
	c.Inc("bad utf8 \xff")
	want := `# HELP esc_total Help with \\ backslash,\nnewline and "quotes".
# TYPE esc_total counter
esc_total{v="back\\slash \"quoted\"\nnext line"} 1
esc_total{v="bad utf8 ` + "\uFFFD" + `"} 1
`
	if got := render(t, r); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestInvalidUTF8SharesSeriesWithItsReplacement(t *testing.T) {
	r := NewRegistry()
	c := r.Counter("u_total", "U.", "a", "b")
	// Both invalid spellings and the replacement character itself must
	// land in one series, or the output would contain duplicate series.
	c.Inc("x\xff", "y")
	c.Inc("x\xfe", "y")
	c.Inc("x\uFFFD", "y")
	want := "# HELP u_total U.\n# TYPE u_total counter\nu_total{a=\"x\uFFFD\",b=\"y\"} 3\n"
	if got := render(t, r); got != want {
		t.Errorf("got %q, want %q", got, want)
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

func TestHistogramBucketsAreCumulative(t *testing.T) {
	r := NewRegistry()
	bounds := []float64{0.001, 0.01, 0.1, 1, 10}
	h := r.Histogram("cum_seconds", "Cumulative.", bounds)
	obs := []float64{0, 0.0005, 0.001, 0.002, 0.05, 0.05, 0.5, 5, 50, math.NaN(), math.Inf(+1), -1}
	for _, v := range obs {
		h.Observe(v)
	}
	got := parseSamples(t, render(t, r))
	for i, b := range bounds {
		want := 0
		for _, v := range obs {
			if v <= b {
				want++
			}
		}
		key := `cum_seconds_bucket{le="` + strconv.FormatFloat(b, 'g', -1, 64) + `"}`
		if got[key] != strconv.Itoa(want) {
			t.Errorf("%s = %s, want %d", key, got[key], want)
		}
		if i > 0 {
			prev := `cum_seconds_bucket{le="` + strconv.FormatFloat(bounds[i-1], 'g', -1, 64) + `"}`
			a, _ := strconv.Atoi(got[prev])
			z, _ := strconv.Atoi(got[key])
			if z < a {
				t.Errorf("bucket %s (%d) smaller than %s (%d)", key, z, prev, a)
			}
		}
	}
	if inf := got[`cum_seconds_bucket{le="+Inf"}`]; inf != strconv.Itoa(len(obs)) {
		t.Errorf("+Inf bucket = %s, want %d (every observation, NaN included)", inf, len(obs))
	}
	if n := got["cum_seconds_count"]; n != strconv.Itoa(len(obs)) {
		t.Errorf("count = %s, want %d", n, len(obs))
	}
	// A NaN observation poisons the sum, as in client_golang.
	if s := got["cum_seconds_sum"]; s != "NaN" {
		t.Errorf("sum = %s, want NaN", s)
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

func TestDefaultBuckets(t *testing.T) {
	r := NewRegistry()
	h := r.Histogram("d_seconds", "D.", nil)
	h.Observe(0.003)
	got := parseSamples(t, render(t, r))
	if len(got) != len(DefBuckets)+1+2 {
		t.Errorf("got %d samples, want %d buckets + sum + count", len(got), len(DefBuckets)+1)
	}
	if v := got[`d_seconds_bucket{le="0.0025"}`]; v != "0" {
		t.Errorf("le=0.0025 = %s, want 0", v)
	}
	if v := got[`d_seconds_bucket{le="0.005"}`]; v != "1" {
		t.Errorf("le=0.005 = %s, want 1", v)
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

func TestConcurrentUpdatesAreExact(t *testing.T) {
	r := NewRegistry()
	c := r.Counter("conc_total", "C.", "worker")
	h := r.Histogram("conc_seconds", "H.", []float64{0.5}, "worker")
	const goroutines, perG = 16, 1000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			label := strconv.Itoa(g % 4)
			for i := range perG {
				c.Inc(label)
				c.Inc("all")
				h.Observe(float64(i%2), label) // half 0, half 1
			}
		}()
	}
	// Scrape while writers are running: must be race-free.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 20 {
			_, _ = r.WriteTo(&strings.Builder{})
		}
	}()
	wg.Wait()

	got := parseSamples(t, render(t, r))
	if v := got[`conc_total{worker="all"}`]; v != strconv.Itoa(goroutines*perG) {
		t.Errorf(`worker="all" = %s, want %d`, v, goroutines*perG)
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

func TestHandler(t *testing.T) {
	r := NewRegistry()
	r.Counter("h_total", "H.").Inc()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()

	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	var body strings.Builder
	if _, err := bufio.NewReader(resp.Body).WriteTo(&body); err != nil {
		t.Fatal(err)
	}
	if want := "# HELP h_total H.\n# TYPE h_total counter\nh_total 1\n"; body.String() != want {
		t.Errorf("body = %q, want %q", body.String(), want)
	}

	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/metrics", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST status = %d, want 405", rec.Code)
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

func TestGaugeFuncMayUseRegistry(t *testing.T) {
	// A gauge function that scrapes or registers must not deadlock.
	r := NewRegistry()
	r.GaugeFunc("self", "S.", func() float64 {
		r.Counter("registered_during_scrape_total", "R.", "x")
		return 1
	})
	_ = render(t, r)
}

func TestSpecialFloats(t *testing.T) {
	r := NewRegistry()
	r.GaugeFunc("pinf", "P.", func() float64 { return math.Inf(+1) })
	r.GaugeFunc("ninf", "N.", func() float64 { return math.Inf(-1) })
	r.GaugeFunc("nan", "N.", func() float64 { return math.NaN() })
	r.GaugeFunc("big", "B.", func() float64 { return 1e21 })
	got := parseSamples(t, render(t, r))
	want := map[string]string{"pinf": "+Inf", "ninf": "-Inf", "nan": "NaN", "big": "1e+21"}
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

	mustPanic(t, `has label names ["a" "b"] but got 1 label values`, func() { c.Inc("x") })
	mustPanic(t, "but got 3 label values", func() { c.Inc("x", "y", "z") })
	mustPanic(t, "but got 0 label values", func() { h.Observe(1) })
	mustPanic(t, "counters only go up", func() { c.Add(-1, "x", "y") })
	mustPanic(t, "counters only go up", func() { c.Add(math.NaN(), "x", "y") })
	mustPanic(t, `"m_total" registered twice`, func() { r.Counter("m_total", "again") })
	mustPanic(t, `"m_total" registered twice`, func() { r.GaugeFunc("m_total", "again", func() float64 { return 0 }) })
	mustPanic(t, `conflicts with the "m_seconds_count" sample of metric "m_seconds"`, func() { r.Counter("m_seconds_count", "x") })
	r.Counter("n_sum", "x")
	mustPanic(t, `metric "n" conflicts with the "n_sum" sample of metric "n_sum"`, func() { r.Histogram("n", "x", nil) })
	mustPanic(t, `"m_seconds" registered twice`, func() { r.Histogram("m_seconds", "x", nil) })
	mustPanic(t, "invalid metric name", func() { r.Counter("1bad", "x") })
	mustPanic(t, "invalid metric name", func() { r.Counter("", "x") })
	mustPanic(t, "invalid label name", func() { r.Counter("ok_total", "x", "bad-label") })
	mustPanic(t, "reserved (starts with __)", func() { r.Counter("ok_total", "x", "__name") })
	mustPanic(t, "duplicate label name", func() { r.Counter("ok_total", "x", "a", "a") })
	mustPanic(t, `"le" is reserved`, func() { r.Histogram("ok_seconds", "x", nil, "le") })
	mustPanic(t, "strictly increasing", func() { r.Histogram("ok_seconds", "x", []float64{1, 1}) })
	mustPanic(t, "invalid bucket bound", func() { r.Histogram("ok_seconds", "x", []float64{math.NaN()}) })
	mustPanic(t, "nil function", func() { r.GaugeFunc("ok", "x", nil) })

	// The failed registrations above must not have claimed their names.
	r.Counter("ok_total", "x", "a")
	r.Histogram("ok_seconds", "x", nil)
	r.GaugeFunc("ok", "x", func() float64 { return 0 })
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("boom") }

func TestWriteToReportsWriterErrors(t *testing.T) {
	r := NewRegistry()
	r.Counter("e_total", "E.").Inc()
	if _, err := r.WriteTo(failingWriter{}); err == nil || err.Error() != "boom" {
		t.Errorf("err = %v, want boom", err)
	}
}
