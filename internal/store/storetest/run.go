package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// The Run section pins store.RunTx: runs under a revision-guarded update
// (a cancel request, a lease renewal and a log append leave the revision
// alone), at most one running validation run of a check in a directory,
// their output logs appended under a guard on event_seq and read in
// bounded pages, and the evidence sessions record from them. No lease is
// the zero time; no exit code, start or end is nil (an exit code 0 is
// not nil).

func runTests() []test {
	return []test{
		{"CreateGet", testRunCreateGet},
		{"Duplicate", testRunDuplicate},
		{"Missing", testRunMissing},
		{"RunningCheckUnique", testRunRunningCheckUnique},
		{"RunningCheckUpdate", testRunRunningCheckUpdate},
		{"RunningCheckConcurrent", testRunRunningCheckConcurrent},
		{"Update", testRunUpdate},
		{"UpdateStale", testRunUpdateStale},
		{"UpdateUnknown", testRunUpdateUnknown},
		{"UpdateKeepsCancel", testRunUpdateKeepsCancel},
		{"RequestCancel", testRunRequestCancel},
		{"Renew", testRunRenew},
		{"ListFilters", testRunListFilters},
		{"ListLimitOrder", testRunListLimitOrder},
		{"Recent", testRunRecent},
		{"Append", testRunAppend},
		{"AppendStale", testRunAppendStale},
		{"AppendRefused", testRunAppendRefused},
		{"AppendDrop", testRunAppendDrop},
		{"AppendConcurrent", testRunAppendConcurrent},
		{"Events", testRunEvents},
		{"EventsMaxBytes", testRunEventsMaxBytes},
		{"EvidenceLatest", testEvidenceLatest},
		{"EvidenceDuplicate", testEvidenceDuplicate},
		{"ReadRejectsWrites", testRunReadRejectsWrites},
	}
}

// NewRun returns a queued validation run of check in dir, of group
// groupID in project projectID, in no session, at revision 1, created at
// Base. It does not touch a store.
func NewRun(groupID, projectID, dir, check string) *continuo.Run {
	return &continuo.Run{
		ID:          continuo.NewID(continuo.PrefixRun, Base),
		Kind:        continuo.RunValidation,
		State:       continuo.RunQueued,
		GroupID:     groupID,
		ProjectID:   projectID,
		Check:       check,
		Dir:         dir,
		Spec:        fmt.Sprintf(`{"command":["make",%q]}`, check),
		RequestHash: "req-" + check,
		Revision:    1,
		CreatedAt:   Base,
	}
}

// CreateRun creates a run (see NewRun); opts may change it before it is
// created.
func CreateRun(t testing.TB, s store.Store, groupID, projectID, dir, check string, opts ...func(*continuo.Run)) *continuo.Run {
	t.Helper()
	r := NewRun(groupID, projectID, dir, check)
	for _, o := range opts {
		o(r)
	}
	MustWrite(t, s, func(tx store.Tx) error { return tx.RunCreate(t.Context(), r) })
	return r
}

// runRunning makes a run running, started a second after Base.
func runRunning(r *continuo.Run) {
	at := Base.Add(time.Second)
	r.State, r.StartedAt = continuo.RunRunning, &at
}

// runEnded returns an option that ends a run (started, then ended in
// state) two seconds after Base.
func runEnded(state continuo.RunState) func(*continuo.Run) {
	return func(r *continuo.Run) {
		started, ended := Base.Add(time.Second), Base.Add(2*time.Second)
		r.State, r.StartedAt, r.EndedAt = state, &started, &ended
	}
}

// runOwned returns an option that gives a run an owner and a lease.
func runOwned(owner string, lease time.Time) func(*continuo.Run) {
	return func(r *continuo.Run) { r.Owner, r.LeaseUntil = owner, lease }
}

func getRun(t testing.TB, s store.Store, id string) (*continuo.Run, error) {
	t.Helper()
	return read(t, s, func(tx store.Tx) (*continuo.Run, error) { return tx.RunGet(t.Context(), id) })
}

func mustRun(t testing.TB, s store.Store, id string) continuo.Run {
	t.Helper()
	r, err := getRun(t, s, id)
	noErr(t, err, "RunGet")
	return *r
}

func listRuns(t testing.TB, s store.Store, p store.RunListParams) []continuo.Run {
	t.Helper()
	return listOf(t, s, "RunList", store.Tx.RunList, p)
}

func runIDs(rs []continuo.Run) []string {
	return idsOf(rs, func(r continuo.Run) string { return r.ID })
}

func normRun(r continuo.Run) continuo.Run {
	r.CreatedAt, r.LeaseUntil = trunc(r.CreatedAt), trunc(r.LeaseUntil)
	r.StartedAt, r.EndedAt = truncPtr(r.StartedAt), truncPtr(r.EndedAt)
	return r
}

// Every field round-trips: set and unset optional ones, an exit code 0
// (not nil), no lease (the zero time), times at millisecond precision.
func testRunCreateGet(t *testing.T, s store.Store) {
	f := Setup(t, s, "alpha")
	zero, lease := 0, Base.Add(time.Minute+1500*time.Microsecond)
	failed := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test", runEnded(continuo.RunFailed), runOwned("host-1 7", lease),
		func(r *continuo.Run) {
			r.SessionID, r.SourceHead, r.SourceTree, r.Proc, r.CancelRequested = f.Session.ID, "abc", "tree", "host-1 7 99", true
			r.SourceStat = `{"paths":["big.bin"],"total":1}`
			r.ExitCode, r.ErrorKind, r.Revision, r.CreatedAt = &zero, "timeout \"ü\"", 4, Base.Add(1500*time.Microsecond)
			r.EventSeq, r.OutputBytes, r.KeptBytes, r.HeadSeq, r.DroppedThrough = 9, 900, 500, 2, 5
		})
	agent := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "", runRunning, func(r *continuo.Run) {
		r.Kind, r.ProviderID, r.Spec, r.RequestHash, r.Usage = continuo.RunAgent, "claude", `{"prompt":"sha256:x"}`, "", `{"output_tokens":3}`
	})
	queued := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "lint")
	for _, want := range []*continuo.Run{failed, agent, queued} {
		got := mustRun(t, s, want.ID)
		same(t, "run "+want.ID, got, *want, normRun)
	}
	got := mustRun(t, s, failed.ID)
	if got.ExitCode == nil || *got.ExitCode != 0 {
		t.Errorf("exit code 0 read back as %v", got.ExitCode)
	}
	if !got.CreatedAt.Equal(Base.Add(time.Millisecond)) || got.CreatedAt.Location() != time.UTC ||
		!got.LeaseUntil.Equal(lease.Truncate(time.Millisecond)) || got.LeaseUntil.Location() != time.UTC {
		t.Errorf("CreatedAt %v, LeaseUntil %v; want milliseconds kept, in UTC", got.CreatedAt, got.LeaseUntil)
	}
	got = mustRun(t, s, queued.ID)
	if !got.LeaseUntil.IsZero() || got.ExitCode != nil || got.StartedAt != nil || got.EndedAt != nil {
		t.Errorf("a queued run read back lease %v, exit code %v, start %v, end %v; want none", got.LeaseUntil, got.ExitCode,
			showTime(got.StartedAt), showTime(got.EndedAt))
	}
}

// An existing ID is ErrConflict, and the Write that met it keeps nothing.
func testRunDuplicate(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	r := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test")
	other := NewRun(f.Group.ID, f.Project.ID, "/src/a", "lint")
	dup := NewRun(f.Group.ID, f.Project.ID, "/src/b", "vet")
	dup.ID = r.ID
	err := s.Write(ctx, func(tx store.Tx) error {
		if err := tx.RunCreate(ctx, other); err != nil {
			return err
		}
		return tx.RunCreate(ctx, dup)
	})
	wantErr(t, err, store.ErrConflict, "RunCreate of an existing ID")
	same(t, "run after the refused duplicate", mustRun(t, s, r.ID), *r, normRun)
	_, err = getRun(t, s, other.ID)
	wantErr(t, err, store.ErrNotFound, "RunGet of a run created in the failed Write")
}

func testRunMissing(t *testing.T, s store.Store) {
	_, err := getRun(t, s, continuo.NewID(continuo.PrefixRun, Base))
	wantErr(t, err, store.ErrNotFound, "RunGet of an unknown ID")
}

// One validation run of a check in a directory runs at a time: a second
// is ErrConflict. Queued ones, agent runs, another directory or another
// check are no conflict, and once the first ends the check may run again.
func testRunRunningCheckUnique(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	first := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test", runRunning)
	second := NewRun(f.Group.ID, f.Project.ID, "/src/a", "test")
	runRunning(second)
	err := s.Write(ctx, func(tx store.Tx) error { return tx.RunCreate(ctx, second) })
	wantErr(t, err, store.ErrConflict, "RunCreate of a second running validation run of one check in one directory")
	_, err = getRun(t, s, second.ID)
	wantErr(t, err, store.ErrNotFound, "RunGet of the refused run")

	CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test")                                  // queued
	CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test", runEnded(continuo.RunSucceeded)) // ended
	CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/b", "test", runRunning)                      // another directory
	CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "lint", runRunning)                      // another check
	agent := func(r *continuo.Run) { r.Kind = continuo.RunAgent }
	CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test", agent, runRunning) // not a validation run
	CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test", agent, runRunning)

	done := *first
	runEnded(continuo.RunSucceeded)(&done)
	done.Revision = 2
	MustWrite(t, s, func(tx store.Tx) error { return updateRun(ctx, tx, &done, 1) })
	MustWrite(t, s, func(tx store.Tx) error { return tx.RunCreate(ctx, second) })
	running := listRuns(t, s, store.RunListParams{Dir: "/src/a", Check: "test", Kind: continuo.RunValidation,
		States: []continuo.RunState{continuo.RunRunning}})
	if want := []string{second.ID}; !slices.Equal(runIDs(running), want) {
		t.Errorf("running validation runs of test in /src/a = %v, want %v", runIDs(running), want)
	}
}

// RunUpdate meets the same index: making a second validation run of a
// check in a directory running is ErrConflict, and changes nothing.
func testRunRunningCheckUpdate(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	a := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test")
	b := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test")
	start := func(r *continuo.Run) *continuo.Run {
		next := *r
		runRunning(&next)
		next.Revision = 2
		return &next
	}
	MustWrite(t, s, func(tx store.Tx) error { return updateRun(ctx, tx, start(a), 1) })
	err := s.Write(ctx, func(tx store.Tx) error { return updateRun(ctx, tx, start(b), 1) })
	wantErr(t, err, store.ErrConflict, "RunUpdate making a second validation run of one check in one directory running")
	same(t, "the run refused a start", mustRun(t, s, b.ID), *b, normRun)
	same(t, "the running run", mustRun(t, s, a.ID), *start(a), normRun)
}

// Replicas racing to start one check in one directory: one run starts,
// every other start is ErrConflict (after a retry, on PostgreSQL), and
// none is lost as an error of another kind.
func testRunRunningCheckConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	errs := parallel(8, func(int) error {
		r := NewRun(f.Group.ID, f.Project.ID, "/src/a", "test")
		runRunning(r)
		return s.Write(ctx, func(tx store.Tx) error { return tx.RunCreate(ctx, r) })
	})
	started := 0
	for i, err := range errs {
		switch {
		case err == nil:
			started++
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("start %d: %v, want nil or ErrConflict", i, err)
		}
	}
	if n := len(listRuns(t, s, store.RunListParams{})); started != 1 || n != 1 {
		t.Errorf("%d starts succeeded and %d runs exist, want 1 and 1", started, n)
	}
}

// RunUpdate replaces the state, owner, lease, proc, cancel request, exit
// code, error kind, usage, revision, start and end; everything else stays
// as created (the log counters change only by RunAppend). It must raise
// the revision.
func testRunUpdate(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	r := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test", func(r *continuo.Run) { r.SessionID = f.Session.ID })
	code := 3
	next := *r
	next.Kind, next.GroupID, next.SessionID, next.Check, next.ProviderID = continuo.RunAgent, "grp_x", "", "other", "p"
	next.Dir, next.Spec, next.RequestHash, next.SourceHead, next.SourceTree = "/elsewhere", "{}", "h", "head", "tree"
	next.SourceStat = `{"paths":["x"],"total":1}`
	next.EventSeq, next.OutputBytes, next.KeptBytes, next.HeadSeq, next.DroppedThrough = 5, 5, 5, 5, 5
	next.CreatedAt = Base.Add(time.Hour)
	runRunning(&next)
	next.Owner, next.LeaseUntil, next.Proc, next.CancelRequested = "host 1", Base.Add(time.Minute), "host 1 2", true
	next.ExitCode, next.ErrorKind, next.Usage, next.Revision = &code, "exit", `{"n":1}`, 2
	MustWrite(t, s, func(tx store.Tx) error { return updateRun(ctx, tx, &next, 1) })
	want := *r
	want.State, want.Owner, want.LeaseUntil, want.Proc, want.CancelRequested = next.State, next.Owner, next.LeaseUntil, next.Proc, true
	want.ExitCode, want.ErrorKind, want.Usage, want.Revision = next.ExitCode, next.ErrorKind, next.Usage, 2
	want.StartedAt, want.EndedAt = next.StartedAt, next.EndedAt
	same(t, "run after RunUpdate", mustRun(t, s, r.ID), want, normRun)

	// Optional fields go back to none.
	back := want
	back.Owner, back.LeaseUntil, back.Proc, back.ExitCode, back.ErrorKind, back.Usage = "", time.Time{}, "", nil, "", ""
	back.EndedAt, back.Revision = nil, 3
	MustWrite(t, s, func(tx store.Tx) error { return updateRun(ctx, tx, &back, 2) })
	same(t, "run after clearing its optional fields", mustRun(t, s, r.ID), back, normRun)

	kept := back
	if err := s.Write(ctx, func(tx store.Tx) error { return updateRun(ctx, tx, &kept, 3) }); err == nil {
		t.Error("RunUpdate that keeps the revision succeeded")
	}
	if got := mustRun(t, s, r.ID); got.Revision != 3 {
		t.Errorf("run after the refused update: revision %d, want 3", got.Revision)
	}
}

// A guarded update naming a revision the run has left is ErrStale and
// changes nothing.
func testRunUpdateStale(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	r := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test")
	first := *r
	runRunning(&first)
	first.Owner, first.Revision = "host 1", 2
	MustWrite(t, s, func(tx store.Tx) error { return updateRun(ctx, tx, &first, 1) })
	late := *r
	runEnded(continuo.RunCancelled)(&late)
	late.Revision = 2
	err := s.Write(ctx, func(tx store.Tx) error { return updateRun(ctx, tx, &late, 1) })
	wantErr(t, err, store.ErrStale, "RunUpdate from revision 1 after revision 2")
	same(t, "run after the stale update", mustRun(t, s, r.ID), first, normRun)
}

func testRunUpdateUnknown(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	r := NewRun(f.Group.ID, f.Project.ID, "/src/a", "test")
	r.Revision = 2
	err := s.Write(ctx, func(tx store.Tx) error { return updateRun(ctx, tx, r, 1) })
	wantErr(t, err, store.ErrNotFound, "RunUpdate of an unknown run")
}

// A cancel request made between a read and an update computed from it
// survives the update: RunUpdate never takes one back.
func testRunUpdateKeepsCancel(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	r := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test")
	read := mustRun(t, s, r.ID)
	MustWrite(t, s, func(tx store.Tx) error { _, err := tx.RunRequestCancel(ctx, r.ID); return err })
	next := read
	runRunning(&next)
	next.Revision = 2
	MustWrite(t, s, func(tx store.Tx) error { return updateRun(ctx, tx, &next, 1) })
	if got := mustRun(t, s, r.ID); !got.CancelRequested || got.State != continuo.RunRunning {
		t.Errorf("run after an update read before the cancel request: cancel %v, state %s; want true, running", got.CancelRequested, got.State)
	}
}

// RunRequestCancel marks a queued or running run (again: still true) and
// reports it; an ended or unknown run is false and unchanged. The
// revision never moves.
func testRunRequestCancel(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	queued := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test")
	running := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "lint", runRunning)
	ended := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "vet", runEnded(continuo.RunSucceeded))
	cancel := func(id string) bool {
		var ok bool
		MustWrite(t, s, func(tx store.Tx) error {
			var err error
			ok, err = tx.RunRequestCancel(ctx, id)
			return err
		})
		return ok
	}
	for _, tc := range []struct {
		name string
		id   string
		want bool
	}{
		{"queued", queued.ID, true}, {"running", running.ID, true}, {"running again", running.ID, true},
		{"ended", ended.ID, false}, {"unknown", continuo.NewID(continuo.PrefixRun, Base), false},
	} {
		if got := cancel(tc.id); got != tc.want {
			t.Errorf("RunRequestCancel of a %s run = %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, r := range []*continuo.Run{queued, running} {
		want := *r
		want.CancelRequested = true
		same(t, "cancelled "+string(r.State)+" run", mustRun(t, s, r.ID), want, normRun)
	}
	same(t, "ended run", mustRun(t, s, ended.ID), *ended, normRun)
}

// RunRenew moves the lease of the owner's runs that have not ended, and
// only theirs, and counts them; revisions stay. An empty owner is refused.
func testRunRenew(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	old, until := Base.Add(time.Minute), Base.Add(time.Hour)
	mine := []*continuo.Run{
		CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test", runOwned("me", old)),
		CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "lint", runOwned("me", old), runRunning),
	}
	ended := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "vet", runOwned("me", old), runEnded(continuo.RunTimedOut))
	theirs := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "fmt", runOwned("them", old), runRunning)
	untaken := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "doc")
	var n int64
	MustWrite(t, s, func(tx store.Tx) error {
		var err error
		n, err = tx.RunRenew(ctx, "me", until)
		return err
	})
	if n != 2 {
		t.Errorf("RunRenew renewed %d runs, want 2", n)
	}
	for _, r := range mine {
		want := *r
		want.LeaseUntil = until
		same(t, "renewed run", mustRun(t, s, r.ID), want, normRun)
	}
	for _, r := range []*continuo.Run{ended, theirs, untaken} {
		same(t, "run not renewed", mustRun(t, s, r.ID), *r, normRun)
	}
	MustWrite(t, s, func(tx store.Tx) error {
		var err error
		n, err = tx.RunRenew(ctx, "nobody", until)
		return err
	})
	if n != 0 {
		t.Errorf("RunRenew of an owner with no runs = %d, want 0", n)
	}
	if err := s.Write(ctx, func(tx store.Tx) error { _, err := tx.RunRenew(ctx, "", until); return err }); err == nil {
		t.Error("RunRenew of owner \"\" succeeded")
	}
	same(t, "untaken run after the refused renewal", mustRun(t, s, untaken.ID), *untaken, normRun)
}

// Every filter given applies; runs come by ID.
func testRunListFilters(t *testing.T, s store.Store) {
	f := Setup(t, s, "alpha")
	soon, later := Base.Add(time.Minute), Base.Add(time.Hour)
	a := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test", runOwned("me", soon), runRunning)
	b := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test")
	c := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/b", "test", runOwned("me", later), runRunning)
	d := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "lint", runOwned("them", soon), runEnded(continuo.RunFailed))
	e := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "", runOwned("me", later), runRunning,
		func(r *continuo.Run) { r.Kind, r.ProviderID = continuo.RunAgent, "claude" })
	id := func(rs ...*continuo.Run) []string {
		out := []string{}
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	running, queued := continuo.RunRunning, continuo.RunQueued
	for _, tc := range []struct {
		p    store.RunListParams
		want []string
	}{
		{store.RunListParams{}, id(a, b, c, d, e)},
		{store.RunListParams{States: []continuo.RunState{running}}, id(a, c, e)},
		{store.RunListParams{States: []continuo.RunState{queued, continuo.RunFailed}}, id(b, d)},
		{store.RunListParams{States: []continuo.RunState{continuo.RunInterrupted}}, id()},
		{store.RunListParams{Owner: "me"}, id(a, c, e)},
		{store.RunListParams{Owner: "nobody"}, id()},
		{store.RunListParams{Dir: "/src/a"}, id(a, b, d, e)},
		{store.RunListParams{Check: "test"}, id(a, b, c)},
		{store.RunListParams{Dir: "/src/a", Check: "test"}, id(a, b)},
		{store.RunListParams{Dir: "/src/a", Check: "test", States: []continuo.RunState{running}}, id(a)},
		{store.RunListParams{Kind: continuo.RunAgent}, id(e)},
		{store.RunListParams{ProviderID: "claude"}, id(e)},
		{store.RunListParams{ProviderID: "other"}, id()},
		{store.RunListParams{Kind: continuo.RunValidation, Owner: "me"}, id(a, c)},
		// No lease (b's) is before every time.
		{store.RunListParams{LeaseBefore: soon.Add(time.Millisecond)}, id(a, b, d)},
		{store.RunListParams{LeaseBefore: soon}, id(b)},
		{store.RunListParams{LeaseBefore: later.Add(time.Second), States: []continuo.RunState{running}, Owner: "me"}, id(a, c, e)},
	} {
		if got := runIDs(listRuns(t, s, tc.p)); !slices.Equal(got, tc.want) {
			t.Errorf("RunList(%+v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	sameList(t, "RunList of running runs", listRuns(t, s, store.RunListParams{States: []continuo.RunState{running}}),
		[]continuo.Run{*a, *c, *e}, normRun)
}

// Limit keeps the oldest; ≤ 0 is 100.
func testRunListLimitOrder(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	var all []string
	MustWrite(t, s, func(tx store.Tx) error {
		all = nil
		for i := range 102 {
			r := NewRun(f.Group.ID, f.Project.ID, "/src/a", fmt.Sprintf("c%d", i))
			if err := tx.RunCreate(ctx, r); err != nil {
				return err
			}
			all = append(all, r.ID)
		}
		return nil
	})
	for _, tc := range []struct {
		limit int
		want  []string
	}{{3, all[:3]}, {0, all[:100]}, {-1, all[:100]}, {500, all}} {
		if got := runIDs(listRuns(t, s, store.RunListParams{Limit: tc.limit})); !slices.Equal(got, tc.want) {
			t.Errorf("RunList(Limit %d): %d runs, want the oldest %d in ID order", tc.limit, len(got), len(tc.want))
		}
	}
}

// Inside Read every RunTx write fails and changes nothing.
func testRunReadRejectsWrites(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	r := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test", runOwned("me", Base))
	wantRefusedInRead(t, s, map[string]func(tx store.Tx) error{
		"RunCreate": func(tx store.Tx) error { return tx.RunCreate(ctx, NewRun(f.Group.ID, f.Project.ID, "/src/a", "lint")) },
		"RunUpdate": func(tx store.Tx) error {
			next := *r
			next.Revision = 2
			next.Owner = "x"
			return updateRun(ctx, tx, &next, 1)
		},
		"RunRequestCancel": func(tx store.Tx) error { _, err := tx.RunRequestCancel(ctx, r.ID); return err },
		"RunRenew":         func(tx store.Tx) error { _, err := tx.RunRenew(ctx, "me", Base.Add(time.Hour)); return err },
		"RunAppend": func(tx store.Tx) error {
			return tx.RunAppend(ctx, store.RunAppend{RunID: r.ID, Events: []continuo.RunEvent{{Seq: 1, Kind: continuo.EventOutput, Text: "x", At: Base}}})
		},
		"EvidenceAdd": func(tx store.Tx) error {
			return tx.EvidenceAdd(ctx, continuo.Evidence{SessionID: f.Session.ID, Check: "test", RunID: r.ID, CreatedAt: Base})
		},
	})
	same(t, "run after the refused writes", mustRun(t, s, r.ID), *r, normRun)
	if got := listRuns(t, s, store.RunListParams{}); len(got) != 1 {
		t.Errorf("runs after the refused writes: %v, want only %s", runIDs(got), r.ID)
	}
	if got := runEvents(t, s, store.RunEventsParams{RunID: r.ID, MaxBytes: 100}); len(got) != 0 {
		t.Errorf("events after the refused append: %v", got)
	}
	if got := latestEvidence(t, s, f.Session.ID, 5); len(got) != 0 {
		t.Errorf("evidence after the refused add: %v", got)
	}
}
