//go:build unix

package sqlite_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/continuo-dev/continuo/internal/store/storetest"
)

// TestFilesPrivate: a new database, its -wal and its -shm are 0600 from
// their first write, whatever the umask (here the most permissive one);
// SQLite alone would make them 0644 (less the umask).
func TestFilesPrivate(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "c.db")
	db := open(t, path, nil)
	storetest.Group(t, db, "alpha")
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", filepath.Base(p), fi.Mode().Perm())
		}
	}
}
