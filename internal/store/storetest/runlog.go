package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// The run log and evidence half of the Run section (see run.go).

// newEvents returns output events from..through of runID, each's text
// "line N" padded to size bytes (if longer), at Base + N seconds.
func newEvents(runID string, from, through int64, size int) []continuo.RunEvent {
	var out []continuo.RunEvent
	for seq := from; seq <= through; seq++ {
		text := fmt.Sprintf("line %d", seq)
		if len(text) < size {
			text += strings.Repeat(".", size-len(text))
		}
		out = append(out, continuo.RunEvent{RunID: runID, Seq: seq, Kind: continuo.EventOutput, Text: text,
			At: Base.Add(time.Duration(seq) * time.Second)})
	}
	return out
}

func appendEvents(t testing.TB, s store.Store, a store.RunAppend) {
	t.Helper()
	MustWrite(t, s, func(tx store.Tx) error { return tx.RunAppend(t.Context(), a) })
}

func runEvents(t testing.TB, s store.Store, p store.RunEventsParams) []continuo.RunEvent {
	t.Helper()
	return mustGet(t, s, fmt.Sprintf("RunEvents(%+v)", p), func(tx store.Tx) ([]continuo.RunEvent, error) {
		return tx.RunEvents(t.Context(), p)
	})
}

func eventSeqs(es []continuo.RunEvent) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}

func seqRange(from, through int64) []int64 {
	var out []int64
	for seq := from; seq <= through; seq++ {
		out = append(out, seq)
	}
	return out
}

func normEvent(e continuo.RunEvent) continuo.RunEvent { e.At = trunc(e.At); return e }

func latestEvidence(t testing.TB, s store.Store, sessionID string, perCheck int) []store.EvidenceRun {
	t.Helper()
	return mustGet(t, s, "EvidenceLatest", func(tx store.Tx) ([]store.EvidenceRun, error) {
		return tx.EvidenceLatest(t.Context(), sessionID, perCheck)
	})
}

func normEvidenceRun(e store.EvidenceRun) store.EvidenceRun {
	e.Evidence.CreatedAt, e.Run = trunc(e.Evidence.CreatedAt), normRun(e.Run)
	return e
}

// RunAppend inserts the events, sets event_seq to the last one's seq and
// the counters as given, and leaves the revision and every other field
// alone. An append of no events sets only the counters.
func testRunAppend(t *testing.T, s store.Store) {
	f := Setup(t, s, "alpha")
	r := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test", runRunning)
	first := newEvents(r.ID, 1, 3, 0)
	first[1].Kind, first[1].Text = continuo.EventState, "a state \"ü\"\n\ttab"
	first[2].Kind, first[2].Text = continuo.EventText, ""
	appendEvents(t, s, store.RunAppend{RunID: r.ID, Events: first, OutputBytes: 30, KeptBytes: 20, HeadSeq: 3})
	second := newEvents(r.ID, 4, 5, 0)
	second[0].RunID, second[1].Kind = "", continuo.EventUsage // an event's RunID may be left to the append
	appendEvents(t, s, store.RunAppend{RunID: r.ID, PrevSeq: 3, Events: second, OutputBytes: 50, KeptBytes: 40, HeadSeq: 3})
	want := *r
	want.EventSeq, want.OutputBytes, want.KeptBytes, want.HeadSeq = 5, 50, 40, 3
	same(t, "run after two appends", mustRun(t, s, r.ID), want, normRun)
	second[0].RunID = r.ID
	sameList(t, "the run's events", runEvents(t, s, store.RunEventsParams{RunID: r.ID, MaxBytes: 1 << 20}),
		append(slices.Clone(first), second...), normEvent)

	appendEvents(t, s, store.RunAppend{RunID: r.ID, PrevSeq: 5, OutputBytes: 51, KeptBytes: 41, HeadSeq: 4, DroppedThrough: 0})
	want.OutputBytes, want.KeptBytes, want.HeadSeq = 51, 41, 4
	same(t, "run after an append of no events", mustRun(t, s, r.ID), want, normRun)
}

// An append naming a seq the log has left is ErrStale and keeps nothing;
// an unknown run is ErrNotFound.
func testRunAppendStale(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	r := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test", runRunning)
	appendEvents(t, s, store.RunAppend{RunID: r.ID, Events: newEvents(r.ID, 1, 2, 0), OutputBytes: 12, KeptBytes: 12, HeadSeq: 2})
	for _, prev := range []int64{0, 1, 3} {
		err := s.Write(ctx, func(tx store.Tx) error {
			return tx.RunAppend(ctx, store.RunAppend{RunID: r.ID, PrevSeq: prev, Events: newEvents(r.ID, prev+1, prev+1, 0),
				OutputBytes: 99, KeptBytes: 99, HeadSeq: 9})
		})
		wantErr(t, err, store.ErrStale, fmt.Sprintf("RunAppend from seq %d when the log is at 2", prev))
	}
	want := *r
	want.EventSeq, want.OutputBytes, want.KeptBytes, want.HeadSeq = 2, 12, 12, 2
	same(t, "run after the stale appends", mustRun(t, s, r.ID), want, normRun)
	sameList(t, "events after the stale appends", runEvents(t, s, store.RunEventsParams{RunID: r.ID, MaxBytes: 1000}),
		newEvents(r.ID, 1, 2, 0), normEvent)
	unknown := continuo.NewID(continuo.PrefixRun, Base)
	err := s.Write(ctx, func(tx store.Tx) error {
		return tx.RunAppend(ctx, store.RunAppend{RunID: unknown, Events: newEvents(unknown, 1, 1, 0)})
	})
	wantErr(t, err, store.ErrNotFound, "RunAppend to an unknown run")
}

// RunAppend refuses events that do not follow PrevSeq, that belong to
// another run, or whose text is not UTF-8 or holds NUL (converting
// nothing), and a drop range that is not one; nothing is kept.
func testRunAppendRefused(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	r := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test", runRunning)
	other := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "lint")
	appendEvents(t, s, store.RunAppend{RunID: r.ID, Events: newEvents(r.ID, 1, 1, 0), OutputBytes: 6, KeptBytes: 6, HeadSeq: 1})
	bad := func(text string) []continuo.RunEvent {
		es := newEvents(r.ID, 2, 3, 0)
		es[1].Text = text
		return es
	}
	for name, a := range map[string]store.RunAppend{
		"gap":            {Events: newEvents(r.ID, 3, 4, 0)},
		"repeat":         {Events: newEvents(r.ID, 1, 2, 0)},
		"out of order":   {Events: []continuo.RunEvent{newEvents(r.ID, 3, 3, 0)[0], newEvents(r.ID, 2, 2, 0)[0]}},
		"another run's":  {Events: newEvents(other.ID, 2, 2, 0)},
		"NUL":            {Events: bad("a\x00b")},
		"invalid UTF-8":  {Events: bad("a\xffb")},
		"drop from 0":    {Events: newEvents(r.ID, 2, 2, 0), DropFrom: 0, DropThrough: 1},
		"drop backwards": {Events: newEvents(r.ID, 2, 2, 0), DropFrom: 2, DropThrough: 1},
	} {
		a.RunID, a.PrevSeq, a.OutputBytes = r.ID, 1, 99
		if err := s.Write(ctx, func(tx store.Tx) error { return tx.RunAppend(ctx, a) }); err == nil {
			t.Errorf("RunAppend of %s events succeeded", name)
		}
	}
	if got := mustRun(t, s, r.ID); got.EventSeq != 1 || got.OutputBytes != 6 {
		t.Errorf("run after the refused appends: event_seq %d, output_bytes %d; want 1, 6", got.EventSeq, got.OutputBytes)
	}
	sameList(t, "events after the refused appends", runEvents(t, s, store.RunEventsParams{RunID: r.ID, MaxBytes: 1000}),
		newEvents(r.ID, 1, 1, 0), normEvent)
}

// After its inserts an append deletes DropFrom..DropThrough (it may drop
// events it just inserted); the run's counters say what it was told.
func testRunAppendDrop(t *testing.T, s store.Store) {
	f := Setup(t, s, "alpha")
	r := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test", runRunning)
	keep := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "lint", runRunning)
	appendEvents(t, s, store.RunAppend{RunID: keep.ID, Events: newEvents(keep.ID, 1, 10, 0)})
	appendEvents(t, s, store.RunAppend{RunID: r.ID, Events: newEvents(r.ID, 1, 6, 0), HeadSeq: 2})
	appendEvents(t, s, store.RunAppend{RunID: r.ID, PrevSeq: 6, Events: newEvents(r.ID, 7, 9, 0),
		OutputBytes: 54, KeptBytes: 24, HeadSeq: 2, DroppedThrough: 6, DropFrom: 3, DropThrough: 6})
	all := func(id string) []int64 {
		return eventSeqs(runEvents(t, s, store.RunEventsParams{RunID: id, MaxBytes: 1 << 20}))
	}
	if got, want := all(r.ID), []int64{1, 2, 7, 8, 9}; !slices.Equal(got, want) {
		t.Errorf("events after dropping 3..6 = %v, want %v", got, want)
	}
	appendEvents(t, s, store.RunAppend{RunID: r.ID, PrevSeq: 9, Events: newEvents(r.ID, 10, 11, 0),
		OutputBytes: 66, KeptBytes: 24, HeadSeq: 2, DroppedThrough: 9, DropFrom: 7, DropThrough: 10})
	if got, want := all(r.ID), []int64{1, 2, 11}; !slices.Equal(got, want) {
		t.Errorf("events after dropping 7..10 = %v, want %v", got, want)
	}
	got := mustRun(t, s, r.ID)
	if got.EventSeq != 11 || got.DroppedThrough != 9 || got.HeadSeq != 2 || got.KeptBytes != 24 || got.OutputBytes != 66 || got.Revision != 1 {
		t.Errorf("run after the drops: %+v", got)
	}
	if got, want := all(keep.ID), seqRange(1, 10); !slices.Equal(got, want) {
		t.Errorf("the other run's events = %v, want %v", got, want)
	}
}

// Appenders racing from one seq: one append is kept, every other is
// ErrStale (never ErrConflict on an event's key: the run's row is updated
// first), and the log holds the winner's events only.
func testRunAppendConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	r := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test", runRunning)
	errs := parallel(8, func(i int) error {
		return s.Write(ctx, func(tx store.Tx) error {
			es := newEvents(r.ID, 1, 2, 0)
			es[0].Text = fmt.Sprintf("appender %d", i)
			return tx.RunAppend(ctx, store.RunAppend{RunID: r.ID, Events: es, OutputBytes: int64(i)})
		})
	})
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner < 0:
			winner = i
		case err == nil:
			t.Errorf("appends %d and %d both succeeded", winner, i)
		case !errors.Is(err, store.ErrStale):
			t.Errorf("append %d: %v, want nil or ErrStale", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no append succeeded")
	}
	got := runEvents(t, s, store.RunEventsParams{RunID: r.ID, MaxBytes: 1000})
	if run := mustRun(t, s, r.ID); len(got) != 2 || got[0].Text != fmt.Sprintf("appender %d", winner) || run.EventSeq != 2 || run.OutputBytes != int64(winner) {
		t.Errorf("after the race: events %+v, event_seq %d, output_bytes %d; want the winner's (%d)", got, run.EventSeq, run.OutputBytes, winner)
	}
}

// RunEvents pages by seq: after AfterSeq, at most Limit (≤ 0: 100), over
// dropped events; an unknown run has none; MaxBytes must be given.
func testRunEvents(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	r := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test", runRunning)
	appendEvents(t, s, store.RunAppend{RunID: r.ID, Events: newEvents(r.ID, 1, 130, 0), DropFrom: 11, DropThrough: 20})
	big := 1 << 20
	for _, tc := range []struct {
		p    store.RunEventsParams
		want []int64
	}{
		{store.RunEventsParams{Limit: 5}, seqRange(1, 5)},
		{store.RunEventsParams{AfterSeq: 3, Limit: 4}, seqRange(4, 7)},
		{store.RunEventsParams{AfterSeq: 8, Limit: 4}, []int64{9, 10, 21, 22}},
		{store.RunEventsParams{AfterSeq: 12, Limit: 2}, []int64{21, 22}},
		{store.RunEventsParams{}, append(seqRange(1, 10), seqRange(21, 110)...)},
		{store.RunEventsParams{Limit: -1, AfterSeq: 100}, seqRange(101, 130)},
		{store.RunEventsParams{AfterSeq: 130}, nil},
		{store.RunEventsParams{AfterSeq: 500}, nil},
	} {
		tc.p.RunID, tc.p.MaxBytes = r.ID, big
		if got := eventSeqs(runEvents(t, s, tc.p)); !slices.Equal(got, tc.want) {
			t.Errorf("RunEvents(%+v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := runEvents(t, s, store.RunEventsParams{RunID: continuo.NewID(continuo.PrefixRun, Base), MaxBytes: big}); len(got) != 0 {
		t.Errorf("RunEvents of an unknown run = %v, want none", eventSeqs(got))
	}
	for _, maxBytes := range []int{0, -1} {
		_, err := read(t, s, func(tx store.Tx) ([]continuo.RunEvent, error) {
			return tx.RunEvents(ctx, store.RunEventsParams{RunID: r.ID, MaxBytes: maxBytes})
		})
		if err == nil {
			t.Errorf("RunEvents with MaxBytes %d succeeded", maxBytes)
		}
	}
}

// RunEvents stops before the event that would take the page's text past
// MaxBytes, but always returns the first, however long.
func testRunEventsMaxBytes(t *testing.T, s store.Store) {
	f := Setup(t, s, "alpha")
	r := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test", runRunning)
	events := newEvents(r.ID, 1, 6, 10) // 10 bytes each
	events[3].Text = strings.Repeat("x", 100)
	events[4].Text = ""
	appendEvents(t, s, store.RunAppend{RunID: r.ID, Events: events})
	for _, tc := range []struct {
		after int64
		max   int
		want  []int64
	}{
		{0, 30, []int64{1, 2, 3}},
		{0, 29, []int64{1, 2}},
		{0, 10, []int64{1}},
		{0, 1, []int64{1}}, // the first always
		{2, 10, []int64{3}},
		{3, 50, []int64{4}},        // 100 bytes: alone, past MaxBytes
		{3, 110, []int64{4, 5, 6}}, // the empty one costs nothing
		{4, 10, []int64{5, 6}},
		{0, 1 << 20, seqRange(1, 6)},
	} {
		p := store.RunEventsParams{RunID: r.ID, AfterSeq: tc.after, MaxBytes: tc.max}
		if got := eventSeqs(runEvents(t, s, p)); !slices.Equal(got, tc.want) {
			t.Errorf("RunEvents(after %d, max %d bytes) = %v, want %v", tc.after, tc.max, got, tc.want)
		}
	}
}

// EvidenceLatest returns a session's newest perCheck evidence of each
// check (≤ 0: 1), by check name, then newest first (created_at, then run
// ID), each with its run; other sessions' evidence is not in it.
func testEvidenceLatest(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	other := Session(t, s, f.Group.ID, f.Project.ID, "other")
	at := func(sec int) time.Time { return Base.Add(time.Duration(sec) * time.Second) }
	var runs []*continuo.Run
	for range 6 {
		runs = append(runs, CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test", runEnded(continuo.RunSucceeded)))
	}
	lint := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "lint", runRunning, func(r *continuo.Run) { r.SessionID = other.ID })
	ev := func(session, check string, r *continuo.Run, sec int) continuo.Evidence {
		return continuo.Evidence{SessionID: session, Check: check, RunID: r.ID, CreatedAt: at(sec)}
	}
	all := []continuo.Evidence{
		ev(f.Session.ID, "test", runs[0], 1),
		ev(f.Session.ID, "test", runs[1], 5),
		ev(f.Session.ID, "test", runs[2], 3),
		ev(f.Session.ID, "test", runs[3], 5), // same time as runs[1]: the higher run ID first
		ev(f.Session.ID, "lint", lint, 2),    // a run another session started
		ev(f.Session.ID, "b-check", runs[4], 0),
		ev(other.ID, "test", runs[5], 9),
		ev(other.ID, "lint", lint, 9),
	}
	MustWrite(t, s, func(tx store.Tx) error {
		for _, e := range all {
			if err := tx.EvidenceAdd(ctx, e); err != nil {
				return err
			}
		}
		return nil
	})
	with := func(e continuo.Evidence) store.EvidenceRun {
		for _, r := range append(slices.Clone(runs), lint) {
			if r.ID == e.RunID {
				return store.EvidenceRun{Evidence: e, Run: *r}
			}
		}
		panic("no run " + e.RunID)
	}
	want := func(es ...continuo.Evidence) []store.EvidenceRun {
		var out []store.EvidenceRun
		for _, e := range es {
			out = append(out, with(e))
		}
		return out
	}
	sameList(t, "EvidenceLatest(2)", latestEvidence(t, s, f.Session.ID, 2), want(all[5], all[4], all[3], all[1]), normEvidenceRun)
	sameList(t, "EvidenceLatest(1)", latestEvidence(t, s, f.Session.ID, 1), want(all[5], all[4], all[3]), normEvidenceRun)
	sameList(t, "EvidenceLatest(0)", latestEvidence(t, s, f.Session.ID, 0), want(all[5], all[4], all[3]), normEvidenceRun)
	sameList(t, "EvidenceLatest(10)", latestEvidence(t, s, f.Session.ID, 10),
		want(all[5], all[4], all[3], all[1], all[2], all[0]), normEvidenceRun)
	sameList(t, "EvidenceLatest of the other session", latestEvidence(t, s, other.ID, 5), want(all[7], all[6]), normEvidenceRun)
	if got := latestEvidence(t, s, continuo.NewID(continuo.PrefixSession, Base), 5); len(got) != 0 {
		t.Errorf("EvidenceLatest of an unknown session = %v, want none", got)
	}
}

// One session records one run once: a second time is ErrConflict and the
// Write keeps nothing.
func testEvidenceDuplicate(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	r := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test", runEnded(continuo.RunSucceeded))
	other := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "lint", runEnded(continuo.RunSucceeded))
	first := continuo.Evidence{SessionID: f.Session.ID, Check: "test", RunID: r.ID, CreatedAt: Base}
	MustWrite(t, s, func(tx store.Tx) error { return tx.EvidenceAdd(ctx, first) })
	err := s.Write(ctx, func(tx store.Tx) error {
		if err := tx.EvidenceAdd(ctx, continuo.Evidence{SessionID: f.Session.ID, Check: "lint", RunID: other.ID, CreatedAt: Base}); err != nil {
			return err
		}
		return tx.EvidenceAdd(ctx, continuo.Evidence{SessionID: f.Session.ID, Check: "again", RunID: r.ID, CreatedAt: Base.Add(time.Second)})
	})
	wantErr(t, err, store.ErrConflict, "EvidenceAdd of a run the session has evidence of")
	sameList(t, "evidence after the refused duplicate", latestEvidence(t, s, f.Session.ID, 5),
		[]store.EvidenceRun{{Evidence: first, Run: *r}}, normEvidenceRun)
}
