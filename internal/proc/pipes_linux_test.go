//go:build linux

package proc

import (
	"bufio"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startPipes starts s with StartPipes, as start does with Start, and closes
// both pipe ends at the end of the test.
func startPipes(t *testing.T, s Spec) (*Process, io.WriteCloser, io.ReadCloser) {
	t.Helper()
	if s.Dir == "" {
		s.Dir = t.TempDir()
	}
	if s.Env == nil {
		s.Env = testEnv()
	}
	p, stdin, stdout, err := StartPipes(s)
	if err != nil {
		t.Fatalf("StartPipes(%q): %v", s.Argv, err)
	}
	t.Cleanup(func() {
		p.Stop(0)
		_, _ = p.Wait()
		stdin.Close()
		stdout.Close()
	})
	return p, stdin, stdout
}

func TestPipesRoundTrip(t *testing.T) {
	// A line protocol: every line written to stdin comes back on stdout,
	// one at a time, while the process runs; stderr goes to Output alone.
	var errOut buffer
	p, stdin, stdout := startPipes(t, Spec{
		Argv:   []string{"sh", "-c", `echo ready >&2; while read -r l; do echo "got $l"; done; echo bye; echo done >&2`},
		Output: &errOut,
	})
	lines := bufio.NewScanner(stdout)
	for _, l := range []string{"one", "two", `{"jsonrpc":"2.0"}`} {
		if _, err := io.WriteString(stdin, l+"\n"); err != nil {
			t.Fatal(err)
		}
		if !lines.Scan() || lines.Text() != "got "+l {
			t.Fatalf("read %q (%v), want %q", lines.Text(), lines.Err(), "got "+l)
		}
	}
	// Closing stdin is the end of the input.
	if err := stdin.Close(); err != nil {
		t.Fatal(err)
	}
	if code, err := p.Wait(); code != 0 || err != nil {
		t.Fatalf("Wait = %d, %v", code, err)
	}
	if errOut.String() != "ready\ndone\n" {
		t.Errorf("stderr %q, want only stderr", errOut.String())
	}
	// What was written before the exit is still there after Wait.
	rest, err := io.ReadAll(stdout)
	if err != nil || string(rest) != "bye\n" {
		t.Errorf("rest of stdout %q, %v", rest, err)
	}
}

func TestPipesWaitDoesNotWaitForStdout(t *testing.T) {
	// Nobody reads stdout until after Wait; stdout holds less than a pipe.
	p, stdin, stdout := startPipes(t, Spec{Argv: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}})
	if code, err := p.Wait(); code != 3 || err != nil {
		t.Fatalf("Wait = %d, %v", code, err)
	}
	b, err := io.ReadAll(stdout)
	if err != nil || string(b) != "out\n" {
		t.Errorf("stdout %q, %v", b, err)
	}
	// The process is gone: a write to its stdin fails (EPIPE), and does not
	// kill the test process with SIGPIPE.
	if _, err := io.WriteString(stdin, "late\n"); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("write after exit: %v, want EPIPE", err)
	}
}

func TestPipesEnvAndGroup(t *testing.T) {
	env := testEnv("FOO=bar", "CONTINUO_X=1")
	p, _, stdout := startPipes(t, Spec{Argv: []string{"env"}, Env: env})
	b, err := io.ReadAll(stdout)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Join(env, "\n") + "\n"; string(b) != want {
		t.Errorf("env printed\n%s\nwant\n%s", b, want)
	}
	if code, err := p.Wait(); code != 0 || err != nil {
		t.Fatalf("Wait = %d, %v", code, err)
	}

	// Its own group, and its stdin is the pipe, not /dev/null.
	p, stdin, stdout := startPipes(t, Spec{Argv: []string{"sh", "-c", "readlink /proc/self/fd/0; cat"}})
	st, err := readStat(p.pid)
	if err != nil {
		t.Fatal(err)
	}
	if st.pgrp != p.pid || st.pgrp == syscall.Getpgrp() {
		t.Errorf("leader %d is in group %d (ours %d)", p.pid, st.pgrp, syscall.Getpgrp())
	}
	r := bufio.NewReader(stdout)
	if l, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(l, "pipe:") {
		t.Errorf("stdin is %q, %v; want a pipe", l, err)
	}
	stdin.Close()
	if code, err := p.Wait(); code != 0 || err != nil {
		t.Fatalf("Wait = %d, %v", code, err)
	}
}

func TestPipesStopKillsTheGroup(t *testing.T) {
	// A group that holds stdout open and never writes: Stop kills all of
	// it, and stdout then ends.
	p, _, stdout := startPipes(t, Spec{Argv: []string{"sh", "-c", "sleep 300 & sleep 300 & wait"}})
	waitMembers(t, p.pid, 3)
	read := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(stdout)
		read <- err
	}()
	p.Stop(time.Minute)
	if code, _ := p.Wait(); code != -1 {
		t.Errorf("exit code %d", code)
	}
	waitMembers(t, p.pid, 0)
	select {
	case err := <-read:
		if err != nil {
			t.Errorf("reading stdout: %v", err)
		}
	case <-time.After(deadline):
		t.Fatal("stdout did not end when the group was killed")
	}
}

func TestPipesCloseStdoutEndsARead(t *testing.T) {
	// A process that never writes (or a leftover outside the group that
	// holds stdout) cannot keep a reader blocked for ever: the caller's
	// Close returns it.
	_, _, stdout := startPipes(t, Spec{Argv: []string{"sleep", "300"}})
	read := make(chan error, 1)
	go func() {
		_, err := stdout.Read(make([]byte, 1))
		read <- err
	}()
	if err := stdout.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-read:
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("Read after Close: %v", err)
		}
	case <-time.After(deadline):
		t.Fatal("Close did not end the Read")
	}
}

func TestPipesStartErrors(t *testing.T) {
	// An executable file the kernel cannot run fails in exec, after every
	// pipe was made: none is left open.
	tmp := t.TempDir()
	if err := os.WriteFile(tmp+"/garbage", []byte{0, 1, 2, 3}, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range []Spec{
		{Argv: nil, Dir: "/"},
		{Argv: []string{"continuo-no-such-program"}, Dir: "/", Env: testEnv()},
		{Argv: []string{"true"}, Dir: "/nonexistent-dir", Env: testEnv()},
		{Argv: []string{"./garbage"}, Dir: tmp, Env: testEnv()},
	} {
		before := openFDs(t)
		p, stdin, stdout, err := StartPipes(s)
		if err == nil || p != nil || stdin != nil || stdout != nil {
			t.Errorf("StartPipes(%q in %q) = %v, %v, %v, %v; want only an error", s.Argv, s.Dir, p, stdin, stdout, err)
		}
		if after := openFDs(t); after != before {
			t.Errorf("StartPipes(%q): %d descriptors open before, %d after", s.Argv, before, after)
		}
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
