package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// dial opens an MCP client session over streamable HTTP like connect, but
// returns its error instead of failing the test, so that it can be used from
// goroutines. The client never retries on its own. The caller closes it.
func dial(ctx context.Context, url, tok string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearerTransport{tok}}, MaxRetries: -1}, nil)
}

// tryCall invokes a tool like call, but returns a transport or protocol
// failure as an error instead of failing the test.
func tryCall(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) (result, error) {
	var r result
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return r, err
	}
	r.IsError = res.IsError
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r.Data); err != nil {
		return r, fmt.Errorf("%s: structured content %s: %w", tool, b, err)
	}
	return r, nil
}

// postKinds are the kinds that can be posted: a listing with them leaves out
// the session's instructions (kind instruction).
var postKinds = []string{"decision", "progress", "todo", "risk", "question", "guidance", "note", "answer"}

// msgID is the message id of a post_session_message result.
func msgID(d map[string]any) string {
	m, _ := d["message"].(map[string]any)
	id, _ := m["message_id"].(string)
	return id
}

// sessionState is what must not move when a call fails: the message count
// (as reported, and as rows listed) and the brief's session revision.
func sessionState(t *testing.T, cs *mcp.ClientSession, sid string) (total, revision float64) {
	t.Helper()
	list := must(t, cs, "list_session_messages", map[string]any{"session_id": sid, "limit": 100, "kinds": postKinds})
	total = list["total_count"].(float64)
	if n := len(list["messages"].([]any)); float64(n) != total || list["next_cursor"] != nil {
		t.Errorf("session %s: total_count %v, but %d messages listed (next_cursor %v)", sid, total, n, list["next_cursor"])
	}
	brief := must(t, cs, "read_session_handoff", map[string]any{"session_id": sid})["handoff_brief"].(map[string]any)
	revision = brief["basis"].(map[string]any)["session_revision"].(float64)
	return total, revision
}

// teamSetup starts a server on a fresh data dir with a git checkout "demo",
// a group "team" with the given principals and write access to demo.
func teamSetup(t *testing.T, principals ...string) (srv *server, data, repo string) {
	t.Helper()
	repo = gitRepo(t)
	data = filepath.Join(t.TempDir(), "data")
	srv = start(t, data, repo)
	cli(t, data, "group", "create", "team")
	for _, p := range principals {
		cli(t, data, "principal", "create", p, "--group", "team")
	}
	cli(t, data, "project", "grant", "demo", "team:write")
	return srv, data, repo
}

// TestConcurrentIdenticalPosts: 50 clients post the same keyed message at
// the same moment; exactly one message is created and 49 calls replay it.
func TestConcurrentIdenticalPosts(t *testing.T) {
	srv, data, _ := teamSetup(t, "alice")
	tok := token(t, data, "alice", "sessions:read,sessions:write")
	a := connect(t, srv.URL, tok)
	sid := must(t, a, "work_on_project", map[string]any{"project": "demo", "instruction": "race the delivery key"})["session_id"].(string)

	const n = 50
	post := map[string]any{"session_id": sid, "kind": "decision", "text": "exactly once, please", "delivery_key": "same-key"}
	type outcome struct {
		r   result
		err error
	}
	var connected sync.WaitGroup
	release := make(chan struct{})
	outcomes := make(chan outcome, n)
	connected.Add(n)
	for i := range n {
		go func() {
			ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
			defer cancel()
			cs, err := dial(ctx, srv.URL, tok)
			connected.Done()
			if err != nil {
				outcomes <- outcome{err: fmt.Errorf("client %d: connect: %w", i, err)}
				return
			}
			defer cs.Close()
			select {
			case <-release:
			case <-ctx.Done():
				outcomes <- outcome{err: fmt.Errorf("client %d: never released: %w", i, ctx.Err())}
				return
			}
			r, err := tryCall(ctx, cs, "post_session_message", post)
			if err != nil {
				err = fmt.Errorf("client %d: %w", i, err)
			}
			outcomes <- outcome{r, err}
		}()
	}
	connected.Wait()
	close(release)

	ids := map[string]int{}
	fresh, replayed := 0, 0
	for range n {
		o := <-outcomes
		if o.err != nil {
			t.Error(o.err)
			continue
		}
		if o.r.IsError {
			t.Errorf("post failed: %v", o.r.Data)
			continue
		}
		ids[msgID(o.r.Data)]++
		switch o.r.Data["replayed"] {
		case false:
			fresh++
		case true:
			replayed++
		default:
			t.Errorf("replayed missing: %v", o.r.Data)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	if len(ids) != 1 || fresh != 1 || replayed != n-1 {
		t.Fatalf("%d concurrent identical posts: message ids %v, %d fresh, %d replayed (want 1 id, 1 fresh, %d replayed)",
			n, ids, fresh, replayed, n-1)
	}
	list := must(t, a, "list_session_messages", map[string]any{"session_id": sid, "kinds": postKinds})
	if msgs := list["messages"].([]any); list["total_count"] != 1.0 || len(msgs) != 1 {
		t.Fatalf("after %d identical posts: %v", n, list)
	}
	for id := range ids {
		if got := list["messages"].([]any)[0].(map[string]any)["message_id"]; got != id {
			t.Fatalf("listed message %v, posts returned %s", got, id)
		}
	}

	// The same key with another payload is a conflict, and writes nothing.
	changed := map[string]any{"session_id": sid, "kind": "decision", "text": "something else", "delivery_key": "same-key"}
	if r := call(t, a, "post_session_message", changed); r.code() != "conflict" {
		t.Fatalf("same key, other text: %v", r.Data)
	}
	if list := must(t, a, "list_session_messages", map[string]any{"session_id": sid, "kinds": postKinds}); list["total_count"] != 1.0 || len(list["messages"].([]any)) != 1 {
		t.Fatalf("after the conflict: %v", list)
	}
}

// TestReplayAcrossRestartAndStdio: a delivery key outlives kill -9 of the
// server, and its scope is the session, not the credential or transport.
func TestReplayAcrossRestartAndStdio(t *testing.T) {
	srv, data, repo := teamSetup(t, "alice", "bob")
	alice := token(t, data, "alice", "sessions:read,sessions:write")
	a := connect(t, srv.URL, alice)
	started := must(t, a, "work_on_project", map[string]any{"project": "demo", "instruction": "survive a crash"})
	sid, ref := started["session_id"].(string), started["session_ref"].(string)
	post := map[string]any{"session_id": sid, "kind": "progress", "text": "step one done", "delivery_key": "k-restart",
		"tags": []string{"a", "b"}, "priority": "high"}
	first := must(t, a, "post_session_message", post)
	id := msgID(first)
	if first["replayed"] != false || id == "" {
		t.Fatalf("first post: %v", first)
	}

	srv.kill()
	srv = start(t, data, repo)
	a = connect(t, srv.URL, alice)
	again := must(t, a, "post_session_message", post)
	if again["replayed"] != true || msgID(again) != id {
		t.Fatalf("replay after kill -9: %v (want %s, replayed)", again, id)
	}

	// Bob: same group, another credential, over stdio, naming the session by
	// its reference.
	b := connectStdio(t, data, repo, "--principal", "bob", "--scopes", "sessions:read,sessions:write")
	viaRef := map[string]any{}
	for k, v := range post {
		viaRef[k] = v
	}
	viaRef["session_id"] = ref
	for _, args := range []map[string]any{post, viaRef} {
		r := must(t, b, "post_session_message", args)
		if r["replayed"] != true || msgID(r) != id {
			t.Fatalf("replay over stdio as bob (session_id %v): %v (want %s, replayed)", args["session_id"], r, id)
		}
	}
	changed := map[string]any{}
	for k, v := range post {
		changed[k] = v
	}
	changed["priority"] = "low"
	if r := call(t, b, "post_session_message", changed); r.code() != "conflict" {
		t.Fatalf("bob, same key, other priority: %v", r.Data)
	}
	for _, cs := range []*mcp.ClientSession{a, b} {
		if l := must(t, cs, "list_session_messages", map[string]any{"session_id": sid, "kinds": postKinds}); l["total_count"] != 1.0 || len(l["messages"].([]any)) != 1 {
			t.Fatalf("messages after the replays: %v", l)
		}
	}
}

// TestNothingWrittenOnFailure: a failed mutation leaves no trace — no
// message, no revision bump, no superseded mark, no used delivery key.
func TestNothingWrittenOnFailure(t *testing.T) {
	srv, data, _ := teamSetup(t, "alice")
	a := connect(t, srv.URL, token(t, data, "alice", "sessions:read,sessions:write"))
	newSession := func(instr string) string {
		return must(t, a, "work_on_project", map[string]any{"project": "demo", "instruction": instr})["session_id"].(string)
	}
	sA, sB, sC := newSession("session A"), newSession("session B"), newSession("session C")
	dec := msgID(must(t, a, "post_session_message", map[string]any{"session_id": sA, "kind": "decision", "text": "A decides"}))
	must(t, a, "post_session_message", map[string]any{"session_id": sA, "kind": "todo", "text": "A has work"})
	other := msgID(must(t, a, "post_session_message", map[string]any{"session_id": sB, "kind": "decision", "text": "B decides"}))
	must(t, a, "post_session_message", map[string]any{"session_id": sC, "kind": "note", "text": "C was here"})
	must(t, a, "close_session", map[string]any{"session_id": sC, "summary": "done"})

	type state struct{ total, revision float64 }
	snapshot := func() map[string]state {
		m := map[string]state{}
		for _, s := range []string{sA, sB, sC} {
			total, rev := sessionState(t, a, s)
			m[s] = state{total, rev}
		}
		return m
	}
	before := snapshot()
	if before[sA].total != 2 || before[sB].total != 1 || before[sC].total != 1 {
		t.Fatalf("setup: %v", before)
	}

	cases := []struct {
		name string
		tool string
		args map[string]any
		code string
	}{
		{"post to a closed session", "post_session_message",
			map[string]any{"session_id": sC, "kind": "note", "text": "too late", "delivery_key": "f1"}, "session_closed"},
		{"supersedes a message of another session", "post_session_message",
			map[string]any{"session_id": sA, "kind": "decision", "text": "steal B's decision", "supersedes": other, "delivery_key": "f2"}, "not_found"},
		{"reply_to an unknown message", "post_session_message",
			map[string]any{"session_id": sA, "kind": "answer", "text": "to nobody", "reply_to": continuo.NewID(continuo.PrefixMessage, time.Now()), "delivery_key": "f3"}, "not_found"},
		{"resolve a decision", "resolve_session_message",
			map[string]any{"session_id": sA, "message_id": dec, "resolution": "decisions are not resolved"}, "invalid_state"},
	}
	for _, c := range cases {
		r := call(t, a, c.tool, c.args)
		if r.code() != c.code {
			t.Errorf("%s: got %v, want code %s", c.name, r.Data, c.code)
			continue
		}
		if after := snapshot(); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("%s changed state: before %v, after %v", c.name, before, after)
		}
	}

	// The messages the failures pointed at are untouched.
	for sid, id := range map[string]string{sB: other, sA: dec} {
		for _, m := range must(t, a, "list_session_messages", map[string]any{"session_id": sid, "kinds": postKinds})["messages"].([]any) {
			m := m.(map[string]any)
			if m["message_id"] == id && (m["status"] != "open" || m["superseded_by"] != nil || m["resolution"] != nil) {
				t.Errorf("message %s after the failures: %v", id, m)
			}
		}
	}

	// A failed post did not use up its delivery key: the key is free for a
	// different payload.
	for _, key := range []string{"f2", "f3"} {
		r := must(t, a, "post_session_message", map[string]any{"session_id": sA, "kind": "note", "text": "key " + key + " reused", "delivery_key": key})
		if r["replayed"] != false {
			t.Errorf("delivery key %s of a failed post: %v", key, r)
		}
	}
	if total, _ := sessionState(t, a, sA); total != before[sA].total+2 {
		t.Errorf("session A has %v messages, want %v", total, before[sA].total+2)
	}
}
