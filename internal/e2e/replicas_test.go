package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/continuo-dev/continuo/internal/store/pgtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// replicas starts two `continuo serve` processes, each with its own data
// directory, on one fresh PostgreSQL database. The first bootstraps it
// (and registers the project "demo" for repo).
func replicas(t *testing.T, repo string) (r1, r2 *server, d1, d2 string) {
	t.Helper()
	db := pgtest.Database(t)
	d1, d2 = filepath.Join(t.TempDir(), "r1"), filepath.Join(t.TempDir(), "r2")
	useDatabase(d1, db)
	useDatabase(d2, db)
	r1 = start(t, d1, repo)
	r2 = start(t, d2, repo)
	if r1.Project == "" || r2.Admin != "" {
		t.Fatalf("bootstrap: replica 1 project %q, replica 2 printed an admin token: %v", r1.Project, r2.Admin != "")
	}
	return r1, r2, d1, d2
}

// writer makes a token for principal (and its own group) that may write
// sessions in the project "demo".
func writer(t *testing.T, dataDir, principal string) string {
	t.Helper()
	tok := token(t, dataDir, principal, "sessions:read,sessions:write")
	cli(t, dataDir, "project", "grant", "demo", principal+":write")
	return tok
}

// connectVersion opens an MCP session at a given protocol version
// (2025-11-25: a stateful session; 2026-07-28: stateless).
func connectVersion(t *testing.T, url, tok, version string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearerTransport{tok}}, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect %s at %s: %v", url, version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestReplicasContinuity is the continuity story across two replicas on
// one PostgreSQL database: a conversation starts and records its work on
// replica 1, replica 1 restarts, a second credential of the group reads and
// resumes the session through replica 2, and another group sees nothing.
func TestReplicasContinuity(t *testing.T) {
	pgtest.BaseURL(t)
	repo := gitRepo(t)
	r1, r2, d1, d2 := replicas(t, repo)
	cli(t, d1, "group", "create", "team")
	cli(t, d2, "group", "create", "rivals")
	cli(t, d1, "principal", "create", "alice", "--group", "team")
	cli(t, d2, "principal", "create", "bob", "--group", "team")
	cli(t, d1, "principal", "create", "mallory", "--group", "rivals")
	cli(t, d2, "project", "grant", "demo", "team:write")
	cli(t, d1, "project", "grant", "demo", "rivals:write")
	alice := token(t, d1, "alice", "sessions:read,sessions:write")
	bob := token(t, d2, "bob", "sessions:read,sessions:write")
	mallory := token(t, d1, "mallory", "sessions:read,sessions:write")

	a := connect(t, r1.URL, alice)
	started := must(t, a, "work_on_project", map[string]any{"project": "demo", "instruction": "Ship the PostgreSQL store"})
	sid := started["session_id"].(string)
	dec := must(t, a, "post_session_message", map[string]any{"session_id": sid, "kind": "decision",
		"text": "SERIALIZABLE with bounded retries", "delivery_key": "d1"})["message"].(map[string]any)
	must(t, a, "post_session_message", map[string]any{"session_id": sid, "kind": "todo", "text": "measure two replicas"})

	r1.stop()
	r1 = start(t, d1, repo)

	b := connect(t, r2.URL, bob)
	list := must(t, b, "list_sessions", map[string]any{"project": "demo"})
	if list["total_count"] != float64(1) {
		t.Fatalf("list_sessions through replica 2: %v", list)
	}
	brief := must(t, b, "read_session_handoff", map[string]any{"session_id": sid})["handoff_brief"].(map[string]any)
	decisions := brief["task"].(map[string]any)["decisions"].(map[string]any)["items"].([]any)
	if len(decisions) != 1 || decisions[0].(map[string]any)["message_id"] != dec["message_id"] {
		t.Fatalf("brief through replica 2 lacks the decision posted through replica 1: %v", decisions)
	}
	resumed := must(t, b, "work_on_project", map[string]any{"session_id": sid, "instruction": "continue on replica 2"})
	if resumed["resumed"] != true || resumed["session_id"] != sid {
		t.Fatalf("resume through replica 2: %v", resumed)
	}
	// The replay of alice's keyed post through the other replica is a replay.
	again := must(t, connect(t, r1.URL, bob), "post_session_message", map[string]any{"session_id": sid, "kind": "decision",
		"text": "SERIALIZABLE with bounded retries", "delivery_key": "d1"})
	if again["replayed"] != true {
		t.Errorf("keyed replay through the restarted replica: %v", again)
	}
	m := connect(t, r2.URL, mallory)
	if n := must(t, m, "list_sessions", map[string]any{"project": "demo"})["total_count"]; n != float64(0) {
		t.Errorf("another group counts %v sessions", n)
	}
	if r := call(t, m, "read_session_handoff", map[string]any{"session_id": sid}); r.code() != "not_found" {
		t.Errorf("another group reads the brief: %v", r.Data)
	}
}

// roundRobin is a tiny load balancer: each request goes to the next
// backend, with no stickiness at all. It counts requests per backend.
type roundRobin struct {
	next    atomic.Uint64
	proxies []*httputil.ReverseProxy
	hits    []atomic.Int64
}

func newRoundRobin(t *testing.T, backends ...string) *httptest.Server {
	rr := &roundRobin{hits: make([]atomic.Int64, len(backends))}
	for _, b := range backends {
		u, err := url.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		p := httputil.NewSingleHostReverseProxy(u)
		p.FlushInterval = -1 // server-sent events pass through at once
		rr.proxies = append(rr.proxies, p)
	}
	srv := httptest.NewServer(rr)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		t.Logf("round robin: requests per replica %d / %d", rr.hits[0].Load(), rr.hits[1].Load())
		for i := range rr.hits {
			if rr.hits[i].Load() == 0 {
				t.Errorf("replica %d got no request through the balancer", i+1)
			}
		}
	})
	return srv
}

func (rr *roundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := int(rr.next.Add(1)-1) % len(rr.proxies)
	rr.hits[i].Add(1)
	r.Host = "127.0.0.1" // a loopback name, as a same-machine balancer forwards it
	rr.proxies[i].ServeHTTP(w, r)
}

// TestReplicasRoundRobin: MCP over HTTP needs no sticky sessions. Behind a
// balancer that alternates every request between two replicas, a stateful
// (2025-11-25) session and a stateless (2026-07-28) client both work, each
// request landing on either replica.
func TestReplicasRoundRobin(t *testing.T) {
	pgtest.BaseURL(t)
	repo := gitRepo(t)
	r1, r2, d1, _ := replicas(t, repo)
	tok := writer(t, d1, "alice")
	lb := newRoundRobin(t, r1.Base, r2.Base)
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			cs := connectVersion(t, lb.URL+"/mcp", tok, version)
			if got := cs.InitializeResult(); got != nil && got.ProtocolVersion != version {
				t.Fatalf("negotiated %s, want %s", got.ProtocolVersion, version)
			}
			sid := must(t, cs, "work_on_project", map[string]any{"project": "demo", "instruction": "work through a balancer"})["session_id"].(string)
			for i := range 10 {
				r := must(t, cs, "post_session_message", map[string]any{"session_id": sid, "kind": "progress",
					"text": fmt.Sprintf("step %d", i), "delivery_key": fmt.Sprintf("k%d", i)})
				if r["replayed"] != false {
					t.Fatalf("post %d: %v", i, r)
				}
			}
			if n := must(t, cs, "list_session_messages", map[string]any{"session_id": sid, "kinds": postKinds})["total_count"]; n != float64(10) {
				t.Errorf("total_count %v, want 10", n)
			}
			must(t, cs, "read_session_handoff", map[string]any{"session_id": sid})
			if _, err := cs.ListTools(context.Background(), nil); err != nil {
				t.Errorf("tools/list through the balancer: %v", err)
			}
		})
	}
}

// TestReplicasIdenticalKeyedPosts: 50 concurrent identical keyed posts,
// spread over two replicas, make exactly one message.
func TestReplicasIdenticalKeyedPosts(t *testing.T) {
	pgtest.BaseURL(t)
	repo := gitRepo(t)
	r1, r2, d1, _ := replicas(t, repo)
	tok := writer(t, d1, "alice")
	sid := must(t, connect(t, r1.URL, tok), "work_on_project", map[string]any{"project": "demo", "instruction": "race"})["session_id"].(string)
	const clients, each = 10, 5
	var sessions []*mcp.ClientSession
	for i := range clients {
		sessions = append(sessions, connect(t, []string{r1.URL, r2.URL}[i%2], tok))
	}
	var wg sync.WaitGroup
	results := make(chan result, clients*each)
	args := map[string]any{"session_id": sid, "kind": "decision", "text": "exactly once", "delivery_key": "same-key"}
	for _, cs := range sessions {
		for range each {
			wg.Go(func() {
				r, err := tryCall(t.Context(), cs, "post_session_message", args)
				if err != nil {
					r = result{IsError: true, Data: map[string]any{"error": err.Error()}}
				}
				results <- r
			})
		}
	}
	wg.Wait()
	close(results)
	ids, fresh := map[string]bool{}, 0
	for r := range results {
		if r.IsError {
			t.Fatalf("post failed: %v", r.Data)
		}
		ids[msgID(r.Data)] = true
		if r.Data["replayed"] == false {
			fresh++
		}
	}
	if len(ids) != 1 || fresh != 1 {
		t.Errorf("%d distinct messages, %d fresh posts; want 1 and 1", len(ids), fresh)
	}
	if n := must(t, sessions[1], "list_session_messages", map[string]any{"session_id": sid, "kinds": postKinds})["total_count"]; n != float64(1) {
		t.Errorf("total_count %v, want 1", n)
	}
}

// TestReplicasKill: SIGKILL of one replica while writers post keyed
// messages through both. Every acknowledged post is stored exactly once,
// the other replica carries on, and a post whose outcome was lost with the
// replica is resolved by replaying its key.
func TestReplicasKill(t *testing.T) {
	pgtest.BaseURL(t)
	repo := gitRepo(t)
	r1, r2, d1, _ := replicas(t, repo)
	tok := writer(t, d1, "writer")
	sid := must(t, connect(t, r2.URL, tok), "work_on_project", map[string]any{"project": "demo", "instruction": "write through a replica's death"})["session_id"].(string)

	const writers = 8
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	stop := make(chan struct{})
	begin := make(chan struct{})
	reports := make(chan writerReport, writers)
	var viaR2 atomic.Int64
	for g := range writers {
		target, acks := r1, &atomic.Int64{}
		if g%2 == 1 {
			target, acks = r2, &viaR2
		}
		cs, err := dial(ctx, target.URL, tok)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		go func() { reports <- writeUntilStopped(ctx, cs, sid, g, begin, stop, acks) }()
	}
	close(begin)
	time.Sleep(300 * time.Millisecond) // the kill point; not a readiness wait
	r1.kill()
	atKill := viaR2.Load()
	time.Sleep(300 * time.Millisecond) // replica 2 keeps serving meanwhile
	close(stop)
	acked := map[string]string{}
	var unknown []string
	for range writers {
		rep := <-reports
		if rep.err != nil {
			t.Error(rep.err)
		}
		for k, id := range rep.acked {
			acked[k] = id
		}
		unknown = append(unknown, rep.unknown...)
	}
	afterKill := viaR2.Load() - atKill
	if afterKill == 0 {
		t.Error("replica 2 acknowledged nothing after replica 1 died")
	}
	cs := connect(t, r2.URL, tok)
	byID, byText, total := listAll(t, cs, sid)
	if int(total) != len(byID) {
		t.Errorf("total_count %v, %d listed", total, len(byID))
	}
	for text, ids := range byText {
		if len(ids) > 1 {
			t.Errorf("%q stored %d times", text, len(ids))
		}
	}
	for key, id := range acked {
		if byID[id] != crashText(key) {
			t.Errorf("acknowledged %s (%s): stored %q", key, id, byID[id])
		}
	}
	for key, r := range replayAll(t, r2.URL, tok, sid, unknown) {
		if r.IsError {
			t.Errorf("replay of unknown %s: %v", key, r.Data)
		}
	}
	t.Logf("%d acknowledged (%d after the kill), %d unknown, %d stored", len(acked), afterKill, len(unknown), len(byID))
}

// writeUntilStopped is writeUntilFailure that also ends when stop closes;
// it counts its acknowledgements in acks.
func writeUntilStopped(ctx context.Context, cs *mcp.ClientSession, sid string, g int, begin, stop <-chan struct{}, acks *atomic.Int64) writerReport {
	rep := writerReport{acked: map[string]string{}}
	<-begin
	for n := 0; ; n++ {
		select {
		case <-stop:
			return rep
		default:
		}
		key := fmt.Sprintf("w%d-%d", g, n)
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		r, err := tryCall(cctx, cs, "post_session_message", crashPost(sid, key))
		cancel()
		switch {
		case err != nil:
			rep.unknown = append(rep.unknown, key)
			return rep
		case r.IsError || r.Data["replayed"] != false:
			rep.err = fmt.Errorf("writer %d: post %s: %v", g, key, r.Data)
			return rep
		}
		rep.acked[key] = msgID(r.Data)
		acks.Add(1)
	}
}

// TestReplicasSessionRefs: concurrent session starts in one group through
// both replicas get distinct ~sN references.
func TestReplicasSessionRefs(t *testing.T) {
	pgtest.BaseURL(t)
	repo := gitRepo(t)
	r1, r2, d1, _ := replicas(t, repo)
	tok := writer(t, d1, "alice")
	const clients, each = 8, 10
	refs := make(chan string, clients*each)
	var wg sync.WaitGroup
	for i := range clients {
		cs := connect(t, []string{r1.URL, r2.URL}[i%2], tok)
		for j := range each {
			wg.Go(func() {
				r, err := tryCall(t.Context(), cs, "work_on_project", map[string]any{"project": "demo", "instruction": fmt.Sprintf("task %d-%d", i, j)})
				if err != nil || r.IsError {
					t.Errorf("start %d-%d: %v %v", i, j, err, r.Data)
					return
				}
				refs <- r.Data["session_ref"].(string)
			})
		}
	}
	wg.Wait()
	close(refs)
	seen := map[string]bool{}
	for ref := range refs {
		if seen[ref] {
			t.Errorf("%s handed out twice", ref)
		}
		seen[ref] = true
	}
	if len(seen) != clients*each {
		t.Errorf("%d distinct references, want %d", len(seen), clients*each)
	}
}

// pingStatus POSTs a JSON-RPC ping to an MCP endpoint with a bearer token
// and returns the HTTP status.
func pingStatus(t *testing.T, url, tok string) int {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestReplicasRevocation: both replicas cache a token they authenticated;
// `continuo token revoke`, a process of its own, returns once it heard its
// own notification, and by then both replicas have been sent it: the very
// next request on either one is refused. Each round starts with the
// replica that did not see the token last, and an MCP session that stays
// connected is cut off as well.
func TestReplicasRevocation(t *testing.T) {
	pgtest.BaseURL(t)
	repo := gitRepo(t)
	r1, r2, d1, d2 := replicas(t, repo)
	for round, order := range [][]*server{{r2, r1}, {r1, r2}, {r2, r1}} {
		made := cliJSON(t, d1, "token", "create", "--principal", fmt.Sprintf("p%d", round), "--scopes", "sessions:read")
		tok, id := made["token"].(string), made["token_id"].(string)
		cs := connect(t, order[0].URL, tok)
		for _, r := range []*server{r1, r2, r1, r2} {
			if code := pingStatus(t, r.URL, tok); code != http.StatusOK {
				t.Fatalf("round %d: ping before the revocation: %d", round, code)
			}
		}
		must(t, cs, "list_projects", nil)
		t0 := time.Now()
		cli(t, []string{d1, d2}[round%2], "token", "revoke", id)
		t.Logf("revoke took %v", time.Since(t0))
		if _, err := cs.ListTools(context.Background(), nil); err == nil {
			t.Fatalf("round %d: the connected session's first request after the revocation succeeded", round)
		}
		for _, r := range order {
			if code := pingStatus(t, r.URL, tok); code != http.StatusUnauthorized {
				t.Fatalf("round %d: first ping on %s after the revocation: %d, want 401", round, r.Base, code)
			}
		}
	}
}
