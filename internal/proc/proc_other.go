//go:build !unix

package proc

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Where there is no Unix there are no process groups here: Signal and Stop
// reach the leader only, Stop kills it (there is no SIGTERM to send), start
// times are "0", Alive cannot tell and KillGroup does nothing.

func sysProcAttr(bool) *syscall.SysProcAttr { return nil }

func startCmd(cmd *exec.Cmd) error { return cmd.Start() }

func waitExited(int) bool { return false }

func leaderStart(int) (uint64, error) { return 0, nil }

// Signal kills the leader for SIGKILL; other signals are not supported.
func (p *Process) Signal(sig syscall.Signal) error {
	if sig != syscall.SIGKILL {
		return errors.New("proc: only SIGKILL can be sent here")
	}
	return p.cmd.Process.Kill()
}

// Stop kills the leader and waits until it has exited.
func (p *Process) Stop(time.Duration) {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

var hostID = sync.OnceValue(hostnameID)

// HostID names this host for process identities: its host name.
func HostID() string { return hostID() }

// Self names the current process: "<host> <pid> 0".
func Self() string { return HostID() + " " + strconv.Itoa(os.Getpid()) + " 0" }

// Alive cannot tell here: known is always false.
func Alive(string) (alive, known bool) { return false, false }

// KillGroup does nothing here.
func KillGroup(string) (int, error) { return 0, nil }

func executable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return &fs.PathError{Op: "exec", Path: path, Err: fs.ErrInvalid}
	}
	return nil
}

// candidates are the files a program path may name: on Windows, without
// an extension, the path with each of PATHEXT's.
func candidates(path string, env []string) []string {
	if filepath.Ext(path) != "" {
		return []string{path}
	}
	exts, ok := lookupEnv(env, "PATHEXT")
	if !ok {
		exts = ".com;.exe;.bat;.cmd"
	}
	out := []string{path}
	for _, e := range strings.Split(exts, ";") {
		if e != "" {
			out = append(out, path+e)
		}
	}
	return out
}
