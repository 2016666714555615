package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Fingerprint returns a cheap (no subprocess) string that changes when HEAD,
// the current branch ref, or the index changes: it reads <gitdir>/HEAD, the
// ref file HEAD points to (or the stat of packed-refs when the ref is packed)
// and the stat (size and mtime in ns) and checksum trailer of <gitdir>/index.
// A `.git` file ("gitdir: ...", as in worktrees and submodules) is followed.
// Used to detect that the checkout changed while a brief was being built.
//
// It does not see edits to tracked files that were not staged; ProbeUpTo does.
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
