//go:build linux

package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"
)

func sysProcAttr(detach bool) *syscall.SysProcAttr {
	// Setpgid: the check is its own group, so that it and everything it
	// starts is signalled at once, and nothing of the server is.
	// Pdeathsig: the leader dies with the server (see the package comment),
	// unless it is detached.
	if detach {
		return &syscall.SysProcAttr{Setpgid: true}
	}
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// forker is the goroutine every Start forks on. It locks its OS thread and
// never returns, so the thread — which is what Pdeathsig watches — lives
// as long as the process.
var forker struct {
	once sync.Once
	reqs chan forkReq
}

type forkReq struct {
	cmd *exec.Cmd
	err chan error
}

func startCmd(cmd *exec.Cmd) error {
	forker.once.Do(func() {
		forker.reqs = make(chan forkReq)
		go func() {
			runtime.LockOSThread() // never unlocked
			for r := range forker.reqs {
				r.err <- r.cmd.Start()
			}
		}()
	})
	r := forkReq{cmd: cmd, err: make(chan error, 1)}
	forker.reqs <- r
	return <-r.err
}

// waitExited blocks until the child pid has exited, without reaping it
// (waitid with WNOWAIT), and reports whether it could.
func waitExited(pid int) bool {
	const pPID = 1      // P_PID
	var info [16]uint64 // siginfo_t: 128 bytes
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info[0])),
			syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if e != syscall.EINTR {
			return e == 0
		}
	}
}

// stat is what this package reads of /proc/<pid>/stat.
type stat struct {
	state byte   // field 3: R, S, D, Z, X...
	pgrp  int    // field 5
	start uint64 // field 22: start time, clock ticks after boot
}

func (s stat) dead() bool { return s.state == 'Z' || s.state == 'X' }

func readStat(pid int) (stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, err
	}
	// The command name (field 2) is in parentheses and may hold spaces and
	// parentheses itself: the fields that follow start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, fmt.Errorf("proc: /proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return stat{}, fmt.Errorf("proc: /proc/%d/stat: %d fields", pid, len(f)+2)
	}
	pgrp, err1 := strconv.Atoi(f[2])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return stat{}, fmt.Errorf("proc: /proc/%d/stat: malformed", pid)
	}
	return stat{state: f[0][0], pgrp: pgrp, start: start}, nil
}

func leaderStart(pid int) (uint64, error) {
	st, err := readStat(pid)
	if err != nil {
		return 0, fmt.Errorf("proc: start time of the leader: %w", err)
	}
	return st.start, nil
}

var hostID = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	id := strings.TrimSpace(string(b))
	if err != nil || id == "" || strings.ContainsAny(id, " /") {
		return hostnameID()
	}
	// Containers on one kernel share its boot id but not their pids: the
	// pid namespace is part of the host, so that another container's pids
	// are never taken for this one's.
	if ns, err := os.Readlink("/proc/self/ns/pid"); err == nil {
		if inode, ok := strings.CutPrefix(ns, "pid:["); ok && strings.HasSuffix(inode, "]") {
			id += "/" + strings.TrimSuffix(inode, "]")
		}
	}
	return id
})

// HostID names this host for process identities: the kernel's boot id
// (/proc/sys/kernel/random/boot_id, new at every boot) and the inode of the
// pid namespace, "<boot_id>/<inode>", or the host name if the boot id cannot
// be read. It is stable within a boot, and the same for every process of
// one pid namespace.
func HostID() string { return hostID() }

var self = sync.OnceValue(func() string {
	pid := os.Getpid()
	var start uint64
	if st, err := readStat(pid); err == nil {
		start = st.start
	}
	return HostID() + " " + strconv.Itoa(pid) + " " + strconv.FormatUint(start, 10)
})

// Self names the current process: "<host> <pid> <start>".
func Self() string { return self() }

// Alive reports whether the process ident names (a Self or Ident string)
// is running: a process with that pid exists, is not a zombie, and started
// at the recorded time. known is false when ident is of another host, or
// malformed: then nothing can be told. A start of "0" matches any start
// time; a process that exists but cannot be read in /proc (hidepid) counts
// as alive.
func Alive(ident string) (alive, known bool) {
	host, pid, start, err := parseIdent(ident)
	if err != nil || host != HostID() {
		return false, false
	}
	st, err := readStat(pid)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return aliveByKill(pid), true
		}
		return false, false
	}
	return !st.dead() && (start == 0 || st.start == start), true
}

// KillGroup kills what is left of a process group on this host whose
// leader may be gone (its server died): SIGKILL to every process whose
// process group is ident's pgid and whose start time is at or after the
// recorded leader start, and returns how many were signalled. It is a no-op,
// (0, nil), for an ident of another host.
//
// It does not kill a group that only reuses the id. While any member of
// the recorded group lives, its id cannot be given to a new process; so
// when a process with pid == pgid exists and started at another time than
// the recorded one, the group is gone and nothing is killed. Processes
// started before the recorded start are never ours. What remains possible
// is a later group whose leader has also exited already, found on an id the
// recorded group had wholly released; its members started after the
// recorded start and would be killed.
//
// Each process is signalled through a pidfd opened before its start time
// is checked again, so that a pid reused between the check and the signal
// is not hit. The scan is repeated until it finds no member it has not
// signalled yet, so that a child forked during it is not missed. The
// calling process is never signalled.
func KillGroup(ident string) (killed int, err error) {
	host, pgid, start, err := parseIdent(ident)
	if err != nil {
		return 0, err
	}
	if host != HostID() {
		return 0, nil
	}
	if pgid <= 1 || start == 0 {
		return 0, fmt.Errorf("proc: KillGroup(%q): not a process group identity", ident)
	}
	if st, err := readStat(pgid); err == nil && st.start != start {
		return 0, nil // the id was reused: the recorded group is gone
	}
	return signalMembers(pgid, start, syscall.SIGKILL)
}

// signalAfterReap signals what is left of the group once its leader has
// been reaped, when its id may have been reused.
func signalAfterReap(pgid int, start uint64, sig syscall.Signal) error {
	n, err := signalMembers(pgid, start, sig)
	if n == 0 && err == nil {
		return os.ErrProcessDone
	}
	return err
}

// signalMembers sends sig to every live process of group pgid that started
// at or after start, scanning /proc until a scan finds none it has not
// signalled (at most maxScans times).
func signalMembers(pgid int, start uint64, sig syscall.Signal) (int, error) {
	const maxScans = 16
	me := os.Getpid()
	signalled := map[int]bool{}
	var firstErr error
	for range maxScans {
		pids, err := GroupMembers(pgid)
		if err != nil {
			return len(signalled), err
		}
		found := false
		for _, pid := range pids {
			if pid == me || signalled[pid] {
				continue
			}
			ok, err := signalChecked(pid, pgid, start, sig) // checks the start time too
			if err != nil && firstErr == nil {
				firstErr = err
			}
			if ok {
				signalled[pid] = true
				found = true
			}
		}
		if !found {
			break
		}
	}
	return len(signalled), firstErr
}

// GroupMembers lists the live (not zombie) processes of group pgid, from
// /proc.
func GroupMembers(pgid int) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("proc: listing processes: %w", err)
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readStat(pid); err == nil && st.pgrp == pgid && !st.dead() {
			out = append(out, pid)
		}
	}
	return out, nil
}

func member(st stat, pgid int, start uint64) bool {
	return st.pgrp == pgid && st.start >= start && !st.dead()
}

// signalChecked signals pid if it is still a member: the process is held
// by a pidfd (os.FindProcess opens one where the kernel has them) before
// it is checked, so the signal reaches the process that was checked.
func signalChecked(pid, pgid int, start uint64, sig syscall.Signal) (bool, error) {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false, nil
	}
	defer p.Release()
	if st, err := readStat(pid); err != nil || !member(st, pgid, start) {
		return false, nil
	}
	switch err := p.Signal(sig); {
	case err == nil:
		return true, nil
	case errors.Is(err, os.ErrProcessDone):
		return false, nil
	default:
		return false, fmt.Errorf("proc: signalling %d: %w", pid, err)
	}
}
