//go:build unix

package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/continuo-dev/continuo/internal/datadir"
	"github.com/continuo-dev/continuo/internal/datadir/asuser"
	"github.com/continuo-dev/continuo/internal/syncbuf"
)

// modes lists the mode of every file and directory in the data directory
// (not below worktrees).
func modes(t *testing.T, dir string) map[string]fs.FileMode {
	t.Helper()
	out := map[string]fs.FileMode{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = info.Mode().Perm()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDataDirPrivate: under the most permissive umask, a first `serve`
// makes the data directory 0700 and every file in it — the database, its
// -wal and -shm, the marker, the locks, serve.json — 0600, from the first
// write (checked while it serves, when all of them exist).
func TestDataDirPrivate(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	d := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--project", "none", "--data-dir", d, "--json"}, strings.NewReader(""), &out, &errb)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(d, datadir.ServingName)); err == nil {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("serve ended (%d): %s", code, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve never wrote %s: %s", datadir.ServingName, errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	got := modes(t, d)
	for _, name := range []string{"continuo.db", "continuo.db-wal", "continuo.db-shm", datadir.MarkerName, datadir.ServingName, serveLockName, initLockName} {
		if _, ok := got[filepath.Join(d, name)]; !ok {
			t.Errorf("%s was not made", name)
		}
	}
	for p, m := range got {
		want := fs.FileMode(0o600)
		if p == d {
			want = 0o700
		}
		if m != want {
			t.Errorf("%s: mode %04o, want %04o", p, m, want)
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("serve: exit %d: %s", code, errb.String())
	}
}

// TestDataDirTightened: a pre-existing data directory of mode 0755 whose
// files are 0644 is tightened to 0700 and 0600 by the next command that
// opens it, which logs each change and works.
func TestDataDirTightened(t *testing.T) {
	d := filepath.Join(t.TempDir(), "data")
	runJSON(t, "init", "--project", "none", "--data-dir", d)
	for p := range modes(t, d) {
		loose := fs.FileMode(0o644)
		if p == d {
			loose = 0o755
		}
		if err := os.Chmod(p, loose); err != nil {
			t.Fatal(err)
		}
	}
	code, _, errs := run(t, "token", "list", "--data-dir", d)
	if code != 0 {
		t.Fatalf("token list: exit %d: %s", code, errs)
	}
	for p, m := range modes(t, d) {
		want, was := fs.FileMode(0o600), "0644"
		if p == d {
			want, was = 0o700, "0755"
		}
		if m != want {
			t.Errorf("%s: mode %04o, want %04o", p, m, want)
		}
		if line := fmt.Sprintf("path=%s from=%s to=%04o", p, was, want); !strings.Contains(errs, line) {
			t.Errorf("the log does not say %q:\n%s", line, errs)
		}
	}
}

// TestDataDirErrors: each way a data directory cannot be used is named for
// what it is — a file where the directory should be, another process's
// lock — and never as a wait for a lock or an unexplained "unable to open
// database file".
func TestDataDirErrors(t *testing.T) {
	f := filepath.Join(t.TempDir(), "afile")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir  string
		args []string
	}{
		{f, []string{"init", "--project", "none"}},
		{f, []string{"token", "list"}},
		{f, []string{"serve", "--listen", "127.0.0.1:0", "--project", "none"}},
		{filepath.Join(f, "data"), []string{"init", "--project", "none"}},
		{filepath.Join(f, "data"), []string{"token", "list"}},
		{filepath.Join(f, "data"), []string{"stdio", "--principal", "admin"}},
	} {
		code, _, errs := run(t, append(tc.args, "--data-dir", tc.dir)...)
		if want := f + " is a file, not a directory"; code != 1 || !strings.Contains(errs, want) {
			t.Errorf("%v on %s: exit %d, %q; want %q", tc.args, tc.dir, code, errs, want)
		}
	}

	// Another process's serve lock is named as such.
	d := filepath.Join(t.TempDir(), "data")
	runJSON(t, "init", "--project", "none", "--data-dir", d)
	l, err := datadir.TryLock(filepath.Join(d, serveLockName))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	code, _, errs := run(t, "serve", "--listen", "127.0.0.1:0", "--data-dir", d)
	if want := fmt.Sprintf("another continuo serve (pid %d) is already serving the data directory %s", os.Getpid(), d); code != 1 || !strings.Contains(errs, want) {
		t.Errorf("serve on a served directory: exit %d, %q", code, errs)
	}
}

// TestDataDirPermissionErrors: as an unprivileged user, what it may not
// use is named with its owner and mode (the database file, the data
// directory, another user's lock, a directory where SQLite cannot make its
// -wal), never as "waited 2m0s for another continuo" or SQLite's "unable to
// open database file"; a directory of another user open to others is
// refused with the chmod its owner runs.
func TestDataDirPermissionErrors(t *testing.T) {
	if !asuser.Run(t) {
		return
	}
	d := filepath.Join(t.TempDir(), "data")
	runJSON(t, "init", "--project", "none", "--data-dir", d)
	db := filepath.Join(d, "continuo.db")
	check := func(what string, args []string, want ...string) {
		t.Helper()
		code, _, errs := run(t, append(args, "--data-dir", d)...)
		if code != 1 {
			t.Errorf("%s: %v: exit %d, %s", what, args, code, errs)
		}
		for _, w := range append(want, "permission denied") {
			if !strings.Contains(errs, w) {
				t.Errorf("%s: %v: %q does not say %q", what, args, errs, w)
			}
		}
		for _, wrong := range []string{"waited", "unable to open database file", "readonly database"} {
			if strings.Contains(errs, wrong) {
				t.Errorf("%s: %v: %q says %q", what, args, errs, wrong)
			}
		}
	}
	chmod := func(p string, m fs.FileMode) {
		t.Helper()
		if err := os.Chmod(p, m); err != nil {
			t.Fatal(err)
		}
	}

	chmod(db, 0o000)
	check("an unreadable database", []string{"token", "list"}, "the file "+db, "mode 0000")
	check("an unreadable database", []string{"init", "--project", "none"}, "the file "+db, "mode 0000")
	chmod(db, 0o600)

	chmod(d, 0o000)
	for _, args := range [][]string{{"token", "list"}, {"init", "--project", "none"}, {"serve", "--listen", "127.0.0.1:0"}} {
		check("an unreadable data directory", args, "the directory "+d, "mode 0000")
	}
	chmod(d, 0o500) // SQLite cannot make the -wal beside the database
	check("a read-only data directory", []string{"token", "list"}, "the directory "+d, "mode 0500")
	chmod(d, 0o700)

	// A lock that cannot be opened is no lock held by another process: it
	// was never waited for.
	chmod(filepath.Join(d, initLockName), 0o400)
	check("an init lock that cannot be opened", []string{"init", "--project", "none"}, "the file "+filepath.Join(d, initLockName), "mode 0400")
	chmod(filepath.Join(d, initLockName), 0o600)

	if foreign := asuser.Foreign(); foreign != "" {
		code, _, errs := run(t, "init", "--project", "none", "--data-dir", foreign)
		if want := "as its owner, run: chmod 700 " + foreign + " — then start again"; code != 1 || !strings.Contains(errs, want) {
			t.Errorf("init in another user's open directory: exit %d, %q; want %q", code, errs, want)
		}
	}
}

// TestOpenErrorFull: SQLite's SQLITE_FULL ("database or disk is full")
// is said as the full disk it is, naming the file system and its free
// bytes.
func TestOpenErrorFull(t *testing.T) {
	e := &env{dataDir: t.TempDir()}
	err := e.openError(filepath.Join(e.dataDir, "continuo.db"), fmt.Errorf("migration 0008: %w", sqliteErr(13)))
	if want := "the file system holding " + e.dataDir + " is full ("; !strings.Contains(err.Error(), want) {
		t.Errorf("SQLITE_FULL: %v, want %q", err, want)
	}
	if !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("%v does not wrap ENOSPC", err)
	}
	// An error about the content, not the file, stays as it is.
	schema := fmt.Errorf("store: schema version mismatch")
	if got := e.openError(filepath.Join(e.dataDir, "continuo.db"), schema); got != schema {
		t.Errorf("a schema error became %v", got)
	}
}

// sqliteErr is an error with a SQLite result code, as the driver's.
type sqliteErr int

func (c sqliteErr) Error() string { return fmt.Sprintf("sqlite error (%d)", int(c)) }
func (c sqliteErr) Code() int     { return int(c) }
