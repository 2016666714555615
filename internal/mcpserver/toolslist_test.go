package mcpserver_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
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
