// Package metrics is continuo's face on github.com/prometheus/client_golang:
// counters and histograms with fixed label names in a private registry,
// served at /metrics.
//
// The rest of the code makes a handful of calls (Counter, Histogram,
// GaugeFunc, Inc/Add, Observe); the choices live here: a registry of continuo's own series only
// (no Go runtime or process collectors), unlabelled series exposed as 0 from
// registration, metric and label names held to the classic character set so
// that every scraper reads them unescaped, and label values made valid UTF-8
// instead of panicking.
//
// Misuse that can only come from a programming error — an invalid or
// duplicate name, bad buckets, the wrong number of label values — panics, as
// client_golang's MustRegister and WithLabelValues do; everything but the
// number of label values is caught at registration.
package metrics

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"
)

// DefBuckets are general-purpose latency buckets, in seconds, from half a
// millisecond to ten seconds; Histogram uses them when given none. Histogram
// copies its buckets, so changing this slice affects no existing histogram.
var DefBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// Registry holds uniquely named metrics. The zero value is not usable; call
// NewRegistry. A Registry is safe for concurrent use.
type Registry struct {
	reg *prometheus.Registry
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	return &Registry{reg: prometheus.NewRegistry()}
}

// Handler serves every metric of r: text format 0.0.4 unless the scraper
// asks for another format client_golang speaks, gzip-compressed when
// accepted. A failure to gather (only a programming error can cause one,
// such as a counter "x_sum" next to a histogram "x") is a 500.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})
}

// Counter registers and returns a counter called name with the given help
// text and label names. It panics if name or a label name is invalid, or if
// name is already registered in r. A counter without labels is exposed as 0
// from registration, so that dashboards can tell "nothing happened" from
// "not running".
func (r *Registry) Counter(name, help string, labels ...string) *Counter {
	checkNames(name, labels)
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	r.reg.MustRegister(vec)
	if len(labels) == 0 {
		vec.WithLabelValues()
	}
	return &Counter{name: name, labels: len(labels), vec: vec}
}

// Histogram registers and returns a histogram called name with the given
// help text, bucket upper bounds (strictly increasing; +Inf is implicit; nil
// means DefBuckets) and label names. It panics like Counter, and also if the
// buckets are not strictly increasing or a label is called "le".
func (r *Registry) Histogram(name, help string, buckets []float64, labels ...string) *Histogram {
	checkNames(name, labels)
	if len(buckets) == 0 {
		buckets = DefBuckets
	}
	// client_golang keeps the slice it is given; a copy keeps the caller's
	// later changes out.
	opts := prometheus.HistogramOpts{Name: name, Help: help, Buckets: slices.Clone(buckets)}
	vec := prometheus.NewHistogramVec(opts, labels)
	// client_golang checks buckets and the "le" label when it creates a
	// series; create one now so that a mistake panics here rather than at
	// the first observation, then drop it unless it is the only one.
	vec.WithLabelValues(make([]string, len(labels))...)
	if len(labels) > 0 {
		vec.Reset()
	}
	r.reg.MustRegister(vec)
	return &Histogram{name: name, labels: len(labels), vec: vec}
}

// GaugeFunc registers a gauge called name whose value is fn's result at
// every scrape. fn runs while r is being scraped but holds none of r's
// locks, so it may read other metrics or take its own; it must be safe to
// call concurrently. GaugeFunc panics if name is invalid or already
// registered in r, or if fn is nil.
func (r *Registry) GaugeFunc(name, help string, fn func() float64) {
	checkNames(name, nil)
	if fn == nil {
		panic(fmt.Sprintf("metrics: gauge %q: nil function", name))
	}
	r.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn))
}

// Counter is a monotonically increasing value per label-value tuple. It is
// safe for concurrent use.
type Counter struct {
	name   string
	labels int
	vec    *prometheus.CounterVec
}

// Add adds v to the series identified by labelValues, given in the order of
// the counter's label names. It panics if their number is wrong or if v is
// negative or NaN (a counter that goes down breaks rate()).
func (c *Counter) Add(v float64, labelValues ...string) {
	if !(v >= 0) {
		panic(fmt.Sprintf("metrics: counter %q: cannot add %v (counters only go up)", c.name, v))
	}
	c.vec.WithLabelValues(values(c.name, c.labels, labelValues)...).Add(v)
}

// Inc adds 1 to the series identified by labelValues; see Add.
func (c *Counter) Inc(labelValues ...string) {
	c.vec.WithLabelValues(values(c.name, c.labels, labelValues)...).Inc()
}

// Histogram counts observations into fixed buckets per label-value tuple,
// with their sum and count. It is safe for concurrent use.
type Histogram struct {
	name   string
	labels int
	vec    *prometheus.HistogramVec
}

// Observe records v (conventionally in seconds) in the series identified by
// labelValues, given in the order of the histogram's label names. It panics
// if their number is wrong.
func (h *Histogram) Observe(v float64, labelValues ...string) {
	h.vec.WithLabelValues(values(h.name, h.labels, labelValues)...).Observe(v)
}

// checkNames panics unless name and labels are classic Prometheus names
// ([a-zA-Z_:][a-zA-Z0-9_:]*, labels without ':'). client_golang accepts any
// UTF-8 name and escapes it for older scrapers; ours are constants, so an
// unusual one is a typo.
func checkNames(name string, labels []string) {
	if !model.LegacyValidation.IsValidMetricName(name) {
		panic(fmt.Sprintf("metrics: invalid metric name %q", name))
	}
	for _, l := range labels {
		if !model.LegacyValidation.IsValidLabelName(l) {
			panic(fmt.Sprintf("metrics: metric %q: invalid label name %q", name, l))
		}
	}
}

// values checks that there is one label value per label name and returns
// them with invalid UTF-8 replaced by U+FFFD: client_golang panics on it,
// and a label value is data, not a programming error. It copies only when
// something needs replacing.
func values(name string, want int, lv []string) []string {
	if len(lv) != want {
		panic(fmt.Sprintf("metrics: %q has %d label names but got %d label values", name, want, len(lv)))
	}
	for i, v := range lv {
		if !utf8.ValidString(v) {
			out := slices.Clone(lv)
			for j := i; j < len(out); j++ {
				out[j] = strings.ToValidUTF8(out[j], "\uFFFD")
			}
			return out
		}
	}
	return lv
}
