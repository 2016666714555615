package swarm

import (
	"context"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/store"
)

// Context pressure (CONTRACT.md §8) is an estimate with provenance: the
// server counts each task prompt and result a carrier read or wrote once
// per epoch (the ledger's primary key makes a redelivery or a replay count
// nothing), workers may report their own figures, and pressure is the
// largest signal plus the swarm's reserve. A report keeps its largest
// figure, so a smaller later sample never lowers it within an epoch.

// bytesPerToken turns counted bytes into the ledger's token estimate.
const bytesPerToken = 4

func tokensOf(s string) int64 { return int64((len(s) + bytesPerToken - 1) / bytesPerToken) }

// LeadCounted is the Leading of a pressure that rests on the server's own
// counts (task prompts and results, the capsule): an estimate.
const LeadCounted = "counted"

// Pressure is a worker's context pressure at one epoch.
type Pressure struct {
	WorkerID        string
	Epoch           int64
	Tokens          int64 // the largest signal plus the reserve
	Budget          int64
	Threshold       float64
	Reserve         int64
	Ratio           float64
	Exact           bool // the largest signal is a figure the host gave exactly
	Sources         []continuo.LedgerEntry
	CompactRequired bool
	// Leading is the signal Tokens rests on: host_exact or estimate (a
	// report), LeadCounted (the server's counts), or "" with no signal yet.
	Leading string
}

// pressureOf reads a worker's pressure at its current epoch.
func pressureOf(ctx context.Context, tx store.Tx, sw *continuo.Swarm, w *continuo.Worker) (*Pressure, error) {
	es, err := tx.LedgerEntries(ctx, w.ID, w.Epoch)
	if err != nil {
		return nil, err
	}
	return pressureFrom(sw, w, es), nil
}

// pressureFrom is a worker's pressure from its ledger entries at its
// current epoch.
func pressureFrom(sw *continuo.Swarm, w *continuo.Worker, es []continuo.LedgerEntry) *Pressure {
	pc := sw.Policy.Compaction
	p := &Pressure{WorkerID: w.ID, Epoch: w.Epoch, Budget: pc.BudgetTokens, Threshold: pc.Threshold, Reserve: pc.ReserveTokens,
		Sources: es}
	var counted, top int64
	exact, lead, worked := false, "", false
	for _, e := range es {
		worked = worked || e.Source != continuo.LedgerCapsule
		if e.Source.Reported() {
			if e.Tokens > top || e.Tokens == top && (lead == "" || e.Source == continuo.LedgerHostExact) {
				top, exact, lead = e.Tokens, e.Source == continuo.LedgerHostExact, string(e.Source)
			}
			continue
		}
		counted += e.Tokens
	}
	if counted > top || lead == "" && len(es) > 0 {
		top, exact, lead = counted, false, LeadCounted
	}
	p.Tokens, p.Exact, p.Leading = top+pc.ReserveTokens, exact, lead
	if p.Budget > 0 {
		p.Ratio = float64(p.Tokens) / float64(p.Budget)
	}
	// A new epoch is never compact_required by its capsule alone
	// (CONTRACT.md §8): only once a task was delivered, or a figure
	// reported, in it.
	p.CompactRequired = worked && p.Ratio >= p.Threshold
	return p
}

// count adds a task's prompt or result to its worker's ledger, once, and
// to w.CountedTokens, which the caller's WorkerUpdate that follows writes.
func count(ctx context.Context, tx store.Tx, w *continuo.Worker, source continuo.LedgerSource, ref, text string, at time.Time) error {
	n := tokensOf(text)
	added, err := tx.LedgerAdd(ctx, continuo.LedgerEntry{WorkerID: w.ID, Epoch: w.Epoch, Source: source, Ref: ref, Tokens: n, At: at})
	if added {
		w.CountedTokens += n
	}
	return err
}

// restartLedger starts a new carrier's epoch (w is at it, not written
// yet) from the capsule it read, and forgets epochs before the previous
// one (the ledger stays bounded).
func (s *Service) restartLedger(ctx context.Context, tx store.Tx, w *continuo.Worker, cn *continuo.Continuation, at time.Time) error {
	w.CountedTokens = 0
	if err := count(ctx, tx, w, continuo.LedgerCapsule, cn.ID, cn.Capsule, at); err != nil {
		return err
	}
	return tx.LedgerPrune(ctx, w.ID, w.Epoch-1)
}

// markCompact records on the worker that its pressure reached the
// threshold (once; the planner acts on it).
func markCompact(ctx context.Context, tx store.Tx, w *continuo.Worker, now time.Time) error {
	if w.ContinuityState != continuo.ContinuitySteady {
		return nil
	}
	prev := w.Revision
	w.ContinuityState, w.Revision, w.UpdatedAt = continuo.ContinuityCompactRequired, prev+1, now
	return stale(tx.WorkerUpdate(ctx, w, prev), "the worker")
}

// ReportInput is what chat_swarm_report_context takes.
type ReportInput struct {
	Tokens int64
	Source continuo.LedgerSource // host_exact or estimate
	Basis  string
}

// ReportContext records a worker's own figure of its context and returns
// its pressure.
func (s *Service) ReportContext(ctx context.Context, c *continuo.Caller, car Carrier, ref WorkerRef, in ReportInput) (*Pressure, error) {
	switch {
	case !in.Source.Reported():
		return nil, continuo.Invalid("source", "must be host_exact or estimate")
	case in.Tokens < 0 || in.Tokens > continuo.MaxContextTokens:
		return nil, continuo.Invalid("tokens", "must be 0..%d", int64(continuo.MaxContextTokens))
	case len(in.Basis) > continuo.MaxContinuationNote:
		return nil, continuo.Invalid("basis", "must be at most %d bytes", continuo.MaxContinuationNote)
	}
	basis, _ := redact.String(in.Basis)
	var out *Pressure
	err := s.db.Write(ctx, func(tx store.Tx) error {
		b, err := s.carrierOf(ctx, tx, c, car, ref)
		if err != nil {
			return err
		}
		now := s.now()
		if err := tx.LedgerReport(ctx, continuo.LedgerEntry{WorkerID: b.w.ID, Epoch: b.w.Epoch, Source: in.Source, Tokens: in.Tokens,
			Basis: basis, At: now}); err != nil {
			return err
		}
		if out, err = pressureOf(ctx, tx, b.sw, b.w); err != nil {
			return err
		}
		if out.CompactRequired {
			return markCompact(ctx, tx, b.w, now)
		}
		return nil
	})
	if err == nil && out.CompactRequired {
		s.kickPlanner()
	}
	return out, err
}

// ContextStatus returns a worker's pressure, to its carrier.
func (s *Service) ContextStatus(ctx context.Context, c *continuo.Caller, car Carrier, ref WorkerRef) (*Pressure, error) {
	var out *Pressure
	err := s.db.Read(ctx, func(tx store.Tx) error {
		b, err := s.carrierOf(ctx, tx, c, car, ref)
		if err != nil {
			return err
		}
		out, err = pressureOf(ctx, tx, b.sw, b.w)
		return err
	})
	return out, err
}

// checkPressure marks the worker compact_required once what the server
// counted reached the swarm's threshold, after a count: from the worker's
// running sum, without reading the ledger (a reported figure is checked
// when it is reported, and never falls).
func (s *Service) checkPressure(ctx context.Context, tx store.Tx, b *bound, now time.Time) error {
	pc := b.sw.Policy.Compaction
	if b.w.ContinuityState != continuo.ContinuitySteady || pc.BudgetTokens <= 0 ||
		float64(b.w.CountedTokens+pc.ReserveTokens)/float64(pc.BudgetTokens) < pc.Threshold {
		return nil
	}
	if err := b.writeIdle(ctx, tx); err != nil { // a pending settle first: markCompact writes from it
		return err
	}
	return markCompact(ctx, tx, b.w, now)
}
