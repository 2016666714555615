package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// The context ledger (see continuation.go for the section's rules): a
// count is kept once per (worker, epoch, source, ref), a report keeps its
// largest, and a worker's entries of one epoch come back as one summed
// entry per counted source and every reported entry as it is, by source
// then ref.

func ledgerEntry(workerID string, epoch int64, source continuo.LedgerSource, ref string, tokens int64, at time.Time) continuo.LedgerEntry {
	return continuo.LedgerEntry{WorkerID: workerID, Epoch: epoch, Source: source, Ref: ref, Tokens: tokens, At: at}
}

func normLedger(e continuo.LedgerEntry) continuo.LedgerEntry { e.At = trunc(e.At); return e }

// ledgerAdd runs LedgerAdd in a Write of its own and returns whether it
// was new.
func ledgerAdd(t testing.TB, s store.Store, es ...continuo.LedgerEntry) []bool {
	t.Helper()
	var out []bool
	MustWrite(t, s, func(tx store.Tx) error {
		out = nil
		for _, e := range es {
			added, err := tx.LedgerAdd(t.Context(), e)
			if err != nil {
				return err
			}
			out = append(out, added)
		}
		return nil
	})
	return out
}

func ledgerReport(t testing.TB, s store.Store, e continuo.LedgerEntry) {
	t.Helper()
	MustWrite(t, s, func(tx store.Tx) error { return tx.LedgerReport(t.Context(), e) })
}

func ledgerEntries(t testing.TB, s store.Store, workerID string, epoch int64) []continuo.LedgerEntry {
	t.Helper()
	return mustGet(t, s, fmt.Sprintf("LedgerEntries(%s, %d)", workerID, epoch), func(tx store.Tx) ([]continuo.LedgerEntry, error) {
		return tx.LedgerEntries(t.Context(), workerID, epoch)
	})
}

// A count is new once: again (in the same Write or a later one, with
// other tokens) it is false and changes nothing; the same ref under
// another source, epoch or worker is a count of its own. Reported
// sources are refused (LedgerReport keeps them).
func testLedgerAdd(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	e := ledgerEntry(f.W1.ID, 1, continuo.LedgerTaskPrompt, "tsk_1", 100, Base)
	again := e
	again.Tokens, again.At = 999, Base.Add(time.Minute)
	if got := ledgerAdd(t, s, e, again); !got[0] || got[1] {
		t.Errorf("LedgerAdd of a count, then again in the same Write: %v, want [true false]", got)
	}
	if got := ledgerAdd(t, s, again); got[0] {
		t.Error("LedgerAdd of a count added before reported it new")
	}
	sameList(t, "entries after the replays", ledgerEntries(t, s, f.W1.ID, 1),
		[]continuo.LedgerEntry{ledgerEntry(f.W1.ID, 1, continuo.LedgerTaskPrompt, "", 100, Base)}, normLedger)
	others := []continuo.LedgerEntry{
		ledgerEntry(f.W1.ID, 1, continuo.LedgerTaskResult, "tsk_1", 10, Base),
		ledgerEntry(f.W1.ID, 2, continuo.LedgerTaskPrompt, "tsk_1", 20, Base),
		ledgerEntry(f.W2.ID, 1, continuo.LedgerTaskPrompt, "tsk_1", 30, Base),
		ledgerEntry(f.W1.ID, 1, continuo.LedgerTaskPrompt, "tsk_2", 40, Base.Add(time.Second)),
	}
	for _, o := range others {
		if got := ledgerAdd(t, s, o); !got[0] {
			t.Errorf("LedgerAdd(%+v) reported it added before", o)
		}
	}
	sameList(t, "entries", ledgerEntries(t, s, f.W1.ID, 1), []continuo.LedgerEntry{
		ledgerEntry(f.W1.ID, 1, continuo.LedgerTaskPrompt, "", 140, Base.Add(time.Second)),
		ledgerEntry(f.W1.ID, 1, continuo.LedgerTaskResult, "", 10, Base),
	}, normLedger)
	for _, source := range []continuo.LedgerSource{continuo.LedgerHostExact, continuo.LedgerEstimate} {
		err := s.Write(t.Context(), func(tx store.Tx) error {
			_, err := tx.LedgerAdd(t.Context(), ledgerEntry(f.W2.ID, 1, source, "", 5, Base))
			return err
		})
		if err == nil {
			t.Errorf("LedgerAdd of reported source %s succeeded", source)
		}
	}
	sameList(t, "the other worker's entries", ledgerEntries(t, s, f.W2.ID, 1),
		[]continuo.LedgerEntry{ledgerEntry(f.W2.ID, 1, continuo.LedgerTaskPrompt, "", 30, Base)}, normLedger)
}

// A report keeps the largest figure ever reported for its key, with that
// report's basis and time: a smaller or equal later one changes nothing.
// Each reported source keeps its own. Counted sources are refused.
func testLedgerReport(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	report := func(source continuo.LedgerSource, tokens int64, basis string, at time.Time) continuo.LedgerEntry {
		e := ledgerEntry(f.W1.ID, 1, source, "", tokens, at)
		e.Basis = basis
		return e
	}
	first := report(continuo.LedgerEstimate, 5000, "chars/4 \"ü\"", Base.Add(1500*time.Microsecond))
	ledgerReport(t, s, first)
	sameList(t, "entries after a report", ledgerEntries(t, s, f.W1.ID, 1), []continuo.LedgerEntry{first}, normLedger)
	ledgerReport(t, s, report(continuo.LedgerEstimate, 3000, "later", Base.Add(time.Minute)))
	sameList(t, "entries after a smaller report", ledgerEntries(t, s, f.W1.ID, 1), []continuo.LedgerEntry{first}, normLedger)
	larger := report(continuo.LedgerEstimate, 8000, "tokenizer", Base.Add(2*time.Minute))
	ledgerReport(t, s, larger)
	ledgerReport(t, s, report(continuo.LedgerEstimate, 8000, "same", Base.Add(3*time.Minute)))
	ledgerReport(t, s, report(continuo.LedgerEstimate, 0, "", Base.Add(4*time.Minute)))
	exact := report(continuo.LedgerHostExact, 1200, "host", Base.Add(time.Second))
	ledgerReport(t, s, exact)
	sameList(t, "entries after a larger report", ledgerEntries(t, s, f.W1.ID, 1), []continuo.LedgerEntry{larger, exact}, normLedger)
	for _, source := range []continuo.LedgerSource{continuo.LedgerTaskPrompt, continuo.LedgerTaskResult, continuo.LedgerCapsule} {
		err := s.Write(t.Context(), func(tx store.Tx) error { return tx.LedgerReport(t.Context(), report(source, 9000, "", Base)) })
		if err == nil {
			t.Errorf("LedgerReport of counted source %s succeeded", source)
		}
	}
	sameList(t, "entries after the refused reports", ledgerEntries(t, s, f.W1.ID, 1), []continuo.LedgerEntry{larger, exact}, normLedger)
}

// LedgerEntries sums each counted source of a worker's epoch into one
// entry (no ref, the newest time) and lists every reported entry as
// stored, by source then ref; other epochs and other workers never show.
func testLedgerEntries(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	w := f.W1.ID
	ledgerAdd(t, s,
		ledgerEntry(w, 1, continuo.LedgerTaskPrompt, "tsk_a", 100, Base),
		ledgerEntry(w, 1, continuo.LedgerTaskPrompt, "tsk_b", 250, Base.Add(2*time.Second)),
		ledgerEntry(w, 1, continuo.LedgerTaskResult, "tsk_a", 40, Base.Add(time.Second)),
		ledgerEntry(w, 1, continuo.LedgerCapsule, "cnt_a", 700, Base),
		ledgerEntry(w, 2, continuo.LedgerTaskPrompt, "tsk_c", 9999, Base.Add(time.Hour)),
		ledgerEntry(f.W2.ID, 1, continuo.LedgerTaskPrompt, "tsk_a", 8888, Base.Add(time.Hour)),
	)
	estimate := ledgerEntry(w, 1, continuo.LedgerEstimate, "", 2000, Base.Add(3*time.Second))
	estimate.Basis = "chars/4"
	tool := ledgerEntry(w, 1, continuo.LedgerEstimate, "tool", 300, Base.Add(5*time.Second))
	exact := ledgerEntry(w, 1, continuo.LedgerHostExact, "", 1500, Base.Add(4*time.Second))
	for _, e := range []continuo.LedgerEntry{tool, estimate, exact, ledgerEntry(w, 2, continuo.LedgerEstimate, "", 7777, Base),
		ledgerEntry(f.W2.ID, 1, continuo.LedgerHostExact, "", 6666, Base)} {
		ledgerReport(t, s, e)
	}
	sameList(t, "LedgerEntries", ledgerEntries(t, s, w, 1), []continuo.LedgerEntry{
		ledgerEntry(w, 1, continuo.LedgerCapsule, "", 700, Base),
		estimate,
		tool,
		exact,
		ledgerEntry(w, 1, continuo.LedgerTaskPrompt, "", 350, Base.Add(2*time.Second)),
		ledgerEntry(w, 1, continuo.LedgerTaskResult, "", 40, Base.Add(time.Second)),
	}, normLedger)
	sameList(t, "LedgerEntries of epoch 2", ledgerEntries(t, s, w, 2), []continuo.LedgerEntry{
		ledgerEntry(w, 2, continuo.LedgerEstimate, "", 7777, Base),
		ledgerEntry(w, 2, continuo.LedgerTaskPrompt, "", 9999, Base.Add(time.Hour)),
	}, normLedger)
	if got := ledgerEntries(t, s, w, 3); len(got) != 0 {
		t.Errorf("LedgerEntries of an epoch with none: %v", got)
	}
}

// LedgerPrune deletes a worker's entries of the epochs before the one
// given, no other worker's; a pruned count may be added again.
func testLedgerPrune(t *testing.T, s store.Store) {
	f := setupSwarm(t, s)
	for epoch := range int64(4) {
		ledgerAdd(t, s, ledgerEntry(f.W1.ID, epoch, continuo.LedgerTaskPrompt, "tsk_a", 10+epoch, Base))
		ledgerReport(t, s, ledgerEntry(f.W1.ID, epoch, continuo.LedgerEstimate, "", 100+epoch, Base))
	}
	ledgerAdd(t, s, ledgerEntry(f.W2.ID, 0, continuo.LedgerTaskPrompt, "tsk_a", 5, Base))
	prune := func(before int64) {
		MustWrite(t, s, func(tx store.Tx) error { return tx.LedgerPrune(t.Context(), f.W1.ID, before) })
	}
	prune(0)
	prune(2)
	prune(2)
	for epoch, want := range []int{0, 0, 2, 2} {
		if got := ledgerEntries(t, s, f.W1.ID, int64(epoch)); len(got) != want {
			t.Errorf("epoch %d after pruning before 2: %d entries, want %d", epoch, len(got), want)
		}
	}
	sameList(t, "the other worker's entries", ledgerEntries(t, s, f.W2.ID, 0),
		[]continuo.LedgerEntry{ledgerEntry(f.W2.ID, 0, continuo.LedgerTaskPrompt, "", 5, Base)}, normLedger)
	if got := ledgerAdd(t, s, ledgerEntry(f.W1.ID, 0, continuo.LedgerTaskPrompt, "tsk_a", 10, Base)); !got[0] {
		t.Error("LedgerAdd of a pruned count reported it added before")
	}
}

// Racers adding one count, each in a Write of its own: exactly one adds
// it, and its tokens are the sum. Racers reporting: the largest stays.
func testLedgerConcurrent(t *testing.T, s store.Store) {
	const n = 8
	ctx := t.Context()
	f := setupSwarm(t, s)
	added := make([]bool, n)
	errs := parallel(n, func(i int) error {
		return s.Write(ctx, func(tx store.Tx) error {
			var err error
			added[i], err = tx.LedgerAdd(ctx, ledgerEntry(f.W1.ID, 1, continuo.LedgerTaskPrompt, "tsk_a", int64(10*(i+1)), Base))
			return err
		})
	})
	winner := -1
	for i, err := range errs {
		noErr(t, err, fmt.Sprintf("LedgerAdd by racer %d", i))
		if added[i] {
			if winner >= 0 {
				t.Errorf("racers %d and %d both added the count", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("no racer added the count")
	}
	errs = parallel(n, func(i int) error {
		return s.Write(ctx, func(tx store.Tx) error {
			return tx.LedgerReport(ctx, ledgerEntry(f.W1.ID, 1, continuo.LedgerEstimate, "", int64(100*(i+1)), Base))
		})
	})
	for i, err := range errs {
		noErr(t, err, fmt.Sprintf("LedgerReport by racer %d", i))
	}
	sameList(t, "entries after the races", ledgerEntries(t, s, f.W1.ID, 1), []continuo.LedgerEntry{
		ledgerEntry(f.W1.ID, 1, continuo.LedgerEstimate, "", 100*n, Base),
		ledgerEntry(f.W1.ID, 1, continuo.LedgerTaskPrompt, "", int64(10*(winner+1)), Base),
	}, normLedger)
}

// A worker's CountedTokens are what its last WorkerUpdate wrote (the
// swarm service adds its counts): a count alone leaves them.
func testLedgerCountsTheWorker(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := setupSwarm(t, s)
	counted := func(what string, want int64) *continuo.Worker {
		t.Helper()
		w := mustGet(t, s, "WorkerGet", func(tx store.Tx) (*continuo.Worker, error) { return tx.WorkerGet(ctx, f.W1.ID) })
		if w.CountedTokens != want {
			t.Fatalf("%s: counted %d tokens, want %d", what, w.CountedTokens, want)
		}
		return w
	}
	w := counted("a new worker", 0)
	ledgerAdd(t, s, ledgerEntry(w.ID, w.Epoch, continuo.LedgerTaskPrompt, "tsk_1", 100, Base))
	w = counted("after a count alone", 0)
	next := *w
	next.Revision, next.CountedTokens = w.Revision+1, 1<<40
	MustWrite(t, s, func(tx store.Tx) error { return updateWorker(ctx, tx, &next, w.Revision) })
	counted("after an update", 1<<40)
}
