package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo/internal/store"

	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/store/sqlite"
)

// run runs the CLI in process and returns exit status, stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func runJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	// --json goes before a -- (after it, it would be a check's argument).
	i := slices.Index(args, "--")
	if i < 0 {
		i = len(args)
	}
	code, out, errs := run(t, slices.Insert(slices.Clone(args), i, "--json")...)
	if code != 0 {
		t.Fatalf("continuo %v: exit %d: %s", args, code, errs)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("continuo %v: %q: %v", args, out, err)
	}
	return v
}

// The CLI forms of CONTRACT.md §10 are a stable interface for scripts.
func TestCLIForms(t *testing.T) {
	d := filepath.Join(t.TempDir(), "data")
	dd := []string{"--data-dir", d}
	if v := runJSON(t, append([]string{"init", "--project", "none"}, dd...)...); v["created"] != true || !strings.HasPrefix(v["admin_token"].(string), "cto_pat_") {
		t.Fatalf("init: %v", v)
	}
	if v := runJSON(t, append([]string{"migrate", "up"}, dd...)...); v["schema_version"] != float64(store.SchemaVersion) {
		t.Fatalf("migrate up: %v", v)
	}
	g := runJSON(t, append([]string{"group", "create", "team"}, dd...)...)
	if !strings.HasPrefix(g["group_id"].(string), "grp_") {
		t.Fatalf("group create: %v", g)
	}
	p := runJSON(t, append([]string{"principal", "create", "alice", "--group", "team"}, dd...)...)
	if p["group_id"] != g["group_id"] {
		t.Fatalf("principal create: %v", p)
	}
	tok := runJSON(t, append([]string{"token", "create", "--principal", "alice", "--scopes", "sessions:read,sessions:write", "--expires", "720h"}, dd...)...)
	if !strings.HasPrefix(tok["token"].(string), "cto_pat_") || !strings.HasPrefix(tok["token_id"].(string), "tok_") || tok["expires_at"] == nil {
		t.Fatalf("token create: %v", tok)
	}
	// A new principal comes with a group of its own name.
	bob := runJSON(t, append([]string{"token", "create", "--principal", "bob", "--scopes", "admin"}, dd...)...)
	if bob["group_id"] == g["group_id"] {
		t.Fatal("bob joined team")
	}
	// Flags may come after the positional argument.
	prj := runJSON(t, append([]string{"project", "add", "demo", "--root", gitRepo(t), "--check", "test=go test ./...", "--grant", "team:read"}, dd...)...)
	if !strings.HasPrefix(prj["project_id"].(string), "prj_") {
		t.Fatalf("project add: %v", prj)
	}
	if v := runJSON(t, append([]string{"project", "grant", "demo", "team:write"}, dd...)...); v["access"] != "write" {
		t.Fatalf("project grant: %v", v)
	}
	if v := runJSON(t, append([]string{"project", "list"}, dd...)...); len(v["projects"].([]any)) != 1 {
		t.Fatalf("project list: %v", v)
	}
	if v := runJSON(t, append([]string{"token", "revoke", tok["token_id"].(string)}, dd...)...); v["revoked"] != true {
		t.Fatalf("token revoke: %v", v)
	}
	list := runJSON(t, append([]string{"token", "list"}, dd...)...)
	if s, _ := json.Marshal(list); len(list["tokens"].([]any)) != 3 || strings.Contains(string(s), "cto_pat_") {
		t.Fatalf("token list: %s", s)
	}

	// Failures: exit 1 with a structured error on stdout under --json.
	code, out, _ := run(t, append([]string{"group", "create", "team", "--json"}, dd...)...)
	if code != 1 || !strings.Contains(out, `"conflict"`) {
		t.Fatalf("duplicate group: %d %s", code, out)
	}
	code, out, _ = run(t, append([]string{"token", "create", "--principal", "x", "--scopes", "sessions:nope", "--json"}, dd...)...)
	if code != 1 || !strings.Contains(out, `"invalid_input"`) {
		t.Fatalf("unknown scope: %d %s", code, out)
	}
	// Usage errors: exit 2. Help: exit 0.
	for _, args := range [][]string{{"nope"}, {"group"}, {"project", "grant", "demo", "team:admin"}, {"token", "create"}, {"migrate", "down"}} {
		if code, _, _ := run(t, append(args, dd...)...); code != 2 {
			t.Errorf("continuo %v: exit %d, want 2", args, code)
		}
	}
	for _, args := range [][]string{{"help"}, {"serve", "--help"}, {"token", "create", "--help"}} {
		if code, _, _ := run(t, args...); code != 0 {
			t.Errorf("continuo %v: exit %d, want 0", args, code)
		}
	}
}

// export and import move a whole database: the import exports identically,
// and a token made before the export still authenticates after it.
func TestExportImport(t *testing.T) {
	src := []string{"--data-dir", filepath.Join(t.TempDir(), "src")}
	dst := []string{"--data-dir", filepath.Join(t.TempDir(), "dst")}
	file := filepath.Join(t.TempDir(), "dump.jsonl")
	runJSON(t, append([]string{"init", "--project", "none"}, src...)...)
	tok := runJSON(t, append([]string{"token", "create", "--principal", "alice", "--scopes", "sessions:read"}, src...)...)["token"].(string)
	runJSON(t, append([]string{"project", "add", "demo", "--grant", "alice:write"}, src...)...)
	exp := runJSON(t, append([]string{"export", file}, src...)...)
	imp := runJSON(t, append([]string{"import", file}, dst...)...)
	if exp["rows"] != imp["rows"] || exp["rows"].(float64) < 5 {
		t.Fatalf("export %v, import %v", exp, imp)
	}
	_, a, _ := run(t, append([]string{"export", "-"}, src...)...)
	_, b, _ := run(t, append([]string{"export", "-"}, dst...)...)
	if a != b || a == "" {
		t.Fatalf("exports differ:\n%s\n---\n%s", a, b)
	}
	db, err := sqlite.Open(context.Background(), filepath.Join(dst[1], "continuo.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := auth.New(db, nil).Authenticate(context.Background(), tok)
	db.Close()
	if err != nil || c.Principal != "alice" {
		t.Fatalf("token after import: %+v %v", c, err)
	}
	// A second import into the now full database is refused.
	code, out, _ := run(t, append([]string{"import", file, "--json"}, dst...)...)
	if code != 1 || !strings.Contains(out, "empty database") {
		t.Fatalf("second import: %d %s", code, out)
	}
}

// gitRepo makes a git checkout with one commit and returns its path.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "demo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// project add takes only a git checkout as a root: a directory inside one
// registers the checkout's top level; anything else is refused, saying why.
func TestProjectAddRoot(t *testing.T) {
	dd := []string{"--data-dir", filepath.Join(t.TempDir(), "data")}
	runJSON(t, append([]string{"init", "--project", "none"}, dd...)...)
	repo := gitRepo(t)
	if err := os.Mkdir(filepath.Join(repo, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	runJSON(t, append([]string{"project", "add", "demo", "--root", filepath.Join(repo, "sub")}, dd...)...)
	ps := runJSON(t, append([]string{"project", "list"}, dd...)...)["projects"].([]any)
	if root := ps[0].(map[string]any)["root"]; len(ps) != 1 || root != repo {
		t.Fatalf("project list: %v, want the root %s", ps, repo)
	}
	notRepo := t.TempDir()
	for _, tc := range []struct{ root, want string }{
		{filepath.Join(notRepo, "missing"), "does not exist"},
		{notRepo, "is not in a git checkout"},
		{"/", "system directory"},
		{"/etc", "system directory"},
	} {
		code, out, errs := run(t, append([]string{"project", "add", "p", "--root", tc.root, "--json"}, dd...)...)
		if code != 1 || !strings.Contains(errs, tc.want) || !strings.Contains(out, `"invalid_input"`) {
			t.Errorf("project add --root %s: exit %d, stdout %q, stderr %q; want exit 1 and %q", tc.root, code, out, errs, tc.want)
		}
	}
	if ps := runJSON(t, append([]string{"project", "list"}, dd...)...)["projects"].([]any); len(ps) != 1 {
		t.Fatalf("a refused root was registered: %v", ps)
	}
}

// TestToolsetsFlag: --toolsets of serve and stdio, and [server] toolsets,
// are checked with the rest of the configuration: an unknown toolset is
// an error naming it and the known ones, before anything starts or is
// created.
func TestToolsetsFlag(t *testing.T) {
	d := filepath.Join(t.TempDir(), "data")
	cfg := filepath.Join(t.TempDir(), "continuo.toml")
	if err := os.WriteFile(cfg, []byte("[server]\ntoolsets = [\"worker\", \"owner\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"stdio", "--toolsets", "continuity,bogus"},
		{"serve", "--toolsets", "bogus", "--listen", "127.0.0.1:0"},
		{"stdio", "--config", cfg},
	} {
		code, _, errs := run(t, append(args, "--data-dir", d)...)
		if code != 1 || !strings.Contains(errs, "server.toolsets[") || !strings.Contains(errs, "continuity, delegation, swarm, worker, all") {
			t.Errorf("continuo %v: exit %d: %s", args, code, errs)
		}
	}
	if _, err := os.Stat(d); !os.IsNotExist(err) {
		t.Errorf("a refused configuration made the data directory: %v", err)
	}
}
