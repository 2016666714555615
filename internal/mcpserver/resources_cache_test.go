package mcpserver_test

import (
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestResourcesPrivate (issue 23): what a resource holds is one group's —
// a session's brief, its working set — so every resources/read, and the
// caller's resources/list, is marked cacheScope private with ttlMs 0 as a
// real client reads it, on the stateful protocol and on the stateless one
// (2026-07-28, whose results a shared cache may keep); never the default,
// public. What is the same for everyone (the tool list) stays public.
func TestResourcesPrivate(t *testing.T) {
	f := newFixture(t)
	tok := f.token("alice", sessionScopes...)
	f.project("demo", map[string]continuo.Access{"alice": continuo.AccessWrite})
	sid := f.connect(tok).ok("work_on_project", obj{"project": "demo", "instruction": "Port the parser"}).str("session_id")
	for _, v := range []string{stateful, stateless} {
		t.Run(v, func(t *testing.T) {
			c := f.connectAt(tok, v).at(t)
			for _, uri := range []string{"continuo://sessions/" + sid + "/handoff", "continuo://sessions/" + sid + "/working-set",
				"continuo://sessions/~s1/handoff"} {
				r, err := c.cs.ReadResource(f.ctx, &mcp.ReadResourceParams{URI: uri})
				if err != nil {
					t.Fatalf("read %s: %v", uri, err)
				}
				if r.CacheScope != "private" || r.TTLMs != 0 || len(r.Contents) != 1 || r.Contents[0].Text == "" {
					t.Errorf("read %s: cacheScope %q, ttlMs %d, %d contents; want private, 0 and the resource", uri, r.CacheScope, r.TTLMs, len(r.Contents))
				}
			}
			l, err := c.cs.ListResources(f.ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if l.CacheScope != "private" || l.TTLMs != 0 || len(l.Resources) != 1 {
				t.Errorf("resources/list: cacheScope %q, ttlMs %d, %d resources; want private, 0, 1", l.CacheScope, l.TTLMs, len(l.Resources))
			}
			tl, err := c.cs.ListTools(f.ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tl.CacheScope != "public" {
				t.Errorf("tools/list: cacheScope %q, want public (the same for every caller)", tl.CacheScope)
			}
		})
	}
}
