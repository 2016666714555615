package workspace

import "testing"

// A committed checkout is clean; an edit, a new untracked file or a
// deletion makes it not; committing it makes it clean again.
func TestSourceClean(t *testing.T) {
	dir := newRepo(t)
	commit(t, dir, "a.txt", "a")
	if s := mustSource(t, dir); !s.Clean() {
		t.Fatalf("a committed checkout: %+v not clean", s)
	}
	for name, change := range map[string]func(){
		"edit":      func() { write(t, dir, "a.txt", "b") },
		"untracked": func() { write(t, dir, "new.txt", "n") },
		"deletion":  func() { git(t, dir, "rm", "-q", "a.txt") },
	} {
		change()
		if s := mustSource(t, dir); s.Clean() {
			t.Errorf("after an %s: %+v clean", name, s)
		}
		git(t, dir, "add", "-A")
		git(t, dir, "commit", "-q", "-m", name)
		if s := mustSource(t, dir); !s.Clean() {
			t.Errorf("after committing the %s: %+v not clean", name, s)
		}
	}
	if (Source{}).Clean() {
		t.Error("the zero Source is clean")
	}
}
