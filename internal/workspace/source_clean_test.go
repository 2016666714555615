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

// Two clean checkouts of different commits share Tree (no differences) but
// not TreeHash; the same checkout twice has one TreeHash; an edit changes
// it.
func TestSourceTreeHash(t *testing.T) {
	dir := newRepo(t)
	commit(t, dir, "a.txt", "a")
	first := mustSource(t, dir)
	if again := mustSource(t, dir); again.TreeHash() != first.TreeHash() {
		t.Fatalf("one checkout, two tree hashes: %s %s", first.TreeHash(), again.TreeHash())
	}
	commit(t, dir, "a.txt", "b")
	second := mustSource(t, dir)
	if second.Tree != first.Tree || second.TreeHash() == first.TreeHash() {
		t.Fatalf("two clean commits: trees %s %s, tree hashes %s %s", first.Tree, second.Tree, first.TreeHash(), second.TreeHash())
	}
	write(t, dir, "a.txt", "c")
	if dirty := mustSource(t, dir); dirty.TreeHash() == second.TreeHash() {
		t.Fatalf("an edit kept the tree hash %s", dirty.TreeHash())
	}
}
