package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/continuo-dev/continuo/internal/store/pgtest"
)

// TestExportAcrossEngines moves a database SQLite → PostgreSQL → SQLite
// with `continuo export` and `continuo import`: every export is
// byte-identical to the first, `export --verify` finds the file and each
// live database the same (and a changed one different), and the tokens of
// the first database keep working on the last.
func TestExportAcrossEngines(t *testing.T) {
	pgtest.BaseURL(t)
	repo := gitRepo(t)
	dir := t.TempDir()

	src := dataDir(t, "sqlite")
	srv := start(t, src, repo)
	tok := token(t, src, "alice", "sessions:read,sessions:write")
	cli(t, src, "project", "grant", "demo", "alice:write")
	cs := connect(t, srv.URL, tok)
	sid := must(t, cs, "work_on_project", map[string]any{"project": "demo", "instruction": "move me between engines",
		"idempotency_key": "start-1"})["session_id"].(string)
	for _, kind := range []string{"decision", "progress", "todo", "risk", "question", "guidance"} {
		must(t, cs, "post_session_message", map[string]any{"session_id": sid, "kind": kind, "text": kind + " ünïcödé \"quoted\"",
			"delivery_key": kind, "tags": []any{"a", kind}})
	}
	srv.stop()

	f1, f2, f3 := filepath.Join(dir, "1.jsonl"), filepath.Join(dir, "2.jsonl"), filepath.Join(dir, "3.jsonl")
	cli(t, src, "export", f1)
	pg := dataDir(t, "postgres")
	cli(t, pg, "import", f1)
	cli(t, pg, "export", f2)
	back := dataDir(t, "sqlite")
	cli(t, back, "import", f2)
	cli(t, back, "export", f3)
	b1, b2, b3 := read(t, f1), read(t, f2), read(t, f3)
	if !bytes.Equal(b1, b2) {
		t.Errorf("the PostgreSQL export differs from the SQLite one (%d vs %d bytes)", len(b1), len(b2))
	}
	if !bytes.Equal(b1, b3) {
		t.Errorf("the export after the round trip differs from the first (%d vs %d bytes)", len(b1), len(b3))
	}

	for _, d := range []string{src, pg, back} {
		v := cliJSON(t, d, "export", "--verify", f1)
		if v["same"] != true {
			t.Errorf("export --verify on %s: %v", d, v)
		}
	}
	cli(t, pg, "group", "create", "newcomers")
	cmd := command(pg, "export", "--verify", f1, "--json")
	out, err := cmd.Output()
	var v map[string]any
	if jerr := json.Unmarshal(out, &v); jerr != nil {
		t.Fatalf("export --verify output %q: %v", out, jerr)
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || v["same"] != false {
		t.Errorf("export --verify after a change: exit %v, %v; want exit 1 and same=false", err, v)
	}

	// The moved database serves the old token and the session.
	moved := start(t, back, repo)
	got := must(t, connect(t, moved.URL, tok), "read_session_handoff", map[string]any{"session_id": sid})
	if got["session_id"] != sid {
		t.Errorf("handoff after the move: %v", got)
	}
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
