package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Source is what a validation run ran against: the commit checked out and a
// hash of how the working tree differs from it.
type Source struct {
	Head string // full commit id, "" for a repository without commits
	Tree string // hex SHA-256 over the working tree's differences from Head
	// ByStat lists the files (paths relative to the checkout, in git's
	// order, at most MaxByStat) that Tree took by size and modification
	// time instead of content; ByStatTotal counts them all. See SourceOf.
	ByStat      []string
	ByStatTotal int
}

// MaxByStat bounds Source.ByStat.
const MaxByStat = 20

// What one SourceOf call may read (issue 23: hashing a sparse 80 GB
// untracked file in full held a run_validation for 30 s). A regular file
// larger than maxFile bytes, and every file met once maxBytes bytes were
// hashed in the call, is taken by its size and modification time and never
// read. The whole call, git's listing included, ends after budget.
type sourceLimits struct {
	maxFile  int64
	maxBytes int64
	budget   time.Duration
}

// limits are SourceOf's bounds; tests change them.
var limits = sourceLimits{maxFile: 8 << 20, maxBytes: 128 << 20, budget: 10 * time.Second}

// BudgetError is SourceOf's failure when the call did not end within its
// budget: a checkout with more changes to list or read than one call may
// take. There is then no Source at all, rather than one that might equal
// another state's.
type BudgetError struct {
	Budget time.Duration
	Err    error // the context's error, with what was being done
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("workspace: source: not done within its budget of %v: %v", e.Budget, e.Err)
}

func (e *BudgetError) Unwrap() error { return e.Err }

// maxRecord bounds one record of git's status output that SourceOf keeps:
// a path (at most 4096 bytes on Linux) and the fields before it. A longer
// record is an error, never cut: a cut path would hash like another one.
const maxRecord = 64 << 10

// maxNesting bounds how deep SourceOf follows repositories inside the
// checkout (submodules, and clones git lists as one untracked path).
const maxNesting = 8

// sourceVersion starts every tree hash; a change of what is hashed changes
// it, so that an old Tree never equals a new one by the same name.
const sourceVersion = "continuo source 1\x00"

// SourceOf returns the Source of the checkout at dir: "git HEAD + a hash of
// the working tree including untracked, non-ignored files" (CONTRACT.md,
// run_validation).
//
// It runs ONE `git status --porcelain=v2 --branch --no-ahead-behind -z
// --untracked-files=all --no-renames --ignore-submodules=none` (with
// core.fsmonitor=false and runGit's environment: GIT_OPTIONAL_LOCKS=0, so
// it never writes the index). Its header gives Head. Its entries are every
// path whose index entry or file differs from HEAD and every untracked,
// non-ignored file. A tracked file git does not list is as HEAD has it, so
// Head pins it; only the listed paths are read. For each, in git's order,
// the tree hash takes the path and what the working tree holds there:
//
//   - a regular file: "file", or "exec" when its owner may execute it (the
//     bit git records), and the SHA-256 of its content, streamed in chunks
//     that stop when ctx is done; or, for a file larger than 8 MiB or one
//     met after 128 MiB were hashed in this call (in git's order, so the
//     same checkout always takes the same files so), "file-stat" or
//     "exec-stat", its size and its modification time in nanoseconds,
//     without reading it, and the path is listed in Source.ByStat. Such a
//     file counts as changed when it is touched, and a rewrite that keeps
//     both its size and its modification time is not seen;
//   - a symbolic link: "symlink" and the SHA-256 of its target;
//   - nothing: "absent" (deleted, or gone between git's listing and the
//     read, which is what the tree is at that moment; also a path below a
//     symbolic link, which git takes for gone too, and which is never read
//     through the link);
//   - a repository (a submodule, or a clone git lists as one untracked
//     "dir/"): "repo" and that repository's own Source, found the same way,
//     at most maxNesting deep;
//   - any other directory (a file replaced by one; git lists its files on
//     their own): "dir";
//   - anything else (a FIFO, a device): "other" and its type, never opened.
//
// Every field is length-prefixed, so no two different inputs hash alike.
// Two calls on an unchanged checkout return equal values; a change to the
// content of a tracked file, a new untracked file, a deletion, a rename, a
// mode change or a new commit changes the Source.
//
// The index is not part of it: what a check runs against is the working
// tree, so a change staged or not gives the same Tree. Which paths git lists
// does depend on the index, so a path whose index entry differs from HEAD
// while its file is as HEAD has it (after `git rm --cached`, say) is still
// hashed, and that state has another Tree than the clean checkout: the
// Source errs towards "changed", never towards "unchanged". Touching a file
// changes nothing: git compares content when stat data differ, and the hash
// takes no times. A submodule counts by its Source; git's own submodule
// field (S<c><m><u>) is not hashed, as it compares with the index.
//
// What git is told not to look at is not seen: ignored files (.gitignore,
// .git/info/exclude, core.excludesFile), files marked assume-unchanged or
// skip-worktree, mode changes under core.filemode=false, and differences
// that git's clean filters (core.autocrlf, filter.<name>.clean) remove.
//
// dir is a checkout's top level or a directory inside one. When it has a
// .git entry, git must find the repository right there
// (GIT_CEILING_DIRECTORIES keeps it from taking a broken .git for part of
// an enclosing repository) and dir is the working tree whatever
// core.worktree says (GIT_WORK_TREE); otherwise one `git rev-parse
// --show-toplevel` finds the top level first.
//
// Tracked files git lists are those whose stat data differ from the
// index's; git itself compares the content of a tracked file whose stat
// data changed (and, with GIT_OPTIONAL_LOCKS=0, does not write the
// refreshed stat data back: `git status` in the checkout does).
//
// The whole call, git and the reads, is bounded by a budget of 10 s on top
// of ctx; past it the call fails with a *BudgetError. It fails rather than
// answer with less: outside a work tree, for a file it cannot read, for a
// nested repository git cannot read, and when ctx ends. Memory is bounded:
// git's output is parsed as it arrives and no list of paths is kept beyond
// the first MaxByStat taken by stat. Nothing is shared between calls: two
// calls, on one checkout or two, run side by side.
func SourceOf(ctx context.Context, dir string) (Source, error) {
	if dir == "" {
		return Source{}, errors.New("workspace: source: empty path")
	}
	lim := limits
	bctx, cancel := context.WithTimeout(ctx, lim.budget)
	defer cancel()
	src, err := sourceOf(bctx, dir, 0, &budget{sourceLimits: lim, left: lim.maxBytes})
	if err != nil && ctx.Err() == nil && errors.Is(bctx.Err(), context.DeadlineExceeded) {
		return Source{}, &BudgetError{Budget: lim.budget, Err: err}
	}
	return src, err
}

// budget is what is left to read in one SourceOf call, shared by the
// repositories nested in the checkout.
type budget struct {
	sourceLimits
	left int64 // bytes that may still be hashed
}

// sourceOf is SourceOf for a repository nested depth levels deep.
func sourceOf(ctx context.Context, dir string, depth int, b *budget) (Source, error) {
	top, pinned, err := checkoutTop(ctx, dir)
	if err != nil {
		return Source{}, err
	}
	var env []string
	if pinned {
		env = []string{"GIT_WORK_TREE=" + top, "GIT_CEILING_DIRECTORIES=" + filepath.Dir(top)}
	}
	p := newSourceParser(ctx, top, depth, b)
	// core.fsmonitor=false: a read must not start a monitor daemon or run
	// a configured hook program. --no-ahead-behind: --branch is here for
	// the commit id, not for a walk of the history against the upstream.
	// --ignore-submodules=none: a submodule's changes count whatever the
	// configuration says.
	err = streamGit(ctx, b.budget, top, env, p, "-c", "core.fsmonitor=false",
		"status", "--porcelain=v2", "--branch", "--no-ahead-behind", "-z",
		"--untracked-files=all", "--no-renames", "--ignore-submodules=none")
	if err != nil {
		return Source{}, err
	}
	return p.result()
}

// checkoutTop returns the top level of the checkout at dir, and whether git
// has to be pinned to it (dir has a .git entry, so it is the top level
// unless that entry is broken).
func checkoutTop(ctx context.Context, dir string) (string, bool, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false, fmt.Errorf("workspace: source: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", false, fmt.Errorf("workspace: source: %w", err)
	}
	if _, err := os.Lstat(filepath.Join(real, ".git")); err == nil {
		return real, true, nil
	}
	top, err := TopLevel(ctx, real)
	return top, false, err
}

// sourceParser is an io.Writer that parses `git status --porcelain=v2
// --branch -z` as git writes it and hashes, for each listed path, what the
// working tree holds there (see SourceOf). It keeps one record at a time.
type sourceParser struct {
	porcelain
	ctx      context.Context
	top      string // the checkout's top level: git's paths are relative to it
	depth    int    // how many repositories contain this one
	tree     hash.Hash
	content  hash.Hash // a file's content or a link's target, reset for each
	buf      []byte    // for reading files
	num      [8]byte
	sum      [sha256.Size]byte
	plainDir string // a directory known to hold no symbolic link on its way down from top; "" for none
	budget   *budget
	byStat   []string // the first MaxByStat files taken by stat
	nByStat  int
	err      error // the first failure; the rest of the output is not looked at
}

func newSourceParser(ctx context.Context, top string, depth int, b *budget) *sourceParser {
	p := &sourceParser{ctx: ctx, top: top, depth: depth, budget: b, tree: sha256.New(), content: sha256.New(), buf: make([]byte, 64<<10)}
	io.WriteString(p.tree, sourceVersion)
	return p
}

func (p *sourceParser) Write(b []byte) (int, error) {
	if p.err == nil {
		p.records.write(b, maxRecord, p.endRecord)
	}
	if p.err != nil {
		return 0, p.err
	}
	return len(b), nil
}

// endRecord handles one complete NUL-terminated record.
func (p *sourceParser) endRecord(rec []byte, long bool) {
	if p.err != nil {
		return
	}
	if long {
		p.err = fmt.Errorf("workspace: source: a git status record is longer than %d bytes", maxRecord)
		return
	}
	r, ok := p.next(rec, long)
	switch {
	case !ok:
	case r.orig: // a rename's (not printed with --no-renames): both paths count
		p.path(string(rec))
	case r.header:
	case r.kind == '!': // ignored; listed only when asked for
	case !r.change():
		p.err = fmt.Errorf("workspace: source: unexpected git status record %q", cut(rec, 64))
	case !r.ok:
		p.err = fmt.Errorf("workspace: source: malformed git status record %q", cut(rec, 64))
	default:
		p.path(r.path)
	}
}

func cut(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

func (p *sourceParser) path(rel string) {
	if err := p.hashPath(rel); err != nil {
		p.err = err
	}
}

// hashPath adds the path rel (relative to top, as git prints it) and what
// the working tree holds there to the tree hash.
func (p *sourceParser) hashPath(rel string) error {
	name := strings.TrimSuffix(rel, "/") // git lists a nested repository as "dir/"
	if name == "" || !filepath.IsLocal(filepath.FromSlash(name)) {
		return fmt.Errorf("workspace: source: git listed a path outside the checkout: %q", rel)
	}
	p.field(name)
	full := filepath.Join(p.top, filepath.FromSlash(name))
	plain, err := p.parentsPlain(name)
	if err != nil {
		return err
	}
	if !plain {
		p.field("absent")
		return nil
	}
	fi, err := os.Lstat(full)
	if gone(err) {
		p.field("absent")
		return nil
	}
	if err != nil {
		return fmt.Errorf("workspace: source: %w", err)
	}
	switch mode := fi.Mode(); {
	case mode.IsRegular():
		return p.file(full, name)
	case mode&fs.ModeSymlink != 0:
		target, err := os.Readlink(full)
		if gone(err) {
			p.field("absent")
			return nil
		}
		if err != nil {
			return fmt.Errorf("workspace: source: %w", err)
		}
		p.content.Reset()
		io.WriteString(p.content, target)
		p.field("symlink")
		p.field(string(p.content.Sum(p.sum[:0])))
	case mode.IsDir():
		_, err := os.Lstat(filepath.Join(full, ".git"))
		switch {
		case err == nil:
			return p.repo(full, name)
		case gone(err):
			p.field("dir")
		default:
			return fmt.Errorf("workspace: source: %w", err)
		}
	default:
		p.field("other")
		p.field(mode.Type().String())
	}
	return nil
}

// file hashes a regular file's kind and content, or, past the call's
// limits, its kind, size and modification time (name is listed in
// ByStat). It is opened non-blocking, so a file replaced by a FIFO after
// the Lstat cannot block the open, and it is only read if it is still a
// regular file then.
func (p *sourceParser) file(full, name string) error {
	f, err := os.OpenFile(full, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if gone(err) {
		p.field("absent")
		return nil
	}
	if err != nil {
		return fmt.Errorf("workspace: source: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("workspace: source: %w", err)
	}
	if !fi.Mode().IsRegular() {
		p.field("other")
		p.field(fi.Mode().Type().String())
		return nil
	}
	kind := "file"
	if fi.Mode()&0o100 != 0 {
		kind = "exec"
	}
	if size := fi.Size(); size > p.budget.maxFile || size > p.budget.left {
		p.field(kind + "-stat")
		p.field(strconv.FormatInt(size, 10))
		p.field(strconv.FormatInt(fi.ModTime().UnixNano(), 10))
		p.tookByStat(name)
		return nil
	}
	p.budget.left -= fi.Size()
	p.content.Reset()
	for {
		if err := p.ctx.Err(); err != nil {
			return fmt.Errorf("workspace: source: reading %s: %w", full, err)
		}
		n, err := f.Read(p.buf)
		p.content.Write(p.buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("workspace: source: %w", err)
		}
	}
	p.field(kind)
	p.field(string(p.content.Sum(p.sum[:0])))
	return nil
}

// tookByStat lists name among the files taken by stat.
func (p *sourceParser) tookByStat(name string) {
	p.nByStat++
	if len(p.byStat) < MaxByStat {
		p.byStat = append(p.byStat, name)
	}
}

// repo hashes a repository inside the checkout by its own Source.
func (p *sourceParser) repo(full, name string) error {
	if p.depth >= maxNesting {
		return fmt.Errorf("workspace: source: %s: repositories nested more than %d deep", name, maxNesting)
	}
	s, err := sourceOf(p.ctx, full, p.depth+1, p.budget)
	if err != nil {
		return fmt.Errorf("workspace: source: repository %s in the checkout: %w", name, err)
	}
	p.field("repo")
	p.field(s.Head)
	p.field(s.Tree)
	for _, f := range s.ByStat {
		if len(p.byStat) < MaxByStat {
			p.byStat = append(p.byStat, name+"/"+f)
		}
	}
	p.nByStat += s.ByStatTotal
	return nil
}

// parentsPlain reports whether every directory above name (slash-separated,
// relative to top) is a directory and no symbolic link. Git takes a path
// below a symbolic link for gone, and the hash does too. Paths arrive in
// git's order, so the directory that passed last is remembered and its
// ancestors are not looked at again.
func (p *sourceParser) parentsPlain(name string) (bool, error) {
	dir := path.Dir(name)
	if dir == "." || dir == p.plainDir {
		return true, nil
	}
	for i := 0; i <= len(dir); i++ {
		if i < len(dir) && dir[i] != '/' {
			continue
		}
		prefix := dir[:i]
		if prefix == p.plainDir || strings.HasPrefix(p.plainDir, prefix+"/") {
			continue
		}
		fi, err := os.Lstat(filepath.Join(p.top, filepath.FromSlash(prefix)))
		if gone(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("workspace: source: %w", err)
		}
		if !fi.IsDir() { // a symbolic link, or a file
			return false, nil
		}
	}
	p.plainDir = dir
	return true, nil
}

// gone reports whether err says there is nothing at a path (or that a
// directory on the way is not one).
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// field adds s to the tree hash, prefixed with its length, so that no two
// different sequences of fields hash alike. (What follows a path's kind is
// a number of fields that kind fixes.)
func (p *sourceParser) field(s string) {
	binary.BigEndian.PutUint64(p.num[:], uint64(len(s)))
	p.tree.Write(p.num[:])
	io.WriteString(p.tree, s)
}

func (p *sourceParser) result() (Source, error) {
	if p.err == nil {
		p.records.flush(p.endRecord) // output not NUL-terminated: take what is there
	}
	switch {
	case p.err != nil:
		return Source{}, p.err
	case p.origNext:
		return Source{}, errors.New("workspace: source: git status printed a rename without its original path")
	case !p.sawOID:
		return Source{}, errors.New("workspace: source: git status printed no branch.oid header")
	}
	head, err := p.commit("source")
	if err != nil {
		return Source{}, err
	}
	return Source{Head: head, Tree: hex.EncodeToString(p.tree.Sum(nil)), ByStat: p.byStat, ByStatTotal: p.nByStat}, nil
}
