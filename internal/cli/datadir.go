package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/datadir"
)

// prepareDataDir makes the data directory ready for a command that opens
// it: created 0700 when create (serve, init, stdio: CONTRACT.md §10), and
// its permissions tightened, with each change logged (a directory made by
// an older version, by hand or restored from a backup may be open to other
// users; it holds token hashes, sessions and notes). When they cannot be
// tightened, the command refuses, naming the chmod to run.
func (e *env) prepareDataDir(create bool) error {
	if create {
		if err := os.MkdirAll(e.dataDir, 0o700); err != nil {
			return e.dataDirError(err)
		}
	}
	done, err := datadir.Secure(e.dataDir)
	e.logTightened(done)
	if err != nil {
		return e.dataDirError(err)
	}
	return nil
}

// secureDatabase tightens a SQLite database configured outside the data
// directory, with its -wal and -shm, as prepareDataDir does the directory.
func (e *env) secureDatabase(path string) error {
	done, err := datadir.SecureFiles(path, path+"-wal", path+"-shm")
	e.logTightened(done)
	if err != nil {
		return e.dataDirError(err)
	}
	return nil
}

func (e *env) logTightened(done []datadir.Tightened) {
	for _, t := range done {
		e.log.Warn("data directory: tightened permissions that let other users read it", "path", t.Path,
			"from", fmt.Sprintf("%04o", uint32(t.From)), "to", fmt.Sprintf("%04o", uint32(t.To)))
	}
}

// dataDirError is an error met on the data directory, saying its real
// cause (datadir.Explain): permission denied, not a directory, a full or
// read-only disk, or another process's lock.
func (e *env) dataDirError(err error) error {
	var locked *datadir.LockedError
	if errors.As(err, &locked) {
		return continuo.Errorf(continuo.CodeConflict, "data directory %s: %v", e.dataDir, locked).Because(err)
	}
	var loose *datadir.LooseError
	if errors.As(err, &loose) {
		return continuo.Errorf(continuo.CodeInvalidState, "%v", loose).Because(err)
	}
	var p *datadir.Problem
	if errors.As(datadir.Explain(e.dataDir, err), &p) {
		return continuo.Errorf(continuo.CodeInvalidState, "data directory %s: %v", e.dataDir, p).Because(err)
	}
	return fmt.Errorf("data directory %s: %w", e.dataDir, err)
}

// openError says why a SQLite database at path could not be opened when
// SQLite's own error names no cause ("unable to open database file",
// "attempt to write a readonly database", "database or disk is full"): a
// file where a directory should be, a file or directory this process may
// not use, a full disk. Other errors are returned as they are.
func (e *env) openError(path string, err error) error {
	if !fileSystemError(err) {
		return err
	}
	if full(err) {
		err = fmt.Errorf("%w (%w)", err, syscall.ENOSPC)
	}
	if p := datadir.Diagnose(path, err); p != nil {
		return continuo.Errorf(continuo.CodeInvalidState, "cannot open the database: %v", p).Because(err)
	}
	return err
}

// fileSystemError reports whether err is one of SQLite's errors about the
// file rather than its content (SQLITE_PERM, _READONLY, _IOERR, _FULL,
// _CANTOPEN), or an error of the file system.
func fileSystemError(err error) bool {
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		switch coded.Code() & 0xff {
		case 3, 8, 10, 13, 14:
			return true
		}
	}
	var pe *fs.PathError
	return errors.As(err, &pe) || errors.Is(err, syscall.ENOSPC)
}

// full reports whether err is SQLite's SQLITE_FULL: no room on the disk
// (Continuo sets no max_page_count).
func full(err error) bool {
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == 13
}
