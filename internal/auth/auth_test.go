package auth_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo/internal/store/stores"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/auth/authtest"
	"github.com/continuo-dev/continuo/internal/store"
)

type clock = authtest.Clock

var setup = authtest.Setup

func code(err error) continuo.Code { return continuo.ErrorCode(err) }

func TestTokenLifecycle(t *testing.T) { stores.Each(t, testTokenLifecycle) }

func testTokenLifecycle(t *testing.T) {
	ctx := context.Background()
	a, db, clk := setup(t)
	tok, err := a.CreateToken(ctx, "alice", []continuo.Scope{continuo.ScopeSessionsRead}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok.Token, auth.TokenPrefix) || len(tok.Token) < 40 {
		t.Fatalf("token %q", tok.Token)
	}
	// Only a hash is stored: the secret appears nowhere in the database.
	err = db.Read(ctx, func(tx store.Tx) error {
		k, err := tx.TokenGet(ctx, tok.TokenID)
		if err != nil {
			return err
		}
		if k.Hash == tok.Token || strings.Contains(k.Hash, tok.Token[len(auth.TokenPrefix):]) {
			t.Fatal("secret stored in clear")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.Authenticate(ctx, tok.Token)
	if err != nil || c.Principal != "alice" || c.GroupID != tok.GroupID || !c.Has(continuo.ScopeSessionsRead) || c.Has(continuo.ScopeSessionsWrite) {
		t.Fatalf("authenticate: %+v %v", c, err)
	}
	for _, bad := range []string{"", "cto_pat_", tok.Token + "x", strings.ToUpper(tok.Token), "Bearer " + tok.Token} {
		if _, err := a.Authenticate(ctx, bad); code(err) != continuo.CodeUnauthorized {
			t.Errorf("authenticate(%q): %v", bad, err)
		}
	}
	clk.T = clk.T.Add(time.Hour)
	if _, err := a.Authenticate(ctx, tok.Token); code(err) != continuo.CodeUnauthorized {
		t.Fatalf("expired token: %v", err)
	}

	tok2, err := a.CreateToken(ctx, "alice", []continuo.Scope{continuo.ScopeAdmin}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if tok2.GroupID != tok.GroupID {
		t.Fatal("second token of a principal changed its group")
	}
	if err := a.RevokeToken(ctx, tok2.TokenID); err != nil {
		t.Fatal(err)
	}
	if err := a.RevokeToken(ctx, tok2.TokenID); err != nil {
		t.Fatalf("revoke twice: %v", err)
	}
	if _, err := a.Authenticate(ctx, tok2.Token); code(err) != continuo.CodeUnauthorized {
		t.Fatalf("revoked token: %v", err)
	}
	if err := a.RevokeToken(ctx, "tok_nope"); code(err) != continuo.CodeNotFound {
		t.Fatalf("revoke unknown: %v", err)
	}
	if _, err := a.CreateToken(ctx, "bad name", []continuo.Scope{continuo.ScopeAdmin}, 0); code(err) != continuo.CodeInvalidInput {
		t.Fatalf("bad principal name: %v", err)
	}
}

func TestBootstrapOnce(t *testing.T) { stores.Each(t, testBootstrapOnce) }

func testBootstrapOnce(t *testing.T) {
	ctx := context.Background()
	a, _, _ := setup(t)
	tok, p, err := a.Bootstrap(ctx, &auth.ProjectSpec{Name: "repo", Root: "/src/repo", Writable: true}, true)
	if err != nil || tok == nil || p == nil {
		t.Fatalf("first bootstrap: %v %v %v", tok, p, err)
	}
	c, err := a.Authenticate(ctx, tok.Token)
	if err != nil || !c.Has(continuo.ScopeAdmin) || c.Principal != auth.AdminName {
		t.Fatalf("admin caller: %+v %v", c, err)
	}
	tok2, p2, err := a.Bootstrap(ctx, &auth.ProjectSpec{Name: "other"}, true)
	if err != nil || tok2 != nil || p2 != nil {
		t.Fatalf("second bootstrap made something: %v %v %v", tok2, p2, err)
	}
	if done, err := a.Bootstrapped(ctx); !done || err != nil {
		t.Fatalf("Bootstrapped = %v, %v", done, err)
	}
}

// A token made with grants sees those projects at once; a grant it carries
// never lowers the access its group has.
func TestTokenWithGrants(t *testing.T) { stores.Each(t, testTokenWithGrants) }

func testTokenWithGrants(t *testing.T) {
	ctx := context.Background()
	a, db, _ := setup(t)
	if done, err := a.Bootstrapped(ctx); done || err != nil {
		t.Fatalf("Bootstrapped before bootstrap = %v, %v", done, err)
	}
	p, err := a.AddProject(ctx, auth.ProjectSpec{Name: "demo"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc := []continuo.Scope{continuo.ScopeSessionsRead}
	tok, err := a.IssueToken(ctx, auth.TokenSpec{Principal: "alice", Scopes: sc, Grants: map[string]continuo.Access{"demo": continuo.AccessWrite}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.Authenticate(ctx, tok.Token)
	if err != nil {
		t.Fatal(err)
	}
	access := func() continuo.Access {
		var acc continuo.Access
		if err := db.Read(ctx, func(tx store.Tx) (err error) { acc, err = a.Access(ctx, tx, c, p.ID); return err }); err != nil {
			t.Fatal(err)
		}
		return acc
	}
	if got := access(); got != continuo.AccessWrite {
		t.Fatalf("access after token create --grant demo:write = %q", got)
	}
	if _, err := a.IssueToken(ctx, auth.TokenSpec{Principal: "alice", Scopes: sc, Grants: map[string]continuo.Access{"demo": continuo.AccessRead}}); err != nil {
		t.Fatal(err)
	}
	if got := access(); got != continuo.AccessWrite {
		t.Fatalf("a read grant lowered write to %q", got)
	}
	// An unknown project fails the whole command: no principal, no token.
	_, err = a.IssueToken(ctx, auth.TokenSpec{Principal: "bob", Scopes: sc, Grants: map[string]continuo.Access{"nope": continuo.AccessRead}})
	if code(err) != continuo.CodeNotFound {
		t.Fatalf("grant on an unknown project: %v", err)
	}
	if _, err := a.Principal(ctx, "bob", sc); code(err) != continuo.CodeNotFound {
		t.Fatalf("bob exists after a failed token create: %v", err)
	}
}

func TestProjectsAndGrants(t *testing.T) { stores.Each(t, testProjectsAndGrants) }

func testProjectsAndGrants(t *testing.T) {
	ctx := context.Background()
	a, db, _ := setup(t)
	for _, g := range []string{"team", "rivals"} {
		if _, err := a.CreateGroup(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.CreateGroup(ctx, "team"); code(err) != continuo.CodeConflict {
		t.Fatalf("duplicate group: %v", err)
	}
	if _, err := a.CreatePrincipal(ctx, "carol", "nobody"); code(err) != continuo.CodeNotFound {
		t.Fatalf("principal in unknown group: %v", err)
	}
	p, err := a.AddProject(ctx, auth.ProjectSpec{Name: "demo", Checks: map[string]continuo.Check{"test": {Command: []string{"go", "test", "./..."}}}},
		map[string]continuo.Access{"team": continuo.AccessRead})
	if err != nil {
		t.Fatal(err)
	}
	bad := []auth.ProjectSpec{
		{Name: ""}, {Name: "x/y"}, {Name: "rel", Root: "relative/path"},
		{Name: "c1", Checks: map[string]continuo.Check{"bad name": {Command: []string{"x"}}}}, {Name: "c2", Checks: map[string]continuo.Check{"t": {}}},
	}
	for _, spec := range bad {
		if _, err := a.AddProject(ctx, spec, nil); code(err) != continuo.CodeInvalidInput {
			t.Errorf("AddProject(%+v): %v", spec, err)
		}
	}
	if _, err := a.AddProject(ctx, auth.ProjectSpec{Name: "g"}, map[string]continuo.Access{"nobody": continuo.AccessRead}); code(err) != continuo.CodeNotFound {
		t.Fatalf("grant to unknown group: %v", err)
	}
	if _, err := a.AddProject(ctx, auth.ProjectSpec{Name: "g"}, nil); err != nil {
		t.Fatalf("project g was partly written by the failed add: %v", err)
	}
	team := &continuo.Caller{GroupID: groupID(t, db, "team")}
	rivals := &continuo.Caller{GroupID: groupID(t, db, "rivals")}
	err = db.Read(ctx, func(tx store.Tx) error {
		if _, _, err := a.ResolveProject(ctx, tx, team, "demo", continuo.AccessRead); err != nil {
			t.Errorf("team reads demo: %v", err)
		}
		if _, _, err := a.ResolveProject(ctx, tx, team, p.ID, continuo.AccessWrite); code(err) != continuo.CodeForbidden {
			t.Errorf("team writes demo with a read grant: %v", err)
		}
		if _, _, err := a.ResolveProject(ctx, tx, rivals, "demo", continuo.AccessRead); code(err) != continuo.CodeNotFound {
			t.Errorf("rivals reach demo: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Grant(ctx, "demo", "team", continuo.AccessWrite); err != nil {
		t.Fatal(err)
	}
	err = db.Read(ctx, func(tx store.Tx) error {
		_, acc, err := a.ResolveProject(ctx, tx, team, "demo", continuo.AccessWrite)
		if err != nil || acc != continuo.AccessWrite {
			t.Errorf("after upgrade: %v %v", acc, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func groupID(t *testing.T, db store.Store, name string) string {
	t.Helper()
	var id string
	err := db.Read(context.Background(), func(tx store.Tx) error {
		g, err := tx.GroupGetByName(context.Background(), name)
		if err != nil {
			return err
		}
		id = g.ID
		return nil
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	return id
}

func TestConfigureProjects(t *testing.T) { stores.Each(t, testConfigureProjects) }

// Configured checks replace the stored ones (and a second start with the
// same configuration writes nothing); a configured project with a root is
// registered for the admin group; without a root, or at another root, it
// is refused and nothing is written.
func testConfigureProjects(t *testing.T) {
	ctx := context.Background()
	a, db, _ := setup(t)
	if _, _, err := a.Bootstrap(ctx, &auth.ProjectSpec{Name: "repo", Root: "/src/repo", Writable: true,
		Checks: map[string]continuo.Check{"old": {Command: []string{"make"}}}}, false); err != nil {
		t.Fatal(err)
	}
	checks := map[string]continuo.Check{"test": {Command: []string{"go", "test", "./..."}, TimeoutSecs: 900, Env: []string{"GOFLAGS"}}}
	specs := []auth.ProjectSpec{{Name: "repo", Checks: checks}, {Name: "new", Root: "/src/new", Checks: checks}}
	changed, err := a.ConfigureProjects(ctx, specs)
	if err != nil || len(changed) != 2 {
		t.Fatalf("ConfigureProjects = %v, %v", changed, err)
	}
	if changed, err := a.ConfigureProjects(ctx, specs); err != nil || len(changed) != 0 {
		t.Errorf("the same configuration again changed %v (%v)", changed, err)
	}
	err = db.Read(ctx, func(tx store.Tx) error {
		for _, name := range []string{"repo", "new"} {
			p, err := tx.ProjectGetByName(ctx, name)
			if err != nil {
				return err
			}
			if len(p.Checks) != 1 || p.Checks["test"].TimeoutSecs != 900 {
				t.Errorf("%s checks = %+v", name, p.Checks)
			}
		}
		p, _ := tx.ProjectGetByName(ctx, "new")
		admin, err := tx.PrincipalGetByName(ctx, auth.AdminName)
		if err != nil {
			return err
		}
		if acc, err := tx.GrantGet(ctx, p.ID, admin.GroupID); err != nil || acc != continuo.AccessWrite {
			t.Errorf("admin's access to the configured project = %q, %v", acc, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []auth.ProjectSpec{{Name: "ghost", Checks: checks}, {Name: "repo", Root: "/elsewhere"},
		{Name: "repo", Checks: map[string]continuo.Check{"t": {}}}} {
		if _, err := a.ConfigureProjects(ctx, []auth.ProjectSpec{spec}); err == nil {
			t.Errorf("ConfigureProjects(%+v) = nil, want an error", spec)
		}
	}
}
