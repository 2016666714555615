package workspace

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The 10k checkout: 100 directories of 100 small files, committed, then 20
// tracked files modified and 20 untracked files added (10 in a new
// directory, 10 among the tracked ones). It is built once per process and
// shared by the benchmarks below, so they measure the same tree.
const (
	benchDirs      = 100
	benchFiles     = 100
	benchModified  = 20
	benchUntracked = 20
)

var checkout10k struct {
	once sync.Once
	dir  string
	err  error
}

func benchCheckout(b *testing.B) string {
	b.Helper()
	checkout10k.once.Do(func() { checkout10k.dir, checkout10k.err = makeCheckout10k() })
	if checkout10k.err != nil {
		b.Fatal(checkout10k.err)
	}
	return checkout10k.dir
}

func makeCheckout10k() (string, error) {
	// Below TestMain's temporary directory, which it removes at the end.
	dir, err := os.MkdirTemp("", "source-bench-")
	if err != nil {
		return "", err
	}
	run := func(args ...string) error {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	put := func(name, content string) error {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, []byte(content), 0o644)
	}
	if err := run("init", "-q"); err != nil {
		return "", err
	}
	for d := range benchDirs {
		for f := range benchFiles {
			name := fmt.Sprintf("pkg%03d/file%03d.go", d, f)
			if err := put(name, fmt.Sprintf("package pkg%03d\n\n// File %d of directory %d.\nvar v%d = %d\n", d, f, d, f, d*f)); err != nil {
				return "", err
			}
		}
	}
	// Files older than the index by more than git's timestamp granularity
	// are not "racily clean": git status trusts their stat data instead of
	// reading them, as it does in a checkout that has sat for a moment.
	time.Sleep(1100 * time.Millisecond)
	if err := run("add", "-A"); err != nil {
		return "", err
	}
	if err := run("commit", "-q", "-m", "10k files"); err != nil {
		return "", err
	}
	for i := range benchModified {
		d, f := i*5, i*3
		if err := put(fmt.Sprintf("pkg%03d/file%03d.go", d, f), fmt.Sprintf("package pkg%03d\n\n// Modified.\nvar v%d = %d\n", d, f, -i)); err != nil {
			return "", err
		}
	}
	for i := range benchUntracked {
		name := fmt.Sprintf("newpkg/new%02d.go", i)
		if i%2 == 1 {
			name = fmt.Sprintf("pkg%03d/untracked%02d.go", i*4, i)
		}
		if err := put(name, fmt.Sprintf("package newpkg\n\nvar n%d = %d\n", i, i)); err != nil {
			return "", err
		}
	}
	// The checkout is as described: 40 changed paths.
	var out bytes.Buffer
	cmd := exec.Command("git", "-C", dir, "status", "--porcelain", "--untracked-files=all")
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return "", err
	}
	if n := strings.Count(out.String(), "\n"); n != benchModified+benchUntracked {
		return "", fmt.Errorf("bench checkout: git status lists %d paths, want %d:\n%s", n, benchModified+benchUntracked, out.String())
	}
	return dir, nil
}

// benchGitStatus is the baseline: `git status --porcelain`, with the
// environment every git call of the package has.
func benchGitStatus(b *testing.B, dir string) {
	var out bytes.Buffer
	cmd := exec.Command("git", "-C", dir, "status", "--porcelain")
	cmd.Env = gitEnv(os.Environ())
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		b.Fatal(err)
	}
	if out.Len() == 0 {
		b.Fatal("git status printed nothing for a checkout with changes")
	}
}

func benchSourceOf(b *testing.B, dir string) {
	if _, err := SourceOf(context.Background(), dir); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkSource10k(b *testing.B) {
	dir := benchCheckout(b)
	for b.Loop() {
		benchSourceOf(b, dir)
	}
}

func BenchmarkGitStatus10k(b *testing.B) {
	dir := benchCheckout(b)
	for b.Loop() {
		benchGitStatus(b, dir)
	}
}

// BenchmarkSourceVsGitStatus10k runs both, interleaved and in alternating
// order so that a shared machine's load falls on both alike, and reports
// SourceOf's time as a multiple of git status's (source/status; the target
// is ≤ 2) besides each one's time per call. Its ns/op is the pair's.
func BenchmarkSourceVsGitStatus10k(b *testing.B) {
	dir := benchCheckout(b)
	var src, st time.Duration
	i := 0
	for b.Loop() {
		for k := range 2 {
			start := time.Now()
			if (i+k)%2 == 0 {
				benchSourceOf(b, dir)
				src += time.Since(start)
			} else {
				benchGitStatus(b, dir)
				st += time.Since(start)
			}
		}
		i++
	}
	b.ReportMetric(float64(src)/float64(st), "source/status")
	b.ReportMetric(float64(src.Nanoseconds())/float64(i), "source-ns/op")
	b.ReportMetric(float64(st.Nanoseconds())/float64(i), "status-ns/op")
}
