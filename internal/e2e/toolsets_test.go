package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// goldenList is the checked-in tools/list of a toolset
// (internal/mcpserver/testdata, TestToolsListGolden).
func goldenList(t *testing.T, toolset string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "mcpserver", "testdata", "tools_list_"+toolset+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// listed is tools/list as cs sees it, one tool per line.
func listed(t *testing.T, cs *mcp.ClientSession) []byte {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
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

// toolsetsHeader adds a bearer token and the toolsets header to every
// request.
type toolsetsHeader struct{ token, toolsets string }

func (h toolsetsHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+h.token)
	r.Header.Set(mcpserver.ToolsetsHeader, h.toolsets)
	return http.DefaultTransport.RoundTrip(r)
}

// TestToolsets (CONTRACT.md §4) through the real binary and a real MCP
// client: over HTTP the default endpoint lists continuity,
// /mcp/x/{toolset} one toolset and the X-MCP-Toolsets header adds more;
// over stdio --toolsets chooses (all: every tool). Each list is the
// checked-in one, byte for byte, with the toolsets' own instructions; a
// tool outside the endpoint's toolsets is unknown.
func TestToolsets(t *testing.T) {
	repo := gitRepo(t)
	data := dataDir(t, "sqlite")
	srv := start(t, data, repo)

	for _, c := range []struct {
		name, url, header string
		want              Toolsets
	}{
		{"default", srv.URL, "", Toolsets{"continuity"}},
		{"path", at(srv.URL, "worker"), "", Toolsets{"worker"}},
		{"path and header", at(srv.URL, "swarm"), "continuity", Toolsets{"continuity", "swarm"}},
		{"header", srv.URL, "all", Toolsets{"all"}},
	} {
		t.Run("http/"+c.name, func(t *testing.T) {
			cl := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
			cs, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: c.url, MaxRetries: -1,
				HTTPClient: &http.Client{Transport: toolsetsHeader{srv.Admin, c.header}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			c.want.check(t, cs)
		})
	}
	for _, c := range []struct {
		args []string
		want Toolsets
	}{
		{nil, Toolsets{"continuity"}},
		{[]string{"--toolsets", "worker"}, Toolsets{"worker"}},
		{[]string{"--toolsets", "delegation,swarm"}, Toolsets{"delegation", "swarm"}},
		{[]string{"--toolsets", "all"}, Toolsets{"all"}},
	} {
		t.Run("stdio/"+strings.Join(c.args, "="), func(t *testing.T) {
			c.want.check(t, connectStdio(t, data, repo, append([]string{"--principal", "admin"}, c.args...)...))
		})
	}
}

// Toolsets are the toolsets an endpoint must list.
type Toolsets []string

// check: cs lists exactly the checked-in tools of the toolsets, in order,
// has their instructions, and does not know a tool of another toolset.
func (ts Toolsets) check(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	sets, err := mcpserver.ParseToolsets(ts...)
	if err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	for _, name := range ts {
		want = append(want, bytes.SplitAfter(goldenList(t, name), []byte("\n"))...)
	}
	got := listed(t, cs)
	var names []string
	for line := range bytes.Lines(got) {
		var tl struct{ Name string }
		_ = json.Unmarshal(line, &tl)
		names = append(names, tl.Name)
		if !bytes.Contains(bytes.Join(want, nil), line) {
			t.Errorf("%s is not the checked-in tool of %v:\n%s", tl.Name, ts, line)
		}
	}
	if n := bytes.Count(bytes.Join(want, nil), []byte("\n")); len(names) != n {
		t.Errorf("%d tools listed, want the %d of %v: %v", len(names), n, ts, names)
	}
	if ins := cs.InitializeResult().Instructions; ins != mcpserver.Instructions(sets) {
		t.Errorf("the instructions are not those of %v:\n%s", ts, ins)
	}
	for _, other := range []string{"chat_swarm_create", "chat_swarm_next", "work_on_project", "start_coding_agent"} {
		if slices.Contains(names, other) {
			continue
		}
		if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: other, Arguments: map[string]any{}}); err == nil ||
			!strings.Contains(err.Error(), "unknown tool") {
			t.Errorf("%s outside %v: %v, want the unknown-tool error", other, ts, err)
		}
	}
}
