package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

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
