//go:build unix

package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/continuo-dev/continuo/internal/datadir/asuser"
)

// The errors of a data directory name their cause: each case is met for
// real where it can be (not a directory, a lock, permission denied as an
// unprivileged user), and made up where it cannot (a full or read-only
// disk).

func TestExplainNotADirectory(t *testing.T) {
	f := filepath.Join(t.TempDir(), "afile")
	write(t, f, 0o600)
	for _, dir := range []string{filepath.Join(f, "data"), filepath.Join(f, "a", "b")} {
		err := Explain(dir, os.MkdirAll(dir, 0o700))
		var p *Problem
		if !errors.As(err, &p) || !strings.Contains(err.Error(), f+" is a file, not a directory") {
			t.Errorf("MkdirAll(%s): %v, want it to name %s as a file", dir, err, f)
		}
		if !errors.Is(err, syscall.ENOTDIR) {
			t.Errorf("%v does not wrap ENOTDIR", err)
		}
		if p := Diagnose(filepath.Join(dir, "continuo.db"), errors.New("unable to open database file")); p == nil || !strings.Contains(p.Error(), f+" is a file") {
			t.Errorf("Diagnose under a file: %v", p)
		}
	}
}

func TestExplainLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serve.lock")
	l, err := TryLock(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	_, err = TryLock(path)
	var locked *LockedError
	if got := Explain(path, err); !errors.As(got, &locked) || !strings.Contains(got.Error(), fmt.Sprintf("locked by process %d", os.Getpid())) {
		t.Errorf("a held lock: %v", got)
	}
}

// TestExplainPermission: as an unprivileged user, a file and a directory
// it may not use are named with their owner and mode; a database whose
// directory is not writable (SQLite makes its -wal and -shm there) names
// the directory.
func TestExplainPermission(t *testing.T) {
	if !asuser.Run(t) {
		return
	}
	dir := t.TempDir()
	locked := filepath.Join(dir, "init.lock")
	write(t, locked, 0o000)
	_, err := os.OpenFile(locked, os.O_RDWR, 0)
	got := Explain(dir, err)
	if !strings.Contains(got.Error(), "permission denied: the file "+locked+" belongs to ") || !strings.Contains(got.Error(), "with mode 0000") ||
		!strings.Contains(got.Error(), fmt.Sprintf("this process runs as %s", self())) {
		t.Errorf("an unreadable lock: %v", got)
	}
	if !errors.Is(got, fs.ErrPermission) {
		t.Errorf("%v does not wrap the permission error", got)
	}

	closed := filepath.Join(dir, "closed")
	if err := os.Mkdir(closed, 0o000); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(closed, 0o700)
	_, err = os.Stat(filepath.Join(closed, "continuo.db"))
	if got := Explain(filepath.Join(closed, "continuo.db"), err); !strings.Contains(got.Error(), "permission denied: the directory "+closed+" belongs to") {
		t.Errorf("a directory without search permission: %v", got)
	}
	if p := Diagnose(filepath.Join(closed, "continuo.db"), errors.New("unable to open database file")); p == nil || !strings.Contains(p.Error(), "the directory "+closed) {
		t.Errorf("Diagnose under a closed directory: %v", p)
	}

	db := filepath.Join(dir, "ro", "continuo.db")
	write(t, db, 0o400)
	if p := Diagnose(db, errors.New("attempt to write a readonly database")); p == nil || !strings.Contains(p.Error(), "the file "+db) || !strings.Contains(p.Error(), "mode 0400") {
		t.Errorf("Diagnose of a read-only database: %v", p)
	}
	if err := os.Chmod(db, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(db), 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(filepath.Dir(db), 0o700)
	if p := Diagnose(db, errors.New("attempt to write a readonly database")); p == nil || !strings.Contains(p.Error(), "the directory "+filepath.Dir(db)) || !strings.Contains(p.Error(), "mode 0500") {
		t.Errorf("Diagnose of a database in a read-only directory: %v", p)
	}
	if p := Diagnose(filepath.Join(dir, "fine.db"), errors.New("something else")); p != nil {
		t.Errorf("Diagnose where nothing is wrong: %v", p)
	}
}

func TestExplainFullDisk(t *testing.T) {
	dir := t.TempDir()
	err := Explain(dir, fmt.Errorf("write marker: %w", &fs.PathError{Op: "write", Path: filepath.Join(dir, MarkerName), Err: syscall.ENOSPC}))
	if !strings.Contains(err.Error(), "the file system holding "+filepath.Join(dir, MarkerName)+" is full (") || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("ENOSPC: %v", err)
	}
	if p := Diagnose(filepath.Join(dir, "continuo.db"), fmt.Errorf("database or disk is full (%w)", syscall.ENOSPC)); p == nil || !strings.Contains(p.Error(), "is full (") {
		t.Errorf("Diagnose of a full disk: %v", p)
	}
	err = Explain(dir, &fs.PathError{Op: "open", Path: dir, Err: syscall.EROFS})
	if !strings.Contains(err.Error(), "the file system holding "+dir+" is mounted read-only") {
		t.Errorf("EROFS: %v", err)
	}
}
