package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// skipOrFail skips a test whose prerequisites are missing, except in CI,
// which must never skip silently.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format+" (CI=true: not skipping)", args...)
	}
	t.Skipf(format, args...)
}

var summaryLine = regexp.MustCompile(`^(\d+) passed, 0 failed$`)

// TestTypeScriptClients runs interop/check.mjs: the official TypeScript MCP
// clients (the v1 SDK at 2025-11-25 and the v2 client, pinned to the
// stateless 2026-07-28 protocol and in legacy mode) against a real
// `continuo serve` process over streamable HTTP, and `continuo stdio`.
func TestTypeScriptClients(t *testing.T) {
	node := nodeScripts(t)
	data := filepath.Join(t.TempDir(), "data")
	srv := start(t, data, t.TempDir())
	cli(t, data, "group", "create", "team")
	cli(t, data, "principal", "create", "ts", "--group", "team")
	cli(t, data, "project", "add", "demo", "--grant", "team:write")
	tok := token(t, data, "ts", "sessions:read,sessions:write")
	node.run(t, "check.mjs", 10, "--url", srv.URL, "--token", tok, "--bin", binary,
		"--data-dir", data, "--principal", "ts", "--project", "demo")
}

// nodeRunner runs the Node scripts of interop/.
type nodeRunner struct{ node, dir string }

// nodeScripts finds node and interop/node_modules, or skips (fails under
// CI=true).
func nodeScripts(t *testing.T) nodeRunner {
	t.Helper()
	interop, err := filepath.Abs(filepath.Join("..", "..", "interop"))
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(interop, "node_modules")); err != nil || !fi.IsDir() {
		skipOrFail(t, "%s/node_modules is missing: run `npm ci` in interop", interop)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		skipOrFail(t, "node is not on PATH")
	}
	return nodeRunner{node, interop}
}

// run runs a script that prints one line per check and closes with
// "N passed, M failed"; it must pass all, and at least atLeast, within
// 120 s.
func (n nodeRunner) run(t *testing.T, script string, atLeast int, args ...string) {
	t.Helper()
	n.runWithin(t, 120*time.Second, script, atLeast, args...)
}

// runWithin is run with a limit of its own, for a script that is given a
// budget of its own to spend within it.
func (n nodeRunner) runWithin(t *testing.T, limit time.Duration, script string, atLeast int, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, n.node, append([]string{script}, args...)...)
	cmd.Dir = n.dir
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout // one stream, in order
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	passed := -1
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		t.Log(line)
		if m := summaryLine.FindStringSubmatch(line); m != nil {
			passed, _ = strconv.Atoi(m[1])
		}
	}
	err = cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish within %s: %v", script, limit, err)
	}
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	if passed < atLeast {
		t.Fatalf("%s printed no `N passed, 0 failed` line with N ≥ %d (got N=%d)", script, atLeast, passed)
	}
}
