// Package workspace reads facts about a project's git checkout for a handoff
// brief (CONTRACT.md §4, "workspace"), takes the source fingerprint a
// validation run records (SourceOf), and creates and removes the git
// worktrees of sessions started in worktree mode.
//
// It shells out to the git binary instead of reading the repository itself:
// git's own notion of "dirty" (ignore rules, racy timestamps, submodules,
// sparse checkouts, fsmonitor, reftable) is too large to reimplement. Every
// call has a timeout, so a hung git (a network filesystem, a lock held by an
// editor) cannot hang a brief.
//
// Reading never writes: git runs with GIT_OPTIONAL_LOCKS=0, so "git status"
// does not take the index lock to refresh stat data, which would both modify
// the repository and make a concurrent "git commit" in the user's terminal
// fail with "index.lock exists".
//
// Fingerprint is the exception to shelling out: it must be cheap enough to
// call before and after building every brief, so it only stats and reads a
// few small files.
package workspace

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

// State is what a brief says about a checkout.
type State struct {
	Branch string // "" when detached
	Head   string // full lowercase hex commit id, "" for a repo without commits
	Dirty  bool   // uncommitted changes, including untracked files (not ignored ones)
	// Changes are the first MaxChanges changed paths in git's order (or
	// as many as ProbeUpTo was asked for), and ChangedTotal how many there
	// are in all.
	Changes      []Change
	ChangedTotal int
}

// Change is one changed path of a checkout.
type Change struct {
	// Status is git's XY code as porcelain v2 prints it: index then work
	// tree, "." for unchanged ("M." staged, ".M" modified, "A." added,
	// "R." renamed, "UU" unmerged), or "??" for an untracked path.
	Status string
	Path   string // relative to the top level, as git prints it
}

// MaxChanges bounds State.Changes (CONTRACT.md §4: ≤20 paths and the total).
const MaxChanges = 20

// MaxListedChanges bounds what ProbeUpTo lists: the working set's every
// changed path, up to 500 (CONTRACT.md §4).
const MaxListedChanges = 500

// Timeouts applied on top of the caller's context. Reads are cheap even in
// large repositories; a worktree checkout writes every file of the tree.
const (
	readTimeout     = 30 * time.Second
	worktreeTimeout = 5 * time.Minute
)

// maxStderr bounds how much of git's stderr an error carries: enough for
// git's one or two "fatal:" lines, not enough to flood a log or a response.
const maxStderr = 512

// ProbeUpTo reads the state of the git checkout at root with ONE `git
// status --porcelain=v2 --branch -z --untracked-files=normal` call (run as
// `git -C root ...` with GIT_OPTIONAL_LOCKS=0 so it never takes the index
// lock, and LC_ALL=C), listing up to n changed paths (at most
// MaxListedChanges; MaxChanges when n ≤ 0); the total still counts them
// all. Returns an error for a non-repo or a missing dir.
//
// One call gives branch, head, dirtiness and the changed paths from the
// same instant, so a brief never pairs the head of one moment with the
// changes of another.
func ProbeUpTo(ctx context.Context, root string, n int) (State, error) {
	if root == "" {
		return State{}, errors.New("workspace: probe: empty path")
	}
	p := statusParser{max: min(max(n, 0), MaxListedChanges)}
	// core.fsmonitor=false: a read-only probe must not start a monitor
	// daemon or run a configured fsmonitor hook program.
	err := runGit(ctx, readTimeout, root, &p, "-c", "core.fsmonitor=false",
		"status", "--porcelain=v2", "--branch", "-z", "--untracked-files=normal")
	if err != nil {
		return State{}, err
	}
	return p.result()
}

// statusParser is an io.Writer that parses `git status --porcelain=v2
// --branch -z` as git writes it. Headers ("# branch.oid", "# branch.head")
// always come before the entries. It keeps the headers and the first
// max entries and only counts the rest, so memory stays bounded even
// when a checkout has hundreds of thousands of untracked files, while git
// still runs to completion so that its exit status is checked.
type statusParser struct {
	porcelain // at most maxHeader bytes of a record
	tooLong   bool
	changes   []Change
	total     int
	max       int // entries kept; 0 means MaxChanges
}

// maxHeader bounds one stored record; the longest legitimate header is a
// branch name, which git limits only by the filesystem. A longer path is
// kept cut.
const maxHeader = 4096

func (p *statusParser) Write(b []byte) (int, error) {
	p.records.write(b, maxHeader, p.endRecord)
	return len(b), nil
}

// endRecord handles one complete NUL-terminated record.
func (p *statusParser) endRecord(b []byte, long bool) {
	r, ok := p.next(b, long)
	switch {
	case !ok || r.orig:
		return
	case r.header:
		p.tooLong = p.tooLong || long
		return
	}
	// "1", "2", "u" (changed, renamed, unmerged) and "?" (untracked) are
	// changes. "!" (ignored) is not; git lists it only when asked to, but a
	// parser should not depend on that.
	if !r.change() {
		return
	}
	p.total++
	if len(p.changes) >= cmp.Or(p.max, MaxChanges) || !r.ok {
		return // malformed: counted, not listed
	}
	p.changes = append(p.changes, Change{Status: r.status, Path: r.path})
}

func (p *statusParser) result() (State, error) {
	p.records.flush(p.endRecord) // output not NUL-terminated: take what is there
	if p.tooLong {
		return State{}, errors.New("workspace: probe: git status header too long")
	}
	if !p.sawOID || !p.sawHead {
		return State{}, errors.New("workspace: probe: git status printed no branch headers")
	}
	head, err := p.commit("probe")
	if err != nil {
		return State{}, err
	}
	st := State{Branch: p.branch, Head: head, Dirty: p.total > 0, Changes: p.changes, ChangedTotal: p.total}
	if st.Branch == "(detached)" {
		st.Branch = ""
	}
	return st, nil
}

// isObjectID reports whether s is a full lowercase hex object id: 40
// characters for SHA-1 repositories, 64 for SHA-256 ones.
func isObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// IsRepo reports whether dir is inside a git work tree (used at first start
// to register the current directory as a project).
func IsRepo(ctx context.Context, dir string) bool {
	if dir == "" {
		return false
	}
	var out bytes.Buffer
	err := runGit(ctx, readTimeout, dir, &limitedBuffer{buf: &out, max: 64}, "rev-parse", "--is-inside-work-tree")
	return err == nil && strings.TrimSpace(out.String()) == "true"
}

// TopLevel returns the absolute top-level directory of the work tree
// containing dir.
func TopLevel(ctx context.Context, dir string) (string, error) {
	if dir == "" {
		return "", errors.New("workspace: top level: empty path")
	}
	var out bytes.Buffer
	if err := runGit(ctx, readTimeout, dir, &limitedBuffer{buf: &out, max: 64 << 10}, "rev-parse", "--show-toplevel"); err != nil {
		return "", err
	}
	// Only the final newline is git's: a path may itself end in spaces.
	top := strings.TrimSuffix(out.String(), "\n")
	if top == "" {
		return "", fmt.Errorf("workspace: top level: %s is not in a work tree", dir)
	}
	top = filepath.Clean(filepath.FromSlash(top))
	if !filepath.IsAbs(top) {
		return "", fmt.Errorf("workspace: top level: git printed a relative path %q", top)
	}
	return top, nil
}

// systemDirs are directories that are never a project's checkout, even
// when git says they are one (etckeeper keeps /etc in git): a project's
// root is where sessions make worktrees and run checks.
var systemDirs = map[string]bool{
	"/": true, "/bin": true, "/boot": true, "/dev": true, "/etc": true, "/home": true, "/lib": true,
	"/lib32": true, "/lib64": true, "/libx32": true, "/media": true, "/mnt": true, "/opt": true,
	"/proc": true, "/root": true, "/run": true, "/sbin": true, "/srv": true, "/sys": true, "/tmp": true,
	"/usr": true, "/usr/bin": true, "/usr/lib": true, "/usr/local": true, "/usr/sbin": true,
	"/usr/share": true, "/var": true, "/var/lib": true, "/var/tmp": true,
	"/Applications": true, "/Library": true, "/System": true, "/Users": true, "/Volumes": true,
	"/private": true, "/private/etc": true, "/private/tmp": true, "/private/var": true,
}

// CheckoutRoot validates a directory given as a project's root and returns
// the top level of the git checkout it is in: dir must exist, be a
// directory, be inside a git work tree, and neither it nor that top level
// may be the filesystem root or a system directory. Errors are sentences
// for the operator who typed dir.
func CheckoutRoot(ctx context.Context, dir string) (string, error) {
	if dir == "" {
		return "", errors.New("the project root is empty")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("%s does not exist", abs)
	case err != nil:
		return "", fmt.Errorf("%s cannot be read: %v", abs, err)
	case !fi.IsDir():
		return "", fmt.Errorf("%s is not a directory", abs)
	}
	if err := notSystem(abs); err != nil {
		return "", err
	}
	if !IsRepo(ctx, abs) {
		return "", fmt.Errorf("%s is not in a git checkout (a project's root is the top level of one, e.g. after git clone or git init)", abs)
	}
	top, err := TopLevel(ctx, abs)
	if err != nil {
		return "", fmt.Errorf("%s: cannot find the top level of its git checkout: %v", abs, err)
	}
	if err := notSystem(top); err != nil {
		return "", err
	}
	return top, nil
}

// notSystem refuses the filesystem root and system directories, also when
// reached through a symbolic link.
func notSystem(dir string) error {
	real := dir
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		real = r
	}
	for _, d := range []string{filepath.Clean(dir), filepath.Clean(real)} {
		if systemDirs[filepath.ToSlash(d)] || filepath.Dir(d) == d {
			return fmt.Errorf("%s is a system directory, not a project's checkout", dir)
		}
	}
	return nil
}

// Head returns the commit HEAD of the checkout at dir points at, "" for a
// repository without commits. A session records it when it starts, so a
// later brief can say what was committed since.
func Head(ctx context.Context, dir string) (string, error) {
	if dir == "" {
		return "", errors.New("workspace: head: empty path")
	}
	var out bytes.Buffer
	err := runGit(ctx, readTimeout, dir, &limitedBuffer{buf: &out, max: 128}, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	// --verify --quiet exits 1 and says nothing on an unborn branch; a
	// directory that is no repository is exit 128 with a "fatal:" line.
	var ge *gitError
	var exit *exec.ExitError
	if errors.As(err, &ge) && errors.As(ge.err, &exit) && exit.ExitCode() == 1 && ge.stderr == "" {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	h := strings.TrimSpace(out.String())
	if !isObjectID(h) {
		return "", fmt.Errorf("workspace: head: unexpected commit id %q", h)
	}
	return h, nil
}

// Commits is what was committed on a checkout since a base commit.
type Commits struct {
	Count    int      // commits reachable from HEAD and not from the base
	Subjects []string // the newest MaxSubjects of them (or as many as SinceUpTo was asked for), newest first
}

// MaxSubjects bounds Commits.Subjects.
const MaxSubjects = 3

// MaxListedSubjects bounds what SinceUpTo lists, and subjectBytes each
// subject it keeps: the working set names the commits since the session
// started, not a whole history.
const (
	MaxListedSubjects = 100
	subjectBytes      = 512
)

// SinceUpTo counts the commits of the checkout at dir since base (`git
// rev-list --count base..HEAD`) and reads the subjects of the newest n
// (`git log -n<n> --format=%s`; at most MaxListedSubjects, each cut to 512
// bytes). base must be a full object id; a base git does not know
// (garbage-collected, another repository) is an error.
func SinceUpTo(ctx context.Context, dir, base string, n int) (Commits, error) {
	n = min(max(n, 0), MaxListedSubjects)
	if !isObjectID(base) {
		return Commits{}, fmt.Errorf("workspace: since: %q is not a commit id", base)
	}
	rng := base + "..HEAD"
	var out bytes.Buffer
	if err := runGit(ctx, readTimeout, dir, &limitedBuffer{buf: &out, max: 64}, "rev-list", "--count", rng, "--"); err != nil {
		return Commits{}, err
	}
	var c Commits
	if _, err := fmt.Sscanf(strings.TrimSpace(out.String()), "%d", &c.Count); err != nil {
		return Commits{}, fmt.Errorf("workspace: since: git rev-list printed %q", out.String())
	}
	if c.Count == 0 || n == 0 {
		return c, nil
	}
	out.Reset()
	// %x00 after each subject: a subject never contains NUL. A subject cut
	// by the buffer's bound is dropped rather than shown cut.
	if err := runGit(ctx, readTimeout, dir, &limitedBuffer{buf: &out, max: max(16<<10, n*subjectBytes)}, "log", "--no-color",
		fmt.Sprintf("-n%d", n), "--format=%s%x00", rng, "--"); err != nil {
		return Commits{}, err
	}
	parts := strings.Split(out.String(), "\x00")
	for _, s := range parts[:len(parts)-1] { // the last part is what follows the last NUL
		if s = strings.TrimPrefix(s, "\n"); s != "" && len(c.Subjects) < n {
			c.Subjects = append(c.Subjects, cutBytes(s, subjectBytes))
		}
	}
	return c, nil
}

// cutBytes cuts s to at most n bytes at a character boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
