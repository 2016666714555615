package datadir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// LockedError is returned by TryLock when another process holds the lock.
type LockedError struct {
	Path string
	PID  int // the holder's process id, 0 when unknown
}

func (e *LockedError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("%s is locked by process %d", e.Path, e.PID)
	}
	return e.Path + " is locked by another process"
}

// Lock is an exclusive advisory lock on a file (flock(2) where the system
// has it). The kernel releases it when the process ends, however it ends
// (kill -9 included), so a lock left behind never needs cleaning up.
type Lock struct{ f *os.File }

// TryLock takes the lock on path, creating the file, or fails at once with
// a *LockedError naming the holder. The holder's pid is written into the
// file so that the next one can be told who holds it.
func TryLock(path string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	ok, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if !ok {
		f.Close()
		return nil, &LockedError{Path: path, PID: holder(path)}
	}
	// Best effort: the pid only improves a message.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// lockPoll is how often WaitLock tries again.
const lockPoll = 20 * time.Millisecond

// WaitLock takes the lock on path, waiting while another process holds it,
// until ctx ends; then it returns the last *LockedError.
func WaitLock(ctx context.Context, path string) (*Lock, error) {
	t := time.NewTicker(lockPoll)
	defer t.Stop()
	for {
		l, err := TryLock(path)
		var locked *LockedError
		if !errors.As(err, &locked) {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-t.C:
		}
	}
}

// Unlock releases the lock.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the descriptor releases the lock
	l.f = nil
	return err
}

// holder reads the pid a lock holder wrote into path, 0 if none.
func holder(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	b := make([]byte, 32)
	n, _ := io.ReadFull(f, b)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
