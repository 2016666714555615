//go:build unix && !linux

package proc

import (
	"os/exec"
	"strconv"
	"sync"
	"syscall"
)

// On Unix systems other than Linux there is no parent-death signal, no
// /proc to read start times from and no waitid without reaping: the group
// is still its own and is signalled as one, start times are "0", and
// KillGroup does nothing.

func sysProcAttr(bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func startCmd(cmd *exec.Cmd) error { return cmd.Start() }

func waitExited(int) bool { return false }

func leaderStart(int) (uint64, error) { return 0, nil }

var hostID = sync.OnceValue(hostnameID)

// HostID names this host for process identities: its host name.
func HostID() string { return hostID() }

// Self names the current process: "<host> <pid> 0".
func Self() string { return HostID() + " " + strconv.Itoa(syscall.Getpid()) + " 0" }

// Alive reports whether a process with ident's pid exists; there is no
// start time to check it against. known is false for another host.
func Alive(ident string) (alive, known bool) {
	host, pid, _, err := parseIdent(ident)
	if err != nil || host != HostID() {
		return false, false
	}
	return aliveByKill(pid), true
}

// KillGroup does nothing here: without start times a group's leftovers
// cannot be told from a later group that reuses its id.
func KillGroup(string) (int, error) { return 0, nil }

// signalAfterReap signals the group by its id. Its leader has been reaped,
// so in the moment between the reaping and this signal the id could have
// been reused; nothing better is portable.
func signalAfterReap(pgid int, _ uint64, sig syscall.Signal) error { return killGroup(pgid, sig) }
