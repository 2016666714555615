// Package metrics is a deliberately small Prometheus registry that renders
// the text exposition format 0.0.4.
//
// It exists so that continuo does not depend on client_golang (and its
// transitive dependency tree) for the handful of counters, histograms and
// gauges it exports. Only what continuo needs is implemented: counters and
// histograms with fixed label names, and gauges computed at scrape time.
//
// Misuse that can only come from a programming error — an invalid or
// duplicate metric name, or the wrong number of label values — panics, the
// same way client_golang's MustRegister and WithLabelValues do, because such
// bugs should surface in the first test run rather than as a silently
// missing series in production.
package metrics

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// DefBuckets are general-purpose latency buckets, in seconds, ranging from
// half a millisecond to ten seconds. They are the buckets used by Histogram
// when it is given none.
//
// DefBuckets must be treated as read-only. Histogram copies its buckets at
// registration, so even a modification would not affect histograms that
// already exist.
var DefBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// contentType is the media type of the text exposition format 0.0.4.
const contentType = "text/plain; version=0.0.4; charset=utf-8"

// keySep separates label values in a series key. The byte 0xff never occurs
// in valid UTF-8 and label values are coerced to valid UTF-8 before they are
// keyed, so joining with it is injective.
const keySep = '\xff'

// keyBufSize is the size of the stack buffer a series key is built in. Keys
// that fit need no heap allocation on the observation hot path; longer ones
// still work, they merely allocate.
const keyBufSize = 256

// Registry holds a set of uniquely named metrics and renders them in the
// Prometheus text format. The zero value is not usable; call NewRegistry.
// A Registry is safe for concurrent use.
type Registry struct {
	mu      sync.Mutex
	metrics map[string]metric
	// taken maps every sample name a registered metric emits (for a
	// histogram "x": x, x_bucket, x_sum and x_count) to the metric that
	// owns it. Checking against it rather than against metric names alone
	// prevents, say, a counter "x_count" from silently interleaving its
	// samples with those of a histogram "x".
	taken map[string]string
}

// metric is implemented by every kind of metric a Registry holds.
type metric interface {
	// appendText appends the metric's complete text-format family
	// (HELP, TYPE and samples) to b. It must not append anything when the
	// metric has no samples.
	appendText(b []byte) []byte
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	return &Registry{
		metrics: make(map[string]metric),
		taken:   make(map[string]string),
	}
}

// register adds m under name, claiming every sample name in samples. It
// panics if any of them is already claimed.
func (r *Registry) register(name string, m metric, samples ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range samples {
		if owner, ok := r.taken[s]; ok {
			if owner == name {
				panic(fmt.Sprintf("metrics: metric %q registered twice", name))
			}
			panic(fmt.Sprintf("metrics: metric %q conflicts with the %q sample of metric %q", name, s, owner))
		}
	}
	for _, s := range samples {
		r.taken[s] = name
	}
	r.metrics[name] = m
}

// Counter registers and returns a counter called name with the given help
// text and label names. It panics if name or a label name is invalid, or if
// name is already in use in r.
//
// A counter without labels is exposed as 0 from the moment it is registered,
// so that dashboards can tell "nothing happened" from "not running".
func (r *Registry) Counter(name, help string, labels ...string) *Counter {
	c := &Counter{
		desc:   newDesc(name, help, "counter", labels),
		series: make(map[string]*counterSeries),
	}
	if len(labels) == 0 {
		c.series[""] = &counterSeries{}
	}
	r.register(name, c, name)
	return c
}

// Histogram registers and returns a histogram called name with the given
// help text, bucket upper bounds and label names. Buckets are upper bounds
// in ascending order; the +Inf bucket is implicit (a trailing +Inf is
// accepted and ignored). Nil or empty buckets mean DefBuckets.
//
// It panics if name or a label name is invalid, if a label is called "le"
// (reserved for bucket bounds), if buckets are not strictly increasing, or if
// name or one of its _bucket, _sum and _count samples is already in use in r.
func (r *Registry) Histogram(name, help string, buckets []float64, labels ...string) *Histogram {
	if len(buckets) == 0 {
		buckets = DefBuckets
	}
	// Copy so the caller (or anyone holding DefBuckets) cannot change the
	// bounds under us.
	bounds := slices.Clone(buckets)
	if math.IsInf(bounds[len(bounds)-1], +1) {
		bounds = bounds[:len(bounds)-1]
	}
	for i, b := range bounds {
		if math.IsNaN(b) || math.IsInf(b, 0) {
			panic(fmt.Sprintf("metrics: histogram %q: invalid bucket bound %v", name, b))
		}
		if i > 0 && b <= bounds[i-1] {
			panic(fmt.Sprintf("metrics: histogram %q: buckets must be strictly increasing, got %v after %v", name, b, bounds[i-1]))
		}
	}
	// Format the bounds once; they are the same for every series and every
	// scrape.
	les := make([]string, len(bounds)+1)
	for i, b := range bounds {
		les[i] = formatFloat(b)
	}
	les[len(bounds)] = "+Inf"

	h := &Histogram{
		desc:   newDesc(name, help, "histogram", labels),
		bounds: bounds,
		les:    les,
		series: make(map[string]*histogramSeries),
	}
	if len(labels) == 0 {
		h.series[""] = h.newSeries(nil)
	}
	r.register(name, h, name, name+"_bucket", name+"_sum", name+"_count")
	return h
}

// GaugeFunc registers a gauge called name whose value is obtained by calling
// fn at every scrape. fn is called without any registry lock held, so it may
// itself take locks or read other metrics; it must be safe to call
// concurrently with itself if the registry is scraped concurrently.
// GaugeFunc panics if name is invalid or already in use in r, or if fn is
// nil.
func (r *Registry) GaugeFunc(name, help string, fn func() float64) {
	if fn == nil {
		panic(fmt.Sprintf("metrics: gauge %q: nil function", name))
	}
	g := &gaugeFunc{desc: newDesc(name, help, "gauge", nil), fn: fn}
	r.register(name, g, name)
}

// WriteTo writes every metric in r to w in the Prometheus text exposition
// format 0.0.4: families sorted by name, series within a family sorted by
// their label values. Metrics with labels that have not yet been observed are
// omitted. It implements io.WriterTo.
//
// The whole exposition is rendered before anything is written, so a slow
// writer never holds up observations.
func (r *Registry) WriteTo(w io.Writer) (int64, error) {
	r.mu.Lock()
	names := make([]string, 0, len(r.metrics))
	for name := range r.metrics {
		names = append(names, name)
	}
	ms := make([]metric, len(names))
	slices.Sort(names)
	for i, name := range names {
		ms[i] = r.metrics[name]
	}
	// Released before rendering: gauge functions run user code, which
	// must be free to register metrics or take its own locks.
	r.mu.Unlock()

	var buf []byte
	for _, m := range ms {
		buf = m.appendText(buf)
	}
	n, err := w.Write(buf)
	return int64(n), err
}

// Handler returns an http.Handler that serves the output of WriteTo to GET
// and HEAD requests with the Content-Type of the text format 0.0.4.
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", contentType)
		// Scrapes must always see current values, never a cached page.
		w.Header().Set("Cache-Control", "no-store")
		// A write error means the scraper went away; there is nobody left
		// to report it to.
		_, _ = r.WriteTo(w)
	})
}

// desc is the immutable description shared by every kind of metric.
type desc struct {
	name   string
	help   string
	labels []string
	// header is the pre-rendered "# HELP" and "# TYPE" lines.
	header string
}

// newDesc validates name and labels and returns the description of a metric
// whose text-format type is typ ("counter", "histogram" or "gauge"). It
// panics on invalid input; see Registry.Counter.
func newDesc(name, help, typ string, labels []string) desc {
	histogram := typ == "histogram"
	if !validMetricName(name) {
		panic(fmt.Sprintf("metrics: invalid metric name %q", name))
	}
	seen := make(map[string]bool, len(labels))
	for _, l := range labels {
		switch {
		case !validLabelName(l):
			panic(fmt.Sprintf("metrics: metric %q: invalid label name %q", name, l))
		case strings.HasPrefix(l, "__"):
			panic(fmt.Sprintf("metrics: metric %q: label name %q is reserved (starts with __)", name, l))
		case histogram && l == "le":
			panic(fmt.Sprintf("metrics: histogram %q: label name \"le\" is reserved for bucket bounds", name))
		case seen[l]:
			panic(fmt.Sprintf("metrics: metric %q: duplicate label name %q", name, l))
		}
		seen[l] = true
	}
	return desc{
		name:   name,
		help:   help,
		labels: slices.Clone(labels),
		header: "# HELP " + name + " " + escapeHelp(help) + "\n# TYPE " + name + " " + typ + "\n",
	}
}

// checkArity panics unless labelValues has one value per label name.
func (d *desc) checkArity(labelValues []string) {
	if len(labelValues) != len(d.labels) {
		// Cloned so that the caller's variadic slice does not escape: the
		// panic message is the only place it would, and letting it escape
		// would cost every observation a heap allocation.
		values := slices.Clone(labelValues)
		panic(fmt.Sprintf("metrics: metric %q has label names %q but got %d label values %q",
			d.name, d.labels, len(values), values))
	}
}

// appendKey appends the series key for labelValues to b. Invalid UTF-8 in a
// value is replaced by U+FFFD first, both because the exposition must be
// valid UTF-8 and because that keeps keySep out of the values.
func appendKey(b []byte, labelValues []string) []byte {
	for i, v := range labelValues {
		if i > 0 {
			b = append(b, keySep)
		}
		if !utf8.ValidString(v) {
			v = strings.ToValidUTF8(v, "\uFFFD")
		}
		b = append(b, v...)
	}
	return b
}

// sanitizedValues returns a copy of labelValues with invalid UTF-8 replaced,
// to be stored in a new series. The copy keeps callers from mutating stored
// values through a slice they passed with "values...".
func sanitizedValues(labelValues []string) []string {
	if len(labelValues) == 0 {
		return nil
	}
	out := make([]string, len(labelValues))
	for i, v := range labelValues {
		if !utf8.ValidString(v) {
			v = strings.ToValidUTF8(v, "\uFFFD")
		}
		out[i] = v
	}
	return out
}

// appendLabels appends `{name="value",...` to b, without the closing brace,
// so that a histogram can add its "le" label. It appends nothing at all if
// there are no labels.
func (d *desc) appendLabels(b []byte, values []string) []byte {
	for i, l := range d.labels {
		if i == 0 {
			b = append(b, '{')
		} else {
			b = append(b, ',')
		}
		b = append(b, l...)
		b = append(b, '=', '"')
		b = appendEscapedLabelValue(b, values[i])
		b = append(b, '"')
	}
	return b
}

// appendSample appends one sample line: name, labels, value.
func (d *desc) appendSample(b []byte, suffix string, values []string, value string) []byte {
	b = append(b, d.name...)
	b = append(b, suffix...)
	b = d.appendLabels(b, values)
	if len(d.labels) > 0 {
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = append(b, value...)
	return append(b, '\n')
}

// Counter is a monotonically increasing value per label-value tuple. It is
// safe for concurrent use.
type Counter struct {
	desc desc
	mu   sync.Mutex
	// series is keyed by appendKey of the label values.
	series map[string]*counterSeries
}

// counterSeries is one label-value tuple of a Counter.
type counterSeries struct {
	labelValues []string
	value       float64
}

// Add adds v to the series identified by labelValues, which must be given
// in the order of the label names the counter was registered with. It
// panics if the number of label values is wrong or if v is negative or NaN,
// since a counter that goes down breaks rate() for everyone.
func (c *Counter) Add(v float64, labelValues ...string) {
	c.desc.checkArity(labelValues)
	if !(v >= 0) {
		panic(fmt.Sprintf("metrics: counter %q: cannot add %v (counters only go up)", c.desc.name, v))
	}
	var buf [keyBufSize]byte
	key := appendKey(buf[:0], labelValues)
	c.mu.Lock()
	// The string(key) conversion in a map index does not allocate; only
	// the first observation of a tuple pays for a key string.
	s := c.series[string(key)]
	if s == nil {
		s = &counterSeries{labelValues: sanitizedValues(labelValues)}
		c.series[string(key)] = s
	}
	s.value += v
	c.mu.Unlock()
}

// Inc adds 1 to the series identified by labelValues; see Add.
func (c *Counter) Inc(labelValues ...string) {
	c.Add(1, labelValues...)
}

// appendText implements metric.
func (c *Counter) appendText(b []byte) []byte {
	type snap struct {
		labelValues []string
		value       float64
	}
	c.mu.Lock()
	snaps := make([]snap, 0, len(c.series))
	for _, s := range c.series {
		snaps = append(snaps, snap{s.labelValues, s.value})
	}
	c.mu.Unlock()
	if len(snaps) == 0 {
		return b
	}
	slices.SortFunc(snaps, func(a, b snap) int { return slices.Compare(a.labelValues, b.labelValues) })
	b = append(b, c.desc.header...)
	for _, s := range snaps {
		b = c.desc.appendSample(b, "", s.labelValues, formatFloat(s.value))
	}
	return b
}

// Histogram counts observations into fixed buckets per label-value tuple,
// along with their sum and count. It is safe for concurrent use.
type Histogram struct {
	desc   desc
	bounds []float64 // upper bounds, strictly increasing, without +Inf
	les    []string  // formatted bounds, with a final "+Inf"
	mu     sync.Mutex
	// series is keyed by appendKey of the label values.
	series map[string]*histogramSeries
}

// histogramSeries is one label-value tuple of a Histogram.
type histogramSeries struct {
	labelValues []string
	// counts holds per-bucket (not cumulative) counts, one per bound plus
	// one for +Inf; cumulating happens at scrape time so that an
	// observation touches a single slot.
	counts []uint64
	sum    float64
	count  uint64
}

// newSeries returns an empty series for labelValues.
func (h *Histogram) newSeries(labelValues []string) *histogramSeries {
	return &histogramSeries{
		labelValues: sanitizedValues(labelValues),
		counts:      make([]uint64, len(h.bounds)+1),
	}
}

// Observe records v (conventionally in seconds) in the series identified by
// labelValues, which must be given in the order of the label names the
// histogram was registered with. It panics if the number of label values is
// wrong.
func (h *Histogram) Observe(v float64, labelValues ...string) {
	h.desc.checkArity(labelValues)
	// The first bound >= v is the bucket "le" that v falls in; NaN and
	// values above every bound land in the +Inf slot at len(bounds).
	i := sort.SearchFloat64s(h.bounds, v)
	var buf [keyBufSize]byte
	key := appendKey(buf[:0], labelValues)
	h.mu.Lock()
	s := h.series[string(key)]
	if s == nil {
		s = h.newSeries(labelValues)
		h.series[string(key)] = s
	}
	s.counts[i]++
	s.sum += v
	s.count++
	h.mu.Unlock()
}

// appendText implements metric.
func (h *Histogram) appendText(b []byte) []byte {
	type snap struct {
		labelValues []string
		counts      []uint64
		sum         float64
		count       uint64
	}
	h.mu.Lock()
	snaps := make([]snap, 0, len(h.series))
	for _, s := range h.series {
		snaps = append(snaps, snap{s.labelValues, slices.Clone(s.counts), s.sum, s.count})
	}
	h.mu.Unlock()
	if len(snaps) == 0 {
		return b
	}
	slices.SortFunc(snaps, func(a, b snap) int { return slices.Compare(a.labelValues, b.labelValues) })
	b = append(b, h.desc.header...)
	for _, s := range snaps {
		var cum uint64
		for i, le := range h.les {
			cum += s.counts[i]
			b = append(b, h.desc.name...)
			b = append(b, "_bucket"...)
			b = h.desc.appendLabels(b, s.labelValues)
			if len(h.desc.labels) == 0 {
				b = append(b, '{')
			} else {
				b = append(b, ',')
			}
			b = append(b, `le="`...)
			b = append(b, le...)
			b = append(b, `"} `...)
			b = strconv.AppendUint(b, cum, 10)
			b = append(b, '\n')
		}
		b = h.desc.appendSample(b, "_sum", s.labelValues, formatFloat(s.sum))
		b = h.desc.appendSample(b, "_count", s.labelValues, strconv.FormatUint(s.count, 10))
	}
	return b
}

// gaugeFunc is a gauge whose value is computed at scrape time.
type gaugeFunc struct {
	desc desc
	fn   func() float64
}

// appendText implements metric.
func (g *gaugeFunc) appendText(b []byte) []byte {
	b = append(b, g.desc.header...)
	return g.desc.appendSample(b, "", nil, formatFloat(g.fn()))
}

// formatFloat renders v the way the text format expects: shortest
// round-tripping representation, with +Inf, -Inf and NaN spelled as
// Prometheus spells them.
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, +1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// escapeHelp escapes a HELP text: the format escapes only backslash and
// newline there (not double quotes, unlike label values).
func escapeHelp(s string) string {
	if !strings.ContainsAny(s, "\\\n") {
		return s
	}
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

// appendEscapedLabelValue appends v with backslash, double quote and newline
// escaped, as label values require.
func appendEscapedLabelValue(b []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			b = append(b, '\\', '\\')
		case '"':
			b = append(b, '\\', '"')
		case '\n':
			b = append(b, '\\', 'n')
		default:
			b = append(b, c)
		}
	}
	return b
}

// validMetricName reports whether s matches [a-zA-Z_:][a-zA-Z0-9_:]*.
func validMetricName(s string) bool {
	return validName(s, true)
}

// validLabelName reports whether s matches [a-zA-Z_][a-zA-Z0-9_]*.
func validLabelName(s string) bool {
	return validName(s, false)
}

// validName implements validMetricName and validLabelName, which differ only
// in whether a colon is allowed.
func validName(s string, colon bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') ||
			(i > 0 && '0' <= c && c <= '9') || (colon && c == ':')
		if !ok {
			return false
		}
	}
	return true
}

// Ensure the kinds of metric keep implementing the interface.
var (
	_ metric      = (*Counter)(nil)
	_ metric      = (*Histogram)(nil)
	_ metric      = (*gaugeFunc)(nil)
	_ io.WriterTo = (*Registry)(nil)
)
