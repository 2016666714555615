package web

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/swarm"
)

// How the swarm pages draw what the service returns: numbers, the
// context-pressure gauge and the chart of tasks over time, as inline SVG
// whose geometry and colours are presentation attributes (the page's CSP
// allows no style attribute).

var swarmFuncs = template.FuncMap{
	"swarmNum":      swarmNum,
	"swarmPct":      func(r float64) string { return strconv.FormatFloat(r*100, 'f', 0, 64) + "%" },
	"swarmGauge":    newSwarmGauge,
	"swarmSignal":   swarmSignal,
	"swarmApprover": swarmApprover,
	"swarmCount":    swarmCount,
	"swarmSecs":     func(s int) string { return (time.Duration(s) * time.Second).String() },
	"swarmOpen":     func(s continuo.ContinuationState) bool { return s.Open() },
	"swarmStates":   continuo.TaskStates,
	"swarmIdle":     func(p continuo.SwarmPolicy) int { return int(p.WorkerIdleTTL() / time.Second) },
	"swarmBlocked":  swarmReason[continuo.BlockedReason],
	"swarmRetired":  swarmReason[continuo.RetiredReason],
	"swarmWith":     func(v *view, x any) swarmPart { return swarmPart{V: v, X: x} },
	"swarmDecision": func(v *view, t continuo.Task, a *continuo.Attempt, d string) swarmDecision {
		return swarmDecision{V: v, Task: t, Attempt: a, Decision: d}
	},
	"swarmLatest": func(h *swarm.TaskAttempts) swarm.TaskStatus {
		ts := swarm.TaskStatus{Task: h.Task}
		if len(h.Attempts) > 0 {
			ts.Attempt = &h.Attempts[0]
		}
		return ts
	},
}

// swarmDecision is what a reconcile form's hidden fields say.
type swarmDecision struct {
	V        *view
	Task     continuo.Task
	Attempt  *continuo.Attempt
	Decision string
}

// swarmPart hands a partial the page's view (its CSRF fields and path)
// and the thing it draws.
type swarmPart struct {
	V *view
	X any
}

// swarmNum writes an integer with thousands separators.
func swarmNum(v any) string {
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int64:
		n = x
	default:
		return fmt.Sprint(v)
	}
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// swarmGaugeView is a pressure gauge: the filled share and the threshold
// mark, in percent of the budget, and the fill's colour.
type swarmGaugeView struct {
	Fill, Mark float64
	Color      string
}

// The gauge's colours (dash.css's --ok, --warn, --bad).
const (
	swarmOK   = "#16794c"
	swarmWarn = "#a15c00"
	swarmBad  = "#b42318"
)

func newSwarmGauge(p *swarm.Pressure) swarmGaugeView {
	pct := func(r float64) float64 { return math.Round(min(max(r, 0), 1)*1000) / 10 }
	g := swarmGaugeView{Fill: pct(p.Ratio), Mark: pct(p.Threshold), Color: swarmOK}
	switch {
	case p.CompactRequired:
		g.Color = swarmBad
	case p.Ratio >= 0.8*p.Threshold:
		g.Color = swarmWarn
	}
	return g
}

// swarmSignal says what an estimate rests on: its leading source (an
// exact figure is labelled exact, and needs none).
func swarmSignal(p *swarm.Pressure) string {
	switch p.Leading {
	case "":
		return "no signal yet"
	case swarm.LeadCounted:
		return "server count"
	case string(continuo.LedgerEstimate):
		return "the worker's estimate"
	}
	return p.Leading
}

// swarmReasons say why a worker is compact_blocked (and what unblocks
// it) or why it was retired, by the reason's value.
var swarmReasons = map[string]string{
	string(continuo.BlockedCapsuleTooLarge):    "its checkpoint leaves no room to work in a new conversation: it checkpoints less, or you remove it",
	string(continuo.BlockedCarrierStartFailed): "its replacement carrier did not start, five times: fix the carrier command, then prepare a ticket",
	string(continuo.BlockedNotRedeemed):        "its replacement carrier started and never joined, five times: prepare a ticket, or remove it",
	string(continuo.RetiredLeft):               "it left",
	string(continuo.RetiredRemoved):            "you removed it",
	string(continuo.RetiredIdle):               "its conversation went silent",
}

// swarmReason says a reason of swarmReasons, or the reason's value.
func swarmReason[R ~string](r R) string {
	if s, ok := swarmReasons[string(r)]; ok {
		return s
	}
	return string(r)
}

// swarmApprover says who approved a continuation — "owner" or "policy",
// never the principal — or "" when no one did (a ticket, or not yet).
func swarmApprover(cn continuo.Continuation) string {
	switch cn.ApprovedBy {
	case "":
		return ""
	case continuo.ApprovedByPolicy:
		return "policy"
	}
	return "owner"
}

// swarmCount sums the counts of the named task states.
func swarmCount(counts map[continuo.TaskState]int, states ...string) int {
	n := 0
	for _, s := range states {
		n += counts[continuo.TaskState(s)]
	}
	return n
}

// swarmChart is the chart of tasks dispatched and settled per bucket:
// one pair of bars per bucket, scaled to the largest count.
type swarmChart struct {
	W, H, Base          int // the view box, and the y of the bars' base line
	Top, Left, LabelY   int // the plot's top and left edges, the time labels' baseline
	PlotH               int // the plot's height
	Bars                []swarmBar
	Ticks               []swarmTick
	Max                 int
	Dispatched, Settled int
	Bucket              time.Duration
}

type swarmBar struct {
	X, SX, Width           int // the dispatched bar's x, the settled bar's
	DY, DH, SY, SH         int // their tops and heights
	Dispatched, Settled    int
	Title                  string
	Start                  time.Time
	HasDispatch, HasSettle bool
}

type swarmTick struct {
	X    int
	Text string
}

// The chart's geometry, in view box units.
const (
	chartLeft  = 34 // room for the scale
	chartSlot  = 20 // one bucket
	chartBar   = 8
	chartTop   = 8
	chartPlot  = 100 // the bars' full height
	chartBelow = 18  // room for the time labels
)

func newSwarmChart(tl *swarm.Timeline) swarmChart {
	c := swarmChart{W: chartLeft + chartSlot*len(tl.Buckets) + 4, H: chartTop + chartPlot + chartBelow, Base: chartTop + chartPlot,
		Top: chartTop, Left: chartLeft, PlotH: chartPlot, LabelY: chartTop + chartPlot + chartBelow - 5, Bucket: tl.Bucket}
	for _, b := range tl.Buckets {
		c.Max = max(c.Max, b.Dispatched, b.Settled)
		c.Dispatched += b.Dispatched
		c.Settled += b.Settled
	}
	height := func(n int) int {
		if n == 0 || c.Max == 0 {
			return 0
		}
		return max(1, n*chartPlot/c.Max)
	}
	every := max(1, len(tl.Buckets)/4)
	for i, b := range tl.Buckets {
		x := chartLeft + i*chartSlot + 2
		dh, sh := height(b.Dispatched), height(b.Settled)
		end := b.Start.Add(tl.Bucket)
		c.Bars = append(c.Bars, swarmBar{X: x, SX: x + chartBar + 1, Width: chartBar, DY: c.Base - dh, DH: dh, SY: c.Base - sh, SH: sh,
			Dispatched: b.Dispatched, Settled: b.Settled, Start: b.Start, HasDispatch: dh > 0, HasSettle: sh > 0,
			Title: fmt.Sprintf("%s–%s UTC: %d dispatched, %d settled", b.Start.UTC().Format("Jan 2 15:04"), end.UTC().Format("15:04"),
				b.Dispatched, b.Settled)})
		if i%every == 0 {
			c.Ticks = append(c.Ticks, swarmTick{X: x + chartBar, Text: b.Start.UTC().Format("15:04")})
		}
	}
	return c
}
