//go:build linux

package proc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/continuo-dev/continuo/internal/syncbuf"
)

// These tests run real processes (sh, sleep, env). None sleeps to wait for
// something: they wait on Wait, or poll /proc with a deadline.

const helperEnv = "CONTINUO_PROC_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "server":
		helperServer(Spec{Argv: []string{"sh", "-c", "sleep 300 & sleep 300 & wait"}, Dir: "/", Env: testEnv()})
		return
	case "detached":
		log, err := os.OpenFile(os.Getenv("HELPER_LOG"), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
		script := `while [ ! -e "$FLAG" ]; do sleep 0.01; done; echo "written after the server died"; exec sleep 300`
		helperServer(Spec{Argv: []string{"sh", "-c", script}, Dir: "/", Env: testEnv("FLAG=" + os.Getenv("HELPER_FLAG")),
			Detach: true, Log: log})
		return
	}
	os.Exit(m.Run())
}

// helperServer stands in for a Continuo server: it starts s (a check with
// background children, or a detached process), prints its own identity and
// the process's, and blocks until its stdin ends (or it is killed, which
// is the point).
func helperServer(s Spec) {
	p, err := Start(s)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	fmt.Println(Self())
	fmt.Println(p.Ident())
	_, _ = io.Copy(io.Discard, os.Stdin)
	p.Stop(0)
	os.Exit(0)
}

func testEnv(extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH")}, extra...)
}

// deadline bounds every poll: generous, for a loaded machine under -race.
const deadline = 30 * time.Second

// waitFor polls cond until it holds, failing the test at the deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// members is GroupMembers for a test.
func members(t *testing.T, pgid int) []int {
	t.Helper()
	pids, err := GroupMembers(pgid)
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

func waitMembers(t *testing.T, pgid, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d live processes in group %d", n, pgid), func() bool { return len(members(t, pgid)) == n })
}

// buffer is an io.Writer whose content can be read while a process writes.
type buffer = syncbuf.Buffer

func start(t *testing.T, s Spec) *Process {
	t.Helper()
	if s.Dir == "" {
		s.Dir = t.TempDir()
	}
	if s.Env == nil {
		s.Env = testEnv()
	}
	p, err := Start(s)
	if err != nil {
		t.Fatalf("Start(%q): %v", s.Argv, err)
	}
	t.Cleanup(func() { p.Stop(0); _, _ = p.Wait() })
	return p
}

func run(t *testing.T, argv ...string) (int, string, error) {
	t.Helper()
	var out buffer
	p := start(t, Spec{Argv: argv, Output: &out})
	code, err := p.Wait()
	return code, out.String(), err
}

func TestExitCodes(t *testing.T) {
	for _, want := range []int{0, 1, 3} {
		code, _, err := run(t, "sh", "-c", "exit "+strconv.Itoa(want))
		if code != want || err != nil {
			t.Errorf("exit %d: Wait = %d, %v", want, code, err)
		}
	}
}

func TestOutputInterleaved(t *testing.T) {
	code, out, err := run(t, "sh", "-c", "echo out1; echo err1 >&2; echo out2; echo err2 >&2; printf tail")
	if code != 0 || err != nil {
		t.Fatalf("Wait = %d, %v", code, err)
	}
	// One pipe for both: the order is the order of the writes.
	if want := "out1\nerr1\nout2\nerr2\ntail"; out != want {
		t.Errorf("output %q, want %q", out, want)
	}
}

func TestLargeOutput(t *testing.T) {
	// More than a pipe buffer, so the copy must run while the process does.
	code, out, err := run(t, "sh", "-c", "i=0; while [ $i -lt 20000 ]; do echo line $i; i=$((i+1)); done")
	if code != 0 || err != nil {
		t.Fatalf("Wait = %d, %v", code, err)
	}
	if n := strings.Count(out, "\n"); n != 20000 || !strings.HasSuffix(out, "line 19999\n") {
		t.Errorf("%d lines, ends %q", n, out[max(0, len(out)-20):])
	}
}

func TestEnvIsExactlySpecEnv(t *testing.T) {
	env := testEnv("FOO=bar baz", "EMPTY=", "CONTINUO_X=1")
	var out buffer
	p := start(t, Spec{Argv: []string{"env"}, Env: env, Output: &out})
	if code, err := p.Wait(); code != 0 || err != nil {
		t.Fatalf("Wait = %d, %v", code, err)
	}
	if want := strings.Join(env, "\n") + "\n"; out.String() != want {
		t.Errorf("env printed\n%s\nwant\n%s", out.String(), want)
	}
	// An empty Env is an empty environment, not the server's.
	envPath, err := exec.LookPath("env")
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range [][]string{{}, nil} {
		var out buffer
		p, err := Start(Spec{Argv: []string{envPath}, Dir: "/", Env: env, Output: &out})
		if err != nil {
			t.Fatal(err)
		}
		if code, err := p.Wait(); code != 0 || err != nil || out.String() != "" {
			t.Errorf("Env %#v: Wait = %d, %v, printed %q", env, code, err, out.String())
		}
	}
}

func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestLookPathUsesEnvPATH(t *testing.T) {
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "tools")
	writeScript(t, filepath.Join(bin, "continuo-test-tool"), "echo from tools")
	writeScript(t, filepath.Join(tmp, "rel", "continuo-test-tool"), "echo from rel")
	if err := os.MkdirAll(filepath.Join(tmp, "noexec"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "noexec", "continuo-test-tool"), []byte("#!/bin/sh\necho noexec\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sysPath := os.Getenv("PATH")
	if strings.Contains(sysPath, tmp) {
		t.Fatal("the temporary directory is on the server's PATH")
	}

	// Found on the check's PATH, which the server's does not have; an
	// entry that is not executable, or relative, is passed over.
	var out buffer
	p := start(t, Spec{Argv: []string{"continuo-test-tool"}, Dir: tmp, Output: &out,
		Env: []string{"PATH=rel:" + filepath.Join(tmp, "noexec") + ":" + bin + ":" + sysPath}})
	if code, err := p.Wait(); code != 0 || err != nil || out.String() != "from tools\n" {
		t.Errorf("Wait = %d, %v, output %q", code, err, out.String())
	}

	// Not found: the server's PATH is not looked at.
	for _, env := range [][]string{{"PATH=" + bin}, {"PATH=" + filepath.Join(tmp, "noexec")}, {"PATH=rel"}, {"HOME=/"}} {
		if p, err := Start(Spec{Argv: []string{"sh", "-c", "true"}, Dir: tmp, Env: env}); err == nil {
			p.Stop(0)
			t.Errorf("Env %q: sh was found", env)
		} else if !strings.Contains(err.Error(), "not found in the PATH") {
			t.Errorf("Env %q: %v", env, err)
		}
	}

	// With a slash, argv[0] is a path, relative to Dir.
	out = buffer{}
	p = start(t, Spec{Argv: []string{"./rel/continuo-test-tool"}, Dir: tmp, Output: &out, Env: []string{}})
	if code, err := p.Wait(); code != 0 || err != nil || out.String() != "from rel\n" {
		t.Errorf("./rel: Wait = %d, %v, output %q", code, err, out.String())
	}
	if _, err := Start(Spec{Argv: []string{"./noexec/continuo-test-tool"}, Dir: tmp, Env: []string{}}); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("not executable: %v", err)
	}
	if _, err := Start(Spec{Argv: []string{"./missing"}, Dir: tmp, Env: []string{}}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

func TestWorkingDirectory(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]string{
		"":                           "no working directory",
		filepath.Join(tmp, "absent"): "does not exist",
		file:                         "is not a directory",
	} {
		if _, err := Start(Spec{Argv: []string{"true"}, Dir: dir, Env: testEnv()}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Dir %q: %v, want %q", dir, err, want)
		}
	}
	var out buffer
	p := start(t, Spec{Argv: []string{"pwd", "-P"}, Dir: tmp, Output: &out})
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if real, _ := filepath.EvalSymlinks(tmp); out.String() != real+"\n" {
		t.Errorf("pwd %q, want %q", out.String(), real)
	}
}

func TestStdinAndNoShell(t *testing.T) {
	// stdin is /dev/null: cat ends at once.
	if _, out, _ := run(t, "sh", "-c", "cat; readlink /proc/self/fd/0"); out != "/dev/null\n" {
		t.Errorf("stdin: %q", out)
	}
	// argv goes as given: nothing expands $HOME, ; or *.
	if _, out, _ := run(t, "echo", "$HOME", "a;b", "*", "`id`"); out != "$HOME a;b * `id`\n" {
		t.Errorf("echo printed %q", out)
	}
}

func TestOwnGroupAndIdent(t *testing.T) {
	p := start(t, Spec{Argv: []string{"sleep", "300"}})
	st, err := readStat(p.pid)
	if err != nil {
		t.Fatal(err)
	}
	if st.pgrp != p.pid || st.pgrp == syscall.Getpgrp() {
		t.Errorf("leader %d is in group %d (ours %d)", p.pid, st.pgrp, syscall.Getpgrp())
	}
	want := fmt.Sprintf("%s %d %d", HostID(), p.pid, st.start)
	if p.Ident() != want {
		t.Errorf("Ident %q, want %q", p.Ident(), want)
	}
	if boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil &&
		!strings.HasPrefix(HostID(), strings.TrimSpace(string(boot))) {
		t.Errorf("HostID %q does not start with the boot id %q", HostID(), boot)
	}
	if first := HostID(); strings.Contains(first, " ") || HostID() != first {
		t.Errorf("HostID %q", HostID())
	}
	if alive, known := Alive(p.Ident()); !alive || !known {
		t.Errorf("Alive(Ident) = %v, %v", alive, known)
	}
}

func TestStopKillsTheGroup(t *testing.T) {
	p := start(t, Spec{Argv: []string{"sh", "-c", "sleep 300 & sleep 300 & wait"}})
	waitMembers(t, p.pid, 3)
	p.Stop(time.Minute)
	code, err := p.Wait()
	var exitErr *exec.ExitError
	if code != -1 || !errors.As(err, &exitErr) || exitErr.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Errorf("Wait = %d, %v; want -1 and SIGTERM", code, err)
	}
	waitMembers(t, p.pid, 0)
}

func TestStopKillsWhatIgnoresTERM(t *testing.T) {
	// The leader and its child both ignore SIGTERM.
	p := start(t, Spec{Argv: []string{"sh", "-c", `trap "" TERM; sleep 300; echo survived`}})
	waitMembers(t, p.pid, 2) // the trap is set before sleep starts
	const grace = 300 * time.Millisecond
	t0 := time.Now()
	p.Stop(grace)
	if d := time.Since(t0); d < grace {
		t.Errorf("Stop returned after %v, before the grace of %v", d, grace)
	}
	code, err := p.Wait()
	var exitErr *exec.ExitError
	if code != -1 || !errors.As(err, &exitErr) || exitErr.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("Wait = %d, %v; want -1 and SIGKILL", code, err)
	}
	waitMembers(t, p.pid, 0)
}

func TestStopKillsLeftoversAfterLeader(t *testing.T) {
	// The leader obeys SIGTERM, its child ignores it: Stop does not wait
	// for the grace (the leader is gone), and the child is killed anyway.
	p := start(t, Spec{Argv: []string{"sh", "-c", `(trap "" TERM; exec sleep 300) & wait`}})
	waitMembers(t, p.pid, 2)
	waitFor(t, "the child to ignore SIGTERM", func() bool {
		for _, pid := range members(t, p.pid) {
			if pid != p.pid && ignores(t, pid, syscall.SIGTERM) {
				return true
			}
		}
		return false
	})
	t0 := time.Now()
	p.Stop(10 * time.Minute)
	if d := time.Since(t0); d > deadline {
		t.Errorf("Stop took %v", d)
	}
	if code, _ := p.Wait(); code != -1 {
		t.Errorf("exit code %d", code)
	}
	waitMembers(t, p.pid, 0)
}

// ignores reports whether pid ignores sig (SigIgn of /proc/<pid>/status).
func ignores(t *testing.T, pid int, sig syscall.Signal) bool {
	return statusMask(t, pid, "SigIgn")&(1<<(sig-1)) != 0
}

func statusMask(t *testing.T, pid int, field string) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			m, _ := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return m
		}
	}
	return 0
}

func TestWaitWithAGrandchildHoldingThePipe(t *testing.T) {
	var out buffer
	p := start(t, Spec{Argv: []string{"sh", "-c", "sleep 300 & echo started"}, Output: &out})
	t0 := time.Now()
	code, err := p.Wait()
	if d := time.Since(t0); code != 0 || err != nil || d > WaitDelay+deadline {
		t.Errorf("Wait = %d, %v after %v", code, err, d)
	}
	if out.String() != "started\n" {
		t.Errorf("output %q", out.String())
	}
	// The leader is reaped, the sleep still runs: Stop after Wait kills it.
	if n := len(members(t, p.pid)); n != 1 {
		t.Fatalf("%d processes left in the group, want the sleep", n)
	}
	p.Stop(0)
	waitMembers(t, p.pid, 0)
	if err := p.Signal(syscall.SIGTERM); !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("Signal after everything ended: %v", err)
	}
}

// blockedWriter blocks every Write until open is closed.
type blockedWriter struct {
	open chan struct{}
	buffer
}

func (w *blockedWriter) Write(p []byte) (int, error) {
	<-w.open
	return w.buffer.Write(p)
}

func TestWaitDrainsForASlowOutput(t *testing.T) {
	// The leader writes less than a pipe holds and exits; a grandchild keeps
	// the pipe open; Output is stuck until WaitDelay has passed. What was
	// written is still all read.
	w := &blockedWriter{open: make(chan struct{})}
	p := start(t, Spec{Argv: []string{"sh", "-c", `sleep 300 & i=0; while [ $i -lt 1000 ]; do echo "line $i of the output"; i=$((i+1)); done; echo END`}, Output: w})
	waitFor(t, "WaitDelay to pass", p.draining.Load)
	close(w.open)
	if code, err := p.Wait(); code != 0 || err != nil {
		t.Fatalf("Wait = %d, %v", code, err)
	}
	if out := w.String(); strings.Count(out, "\n") != 1001 || !strings.HasSuffix(out, "line 999 of the output\nEND\n") {
		t.Errorf("%d lines, ending %q", strings.Count(out, "\n"), out[max(0, len(out)-40):])
	}
}

func TestWaitWithAChattyGrandchild(t *testing.T) {
	// A grandchild that writes without end cannot keep Wait from returning.
	p := start(t, Spec{Argv: []string{"sh", "-c", "(while :; do echo spam; done) & echo started"}})
	t0 := time.Now()
	if code, err := p.Wait(); code != 0 || err != nil || time.Since(t0) > WaitDelay+deadline {
		t.Errorf("Wait = %d, %v after %v", code, err, time.Since(t0))
	}
	p.Stop(0)
	waitMembers(t, p.pid, 0)
}

func TestSignal(t *testing.T) {
	p := start(t, Spec{Argv: []string{"sh", "-c", "sleep 300 & wait"}})
	waitMembers(t, p.pid, 2)
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code, err := p.Wait(); code != -1 || err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Wait = %d, %v", code, err)
	}
	waitMembers(t, p.pid, 0)
}

func TestAlive(t *testing.T) {
	if alive, known := Alive(Self()); !alive || !known {
		t.Errorf("Alive(Self()) = %v, %v", alive, known)
	}
	host, pid, startTicks, err := parseIdent(Self())
	if err != nil || host != HostID() || pid != os.Getpid() || startTicks == 0 {
		t.Fatalf("Self() = %q: %q %d %d %v", Self(), host, pid, startTicks, err)
	}
	// The same pid with another start time is another process.
	if alive, known := Alive(fmt.Sprintf("%s %d %d", host, pid, startTicks+1)); alive || !known {
		t.Errorf("another start time: %v, %v", alive, known)
	}
	// A process that ended (and was reaped).
	p := start(t, Spec{Argv: []string{"true"}})
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if alive, known := Alive(p.Ident()); alive || !known {
		t.Errorf("ended process: %v, %v", alive, known)
	}
	// Another host: cannot tell.
	if alive, known := Alive(fmt.Sprintf("other-host %d %d", pid, startTicks)); alive || known {
		t.Errorf("another host: %v, %v", alive, known)
	}
	for _, bad := range []string{"", "x", HostID() + " 0 1", HostID() + " -1 1", HostID() + " 1 x", HostID() + " 1 2 3"} {
		if alive, known := Alive(bad); alive || known {
			t.Errorf("Alive(%q) = %v, %v", bad, alive, known)
		}
	}
}

func TestKillGroupChecksTheStartTime(t *testing.T) {
	p := start(t, Spec{Argv: []string{"sh", "-c", "sleep 300 & sleep 300 & wait"}})
	waitMembers(t, p.pid, 3)
	latest := uint64(0)
	for _, pid := range members(t, p.pid) {
		st, err := readStat(pid)
		if err != nil {
			t.Fatal(err)
		}
		latest = max(latest, st.start)
	}
	for _, ident := range []string{
		fmt.Sprintf("%s %d %d", HostID(), p.pid, latest+1),  // started after every member
		fmt.Sprintf("%s %d %d", HostID(), p.pid, p.start-1), // the leader has another start
		fmt.Sprintf("other-host %d %d", p.pid, p.start),
	} {
		if n, err := KillGroup(ident); n != 0 || err != nil {
			t.Errorf("KillGroup(%q) = %d, %v", ident, n, err)
		}
	}
	if n := len(members(t, p.pid)); n != 3 {
		t.Fatalf("%d members left, want all 3", n)
	}
	for _, bad := range []string{"garbage", HostID() + " 1 5", HostID() + " 12 0"} {
		if n, err := KillGroup(bad); n != 0 || err == nil {
			t.Errorf("KillGroup(%q) = %d, %v; want an error", bad, n, err)
		}
	}
	n, err := KillGroup(p.Ident())
	if n != 3 || err != nil {
		t.Errorf("KillGroup = %d, %v; want 3", n, err)
	}
	if code, _ := p.Wait(); code != -1 {
		t.Errorf("exit code %d", code)
	}
	waitMembers(t, p.pid, 0)
}

// TestServerDeath: a "server" (this test binary, re-executed) starts a check
// with two background children and is SIGKILLed. Pdeathsig kills the
// leader; the children live on in the group until KillGroup, given the
// Ident the server printed, kills them.
//
// The test process becomes a child subreaper for the while, so that the
// orphaned leader and children are reparented to it and it can reap the
// leader: then no process has the group's id, and only the start times keep
// KillGroup from a group that is not the recorded one.
func TestServerDeath(t *testing.T) {
	helper, server, ident := startHelper(t, helperEnv+"=server")
	_, pgid, leaderStart, err := parseIdent(ident)
	if err != nil {
		t.Fatalf("helper printed %q: %v", ident, err)
	}
	if alive, known := Alive(server); !alive || !known {
		t.Fatalf("Alive(helper) = %v, %v", alive, known)
	}
	waitMembers(t, pgid, 3)

	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	if alive, known := Alive(server); alive || !known {
		t.Errorf("Alive(killed helper) = %v, %v", alive, known)
	}
	if st, err := readStat(pgid); err != nil || st.start != leaderStart {
		t.Fatalf("the leader is gone before its server: %v", err)
	}
	waitFor(t, "the leader to die with its server (Pdeathsig), and to be reaped", func() bool {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(pgid, &ws, syscall.WNOHANG, nil)
		return pid == pgid && err == nil
	})
	if _, err := readStat(pgid); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the leader is still in /proc: %v", err)
	}
	left := members(t, pgid)
	if len(left) != 2 {
		t.Fatalf("%d processes left in the group, want the 2 sleeps", len(left))
	}
	latest := uint64(0)
	for _, pid := range left {
		st, _ := readStat(pid)
		latest = max(latest, st.start)
	}
	if n, err := KillGroup(fmt.Sprintf("%s %d %d", HostID(), pgid, latest+1)); n != 0 || err != nil {
		t.Errorf("KillGroup with a later start = %d, %v", n, err)
	}
	if n := len(members(t, pgid)); n != 2 {
		t.Fatalf("KillGroup with a later start killed something: %d left", n)
	}
	n, err := KillGroup(ident)
	if n != 2 || err != nil {
		t.Errorf("KillGroup = %d, %v; want 2", n, err)
	}
	for _, pid := range left { // orphans: ours to reap
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil || ws.Signal() != syscall.SIGKILL {
			t.Errorf("reaping %d: %v, %v", pid, err, ws)
		}
	}
	waitMembers(t, pgid, 0)
	if n, err := KillGroup(ident); n != 0 || err != nil {
		t.Errorf("KillGroup again = %d, %v", n, err)
	}
}

// TestDetachedOutlivesServer: a detached process (a carrier the swarm
// runtime started) gets no parent-death signal: when its "server" is
// SIGKILLed it lives on, and what it writes afterwards reaches its log.
func TestDetachedOutlivesServer(t *testing.T) {
	dir := t.TempDir()
	logPath, flag := filepath.Join(dir, "carrier.log"), filepath.Join(dir, "go")
	if err := os.WriteFile(logPath, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	helper, _, ident := startHelper(t, helperEnv+"=detached", "HELPER_LOG="+logPath, "HELPER_FLAG="+flag)
	_, pgid, _, err := parseIdent(ident)
	if err != nil {
		t.Fatalf("helper printed %q: %v", ident, err)
	}
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the detached process to write after its server died", func() bool {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "written after the server died")
	})
	if alive, known := Alive(ident); !alive || !known {
		t.Fatalf("Alive(detached) = %v, %v after its server died", alive, known)
	}
	if n, err := KillGroup(ident); n != 1 || err != nil {
		t.Errorf("KillGroup = %d, %v; want the one sleep", n, err)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pgid, &ws, 0, nil); err != nil || ws.Signal() != syscall.SIGKILL {
		t.Errorf("reaping the orphan %d: %v, %v", pgid, err, ws)
	}
	if _, err := Start(Spec{Argv: []string{"true"}, Dir: "/", Env: testEnv(), Detach: true, Output: io.Discard}); err == nil {
		t.Error("a detached process with an Output started")
	}
}

// startHelper re-executes the test binary as a "server" (helperServer)
// with env, while this process is a child subreaper — so that what the
// helper leaves behind is reparented here, for the test to reap — and
// returns it with the identities it printed: its own and its process's.
func startHelper(t *testing.T, env ...string) (helper *exec.Cmd, server, ident string) {
	t.Helper()
	const prSetChildSubreaper = 36
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		t.Fatalf("PR_SET_CHILD_SUBREAPER: %v", e)
	}
	t.Cleanup(func() { syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 0, 0) })
	helper = exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), env...)
	stdin, err := helper.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close() })
	stdout, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	helper.Stderr = os.Stderr
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	read := func() string {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the helper ended without printing")
			}
			return l
		case <-time.After(deadline):
			t.Fatal("the helper printed nothing")
		}
		return ""
	}
	server, ident = read(), read()
	t.Cleanup(func() { _, _ = KillGroup(ident) })
	return helper, server, ident
}

// TestStartOnAnEndingThread: Start called from a goroutine that exits
// locked to its thread, which the runtime then ends. Pdeathsig watches the
// forking thread, so a leader forked there would be killed; Start forks on
// its own thread instead.
func TestStartOnAnEndingThread(t *testing.T) {
	var p *Process
	var tid int
	for {
		done := make(chan error)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			tid = syscall.Gettid()
			var err error
			p, err = Start(Spec{Argv: []string{"sleep", "300"}, Dir: "/", Env: testEnv()})
			done <- err
		}()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		started := p
		t.Cleanup(func() { started.Stop(0); _, _ = started.Wait() })
		if tid != os.Getpid() {
			break // the main thread is never ended: try again on another
		}
	}
	waitFor(t, "the locked thread to end", func() bool {
		_, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", tid))
		return errors.Is(err, fs.ErrNotExist)
	})
	// A parent-death signal is sent before the thread is released.
	st, err := readStat(p.pid)
	if err != nil || st.dead() {
		t.Fatalf("the leader died with the thread that called Start: %v %c", err, st.state)
	}
	if m := statusMask(t, p.pid, "SigPnd") | statusMask(t, p.pid, "ShdPnd"); m&(1<<(syscall.SIGKILL-1)) != 0 {
		t.Fatal("the leader was sent SIGKILL when the thread that called Start ended")
	}
	select {
	case <-p.done:
		t.Fatal("the leader ended")
	default:
	}
}
