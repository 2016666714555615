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
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
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

// Fingerprint returns a cheap (no subprocess) string that changes when HEAD,
// the current branch ref, or the index changes: it reads <gitdir>/HEAD, the
// ref file HEAD points to (or the stat of packed-refs when the ref is packed)
// and the stat (size and mtime in ns) and checksum trailer of <gitdir>/index.
// A `.git` file ("gitdir: ...", as in worktrees and submodules) is followed.
// Used to detect that the checkout changed while a brief was being built.
//
// It does not see edits to tracked files that were not staged; Probe does.
// It may change without a visible change (e.g. "git pack-refs"), which only
// makes a brief report itself incomplete once more than needed.
func Fingerprint(root string) (string, error) {
	if root == "" {
		return "", errors.New("workspace: fingerprint: empty path")
	}
	gitDir, err := findGitDir(root)
	if err != nil {
		return "", err
	}
	commonDir := gitDir
	if b, err := readSmall(filepath.Join(gitDir, "commondir")); err == nil {
		commonDir = resolve(gitDir, strings.TrimSpace(string(b)))
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("workspace: fingerprint: %w", err)
	}

	h := sha256.New()
	field := func(name, value string) {
		// Length-prefixed so that no two different inputs hash alike.
		fmt.Fprintf(h, "%s %d:%s\n", name, len(value), value)
	}
	field("gitdir", gitDir)

	head, err := readSmall(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", fmt.Errorf("workspace: fingerprint: %w", err)
	}
	field("head", string(head))

	if ref, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: "); ok {
		if info, err := os.Stat(filepath.Join(commonDir, "reftable")); err == nil && info.IsDir() {
			// The reftable backend keeps every ref in binary tables; the
			// list of tables changes on every ref update.
			list, err := readSmall(filepath.Join(commonDir, "reftable", "tables.list"))
			if err != nil {
				return "", fmt.Errorf("workspace: fingerprint: %w", err)
			}
			field("reftable", string(list))
		} else if validRef(ref) {
			dir := commonDir
			if perWorktreeRef(ref) {
				dir = gitDir
			}
			b, err := readSmall(filepath.Join(dir, filepath.FromSlash(ref)))
			switch {
			case err == nil:
				field("ref", string(b))
			case errors.Is(err, os.ErrNotExist):
				// Packed (or unborn): the packed-refs file changes when
				// a packed ref is updated (it is then written loose).
				field("packed-refs", statString(filepath.Join(commonDir, "packed-refs")))
			default:
				return "", fmt.Errorf("workspace: fingerprint: %w", err)
			}
		}
	}

	index := filepath.Join(gitDir, "index")
	field("index", statString(index))
	field("index-trailer", indexTrailer(index))
	return hex.EncodeToString(h.Sum(nil)), nil
}

// findGitDir finds the git directory of the checkout containing dir, as git
// does: the nearest ".git" directory, or ".git" file naming one, walking up.
func findGitDir(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("workspace: fingerprint: %w", err)
	}
	if _, err := os.Stat(d); err != nil {
		return "", fmt.Errorf("workspace: fingerprint: %w", err)
	}
	for {
		dotGit := filepath.Join(d, ".git")
		info, err := os.Stat(dotGit)
		switch {
		case err == nil && info.IsDir():
			return dotGit, nil
		case err == nil && info.Mode().IsRegular():
			b, err := readSmall(dotGit)
			if err != nil {
				return "", fmt.Errorf("workspace: fingerprint: %w", err)
			}
			target, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
			if !ok {
				return "", fmt.Errorf("workspace: fingerprint: %s is not a gitdir file", dotGit)
			}
			return resolve(d, strings.TrimSpace(target)), nil
		case err != nil && !errors.Is(err, os.ErrNotExist):
			return "", fmt.Errorf("workspace: fingerprint: %w", err)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("workspace: fingerprint: %s is not in a git checkout", dir)
		}
		d = parent
	}
}

// resolve interprets p relative to base unless it is absolute, as git does
// for "gitdir:" and "commondir" contents.
func resolve(base, p string) string {
	p = filepath.FromSlash(p)
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(base, p)
}

// readSmall reads a file that git keeps small (HEAD, a loose ref, a gitdir
// file). The bound protects against a corrupt or hostile repository pointing
// a ref at something huge.
func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 64<<10))
}

// validRef reports whether HEAD's target is a plain ref name that stays
// inside the git directory.
func validRef(ref string) bool {
	if !strings.HasPrefix(ref, "refs/") || strings.Contains(ref, "\\") {
		return false
	}
	for _, part := range strings.Split(ref, "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	return true
}

// perWorktreeRef reports whether ref lives in a worktree's own git directory
// rather than in the common one (gitrepository-layout(5)).
func perWorktreeRef(ref string) bool {
	for _, p := range []string{"refs/bisect/", "refs/worktree/", "refs/rewritten/"} {
		if strings.HasPrefix(ref, p) {
			return true
		}
	}
	return false
}

// statString describes a file by size and modification time, or "none".
func statString(path string) string {
	info, err := os.Stat(path)
	if err != nil {
		return "none"
	}
	return strconv.FormatInt(info.Size(), 10) + "@" + strconv.FormatInt(info.ModTime().UnixNano(), 10)
}

// indexTrailer returns the hex of the last 32 bytes of the index: its
// checksum (SHA-1 or SHA-256) over the whole content. The stat alone can
// miss a rewrite of the same size within the file system's timestamp
// granularity; the checksum cannot (unless index.skipHash zeroes it, and then
// the stat is what is left).
func indexTrailer(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "none"
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || info.Size() < 32 {
		return "none"
	}
	var buf [32]byte
	if _, err := f.ReadAt(buf[:], info.Size()-32); err != nil {
		return "none"
	}
	return hex.EncodeToString(buf[:])
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

// AddWorktree creates a git worktree at path on a new branch `branch`
// starting at HEAD of root; if the branch exists already, it is checked out
// into the worktree instead of being created. When path already is a
// worktree of this repository on that branch, it is reused and AddWorktree
// returns nil, so a retried request is harmless. A relative path is taken
// relative to the current directory; missing parent directories are created
// (mode 0700). Errors carry git's stderr trimmed to 512 bytes.
//
// git itself refuses to check out a branch that another worktree (including
// root's own checkout) has checked out, and to add a worktree at a non-empty
// directory; those errors are returned as they are.
func AddWorktree(ctx context.Context, root, path, branch string) error {
	if root == "" || path == "" {
		return errors.New("workspace: add worktree: empty path")
	}
	if branch == "" || strings.HasPrefix(branch, "-") {
		return fmt.Errorf("workspace: add worktree: invalid branch name %q", branch)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("workspace: add worktree: %w", err)
	}
	// Let git judge the name (no "..", no "~", no trailing ".lock", ...):
	// one rule set, git's, and a clear error before anything is created.
	err = runGit(ctx, readTimeout, root, io.Discard, "check-ref-format", "refs/heads/"+branch)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return fmt.Errorf("workspace: add worktree: invalid branch name %q", branch)
	case err != nil:
		return err // e.g. root does not exist
	}

	if _, err := os.Stat(abs); err == nil {
		on, ok, err := worktreeBranch(ctx, root, abs)
		if err != nil {
			return err
		}
		if ok && on == branch {
			return nil
		}
		if ok {
			return fmt.Errorf("workspace: add worktree: %s is a worktree on %q, not on %q", abs, on, branch)
		}
		// Not one of ours: let git decide (an empty directory is fine).
	}

	exists, err := branchExists(ctx, root, branch)
	if err != nil {
		return err
	}
	// git would create missing parents with the default umask; worktrees
	// hold a project's source, so parents Continuo makes are private.
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return fmt.Errorf("workspace: add worktree: %w", err)
	}
	// "--" ends the options, so a path can never be read as one; --quiet
	// keeps progress lines out of stderr, which errors carry.
	if exists {
		return runGit(ctx, worktreeTimeout, root, io.Discard, "worktree", "add", "--quiet", "--", abs, branch)
	}
	return runGit(ctx, worktreeTimeout, root, io.Discard, "worktree", "add", "--quiet", "-b", branch, "--", abs, "HEAD")
}

// worktreeBranch reports whether path is the top level of a worktree of the
// repository at root and, if so, the branch it has checked out ("" when
// detached). A directory inside root's own work tree, or in another
// repository, is not one.
func worktreeBranch(ctx context.Context, root, path string) (branch string, ok bool, err error) {
	rootCommon, _, err := commonDirAndTop(ctx, root)
	if err != nil {
		return "", false, err
	}
	pathCommon, pathTop, err := commonDirAndTop(ctx, path)
	if err != nil {
		return "", false, nil // not a work tree at all
	}
	if !sameFile(rootCommon, pathCommon) || !sameFile(pathTop, path) {
		return "", false, nil
	}
	var out bytes.Buffer
	err = runGit(ctx, readTimeout, path, &limitedBuffer{buf: &out, max: 64 << 10}, "symbolic-ref", "-q", "HEAD")
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return "", true, nil // detached
	case err != nil:
		return "", false, err
	}
	ref := strings.TrimSuffix(out.String(), "\n")
	return strings.TrimPrefix(ref, "refs/heads/"), true, nil
}

// commonDirAndTop returns the absolute common git directory and the top
// level of the work tree containing dir. --git-common-dir may be printed
// relative to dir, so it is resolved here (older gits lack
// --path-format=absolute).
func commonDirAndTop(ctx context.Context, dir string) (common, top string, err error) {
	var out bytes.Buffer
	if err := runGit(ctx, readTimeout, dir, &limitedBuffer{buf: &out, max: 64 << 10}, "rev-parse", "--git-common-dir", "--show-toplevel"); err != nil {
		return "", "", err
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 || lines[0] == "" || lines[1] == "" {
		return "", "", fmt.Errorf("workspace: unexpected rev-parse output for %s", dir)
	}
	return resolve(dir, lines[0]), filepath.FromSlash(lines[1]), nil
}

// sameFile reports whether a and b name the same existing file, through
// symlinks (temp directories are often reached through one, e.g. macOS's
// /var -> /private/var).
func sameFile(a, b string) bool {
	ai, err := os.Stat(a)
	if err != nil {
		return false
	}
	bi, err := os.Stat(b)
	if err != nil {
		return false
	}
	return os.SameFile(ai, bi)
}

// branchExists reports whether refs/heads/<branch> exists in root.
func branchExists(ctx context.Context, root, branch string) (bool, error) {
	err := runGit(ctx, readTimeout, root, io.Discard, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch+"^{commit}")
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return false, nil // --quiet: exit 1 without output means "no such ref"
	default:
		return false, err
	}
}

// RemoveWorktree removes a worktree created by AddWorktree (git worktree
// remove --force), discarding its uncommitted changes; used to undo when a
// later step fails. The branch is kept: it may have existed before, and a
// branch costs nothing.
func RemoveWorktree(ctx context.Context, root, path string) error {
	if root == "" || path == "" {
		return errors.New("workspace: remove worktree: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("workspace: remove worktree: %w", err)
	}
	return runGit(ctx, worktreeTimeout, root, io.Discard, "worktree", "remove", "--force", "--", abs)
}

// gitError is returned when git fails; it wraps the exit error (or the
// context's error), so errors.Is(err, context.DeadlineExceeded) works.
type gitError struct {
	args   []string
	err    error  // *exec.ExitError, or the context's error on timeout
	stderr string // trimmed to maxStderr bytes
}

func (e *gitError) Error() string {
	msg := fmt.Sprintf("workspace: git %s: %v", strings.Join(e.args, " "), e.err)
	if e.stderr != "" {
		msg += ": " + e.stderr
	}
	return msg
}

func (e *gitError) Unwrap() error { return e.err }

// runGit runs `git -C dir args...` with stdout going to stdout, bounded by
// timeout on top of ctx.
func runGit(ctx context.Context, timeout time.Duration, dir string, stdout io.Writer, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	full := append([]string{"-C", dir}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = gitEnv(os.Environ())
	cmd.Stdout = stdout
	var stderr bytes.Buffer
	cmd.Stderr = &limitedBuffer{buf: &stderr, max: 4 * maxStderr}
	// A grandchild holding the pipes open (a credential helper, an
	// fsmonitor daemon) must not keep Wait from returning.
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		err = ctxErr // "signal: killed" says less than "context deadline exceeded"
	}
	return &gitError{args: args, err: err, stderr: trimStderr(stderr.String())}
}

// localRepoEnv are the variables with which a parent git process (a hook,
// "git rebase --exec") points its children at its own repository; inherited,
// they would make "git -C root" read that repository instead of root. This
// is the list `git rev-parse --local-env-vars` prints.
var localRepoEnv = map[string]bool{
	"GIT_ALTERNATE_OBJECT_DIRECTORIES": true, "GIT_CONFIG": true, "GIT_CONFIG_PARAMETERS": true,
	"GIT_CONFIG_COUNT": true, "GIT_OBJECT_DIRECTORY": true, "GIT_DIR": true, "GIT_WORK_TREE": true,
	"GIT_IMPLICIT_WORK_TREE": true, "GIT_GRAFT_FILE": true, "GIT_INDEX_FILE": true,
	"GIT_NO_REPLACE_OBJECTS": true, "GIT_REPLACE_REF_BASE": true, "GIT_PREFIX": true,
	"GIT_SHALLOW_FILE": true, "GIT_COMMON_DIR": true,
}

// gitEnv is the environment git runs with: the caller's, minus variables
// that would redirect it to another repository, plus the settings this
// package relies on.
func gitEnv(environ []string) []string {
	env := make([]string, 0, len(environ)+3)
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if localRepoEnv[k] || strings.HasPrefix(k, "GIT_CONFIG_KEY_") || strings.HasPrefix(k, "GIT_CONFIG_VALUE_") ||
			k == "GIT_OPTIONAL_LOCKS" || k == "LC_ALL" || k == "GIT_TERMINAL_PROMPT" {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"GIT_OPTIONAL_LOCKS=0",  // never take the index lock just to refresh stat data
		"LC_ALL=C",              // untranslated messages and output
		"GIT_TERMINAL_PROMPT=0", // never wait for a password nobody will type
	)
}

// trimStderr trims git's stderr to at most maxStderr bytes, cutting at a
// UTF-8 boundary so the error stays valid text.
func trimStderr(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxStderr {
		return s
	}
	cut := maxStderr
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// limitedBuffer keeps the first max bytes written to it and discards the
// rest, so a chatty git cannot grow memory without bound.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		if len(p) > room {
			l.buf.Write(p[:room])
		} else {
			l.buf.Write(p)
		}
	}
	return len(p), nil
}
