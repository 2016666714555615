//go:build unix

package datadir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/continuo-dev/continuo/internal/datadir/asuser"
)

// write makes a file with exactly mode, whatever the umask.
func write(t *testing.T, path string, mode fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("x"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// looseDir makes a data directory as an older version (or a restore) left
// it: 0755, with every file 0644. It returns the directory and its files.
func looseDir(t *testing.T) (string, []string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	var files []string
	for _, name := range []string{"continuo.db", "continuo.db-wal", "continuo.db-shm", MarkerName, ServingName, "serve.lock", "init.lock",
		"hook.log", "hook.log.1", "hook-spool/00001-ab.json", "carriers/wkr_1.log", "a file's name"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		write(t, p, 0o644)
		files = append(files, p)
	}
	for _, d := range []string{dir, filepath.Join(dir, "hook-spool"), filepath.Join(dir, "carriers")} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, files
}

// TestSecure: a pre-existing data directory of mode 0755 with files of
// 0644 (the database, its -wal and -shm, the marker, serve.json, the locks,
// the hook log and spool, the carriers' logs) ends 0700 with every file
// 0600, and Secure says what it changed; a checkout under worktrees keeps
// its files' modes, a symbolic link's target is not touched, and a second
// call changes nothing.
func TestSecure(t *testing.T) {
	dir, files := looseDir(t)
	checkout := filepath.Join(dir, "worktrees", "ses_1", "run.sh")
	write(t, checkout, 0o755)
	if err := os.Chmod(filepath.Join(dir, "worktrees"), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "elsewhere")
	write(t, outside, 0o644)
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}

	done, err := Secure(dir)
	if err != nil {
		t.Fatal(err)
	}
	changed := map[string]Tightened{}
	for _, c := range done {
		changed[c.Path] = c
	}
	for _, d := range []string{dir, filepath.Join(dir, "hook-spool"), filepath.Join(dir, "carriers"), filepath.Join(dir, "worktrees")} {
		if m := mode(t, d); m != 0o700 {
			t.Errorf("%s: mode %04o, want 0700", d, m)
		}
		if c := changed[d]; c.From != 0o755 || c.To != 0o700 {
			t.Errorf("%s: reported %+v, want 0755 → 0700", d, c)
		}
	}
	for _, f := range files {
		if m := mode(t, f); m != 0o600 {
			t.Errorf("%s: mode %04o, want 0600", f, m)
		}
		if c := changed[f]; c.From != 0o644 || c.To != 0o600 {
			t.Errorf("%s: reported %+v, want 0644 → 0600", f, c)
		}
	}
	if len(done) != len(files)+4 {
		t.Errorf("reported %d changes, want %d: %+v", len(done), len(files)+4, done)
	}
	if m := mode(t, checkout); m != 0o755 {
		t.Errorf("a checkout's file: mode %04o, want its own 0755", m)
	}
	if m := mode(t, outside); m != 0o644 {
		t.Errorf("a link's target outside: mode %04o, want 0644 (links are not followed)", m)
	}
	if again, err := Secure(dir); err != nil || len(again) != 0 {
		t.Errorf("second Secure: %+v, %v; want nothing to do", again, err)
	}
	// An owner's bits stay as they are: a 0400 file becomes no 0600.
	write(t, filepath.Join(dir, "readonly"), 0o444)
	if _, err := Secure(dir); err != nil || mode(t, filepath.Join(dir, "readonly")) != 0o400 {
		t.Errorf("0444 file: %04o, %v; want 0400", mode(t, filepath.Join(dir, "readonly")), err)
	}
}

// TestSecureNothingToDo: a directory that does not exist is left to be
// made; a file where the directory should be is refused, saying so.
func TestSecureNothingToDo(t *testing.T) {
	if done, err := Secure(filepath.Join(t.TempDir(), "none")); err != nil || done != nil {
		t.Errorf("missing directory: %v, %v", done, err)
	}
	f := filepath.Join(t.TempDir(), "file")
	write(t, f, 0o600)
	_, err := Secure(f)
	var p *Problem
	if !errors.As(err, &p) || !strings.Contains(err.Error(), f+" is a file, not a directory") {
		t.Errorf("a file: %v", err)
	}
}

// TestSecureRefuses: when a mode cannot be changed (chmod fails as it fails
// on a directory of another user), Secure refuses with the exact command
// that fixes it, quoted for a shell.
func TestSecureRefuses(t *testing.T) {
	dir, _ := looseDir(t)
	defer func(old func(string, fs.FileMode) error) { chmod = old }(chmod)
	chmod = func(p string, m fs.FileMode) error {
		if p == dir || strings.HasSuffix(p, "continuo.db") || strings.HasSuffix(p, "name") {
			return &fs.PathError{Op: "chmod", Path: p, Err: syscall.EPERM}
		}
		return os.Chmod(p, m)
	}
	_, err := Secure(dir)
	var loose *LooseError
	if !errors.As(err, &loose) {
		t.Fatalf("Secure = %v, want a LooseError", err)
	}
	want := "chmod 700 " + dir + " && chmod 600 '" + dir + "/a file'\\''s name' " + dir + "/continuo.db"
	if loose.Command != want {
		t.Errorf("command\n%s\nwant\n%s", loose.Command, want)
	}
	if !strings.Contains(err.Error(), "operation not permitted") || !strings.Contains(err.Error(), want) {
		t.Errorf("message %q names neither the cause nor the command", err)
	}
	if !errors.Is(err, syscall.EPERM) {
		t.Errorf("%v does not wrap EPERM", err)
	}
}

// TestSecureForeign: a data directory of another user, open to others,
// that this (unprivileged) process may not change: Secure refuses with the
// command its owner runs, on a real directory and a real chmod.
func TestSecureForeign(t *testing.T) {
	if !asuser.Run(t) {
		return
	}
	dir := asuser.Foreign()
	if dir == "" {
		t.Skip("no directory of another user: the tests did not start as root")
	}
	_, err := Secure(dir)
	var loose *LooseError
	if !errors.As(err, &loose) || loose.Command != "chmod 700 "+dir || !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("Secure(a directory of root's) = %v", err)
	}
}
