// Package storetest is the conformance suite of package store: every driver
// (internal/store/sqlite, later internal/store/postgres) must pass Run
// unchanged. It also offers small fixture helpers (Group, Project, Session,
// Message, Setup, …) for the tests of the services above the store.
//
// A driver's test calls Run with a Factory that makes a fresh, empty,
// migrated store for each test:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "c.db"), nil)
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { db.Close() })
//			return db
//		})
//	}
//
// Beyond the comments of package store the suite pins what services rely on:
//
//   - times round-trip at millisecond precision (compare after Truncate);
//   - lists are ordered: groups, principals and projects by name, tokens,
//     OAuth clients and OAuth grants by ID, grants by project ID, sessions
//     by updated_at desc then ID desc, messages by seq desc, goals by ID
//     desc, a goal's replaced plans by revision desc, runs by ID, a run's
//     events by seq, a session's evidence by check name then newest first,
//     a group's swarms by ID desc, a swarm's workers and tasks and the
//     active attempts by ID (a worker's tasks either way), continuations
//     by ID desc, ledger entries by source then ref;
//   - a used code, refresh token or login link is ErrStale when used again
//     (an unknown one ErrNotFound); a revocation, and a client's first use,
//     keep the first time;
//   - nil and empty collections (token scopes, project checks, message tags)
//     come back empty (nil or not); non-empty ones come back exactly;
//   - an ErrConflict ends a Write: the function returns it and nothing is
//     kept (see store's package comment);
//   - a guarded update whose row moved on is ErrStale and changes nothing;
//   - Notify is delivered to Listen only after its Write commits, never for
//     a Write that fails;
//   - Writes are isolated: each sees every Write acknowledged before it
//     started, and concurrent read-modify-write Writes of one row lose no
//     update;
//   - Read is one snapshot: a Write committed while it is open stays
//     invisible to it, and it never waits for an in-flight Write;
//   - a Write whose function panics returns an error, keeps nothing, and
//     leaves the store usable;
//   - MessageCount counts every matching message: it ignores BeforeSeq and
//     Limit (a page's total does not shrink as a client pages).
package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// Factory returns a fresh, empty, migrated store for one test; the factory
// registers its own cleanup (closing the store) with t.Cleanup.
type Factory func(t *testing.T) store.Store

// Base is the fixed time every fixture is stamped with. It has millisecond
// precision, which is what stores keep.
var Base = time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)

// test is one conformance test; it gets a fresh store.
type test struct {
	name string
	run  func(t *testing.T, s store.Store)
}

// Run runs every conformance test against stores made by f. Each test gets a
// store of its own.
func Run(t *testing.T, f Factory) {
	t.Helper()
	if f == nil {
		t.Fatal("storetest: nil Factory")
	}
	suites := []struct {
		name  string
		tests []test
	}{
		{"Meta", metaTests()},
		{"Group", groupTests()},
		{"Principal", principalTests()},
		{"Token", tokenTests()},
		{"OAuth", oauthTests()},
		{"SignIn", signInTests()},
		{"Project", projectTests()},
		{"Grant", grantTests()},
		{"Admin", adminTests()},
		{"SessionRef", sessionRefTests()},
		{"Session", sessionTests()},
		{"SessionList", sessionListTests()},
		{"SessionSearch", sessionSearchTests()},
		{"Message", messageTests()},
		{"MessageList", messageListTests()},
		{"EntryList", entryTests()},
		{"Goal", goalTests()},
		{"Run", runTests()},
		{"Swarm", swarmTests()},
		{"Continuation", continuationTests()},
		{"Transition", transitionTests()},
		{"Idempotency", idempotencyTests()},
		{"Tx", txTests()},
		{"Constraints", constraintTests()},
		{"Notify", notifyTests()},
		// Every Write run twice, the first attempt discarded (Rerun): the
		// newest methods' writes must leave nothing behind when rolled back.
		{"OAuthRerun", underRerun(oauthTests())},
		{"SignInRerun", underRerun(signInTests())},
		{"GoalRerun", underRerun(goalTests())},
		{"RunRerun", underRerun(runTests())},
		{"SwarmRerun", underRerun(swarmTests())},
		{"ContinuationRerun", underRerun(continuationTests())},
	}
	for _, su := range suites {
		t.Run(su.name, func(t *testing.T) {
			for _, tc := range su.tests {
				t.Run(tc.name, func(t *testing.T) {
					s := f(t)
					if s == nil {
						t.Fatal("storetest: factory returned a nil store")
					}
					tc.run(t, s)
				})
			}
		})
	}
	t.Run("Dump", func(t *testing.T) { dumpTests(t, f) })
}

// waitLimit bounds every wait for another goroutine, so that a driver that
// deadlocks fails with a message instead of hanging until the test binary's
// timeout. It is never used to order events.
const waitLimit = 30 * time.Second

// MustWrite runs fn in s.Write and fails the test if it returns an error.
// fn may run on another goroutine: it must not call t.Fatal (return an error
// instead).
func MustWrite(t testing.TB, s store.Store, fn func(store.Tx) error) {
	t.Helper()
	if err := s.Write(t.Context(), fn); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

// MustRead runs fn in s.Read and fails the test if it returns an error.
func MustRead(t testing.TB, s store.Store, fn func(store.Tx) error) {
	t.Helper()
	if err := s.Read(t.Context(), fn); err != nil {
		t.Fatalf("Read: %v", err)
	}
}

// read returns what fn returns inside one s.Read.
func read[T any](t testing.TB, s store.Store, fn func(tx store.Tx) (T, error)) (T, error) {
	t.Helper()
	var v T
	err := s.Read(t.Context(), func(tx store.Tx) error {
		var err error
		v, err = fn(tx)
		return err
	})
	return v, err
}

// mustGet is read that fails the test on an error.
func mustGet[T any](t testing.TB, s store.Store, what string, fn func(tx store.Tx) (T, error)) T {
	t.Helper()
	v, err := read(t, s, fn)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// Group creates a group named name, stamped Base.
func Group(t testing.TB, s store.Store, name string) *continuo.Group {
	t.Helper()
	ctx := t.Context()
	g := &continuo.Group{ID: continuo.NewID(continuo.PrefixGroup, Base), Name: name, CreatedAt: Base}
	MustWrite(t, s, func(tx store.Tx) error { return tx.GroupCreate(ctx, g) })
	return g
}

// Principal creates a principal named name in group groupID.
func Principal(t testing.TB, s store.Store, groupID, name string) *continuo.Principal {
	t.Helper()
	ctx := t.Context()
	p := &continuo.Principal{ID: continuo.NewID(continuo.PrefixPrincipal, Base), Name: name, GroupID: groupID, CreatedAt: Base}
	MustWrite(t, s, func(tx store.Tx) error { return tx.PrincipalCreate(ctx, p) })
	return p
}

// Token creates a token of principalID with the given hash and scopes, no
// expiry and not revoked.
func Token(t testing.TB, s store.Store, principalID, hash string, scopes ...continuo.Scope) *continuo.Token {
	t.Helper()
	ctx := t.Context()
	k := &continuo.Token{ID: continuo.NewID(continuo.PrefixToken, Base), PrincipalID: principalID, Hash: hash,
		Scopes: scopes, CreatedAt: Base}
	MustWrite(t, s, func(tx store.Tx) error { return tx.TokenCreate(ctx, k) })
	return k
}

// Project creates a read-only project named name with no root and no checks.
func Project(t testing.TB, s store.Store, name string) *continuo.Project {
	t.Helper()
	ctx := t.Context()
	p := &continuo.Project{ID: continuo.NewID(continuo.PrefixProject, Base), Name: name, CreatedAt: Base}
	MustWrite(t, s, func(tx store.Tx) error { return tx.ProjectCreate(ctx, p) })
	return p
}

// Grant gives group groupID access to project projectID.
func Grant(t testing.TB, s store.Store, projectID, groupID string, access continuo.Access) {
	t.Helper()
	ctx := t.Context()
	MustWrite(t, s, func(tx store.Tx) error {
		return tx.GrantSet(ctx, continuo.Grant{ProjectID: projectID, GroupID: groupID, Access: access})
	})
}

// NewSession returns an active checkout session (revision 1, one
// instruction, no messages) stamped Base, ready for SessionCreate. It does
// not touch a store.
func NewSession(groupID, projectID string, ref int64, title string) *continuo.Session {
	return &continuo.Session{
		ID:           continuo.NewID(continuo.PrefixSession, Base),
		Ref:          ref,
		GroupID:      groupID,
		ProjectID:    projectID,
		Title:        title,
		Lifecycle:    continuo.LifecycleActive,
		Mode:         continuo.ModeCheckout,
		RootInstr:    "work on " + title,
		LatestInstr:  "work on " + title,
		Instructions: 1,
		Revision:     1,
		CreatedAt:    Base,
		UpdatedAt:    Base,
	}
}

// Session reserves the group's next reference and creates a session (see
// NewSession) in one Write. opts may change the session before it is
// created.
func Session(t testing.TB, s store.Store, groupID, projectID, title string, opts ...func(*continuo.Session)) *continuo.Session {
	t.Helper()
	ctx := t.Context()
	var out *continuo.Session
	MustWrite(t, s, func(tx store.Tx) error {
		ref, err := tx.SessionRefNext(ctx, groupID)
		if err != nil {
			return err
		}
		sess := NewSession(groupID, projectID, ref, title)
		for _, o := range opts {
			o(sess)
		}
		if err := tx.SessionCreate(ctx, sess); err != nil {
			return err
		}
		out = sess
		return nil
	})
	return out
}

// NewMessage returns an open, normal-priority message of session sessionID
// created at Base + seq seconds, ready for MessageCreate. It does not touch
// a store.
func NewMessage(sessionID string, seq int64, kind continuo.Kind, text string) *continuo.Message {
	return &continuo.Message{
		ID:        continuo.NewID(continuo.PrefixMessage, Base),
		SessionID: sessionID,
		Seq:       seq,
		Kind:      kind,
		Text:      text,
		Status:    continuo.StatusOpen,
		Priority:  continuo.PriorityNormal,
		CreatedAt: Base.Add(time.Duration(seq) * time.Second),
	}
}

// Message inserts a message (see NewMessage). opts may change it before it is
// inserted. Only the message row is written: the session's counters and
// message_seq are left as they are.
func Message(t testing.TB, s store.Store, sessionID string, seq int64, kind continuo.Kind, opts ...func(*continuo.Message)) *continuo.Message {
	t.Helper()
	ctx := t.Context()
	m := NewMessage(sessionID, seq, kind, fmt.Sprintf("%s #%d", kind, seq))
	for _, o := range opts {
		o(m)
	}
	MustWrite(t, s, func(tx store.Tx) error { return tx.MessageCreate(ctx, m) })
	return m
}

// Fixture is a small world: a group with one principal, a writable project
// the group may write, and one active session of the group in it.
type Fixture struct {
	Group     *continuo.Group
	Principal *continuo.Principal
	Project   *continuo.Project
	Session   *continuo.Session
}

// Setup creates a Fixture whose names derive from name (group name,
// principal name+"-user", project name+"-project", session title
// name+" session").
func Setup(t testing.TB, s store.Store, name string) *Fixture {
	t.Helper()
	ctx := t.Context()
	f := &Fixture{Group: Group(t, s, name)}
	f.Principal = Principal(t, s, f.Group.ID, name+"-user")
	f.Project = &continuo.Project{ID: continuo.NewID(continuo.PrefixProject, Base), Name: name + "-project",
		Writable: true, CreatedAt: Base}
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.ProjectCreate(ctx, f.Project); err != nil {
			return err
		}
		return tx.GrantSet(ctx, continuo.Grant{ProjectID: f.Project.ID, GroupID: f.Group.ID, Access: continuo.AccessWrite})
	})
	f.Session = Session(t, s, f.Group.ID, f.Project.ID, name+" session")
	return f
}

// ---- assertions ----------------------------------------------------------

// wantRefusedInRead checks that each of writes, named by its key, fails
// inside Read.
func wantRefusedInRead(t testing.TB, s store.Store, writes map[string]func(tx store.Tx) error) {
	t.Helper()
	for name, fn := range writes {
		if err := s.Read(t.Context(), fn); err == nil {
			t.Errorf("%s inside Read succeeded, want an error", name)
		}
	}
}

// listOf reads list(p), failing the test on an error; what names list.
func listOf[P, T any](t testing.TB, s store.Store, what string, list func(store.Tx, context.Context, P) ([]T, error), p P) []T {
	t.Helper()
	return mustGet(t, s, fmt.Sprintf("%s(%+v)", what, p), func(tx store.Tx) ([]T, error) { return list(tx, t.Context(), p) })
}

// wantMissing checks that kind's lookups are not found: get of a new ID
// with prefix, and getByName of name.
func wantMissing[T any](t testing.TB, s store.Store, kind, prefix string,
	get, getByName func(store.Tx, context.Context, string) (T, error), name string) {
	t.Helper()
	ctx := t.Context()
	_, err := read(t, s, func(tx store.Tx) (T, error) { return get(tx, ctx, continuo.NewID(prefix, Base)) })
	wantErr(t, err, store.ErrNotFound, kind+"Get of an unknown ID")
	_, err = read(t, s, func(tx store.Tx) (T, error) { return getByName(tx, ctx, name) })
	wantErr(t, err, store.ErrNotFound, kind+"GetByName of an unknown name")
}

// wantListByName checks kind's list: empty in an empty store, then, once
// create has made rows, those rows in name order, which create returns.
func wantListByName[T any](t testing.TB, s store.Store, kind string, list func(store.Tx, context.Context) ([]T, error),
	create func() []T, norm func(T) T) {
	t.Helper()
	ls := func(tx store.Tx) ([]T, error) { return list(tx, t.Context()) }
	if empty := mustGet(t, s, kind+"List", ls); len(empty) != 0 {
		t.Errorf("%sList of an empty store = %v, want none", kind, empty)
	}
	want := create()
	sameList(t, kind+"List (by name)", mustGet(t, s, kind+"List", ls), want, norm)
}

// wantErr fails the test unless errors.Is(err, target).
func wantErr(t testing.TB, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v, want %v", what, err, target)
	}
}

// noErr fails the test now if err is not nil.
func noErr(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// trunc is t at the precision stores keep, in UTC.
func trunc(t time.Time) time.Time { return t.Truncate(time.Millisecond).UTC() }

func truncPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := trunc(*t)
	return &v
}

// sameTime reports whether a and b are the same instant at millisecond
// precision.
func sameTime(a, b time.Time) bool { return trunc(a).Equal(trunc(b)) }

func normGroup(g continuo.Group) continuo.Group { g.CreatedAt = trunc(g.CreatedAt); return g }

func normPrincipal(p continuo.Principal) continuo.Principal {
	p.CreatedAt = trunc(p.CreatedAt)
	return p
}

func normToken(k continuo.Token) continuo.Token {
	k.CreatedAt, k.ExpiresAt, k.RevokedAt = trunc(k.CreatedAt), truncPtr(k.ExpiresAt), truncPtr(k.RevokedAt)
	if len(k.Scopes) == 0 {
		k.Scopes = nil
	}
	return k
}

func normProject(p continuo.Project) continuo.Project {
	p.CreatedAt = trunc(p.CreatedAt)
	if len(p.Checks) == 0 {
		p.Checks = nil
	}
	return p
}

func normSession(s continuo.Session) continuo.Session {
	s.CreatedAt, s.UpdatedAt, s.ClosedAt = trunc(s.CreatedAt), trunc(s.UpdatedAt), truncPtr(s.ClosedAt)
	return s
}

func normMessage(m continuo.Message) continuo.Message {
	m.CreatedAt, m.ResolvedAt = trunc(m.CreatedAt), truncPtr(m.ResolvedAt)
	if len(m.Tags) == 0 {
		m.Tags = nil
	}
	return m
}

func normIdem(r store.Idempotency) store.Idempotency { r.CreatedAt = trunc(r.CreatedAt); return r }

// same fails the test unless got and want are equal after norm; it names
// every field that differs.
func same[T any](t testing.TB, what string, got, want T, norm func(T) T) {
	t.Helper()
	g, w := norm(got), norm(want)
	if reflect.DeepEqual(g, w) {
		return
	}
	gv, wv := reflect.ValueOf(g), reflect.ValueOf(w)
	if gv.Kind() != reflect.Struct {
		t.Errorf("%s: got %v, want %v", what, g, w)
		return
	}
	for i := range gv.NumField() {
		if !reflect.DeepEqual(gv.Field(i).Interface(), wv.Field(i).Interface()) {
			t.Errorf("%s: field %s: got %s, want %s", what, gv.Type().Field(i).Name, show(gv.Field(i)), show(wv.Field(i)))
		}
	}
}

// sameList is same for slices: equal length and equal elements in order.
func sameList[T any](t testing.TB, what string, got, want []T, norm func(T) T) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d elements, want %d:\n got %s\nwant %s", what, len(got), len(want), show(reflect.ValueOf(got)), show(reflect.ValueOf(want)))
		return
	}
	for i := range got {
		same(t, fmt.Sprintf("%s[%d]", what, i), got[i], want[i], norm)
	}
}

// identity is the norm of types that need no normalizing.
func identity[T any](v T) T { return v }

// showTime formats an optional time.
func showTime(p *time.Time) string {
	if p == nil {
		return "nil"
	}
	return p.Format(time.RFC3339Nano)
}

// show formats v with pointers followed, so that optional times print as
// times, not addresses.
func show(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return "nil"
		}
		return "&" + show(v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			return "nil"
		}
		s := "["
		for i := range v.Len() {
			if i > 0 {
				s += " "
			}
			s += show(v.Index(i))
		}
		return s + "]"
	case reflect.Struct:
		if tm, ok := v.Interface().(time.Time); ok {
			return tm.Format(time.RFC3339Nano)
		}
		return fmt.Sprintf("%+v", v.Interface())
	default:
		return fmt.Sprintf("%#v", v.Interface())
	}
}

// ---- concurrency ---------------------------------------------------------

// parallel calls fn(0) … fn(n-1) on n goroutines released together, and
// returns their results by index.
func parallel(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// await receives from ch, failing the test if nothing arrives within
// waitLimit.
func await[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("timed out after %v waiting for %s", waitLimit, what)
		panic("unreachable")
	}
}
