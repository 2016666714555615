package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestFingerprintHugeFile (issue 23): a real server whose project holds a
// sparse 8 GiB untracked file answers run_validation with the file
// fingerprinted by size and modification time (the run's source says so:
// it was not read), and tools/list through another real client keeps
// answering while run_validation calls fingerprint the checkout one after
// another. The times are logged, not asserted (docs/PERFORMANCE.md has
// them).
func TestFingerprintHugeFile(t *testing.T) {
	repo := gitRepo(t)
	huge := filepath.Join(repo, "dump", "core.bin")
	if err := os.MkdirAll(filepath.Dir(huge), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(huge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 8<<30); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "continuo.toml")
	if err := os.WriteFile(cfg, []byte("[projects.demo.checks.test]\ncommand = [\"true\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := start(t, dataDir(t, "sqlite"), repo, "--config", cfg)
	cs := connect(t, srv.URL, srv.Admin)
	lister := connect(t, srv.URL, srv.Admin)
	sid := must(t, cs, "work_on_project", map[string]any{"project": "demo", "instruction": "check the dump"})["session_id"].(string)

	r := runValidation(t, cs, sid, "test", 30)
	src, _ := r["source"].(map[string]any)
	bs, _ := src["by_stat"].(map[string]any)
	if paths, _ := bs["paths"].([]any); bs["total"] != float64(1) || len(paths) != 1 || paths[0] != "dump/core.bin" {
		t.Fatalf("run.source = %v, want by_stat naming dump/core.bin", src)
	}

	list := func() time.Duration {
		t.Helper()
		start := time.Now()
		if res, err := lister.ListTools(context.Background(), nil); err != nil || len(res.Tools) == 0 {
			t.Fatalf("tools/list: %v", err)
		}
		return time.Since(start)
	}
	var idle []time.Duration
	for range 20 {
		idle = append(idle, list())
	}

	const calls = 10
	var mu sync.Mutex
	var during []time.Duration
	stop := make(chan struct{})
	listed := make(chan struct{})
	go func() {
		defer close(listed)
		for {
			select {
			case <-stop:
				return
			default:
			}
			d := list()
			mu.Lock()
			during = append(during, d)
			mu.Unlock()
		}
	}()
	var call []time.Duration
	for range calls {
		start := time.Now()
		must(t, cs, "run_validation", map[string]any{"session_id": sid, "check": "test"})
		call = append(call, time.Since(start))
	}
	close(stop)
	<-listed
	t.Logf("run_validation with a sparse 8 GiB untracked file, %d calls: median %v, max %v", calls, median(call), slices.Max(call))
	t.Logf("tools/list, idle: median %v, max %v; during the calls (%d lists): median %v, max %v",
		median(idle), slices.Max(idle), len(during), median(during), slices.Max(during))
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
