package mcpserver_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
)

var update = flag.Bool("update", false, "rewrite testdata/tools_list.json from the server")

// maxToolBytes is the contract's bound on the average serialized size of a
// tool in tools/list, schemas included (CONTRACT.md §4): every byte sits in
// a model's context.
const maxToolBytes = 1536

// toolsList returns tools/list as one caller sees it, one tool per line.
func toolsList(t *testing.T, f *fixture, scopes ...continuo.Scope) []byte {
	t.Helper()
	res, err := f.connect(f.token("lister", scopes...)).cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, tl := range res.Tools {
		line, err := json.Marshal(tl)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// TestToolsListGolden: tools/list is checked in (testdata/tools_list.json,
// one tool per line; `go test -run TestToolsListGolden -update` rewrites
// it), the same for every caller whatever its scopes, the same from a
// second server, and small: at most maxToolBytes per tool on average.
func TestToolsListGolden(t *testing.T) {
	f := newFixture(t)
	got := toolsList(t, f, continuo.ScopeSessionsRead)
	golden := filepath.Join("testdata", "tools_list.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("tools/list differs from %s (run with -update if the change is meant):\n%s", golden, got)
	}
	if other := toolsList(t, f, continuo.ScopeAdmin); !bytes.Equal(other, got) {
		t.Error("tools/list depends on the caller's scopes")
	}
	if again := toolsList(t, newFixture(t), continuo.ScopeSwarmWork); !bytes.Equal(again, got) {
		t.Error("tools/list differs between two servers")
	}
	lines := bytes.Count(got, []byte("\n"))
	avg := (len(got) - lines) / lines
	t.Logf("tools/list: %d tools, %d bytes, %d bytes per tool on average (bound %d)", lines, len(got)-lines, avg, maxToolBytes)
	if avg > maxToolBytes {
		t.Errorf("tools/list averages %d bytes per tool, over the bound of %d", avg, maxToolBytes)
	}
}

// TestSchemasAreObjects: every schema in tools/list — each property of
// every input and output schema, at any depth — is a JSON object. JSON
// Schema 2020-12 also allows true and false, and an empty schema encodes
// as true, but the MCP wire schema (2025-11-25) and the TypeScript SDK
// refuse them.
func TestSchemasAreObjects(t *testing.T) {
	f := newFixture(t)
	res, err := f.connect(f.token("lister", continuo.ScopeSessionsRead)).cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var walk func(tool, path string, v any)
	walk = func(tool, path string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			t.Errorf("%s: %s is %v, not an object", tool, path, v)
			return
		}
		if props, ok := m["properties"].(map[string]any); ok {
			for name, p := range props {
				walk(tool, path+".properties."+name, p)
			}
		}
		if items, ok := m["items"]; ok {
			walk(tool, path+".items", items)
		}
	}
	for _, tl := range res.Tools {
		for name, schema := range map[string]any{"inputSchema": tl.InputSchema, "outputSchema": tl.OutputSchema} {
			b, err := json.Marshal(schema)
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatal(err)
			}
			walk(tl.Name, name, v)
		}
	}
}

// closedSetRE finds a closed set written out in prose: two or more
// lower-case names joined by "|" ("none|unknown", "task|idle|closed").
var closedSetRE = regexp.MustCompile(`\b[a-z][a-z0-9_]*(?:\|[a-z][a-z0-9_]*)+\b`)

// proseSets returns what in one tool's description and schemas is a
// closed set written only in prose (CONTRACT.md §1: every closed set is a
// JSON Schema enum): a set "a|b|c" in the tool's description or in a
// description anywhere in its input or output schema whose values are not
// all in one enum of those schemas, and a string property whose
// description says "one of" without an enum of its own.
func proseSets(desc string, schemas ...any) []string {
	var enums [][]string
	type text struct{ path, desc string }
	texts := []text{{"description", desc}}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			var enum []string
			if e, ok := x["enum"].([]any); ok {
				for _, v := range e {
					s, _ := v.(string)
					enum = append(enum, s)
				}
				enums = append(enums, enum)
			}
			if d, ok := x["description"].(string); ok {
				texts = append(texts, text{path, d})
				if x["type"] == "string" && enum == nil && strings.Contains(d, "one of") {
					texts = append(texts, text{path, "one of, without an enum"})
				}
			}
			for k, e := range x {
				walk(path+"."+k, e)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		}
	}
	for i, s := range schemas {
		walk(fmt.Sprintf("schema%d", i), s)
	}
	var out []string
	for _, t := range texts {
		if t.desc == "one of, without an enum" {
			out = append(out, t.path+": a string property says \"one of\" without an enum")
			continue
		}
		for _, set := range closedSetRE.FindAllString(t.desc, -1) {
			values := strings.Split(set, "|")
			if !slices.ContainsFunc(enums, func(e []string) bool {
				return !slices.ContainsFunc(values, func(v string) bool { return !slices.Contains(e, v) })
			}) {
				out = append(out, fmt.Sprintf("%s: %q is a closed set in prose, in no enum", t.path, set))
			}
		}
	}
	return out
}

// TestClosedSetsAreEnums walks tools/list: no closed set of values is
// written only in prose, in any tool's description or schema; each is an
// enum (CONTRACT.md §1). The checker itself is held to a tool that breaks
// the rule both ways.
func TestClosedSetsAreEnums(t *testing.T) {
	bad := proseSets("Worker: state: task|idle|closed.",
		map[string]any{"type": "object", "properties": map[string]any{
			"disposition": map[string]any{"type": "string", "description": "no_effect|applied|unknown: what it did"},
			"code":        map[string]any{"type": "string", "description": "one of the codes"}}},
		map[string]any{"type": "object", "properties": map[string]any{"state": map[string]any{"enum": []any{"task", "idle"}}}})
	if len(bad) != 3 {
		t.Fatalf("the checker found %d prose sets in a tool with three: %v", len(bad), bad)
	}
	f := newFixture(t)
	res, err := f.connect(f.token("lister", continuo.ScopeSessionsRead)).cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		b, err := json.Marshal(map[string]any{"in": tl.InputSchema, "out": tl.OutputSchema})
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		for _, p := range proseSets(tl.Description, v["in"], v["out"]) {
			t.Errorf("%s: %s", tl.Name, p)
		}
	}
}
