package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

func txTests() []test {
	return []test{
		{"Ping", testPing},
		{"WriteErrorRollsBack", testWriteErrorRollsBack},
		{"ConflictRollsBack", testConflictRollsBack},
		{"ReadRejectsWrites", testReadRejectsWrites},
		{"ReadReturnsError", testReadReturnsError},
		{"ReadSnapshot", testReadSnapshot},
		{"ReadDoesNotWaitForWriter", testReadDoesNotWaitForWriter},
		{"CanceledContext", testCanceledContext},
		{"ConcurrentWrites", testConcurrentWrites},
		{"ConcurrentWritesSerialize", testConcurrentWritesSerialize},
		{"ConcurrentMixedOutcomes", testConcurrentMixedOutcomes},
		{"PanicRollsBack", testPanicRollsBack},
		{"PanicAmongConcurrentWrites", testPanicAmongConcurrentWrites},
	}
}

func testPing(t *testing.T, s store.Store) {
	noErr(t, s.Ping(t.Context()), "Ping of a new store")
	Group(t, s, "alpha")
	noErr(t, s.Ping(t.Context()), "Ping after a write")
}

// testWriteErrorRollsBack writes to every table and then fails: Write returns
// the function's own error and nothing is kept.
func testWriteErrorRollsBack(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	m := Message(t, s, f.Session.ID, 1, continuo.KindTodo)
	boom := &testError{"boom"}

	g := &continuo.Group{ID: continuo.NewID(continuo.PrefixGroup, Base), Name: "bravo", CreatedAt: Base}
	p := &continuo.Principal{ID: continuo.NewID(continuo.PrefixPrincipal, Base), Name: "bob", GroupID: f.Group.ID, CreatedAt: Base}
	k := newToken(f.Principal.ID, "hash-x", continuo.ScopeAdmin)
	pr := &continuo.Project{ID: continuo.NewID(continuo.PrefixProject, Base), Name: "api", CreatedAt: Base}
	var sess *continuo.Session
	m2 := NewMessage(f.Session.ID, 2, continuo.KindNote, "rolled back")
	err := s.Write(ctx, func(tx store.Tx) error {
		steps := []func() error{
			func() error { return tx.MetaSet(ctx, "k", "v") },
			func() error { return tx.GroupCreate(ctx, g) },
			func() error { return tx.PrincipalCreate(ctx, p) },
			func() error { return tx.TokenCreate(ctx, k) },
			func() error { return tx.ProjectCreate(ctx, pr) },
			func() error {
				return tx.GrantSet(ctx, continuo.Grant{ProjectID: f.Project.ID, GroupID: f.Group.ID, Access: continuo.AccessRead})
			},
			func() error {
				ref, err := tx.SessionRefNext(ctx, f.Group.ID)
				if err != nil {
					return err
				}
				sess = NewSession(f.Group.ID, f.Project.ID, ref, "rolled back")
				return tx.SessionCreate(ctx, sess)
			},
			func() error {
				upd := *f.Session
				upd.Title, upd.Revision = "changed", upd.Revision+1
				return tx.SessionUpdate(ctx, &upd, f.Session.Revision)
			},
			func() error {
				return tx.InstructionAppend(ctx, store.Instruction{SessionID: f.Session.ID, Seq: 1, Text: "x", CreatedAt: Base})
			},
			func() error { return tx.MessageCreate(ctx, m2) },
			func() error {
				upd := *m
				upd.Status = continuo.StatusSuperseded
				return tx.MessageUpdate(ctx, &upd, m.Status)
			},
			func() error {
				return tx.IdempotencyCreate(ctx, store.Idempotency{Scope: "s", KeyHash: "k", RequestHash: "r", ResultID: "x", CreatedAt: Base})
			},
		}
		for i, step := range steps {
			if err := step(); err != nil {
				return fmt.Errorf("step %d: %w", i, err)
			}
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Write returned %v, want the function's error %v", err, boom)
	}
	var te *testError
	if !errors.As(err, &te) || te != boom {
		t.Errorf("Write returned %#v, want the function's own error value", err)
	}

	gone := func(name string, fn func(tx store.Tx) error) {
		t.Helper()
		wantErr(t, s.Read(ctx, fn), store.ErrNotFound, name+" after the failed Write")
	}
	gone("MetaGet", func(tx store.Tx) error { _, err := tx.MetaGet(ctx, "k"); return err })
	gone("GroupGet", func(tx store.Tx) error { _, err := tx.GroupGet(ctx, g.ID); return err })
	gone("PrincipalGet", func(tx store.Tx) error { _, err := tx.PrincipalGet(ctx, p.ID); return err })
	gone("TokenGetByHash", func(tx store.Tx) error { _, err := tx.TokenGetByHash(ctx, k.Hash); return err })
	gone("ProjectGet", func(tx store.Tx) error { _, err := tx.ProjectGet(ctx, pr.ID); return err })
	gone("SessionGet", func(tx store.Tx) error { _, err := tx.SessionGet(ctx, sess.ID); return err })
	gone("MessageGet", func(tx store.Tx) error { _, err := tx.MessageGet(ctx, f.Session.ID, m2.ID); return err })
	gone("IdempotencyGet", func(tx store.Tx) error { _, err := tx.IdempotencyGet(ctx, "s", "k"); return err })

	access, err := getGrant(t, s, f.Project.ID, f.Group.ID)
	noErr(t, err, "GrantGet")
	if access != continuo.AccessWrite {
		t.Errorf("grant after the failed Write = %q, want write", access)
	}
	same(t, "session after the failed Write", *getSession(t, s, f.Session.ID), *f.Session, normSession)
	same(t, "message after the failed Write", *getMessage(t, s, f.Session.ID, m.ID), *m, normMessage)
	// The failed Write did not disturb later ones.
	MustWrite(t, s, func(tx store.Tx) error {
		return tx.InstructionAppend(ctx, store.Instruction{SessionID: f.Session.ID, Seq: 1, Text: "x", CreatedAt: Base})
	})
}

type testError struct{ msg string }

func (e *testError) Error() string { return e.msg }

// testConflictRollsBack pins what a unique violation does: the Tx method
// returns ErrConflict, and a Write that returns it keeps nothing it wrote
// before. (A Write must not carry on after a conflict: PostgreSQL aborts
// the transaction at the failed statement.)
func testConflictRollsBack(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	Message(t, s, f.Session.ID, 1, continuo.KindNote)
	MustWrite(t, s, func(tx store.Tx) error {
		return tx.IdempotencyCreate(ctx, store.Idempotency{Scope: "s", KeyHash: "k", RequestHash: "r", ResultID: "x", CreatedAt: Base})
	})
	conflicts := map[string]func(tx store.Tx) error{
		"GroupCreate": func(tx store.Tx) error {
			return tx.GroupCreate(ctx, &continuo.Group{ID: continuo.NewID(continuo.PrefixGroup, Base), Name: "alpha", CreatedAt: Base})
		},
		"IdempotencyCreate": func(tx store.Tx) error {
			return tx.IdempotencyCreate(ctx, store.Idempotency{Scope: "s", KeyHash: "k", RequestHash: "r2", ResultID: "y", CreatedAt: Base})
		},
		"MessageCreate": func(tx store.Tx) error {
			return tx.MessageCreate(ctx, NewMessage(f.Session.ID, 1, continuo.KindNote, "dup"))
		},
	}
	for name, c := range conflicts {
		err := s.Write(ctx, func(tx store.Tx) error {
			if err := tx.MetaSet(ctx, "before", name); err != nil {
				return err
			}
			return c(tx)
		})
		if !errors.Is(err, store.ErrConflict) {
			t.Errorf("%s of a duplicate: got %v, want ErrConflict", name, err)
		}
		if _, err := read(t, s, func(tx store.Tx) (string, error) { return tx.MetaGet(ctx, "before") }); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: what the Write wrote before the conflict was kept (MetaGet: %v)", name, err)
		}
	}
	n := mustGet(t, s, "MessageCount", func(tx store.Tx) (int64, error) {
		return tx.MessageCount(ctx, store.MessageListParams{SessionID: f.Session.ID})
	})
	if n != 1 {
		t.Errorf("MessageCount = %d, want 1", n)
	}
	rec, err := getIdem(t, s, "s", "k")
	noErr(t, err, "IdempotencyGet")
	if rec.ResultID != "x" {
		t.Errorf("idempotency record result = %q, want the first one, \"x\"", rec.ResultID)
	}
}

// testReadRejectsWrites tries every writing method inside Read: each fails,
// and nothing changes.
func testReadRejectsWrites(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	k := Token(t, s, f.Principal.ID, "hash-1", continuo.ScopeAdmin)
	m := Message(t, s, f.Session.ID, 1, continuo.KindTodo)
	oc := OAuthClient(t, s, "cli", func(c *continuo.OAuthClient) { c.CreatedAt = Base.Add(-48 * time.Hour) })
	og := OAuthGrant(t, s, oc.ID, f.Principal.ID)
	code := oauthCode(t, s, oc.ID, f.Principal.ID, "code-1")
	ot := oauthToken(t, s, og.ID, "refresh-1", continuo.TokenRefresh)
	link, ws := newLoginLink(f.Principal.ID, "link-1"), newWebSession(f.Principal.ID, "session-1")
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.LoginLinkCreate(ctx, link); err != nil {
			return err
		}
		return tx.WebSessionCreate(ctx, ws)
	})
	unused := OAuthClient(t, s, "unused", func(c *continuo.OAuthClient) { c.CreatedAt = Base.Add(-48 * time.Hour) })

	ops := []struct {
		name string
		fn   func(tx store.Tx) error
	}{
		{"MetaSet", func(tx store.Tx) error { return tx.MetaSet(ctx, "k", "v") }},
		{"GroupCreate", func(tx store.Tx) error {
			return tx.GroupCreate(ctx, &continuo.Group{ID: continuo.NewID(continuo.PrefixGroup, Base), Name: "bravo", CreatedAt: Base})
		}},
		{"PrincipalCreate", func(tx store.Tx) error {
			return tx.PrincipalCreate(ctx, &continuo.Principal{ID: continuo.NewID(continuo.PrefixPrincipal, Base), Name: "bob",
				GroupID: f.Group.ID, CreatedAt: Base})
		}},
		{"TokenCreate", func(tx store.Tx) error {
			return tx.TokenCreate(ctx, newToken(f.Principal.ID, "hash-2", continuo.ScopeAdmin))
		}},
		{"TokenRevoke", func(tx store.Tx) error { return tx.TokenRevoke(ctx, store.TokenRevokeParams{ID: k.ID, At: Base}) }},
		{"ProjectCreate", func(tx store.Tx) error {
			return tx.ProjectCreate(ctx, &continuo.Project{ID: continuo.NewID(continuo.PrefixProject, Base), Name: "api", CreatedAt: Base})
		}},
		{"GrantSet", func(tx store.Tx) error {
			return tx.GrantSet(ctx, continuo.Grant{ProjectID: f.Project.ID, GroupID: f.Group.ID, Access: continuo.AccessRead})
		}},
		{"SessionRefNext", func(tx store.Tx) error { _, err := tx.SessionRefNext(ctx, f.Group.ID); return err }},
		{"SessionCreate", func(tx store.Tx) error { return tx.SessionCreate(ctx, NewSession(f.Group.ID, f.Project.ID, 99, "x")) }},
		{"SessionUpdate", func(tx store.Tx) error {
			upd := *f.Session
			upd.Title, upd.Revision = "changed", 2
			return tx.SessionUpdate(ctx, &upd, f.Session.Revision)
		}},
		{"InstructionAppend", func(tx store.Tx) error {
			return tx.InstructionAppend(ctx, store.Instruction{SessionID: f.Session.ID, Seq: 1, Text: "x", CreatedAt: Base})
		}},
		{"MessageCreate", func(tx store.Tx) error {
			return tx.MessageCreate(ctx, NewMessage(f.Session.ID, 2, continuo.KindNote, "x"))
		}},
		{"MessageUpdate", func(tx store.Tx) error {
			upd := *m
			upd.Status = continuo.StatusSuperseded
			return tx.MessageUpdate(ctx, &upd, m.Status)
		}},
		{"IdempotencyCreate", func(tx store.Tx) error {
			return tx.IdempotencyCreate(ctx, store.Idempotency{Scope: "s", KeyHash: "k", RequestHash: "r", ResultID: "x", CreatedAt: Base})
		}},
		{"OAuthClientCreate", func(tx store.Tx) error { return tx.OAuthClientCreate(ctx, NewOAuthClient("x")) }},
		{"OAuthClientUpdate", func(tx store.Tx) error { upd := *oc; upd.Name = "changed"; return tx.OAuthClientUpdate(ctx, &upd) }},
		{"OAuthClientUse", func(tx store.Tx) error { return tx.OAuthClientUse(ctx, oc.ID, Base) }},
		{"OAuthClientRevoke", func(tx store.Tx) error { return tx.OAuthClientRevoke(ctx, oc.ID, Base) }},
		{"OAuthClientPruneUnused", func(tx store.Tx) error { _, err := tx.OAuthClientPruneUnused(ctx, Base); return err }},
		{"OAuthCodeCreate", func(tx store.Tx) error { return tx.OAuthCodeCreate(ctx, newOAuthCode(oc.ID, f.Principal.ID, "code-2")) }},
		{"OAuthCodeUse", func(tx store.Tx) error { return tx.OAuthCodeUse(ctx, code.ID, og.ID, Base) }},
		{"OAuthGrantCreate", func(tx store.Tx) error {
			g := *og
			g.ID = continuo.NewID(continuo.PrefixOAuthGrant, Base)
			return tx.OAuthGrantCreate(ctx, &g)
		}},
		{"OAuthGrantRevoke", func(tx store.Tx) error { return tx.OAuthGrantRevoke(ctx, og.ID, Base) }},
		{"OAuthGrantRevokeClient", func(tx store.Tx) error { _, err := tx.OAuthGrantRevokeClient(ctx, oc.ID, Base); return err }},
		{"OAuthTokenCreate", func(tx store.Tx) error {
			return tx.OAuthTokenCreate(ctx, newOAuthToken(og.ID, "access-2", continuo.TokenAccess))
		}},
		{"OAuthTokenUse", func(tx store.Tx) error { return tx.OAuthTokenUse(ctx, ot.ID, Base) }},
		{"OAuthTokenRevoke", func(tx store.Tx) error { return tx.OAuthTokenRevoke(ctx, ot.ID, Base) }},
		{"LoginLinkCreate", func(tx store.Tx) error { return tx.LoginLinkCreate(ctx, newLoginLink(f.Principal.ID, "link-2")) }},
		{"LoginLinkUse", func(tx store.Tx) error { return tx.LoginLinkUse(ctx, link.ID, Base) }},
		{"WebSessionCreate", func(tx store.Tx) error { return tx.WebSessionCreate(ctx, newWebSession(f.Principal.ID, "session-2")) }},
		{"WebSessionRevoke", func(tx store.Tx) error { return tx.WebSessionRevoke(ctx, ws.ID, Base) }},
	}
	for _, op := range ops {
		if err := s.Read(ctx, op.fn); err == nil {
			t.Errorf("%s inside Read succeeded, want an error", op.name)
		}
	}

	// Nothing changed.
	wantErr(t, s.Read(ctx, func(tx store.Tx) error { _, err := tx.MetaGet(ctx, "k"); return err }), store.ErrNotFound, "MetaGet")
	wantErr(t, s.Read(ctx, func(tx store.Tx) error { _, err := tx.GroupGetByName(ctx, "bravo"); return err }), store.ErrNotFound, "GroupGetByName")
	wantErr(t, s.Read(ctx, func(tx store.Tx) error { _, err := tx.PrincipalGetByName(ctx, "bob"); return err }), store.ErrNotFound, "PrincipalGetByName")
	wantErr(t, s.Read(ctx, func(tx store.Tx) error { _, err := tx.TokenGetByHash(ctx, "hash-2"); return err }), store.ErrNotFound, "TokenGetByHash")
	wantErr(t, s.Read(ctx, func(tx store.Tx) error { _, err := tx.ProjectGetByName(ctx, "api"); return err }), store.ErrNotFound, "ProjectGetByName")
	wantErr(t, s.Read(ctx, func(tx store.Tx) error { _, err := tx.SessionGetByRef(ctx, f.Group.ID, 99); return err }), store.ErrNotFound, "SessionGetByRef")
	wantErr(t, s.Read(ctx, func(tx store.Tx) error { _, err := tx.IdempotencyGet(ctx, "s", "k"); return err }), store.ErrNotFound, "IdempotencyGet")
	got := mustGet(t, s, "TokenGet", func(tx store.Tx) (*continuo.Token, error) { return tx.TokenGet(ctx, k.ID) })
	same(t, "token", *got, *k, normToken)
	access, err := getGrant(t, s, f.Project.ID, f.Group.ID)
	if err != nil || access != continuo.AccessWrite {
		t.Errorf("grant = %q, %v; want write", access, err)
	}
	same(t, "session", *getSession(t, s, f.Session.ID), *f.Session, normSession)
	same(t, "message", *getMessage(t, s, f.Session.ID, m.ID), *m, normMessage)
	clients := mustGet(t, s, "OAuthClientList", func(tx store.Tx) ([]continuo.OAuthClient, error) { return tx.OAuthClientList(ctx) })
	sameList(t, "OAuth clients (none created, updated, used, revoked or pruned)", clients, []continuo.OAuthClient{*oc, *unused}, normOAuthClient)
	grants := mustGet(t, s, "OAuthGrantList", func(tx store.Tx) ([]continuo.OAuthGrant, error) { return tx.OAuthGrantList(ctx) })
	sameList(t, "OAuth grants", grants, []continuo.OAuthGrant{*og}, normOAuthGrant)
	gotCode, err := getOAuthCode(t, s, code.Hash)
	noErr(t, err, "OAuthCodeGetByHash")
	same(t, "OAuth code", *gotCode, *code, normOAuthCode)
	same(t, "OAuth token", *getOAuthToken(t, s, ot.Hash), *ot, normOAuthToken)
	same(t, "login link", *getLoginLink(t, s, link.Hash), *link, normLoginLink)
	same(t, "browser session", *getWebSession(t, s, ws.Hash), *ws, normWebSession)
	_, err = getOAuthCode(t, s, "code-2")
	wantErr(t, err, store.ErrNotFound, "OAuthCodeGetByHash of the refused code")
	wantErr(t, s.Read(ctx, func(tx store.Tx) error { _, err := tx.OAuthTokenGetByHash(ctx, "access-2"); return err }), store.ErrNotFound, "OAuthTokenGetByHash")
	wantErr(t, s.Read(ctx, func(tx store.Tx) error { _, err := tx.LoginLinkGetByHash(ctx, "link-2"); return err }), store.ErrNotFound, "LoginLinkGetByHash")
	wantErr(t, s.Read(ctx, func(tx store.Tx) error { _, err := tx.WebSessionGetByHash(ctx, "session-2"); return err }), store.ErrNotFound, "WebSessionGetByHash")
	if n := mustGet(t, s, "MessageCount", func(tx store.Tx) (int64, error) {
		return tx.MessageCount(ctx, store.MessageListParams{SessionID: f.Session.ID})
	}); n != 1 {
		t.Errorf("MessageCount = %d, want 1", n)
	}
	// The reference sequence did not move: the next one follows the
	// fixture's session.
	if got := nextRef(t, s, f.Group.ID); got != f.Session.Ref+1 {
		t.Errorf("SessionRefNext after the refused reservation = %d, want %d", got, f.Session.Ref+1)
	}
	// The instruction was not appended.
	MustWrite(t, s, func(tx store.Tx) error {
		return tx.InstructionAppend(ctx, store.Instruction{SessionID: f.Session.ID, Seq: 1, Text: "x", CreatedAt: Base})
	})
}

func testReadReturnsError(t *testing.T, s store.Store) {
	ctx := t.Context()
	boom := &testError{"read boom"}
	err := s.Read(ctx, func(tx store.Tx) error {
		if _, err := tx.GroupList(ctx); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("Read returned %v, want the function's error", err)
	}
	noErr(t, s.Read(ctx, func(tx store.Tx) error { return nil }), "Read after a failed Read")
}

// testReadSnapshot opens a Read, reads, lets another goroutine commit a
// Write that changes what was read, and reads again inside the same Read:
// it still sees the old state.
func testReadSnapshot(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	Message(t, s, f.Session.ID, 1, continuo.KindNote)

	committed := make(chan error, 1)
	write := func() {
		committed <- s.Write(ctx, func(tx store.Tx) error {
			cur, err := tx.SessionGet(ctx, f.Session.ID)
			if err != nil {
				return err
			}
			prev := cur.Revision
			cur.Title, cur.Revision, cur.MessageSeq = "after", cur.Revision+1, 2
			cur.UpdatedAt = cur.UpdatedAt.Add(time.Minute)
			if err := tx.SessionUpdate(ctx, cur, prev); err != nil {
				return err
			}
			if err := tx.MessageCreate(ctx, NewMessage(f.Session.ID, 2, continuo.KindNote, "new")); err != nil {
				return err
			}
			return tx.MetaSet(ctx, "written", "yes")
		})
	}

	MustRead(t, s, func(tx store.Tx) error {
		before, err := tx.SessionGet(ctx, f.Session.ID)
		if err != nil {
			return err
		}
		go write()
		if err := await(t, committed, "a Write to commit while a Read is open"); err != nil {
			return fmt.Errorf("concurrent Write: %w", err)
		}

		after, err := tx.SessionGet(ctx, f.Session.ID)
		if err != nil {
			return err
		}
		same(t, "session re-read inside the same Read", *after, *before, normSession)
		rev, err := tx.SessionRevision(ctx, f.Session.ID)
		if err != nil {
			return err
		}
		if rev != before.Revision {
			t.Errorf("SessionRevision inside the same Read = %d, want %d", rev, before.Revision)
		}
		n, err := tx.MessageCount(ctx, store.MessageListParams{SessionID: f.Session.ID})
		if err != nil {
			return err
		}
		if n != 1 {
			t.Errorf("MessageCount inside the same Read = %d, want 1", n)
		}
		if _, err := tx.MetaGet(ctx, "written"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("MetaGet of a key written after the Read began: %v, want ErrNotFound", err)
		}
		list, total, err := tx.SessionList(ctx, store.SessionListParams{GroupID: f.Group.ID, ProjectID: f.Project.ID, Limit: 10})
		if err != nil {
			return err
		}
		if total != 1 || len(list) != 1 || list[0].Title != before.Title {
			t.Errorf("SessionList inside the same Read: %d sessions, total %d, first %q; want the old one", len(list), total, titleOf(list))
		}
		return nil
	})

	// A new Read sees the Write.
	got := getSession(t, s, f.Session.ID)
	if got.Title != "after" || got.Revision != f.Session.Revision+1 {
		t.Errorf("session after the Read: title %q revision %d, want %q %d", got.Title, got.Revision, "after", f.Session.Revision+1)
	}
}

func titleOf(list []continuo.Session) string {
	if len(list) == 0 {
		return ""
	}
	return list[0].Title
}

// testReadDoesNotWaitForWriter holds a Write open and reads meanwhile: the
// Read neither waits for the Write nor sees what it has not committed yet.
func testReadDoesNotWaitForWriter(t *testing.T, s store.Store) {
	ctx := t.Context()
	MustWrite(t, s, func(tx store.Tx) error { return tx.MetaSet(ctx, "k", "old") })

	inside := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.Write(ctx, func(tx store.Tx) error {
			if err := tx.MetaSet(ctx, "k", "new"); err != nil {
				return err
			}
			if err := tx.MetaSet(ctx, "pending", "yes"); err != nil {
				return err
			}
			close(inside)
			<-release
			return nil
		})
	}()
	released := false
	defer func() {
		if !released {
			close(release) // never leave the writer stuck, whatever failed
		}
	}()
	select {
	case <-inside:
	case err := <-done:
		t.Fatalf("the held Write ended early: %v", err)
	case <-time.After(waitLimit):
		t.Fatal("timed out waiting for the held Write to start")
	}

	type result struct {
		k       string
		pending error
		err     error
	}
	got := make(chan result, 1)
	go func() {
		var r result
		r.err = s.Read(ctx, func(tx store.Tx) error {
			var err error
			if r.k, err = tx.MetaGet(ctx, "k"); err != nil {
				return err
			}
			_, r.pending = tx.MetaGet(ctx, "pending")
			return nil
		})
		got <- r
	}()
	r := await(t, got, "a Read while a Write is in flight")
	noErr(t, r.err, "Read while a Write is in flight")
	if r.k != "old" {
		t.Errorf("Read during the Write saw k = %q, want the committed \"old\"", r.k)
	}
	wantErr(t, r.pending, store.ErrNotFound, "Read during the Write: key the Write has not committed")

	close(release)
	released = true
	noErr(t, await(t, done, "the held Write to finish"), "held Write")
	v, err := read(t, s, func(tx store.Tx) (string, error) { return tx.MetaGet(ctx, "k") })
	if err != nil || v != "new" {
		t.Errorf("MetaGet after the Write = %q, %v; want \"new\"", v, err)
	}
}

// testCanceledContext: a Write whose context is already canceled either
// fails and keeps nothing or succeeds and keeps everything; never half.
func testCanceledContext(t *testing.T, s store.Store) {
	ctx := t.Context()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err := s.Write(cctx, func(tx store.Tx) error {
		if err := tx.MetaSet(ctx, "a", "1"); err != nil {
			return err
		}
		return tx.MetaSet(ctx, "b", "2")
	})
	_, errA := read(t, s, func(tx store.Tx) (string, error) { return tx.MetaGet(ctx, "a") })
	_, errB := read(t, s, func(tx store.Tx) (string, error) { return tx.MetaGet(ctx, "b") })
	if err != nil {
		t.Logf("Write with a canceled context: %v", err)
		wantErr(t, errA, store.ErrNotFound, "key a of the failed Write")
		wantErr(t, errB, store.ErrNotFound, "key b of the failed Write")
	} else {
		t.Log("Write with a canceled context succeeded")
		noErr(t, errA, "key a of the acknowledged Write")
		noErr(t, errB, "key b of the acknowledged Write")
	}
	// The store still works.
	MustWrite(t, s, func(tx store.Tx) error { return tx.MetaSet(ctx, "c", "3") })
}

// testConcurrentWrites: 64 concurrent Writes, each inserting one message,
// all commit and are all visible.
func testConcurrentWrites(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	const n = 64
	errs := parallel(n, func(i int) error {
		return s.Write(ctx, func(tx store.Tx) error {
			return tx.MessageCreate(ctx, NewMessage(f.Session.ID, int64(i+1), continuo.KindNote, "m"+strconv.Itoa(i)))
		})
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("Write %d: %v", i, err)
		}
	}
	list := listMessages(t, s, store.MessageListParams{SessionID: f.Session.ID, Limit: 1000})
	if len(list) != n {
		t.Fatalf("%d messages visible, want %d", len(list), n)
	}
	for i, m := range list {
		if want := int64(n - i); m.Seq != want || m.Text != "m"+strconv.Itoa(int(want-1)) {
			t.Errorf("message [%d] = seq %d %q, want seq %d %q", i, m.Seq, m.Text, want, "m"+strconv.Itoa(int(want-1)))
		}
	}
}

// testConcurrentWritesSerialize runs read-modify-write Writes concurrently:
// each sees the Writes before it, so no increment is lost.
func testConcurrentWritesSerialize(t *testing.T, s store.Store) {
	ctx := t.Context()
	const n = 64
	errs := parallel(n, func(i int) error {
		return s.Write(ctx, func(tx store.Tx) error {
			v, err := tx.MetaGet(ctx, "counter")
			if errors.Is(err, store.ErrNotFound) {
				v, err = "0", nil
			}
			if err != nil {
				return err
			}
			c, err := strconv.Atoi(v)
			if err != nil {
				return err
			}
			return tx.MetaSet(ctx, "counter", strconv.Itoa(c+1))
		})
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("Write %d: %v", i, err)
		}
	}
	v, err := read(t, s, func(tx store.Tx) (string, error) { return tx.MetaGet(ctx, "counter") })
	noErr(t, err, "MetaGet")
	if v != strconv.Itoa(n) {
		t.Errorf("counter after %d concurrent increments = %s, want %d", n, v, n)
	}
}

// testConcurrentMixedOutcomes runs concurrent Writes of which a third fail
// with their own error and a third fail on a conflict after writing: exactly
// the successful ones are visible, and each Write gets its own outcome.
func testConcurrentMixedOutcomes(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	const taken = 1000
	Message(t, s, f.Session.ID, taken, continuo.KindNote)
	const n = 48
	own := make([]error, n)
	for i := range own {
		own[i] = &testError{fmt.Sprintf("write %d fails", i)}
	}
	errs := parallel(n, func(i int) error {
		return s.Write(ctx, func(tx store.Tx) error {
			if err := tx.MessageCreate(ctx, NewMessage(f.Session.ID, int64(i+1), continuo.KindNote, "m"+strconv.Itoa(i))); err != nil {
				return err
			}
			if err := tx.MetaSet(ctx, "k"+strconv.Itoa(i), "v"); err != nil {
				return err
			}
			switch i % 3 {
			case 0:
				return own[i]
			case 1:
				return tx.MessageCreate(ctx, NewMessage(f.Session.ID, taken, continuo.KindNote, "dup"))
			}
			return nil
		})
	})
	want := []int64{taken}
	for i, err := range errs {
		switch i % 3 {
		case 0:
			if err != own[i] && !errors.Is(err, own[i]) {
				t.Errorf("Write %d returned %v, want its own error %v", i, err, own[i])
			}
		case 1:
			wantErr(t, err, store.ErrConflict, fmt.Sprintf("Write %d", i))
		default:
			if err != nil {
				t.Errorf("Write %d: %v", i, err)
			}
			want = append(want, int64(i+1))
		}
	}
	var got []int64
	for _, m := range listMessages(t, s, store.MessageListParams{SessionID: f.Session.ID, Limit: 1000}) {
		got = append(got, m.Seq)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("visible message seqs = %v, want exactly those of the successful Writes %v", got, want)
	}
	for i := range n {
		_, err := read(t, s, func(tx store.Tx) (string, error) { return tx.MetaGet(ctx, "k"+strconv.Itoa(i)) })
		if i%3 == 2 {
			noErr(t, err, fmt.Sprintf("meta of successful Write %d", i))
		} else {
			wantErr(t, err, store.ErrNotFound, fmt.Sprintf("meta of failed Write %d", i))
		}
	}
}

// writeRecover calls s.Write and reports a panic that escapes it instead of
// crashing the test binary.
func writeRecover(ctx context.Context, s store.Store, fn func(store.Tx) error) (panicked any, err error) {
	defer func() { panicked = recover() }()
	return nil, s.Write(ctx, fn)
}

func testPanicRollsBack(t *testing.T, s store.Store) {
	ctx := t.Context()
	p, err := writeRecover(ctx, s, func(tx store.Tx) error {
		if err := tx.MetaSet(ctx, "panicked", "kept?"); err != nil {
			return err
		}
		panic("write exploded")
	})
	if p != nil {
		t.Fatalf("the panic escaped Write: %v", p)
	}
	if err == nil {
		t.Fatal("Write whose function panicked returned nil, want an error")
	}
	t.Logf("Write whose function panicked: %v", err)
	_, err = read(t, s, func(tx store.Tx) (string, error) { return tx.MetaGet(ctx, "panicked") })
	wantErr(t, err, store.ErrNotFound, "key written before the panic")

	// Later writes work.
	for i := range 3 {
		MustWrite(t, s, func(tx store.Tx) error { return tx.MetaSet(ctx, "later", strconv.Itoa(i)) })
	}
	v, err := read(t, s, func(tx store.Tx) (string, error) { return tx.MetaGet(ctx, "later") })
	if err != nil || v != "2" {
		t.Errorf("MetaGet after the panic = %q, %v; want \"2\"", v, err)
	}
}

func testPanicAmongConcurrentWrites(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	const n, bad = 32, 11
	panics := make([]any, n)
	errs := parallel(n, func(i int) error {
		p, err := writeRecover(ctx, s, func(tx store.Tx) error {
			if err := tx.MessageCreate(ctx, NewMessage(f.Session.ID, int64(i+1), continuo.KindNote, "m")); err != nil {
				return err
			}
			if i == bad {
				panic(fmt.Sprintf("write %d exploded", i))
			}
			return nil
		})
		panics[i] = p
		return err
	})
	for i := range n {
		if panics[i] != nil {
			t.Errorf("Write %d: the panic escaped Write: %v", i, panics[i])
		}
		if i == bad && errs[i] == nil {
			t.Errorf("Write %d panicked and returned nil, want an error", i)
		}
		if i != bad && errs[i] != nil {
			t.Errorf("Write %d: %v", i, errs[i])
		}
	}
	n2 := mustGet(t, s, "MessageCount", func(tx store.Tx) (int64, error) {
		return tx.MessageCount(ctx, store.MessageListParams{SessionID: f.Session.ID})
	})
	if n2 != n-1 {
		t.Errorf("%d messages visible, want %d (all but the panicking Write's)", n2, n-1)
	}
	_, err := read(t, s, func(tx store.Tx) (*continuo.Message, error) {
		list, err := tx.MessageList(ctx, store.MessageListParams{SessionID: f.Session.ID, BeforeSeq: bad + 2, Limit: 1})
		if err != nil || len(list) == 0 {
			return nil, err
		}
		if list[0].Seq == bad+1 {
			return nil, fmt.Errorf("the panicking Write's message (seq %d) is visible", bad+1)
		}
		return &list[0], nil
	})
	noErr(t, err, "MessageList")
}
