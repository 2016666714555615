package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// project check add|remove|list change a registered project's checks in
// the database; bad input is refused and writes nothing; adding a project
// that exists says how to change its checks.
func TestProjectCheck(t *testing.T) {
	dd := []string{"--data-dir", filepath.Join(t.TempDir(), "data")}
	runJSON(t, append([]string{"init", "--project", "none"}, dd...)...)
	runJSON(t, append([]string{"project", "add", "demo", "--root", gitRepo(t)}, dd...)...)

	v := runJSON(t, append(append([]string{"project", "check", "add", "demo", "unit", "--timeout", "30"}, dd...), "--", "go", "test", "-run", "X Y", "./...")...)
	if v["check"] != "unit" || len(v["command"].([]any)) != 5 {
		t.Fatalf("check add: %v", v)
	}
	checks := runJSON(t, append([]string{"project", "check", "list", "demo"}, dd...)...)["checks"].(map[string]any)
	unit, _ := checks["unit"].(map[string]any)
	if len(checks) != 1 || unit["timeout_secs"] != float64(30) || unit["command"].([]any)[3] != "X Y" {
		t.Fatalf("check list: %v", checks)
	}
	if code, out, _ := run(t, append([]string{"project", "check", "list", "demo"}, dd...)...); code != 0 || !strings.Contains(out, `go test -run "X Y" ./...`) {
		t.Fatalf("check list (text): exit %d, %q", code, out)
	}
	// Replacing keeps one check of the name.
	runJSON(t, append(append([]string{"project", "check", "add", "demo", "unit"}, dd...), "--", "true")...)
	if checks := runJSON(t, append([]string{"project", "check", "list", "demo"}, dd...)...)["checks"].(map[string]any); len(checks) != 1 {
		t.Fatalf("replaced: %v", checks)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"project", "check", "add", "demo", "bad name", "--", "true"}, 1, "invalid_input"},
		{[]string{"project", "check", "add", "nope", "unit", "--", "true"}, 1, "not_found"},
		{[]string{"project", "check", "add", "demo", "unit"}, 2, ""},
		{[]string{"project", "check", "remove", "demo", "missing"}, 1, "not_found"},
		{[]string{"project", "add", "demo"}, 1, "project check add demo"},
	} {
		i := slices.Index(tc.args, "--")
		if i < 0 {
			i = len(tc.args)
		}
		code, out, errs := run(t, slices.Insert(slices.Clone(tc.args), i, append([]string{"--json"}, dd...)...)...)
		if code != tc.code || !strings.Contains(out+errs, tc.want) {
			t.Errorf("%v: exit %d, %q %q; want exit %d and %q", tc.args, code, out, errs, tc.code, tc.want)
		}
	}
	if checks := runJSON(t, append([]string{"project", "check", "list", "demo"}, dd...)...)["checks"].(map[string]any); len(checks) != 1 || checks["unit"] == nil {
		t.Fatalf("a refused change was written: %v", checks)
	}
	runJSON(t, append([]string{"project", "check", "remove", "demo", "unit"}, dd...)...)
	if checks := runJSON(t, append([]string{"project", "check", "list", "demo"}, dd...)...)["checks"].(map[string]any); len(checks) != 0 {
		t.Fatalf("after remove: %v", checks)
	}
}

// Without --config, a command reads DATA_DIR/continuo.toml when it exists.
func TestDefaultConfigFile(t *testing.T) {
	d := filepath.Join(t.TempDir(), "data")
	runJSON(t, "init", "--project", "none", "--data-dir", d)
	if err := os.WriteFile(filepath.Join(d, DefaultConfigName), []byte("[server]\nbogus = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "token", "list", "--data-dir", d)
	if code == 0 || !strings.Contains(errs, filepath.Join(d, DefaultConfigName)) || !strings.Contains(errs, "bogus") {
		t.Fatalf("token list with a bad default config: exit %d, %q", code, errs)
	}
}
