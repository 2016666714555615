package cli

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/sqlite"
	"github.com/continuo-dev/continuo/internal/store/storetest"
	"github.com/continuo-dev/continuo/internal/workflow"
)

// Only serve, stdio, init and import make a database; every other command
// refuses to run without one, says which directory it looked at, and
// creates nothing there.
func TestCommandsNeedADatabase(t *testing.T) {
	d := filepath.Join(t.TempDir(), "data")
	for _, args := range [][]string{
		{"migrate", "up"}, {"group", "create", "team"}, {"principal", "create", "a", "--group", "admin"},
		{"token", "create", "--principal", "alice", "--scopes", "sessions:read"}, {"token", "list"},
		{"token", "revoke", "tok_x"}, {"project", "add", "demo"}, {"project", "list"},
		{"project", "grant", "demo", "admin:read"}, {"export", filepath.Join(t.TempDir(), "x")},
	} {
		code, out, errs := run(t, append(args, "--data-dir", d)...)
		want := "no Continuo data directory at " + d + "; run `continuo init`, or pass --data-dir"
		if code != 1 || !strings.Contains(errs, want) {
			t.Errorf("continuo %v: exit %d, stdout %q, stderr %q; want exit 1 and %q", args, code, out, errs, want)
		}
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Fatalf("continuo %v created %s", args, d)
		}
	}
}

// init makes a data directory that every other command can use at once —
// `project add --grant admin:write` before any serve — and a second init
// changes nothing and shows no secret.
func TestInit(t *testing.T) {
	dd := []string{"--data-dir", filepath.Join(t.TempDir(), "data")}
	v := runJSON(t, append([]string{"init", "--project", "none"}, dd...)...)
	if v["created"] != true || !strings.HasPrefix(v["admin_token"].(string), "cto_pat_") {
		t.Fatalf("init: %v", v)
	}
	if p := runJSON(t, append([]string{"project", "add", "demo", "--grant", "admin:write"}, dd...)...); p["project_id"] == nil {
		t.Fatalf("project add after init: %v", p)
	}
	code, out, _ := run(t, append([]string{"init", "--project", "none"}, dd...)...)
	if code != 0 || strings.Contains(out, "cto_pat_") || !strings.Contains(out, "nothing changed") {
		t.Fatalf("second init: exit %d\n%s", code, out)
	}
	if v := runJSON(t, append([]string{"init"}, dd...)...); v["created"] != false || v["admin_token"] != nil {
		t.Fatalf("second init --json: %v", v)
	}
	if v := runJSON(t, append([]string{"token", "list"}, dd...)...); len(v["tokens"].([]any)) != 1 {
		t.Fatalf("tokens after two inits: %v", v)
	}
}

// The data directory defaults to one per-user place, wherever the command
// runs: $CONTINUO_DATA_DIR, else $XDG_DATA_HOME/continuo, else
// ~/.local/share/continuo.
func TestDefaultDataDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("CONTINUO_DATA_DIR", "")
	want := filepath.Join(home, ".local", "share", "continuo")
	if v := runJSON(t, "init", "--project", "none"); v["data_dir"] != want {
		t.Errorf("default data dir %v, want %s", v["data_dir"], want)
	}
	if _, err := os.Stat(filepath.Join(want, "continuo.db")); err != nil {
		t.Error(err)
	}
	xdg := t.TempDir()
	t.Setenv("XDG_DATA_HOME", xdg)
	if v := runJSON(t, "init", "--project", "none"); v["data_dir"] != filepath.Join(xdg, "continuo") {
		t.Errorf("with XDG_DATA_HOME: data dir %v, want %s", v["data_dir"], filepath.Join(xdg, "continuo"))
	}
	own := t.TempDir()
	t.Setenv("CONTINUO_DATA_DIR", own)
	if v := runJSON(t, "init", "--project", "none"); v["data_dir"] != own {
		t.Errorf("with CONTINUO_DATA_DIR: data dir %v, want %s", v["data_dir"], own)
	}
}

// A data directory whose database was deleted is not silently given a new,
// empty one: starts refuse, saying what happened and how to restore; an
// import restores; --init starts over.
func TestLostDatabase(t *testing.T) {
	d := filepath.Join(t.TempDir(), "data")
	dd := []string{"--data-dir", d}
	runJSON(t, append([]string{"init", "--project", "none"}, dd...)...)
	runJSON(t, append([]string{"group", "create", "team"}, dd...)...)
	backup := filepath.Join(t.TempDir(), "backup.jsonl")
	runJSON(t, append([]string{"export", backup}, dd...)...)
	gone, _ := filepath.Glob(filepath.Join(d, "continuo.db*"))
	for _, f := range gone {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init"}, {"token", "list"}} {
		code, _, errs := run(t, append(args, dd...)...)
		for _, want := range []string{"had a Continuo database", "is gone", "continuo import FILE --data-dir " + d, "--init"} {
			if code != 1 || !strings.Contains(errs, want) {
				t.Errorf("continuo %v after the database was deleted: exit %d, stderr %q; want exit 1 and %q", args, code, errs, want)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(d, "continuo.db")); !os.IsNotExist(err) {
		t.Fatalf("a refused start made a database: %v", err)
	}
	// The restore: import the backup.
	runJSON(t, append([]string{"import", backup}, dd...)...)
	if v := runJSON(t, append([]string{"init"}, dd...)...); v["created"] != false {
		t.Fatalf("init after the restore: %v", v)
	}
	// Or start over, on purpose.
	gone, _ = filepath.Glob(filepath.Join(d, "continuo.db*"))
	for _, f := range gone {
		os.Remove(f)
	}
	if v := runJSON(t, append([]string{"init", "--init", "--project", "none"}, dd...)...); v["created"] != true || v["admin_token"] == nil {
		t.Fatalf("init --init: %v", v)
	}
}

// A first start on a port that is taken fails before it makes anything, so
// the admin token is not lost: the next start still shows one.
func TestServeBindsFirst(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d := filepath.Join(t.TempDir(), "data")
	code, out, errs := run(t, "serve", "--project", "none", "--listen", ln.Addr().String(), "--data-dir", d)
	if code != 1 || strings.Contains(out, "cto_pat_") {
		t.Fatalf("serve on a busy port: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(d, "continuo.db")); !os.IsNotExist(err) {
		t.Fatalf("serve on a busy port made a database: %v", err)
	}
	if v := runJSON(t, "init", "--project", "none", "--data-dir", d); v["admin_token"] == nil {
		t.Fatalf("the next start shows no admin token: %v", v)
	}
}

// --help goes to stdout with exit 0; --version and version print the
// version; an extra argument is named.
func TestHelpVersionUsage(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"help"}, {"serve", "--help"}, {"token", "create", "-h"}, {"token", "--help"}, {"project", "--help"}, {"init", "--help"}} {
		code, out, errs := run(t, args...)
		if code != 0 || !strings.Contains(out, "Usage: continuo") || errs != "" {
			t.Errorf("continuo %v: exit %d, stdout %q, stderr %q; want exit 0 and the usage on stdout only", args, code, out, errs)
		}
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, out, _ := run(t, args...)
		if code != 0 || !strings.HasPrefix(out, "continuo 0.") {
			t.Errorf("continuo %v: exit %d, %q", args, code, out)
		}
	}
	code, _, errs := run(t, "serve", "extra")
	if code != 2 || !strings.Contains(errs, `unexpected argument "extra"`) {
		t.Errorf("serve extra: exit %d, stderr %q", code, errs)
	}
	if code, out, errs := run(t); code != 2 || out != "" || !strings.Contains(errs, "Usage") {
		t.Errorf("no arguments: exit %d, stdout %q, stderr %q; want exit 2 and the usage on stderr", code, out, errs)
	}
}

// project revoke takes a grant away; project remove refuses a project that
// holds sessions unless --force, which deletes them with it.
func TestProjectRevokeRemove(t *testing.T) {
	ctx := context.Background()
	d := filepath.Join(t.TempDir(), "data")
	dd := []string{"--data-dir", d}
	runJSON(t, append([]string{"init", "--project", "none"}, dd...)...)
	runJSON(t, append([]string{"group", "create", "team"}, dd...)...)
	runJSON(t, append([]string{"project", "add", "demo", "--grant", "admin:write", "--grant", "team:read"}, dd...)...)
	if v := runJSON(t, append([]string{"project", "revoke", "demo", "team"}, dd...)...); v["revoked"] != true {
		t.Fatalf("project revoke: %v", v)
	}
	for _, tc := range []struct{ args []string }{{[]string{"project", "revoke", "demo", "team"}}, {[]string{"project", "revoke", "demo", "nobody"}}} {
		if code, out, _ := run(t, append(append(tc.args, "--json"), dd...)...); code != 1 || !strings.Contains(out, `"not_found"`) {
			t.Errorf("continuo %v: exit %d %s", tc.args, code, out)
		}
	}

	// A session in demo, with a keyed message.
	db, err := sqlite.Open(ctx, filepath.Join(d, "continuo.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	a := auth.New(db, nil)
	admin, err := a.Principal(ctx, "admin", continuo.AllScopes())
	if err != nil {
		t.Fatal(err)
	}
	wf := workflow.New(db, a, nil)
	r, err := wf.WorkOnProject(ctx, admin, workflow.WorkOn{Project: "demo", Instruction: "x", IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := wf.PostMessage(ctx, admin, workflow.Post{SessionID: r.Session.ID, Kind: continuo.KindNote, Text: "n", DeliveryKey: "k2"}); err != nil {
		t.Fatal(err)
	}
	// And a run of the session, with a log and the session's evidence.
	check := storetest.CreateRun(t, db, r.Session.GroupID, r.Session.ProjectID, d, "test", func(x *continuo.Run) { x.SessionID = r.Session.ID })
	storetest.MustWrite(t, db, func(tx store.Tx) error {
		if err := tx.RunAppend(ctx, store.RunAppend{RunID: check.ID, Events: []continuo.RunEvent{{Seq: 1, Kind: continuo.EventOutput, Text: "ok", At: time.Now()}}}); err != nil {
			return err
		}
		return tx.EvidenceAdd(ctx, continuo.Evidence{SessionID: r.Session.ID, Check: "test", RunID: check.ID, CreatedAt: time.Now()})
	})
	db.Close()

	code, _, errs := run(t, append([]string{"project", "remove", "demo"}, dd...)...)
	if code != 1 || !strings.Contains(errs, "has 1 session(s) (1 active)") || !strings.Contains(errs, "--force") {
		t.Fatalf("project remove with a session: exit %d, %q", code, errs)
	}
	if ps := runJSON(t, append([]string{"project", "list"}, dd...)...)["projects"].([]any); len(ps) != 1 {
		t.Fatalf("refused remove removed: %v", ps)
	}
	if v := runJSON(t, append([]string{"project", "remove", "demo", "--force"}, dd...)...); v["removed"] != true || v["sessions"] != float64(1) {
		t.Fatalf("project remove --force: %v", v)
	}
	if ps := runJSON(t, append([]string{"project", "list"}, dd...)...)["projects"].([]any); len(ps) != 0 {
		t.Fatalf("after remove: %v", ps)
	}
	file := filepath.Join(t.TempDir(), "x.jsonl")
	runJSON(t, append([]string{"export", file}, dd...)...)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"sessions", "session_instructions", "messages", "idempotency", "grants", "projects",
		"runs", "run_events", "evidence"} {
		if strings.Contains(string(b), `"table":"`+table+`"`) {
			t.Errorf("rows of %s are left after project remove --force", table)
		}
	}
	runJSON(t, append([]string{"project", "add", "demo"}, dd...)...) // the name is free again
}

// token list names the principal and group, the scopes, when the token was
// made and when it expires, and whether it still works.
func TestTokenList(t *testing.T) {
	dd := []string{"--data-dir", filepath.Join(t.TempDir(), "data")}
	runJSON(t, append([]string{"init", "--project", "none"}, dd...)...)
	tok := runJSON(t, append([]string{"token", "create", "--principal", "alice", "--scopes", "sessions:read", "--expires", "48h"}, dd...)...)
	runJSON(t, append([]string{"token", "create", "--principal", "bob", "--scopes", "sessions:read,sessions:write"}, dd...)...)
	runJSON(t, append([]string{"token", "revoke", tok["token_id"].(string)}, dd...)...)
	code, out, _ := run(t, append([]string{"token", "list"}, dd...)...)
	if code != 0 {
		t.Fatal(code)
	}
	lines := strings.Split(out, "\n")
	if !strings.Contains(lines[0], "PRINCIPAL") || !strings.Contains(lines[0], "EXPIRES") {
		t.Fatalf("token list header: %q", lines[0])
	}
	exp := time.Now().Add(48 * time.Hour).UTC().Format(time.DateOnly)
	var alice, bob string
	for _, l := range lines {
		if strings.Contains(l, " alice ") {
			alice = l
		}
		if strings.Contains(l, " bob ") {
			bob = l
		}
	}
	if !strings.Contains(alice, "revoked") || !strings.Contains(alice, exp) || !strings.Contains(alice, "sessions:read") {
		t.Errorf("alice's token: %q (want revoked, expiring %s)", alice, exp)
	}
	if !strings.Contains(bob, "active") || !strings.Contains(bob, "never") || !strings.Contains(bob, "sessions:read,sessions:write") {
		t.Errorf("bob's token: %q", bob)
	}
	v := runJSON(t, append([]string{"token", "list"}, dd...)...)
	for _, x := range v["tokens"].([]any) {
		m := x.(map[string]any)
		if m["principal"] == "" || m["group"] == "" || m["state"] == "" || m["created_at"] == "" {
			t.Errorf("token list --json entry: %v", m)
		}
	}
}

// A first start registers the checkout --project names (its top level),
// none for --project none, and refuses a directory that is not a checkout.
func TestInitProject(t *testing.T) {
	repo := gitRepo(t)
	sub := filepath.Join(repo, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(t.TempDir(), "data")
	code, out, errs := run(t, "init", "--project", t.TempDir(), "--data-dir", d)
	if code != 1 || !strings.Contains(errs, "is not in a git checkout") || strings.Contains(out, "cto_pat_") {
		t.Fatalf("init --project of a plain directory: exit %d\n%s\n%s", code, out, errs)
	}
	v := runJSON(t, "init", "--project", sub, "--data-dir", d)
	if v["project"] != "demo" || v["project_root"] != repo || v["admin_token"] == nil {
		t.Fatalf("init --project %s: %v", sub, v)
	}
	if v := runJSON(t, "init", "--project", "none", "--data-dir", filepath.Join(t.TempDir(), "data")); v["project"] != nil {
		t.Fatalf("init --project none: %v", v)
	}
}
