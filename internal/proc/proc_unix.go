//go:build unix

package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// Signal sends sig to the whole process group. Once the leader has been
// reaped its pid may be reused, so the group is then no longer signalled by
// its id: on Linux each remaining member is found in /proc and checked
// (see KillGroup). It returns os.ErrProcessDone when no process was left.
func (p *Process) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reaped {
		return killGroup(p.pid, sig)
	}
	return signalAfterReap(p.pid, p.start, sig)
}

// Stop stops the group: SIGTERM to every member; after grace, SIGKILL to
// every member if the leader is still running; and once the leader has
// exited, SIGKILL to whatever is left of the group (children that ignore
// SIGTERM, daemons it started), which a check has no business leaving
// behind. It returns once the leader has exited and that last SIGKILL is
// sent; the members then die, but may not all be reaped yet. It may also be
// called after Wait, to kill what the leader left running.
//
// Stop waits for the leader without bound after SIGKILL: only a process in
// an uninterruptible sleep (a hung NFS mount) outlives it.
func (p *Process) Stop(grace time.Duration) {
	_ = p.Signal(syscall.SIGTERM)
	if grace > 0 {
		t := time.NewTimer(grace)
		select {
		case <-p.exited:
		case <-t.C:
		}
		t.Stop()
	}
	select {
	case <-p.exited:
	default:
		_ = p.Signal(syscall.SIGKILL)
		<-p.exited
	}
	_ = p.Signal(syscall.SIGKILL)
}

// killGroup signals the process group pgid, which the caller knows to be
// still held by its leader.
func killGroup(pgid int, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	if err != nil {
		return fmt.Errorf("proc: signalling group %d: %w", pgid, err)
	}
	return nil
}

// executable reports why path is not a program to run, or nil.
func executable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case fi.IsDir():
		return &fs.PathError{Op: "exec", Path: path, Err: syscall.EISDIR}
	case fi.Mode()&0o111 == 0:
		return &fs.PathError{Op: "exec", Path: path, Err: fs.ErrPermission}
	}
	return nil
}

// candidates are the files a program path may name: on Unix, just it.
func candidates(path string, _ []string) []string { return []string{path} }

// aliveByKill reports whether a process with pid exists, by the null
// signal: EPERM means it exists but belongs to someone else.
func aliveByKill(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
