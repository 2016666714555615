package mcpserver_test

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo/internal/syncbuf"
)

func records(t *testing.T, l *syncbuf.Buffer) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.String()), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// Every tool call is one info line (tool, principal, duration, outcome),
// without its arguments or the caller's token; the SDK's connect and
// disconnect records are debug, so at info a connection and two calls are
// two lines.
func TestLogOneLinePerCall(t *testing.T) {
	var buf syncbuf.Buffer
	f := newFixtureWith(t, fixtureOptions{logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	tok := f.token("alice", sessionScopes...)
	c := f.connect(tok)
	c.call("list_projects", map[string]any{})
	if r := c.call("work_on_project", map[string]any{"project": "secret-arg-nope", "instruction": "x"}); r.code() == "" {
		t.Fatalf("work_on_project on an unknown project succeeded")
	}
	c.cs.Close()
	recs := records(t, &buf)
	if len(recs) != 2 {
		t.Fatalf("%d log lines at info for one connection and two calls, want 2:\n%v", len(recs), recs)
	}
	for i, want := range []struct{ tool, outcome string }{{"list_projects", "ok"}, {"work_on_project", "not_found"}} {
		r := recs[i]
		if r["msg"] != "tool call" || r["tool"] != want.tool || r["principal"] != "alice" || r["outcome"] != want.outcome || r["duration"] == nil {
			t.Errorf("line %d = %v, want tool %s outcome %s by alice", i, r, want.tool, want.outcome)
		}
	}
	if s := buf.String(); strings.Contains(s, "secret-arg-nope") || strings.Contains(s, tok) {
		t.Errorf("the log holds an argument or the token:\n%s", s)
	}
}
