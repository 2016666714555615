// Package workspace reads facts about a project's git checkout for a handoff
// brief (CONTRACT.md §4, "workspace"), and creates and removes the git
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
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// State is what a brief says about a checkout.
type State struct {
	Branch string // "" when detached
	Head   string // full lowercase hex commit id, "" for a repo without commits
	Dirty  bool   // uncommitted changes, including untracked files (not ignored ones)
}

// Timeouts applied on top of the caller's context. Reads are cheap even in
// large repositories; a worktree checkout writes every file of the tree.
const (
	readTimeout     = 30 * time.Second
	worktreeTimeout = 5 * time.Minute
)

// maxStderr bounds how much of git's stderr an error carries: enough for
// git's one or two "fatal:" lines, not enough to flood a log or a response.
const maxStderr = 512

// Probe reads the state of the git checkout at root with ONE `git status
// --porcelain=v2 --branch -z --untracked-files=normal` call (run as `git -C
// root ...` with GIT_OPTIONAL_LOCKS=0 so it never takes the index lock, and
// LC_ALL=C). Returns an error for a non-repo or a missing dir.
//
// One call gives branch, head and dirtiness from the same instant, so a brief
// never pairs the head of one moment with the dirtiness of another.
func Probe(ctx context.Context, root string) (State, error) {
	if root == "" {
		return State{}, errors.New("workspace: probe: empty path")
	}
	var p statusParser
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
// always come before the entries, and the first entry is enough to know the
// checkout is dirty, so it keeps only header records and discards everything
// after the first entry: memory stays bounded even when a checkout has
// hundreds of thousands of untracked files, while git still runs to
// completion so that its exit status is checked.
type statusParser struct {
	rec     []byte // the header record being read
	entry   byte   // kind of the entry being read ('1', '2', 'u', '?', '!'), 0 in a header
	done    bool   // a change was seen: the rest is not needed
	head    string
	branch  string
	sawOID  bool
	sawHead bool
	tooLong bool
}

// maxHeader bounds one header record; the longest legitimate one is a
// branch name, which git limits only by the filesystem.
const maxHeader = 4096

func (p *statusParser) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 && !p.done {
		i := bytes.IndexByte(b, 0)
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		if len(p.rec) == 0 && p.entry == 0 && len(chunk) > 0 && chunk[0] != '#' {
			p.entry = chunk[0]
		}
		if p.entry == 0 {
			if len(p.rec)+len(chunk) <= maxHeader {
				p.rec = append(p.rec, chunk...)
			} else {
				p.tooLong = true
			}
		}
		if i < 0 {
			break
		}
		p.endRecord()
		b = b[i+1:]
	}
	return n, nil
}

// endRecord handles one complete NUL-terminated record.
func (p *statusParser) endRecord() {
	if p.entry != 0 {
		// "1", "2", "u" (changed, renamed, unmerged) and "?" (untracked)
		// make the checkout dirty. "!" (ignored) does not; git lists it
		// only when asked to, but a parser should not depend on that.
		p.done = p.entry != '!'
		p.entry = 0
		return
	}
	rec := string(p.rec)
	p.rec = p.rec[:0]
	switch {
	case strings.HasPrefix(rec, "# branch.oid "):
		p.sawOID = true
		p.head = strings.TrimPrefix(rec, "# branch.oid ")
	case strings.HasPrefix(rec, "# branch.head "):
		p.sawHead = true
		p.branch = strings.TrimPrefix(rec, "# branch.head ")
	}
}

func (p *statusParser) result() (State, error) {
	if len(p.rec) > 0 || p.entry != 0 { // output not NUL-terminated: take what is there
		p.endRecord()
	}
	if p.tooLong {
		return State{}, errors.New("workspace: probe: git status header too long")
	}
	if !p.sawOID || !p.sawHead {
		return State{}, errors.New("workspace: probe: git status printed no branch headers")
	}
	st := State{Branch: p.branch, Head: p.head, Dirty: p.done}
	if st.Branch == "(detached)" {
		st.Branch = ""
	}
	if st.Head == "(initial)" {
		st.Head = ""
	} else if !isObjectID(st.Head) {
		return State{}, fmt.Errorf("workspace: probe: unexpected commit id %q", st.Head)
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
