package mcpserver_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/mcpserver"
)

const (
	scopeTableStart = "<!-- scope table: made by mcpserver.scopeTable; TestREADMEScopeTable keeps it equal -->\n"
	scopeTableEnd   = "<!-- end of the scope table -->"
)

// README.md's table of tool → scopes is the code's (mcpserver.ScopeTable),
// byte for byte: change one, change the other.
func TestREADMEScopeTable(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i, j := strings.Index(readme, scopeTableStart), strings.Index(readme, scopeTableEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md has no scope table between %q and %q", scopeTableStart, scopeTableEnd)
	}
	if got, want := readme[i+len(scopeTableStart):j], mcpserver.ScopeTable(); got != want {
		t.Errorf("README.md's scope table differs from the code's; put this between the markers:\n%s", want)
	}
}

// Every scope the table names is what the tool refuses a caller without,
// whatever the arguments: forbidden, naming the scope.
func TestToolScopesEnforced(t *testing.T) {
	f := newFixture(t)
	lines := strings.Split(mcpserver.ScopeTable(), "\n")
	checked := 0
	for _, line := range lines[2:] {
		cells := strings.Split(line, " | ")
		if len(cells) < 3 || cells[1] == "—" {
			continue
		}
		tool := strings.Trim(cells[0], "|` ")
		for _, need := range strings.Split(cells[1], " + ") {
			scope := continuo.Scope(strings.Trim(need, "`"))
			var others []continuo.Scope
			for _, sc := range continuo.AllScopes() {
				if sc != scope && sc != continuo.ScopeAdmin {
					others = append(others, sc)
				}
			}
			if !slices.Contains(continuo.AllScopes(), scope) {
				t.Fatalf("%s: unknown scope %q", tool, scope)
			}
			r := f.connect(f.token("nobody-"+strings.ReplaceAll(string(scope), ":", "-"), others...)).call(tool, map[string]any{})
			if r.code() != "forbidden" || r.details()["scope"] != string(scope) {
				t.Errorf("%s without %s: %v", tool, scope, r.err())
			}
			checked++
		}
	}
	if checked < 40 {
		t.Fatalf("checked %d (tool, scope) pairs", checked)
	}
}
