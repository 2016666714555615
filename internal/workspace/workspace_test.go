package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestMain isolates every git the tests (and the package) run from the
// machine's configuration: a temporary HOME with a known .gitconfig, no
// system config, and a ceiling directory so that a temp dir that is not a
// repository is never taken for part of one further up.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	base, err := os.MkdirTemp("", "workspace-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(base)
	if base, err = filepath.EvalSymlinks(base); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	home := filepath.Join(base, "home")
	tmp := filepath.Join(base, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	gitconfig := "[init]\n\tdefaultBranch = main\n[user]\n\tname = Test\n\temail = test@example.com\n" +
		"[commit]\n\tgpgsign = false\n[core]\n\tautocrlf = false\n"
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for k, v := range map[string]string{
		"HOME":                    home,
		"XDG_CONFIG_HOME":         filepath.Join(home, ".config"),
		"GIT_CONFIG_NOSYSTEM":     "1",
		"GIT_CONFIG_GLOBAL":       filepath.Join(home, ".gitconfig"),
		"GIT_CEILING_DIRECTORIES": base,
		"TMPDIR":                  tmp, // t.TempDir() below the ceiling
		"GIT_AUTHOR_NAME":         "Test",
		"GIT_AUTHOR_EMAIL":        "test@example.com",
		"GIT_COMMITTER_NAME":      "Test",
		"GIT_COMMITTER_EMAIL":     "test@example.com",
	} {
		os.Setenv(k, v)
	}
	for _, k := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"} {
		os.Unsetenv(k)
	}
	return m.Run()
}

// git runs a git command for a test and returns its trimmed output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func newRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	return dir
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func commit(t *testing.T, dir, name, content string) {
	t.Helper()
	write(t, dir, name, content)
	git(t, dir, "add", "--", name)
	git(t, dir, "commit", "-q", "-m", "change "+name)
}

func TestProbe(t *testing.T) {
	tests := []struct {
		name       string
		setup      func(t *testing.T, dir string)
		wantBranch string
		noHead     bool
		wantDirty  bool
	}{
		{"fresh repo without commits", func(*testing.T, string) {}, "main", true, false},
		{"fresh repo with a file", func(t *testing.T, d string) { write(t, d, "a.txt", "a") }, "main", true, true},
		{"clean", func(t *testing.T, d string) { commit(t, d, "a.txt", "a") }, "main", false, false},
		{"modified file", func(t *testing.T, d string) {
			commit(t, d, "a.txt", "a")
			write(t, d, "a.txt", "changed")
		}, "main", false, true},
		{"staged change", func(t *testing.T, d string) {
			commit(t, d, "a.txt", "a")
			write(t, d, "a.txt", "changed")
			git(t, d, "add", "a.txt")
		}, "main", false, true},
		{"deleted file", func(t *testing.T, d string) {
			commit(t, d, "a.txt", "a")
			os.Remove(filepath.Join(d, "a.txt"))
		}, "main", false, true},
		{"untracked file", func(t *testing.T, d string) {
			commit(t, d, "a.txt", "a")
			write(t, d, "new.txt", "n")
		}, "main", false, true},
		{"untracked file named like a status header", func(t *testing.T, d string) {
			commit(t, d, "a.txt", "a")
			write(t, d, "# branch.head evil", "n")
		}, "main", false, true},
		{"ignored file", func(t *testing.T, d string) {
			commit(t, d, ".gitignore", "*.log\nbuild/\n")
			write(t, d, "debug.log", "x")
			write(t, d, "build/out.bin", "x")
		}, "main", false, false},
		{"branch with a slash", func(t *testing.T, d string) {
			commit(t, d, "a.txt", "a")
			git(t, d, "checkout", "-q", "-b", "feature/probe")
		}, "feature/probe", false, false},
		{"detached HEAD", func(t *testing.T, d string) {
			commit(t, d, "a.txt", "a")
			commit(t, d, "b.txt", "b")
			git(t, d, "checkout", "-q", "--detach", "HEAD~1")
		}, "", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := newRepo(t)
			tc.setup(t, dir)
			want := State{Branch: tc.wantBranch, Dirty: tc.wantDirty}
			if !tc.noHead {
				want.Head = git(t, dir, "rev-parse", "HEAD")
			}
			got, err := Probe(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			if got.Branch != want.Branch || got.Head != want.Head || got.Dirty != want.Dirty || (got.ChangedTotal > 0) != want.Dirty {
				t.Fatalf("Probe = %+v, want %+v", got, want)
			}
			if !tc.noHead && !isObjectID(got.Head) {
				t.Errorf("Head %q is not a full lowercase id", got.Head)
			}
		})
	}
}

func TestProbeSubdirectory(t *testing.T) {
	dir := newRepo(t)
	commit(t, dir, "sub/a.txt", "a")
	write(t, dir, "top.txt", "untracked at the top")
	got, err := Probe(context.Background(), filepath.Join(dir, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Dirty || got.Branch != "main" {
		t.Fatalf("Probe(subdir) = %+v, want the whole checkout: dirty on main", got)
	}
}

func TestProbeErrors(t *testing.T) {
	_, cases := badDirs(t)
	refuses(t, "Probe", cases, Probe)
}

// dirCase is a directory that an operation on a checkout must refuse,
// reached in ctx; is, when set, is the error it must be.
type dirCase struct {
	name string
	ctx  context.Context
	dir  string
	is   error
}

// badDirs returns a repository with a commit and the directories every
// operation on a checkout refuses, the repository reached in a cancelled
// context among them.
func badDirs(t *testing.T) (string, []dirCase) {
	t.Helper()
	repo := newRepo(t)
	commit(t, repo, "a.txt", "a")
	bare := t.TempDir()
	git(t, bare, "init", "-q", "--bare")
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	return repo, []dirCase{
		{"not a repository", context.Background(), t.TempDir(), nil},
		{"missing directory", context.Background(), filepath.Join(t.TempDir(), "missing"), nil},
		{"empty path", context.Background(), "", nil},
		{"bare repository", context.Background(), bare, nil},
		{"canceled context", canceled, repo, context.Canceled},
	}
}

// refuses checks that op, named what, fails on every case.
func refuses[T any](t *testing.T, what string, cases []dirCase, op func(context.Context, string) (T, error)) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := op(tc.ctx, tc.dir)
			if err == nil {
				t.Fatalf("%s(%q) = %+v, want an error", what, tc.dir, got)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("error %v is not %v", err, tc.is)
			}
		})
	}
}

// TestProbeTakesNoLock checks the promise that reading never writes: with
// a stale stat cache, a plain "git status" would rewrite the index.
func TestProbeTakesNoLock(t *testing.T) {
	dir := newRepo(t)
	commit(t, dir, "a.txt", "a")
	// Touch the file without changing it: stat data in the index is now
	// stale, which a locking status would refresh by rewriting the index.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "a.txt"), old, old); err != nil {
		t.Fatal(err)
	}
	index := func() string {
		b, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	before := index()
	st, err := Probe(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Dirty {
		t.Fatal("a touched but unchanged file made the checkout dirty")
	}
	if index() != before {
		t.Fatal("Probe rewrote the index")
	}
	// The setup is meaningful: a plain status does rewrite it.
	git(t, dir, "status", "--porcelain")
	if index() == before {
		t.Skip("this git does not refresh the index on status; nothing to compare with")
	}
}

func TestStatusParser(t *testing.T) {
	oid := strings.Repeat("ab", 20)
	tests := []struct {
		name    string
		out     string
		want    State
		wantErr bool
	}{
		{"clean", "# branch.oid " + oid + "\x00# branch.head main\x00", State{Branch: "main", Head: oid}, false},
		{"initial", "# branch.oid (initial)\x00# branch.head main\x00", State{Branch: "main"}, false},
		{"detached", "# branch.oid " + oid + "\x00# branch.head (detached)\x00", State{Head: oid}, false},
		{"upstream and ab headers", "# branch.oid " + oid + "\x00# branch.head dev\x00# branch.upstream origin/dev\x00# branch.ab +1 -0\x00",
			State{Branch: "dev", Head: oid}, false},
		{"rename whose old path looks like a header", "# branch.oid " + oid + "\x00# branch.head main\x00" +
			"2 R. N... 100644 100644 100644 " + oid + " " + oid + " R100 new\x00# branch.head evil\x00",
			State{Branch: "main", Head: oid, Dirty: true}, false},
		{"ignored entries only", "# branch.oid " + oid + "\x00# branch.head main\x00! build/\x00! x.log\x00", State{Branch: "main", Head: oid}, false},
		{"untracked after ignored", "# branch.oid " + oid + "\x00# branch.head main\x00! build/\x00? new\x00", State{Branch: "main", Head: oid, Dirty: true}, false},
		{"entry without final NUL", "# branch.oid " + oid + "\x00# branch.head main\x00? new", State{Branch: "main", Head: oid, Dirty: true}, false},
		{"no final NUL", "# branch.oid " + oid + "\x00# branch.head main", State{Branch: "main", Head: oid}, false},
		{"sha256 id", "# branch.oid " + strings.Repeat("c", 64) + "\x00# branch.head main\x00",
			State{Branch: "main", Head: strings.Repeat("c", 64)}, false},
		{"upper-case id", "# branch.oid " + strings.ToUpper(oid) + "\x00# branch.head main\x00", State{}, true},
		{"short id", "# branch.oid abc\x00# branch.head main\x00", State{}, true},
		{"no headers", "? new.txt\x00", State{}, true},
		{"empty", "", State{}, true},
		{"entries listed with their status", "# branch.oid " + oid + "\x00# branch.head main\x00" +
			"1 .M N... 100644 100644 100644 " + oid + " " + oid + " dir/a file.txt\x00" +
			"2 R. N... 100644 100644 100644 " + oid + " " + oid + " R100 new name\x00# old name\x00" +
			"u UU N... 100644 100644 100644 100644 " + oid + " " + oid + " " + oid + " conflict.go\x00" +
			"! ignored.log\x00? untracked\x00",
			State{Branch: "main", Head: oid, Dirty: true, ChangedTotal: 4, Changes: []Change{
				{".M", "dir/a file.txt"}, {"R.", "new name"}, {"UU", "conflict.go"}, {"??", "untracked"}}}, false},
		{"header too long", "# branch.oid " + oid + "\x00# branch.head " + strings.Repeat("x", maxHeader) + "\x00", State{}, true},
	}
	for _, tc := range tests {
		// Whole, and one byte at a time: git's output reaches the parser
		// in arbitrary pieces.
		for _, chunk := range []int{len(tc.out) + 1, 1} {
			t.Run(fmt.Sprintf("%s/chunk%d", tc.name, chunk), func(t *testing.T) {
				var p statusParser
				for i := 0; i < len(tc.out); i += chunk {
					end := min(i+chunk, len(tc.out))
					if n, err := p.Write([]byte(tc.out[i:end])); n != end-i || err != nil {
						t.Fatalf("Write = %d, %v", n, err)
					}
				}
				got, err := p.result()
				if (err != nil) != tc.wantErr {
					t.Fatalf("result() error = %v, want error %v", err, tc.wantErr)
				}
				if tc.want.Dirty && tc.want.ChangedTotal == 0 { // the cases below say only whether it is dirty
					got.Changes, got.ChangedTotal = nil, 0
				}
				if err == nil && !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("result() = %+v, want %+v", got, tc.want)
				}
			})
		}
	}
}

func mustFingerprint(t *testing.T, dir string) string {
	t.Helper()
	fp, err := Fingerprint(dir)
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

func TestFingerprint(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string) // runs before the first fingerprint
		act     func(t *testing.T, dir string)
		changes bool
	}{
		{"nothing happens", nil, func(*testing.T, string) {}, false},
		{"probe only", nil, func(t *testing.T, d string) {
			if _, err := Probe(context.Background(), d); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"commit", nil, func(t *testing.T, d string) { commit(t, d, "b.txt", "b") }, true},
		{"git add", nil, func(t *testing.T, d string) {
			write(t, d, "b.txt", "b")
			git(t, d, "add", "b.txt")
		}, true},
		{"git add of a modification of the same size", nil, func(t *testing.T, d string) {
			write(t, d, "a.txt", "b")
			git(t, d, "add", "a.txt")
		}, true},
		{"switch branch at the same commit", nil, func(t *testing.T, d string) {
			git(t, d, "checkout", "-q", "-b", "other")
		}, true},
		{"detach", nil, func(t *testing.T, d string) { git(t, d, "checkout", "-q", "--detach") }, true},
		{"commit on a packed branch", func(t *testing.T, d string) {
			git(t, d, "pack-refs", "--all")
		}, func(t *testing.T, d string) { commit(t, d, "b.txt", "b") }, true},
		{"reset to another commit", func(t *testing.T, d string) {
			commit(t, d, "b.txt", "b")
		}, func(t *testing.T, d string) { git(t, d, "reset", "-q", "--soft", "HEAD~1") }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := newRepo(t)
			commit(t, dir, "a.txt", "a")
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			before := mustFingerprint(t, dir)
			tc.act(t, dir)
			after := mustFingerprint(t, dir)
			if (before != after) != tc.changes {
				t.Fatalf("fingerprint changed = %v, want %v", before != after, tc.changes)
			}
		})
	}
}

func TestFingerprintFreshRepoAndSubdirectory(t *testing.T) {
	dir := newRepo(t)
	fresh := mustFingerprint(t, dir)
	commit(t, dir, "sub/a.txt", "a")
	if mustFingerprint(t, dir) == fresh {
		t.Fatal("first commit did not change the fingerprint")
	}
	if sub := mustFingerprint(t, filepath.Join(dir, "sub")); sub != mustFingerprint(t, dir) {
		t.Fatal("a subdirectory has another fingerprint than its checkout")
	}
}

func TestFingerprintWorktreeGitFile(t *testing.T) {
	root := newRepo(t)
	commit(t, root, "a.txt", "a")
	wt := filepath.Join(t.TempDir(), "wt")
	git(t, root, "worktree", "add", "-q", "-b", "side", wt)
	if info, err := os.Stat(filepath.Join(wt, ".git")); err != nil || !info.Mode().IsRegular() {
		t.Fatalf("expected .git to be a file in a worktree: %v", err)
	}

	rootFP := mustFingerprint(t, root)
	before := mustFingerprint(t, wt)
	if before == rootFP {
		t.Fatal("a worktree has the fingerprint of the main checkout")
	}
	if again := mustFingerprint(t, wt); again != before {
		t.Fatal("worktree fingerprint changed without a change")
	}
	commit(t, wt, "b.txt", "b") // moves refs/heads/side in the common dir
	if mustFingerprint(t, wt) == before {
		t.Fatal("commit in a worktree did not change its fingerprint")
	}
	write(t, wt, "c.txt", "c")
	mid := mustFingerprint(t, wt)
	git(t, wt, "add", "c.txt") // the worktree's own index
	if mustFingerprint(t, wt) == mid {
		t.Fatal("git add in a worktree did not change its fingerprint")
	}
	if mustFingerprint(t, root) != rootFP {
		t.Fatal("work in a worktree changed the main checkout's fingerprint")
	}

	// A relative gitdir in the .git file is resolved against the worktree.
	rel := t.TempDir()
	if err := os.WriteFile(filepath.Join(rel, ".git"), []byte("gitdir: "+mustRel(t, rel, filepath.Join(root, ".git"))+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := mustFingerprint(t, rel); got != rootFP {
		t.Fatal("relative gitdir file does not lead to the same git directory")
	}
}

func mustRel(t *testing.T, base, target string) string {
	t.Helper()
	r, err := filepath.Rel(base, target)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestFingerprintErrors(t *testing.T) {
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, ".git"), []byte("not a gitdir line"), 0o644); err != nil {
		t.Fatal(err)
	}
	dangling := t.TempDir()
	if err := os.WriteFile(filepath.Join(dangling, ".git"), []byte("gitdir: /nonexistent/.git"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{
		"empty path":        "",
		"missing directory": filepath.Join(t.TempDir(), "missing"),
		"malformed .git":    bad,
		"dangling gitdir":   dangling,
	} {
		t.Run(name, func(t *testing.T) {
			if fp, err := Fingerprint(dir); err == nil {
				t.Fatalf("Fingerprint(%q) = %q, want an error", dir, fp)
			}
		})
	}
}

func TestIsRepoAndTopLevel(t *testing.T) {
	repo := newRepo(t)
	commit(t, repo, "sub/dir/a.txt", "a")
	notRepo := t.TempDir()
	tests := []struct {
		name    string
		dir     string
		isRepo  bool
		wantTop string // "" when TopLevel must fail
	}{
		{"top level", repo, true, repo},
		{"subdirectory", filepath.Join(repo, "sub", "dir"), true, repo},
		{"inside .git", filepath.Join(repo, ".git"), false, ""},
		{"not a repository", notRepo, false, ""},
		{"missing", filepath.Join(notRepo, "missing"), false, ""},
		{"empty path", "", false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if got := IsRepo(ctx, tc.dir); got != tc.isRepo {
				t.Errorf("IsRepo = %v, want %v", got, tc.isRepo)
			}
			top, err := TopLevel(ctx, tc.dir)
			if tc.wantTop == "" {
				if err == nil {
					t.Fatalf("TopLevel = %q, want an error", top)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !filepath.IsAbs(top) || !sameFile(top, tc.wantTop) {
				t.Fatalf("TopLevel = %q, want %q", top, tc.wantTop)
			}
		})
	}
}

func TestWorktreeLifecycle(t *testing.T) {
	ctx := context.Background()
	root := newRepo(t)
	commit(t, root, "a.txt", "a")
	head := git(t, root, "rev-parse", "HEAD")
	base := t.TempDir()
	wt := filepath.Join(base, "prj", "s1") // parents do not exist yet

	// Add: a new branch at root's HEAD.
	if err := AddWorktree(ctx, root, wt, "continuo/s1"); err != nil {
		t.Fatal(err)
	}
	st, err := Probe(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	if want := (State{Branch: "continuo/s1", Head: head}); !reflect.DeepEqual(st, want) {
		t.Fatalf("Probe(worktree) = %+v, want %+v", st, want)
	}
	if info, err := os.Stat(filepath.Dir(wt)); err != nil || (runtime.GOOS != "windows" && info.Mode().Perm() != 0o700) {
		t.Fatalf("parent directory: %v, %v; want mode 0700", info, err)
	}

	// Reuse: same path and branch is a no-op that keeps the work there.
	write(t, wt, "work.txt", "in progress")
	if err := AddWorktree(ctx, root, wt, "continuo/s1"); err != nil {
		t.Fatalf("reuse: %v", err)
	}
	if _, err := os.Stat(filepath.Join(wt, "work.txt")); err != nil {
		t.Fatalf("reuse lost the work in the worktree: %v", err)
	}
	// Reuse through a relative path.
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, wt); err == nil {
			if err := AddWorktree(ctx, root, rel, "continuo/s1"); err != nil {
				t.Fatalf("reuse through %q: %v", rel, err)
			}
		}
	}

	// Same path, other branch: refused, not silently reused.
	if err := AddWorktree(ctx, root, wt, "continuo/other"); err == nil {
		t.Fatal("AddWorktree on a worktree of another branch succeeded")
	}

	// An existing branch is checked out, not recreated.
	git(t, root, "branch", "existing")
	commit(t, root, "b.txt", "b") // root moves on; "existing" stays behind
	wt2 := filepath.Join(base, "prj", "s2")
	if err := AddWorktree(ctx, root, wt2, "existing"); err != nil {
		t.Fatal(err)
	}
	if st, err := Probe(ctx, wt2); err != nil || st.Branch != "existing" || st.Head != head {
		t.Fatalf("Probe(existing) = %+v, %v; want branch existing at %s", st, err, head)
	}

	// Remove: gone from disk and from git's list, even with changes; the
	// branch stays.
	if err := RemoveWorktree(ctx, root, wt); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(wt); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("worktree directory still there: %v", err)
	}
	if list := git(t, root, "worktree", "list", "--porcelain"); strings.Contains(list, wt) {
		t.Fatalf("git still lists the removed worktree:\n%s", list)
	}
	git(t, root, "rev-parse", "--verify", "refs/heads/continuo/s1")
	if err := RemoveWorktree(ctx, root, wt); err == nil {
		t.Fatal("removing a removed worktree succeeded")
	}

	// After removal the same session worktree can be made again, now
	// checking out the branch that AddWorktree created the first time.
	if err := AddWorktree(ctx, root, wt, "continuo/s1"); err != nil {
		t.Fatalf("re-add after remove: %v", err)
	}
	if err := RemoveWorktree(ctx, root, wt); err != nil {
		t.Fatal(err)
	}
	if err := RemoveWorktree(ctx, root, wt2); err != nil {
		t.Fatal(err)
	}
}

func TestAddWorktreeErrors(t *testing.T) {
	ctx := context.Background()
	root := newRepo(t)
	commit(t, root, "a.txt", "a")
	notEmpty := t.TempDir()
	write(t, notEmpty, "x.txt", "x")
	fresh := newRepo(t) // no commits: no HEAD to start from

	tests := []struct {
		name, root, path, branch string
		wantInErr                string
	}{
		{"branch checked out in root", root, filepath.Join(t.TempDir(), "w"), "main", "main"},
		{"invalid branch name", root, filepath.Join(t.TempDir(), "w"), "bad..name", "invalid branch name"},
		{"branch looks like an option", root, filepath.Join(t.TempDir(), "w"), "-f", "invalid branch name"},
		{"empty branch", root, filepath.Join(t.TempDir(), "w"), "", "invalid branch name"},
		{"path not empty", root, notEmpty, "b1", "already exists"},
		{"root not a repository", t.TempDir(), filepath.Join(t.TempDir(), "w"), "b2", "not a git repository"},
		{"root without commits", fresh, filepath.Join(t.TempDir(), "w"), "b3", "HEAD"},
		{"empty path", root, "", "b4", "empty path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := AddWorktree(ctx, tc.root, tc.path, tc.branch)
			if err == nil {
				t.Fatal("AddWorktree succeeded")
			}
			if !strings.Contains(err.Error(), tc.wantInErr) {
				t.Fatalf("error %q does not mention %q", err, tc.wantInErr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(notEmpty, ".git")); err == nil {
		t.Fatal("a failed AddWorktree left a .git behind")
	}
}

func TestTrimStderr(t *testing.T) {
	long := strings.Repeat("é", maxStderr) // 2 bytes each: the cut lands mid-rune
	tests := []struct {
		name, in string
	}{
		{"short", "fatal: nope\n"},
		{"exactly the limit", strings.Repeat("x", maxStderr)},
		{"long ascii", strings.Repeat("x", 3*maxStderr)},
		{"long multibyte", "x" + long},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := trimStderr(tc.in)
			if len(got) > maxStderr || !utf8.ValidString(got) || !strings.HasPrefix(strings.TrimSpace(tc.in), got) {
				t.Fatalf("trimStderr gave %d bytes (valid %v)", len(got), utf8.ValidString(got))
			}
		})
	}
	// A real error carries git's message, bounded.
	err := RemoveWorktree(context.Background(), t.TempDir(), filepath.Join(t.TempDir(), strings.Repeat("long-name-", 80)))
	if err == nil || !strings.Contains(err.Error(), "fatal:") {
		t.Fatalf("error %v does not carry git's message", err)
	}
	var ge *gitError
	if !errors.As(err, &ge) || len(ge.stderr) > maxStderr {
		t.Fatalf("stderr not trimmed: %v", err)
	}
}

func TestGitEnv(t *testing.T) {
	env := gitEnv([]string{"PATH=/bin", "GIT_DIR=/elsewhere", "GIT_INDEX_FILE=/x", "LC_ALL=de_DE.UTF-8",
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.fsmonitor", "GIT_CONFIG_VALUE_0=/evil", "GIT_OPTIONAL_LOCKS=1"})
	got := strings.Join(env, "\n")
	for _, want := range []string{"PATH=/bin", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C", "GIT_TERMINAL_PROMPT=0"} {
		if !strings.Contains(got, want) {
			t.Errorf("env lacks %s", want)
		}
	}
	for _, gone := range []string{"GIT_DIR=", "GIT_INDEX_FILE=", "de_DE", "GIT_CONFIG_", "GIT_OPTIONAL_LOCKS=1"} {
		if strings.Contains(got, gone) {
			t.Errorf("env keeps %s", gone)
		}
	}
}

// TestProbeIgnoresInheritedGitDir: run from a git hook, Continuo inherits
// GIT_DIR; Probe must still read the checkout it was given.
func TestProbeIgnoresInheritedGitDir(t *testing.T) {
	a := newRepo(t)
	commit(t, a, "a.txt", "a")
	b := newRepo(t)
	t.Setenv("GIT_DIR", filepath.Join(b, ".git"))
	st, err := Probe(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	if st.Head == "" {
		t.Fatal("Probe read the repository named by GIT_DIR instead of root")
	}
}

// CheckoutRoot takes a checkout's top level or any directory inside it, and
// refuses, with a sentence saying why, what cannot be a project's root.
func TestCheckoutRoot(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	commit(t, repo, "sub/a.txt", "a")
	notRepo := t.TempDir()
	file := filepath.Join(notRepo, "f")
	write(t, notRepo, "f", "x")
	for _, dir := range []string{repo, filepath.Join(repo, "sub")} {
		top, err := CheckoutRoot(ctx, dir)
		if err != nil || !sameFile(top, repo) {
			t.Errorf("CheckoutRoot(%s) = %q, %v; want %s", dir, top, err, repo)
		}
	}
	for _, tc := range []struct{ dir, want string }{
		{filepath.Join(notRepo, "missing"), "does not exist"},
		{file, "is not a directory"},
		{notRepo, "is not in a git checkout"},
		{filepath.Join(repo, ".git"), "is not in a git checkout"},
		{"/", "system directory"},
		{"/etc", "system directory"},
		{"/usr", "system directory"},
		{"", "empty"},
	} {
		if top, err := CheckoutRoot(ctx, tc.dir); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckoutRoot(%q) = %q, %v; want an error containing %q", tc.dir, top, err, tc.want)
		}
	}
}

func TestProbeChanges(t *testing.T) {
	dir := newRepo(t)
	commit(t, dir, "a.txt", "a")
	commit(t, dir, "b.txt", "b")
	write(t, dir, "a.txt", "changed")
	git(t, dir, "mv", "b.txt", "# branch.head evil")
	for i := range 30 {
		write(t, dir, fmt.Sprintf("new%02d.txt", i), "n")
	}
	got, err := Probe(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Dirty || got.ChangedTotal != 32 || len(got.Changes) != MaxChanges || got.Branch != "main" {
		t.Fatalf("Probe = %+v, want 32 changes, %d listed", got, MaxChanges)
	}
	want := map[string]string{"a.txt": ".M", "# branch.head evil": "R.", "new00.txt": "??"}
	for _, c := range got.Changes {
		if w, ok := want[c.Path]; ok {
			if c.Status != w {
				t.Errorf("%s: status %q, want %q", c.Path, c.Status, w)
			}
			delete(want, c.Path)
		}
	}
	if len(want) != 0 {
		t.Errorf("not listed: %v (got %+v)", want, got.Changes)
	}
	// The working set lists more: up to what it asks for, the same paths
	// first, the same total.
	more, err := ProbeUpTo(context.Background(), dir, 25)
	if err != nil {
		t.Fatal(err)
	}
	if more.ChangedTotal != 32 || len(more.Changes) != 25 || !reflect.DeepEqual(more.Changes[:MaxChanges], got.Changes) {
		t.Fatalf("ProbeUpTo(25) = %+v, want the first 25 of 32", more)
	}
	if all, err := ProbeUpTo(context.Background(), dir, MaxListedChanges+1); err != nil || len(all.Changes) != 32 {
		t.Fatalf("ProbeUpTo(%d) = %d changes, %v; want all 32", MaxListedChanges+1, len(all.Changes), err)
	}
}

func TestHeadAndSince(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	if h, err := Head(ctx, dir); err != nil || h != "" {
		t.Fatalf("Head of a repo without commits = %q, %v; want \"\", nil", h, err)
	}
	if _, err := Head(ctx, t.TempDir()); err == nil {
		t.Fatal("Head of a non-repository: no error")
	}
	commit(t, dir, "a.txt", "a")
	base, err := Head(ctx, dir)
	if err != nil || base != git(t, dir, "rev-parse", "HEAD") {
		t.Fatalf("Head = %q, %v", base, err)
	}
	if c, err := Since(ctx, dir, base); err != nil || c.Count != 0 || c.Subjects != nil {
		t.Fatalf("Since(head) = %+v, %v; want nothing", c, err)
	}
	for i := range 5 {
		commit(t, dir, fmt.Sprintf("f%d.txt", i), "x")
	}
	c, err := Since(ctx, dir, base)
	if err != nil {
		t.Fatal(err)
	}
	subjects := strings.Split(git(t, dir, "log", "-n3", "--format=%s"), "\n")
	if c.Count != 5 || !reflect.DeepEqual(c.Subjects, subjects) {
		t.Fatalf("Since = %+v, want 5 commits and %q", c, subjects)
	}
	for _, n := range []int{0, 4, 5, MaxListedSubjects + 1} {
		c, err := SinceUpTo(ctx, dir, base, n)
		want := strings.Split(git(t, dir, "log", fmt.Sprintf("-n%d", min(n, 5)), "--format=%s"), "\n")
		if n == 0 {
			want = nil
		}
		if err != nil || c.Count != 5 || !reflect.DeepEqual(c.Subjects, want) {
			t.Fatalf("SinceUpTo(%d) = %+v, %v; want 5 commits and %q", n, c, err, want)
		}
	}
	if _, err := Since(ctx, dir, "--output=/tmp/x"); err == nil {
		t.Fatal("Since with a non-id base: no error")
	}
	if _, err := Since(ctx, dir, strings.Repeat("0", 40)); err == nil {
		t.Fatal("Since with an unknown base: no error")
	}
}
