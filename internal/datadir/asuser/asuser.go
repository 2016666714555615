//go:build unix

// Package asuser runs a test without root's privileges. Permission checks
// do not apply to root, so a test of "permission denied" run as root would
// pass or fail for the wrong reason; under root (as in a container) the
// test runs again in a child process as an unprivileged user, for real.
// Only tests import it.
package asuser

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Nobody is the user and group the child runs as.
const Nobody = 65534

const (
	envChild   = "CONTINUO_TEST_UNPRIVILEGED"
	envForeign = "CONTINUO_TEST_FOREIGN_DIR"
)

// Run makes the calling test run unprivileged. Not under root, it returns
// true: the test runs here. Under root it runs the test (by its name) in a
// copy of the test binary as uid and gid Nobody, reports the child's
// output, fails when the child failed, and returns false: the caller
// returns. The child also gets a directory root made, mode 0755, that it
// does not own (Foreign).
func Run(t *testing.T) bool {
	t.Helper()
	if os.Geteuid() != 0 {
		return true
	}
	if os.Getenv(envChild) != "" {
		t.Fatal("asuser: the unprivileged child runs as root")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := open(t)
	bin := filepath.Join(dir, "test.bin")
	copyFile(t, exe, bin)
	foreign := filepath.Join(dir, "foreign")
	if err := os.Mkdir(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(foreign, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, Nobody, Nobody); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run", "^"+strings.ReplaceAll(t.Name(), "/", "$/^")+"$", "-test.v", "-test.count=1")
	cmd.Dir = home
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + home, envChild + "=1", envForeign + "=" + foreign}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Nobody, Gid: Nobody}}
	out, err := cmd.CombinedOutput()
	t.Logf("as uid %d:\n%s", Nobody, out)
	if err != nil {
		t.Fatalf("the test failed as uid %d: %v", Nobody, err)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("the test did not run as uid %d", Nobody)
	}
	return false
}

// Foreign returns a directory of root's, mode 0755, that the unprivileged
// child does not own and may not change; "" when the tests did not start
// as root (no such directory can be made).
func Foreign() string { return os.Getenv(envForeign) }

// open makes a directory everyone may enter and read (the child runs the
// binary from it), removed after the test.
func open(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "asuser-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(to, 0o755); err != nil {
		t.Fatal(err)
	}
}
