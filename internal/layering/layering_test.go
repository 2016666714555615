// Package layering_test holds the import rules of docs/ARCHITECTURE.md as a
// test: it lists every package of the module with `go list` and fails on an
// import that breaks them.
package layering_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/continuo-dev/continuo"

// Layers, lowest first. A package's non-test code imports packages of its
// own layer or of lower ones: edges → services → store → root, never back.
// Tests (_test.go files) may import anything; the rules below say where that
// is the only place an import may appear.
//
// A package nested in another's folder lives in that package's room (see
// room): whatever its own layer, a package of a lower layer does not import
// it, so a support library kept inside a service's folder (process spawning
// once sat in internal/run/proc, imported by internal/provider, which
// internal/run imports) is an arrow back up, and is moved out to a room of
// its own.
const (
	layerRoot    = iota // the root package: domain types, stdlib only
	layerSupport        // store, and the small libraries both services and edges use
	layerService        // business rules
	layerEdge           // MCP, HTTP, CLI
	layerMain           // the binary and the tools that drive it: cmd, bench, e2e
)

var layerNames = []string{"root", "store/support", "service", "edge", "main"}

// layers places every package of the module (paths relative to the module).
// A new package must be placed here; the test fails until it is.
var layers = map[string]int{
	"": layerRoot,

	"internal/store":                 layerSupport,
	"internal/store/sqlstore":        layerSupport,
	"internal/store/sqlite":          layerSupport,
	"internal/store/postgres":        layerSupport,
	"internal/store/storetest":       layerSupport,
	"internal/store/pgtest":          layerSupport,
	"internal/store/stores":          layerSupport,
	"internal/metrics":               layerSupport,
	"internal/redact":                layerSupport,
	"internal/rpcwire":               layerSupport,
	"internal/workspace":             layerSupport,
	"internal/datadir":               layerSupport,
	"internal/datadir/asuser":        layerSupport,
	"internal/proc":                  layerSupport,
	"internal/provider":              layerSupport,
	"internal/provider/providertest": layerSupport,
	"internal/modelstub":             layerSupport,
	"internal/syncbuf":               layerSupport,

	"internal/auth":          layerService,
	"internal/auth/authtest": layerService,
	"internal/oauth":         layerService,
	"internal/workflow":      layerService,
	"internal/run":           layerService,
	"internal/swarm":         layerService,

	"internal/mcpserver":   layerEdge,
	"internal/web":         layerEdge,
	"internal/web/webtest": layerSupport,
	"internal/cli":         layerEdge,
	"internal/hook":        layerEdge,
	"internal/worker":      layerEdge,

	"cmd/continuo":      layerMain,
	"bench":             layerMain,
	"bench/profserver":  layerMain,
	"internal/e2e":      layerMain,
	"internal/layering": layerMain,
}

// services orders the service layer: a service imports only services of a
// lower rank. auth (identities, tokens, grants) is under every other;
// the authorization server (oauth) stands on auth, never the reverse.
var services = map[string]int{
	"internal/auth":     0,
	"internal/oauth":    1,
	"internal/run":      1,
	"internal/swarm":    1,
	"internal/workflow": 2,
}

const mcpSDK = "github.com/modelcontextprotocol/go-sdk"

// sdkImporters may import the MCP SDK in non-test code: the two edges that
// speak MCP, the benchmark's SDK client, and internal/hook, the MCP client of
// `continuo hook` (the SDK's client, so that protocol version negotiation and
// SSE responses are the SDK's, not a second implementation of ours).
var sdkImporters = []string{"internal/mcpserver", "internal/web", "internal/hook", "bench"}

// knownViolations are imports that break a rule today and are waiting for
// their fix (see each reason). The test fails when one is no longer made,
// so that the exception is removed with the fix.
var knownViolations = map[[2]string]string{}

// drivers are the concrete store drivers; driverImporters may import them in
// non-test code: the CLI that picks one, and the test helpers and tools that
// run every engine.
var (
	drivers         = []string{"internal/store/sqlite", "internal/store/postgres"}
	driverImporters = []string{"internal/cli", "internal/store/stores", "internal/store/pgtest",
		"internal/store/storetest", "bench", "internal/e2e"}
)

// testHelpers are packages for tests only: non-test code imports them only
// from another test helper or from helperImporters, so they never reach the
// binary.
var (
	testHelpers     = []string{"internal/store/stores", "internal/store/pgtest", "internal/store/storetest", "internal/web/webtest", "internal/provider/providertest", "internal/syncbuf", "internal/auth/authtest"}
	helperImporters = []string{"bench", "internal/e2e"}
)

// sqlstore is the shared query set; only the drivers import it, tests
// included.
const sqlstore = "internal/store/sqlstore"

// pkg is the part of `go list -json` output the rules read.
type pkg struct {
	ImportPath   string
	Standard     bool
	Imports      []string
	TestImports  []string
	XTestImports []string
	Error        *struct{ Err string }
	DepsErrors   []*struct{ Err string }
}

// room is the outermost placed package whose folder holds r: internal/run
// for internal/run/x, internal/store for internal/store/sqlite, r itself
// for a package that no placed package holds.
func room(r string) string {
	if r == "" {
		return r
	}
	parts := strings.Split(r, "/")
	for i := 1; i < len(parts); i++ {
		if p := strings.Join(parts[:i], "/"); hasLayer(p) {
			return p
		}
	}
	return r
}

func hasLayer(r string) bool {
	_, ok := layers[r]
	return ok
}

// rel is path relative to the module ("" for the root package), and whether
// path is in the module at all.
func rel(path string) (string, bool) {
	if path == module {
		return "", true
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return r, ok
}

func show(r string) string {
	if r == "" {
		return "the root package"
	}
	return r
}

// load lists the module's packages and, with -deps, everything they import,
// so that Standard is known for every import.
func load(t *testing.T) (own []pkg, std map[string]bool) {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-deps", "-json", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	std = map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		std[p.ImportPath] = p.Standard
		if _, ok := rel(p.ImportPath); ok {
			own = append(own, p)
		}
	}
	if len(own) == 0 {
		t.Fatal("go list found no package of the module")
	}
	return own, std
}

// check returns every rule the module's imports break, one line each.
func check(own []pkg, std map[string]bool) []string {
	var bad []string
	seen := map[[2]string]bool{}
	report := func(from, imp, rule string) {
		key := [2]string{from, imp}
		if _, ok := knownViolations[key]; ok {
			seen[key] = true
			return
		}
		bad = append(bad, fmt.Sprintf("%s imports %s: %s", show(from), imp, rule))
	}
	for _, p := range own {
		from, _ := rel(p.ImportPath)
		if p.Error != nil {
			bad = append(bad, fmt.Sprintf("%s: %s", show(from), p.Error.Err))
		}
		for _, e := range p.DepsErrors {
			bad = append(bad, fmt.Sprintf("%s: %s", show(from), e.Err))
		}
		layer, placed := layers[from]
		if !placed {
			bad = append(bad, fmt.Sprintf("%s is in no layer: place it in layers (internal/layering)", show(from)))
			continue
		}
		for _, imp := range p.Imports {
			to, inModule := rel(imp)
			switch {
			case from == "" && !std[imp]:
				report(from, imp, "the root package imports only the standard library")
			case imp == mcpSDK || strings.HasPrefix(imp, mcpSDK+"/"):
				if !slices.Contains(sdkImporters, from) {
					report(from, imp, "only "+strings.Join(sdkImporters, ", ")+" import the MCP SDK")
				}
			case !inModule:
			case layers[to] > layer:
				report(from, imp, fmt.Sprintf("a %s package imports no %s package (edges → services → store → root)",
					layerNames[layer], layerNames[layers[to]]))
			case layer == layerService && layers[to] == layerService && room(to) != room(from) && services[room(to)] >= services[room(from)]:
				report(from, imp, fmt.Sprintf("a service imports only services of a lower rank (services: %s is %d, %s is %d)",
					room(from), services[room(from)], room(to), services[room(to)]))
			case room(to) != room(from) && layers[room(to)] > layer:
				report(from, imp, fmt.Sprintf("a %s package imports nothing inside %s, a %s room: move %s out to a room of its own",
					layerNames[layer], room(to), layerNames[layers[room(to)]], to))
			case slices.Contains(drivers, to) && !slices.Contains(driverImporters, from):
				report(from, imp, "only "+strings.Join(driverImporters, ", ")+" and tests import a concrete driver")
			case slices.Contains(testHelpers, to) && !slices.Contains(testHelpers, from) && !slices.Contains(helperImporters, from):
				report(from, imp, "test helpers are imported only by tests, other test helpers, "+strings.Join(helperImporters, ", "))
			}
		}
		for _, imp := range slices.Concat(p.Imports, p.TestImports, p.XTestImports) {
			if to, _ := rel(imp); to == sqlstore && !slices.Contains(drivers, from) && from != sqlstore {
				report(from, imp, "only the drivers ("+strings.Join(drivers, ", ")+") import the shared query set")
			}
		}
	}
	for key, why := range knownViolations {
		if !seen[key] {
			bad = append(bad, fmt.Sprintf("%s no longer imports %s: remove it from knownViolations (%s)", key[0], key[1], why))
		}
	}
	slices.Sort(bad)
	return slices.Compact(bad)
}

// readTree lists every directory of the module. go test caches a result
// only while the files a test opened are unchanged, and it cannot see into
// the `go list` this test runs; a directory it opened counts as changed when
// any entry's name, size or modification time does.
func readTree(t *testing.T) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	root := strings.TrimSpace(string(out))
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestLayering(t *testing.T) {
	readTree(t)
	own, std := load(t)
	for _, b := range check(own, std) {
		t.Error(b)
	}
	// The table names packages that exist: a renamed package must not
	// leave a stale entry that places nothing.
	listed := map[string]bool{}
	for _, p := range own {
		r, _ := rel(p.ImportPath)
		listed[r] = true
	}
	for r, l := range layers {
		// A package nested in a service's folder (authtest) ranks as its
		// room: the rank rule compares rooms.
		if _, ranked := services[r]; l == layerService && r == room(r) && !ranked {
			t.Errorf("%s is a service without a rank: place it in services (internal/layering)", r)
		}
		if !listed[r] {
			t.Errorf("layers places %s, which is not a package of the module", show(r))
		}
	}
}

// TestRooms holds the arrow that ran back up before internal/proc was its own
// room: a support package importing a package inside a service's folder is
// refused, and the same import of the room of its own is not.
func TestRooms(t *testing.T) {
	std := map[string]bool{}
	provider := func(imp string) []pkg {
		return []pkg{{ImportPath: module + "/internal/provider", Imports: []string{module + "/" + imp}}}
	}
	bad := check(provider("internal/run/proc"), std)
	want := "internal/provider imports " + module + "/internal/run/proc: a store/support package imports nothing inside internal/run, a service room: move internal/run/proc out to a room of its own"
	if len(bad) != 1 || bad[0] != want {
		t.Errorf("provider → internal/run/proc: %q, want [%q]", bad, want)
	}
	if bad := check(provider("internal/proc"), std); len(bad) != 0 {
		t.Errorf("provider → internal/proc: %q, want none", bad)
	}
	// auth stands under the authorization server.
	authImports := []pkg{{ImportPath: module + "/internal/auth", Imports: []string{module + "/internal/oauth"}}}
	if bad := check(authImports, std); len(bad) != 1 || !strings.Contains(bad[0], "a service imports only services of a lower rank") {
		t.Errorf("auth → oauth: %q, want one refusal", bad)
	}
	for r, want := range map[string]string{
		"": "", "internal/run": "internal/run", "internal/run/proc": "internal/run",
		"internal/store/sqlite": "internal/store", "bench/profserver": "bench", "cmd/continuo": "cmd/continuo",
	} {
		if got := room(r); got != want {
			t.Errorf("room(%q) = %q, want %q", r, got, want)
		}
	}
}
