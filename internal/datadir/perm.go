package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A data directory holds token hashes, sessions, notes and sign-in
// sessions: it is its owner's alone. The directory is 0700 and every file
// Continuo writes in it 0600, from the first write: files are created with
// mode 0600 (which a umask can only narrow), and the SQLite database is
// created 0600 before SQLite opens it, so that its -wal and -shm, which
// SQLite creates with the database file's mode, are 0600 too. A directory
// made by an older version, by hand, or restored from a backup may be
// looser; Secure tightens it at start, and says what it changed.

// Continuo's own subdirectories: their files are tightened with the
// directory's. worktrees holds git checkouts, whose files keep the modes
// their projects give them (the executable bit is part of a checkout);
// only the directory itself is tightened, and the data directory's 0700
// keeps everyone else out of it.
var (
	ownDirs      = []string{"hook-spool", "carriers"}
	checkoutDirs = []string{"worktrees"}
)

// Tightened is one mode Secure changed.
type Tightened struct {
	Path     string
	From, To fs.FileMode
}

// LooseError is Secure's refusal: part of the data directory is open to
// other users and its mode could not be changed (the directory belongs to
// another user, say). Command is what its owner runs to fix it.
type LooseError struct {
	Dir     string
	Paths   []string // what is open to others and stayed so
	Err     error    // the first chmod's failure
	Command string
}

func (e *LooseError) Error() string {
	return fmt.Sprintf("the data directory %s is open to other users and its permissions could not be tightened (%v); "+
		"as its owner, run: %s — then start again", e.Dir, e.Err, e.Command)
}

func (e *LooseError) Unwrap() error { return e.Err }

// Secure makes the data directory dir 0700 (group and other bits cleared)
// and every file in it, and in Continuo's own subdirectories, 0600 (the
// same: only the owner's bits stay). It returns what it changed; a
// directory that does not exist yet is left to be created. Symbolic links
// are not followed. When a mode cannot be changed, it returns a
// *LooseError with the exact chmod command its owner can run.
func Secure(dir string) ([]Tightened, error) {
	info, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, Explain(dir, err)
	}
	if !info.IsDir() {
		return nil, &Problem{Path: dir, Cause: dir + " is a file, not a directory: pass another --data-dir, or move the file away"}
	}
	s := &securer{}
	s.tighten(dir, info)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return s.done, Explain(dir, err)
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		switch {
		case e.Type().IsRegular():
			s.tightenPath(p)
		case e.IsDir() && slices.Contains(ownDirs, e.Name()):
			s.tightenPath(p)
			sub, err := os.ReadDir(p)
			if err != nil {
				return s.done, Explain(p, err)
			}
			for _, f := range sub {
				if f.Type().IsRegular() {
					s.tightenPath(filepath.Join(p, f.Name()))
				}
			}
		case e.IsDir() && slices.Contains(checkoutDirs, e.Name()):
			s.tightenPath(p)
		}
	}
	if len(s.failed) > 0 {
		return s.done, &LooseError{Dir: dir, Paths: s.failed, Err: s.err, Command: chmodCommand(s.failedDirs, s.failedFiles)}
	}
	return s.done, nil
}

// SecureFiles is Secure for files outside a data directory (a SQLite
// database configured elsewhere, with its -wal and -shm): each that
// exists is made 0600.
func SecureFiles(paths ...string) ([]Tightened, error) {
	s := &securer{}
	for _, p := range paths {
		s.tightenPath(p)
	}
	if len(s.failed) > 0 {
		return s.done, &LooseError{Dir: filepath.Dir(paths[0]), Paths: s.failed, Err: s.err, Command: chmodCommand(nil, s.failedFiles)}
	}
	return s.done, nil
}

type securer struct {
	done                    []Tightened
	failed                  []string
	failedDirs, failedFiles []string
	err                     error
}

// chmod is os.Chmod; a test makes it fail as it fails on a directory of
// another user.
var chmod = os.Chmod

func (s *securer) tightenPath(p string) {
	info, err := os.Lstat(p)
	if err != nil || info.Mode()&fs.ModeSymlink != 0 {
		return // gone meanwhile, or a link: nothing of ours to change
	}
	s.tighten(p, info)
}

// tighten clears the group and other bits of p's mode (a directory ends
// 0700 and a file 0600 as Continuo makes them; an owner's bits are left).
func (s *securer) tighten(p string, info fs.FileInfo) {
	mode := info.Mode().Perm()
	if mode&0o077 == 0 {
		return
	}
	to := mode &^ 0o077
	if err := chmod(p, to); err != nil {
		s.failed = append(s.failed, p)
		if info.IsDir() {
			s.failedDirs = append(s.failedDirs, p)
		} else {
			s.failedFiles = append(s.failedFiles, p)
		}
		if s.err == nil {
			s.err = err
		}
		return
	}
	s.done = append(s.done, Tightened{Path: p, From: mode, To: to})
}

// chmodCommand is the shell command that makes dirs 0700 and files 0600.
func chmodCommand(dirs, files []string) string {
	var parts []string
	if len(dirs) > 0 {
		parts = append(parts, "chmod 700 "+quoteAll(dirs))
	}
	if len(files) > 0 {
		parts = append(parts, "chmod 600 "+quoteAll(files))
	}
	return strings.Join(parts, " && ")
}

func quoteAll(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = shellQuote(p)
	}
	return strings.Join(q, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@%,=", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
