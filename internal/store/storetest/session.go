package storetest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

func sessionRefTests() []test {
	return []test{
		{"Sequence", testRefSequence},
		{"PerGroup", testRefPerGroup},
		{"UnknownGroup", testRefUnknownGroup},
		{"RolledBack", testRefRolledBack},
		{"Concurrent", testRefConcurrent},
	}
}

// nextRef reserves one reference of groupID in a Write of its own.
func nextRef(t *testing.T, s store.Store, groupID string) int64 {
	t.Helper()
	ctx := t.Context()
	var n int64
	MustWrite(t, s, func(tx store.Tx) (err error) {
		n, err = tx.SessionRefNext(ctx, groupID)
		return err
	})
	return n
}

func testRefSequence(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := Group(t, s, "alpha")
	for want := int64(1); want <= 3; want++ {
		if got := nextRef(t, s, g.ID); got != want {
			t.Errorf("SessionRefNext #%d = %d, want %d", want, got, want)
		}
	}
	// Several reservations in one Write continue the sequence.
	var got []int64
	MustWrite(t, s, func(tx store.Tx) error {
		for range 2 {
			n, err := tx.SessionRefNext(ctx, g.ID)
			if err != nil {
				return err
			}
			got = append(got, n)
		}
		return nil
	})
	if !slices.Equal(got, []int64{4, 5}) {
		t.Errorf("two SessionRefNext in one Write = %v, want [4 5]", got)
	}
}

func testRefPerGroup(t *testing.T, s store.Store) {
	g1, g2 := Group(t, s, "alpha"), Group(t, s, "bravo")
	seq := []struct {
		g    *continuo.Group
		want int64
	}{{g1, 1}, {g1, 2}, {g2, 1}, {g1, 3}, {g2, 2}}
	for i, step := range seq {
		if got := nextRef(t, s, step.g.ID); got != step.want {
			t.Errorf("step %d: SessionRefNext(%s) = %d, want %d", i, step.g.Name, got, step.want)
		}
	}
}

func testRefUnknownGroup(t *testing.T, s store.Store) {
	ctx := t.Context()
	err := s.Write(ctx, func(tx store.Tx) error {
		_, err := tx.SessionRefNext(ctx, continuo.NewID(continuo.PrefixGroup, Base))
		return err
	})
	wantErr(t, err, store.ErrNotFound, "SessionRefNext of an unknown group")
}

// testRefRolledBack pins what happens to a reference reserved by a Write
// that fails. The contract is that a reference is never seen twice: the
// session of the failed Write never becomes visible, and the references of
// sessions that are created stay unique and increasing. Whether the
// reserved number is burnt or handed out again is left to the driver: the
// SQLite driver rolls the reservation back with the Write's savepoint, so the
// next Write gets the same number again, which is harmless only because
// nothing that carried the number was ever visible.
func testRefRolledBack(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := Group(t, s, "alpha")
	p := Project(t, s, "web")
	s1 := Session(t, s, g.ID, p.ID, "one")
	s2 := Session(t, s, g.ID, p.ID, "two")
	if s1.Ref != 1 || s2.Ref != 2 {
		t.Fatalf("refs of the first two sessions = %d, %d; want 1, 2", s1.Ref, s2.Ref)
	}

	boom := errors.New("boom")
	var lost *continuo.Session
	err := s.Write(ctx, func(tx store.Tx) error {
		n, err := tx.SessionRefNext(ctx, g.ID)
		if err != nil {
			return err
		}
		lost = NewSession(g.ID, p.ID, n, "lost")
		if err := tx.SessionCreate(ctx, lost); err != nil {
			return err
		}
		return boom
	})
	wantErr(t, err, boom, "failing Write")
	if lost == nil {
		t.Fatal("the failing Write did not reserve a reference")
	}
	if lost.Ref != 3 {
		t.Errorf("reference reserved after 1 and 2 = %d, want 3", lost.Ref)
	}
	_, err = read(t, s, func(tx store.Tx) (*continuo.Session, error) { return tx.SessionGet(ctx, lost.ID) })
	wantErr(t, err, store.ErrNotFound, "SessionGet of the rolled-back session")
	_, err = read(t, s, func(tx store.Tx) (*continuo.Session, error) { return tx.SessionGetByRef(ctx, g.ID, lost.Ref) })
	wantErr(t, err, store.ErrNotFound, "SessionGetByRef of the rolled-back reference")

	s3 := Session(t, s, g.ID, p.ID, "three")
	s4 := Session(t, s, g.ID, p.ID, "four")
	if s3.Ref <= s2.Ref || s4.Ref <= s3.Ref {
		t.Errorf("refs of created sessions = %d, %d, %d, %d; want strictly increasing", s1.Ref, s2.Ref, s3.Ref, s4.Ref)
	}
	if s3.Ref == lost.Ref {
		t.Logf("the reference %d of the rolled-back Write was handed out again (to a session created later); it was never visible", lost.Ref)
	} else {
		t.Logf("the reference %d of the rolled-back Write was burnt; the next session got %d", lost.Ref, s3.Ref)
	}

	list, total, err := read2(t, s, func(tx store.Tx) ([]continuo.Session, int64, error) {
		return tx.SessionList(ctx, store.SessionListParams{GroupID: g.ID, ProjectID: p.ID, Limit: 100})
	})
	noErr(t, err, "SessionList")
	if total != 4 || len(list) != 4 {
		t.Fatalf("SessionList: %d sessions, total %d; want 4, 4", len(list), total)
	}
	seen := map[int64]string{}
	for _, sess := range list {
		if prev, dup := seen[sess.Ref]; dup {
			t.Errorf("ref %d is carried by both %s and %s", sess.Ref, prev, sess.Title)
		}
		seen[sess.Ref] = sess.Title
		if sess.ID == lost.ID {
			t.Errorf("the rolled-back session %s is listed", sess.ID)
		}
	}
}

// testRefConcurrent reserves and creates sessions from concurrent Writes:
// every one gets a distinct reference.
func testRefConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := Group(t, s, "alpha")
	p := Project(t, s, "web")
	const n = 32
	refs := make([]int64, n)
	errs := parallel(n, func(i int) error {
		return s.Write(ctx, func(tx store.Tx) error {
			ref, err := tx.SessionRefNext(ctx, g.ID)
			if err != nil {
				return err
			}
			refs[i] = ref
			return tx.SessionCreate(ctx, NewSession(g.ID, p.ID, ref, fmt.Sprintf("s%d", i)))
		})
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("Write %d: %v", i, err)
		}
	}
	sorted := slices.Clone(refs)
	slices.Sort(sorted)
	for i := range sorted {
		if sorted[i] != int64(i+1) {
			t.Fatalf("refs of %d concurrently created sessions = %v, want 1…%d each once", n, sorted, n)
		}
	}
}

// read2 is read for functions with two results.
func read2[A, B any](t testing.TB, s store.Store, fn func(tx store.Tx) (A, B, error)) (A, B, error) {
	t.Helper()
	var a A
	var b B
	err := s.Read(t.Context(), func(tx store.Tx) error {
		var err error
		a, b, err = fn(tx)
		return err
	})
	return a, b, err
}

func sessionTests() []test {
	return []test{
		{"CreateGet", testSessionCreateGet},
		{"CreateClosed", testSessionCreateClosed},
		{"ByRef", testSessionByRef},
		{"Missing", testSessionMissing},
		{"DuplicateRef", testSessionDuplicateRef},
		{"DuplicateID", testSessionDuplicateID},
		{"SameRefOtherGroup", testSessionSameRefOtherGroup},
		{"Update", testSessionUpdate},
		{"UpdateMissing", testSessionUpdateMissing},
		{"UpdateGuard", testSessionUpdateGuard},
		{"Revision", testSessionRevision},
		{"InstructionAppend", testInstructionAppend},
		{"ListByProject", testSessionListByProject},
		{"Delete", testSessionDelete},
	}
}

func getSession(t *testing.T, s store.Store, id string) *continuo.Session {
	t.Helper()
	return mustGet(t, s, "SessionGet", func(tx store.Tx) (*continuo.Session, error) { return tx.SessionGet(t.Context(), id) })
}

// fullSession is a session with every field set to a non-zero value.
func fullSession(groupID, projectID string, ref int64) *continuo.Session {
	sess := NewSession(groupID, projectID, ref, "full")
	sess.Mode = continuo.ModeWorktree
	sess.WorktreeBranch = "continuo/s7"
	sess.WorktreePath = "/var/lib/continuo/worktrees/web/7"
	sess.RootInstr = "build the thing\nwith two lines ✓"
	sess.LatestInstr = "now finish it"
	sess.Instructions = 2
	sess.Revision = 5
	sess.MessageSeq = 9
	sess.Summary = "half done"
	sess.StartHead = "0123456789abcdef0123456789abcdef01234567"
	sess.Counts = continuo.Counts{Decisions: 1, Progress: 2, OpenTodos: 3, OpenRisks: 4, OpenQuestions: 5, OpenGuidance: 6, Messages: 9,
		SupersededDecisions: 7, ResolvedQuestions: 8}
	sess.CreatedAt = Base.Add(time.Second)
	sess.UpdatedAt = Base.Add(time.Hour + 7*time.Millisecond)
	return sess
}

func testSessionCreateGet(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := Group(t, s, "alpha")
	p := Project(t, s, "web")
	var want *continuo.Session
	MustWrite(t, s, func(tx store.Tx) error {
		ref, err := tx.SessionRefNext(ctx, g.ID)
		if err != nil {
			return err
		}
		want = fullSession(g.ID, p.ID, ref)
		if err := tx.SessionCreate(ctx, want); err != nil {
			return err
		}
		// A Write sees its own insert.
		got, err := tx.SessionGet(ctx, want.ID)
		if err != nil {
			return fmt.Errorf("SessionGet inside the creating Write: %w", err)
		}
		same(t, "SessionGet inside the creating Write", *got, *want, normSession)
		return nil
	})
	same(t, "SessionGet", *getSession(t, s, want.ID), *want, normSession)

	plain := Session(t, s, g.ID, p.ID, "plain")
	got := getSession(t, s, plain.ID)
	same(t, "SessionGet of a plain session", *got, *plain, normSession)
	if got.ClosedAt != nil {
		t.Errorf("ClosedAt of an active session = %s, want nil", showTime(got.ClosedAt))
	}
}

func testSessionCreateClosed(t *testing.T, s store.Store) {
	g := Group(t, s, "alpha")
	p := Project(t, s, "web")
	closed := Base.Add(2*time.Hour + 3*time.Millisecond)
	sess := Session(t, s, g.ID, p.ID, "done", func(x *continuo.Session) {
		x.Lifecycle = continuo.LifecycleClosed
		x.ClosedAt = &closed
		x.UpdatedAt = closed
	})
	got := getSession(t, s, sess.ID)
	same(t, "closed session", *got, *sess, normSession)
}

func testSessionByRef(t *testing.T, s store.Store) {
	ctx := t.Context()
	g1, g2 := Group(t, s, "alpha"), Group(t, s, "bravo")
	p := Project(t, s, "web")
	a1 := Session(t, s, g1.ID, p.ID, "a1")
	a2 := Session(t, s, g1.ID, p.ID, "a2")
	b1 := Session(t, s, g2.ID, p.ID, "b1")
	for _, want := range []*continuo.Session{a1, a2, b1} {
		got := mustGet(t, s, "SessionGetByRef", func(tx store.Tx) (*continuo.Session, error) {
			return tx.SessionGetByRef(ctx, want.GroupID, want.Ref)
		})
		same(t, "SessionGetByRef "+continuo.SessionRef(want.Ref), *got, *want, normSession)
	}
	_, err := read(t, s, func(tx store.Tx) (*continuo.Session, error) { return tx.SessionGetByRef(ctx, g2.ID, a2.Ref) })
	wantErr(t, err, store.ErrNotFound, "SessionGetByRef of a ref only another group has")
	_, err = read(t, s, func(tx store.Tx) (*continuo.Session, error) { return tx.SessionGetByRef(ctx, g1.ID, 99) })
	wantErr(t, err, store.ErrNotFound, "SessionGetByRef of an unused ref")
}

func testSessionMissing(t *testing.T, s store.Store) {
	ctx := t.Context()
	id := continuo.NewID(continuo.PrefixSession, Base)
	_, err := read(t, s, func(tx store.Tx) (*continuo.Session, error) { return tx.SessionGet(ctx, id) })
	wantErr(t, err, store.ErrNotFound, "SessionGet of an unknown ID")
	_, err = read(t, s, func(tx store.Tx) (int64, error) { return tx.SessionRevision(ctx, id) })
	wantErr(t, err, store.ErrNotFound, "SessionRevision of an unknown ID")
	_, err = read(t, s, func(tx store.Tx) (*continuo.Session, error) {
		return tx.SessionGetByRef(ctx, continuo.NewID(continuo.PrefixGroup, Base), 1)
	})
	wantErr(t, err, store.ErrNotFound, "SessionGetByRef of an unknown group")
}

func testSessionDuplicateRef(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := Group(t, s, "alpha")
	p := Project(t, s, "web")
	first := Session(t, s, g.ID, p.ID, "first")
	dup := NewSession(g.ID, p.ID, first.Ref, "dup")
	err := s.Write(ctx, func(tx store.Tx) error { return tx.SessionCreate(ctx, dup) })
	wantErr(t, err, store.ErrConflict, "SessionCreate with a ref the group already uses")
	_, err = read(t, s, func(tx store.Tx) (*continuo.Session, error) { return tx.SessionGet(ctx, dup.ID) })
	wantErr(t, err, store.ErrNotFound, "SessionGet of the refused duplicate")
}

func testSessionDuplicateID(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := Group(t, s, "alpha")
	p := Project(t, s, "web")
	first := Session(t, s, g.ID, p.ID, "first")
	dup := NewSession(g.ID, p.ID, first.Ref+1, "dup")
	dup.ID = first.ID
	err := s.Write(ctx, func(tx store.Tx) error { return tx.SessionCreate(ctx, dup) })
	wantErr(t, err, store.ErrConflict, "SessionCreate with a taken ID")
	same(t, "session after the refused duplicate", *getSession(t, s, first.ID), *first, normSession)
}

func testSessionSameRefOtherGroup(t *testing.T, s store.Store) {
	g1, g2 := Group(t, s, "alpha"), Group(t, s, "bravo")
	p := Project(t, s, "web")
	a := Session(t, s, g1.ID, p.ID, "a")
	b := Session(t, s, g2.ID, p.ID, "b")
	if a.Ref != 1 || b.Ref != 1 {
		t.Errorf("first refs of two groups = %d, %d; want 1, 1", a.Ref, b.Ref)
	}
	same(t, "session of alpha", *getSession(t, s, a.ID), *a, normSession)
	same(t, "session of bravo", *getSession(t, s, b.ID), *b, normSession)
}

func testSessionUpdate(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := Group(t, s, "alpha")
	p := Project(t, s, "web")
	orig := Session(t, s, g.ID, p.ID, "before")
	other := Session(t, s, g.ID, p.ID, "bystander")

	upd := fullSession(g.ID, p.ID, orig.Ref)
	upd.ID = orig.ID
	upd.CreatedAt = orig.CreatedAt
	upd.Title = "after"
	upd.Lifecycle = continuo.LifecycleClosed
	closed := Base.Add(3*time.Hour + 999*time.Millisecond)
	upd.ClosedAt = &closed
	upd.UpdatedAt = closed
	upd.Revision = orig.Revision + 1
	MustWrite(t, s, func(tx store.Tx) error { return tx.SessionUpdate(ctx, upd, orig.Revision) })
	got := getSession(t, s, orig.ID)
	same(t, "session after SessionUpdate", *got, *upd, normSession)

	// Only mutable fields are written: the creation time stays.
	again := *got
	again.CreatedAt = Base.Add(24 * time.Hour)
	again.Summary = "second update"
	again.Revision++
	MustWrite(t, s, func(tx store.Tx) error { return tx.SessionUpdate(ctx, &again, got.Revision) })
	got = getSession(t, s, orig.ID)
	if !sameTime(got.CreatedAt, orig.CreatedAt) {
		t.Errorf("CreatedAt after SessionUpdate = %s, want it unchanged (%s)", got.CreatedAt, orig.CreatedAt)
	}
	if got.Summary != "second update" || got.Revision != upd.Revision+1 {
		t.Errorf("second update: summary %q revision %d, want %q %d", got.Summary, got.Revision, "second update", upd.Revision+1)
	}

	// Reopening clears ClosedAt (the store does not police lifecycles; the
	// services do).
	reopened := *got
	reopened.Lifecycle = continuo.LifecycleActive
	reopened.ClosedAt = nil
	reopened.Counts = continuo.Counts{}
	reopened.Revision++
	MustWrite(t, s, func(tx store.Tx) error { return tx.SessionUpdate(ctx, &reopened, got.Revision) })
	got = getSession(t, s, orig.ID)
	same(t, "session after clearing ClosedAt and Counts", *got, reopened, normSession)

	same(t, "the other session", *getSession(t, s, other.ID), *other, normSession)
}

func testSessionUpdateMissing(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := Group(t, s, "alpha")
	p := Project(t, s, "web")
	ghost := NewSession(g.ID, p.ID, 1, "ghost")
	ghost.Revision = 2
	err := s.Write(ctx, func(tx store.Tx) error { return tx.SessionUpdate(ctx, ghost, 1) })
	wantErr(t, err, store.ErrStale, "SessionUpdate of an unknown session")
}

// testSessionUpdateGuard: an update names the revision it read; a session
// that another Write changed meanwhile is left alone (ErrStale), and an
// update that does not raise the revision is refused.
func testSessionUpdateGuard(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := Group(t, s, "alpha")
	p := Project(t, s, "web")
	orig := Session(t, s, g.ID, p.ID, "before")
	first := *orig
	first.Title, first.Revision = "first", orig.Revision+1
	MustWrite(t, s, func(tx store.Tx) error { return tx.SessionUpdate(ctx, &first, orig.Revision) })
	late := *orig
	late.Title, late.Revision = "late", orig.Revision+1
	err := s.Write(ctx, func(tx store.Tx) error { return tx.SessionUpdate(ctx, &late, orig.Revision) })
	wantErr(t, err, store.ErrStale, "SessionUpdate guarded by a revision the session no longer has")
	same(t, "session after the refused update", *getSession(t, s, orig.ID), first, normSession)

	flat := first
	flat.Title = "same revision"
	if err := s.Write(ctx, func(tx store.Tx) error { return tx.SessionUpdate(ctx, &flat, first.Revision) }); err == nil {
		t.Error("SessionUpdate that does not raise the revision was accepted")
	}
}

func testSessionRevision(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := Group(t, s, "alpha")
	p := Project(t, s, "web")
	sess := Session(t, s, g.ID, p.ID, "rev", func(x *continuo.Session) { x.Revision = 3 })
	rev := func() int64 {
		t.Helper()
		return mustGet(t, s, "SessionRevision", func(tx store.Tx) (int64, error) { return tx.SessionRevision(ctx, sess.ID) })
	}
	if got := rev(); got != 3 {
		t.Errorf("SessionRevision of a new session = %d, want 3", got)
	}
	for want := int64(4); want <= 6; want++ {
		sess.Revision = want
		sess.UpdatedAt = Base.Add(time.Duration(want) * time.Minute)
		MustWrite(t, s, func(tx store.Tx) error { return tx.SessionUpdate(ctx, sess, want-1) })
		if got := rev(); got != want {
			t.Errorf("SessionRevision after update = %d, want %d", got, want)
		}
	}
}

func testInstructionAppend(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	other := Session(t, s, f.Group.ID, f.Project.ID, "other")
	MustWrite(t, s, func(tx store.Tx) error {
		for seq := int64(1); seq <= 2; seq++ {
			if err := tx.InstructionAppend(ctx, store.Instruction{SessionID: f.Session.ID, Seq: seq,
				Text: fmt.Sprintf("instruction %d", seq), CreatedAt: Base.Add(time.Duration(seq) * time.Second)}); err != nil {
				return err
			}
		}
		// The same seq in another session is fine.
		return tx.InstructionAppend(ctx, store.Instruction{SessionID: other.ID, Seq: 1, Text: "x", CreatedAt: Base})
	})
	err := s.Write(ctx, func(tx store.Tx) error {
		return tx.InstructionAppend(ctx, store.Instruction{SessionID: f.Session.ID, Seq: 2, Text: "again", CreatedAt: Base})
	})
	wantErr(t, err, store.ErrConflict, "InstructionAppend with a seq the session already has")
}

func sessionListTests() []test {
	return []test{
		{"OrderAndTotal", testSessionListOrder},
		{"Lifecycle", testSessionListLifecycle},
		{"Paging", testSessionListPaging},
		{"Isolation", testSessionListIsolation},
		{"Empty", testSessionListEmpty},
	}
}

// listWorld is one group's sessions in one project, with other groups' and
// other projects' sessions around them.
type listWorld struct {
	g1, g2 *continuo.Group
	p1, p2 *continuo.Project
	mine   []continuo.Session // g1 in p1, in expected list order
	otherP *continuo.Session  // g1 in p2
	otherG *continuo.Session  // g2 in p1
}

func newListWorld(t *testing.T, s store.Store) *listWorld {
	t.Helper()
	w := &listWorld{g1: Group(t, s, "alpha"), g2: Group(t, s, "bravo"), p1: Project(t, s, "web"), p2: Project(t, s, "api")}
	closedAt := func(d time.Duration) func(*continuo.Session) {
		return func(x *continuo.Session) {
			at := Base.Add(d)
			x.Lifecycle, x.ClosedAt, x.UpdatedAt = continuo.LifecycleClosed, &at, at
		}
	}
	updatedAt := func(d time.Duration) func(*continuo.Session) {
		return func(x *continuo.Session) { x.UpdatedAt = Base.Add(d) }
	}
	// updated_at is deliberately not creation order, and two sessions share
	// one updated_at so that the ID tie-break shows.
	opts := [][]func(*continuo.Session){
		{updatedAt(5 * time.Minute)},
		{closedAt(9 * time.Minute)},
		{updatedAt(1 * time.Minute)},
		{updatedAt(7 * time.Minute)},
		{closedAt(7 * time.Minute)},
		{updatedAt(3 * time.Minute)},
		{closedAt(2 * time.Minute)},
	}
	for i, o := range opts {
		w.mine = append(w.mine, *Session(t, s, w.g1.ID, w.p1.ID, fmt.Sprintf("mine %d", i), o...))
	}
	w.otherP = Session(t, s, w.g1.ID, w.p2.ID, "other project", updatedAt(8*time.Minute))
	w.otherG = Session(t, s, w.g2.ID, w.p1.ID, "other group", updatedAt(8*time.Minute))
	slices.SortFunc(w.mine, func(a, b continuo.Session) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return w
}

func listSessions(t *testing.T, s store.Store, p store.SessionListParams) ([]continuo.Session, int64) {
	t.Helper()
	list, total, err := read2(t, s, func(tx store.Tx) ([]continuo.Session, int64, error) { return tx.SessionList(t.Context(), p) })
	noErr(t, err, "SessionList")
	return list, total
}

func testSessionListOrder(t *testing.T, s store.Store) {
	w := newListWorld(t, s)
	list, total := listSessions(t, s, store.SessionListParams{GroupID: w.g1.ID, ProjectID: w.p1.ID, Limit: 100})
	if total != int64(len(w.mine)) {
		t.Errorf("total = %d, want %d", total, len(w.mine))
	}
	sameList(t, "SessionList (updated_at desc, id desc)", list, w.mine, normSession)
}

func testSessionListLifecycle(t *testing.T, s store.Store) {
	w := newListWorld(t, s)
	for _, lc := range []continuo.Lifecycle{continuo.LifecycleActive, continuo.LifecycleClosed} {
		var want []continuo.Session
		for _, x := range w.mine {
			if x.Lifecycle == lc {
				want = append(want, x)
			}
		}
		list, total := listSessions(t, s, store.SessionListParams{GroupID: w.g1.ID, ProjectID: w.p1.ID, Lifecycle: lc, Limit: 100})
		if total != int64(len(want)) {
			t.Errorf("%s: total = %d, want %d", lc, total, len(want))
		}
		sameList(t, "SessionList "+string(lc), list, want, normSession)
	}
}

func testSessionListPaging(t *testing.T, s store.Store) {
	w := newListWorld(t, s)
	for _, limit := range []int{1, 2, 3, len(w.mine)} {
		var all []continuo.Session
		for offset := 0; offset < len(w.mine)+limit; offset += limit {
			page, total := listSessions(t, s, store.SessionListParams{GroupID: w.g1.ID, ProjectID: w.p1.ID, Offset: offset, Limit: limit})
			if total != int64(len(w.mine)) {
				t.Errorf("limit %d offset %d: total = %d, want %d (the total ignores paging)", limit, offset, total, len(w.mine))
			}
			wantLen := min(limit, max(len(w.mine)-offset, 0))
			if len(page) != wantLen {
				t.Errorf("limit %d offset %d: %d sessions, want %d", limit, offset, len(page), wantLen)
			}
			all = append(all, page...)
		}
		sameList(t, fmt.Sprintf("pages of %d concatenated", limit), all, w.mine, normSession)
	}
	// Paging composes with the lifecycle filter.
	var active []continuo.Session
	for _, x := range w.mine {
		if x.Lifecycle == continuo.LifecycleActive {
			active = append(active, x)
		}
	}
	page, total := listSessions(t, s, store.SessionListParams{GroupID: w.g1.ID, ProjectID: w.p1.ID,
		Lifecycle: continuo.LifecycleActive, Offset: 1, Limit: 2})
	if total != int64(len(active)) {
		t.Errorf("active, offset 1 limit 2: total = %d, want %d", total, len(active))
	}
	sameList(t, "active, offset 1 limit 2", page, active[1:3], normSession)
}

func testSessionListIsolation(t *testing.T, s store.Store) {
	w := newListWorld(t, s)
	list, total := listSessions(t, s, store.SessionListParams{GroupID: w.g2.ID, ProjectID: w.p1.ID, Limit: 100})
	if total != 1 {
		t.Errorf("other group's total = %d, want 1", total)
	}
	sameList(t, "other group's sessions", list, []continuo.Session{*w.otherG}, normSession)
	list, total = listSessions(t, s, store.SessionListParams{GroupID: w.g1.ID, ProjectID: w.p2.ID, Limit: 100})
	if total != 1 {
		t.Errorf("other project's total = %d, want 1", total)
	}
	sameList(t, "other project's sessions", list, []continuo.Session{*w.otherP}, normSession)
	list, total = listSessions(t, s, store.SessionListParams{GroupID: w.g2.ID, ProjectID: w.p2.ID, Limit: 100})
	if total != 0 || len(list) != 0 {
		t.Errorf("group bravo in project api: %d sessions, total %d; want none", len(list), total)
	}
}

func testSessionListEmpty(t *testing.T, s store.Store) {
	w := newListWorld(t, s)
	list, total := listSessions(t, s, store.SessionListParams{GroupID: continuo.NewID(continuo.PrefixGroup, Base),
		ProjectID: w.p1.ID, Limit: 100})
	if total != 0 || len(list) != 0 {
		t.Errorf("unknown group: %d sessions, total %d; want none", len(list), total)
	}
	list, total = listSessions(t, s, store.SessionListParams{GroupID: w.g1.ID, ProjectID: w.p1.ID,
		Offset: len(w.mine), Limit: 10})
	if total != int64(len(w.mine)) || len(list) != 0 {
		t.Errorf("offset past the end: %d sessions, total %d; want none, total %d", len(list), total, len(w.mine))
	}
}

// SessionListByProject lists every group's sessions of one project, by ID.
func testSessionListByProject(t *testing.T, s store.Store) {
	ctx := t.Context()
	a, b := Setup(t, s, "alpha"), Setup(t, s, "bravo")
	Grant(t, s, a.Project.ID, b.Group.ID, continuo.AccessWrite)
	other := Session(t, s, b.Group.ID, a.Project.ID, "bravo in alpha's project")
	want := []continuo.Session{*a.Session, *other}
	slices.SortFunc(want, func(x, y continuo.Session) int { return strings.Compare(x.ID, y.ID) })
	got := mustGet(t, s, "SessionListByProject", func(tx store.Tx) ([]continuo.Session, error) {
		return tx.SessionListByProject(ctx, a.Project.ID)
	})
	if len(got) != len(want) || got[0].ID != want[0].ID || got[1].ID != want[1].ID {
		t.Errorf("SessionListByProject = %v, want %v", ids(got), ids(want))
	}
	none := mustGet(t, s, "SessionListByProject", func(tx store.Tx) ([]continuo.Session, error) {
		return tx.SessionListByProject(ctx, continuo.NewID(continuo.PrefixProject, Base))
	})
	if len(none) != 0 {
		t.Errorf("SessionListByProject of an unknown project = %v", ids(none))
	}
}

func ids(ss []continuo.Session) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}

// SessionDelete takes a session with its instructions, messages, goals and
// their plans, and its evidence; the group's other sessions and what is
// theirs stay, and so do the project's runs (the deleted session's too),
// until ProjectDelete takes them.
func testSessionDelete(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	keep := Session(t, s, f.Group.ID, f.Project.ID, "keep")
	Message(t, s, f.Session.ID, 1, continuo.KindTodo)
	Message(t, s, f.Session.ID, 2, continuo.KindNote)
	kept := Message(t, s, keep.ID, 1, continuo.KindNote)
	goal := Goal(t, s, f.Session.ID, "gone")
	keptGoal := Goal(t, s, keep.ID, "kept")
	MustWrite(t, s, func(tx store.Tx) error {
		for _, id := range []string{goal.ID, keptGoal.ID} {
			if err := tx.GoalPlanAdd(ctx, store.PlanSnapshot{GoalID: id, Revision: 1, ReplacedAt: Base}); err != nil {
				return err
			}
		}
		return nil
	})
	MustWrite(t, s, func(tx store.Tx) error {
		return tx.InstructionAppend(ctx, store.Instruction{SessionID: f.Session.ID, Seq: 1, Text: "x", CreatedAt: Base})
	})
	run := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test", runEnded(continuo.RunSucceeded),
		func(r *continuo.Run) { r.SessionID = f.Session.ID })
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.RunAppend(ctx, store.RunAppend{RunID: run.ID, Events: newEvents(run.ID, 1, 2, 0)}); err != nil {
			return err
		}
		for _, id := range []string{f.Session.ID, keep.ID} {
			if err := tx.EvidenceAdd(ctx, continuo.Evidence{SessionID: id, Check: "test", RunID: run.ID, CreatedAt: Base}); err != nil {
				return err
			}
		}
		return nil
	})
	MustWrite(t, s, func(tx store.Tx) error { return tx.SessionDelete(ctx, f.Session.ID) })
	_, err := read(t, s, func(tx store.Tx) (*continuo.Session, error) { return tx.SessionGet(ctx, f.Session.ID) })
	wantErr(t, err, store.ErrNotFound, "SessionGet of a deleted session")
	for table, want := range map[string]int{"messages": 1, "session_instructions": 0, "sessions": 1, "goals": 1, "goal_plans": 1,
		"runs": 1, "run_events": 2, "evidence": 1} {
		if n := tableRows(t, s, table); n != want {
			t.Errorf("%s rows after SessionDelete = %d, want %d", table, n, want)
		}
	}
	if ev := latestEvidence(t, s, keep.ID, 1); len(ev) != 1 || ev[0].Run.ID != run.ID {
		t.Errorf("the other session's evidence = %v", ev)
	}
	got := mustGet(t, s, "MessageGet", func(tx store.Tx) (*continuo.Message, error) { return tx.MessageGet(ctx, keep.ID, kept.ID) })
	if got.ID != kept.ID {
		t.Errorf("the other session's message = %v", got)
	}
	if g, err := getGoal(t, s, keptGoal.ID); err != nil || g.ID != keptGoal.ID {
		t.Errorf("the other session's goal = %v, %v", g, err)
	}
	err = s.Write(ctx, func(tx store.Tx) error { return tx.SessionDelete(ctx, f.Session.ID) })
	wantErr(t, err, store.ErrNotFound, "SessionDelete of a deleted session")
	// With its sessions gone, the project can go too, and its runs with it.
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.SessionDelete(ctx, keep.ID); err != nil {
			return err
		}
		return tx.ProjectDelete(ctx, f.Project.ID)
	})
	for _, table := range []string{"sessions", "runs", "run_events", "evidence"} {
		if n := tableRows(t, s, table); n != 0 {
			t.Errorf("%s rows after the project's removal = %d, want 0", table, n)
		}
	}
}

// tableRows counts the rows of one of store.Tables.
func tableRows(t testing.TB, s store.Store, table string) int {
	t.Helper()
	n := 0
	MustRead(t, s, func(tx store.Tx) error {
		return tx.TableRows(t.Context(), table, func(map[string]any) error { n++; return nil })
	})
	return n
}
