// Package workspace reads facts about a project's git checkout for the
// handoff brief, and manages per-session worktrees. It runs the git binary
// and never changes a checkout except to add or remove a worktree.
package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// State is what a brief says about a checkout.
type State struct {
	Branch string // "" when detached
	Head   string // full lowercase hex commit id, "" for a repo without commits
	Dirty  bool   // uncommitted changes, including untracked (not ignored) files
}

const timeout = 10 * time.Second

// git runs git in dir without taking optional locks.
func git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C", "GIT_TERMINAL_PROMPT=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 512 {
			msg = msg[:512]
		}
		return nil, fmt.Errorf("git %s: %w: %s", args[0], err, msg)
	}
	return out, nil
}

// Probe reads the state of the checkout at root with one git call.
func Probe(ctx context.Context, root string) (State, error) {
	out, err := git(ctx, root, "status", "--porcelain=v2", "--branch", "-z", "--untracked-files=normal")
	if err != nil {
		return State{}, err
	}
	var st State
	for _, rec := range bytes.Split(out, []byte{0}) {
		line := string(rec)
		switch {
		case strings.HasPrefix(line, "# branch.oid "):
			if oid := strings.TrimPrefix(line, "# branch.oid "); oid != "(initial)" {
				st.Head = strings.ToLower(oid)
			}
		case strings.HasPrefix(line, "# branch.head "):
			if b := strings.TrimPrefix(line, "# branch.head "); b != "(detached)" {
				st.Branch = b
			}
		case strings.HasPrefix(line, "#"), line == "":
		case line[0] == '1' || line[0] == '2' || line[0] == 'u' || line[0] == '?':
			st.Dirty = true
		}
	}
	return st, nil
}

// gitDir finds the git directory of the work tree at root, following a
// ".git" file (worktrees, submodules).
func gitDir(root string) (string, error) {
	p := filepath.Join(root, ".git")
	fi, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		return p, nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	d, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok {
		return "", errors.New("workspace: malformed .git file")
	}
	if !filepath.IsAbs(d) {
		d = filepath.Join(root, d)
	}
	return d, nil
}

// Fingerprint returns a cheap string (no subprocess) that changes when HEAD,
// the current branch, or the index changes. It tells whether the checkout
// changed while a brief was being built.
func Fingerprint(root string) (string, error) {
	dir, err := gitDir(root)
	if err != nil {
		return "", err
	}
	head, err := os.ReadFile(filepath.Join(dir, "HEAD"))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.Write(head)
	stat := func(p string) {
		if fi, err := os.Stat(p); err == nil {
			fmt.Fprintf(&b, "|%d:%d", fi.Size(), fi.ModTime().UnixNano())
		} else {
			b.WriteString("|-")
		}
	}
	common := dir
	if c, err := os.ReadFile(filepath.Join(dir, "commondir")); err == nil {
		common = filepath.Join(dir, strings.TrimSpace(string(c)))
	}
	if ref, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: "); ok {
		if r, err := os.ReadFile(filepath.Join(common, filepath.FromSlash(ref))); err == nil {
			b.Write(r)
		}
		stat(filepath.Join(common, "packed-refs"))
	}
	stat(filepath.Join(dir, "index"))
	return b.String(), nil
}

// IsRepo reports whether dir is inside a git work tree.
func IsRepo(ctx context.Context, dir string) bool {
	out, err := git(ctx, dir, "rev-parse", "--is-inside-work-tree")
	return err == nil && strings.TrimSpace(string(out)) == "true"
}

// TopLevel returns the top-level directory of the work tree containing dir.
func TopLevel(ctx context.Context, dir string) (string, error) {
	out, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// AddWorktree creates a worktree at path on branch (created from HEAD of
// root when it does not exist), or reuses one already there.
func AddWorktree(ctx context.Context, root, path, branch string) error {
	if _, err := os.Stat(filepath.Join(path, ".git")); err == nil {
		if top, err := TopLevel(ctx, path); err == nil && top == path {
			return nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if _, err := git(ctx, root, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch); err == nil {
		_, err = git(ctx, root, "worktree", "add", path, branch)
		return err
	}
	_, err := git(ctx, root, "worktree", "add", "-b", branch, path, "HEAD")
	return err
}

// RemoveWorktree removes a worktree made by AddWorktree.
func RemoveWorktree(ctx context.Context, root, path string) error {
	_, err := git(ctx, root, "worktree", "remove", "--force", path)
	return err
}
