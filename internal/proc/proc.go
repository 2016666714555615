// Package proc starts the processes Continuo runs: one check's command, without a
// shell, as its own process group, with exactly the environment it is given
// and its stdout and stderr on one pipe (Start), as runs and the swarm's
// process runtime do; or a program that speaks a protocol over its stdin and
// stdout, such as a provider's ACP agent, with its own pipes for them and
// stderr apart (StartPipes). It also names processes so that another server
// can tell whether they still run (Alive) and kill what a dead server left
// behind (KillGroup).
//
// # Identities
//
// A process is named "<host> <pid> <start>": host is HostID(), pid the
// process id (for a Process, the leader's, which is also its group's id),
// and start the process's start time in clock ticks since boot (field 22 of
// /proc/<pid>/stat) on Linux, "0" elsewhere. A pid alone is reused by the
// kernel; the start time tells the process that had it from a later one.
//
// # When the server dies
//
// On Linux the leader is started with Pdeathsig = SIGKILL, so it dies with
// the server however the server dies (unless it is detached: Spec.Detach). Its children and grandchildren do
// not (a parent-death signal is per process and is not inherited); they stay
// in the group, and the server that takes over the run calls KillGroup with
// the recorded Ident, which kills them without touching a later, unrelated
// group.
//
// The Go caveat: PR_SET_PDEATHSIG fires when the parent thread exits, not
// the parent process, and a Go program runs on threads the runtime may
// end — it ends the thread of a goroutine that exits while locked with
// runtime.LockOSThread. A leader forked on such a thread would be killed
// while the server lives. So every Start forks on one goroutine that locks
// its thread and never exits (it lives as long as the process), whichever
// goroutine called Start. The signal is also cleared by the kernel when the
// leader execs a set-user-ID or set-group-ID program; checks do not.
package proc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// WaitDelay is how long Wait waits, after the leader exited, for the output
// pipe to be closed by everyone else holding it (a daemon the check started
// in the background, a grandchild that outlived it). Then what is in the
// pipe is still read, until it stays empty for drainIdle or drainMax more
// bytes were read, so that a slow Output does not lose the end of the
// output; the pipe is closed on Continuo's side, and Wait returns.
const WaitDelay = 2 * time.Second

const (
	drainIdle = 100 * time.Millisecond
	drainMax  = 256 << 10 // four times a Linux pipe's default capacity
)

// Spec is what to run.
type Spec struct {
	// Argv is the command and its arguments, run as given (never through a
	// shell). argv[0] without a slash is looked up in the PATH of Env (not
	// the server's PATH), in its absolute entries only; with a slash, a
	// relative argv[0] is relative to Dir.
	Argv []string
	// Dir is the working directory; it must exist and be a directory.
	Dir string
	// Env is the whole environment, KEY=VALUE; nothing else is inherited.
	Env []string
	// Output receives stdout and stderr interleaved: both are one pipe, as
	// a terminal would be (with StartPipes, stderr alone). It is written
	// from one goroutine, never after Wait returned; nil discards the
	// output. A Write that fails makes the rest of the output be read and
	// discarded, so that the process never blocks on a full pipe.
	Output io.Writer
	// Detach makes the process outlive the server (Start only): it gets no
	// parent-death signal, and its stdout and stderr go to Log, a file it
	// keeps writing when the server is gone, instead of a pipe to Output
	// (whose write end breaks with the server, and would kill the process
	// at its next write). Output must be nil; a nil Log is /dev/null.
	Detach bool
	Log    *os.File
}

// Process is a started command: the leader of its own process group.
type Process struct {
	cmd   *exec.Cmd
	name  string // argv[0], for errors
	pid   int    // the leader's pid, which is the group's id
	start uint64 // the leader's start time (clock ticks since boot), 0 where unknown
	ident string

	// exited is closed once the leader has exited. On Linux that is before
	// it is reaped: while it is a zombie its pid, and so the group's id,
	// cannot be given to another process.
	exited chan struct{}
	// done is closed once the result is set and the output drained.
	done chan struct{}

	mu     sync.Mutex // held while signalling the group and while reaping the leader
	reaped bool       // the leader was reaped: its pid may now be reused

	draining atomic.Bool // WaitDelay has passed: read only what the pipe holds

	code int
	err  error
}

// Start starts s.Argv in s.Dir as the leader of a new process group, with
// stdin /dev/null and stdout and stderr on one pipe to s.Output.
func Start(s Spec) (*Process, error) {
	p, _, _, err := startProcess(s, false)
	return p, err
}

// StartPipes starts s.Argv in s.Dir as Start does, but with its stdin and
// stdout on pipes of their own, for a protocol spoken over them: stdin is
// the write end of the process's standard input and stdout the read end of
// its standard output, both the caller's to close (closing stdin is the
// process's end of input; closing stdout makes a Read that waits on it
// return). s.Output receives stderr alone. Wait waits for the leader and
// for stderr as it does for Start's output, never for stdout: what the
// process wrote there before it exited stays readable after Wait.
func StartPipes(s Spec) (p *Process, stdin io.WriteCloser, stdout io.ReadCloser, err error) {
	p, in, out, err := startProcess(s, true)
	if err != nil {
		return nil, nil, nil, err
	}
	return p, in, out, nil
}

func startProcess(s Spec, pipes bool) (_ *Process, stdinW, stdoutR *os.File, err error) {
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return nil, nil, nil, errors.New("proc: no command")
	}
	dir, err := workDir(s.Dir)
	if err != nil {
		return nil, nil, nil, err
	}
	path, err := lookPath(s.Argv[0], dir, s.Env)
	if err != nil {
		return nil, nil, nil, err
	}
	if s.Detach && (pipes || s.Output != nil) {
		return nil, nil, nil, errors.New("proc: a detached process writes to its Log: no pipes, no Output")
	}
	out := s.Output
	if out == nil {
		out = io.Discard
	}
	// The child's ends are closed here once it has its copies (or it did
	// not start); the parent's ends are closed here only on failure.
	var childEnds, parentEnds []*os.File
	defer func() {
		for _, f := range childEnds {
			f.Close()
		}
		if err != nil {
			for _, f := range parentEnds {
				f.Close()
			}
		}
	}()
	pipe := func(what string) (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err != nil {
			return nil, nil, fmt.Errorf("proc: %s pipe: %w", what, err)
		}
		return r, w, nil
	}
	var pr, pw *os.File
	if s.Detach {
		pw = s.Log // nil: /dev/null
	} else {
		if pr, pw, err = pipe("output"); err != nil {
			return nil, nil, nil, err
		}
		childEnds, parentEnds = append(childEnds, pw), append(parentEnds, pr)
	}
	cmd := &exec.Cmd{
		Path: path,
		Args: slices.Clone(s.Argv),
		Dir:  dir,
		// Never nil: a nil Env would make exec inherit the server's.
		Env:         append(make([]string, 0, len(s.Env)), s.Env...),
		Stdin:       nil, // /dev/null
		Stdout:      pw,  // an *os.File is given to the child as it is:
		Stderr:      pw,  // both descriptors are the same pipe (or Log)
		SysProcAttr: sysProcAttr(s.Detach),
	}
	if pw == nil {
		cmd.Stdout, cmd.Stderr = nil, nil // a typed nil *os.File is not /dev/null
	}
	if pipes {
		inR, inW, err := pipe("stdin")
		if err != nil {
			return nil, nil, nil, err
		}
		childEnds, parentEnds = append(childEnds, inR), append(parentEnds, inW)
		outR, outW, err := pipe("stdout")
		if err != nil {
			return nil, nil, nil, err
		}
		childEnds, parentEnds = append(childEnds, outW), append(parentEnds, outR)
		cmd.Stdin, cmd.Stdout = inR, outW
		stdinW, stdoutR = inW, outR
	}
	// The read end of the output pipe sees EOF once every holder of the
	// write end closed it: the deferred close drops this process's copy.
	if err := startCmd(cmd); err != nil {
		return nil, nil, nil, fmt.Errorf("proc: starting %s: %w", s.Argv[0], err)
	}
	p := &Process{
		cmd:    cmd,
		name:   s.Argv[0],
		pid:    cmd.Process.Pid,
		exited: make(chan struct{}),
		done:   make(chan struct{}),
	}
	// The start time can be read even if the leader has exited already: it
	// is a zombie until reaped below.
	if p.start, err = leaderStart(p.pid); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, nil, nil, fmt.Errorf("proc: starting %s: %w", s.Argv[0], err)
	}
	p.ident = HostID() + " " + strconv.Itoa(p.pid) + " " + strconv.FormatUint(p.start, 10)
	copied := make(chan struct{})
	if pr != nil {
		go p.copyOutput(pr, out, copied)
	} else {
		close(copied)
	}
	go p.reap(pr, copied)
	return p, stdinW, stdoutR, nil
}

// Ident names the process group: "<host> <pgid> <start>", for KillGroup
// and Alive.
func (p *Process) Ident() string { return p.ident }

// Wait waits until the leader has exited and the output pipe is drained —
// when something else still holds the pipe, until WaitDelay after the
// leader exited and then what the pipe holds is read — and returns the
// leader's exit code. exitCode is -1 and err non-nil
// when the leader was killed by a signal or could not be waited for; err is
// nil for any exit code otherwise. Wait may be called more than once and
// from several goroutines. It does not kill what the leader left running:
// Stop does.
func (p *Process) Wait() (exitCode int, err error) {
	<-p.done
	return p.code, p.err
}

// reap waits for the leader, reaps it and sets the result once the output
// is drained (or WaitDelay has passed).
func (p *Process) reap(pr *os.File, copied <-chan struct{}) {
	pinned := waitExited(p.pid)
	if pinned {
		// The leader is a zombie: signals to its group cannot reach a
		// reused id until it is reaped, which happens under mu.
		close(p.exited)
		p.mu.Lock()
	}
	err := p.cmd.Wait()
	if !pinned {
		p.mu.Lock()
	}
	p.reaped = true
	p.mu.Unlock()
	if !pinned {
		close(p.exited)
	}
	if pr == nil { // detached: no output pipe
		p.code, p.err = p.result(err)
		close(p.done)
		return
	}
	t := time.NewTimer(WaitDelay)
	select {
	case <-copied:
	case <-t.C:
		// Something else holds the pipe. The copy reads on while the pipe
		// has data; the deadline wakes it if it is waiting for more.
		p.draining.Store(true)
		if pr.SetReadDeadline(time.Now().Add(drainIdle)) != nil {
			pr.Close() // no deadlines on this system: what is unread is lost
		}
	}
	t.Stop()
	<-copied
	pr.Close()
	p.code, p.err = p.result(err)
	close(p.done)
}

func (p *Process) result(err error) (int, error) {
	st := p.cmd.ProcessState
	var exitErr *exec.ExitError
	switch {
	case st != nil && st.Exited():
		return st.ExitCode(), nil
	case errors.As(err, &exitErr):
		return -1, fmt.Errorf("proc: %s: %w", p.name, err) // "signal: killed"
	case err == nil:
		err = errors.New("no exit status")
	}
	return -1, fmt.Errorf("proc: waiting for %s: %w", p.name, err)
}

// copyOutput copies the pipe to w until the pipe ends, or, once draining,
// until it stays empty for drainIdle or drainMax bytes were read. After a
// failed Write it keeps reading, so that the writer never blocks on a full
// pipe, and discards.
func (p *Process) copyOutput(r *os.File, w io.Writer, done chan<- struct{}) {
	defer close(done)
	buf := make([]byte, 32<<10)
	budget := drainMax
	for {
		if p.draining.Load() {
			if budget <= 0 || r.SetReadDeadline(time.Now().Add(drainIdle)) != nil {
				return
			}
		}
		n, err := r.Read(buf)
		if p.draining.Load() {
			budget -= n
		}
		if n > 0 && w != nil {
			if _, werr := w.Write(buf[:n]); werr != nil {
				w = nil
			}
		}
		if err != nil {
			return
		}
	}
}

// workDir checks the working directory and makes it absolute, so that a
// relative argv[0] resolved against it names the same file after the
// child's chdir.
func workDir(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("proc: no working directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("proc: working directory %s: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("proc: working directory %s does not exist", dir)
	case err != nil:
		return "", fmt.Errorf("proc: working directory: %w", err)
	case !fi.IsDir():
		return "", fmt.Errorf("proc: working directory %s is not a directory", dir)
	}
	return abs, nil
}

// lookPath finds the program argv[0] names: with a path separator, that
// file (relative to dir); without, the first executable of that name in the
// absolute entries of env's PATH. Relative PATH entries ("", ".", "bin")
// are skipped, as exec.LookPath refuses them: they would find a program in
// the checked-out tree under the name of a system one.
func lookPath(name, dir string, env []string) (string, error) {
	if strings.ContainsRune(name, '/') || (runtime.GOOS == "windows" && strings.ContainsAny(name, `\:`)) {
		path := name
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		for _, c := range candidates(path, env) {
			if executable(c) == nil {
				return c, nil
			}
		}
		return "", fmt.Errorf("proc: %s: %w", name, executable(path))
	}
	pathEnv, _ := lookupEnv(env, "PATH")
	for _, d := range filepath.SplitList(pathEnv) {
		if !filepath.IsAbs(d) {
			continue
		}
		for _, c := range candidates(filepath.Join(d, name), env) {
			if executable(c) == nil {
				return c, nil
			}
		}
	}
	return "", fmt.Errorf("proc: %s: not found in the PATH of the check's environment (%q)", name, pathEnv)
}

// lookupEnv returns the value of key in env; the last one wins, as exec
// and the C library read it. Keys compare without case on Windows.
func lookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		k, v, ok := strings.Cut(env[i], "=")
		if ok && (k == key || (runtime.GOOS == "windows" && strings.EqualFold(k, key))) {
			return v, true
		}
	}
	return "", false
}

// hostnameID is the host's name, where there is nothing better: spaces
// would break the "<host> <pid> <start>" form.
func hostnameID() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "unknown-host"
	}
	return strings.ReplaceAll(h, " ", "_")
}

// parseIdent reads "<host> <pid> <start>".
func parseIdent(ident string) (host string, pid int, start uint64, err error) {
	f := strings.Split(ident, " ")
	if len(f) != 3 || f[0] == "" {
		return "", 0, 0, fmt.Errorf("proc: malformed process identity %q", ident)
	}
	pid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[2], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return "", 0, 0, fmt.Errorf("proc: malformed process identity %q", ident)
	}
	return f[0], pid, start, nil
}
