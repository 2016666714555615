package swarm

import (
	"context"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/metrics"
	"github.com/continuo-dev/continuo/internal/store"
)

// meters are the swarm's series on /metrics (CONTRACT.md §8: carriers
// started ≤ rollovers + retries, and compact_blocked shows): counts of
// this process, and the blocked workers of the whole database. With no
// registry they count nothing.
type meters struct {
	starts    *metrics.Counter // replacement carriers the planner started, by outcome (started|failed)
	rollovers *metrics.Counter // rollovers the planner began: its first try for a worker at an epoch and checkpoint
	retries   *metrics.Counter // its further tries, after one that did not start or redeem
	bound     *metrics.Counter // continuations bound (a worker moved to a new carrier), whoever prepared them
	blocks    *metrics.Counter // workers made compact_blocked, by reason
	retired   *metrics.Counter // workers retired, by reason
}

func newMeters(reg *metrics.Registry, db store.Store) meters {
	if reg == nil {
		return meters{}
	}
	reg.GaugeFunc("continuo_swarm_workers_compact_blocked", "Workers whose context is full and whose carrier cannot be replaced (compact_blocked), in every swarm.",
		func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var n int
			if err := db.Read(ctx, func(tx store.Tx) (err error) { n, err = tx.WorkersBlocked(ctx); return err }); err != nil {
				return -1
			}
			return float64(n)
		})
	return meters{
		starts:    reg.Counter("continuo_swarm_carrier_starts_total", "Replacement carriers the Auto Compact planner started, by outcome.", "outcome"),
		rollovers: reg.Counter("continuo_swarm_rollovers_total", "Rollovers the Auto Compact planner began (its first try for a worker at an epoch)."),
		retries:   reg.Counter("continuo_swarm_carrier_retries_total", "Replacement carriers the planner tried again after one did not start or redeem."),
		bound:     reg.Counter("continuo_swarm_continuations_bound_total", "Workers moved to a new carrier (continuations bound)."),
		blocks:    reg.Counter("continuo_swarm_compact_blocked_total", "Workers made compact_blocked, by reason.", "reason"),
		retired:   reg.Counter("continuo_swarm_workers_retired_total", "Workers retired, by reason.", "reason"),
	}
}

func inc(c *metrics.Counter, labels ...string) {
	if c != nil {
		c.Inc(labels...)
	}
}

func (m meters) started(ok bool) {
	inc(m.starts, map[bool]string{true: "started", false: "failed"}[ok])
}

// tried counts a continuation the planner prepared: a retry, or the first
// try of a rollover.
func (m meters) tried(retry bool) {
	if retry {
		inc(m.retries)
	} else {
		inc(m.rollovers)
	}
}

func (m meters) boundOne()                             { inc(m.bound) }
func (m meters) blocked(why continuo.BlockedReason)    { inc(m.blocks, string(why)) }
func (m meters) retiredFor(why continuo.RetiredReason) { inc(m.retired, string(why)) }
