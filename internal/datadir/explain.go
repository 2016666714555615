package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Problem is an error of a data directory (or of a file in it) that names
// its real cause: permission denied, not a directory, a full or read-only
// file system, or a lock another process holds — rather than what the
// call that met it happened to say ("unable to open database file", or
// "waited 2m0s" for a lock that could not even be opened).
type Problem struct {
	Path  string // the file or directory the cause is about
	Cause string // what is wrong, naming the path it is about, and what to do
	Err   error  // what the failed call returned
}

func (p *Problem) Error() string { return p.Cause }

func (p *Problem) Unwrap() error { return p.Err }

// Explain names the cause of err, an error met on path (a data directory
// or a file in it). A *LockedError and a *Problem are returned as they
// are; an error of the file system becomes a *Problem saying what is wrong
// and with what; anything else is returned with path in front.
func Explain(path string, err error) error {
	var locked *LockedError
	var problem *Problem
	var loose *LooseError
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path != "" {
		path = pe.Path // the file the call was about: the lock, the marker
	}
	switch {
	case err == nil:
		return nil
	case errors.As(err, &locked), errors.As(err, &problem), errors.As(err, &loose):
		return err
	case errors.Is(err, syscall.ENOTDIR):
		if file := fileOnTheWay(path); file != "" {
			return &Problem{Path: path, Err: err, Cause: fmt.Sprintf("%s is a file, not a directory: pass another --data-dir, or move the file away", file)}
		}
		return &Problem{Path: path, Err: err, Cause: path + ": not a directory"}
	case errors.Is(err, fs.ErrPermission):
		p, _ := blockedBy(path)
		if p == "" {
			p = path // denied by something access(2) does not see (an LSM, say)
		}
		return &Problem{Path: path, Err: err, Cause: denied(p)}
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return &Problem{Path: path, Err: err, Cause: full(path)}
	case errors.Is(err, syscall.EROFS):
		return &Problem{Path: path, Err: err, Cause: fmt.Sprintf("the file system holding %s is mounted read-only", path)}
	}
	return fmt.Errorf("%s: %w", path, err)
}

// Diagnose looks at the database file path and the directories above it
// for what keeps a database from being opened or written, when the
// database engine's own error does not say (SQLite's "unable to open
// database file" names no cause): a file where a directory should be, a
// directory or file this process may not read or write, a directory where
// the database cannot create its -wal and -shm, a full file system. It
// returns nil when it finds nothing wrong.
func Diagnose(path string, err error) error {
	if file := fileOnTheWay(filepath.Dir(path)); file != "" {
		return &Problem{Path: path, Err: err, Cause: fmt.Sprintf("%s is a file, not a directory: pass another --data-dir (or database URL), or move the file away", file)}
	}
	if p, why := blockedBy(path); p != "" {
		if errors.Is(why, syscall.EROFS) {
			return &Problem{Path: path, Err: err, Cause: fmt.Sprintf("the file system holding %s is mounted read-only", p)}
		}
		return &Problem{Path: path, Err: err, Cause: denied(p)}
	}
	if info, serr := os.Stat(path); serr == nil && info.IsDir() {
		return &Problem{Path: path, Err: err, Cause: path + " is a directory, not a database file"}
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || freeBytes(filepath.Dir(path)) == 0 {
		return &Problem{Path: path, Err: err, Cause: full(filepath.Dir(path))}
	}
	return nil
}

// fileOnTheWay returns the nearest path at or above p that exists and is
// not a directory, or "" when every existing one is a directory.
func fileOnTheWay(p string) string {
	for p = filepath.Clean(p); ; {
		info, err := os.Stat(p)
		if err == nil {
			if !info.IsDir() {
				return p
			}
			return ""
		}
		parent := filepath.Dir(p)
		if parent == p {
			return ""
		}
		p = parent
	}
}

// blockedBy returns the first of path's directories (from the top down)
// that this process may not search, path's directory when this process may
// not create files in it, or path itself when it exists and this process
// may not read and write it, with the system's reason; "" when none.
func blockedBy(path string) (string, error) {
	path = filepath.Clean(path)
	var dirs []string
	for d := filepath.Dir(path); ; d = filepath.Dir(d) {
		dirs = append([]string{d}, dirs...)
		if filepath.Dir(d) == d {
			break
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); errors.Is(err, fs.ErrNotExist) {
			return "", nil // created later, by MkdirAll, or refused then
		}
		if err := access(d, accessSearch); err != nil {
			return d, err
		}
	}
	dir := filepath.Dir(path)
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := access(dir, accessWrite|accessSearch); err != nil {
			return dir, err
		}
	case err == nil && info.IsDir():
		if err := access(path, accessRead|accessWrite|accessSearch); err != nil {
			return path, err
		}
	case err == nil:
		if err := access(path, accessRead|accessWrite); err != nil {
			return path, err
		}
		// SQLite creates the -wal and -shm beside the database.
		if err := access(dir, accessWrite|accessSearch); err != nil {
			return dir, err
		}
	}
	return "", nil
}

// denied says that p may not be used, whose it is and with what mode.
func denied(p string) string {
	info, err := os.Stat(p)
	if err != nil {
		return fmt.Sprintf("permission denied on %s", p)
	}
	what := "the file"
	if info.IsDir() {
		what = "the directory"
	}
	return fmt.Sprintf("permission denied: %s %s belongs to %s with mode %04o, and this process runs as %s; "+
		"run continuo as its owner, or give it a data directory of its own (--data-dir)", what, p, owner(info), uint32(info.Mode().Perm()), self())
}

// full says that the file system holding p is full.
func full(p string) string {
	existing := p // the file may not have been made: ask of its nearest directory
	for {
		if _, err := os.Stat(existing); err == nil || filepath.Dir(existing) == existing {
			break
		}
		existing = filepath.Dir(existing)
	}
	if n := freeBytes(existing); n >= 0 {
		return fmt.Sprintf("the file system holding %s is full (%d bytes free); free some space, or use a data directory on another disk", p, n)
	}
	return fmt.Sprintf("the file system holding %s is full; free some space, or use a data directory on another disk", p)
}
