package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// conformanceSets are the requirement sets of the conformance suite we run:
// every server scenario each protocol family requires, plus those the suite
// runs without scoring (pending, extensions), each at its own wire version.
var conformanceSets = []string{"2025-11-25", "2026-07-28"}

// TestConformance runs the MCP conformance suite
// (@modelcontextprotocol/conformance, installed in interop/conformance by
// .ci/run) against a real `continuo serve`, at its default endpoint and at
// the endpoint of every tool (/mcp/x/all). Its CLI cannot send headers, so
// interop/conformance/proxy.mjs adds the bearer token. A failing check must
// be listed in interop/conformance/expected-failures.txt with its reason;
// a listed check that passes is reported, to be taken off the list.
func TestConformance(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "interop", "conformance"))
	if err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(dir, "node_modules", ".bin", "node") // Node 22, from the npm package node@22
	suite := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, p := range []string{node, suite} {
		if _, err := os.Stat(p); err != nil {
			skipOrFail(t, "%s is missing: run `npm ci` in interop/conformance", p)
		}
	}
	expected, err := readExpectedFailures(filepath.Join(dir, "expected-failures.txt"))
	if err != nil {
		t.Fatal(err)
	}

	data := filepath.Join(t.TempDir(), "data")
	srv := start(t, data, t.TempDir())
	base := proxy(t, node, dir, srv.Base, srv.Admin)

	var unexpected, newlyPassing []string
	seen := map[*expectedFailure]bool{}
	// The default endpoint (continuity) and every tool (all): the suite
	// judges the protocol, which both serve alike.
	for _, url := range []string{base + "/mcp", at(base+"/mcp", "all")} {
		for _, set := range conformanceSets {
			out := filepath.Join(t.TempDir(), set)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			cmd := exec.CommandContext(ctx, node, suite, "server", "--url", url, "--requirements", set, "-o", out)
			cmd.Dir = dir
			cmd.WaitDelay = 5 * time.Second
			log, err := cmd.CombinedOutput() // exit status 1 whenever a check fails: judged below
			timedOut := ctx.Err() != nil
			cancel()
			if timedOut {
				t.Fatalf("conformance %s at %s did not finish within 5 minutes: %v\n%s", set, url, err, log)
			}
			results, err := readConformanceResults(out)
			if err != nil || len(results) == 0 {
				t.Fatalf("conformance %s at %s: no results (%v); exit: %v\n%s", set, url, err, cmd.ProcessState, log)
			}
			failed := map[string]bool{} // scenario → some check failed
			for _, r := range results {
				e := expected.match(set, r.scenario, r.check)
				if e != nil {
					seen[e] = true
				}
				switch {
				case r.status == "FAILURE" && e == nil:
					unexpected = append(unexpected, fmt.Sprintf("%s %s %s %s: %s", url, set, r.scenario, r.check, r.message))
				case r.status == "FAILURE":
					failed[r.scenario] = true
				case r.status == "SUCCESS" && e != nil && e.check != "*":
					newlyPassing = append(newlyPassing, fmt.Sprintf("%s %s %s (at %s)", set, r.scenario, r.check, url))
				case r.status == "WARNING":
					t.Logf("warning: %s %s %s %s: %s", url, set, r.scenario, r.check, r.message)
				}
			}
			for _, e := range expected {
				if e.check == "*" && e.matchesSet(set) && seen[e] && !failed[e.scenario] {
					newlyPassing = append(newlyPassing, fmt.Sprintf("%s %s * (every check, at %s)", set, e.scenario, url))
				}
			}
			t.Logf("conformance %s at %s: %d checks in %d scenarios", set, url, len(results), len(scenarios(results)))
		}
	}
	for _, e := range expected {
		if !seen[e] {
			t.Logf("expected-failures.txt line %d matches no check the suite ran: %s %s %s", e.line, e.set, e.scenario, e.check)
		}
	}
	for _, p := range newlyPassing {
		t.Logf("newly passing (take it off expected-failures.txt): %s", p)
	}
	if len(unexpected) > 0 {
		t.Errorf("%d conformance checks failed that are not in expected-failures.txt:\n%s", len(unexpected), strings.Join(unexpected, "\n"))
	}
}

// proxy starts interop/conformance/proxy.mjs in front of base, adding the
// bearer token (passed in its environment), and returns its URL.
func proxy(t *testing.T, node, dir, base, token string) string {
	t.Helper()
	cmd := exec.Command(node, "proxy.mjs", "--target", base)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CONTINUO_TOKEN="+token)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			ready <- sc.Text()
		}
		close(ready)
		for sc.Scan() {
		}
	}()
	select {
	case l := <-ready:
		port, ok := strings.CutPrefix(l, "listening ")
		if !ok {
			t.Fatalf("proxy.mjs: %q", l)
		}
		return "http://127.0.0.1:" + port
	case <-time.After(30 * time.Second):
		t.Fatal("proxy.mjs did not start within 30 s")
	}
	return ""
}

type expectedFailure struct {
	line                 int
	set, scenario, check string
	reason               string
}

type expectedFailures []*expectedFailure

func (e *expectedFailure) matchesSet(set string) bool { return e.set == "*" || e.set == set }

func (es expectedFailures) match(set, scenario, check string) *expectedFailure {
	for _, e := range es {
		if e.matchesSet(set) && e.scenario == scenario && (e.check == "*" || e.check == check) {
			return e
		}
	}
	return nil
}

func readExpectedFailures(path string) (expectedFailures, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var es expectedFailures
	for i, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Fields(l)
		if len(f) < 4 {
			return nil, fmt.Errorf("%s:%d: want REQUIREMENTS SCENARIO CHECK REASON", path, i+1)
		}
		es = append(es, &expectedFailure{line: i + 1, set: f[0], scenario: f[1], check: f[2], reason: strings.Join(f[3:], " ")})
	}
	return es, nil
}

type conformanceResult struct {
	scenario, check, status, message string
}

// resultDir is the suite's directory name for a scenario's results:
// server-SCENARIO-TIMESTAMP.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$`)

// readConformanceResults reads the checks.json of every scenario in dir.
func readConformanceResults(dir string) ([]conformanceResult, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []conformanceResult
	for _, e := range entries {
		m := resultDir.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			return nil, err
		}
		var checks []struct {
			ID           string `json:"id"`
			Status       string `json:"status"`
			ErrorMessage string `json:"errorMessage"`
		}
		if err := json.Unmarshal(b, &checks); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		for _, c := range checks {
			out = append(out, conformanceResult{scenario: m[1], check: c.ID, status: c.Status, message: c.ErrorMessage})
		}
	}
	return out, nil
}

func scenarios(rs []conformanceResult) []string {
	set := map[string]bool{}
	for _, r := range rs {
		set[r.scenario] = true
	}
	var out []string
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
