package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every start of `continuo serve` in a git checkout that no project has
// registers it (granted to admin), not only the first: a user who later
// runs it in their own repository finds it in list_projects. A checkout
// whose name is taken is not registered; the start says in one line how.
func TestServeRegistersCheckout(t *testing.T) {
	data := dataDir(t, "sqlite")
	first := start(t, data, t.TempDir())
	admin := first.Admin
	if first.Project != "" {
		t.Fatalf("a start outside a checkout registered %s", first.Project)
	}
	first.stop()

	repo := filepath.Join(t.TempDir(), "myrepo")
	if err := os.Rename(gitRepo(t), repo); err != nil {
		t.Fatal(err)
	}
	srv := start(t, data, repo)
	if srv.Project == "" || srv.Hint != "" {
		t.Fatalf("a later start in %s registered nothing (hint %q)", repo, srv.Hint)
	}
	ps := must(t, connect(t, srv.URL, admin), "list_projects", map[string]any{})["projects"].([]any)
	if len(ps) != 1 || ps[0].(map[string]any)["name"] != "myrepo" || ps[0].(map[string]any)["project_id"] != srv.Project {
		t.Fatalf("list_projects = %v, want myrepo", ps)
	}
	srv.stop()

	// The same checkout again: nothing new. Another checkout of the same
	// name: a hint, nothing registered.
	again := start(t, data, repo)
	if again.Project != "" || again.Hint != "" {
		t.Fatalf("a start in a registered checkout: project %q, hint %q", again.Project, again.Hint)
	}
	again.stop()
	other := filepath.Join(t.TempDir(), "myrepo")
	if err := os.Rename(gitRepo(t), other); err != nil {
		t.Fatal(err)
	}
	clash := start(t, data, other)
	if clash.Project != "" || !strings.Contains(clash.Hint, "continuo project add NAME --root "+other) {
		t.Fatalf("a start in another checkout named myrepo: project %q, hint %q", clash.Project, clash.Hint)
	}
	clash.stop()
	none := start(t, data, other, "--project", "none")
	if none.Project != "" || none.Hint != "" {
		t.Fatalf("--project none: project %q, hint %q", none.Project, none.Hint)
	}
}
