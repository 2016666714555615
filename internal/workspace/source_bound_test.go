package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The bounds of SourceOf (issue 23): what is too large to hash within a
// call is taken by size and modification time and listed, and the call
// has a budget.

// sparse makes a file of size bytes that occupies (almost) no disk.
func sparse(t *testing.T, dir, name string, size int64) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, size); err != nil {
		t.Fatal(err)
	}
}

// withLimits runs the test with other bounds.
func withLimits(t *testing.T, l sourceLimits) {
	old := limits
	limits = l
	t.Cleanup(func() { limits = old })
}

// TestSourceHugeUntrackedFile: a sparse 8 GiB untracked file is taken by
// its size and modification time, and the Source says so; the same
// checkout gives the same Source, touching the file or changing its size
// changes it, and the other files are still hashed by content.
func TestSourceHugeUntrackedFile(t *testing.T) {
	dir := newRepo(t)
	commit(t, dir, "a.txt", "a")
	sparse(t, dir, "dump/huge.bin", 8<<30)
	write(t, dir, "notes.txt", "small, untracked")

	s, err := SourceOf(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.ByStatTotal != 1 || !slices.Equal(s.ByStat, []string{"dump/huge.bin"}) {
		t.Fatalf("ByStat %v (%d), want the huge file alone", s.ByStat, s.ByStatTotal)
	}
	if again, err := SourceOf(context.Background(), dir); err != nil || again.Tree != s.Tree {
		t.Fatalf("an unchanged checkout: %v, %v then %v", err, s.Tree, again.Tree)
	}
	write(t, dir, "notes.txt", "small, changed")
	changed, err := SourceOf(context.Background(), dir)
	if err != nil || changed.Tree == s.Tree {
		t.Fatalf("a small file's content is no longer hashed: %v", err)
	}
	touch(t, dir, "dump/huge.bin", time.Now().Add(time.Hour))
	if touched, err := SourceOf(context.Background(), dir); err != nil || touched.Tree == changed.Tree {
		t.Fatalf("touching the huge file changed nothing: %v", err)
	}
	before, _ := SourceOf(context.Background(), dir)
	if err := os.Truncate(filepath.Join(dir, "dump/huge.bin"), 8<<30+1); err != nil {
		t.Fatal(err)
	}
	touch(t, dir, "dump/huge.bin", time.Now().Add(time.Hour)) // the same time as before: the size alone differs
	if grown, err := SourceOf(context.Background(), dir); err != nil || grown.Tree == before.Tree {
		t.Fatalf("growing the huge file changed nothing: %v", err)
	}
}

// TestSourceByteBudget: once a call has hashed its budget of bytes, the
// files after (in git's order) are taken by stat, as is any file over the
// per-file limit; which ones is the same on every call on the same
// checkout, and the list is bounded while the count is not.
func TestSourceByteBudget(t *testing.T) {
	withLimits(t, sourceLimits{maxFile: 1000, maxBytes: 2500, budget: time.Minute})
	dir := newRepo(t)
	commit(t, dir, "base.txt", "x")
	for _, n := range []string{"a", "b", "c", "d"} {
		write(t, dir, n+".txt", strings.Repeat(n, 1000))
	}
	write(t, dir, "e.txt", strings.Repeat("e", 1001))
	write(t, dir, "f.txt", "ff")
	s, err := SourceOf(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	// a and b take 2000 of 2500 bytes; c (1000) is over what is left; d
	// too; e is over the per-file limit; f (2 bytes) still fits.
	if want := []string{"c.txt", "d.txt", "e.txt"}; !slices.Equal(s.ByStat, want) || s.ByStatTotal != 3 {
		t.Fatalf("ByStat %v (%d), want %v", s.ByStat, s.ByStatTotal, want)
	}
	for range 3 {
		if again, err := SourceOf(context.Background(), dir); err != nil || again.Tree != s.Tree || !slices.Equal(again.ByStat, s.ByStat) {
			t.Fatalf("the same checkout: %+v, %v; want %+v", again, err, s)
		}
	}

	withLimits(t, sourceLimits{maxFile: 10, maxBytes: 1 << 20, budget: time.Minute})
	for i := range MaxByStat + 5 {
		write(t, dir, fmt.Sprintf("many/%02d.txt", i), strings.Repeat("m", 11))
	}
	s, err = SourceOf(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := MaxByStat + 5 + 5; len(s.ByStat) != MaxByStat || s.ByStatTotal != want { // and a.txt to e.txt (f.txt has 2 bytes)
		t.Fatalf("ByStat %d listed of %d, want %d of %d", len(s.ByStat), s.ByStatTotal, MaxByStat, want)
	}
}

// TestSourceNestedByStat: a large file in a repository inside the
// checkout is listed with its path from the checkout's top.
func TestSourceNestedByStat(t *testing.T) {
	dir := newRepo(t)
	commit(t, dir, "a.txt", "a")
	inner := filepath.Join(dir, "vendor", "lib")
	if err := os.MkdirAll(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, inner, "init", "-q")
	commit(t, inner, "x.go", "package x")
	sparse(t, inner, "big.dat", 1<<30)
	s, err := SourceOf(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.ByStat, []string{"vendor/lib/big.dat"}) || s.ByStatTotal != 1 {
		t.Fatalf("ByStat %v (%d)", s.ByStat, s.ByStatTotal)
	}
}

// TestSourceBudget: a call that does not end within its budget fails with
// a *BudgetError (wrapping the deadline); a call its caller cancelled
// fails with the caller's error, not as over budget.
func TestSourceBudget(t *testing.T) {
	dir := newRepo(t)
	commit(t, dir, "a.txt", "a")
	withLimits(t, sourceLimits{maxFile: 1 << 20, maxBytes: 1 << 20, budget: time.Nanosecond})
	_, err := SourceOf(context.Background(), dir)
	var be *BudgetError
	if !errors.As(err, &be) || be.Budget != time.Nanosecond || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("over budget: %v, want a BudgetError", err)
	}
	withLimits(t, sourceLimits{maxFile: 1 << 20, maxBytes: 1 << 20, budget: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := SourceOf(ctx, dir); err == nil || errors.As(err, &be) {
		t.Fatalf("cancelled by the caller: %v, want no BudgetError", err)
	}
}
