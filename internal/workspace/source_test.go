package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// source is a Source as these tests compare it: the files here are small,
// so every one is hashed by content and ByStat is empty (mustSource checks).
type source struct{ Head, Tree string }

func (s source) Clean() bool      { return Source{Head: s.Head, Tree: s.Tree}.Clean() }
func (s source) TreeHash() string { return Source{Head: s.Head, Tree: s.Tree}.TreeHash() }

func mustSource(t *testing.T, dir string) source {
	t.Helper()
	s, err := SourceOf(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Head != "" && !isObjectID(s.Head) {
		t.Fatalf("Head %q is not a full lowercase id", s.Head)
	}
	if len(s.Tree) != 64 {
		t.Fatalf("Tree %q is not a hex SHA-256", s.Tree)
	}
	if s.ByStatTotal != 0 || len(s.ByStat) != 0 {
		t.Fatalf("small files taken by stat: %d %v", s.ByStatTotal, s.ByStat)
	}
	return source{s.Head, s.Tree}
}

// touch sets a file's times without changing its content.
func touch(t *testing.T, dir, name string, when time.Time) {
	t.Helper()
	if err := os.Chtimes(filepath.Join(dir, name), when, when); err != nil {
		t.Fatal(err)
	}
}

func chmod(t *testing.T, dir, name string, mode os.FileMode) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("no execute bit on Windows")
	}
	if err := os.Chmod(filepath.Join(dir, name), mode); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, dir, target, name string) {
	t.Helper()
	p := filepath.Join(dir, name)
	os.Remove(p)
	if err := os.Symlink(target, p); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
}

func remove(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// TestSource: every kind of change to a checkout changes its Source, and
// what is no change to the working tree (a touch, an ignored file, the
// index) does not.
func TestSource(t *testing.T) {
	future := time.Now().Add(time.Hour)
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string) // before the first Source
		act     func(t *testing.T, dir string)
		changes bool
	}{
		// No change.
		{"nothing happens", nil, func(*testing.T, string) {}, false},
		{"git status refreshing the index", nil, func(t *testing.T, d string) {
			touch(t, d, "a.txt", future)
			git(t, d, "status", "--porcelain") // takes the lock, rewrites stat data
		}, false},
		{"touch of a tracked file", nil, func(t *testing.T, d string) { touch(t, d, "a.txt", future) }, false},
		{"touch of a modified file", func(t *testing.T, d string) { write(t, d, "a.txt", "changed") },
			func(t *testing.T, d string) { touch(t, d, "a.txt", future) }, false},
		{"touch of an untracked file", func(t *testing.T, d string) { write(t, d, "new.txt", "n") },
			func(t *testing.T, d string) { touch(t, d, "new.txt", future) }, false},
		{"same content written again", nil, func(t *testing.T, d string) { write(t, d, "a.txt", "a") }, false},
		{"new ignored file", nil, func(t *testing.T, d string) { write(t, d, "debug.log", "x") }, false},
		{"change of an ignored file", func(t *testing.T, d string) { write(t, d, "debug.log", "x") },
			func(t *testing.T, d string) { write(t, d, "debug.log", "y") }, false},
		{"new file in an ignored directory", nil, func(t *testing.T, d string) { write(t, d, "build/out/x.bin", "x") }, false},
		{"staging a modification", func(t *testing.T, d string) { write(t, d, "a.txt", "changed") },
			func(t *testing.T, d string) { git(t, d, "add", "a.txt") }, false},
		{"staging an untracked file", func(t *testing.T, d string) { write(t, d, "new.txt", "n") },
			func(t *testing.T, d string) { git(t, d, "add", "new.txt") }, false},
		{"staging a deletion", func(t *testing.T, d string) { remove(t, d, "a.txt") },
			func(t *testing.T, d string) { git(t, d, "rm", "-q", "--cached", "a.txt") }, false},
		{"unstaging", func(t *testing.T, d string) {
			write(t, d, "a.txt", "changed")
			git(t, d, "add", "a.txt")
		}, func(t *testing.T, d string) { git(t, d, "reset", "-q") }, false},

		// Changes.
		{"modified tracked file", nil, func(t *testing.T, d string) { write(t, d, "a.txt", "changed") }, true},
		{"modified tracked file, same size and times", nil, func(t *testing.T, d string) {
			info, err := os.Stat(filepath.Join(d, "a.txt"))
			if err != nil {
				t.Fatal(err)
			}
			write(t, d, "a.txt", "b")
			touch(t, d, "a.txt", info.ModTime())
		}, true},
		{"modified file modified again", func(t *testing.T, d string) { write(t, d, "a.txt", "changed") },
			func(t *testing.T, d string) { write(t, d, "a.txt", "changed again") }, true},
		{"staged file modified again", func(t *testing.T, d string) {
			write(t, d, "a.txt", "changed")
			git(t, d, "add", "a.txt")
		}, func(t *testing.T, d string) { write(t, d, "a.txt", "changed again") }, true},
		{"staged change reverted in the working tree", func(t *testing.T, d string) {
			write(t, d, "a.txt", "changed")
			git(t, d, "add", "a.txt")
		}, func(t *testing.T, d string) { write(t, d, "a.txt", "a") }, true},
		{"tracked file emptied", nil, func(t *testing.T, d string) { write(t, d, "a.txt", "") }, true},
		{"new untracked file", nil, func(t *testing.T, d string) { write(t, d, "new.txt", "n") }, true},
		{"new empty untracked file", nil, func(t *testing.T, d string) { write(t, d, "new.txt", "") }, true},
		{"new untracked file in a new directory", nil, func(t *testing.T, d string) { write(t, d, "x/y/new.txt", "n") }, true},
		{"modified untracked file", func(t *testing.T, d string) { write(t, d, "new.txt", "n") },
			func(t *testing.T, d string) { write(t, d, "new.txt", "m") }, true},
		{"deleted tracked file", nil, func(t *testing.T, d string) { remove(t, d, "a.txt") }, true},
		{"git rm", nil, func(t *testing.T, d string) { git(t, d, "rm", "-q", "a.txt") }, true},
		{"deleted untracked file", func(t *testing.T, d string) { write(t, d, "new.txt", "n") },
			func(t *testing.T, d string) { remove(t, d, "new.txt") }, true},
		{"git mv", nil, func(t *testing.T, d string) { git(t, d, "mv", "a.txt", "renamed.txt") }, true},
		{"mv of a tracked file", nil, func(t *testing.T, d string) {
			if err := os.Rename(filepath.Join(d, "a.txt"), filepath.Join(d, "renamed.txt")); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"mv of a modified file", func(t *testing.T, d string) { write(t, d, "a.txt", "changed") }, func(t *testing.T, d string) {
			if err := os.Rename(filepath.Join(d, "a.txt"), filepath.Join(d, "sub", "a.txt")); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"mv of an untracked file", func(t *testing.T, d string) { write(t, d, "new.txt", "n") }, func(t *testing.T, d string) {
			if err := os.Rename(filepath.Join(d, "new.txt"), filepath.Join(d, "other.txt")); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"chmod +x of a tracked file", nil, func(t *testing.T, d string) { chmod(t, d, "a.txt", 0o755) }, true},
		{"chmod +x of a modified file", func(t *testing.T, d string) { write(t, d, "a.txt", "changed") },
			func(t *testing.T, d string) { chmod(t, d, "a.txt", 0o755) }, true},
		{"chmod +x of an untracked file", func(t *testing.T, d string) { write(t, d, "new.sh", "n") },
			func(t *testing.T, d string) { chmod(t, d, "new.sh", 0o755) }, true},
		{"new commit", nil, func(t *testing.T, d string) { commit(t, d, "c.txt", "c") }, true},
		{"committing the changes", func(t *testing.T, d string) { write(t, d, "a.txt", "changed") },
			func(t *testing.T, d string) { git(t, d, "commit", "-q", "-am", "a") }, true},
		{"new symbolic link", nil, func(t *testing.T, d string) { symlink(t, d, "a.txt", "link") }, true},
		{"symbolic link pointed elsewhere", func(t *testing.T, d string) { symlink(t, d, "a.txt", "link") },
			func(t *testing.T, d string) { symlink(t, d, "sub/b.txt", "link") }, true},
		{"file replaced by a link to the same content", func(t *testing.T, d string) { write(t, d, "c.txt", "a") },
			func(t *testing.T, d string) { symlink(t, d, "a.txt", "c.txt") }, true},
		{"file replaced by a directory", nil, func(t *testing.T, d string) {
			remove(t, d, "a.txt")
			write(t, d, "a.txt/inside", "a")
		}, true},
		{"directory replaced by a link to it", nil, func(t *testing.T, d string) {
			if err := os.Rename(filepath.Join(d, "sub"), filepath.Join(d, "real")); err != nil {
				t.Fatal(err)
			}
			symlink(t, d, "real", "sub")
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := newRepo(t)
			write(t, dir, ".gitignore", "*.log\nbuild/\n")
			write(t, dir, "a.txt", "a")
			write(t, dir, "sub/b.txt", "b")
			git(t, dir, "add", ".")
			git(t, dir, "commit", "-q", "-m", "base")
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			before := mustSource(t, dir)
			if again := mustSource(t, dir); again != before {
				t.Fatalf("two calls on an unchanged checkout: %+v, then %+v", before, again)
			}
			tc.act(t, dir)
			after := mustSource(t, dir)
			if (before != after) != tc.changes {
				t.Fatalf("Source changed = %v, want %v (%+v, then %+v)", before != after, tc.changes, before, after)
			}
			if head := git(t, dir, "rev-parse", "HEAD"); after.Head != head {
				t.Fatalf("Head %q, want %q", after.Head, head)
			}
		})
	}
}

// TestSourceCleanCheckouts: the Tree depends on the working tree, not on
// where the checkout is or how it was made.
func TestSourceCleanCheckouts(t *testing.T) {
	a := newRepo(t)
	commit(t, a, "a.txt", "a")
	b := t.TempDir()
	git(t, b, "clone", "-q", a, ".")
	sa, sb := mustSource(t, a), mustSource(t, b)
	if sa != sb {
		t.Fatalf("a clean repository and its clean clone: %+v and %+v", sa, sb)
	}
	write(t, a, "a.txt", "changed")
	write(t, b, "a.txt", "changed")
	write(t, a, "new.txt", "n")
	write(t, b, "new.txt", "n")
	git(t, b, "add", "a.txt") // the index is not part of it
	if sa, sb := mustSource(t, a), mustSource(t, b); sa != sb {
		t.Fatalf("the same changes in two checkouts: %+v and %+v", sa, sb)
	}
}

func TestSourceRepoWithoutCommits(t *testing.T) {
	dir := newRepo(t)
	empty := mustSource(t, dir)
	if empty.Head != "" {
		t.Fatalf("Head of a repository without commits = %q", empty.Head)
	}
	if again := mustSource(t, dir); again != empty {
		t.Fatal("an unchanged repository without commits changed")
	}
	write(t, dir, "a.txt", "a")
	untracked := mustSource(t, dir)
	if untracked == empty {
		t.Fatal("a first file did not change the Source")
	}
	git(t, dir, "add", "a.txt")
	if staged := mustSource(t, dir); staged != untracked {
		t.Fatalf("git add changed the Tree: %+v, then %+v", untracked, staged)
	}
	write(t, dir, "a.txt", "b")
	if mustSource(t, dir) == untracked {
		t.Fatal("a change to a staged file in a repository without commits did not change the Source")
	}
	git(t, dir, "commit", "-q", "-am", "first")
	if s := mustSource(t, dir); s.Head != git(t, dir, "rev-parse", "HEAD") || s.Tree != empty.Tree {
		t.Fatalf("after the first commit: %+v, want its Head and the Tree of no differences %s", s, empty.Tree)
	}
}

// TestSourceUnusualNames: git's -z output carries any name as it is.
func TestSourceUnusualNames(t *testing.T) {
	names := []string{"with space.txt", "ünïcødé ✓.txt", "-dash", "# branch.oid 0123", "dir with space/x y.txt", `back\slash`}
	if runtime.GOOS != "windows" {
		names = append(names, "new\nline.txt", "tab\there", `"quoted"`)
	}
	dir := newRepo(t)
	for _, n := range names {
		write(t, dir, n, "committed")
	}
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-q", "-m", "names")
	prev := mustSource(t, dir)
	seen := map[source]string{prev: "clean"}
	step := func(what string) {
		t.Helper()
		s := mustSource(t, dir)
		if other, ok := seen[s]; ok {
			t.Fatalf("%s: the Source of %q again", what, other)
		}
		seen[s] = what
	}
	for _, n := range names {
		write(t, dir, n, "modified")
		step("modified " + n)
		write(t, dir, "untracked "+strings.ReplaceAll(n, "/", "_"), "u")
		step("untracked " + n)
	}
}

// TestSourceNoCollision: the length prefixes keep paths and contents apart.
func TestSourceNoCollision(t *testing.T) {
	a, b := newRepo(t), newRepo(t)
	write(t, a, "ab", "c")
	write(t, b, "a", "bc")
	if mustSource(t, a) == mustSource(t, b) {
		t.Fatal("path ab with content c hashed like path a with content bc")
	}
	c, d := newRepo(t), newRepo(t)
	write(t, c, "x", "")
	write(t, c, "y", "")
	write(t, d, "x", "")
	if mustSource(t, c) == mustSource(t, d) {
		t.Fatal("two empty files hashed like one")
	}
}

func TestSourceWorktree(t *testing.T) {
	root := newRepo(t)
	commit(t, root, "a.txt", "a")
	wt := filepath.Join(t.TempDir(), "wt")
	git(t, root, "worktree", "add", "-q", "-b", "side", wt)
	rootSrc, wtSrc := mustSource(t, root), mustSource(t, wt)
	if wtSrc != rootSrc {
		t.Fatalf("a fresh worktree at the same commit: %+v, the main checkout %+v", wtSrc, rootSrc)
	}
	write(t, wt, "a.txt", "changed in the worktree")
	changed := mustSource(t, wt)
	if changed == wtSrc {
		t.Fatal("a change in the worktree did not change its Source")
	}
	if mustSource(t, root) != rootSrc {
		t.Fatal("a change in the worktree changed the main checkout's Source")
	}
	git(t, wt, "commit", "-q", "-am", "in the worktree")
	if s := mustSource(t, wt); s.Head != git(t, wt, "rev-parse", "HEAD") || s.Head == rootSrc.Head {
		t.Fatalf("after a commit in the worktree: %+v", s)
	}
}

// TestSourceSubdirectory: a directory inside a checkout has its checkout's
// Source.
func TestSourceSubdirectory(t *testing.T) {
	dir := newRepo(t)
	commit(t, dir, "sub/deeper/a.txt", "a")
	write(t, dir, "top.txt", "untracked at the top")
	write(t, dir, "sub/deeper/a.txt", "changed")
	top := mustSource(t, dir)
	if sub := mustSource(t, filepath.Join(dir, "sub", "deeper")); sub != top {
		t.Fatalf("Source of a subdirectory %+v, of its checkout %+v", sub, top)
	}
}

// TestSourceNestedRepositories: a submodule and an untracked clone count
// by their own content, not by git's one line for them.
func TestSourceNestedRepositories(t *testing.T) {
	lib := newRepo(t)
	commit(t, lib, "lib.txt", "lib")
	dir := newRepo(t)
	commit(t, dir, "a.txt", "a")
	git(t, dir, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "mod")
	git(t, dir, "commit", "-q", "-m", "submodule")
	mod := filepath.Join(dir, "mod")
	clean := mustSource(t, dir)

	steps := []struct {
		name    string
		act     func()
		changes bool
	}{
		{"a file in the submodule modified", func() { write(t, mod, "lib.txt", "changed") }, true},
		{"modified again", func() { write(t, mod, "lib.txt", "changed again") }, true},
		{"staged in the submodule", func() { git(t, mod, "add", "lib.txt") }, false},
		{"an untracked file in the submodule", func() { write(t, mod, "new.txt", "n") }, true},
		{"committed in the submodule", func() { git(t, mod, "add", "."); git(t, mod, "commit", "-q", "-m", "x") }, true},
		{"the new submodule commit staged in the checkout", func() { git(t, dir, "add", "mod") }, false},
		{"committed in the checkout", func() { git(t, dir, "commit", "-q", "-m", "bump") }, true},
		{"an untracked clone", func() { git(t, dir, "clone", "-q", lib, "clone") }, true},
		{"a file in the clone modified", func() { write(t, dir, "clone/lib.txt", "changed") }, true},
		{"the same file touched", func() { touch(t, dir, "clone/lib.txt", time.Now().Add(time.Hour)) }, false},
		{"a commit in the clone", func() { git(t, filepath.Join(dir, "clone"), "commit", "-q", "-am", "c") }, true},
		{"an untracked file in the clone", func() { write(t, dir, "clone/new.txt", "n") }, true},
	}
	prev := clean
	for _, st := range steps {
		st.act()
		s := mustSource(t, dir)
		if (s != prev) != st.changes {
			t.Fatalf("%s: Source changed = %v, want %v", st.name, s != prev, st.changes)
		}
		prev = s
	}
	// Ignored, a clone is not part of it.
	write(t, dir, ".gitignore", "ignored/\n")
	git(t, dir, "add", ".gitignore")
	git(t, dir, "commit", "-q", "-m", "ignore")
	before := mustSource(t, dir)
	git(t, dir, "clone", "-q", lib, "ignored/clone")
	write(t, dir, "ignored/clone/lib.txt", "changed")
	if mustSource(t, dir) != before {
		t.Fatal("an ignored clone changed the Source")
	}
}

// TestSourceSpecialFiles: a FIFO where a file was is hashed by its type and
// never opened, so it cannot block SourceOf.
func TestSourceSpecialFiles(t *testing.T) {
	mkfifo, err := exec.LookPath("mkfifo")
	if err != nil {
		t.Skip("no mkfifo")
	}
	dir := newRepo(t)
	commit(t, dir, "a.txt", "a")
	before := mustSource(t, dir)
	remove(t, dir, "a.txt")
	if out, err := exec.Command(mkfifo, filepath.Join(dir, "a.txt")).CombinedOutput(); err != nil {
		t.Fatalf("mkfifo: %v %s", err, out)
	}
	if out, err := exec.Command(mkfifo, filepath.Join(dir, "untracked-fifo")).CombinedOutput(); err != nil {
		t.Fatalf("mkfifo: %v %s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := SourceOf(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Tree == before.Tree {
		t.Fatal("a file replaced by a FIFO did not change the Source")
	}
	remove(t, dir, "a.txt")
	if mustSource(t, dir).Tree == s.Tree {
		t.Fatal("the FIFO removed: no change")
	}
}

func TestSourceErrors(t *testing.T) {
	repo, cases := badDirs(t)
	// A .git that is no repository, inside a repository: not taken for a
	// subdirectory of the enclosing one.
	broken := filepath.Join(repo, "broken")
	if err := os.MkdirAll(filepath.Join(broken, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases = append(cases,
		dirCase{"inside .git", context.Background(), filepath.Join(repo, ".git"), nil},
		dirCase{"broken .git inside a repository", context.Background(), broken, nil})
	refuses(t, "SourceOf", cases, SourceOf)

	t.Run("unreadable file", func(t *testing.T) {
		if runtime.GOOS == "windows" || os.Geteuid() == 0 {
			t.Skip("permissions do not stop this user from reading")
		}
		dir := newRepo(t)
		write(t, dir, "secret", "s")
		chmod(t, dir, "secret", 0)
		if s, err := SourceOf(context.Background(), dir); err == nil {
			t.Fatalf("SourceOf with an unreadable untracked file = %+v, want an error", s)
		}
	})
}

// TestSourceTakesNoLock: like Probe, SourceOf never writes the index.
func TestSourceTakesNoLock(t *testing.T) {
	dir := newRepo(t)
	commit(t, dir, "a.txt", "a")
	touch(t, dir, "a.txt", time.Now().Add(-time.Hour))
	index := func() string {
		b, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	before := index()
	mustSource(t, dir)
	if index() != before {
		t.Fatal("SourceOf rewrote the index")
	}
}

// TestSourceIgnoresInheritedGitDir: run from a git hook, Continuo inherits
// GIT_DIR and GIT_WORK_TREE; SourceOf must still read the checkout it was
// given.
func TestSourceIgnoresInheritedGitDir(t *testing.T) {
	a := newRepo(t)
	commit(t, a, "a.txt", "a")
	b := newRepo(t)
	t.Setenv("GIT_DIR", filepath.Join(b, ".git"))
	t.Setenv("GIT_WORK_TREE", b)
	if s := mustSource(t, a); s.Head == "" {
		t.Fatal("SourceOf read the repository named by GIT_DIR")
	}
}

// feed writes out to a sourceParser in pieces of chunk bytes.
func feed(t *testing.T, p *sourceParser, out string, chunk int) {
	t.Helper()
	for i := 0; i < len(out); i += chunk {
		end := min(i+chunk, len(out))
		if n, err := p.Write([]byte(out[i:end])); err != nil {
			return // the error is result()'s too
		} else if n != end-i {
			t.Fatalf("Write = %d, want %d", n, end-i)
		}
	}
}

func TestSourceParser(t *testing.T) {
	oid := strings.Repeat("ab", 20)
	top := t.TempDir()
	write(t, top, "present.txt", "p")
	write(t, top, "dir/x.txt", "x")
	hdr := "# branch.oid " + oid + "\x00# branch.head main\x00"
	changed := func(path string) string {
		return "1 .M N... 100644 100644 100644 " + oid + " " + oid + " " + path + "\x00"
	}
	tests := []struct {
		name    string
		out     string
		head    string
		wantErr bool
	}{
		{"clean", hdr, oid, false},
		{"initial", "# branch.oid (initial)\x00# branch.head main\x00", "", false},
		{"entries", hdr + changed("present.txt") + "? dir/x.txt\x00? gone.txt\x00", oid, false},
		{"ignored entries are skipped", hdr + "! ignored.log\x00", oid, false},
		{"no final NUL", hdr + "? present.txt", oid, false},
		{"rename with both paths", hdr + "2 R. N... 100644 100644 100644 " + oid + " " + oid + " R100 present.txt\x00old.txt\x00", oid, false},
		{"rename without its original path", hdr + "2 R. N... 100644 100644 100644 " + oid + " " + oid + " R100 present.txt\x00", "", true},
		{"no headers", "? present.txt\x00", "", true},
		{"empty", "", "", true},
		{"short id", "# branch.oid abc\x00", "", true},
		{"upper-case id", "# branch.oid " + strings.ToUpper(oid) + "\x00", "", true},
		{"unknown record", hdr + "x what\x00", "", true},
		{"malformed record", hdr + "1 .M N...\x00", "", true},
		{"path outside the checkout", hdr + "? ../outside\x00", "", true},
		{"absolute path", hdr + "? /etc/passwd\x00", "", true},
		{"record too long", hdr + "? " + strings.Repeat("x", maxRecord) + "\x00", "", true},
	}
	for _, tc := range tests {
		var trees []string
		for _, chunk := range []int{len(tc.out) + 1, 7, 1} {
			t.Run(fmt.Sprintf("%s/chunk%d", tc.name, chunk), func(t *testing.T) {
				p := newSourceParser(context.Background(), top, 0, &budget{sourceLimits: limits, left: limits.maxBytes})
				feed(t, p, tc.out, chunk)
				s, err := p.result()
				if (err != nil) != tc.wantErr {
					t.Fatalf("result() = %+v, %v; want an error: %v", s, err, tc.wantErr)
				}
				if err == nil && s.Head != tc.head {
					t.Fatalf("Head %q, want %q", s.Head, tc.head)
				}
				trees = append(trees, s.Tree)
			})
		}
		if len(trees) == 3 && (trees[0] != trees[1] || trees[1] != trees[2]) {
			t.Errorf("%s: the Tree depends on how the output is cut: %q", tc.name, trees)
		}
	}

	treeIn := func(top, out string) string {
		t.Helper()
		p := newSourceParser(context.Background(), top, 0, &budget{sourceLimits: limits, left: limits.maxBytes})
		feed(t, p, hdr+out, len(hdr+out))
		s, err := p.result()
		if err != nil {
			t.Fatal(err)
		}
		return s.Tree
	}
	tree := func(out string) string { t.Helper(); return treeIn(top, out) }
	// A path that is gone when it is read is absent, whatever git said
	// about it: what the tree is at that moment.
	if tree(changed("gone.txt")) != tree("? gone.txt\x00") {
		t.Error("a listed path gone before the read hashed unlike an absent one")
	}
	// What git says about a path (staged, unstaged, untracked) is not
	// hashed, what is there is.
	staged := "1 M. N... 100644 100644 100644 " + oid + " " + oid + " present.txt\x00"
	if tree(changed("present.txt")) != tree(staged) || tree(staged) != tree("? present.txt\x00") {
		t.Error("git's status letters are part of the Tree")
	}
	if tree(changed("present.txt")) == tree(changed("gone.txt")) {
		t.Error("a present and an absent file hashed alike")
	}
	// A path below a file or a symbolic link is absent, and not read
	// through the link.
	empty := t.TempDir()
	if tree("? present.txt/below\x00") != treeIn(empty, "? present.txt/below\x00") {
		t.Error("a path below a file is not absent")
	}
	if err := os.Symlink("dir", filepath.Join(top, "link")); err == nil {
		if tree("? link/x.txt\x00") != treeIn(empty, "? link/x.txt\x00") {
			t.Error("a path below a symbolic link is not absent")
		}
		if tree("? link\x00") == treeIn(empty, "? link\x00") {
			t.Error("a symbolic link hashed like nothing")
		}
	}
}

// TestSourceReadStopsWithContext: reading a file stops when ctx is done.
func TestSourceReadStopsWithContext(t *testing.T) {
	top := t.TempDir()
	write(t, top, "big", strings.Repeat("x", 1<<20))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := newSourceParser(ctx, top, 0, &budget{sourceLimits: limits, left: limits.maxBytes})
	feed(t, p, "# branch.oid (initial)\x00? big\x00", 1<<10)
	if _, err := p.result(); !errors.Is(err, context.Canceled) {
		t.Fatalf("result() error %v, want %v", err, context.Canceled)
	}
}

// slowWriter takes its time over its first write, as SourceOf does while it
// hashes a large file.
type slowWriter struct {
	delay time.Duration
	n     int
}

func (w *slowWriter) Write(b []byte) (int, error) {
	if w.n == 0 {
		time.Sleep(w.delay)
	}
	w.n += len(b)
	return len(b), nil
}

// TestStreamGitSlowWriter: git's output is not cut off while the consumer
// works after git has exited, as it is when exec's copying goroutine calls
// the writer (WaitDelay, 2 s).
func TestStreamGitSlowWriter(t *testing.T) {
	dir := newRepo(t)
	commit(t, dir, "a.txt", "a")
	want := len(git(t, dir, "cat-file", "commit", "HEAD")) + 1
	delay := 2*time.Second + 300*time.Millisecond
	t.Run("streamGit", func(t *testing.T) {
		t.Parallel()
		w := &slowWriter{delay: delay}
		if err := streamGit(context.Background(), readTimeout, dir, nil, w, "cat-file", "commit", "HEAD"); err != nil {
			t.Fatal(err)
		}
		if w.n != want {
			t.Fatalf("the writer got %d bytes, want %d", w.n, want)
		}
	})
	t.Run("runGit, for comparison", func(t *testing.T) {
		t.Parallel()
		w := &slowWriter{delay: delay}
		if err := runGit(context.Background(), readTimeout, dir, w, "cat-file", "commit", "HEAD"); !errors.Is(err, exec.ErrWaitDelay) {
			t.Skipf("runGit with a slow writer: %v (%d bytes), not cut off here; nothing to compare with", err, w.n)
		}
	})
}
