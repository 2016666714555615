package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo/internal/store/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rowLock holds a lock on one session's row from another transaction, as
// a slow writer would, so that a tool call writing that session waits.
type rowLock struct {
	t    *testing.T
	conn *pgx.Conn
	tx   pgx.Tx
}

func lockSession(t *testing.T, dbURL, sessionID string) *rowLock {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, sessionID); err != nil {
		t.Fatal(err)
	}
	l := &rowLock{t: t, conn: conn, tx: tx}
	t.Cleanup(l.release)
	return l
}

// waiters is how many other backends of the database wait for a lock.
func (l *rowLock) waiters() int {
	l.t.Helper()
	// Inside the lock's transaction PostgreSQL would answer every count
	// from the snapshot of backends it took at the first one: a backend that
	// connected later (a call that needed a new pool connection) would never
	// show up.
	if _, err := l.conn.Exec(context.Background(), `SELECT pg_stat_clear_snapshot()`); err != nil {
		l.t.Fatal(err)
	}
	var n int
	err := l.conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`).Scan(&n)
	if err != nil {
		l.t.Fatal(err)
	}
	return n
}

// waitFor waits until n backends wait for a lock.
func (l *rowLock) waitFor(n int, what string) {
	l.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for l.waiters() != n {
		if time.Now().After(deadline) {
			l.t.Fatalf("%s: %d backends wait for a lock, want %d", what, l.waiters(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (l *rowLock) release() {
	if l.conn != nil {
		_ = l.tx.Rollback(context.Background())
		_ = l.conn.Close(context.Background())
		l.conn = nil
	}
}

// outcomeLine matches the tool-call counter of post_session_message, its
// labels in either order.
var outcomeLine = regexp.MustCompile(`(?m)^continuo_tool_calls_total\{(?:outcome="([a-z_]+)",tool="post_session_message"|tool="post_session_message",outcome="([a-z_]+)")\} (\d+)`)

func postOutcomes(t *testing.T, base string) map[string]string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	got := map[string]string{}
	for _, m := range outcomeLine.FindAllStringSubmatch(string(b), -1) {
		got[m[1]+m[2]] = m[3]
	}
	return got
}

// TestCancelledCallPostgres: on the real binary and PostgreSQL, a
// post_session_message that waits for a row lock is cancelled by its
// client: by the official Go client over HTTP, by a client that keeps the
// request open after notifications/cancelled (as the TypeScript client
// does), and over stdio. The waiting statement is cancelled in the
// database, nothing is written, the cancelled request gets no answer,
// nothing is logged as an error, and no call is counted internal.
func TestCancelledCallPostgres(t *testing.T) {
	pgtest.BaseURL(t) // skipped without PostgreSQL, except under CI=true
	data := dataDir(t, "postgres")
	pgURL := databaseURL(data)
	srv := start(t, data, t.TempDir())
	cli(t, data, "group", "create", "team")
	cli(t, data, "principal", "create", "ann", "--group", "team")
	cli(t, data, "project", "add", "demo", "--grant", "team:write")
	tok := token(t, data, "ann", "sessions:read,sessions:write")
	cs := connect(t, srv.URL, tok)
	sID := must(t, cs, "work_on_project", map[string]any{"project": "demo", "instruction": "task"})["session_id"].(string)
	post := map[string]any{"session_id": sID, "kind": "note", "text": "never written"}
	count := func() float64 {
		return must(t, cs, "list_session_messages", map[string]any{"session_id": sID, "kinds": postKinds})["total_count"].(float64)
	}

	t.Run("go client", func(t *testing.T) {
		legacy := connectAt(t, srv.URL, tok, "2025-11-25")
		lock := lockSession(t, pgURL, sID)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := legacy.CallTool(ctx, &mcp.CallToolParams{Name: "post_session_message", Arguments: post})
			done <- err
		}()
		lock.waitFor(1, "the call")
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("CallTool after cancel: %v", err)
		}
		lock.waitFor(0, "the cancelled statement")
	})

	t.Run("open request", func(t *testing.T) {
		h := rawSession(t, srv.URL, tok)
		lock := lockSession(t, pgURL, sID)
		stream := make(chan string, 1)
		go func() {
			resp := rawPost(t, srv.URL, tok, h, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"post_session_message","arguments":{"session_id":%q,"kind":"note","text":"never written"}}}`, sID))
			b, _ := io.ReadAll(resp.Body) // ends with the call
			resp.Body.Close()
			stream <- string(b)
		}()
		lock.waitFor(1, "the call")
		rawPost(t, srv.URL, tok, h, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"user"}}`).Body.Close()
		select {
		case body := <-stream:
			if strings.Contains(body, `"id":2`) {
				t.Errorf("the cancelled request was answered: %s", body)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the call's response did not end within 20 s")
		}
	})

	t.Run("stdio", func(t *testing.T) {
		s := startRawStdio(t, data, "--principal", "ann", "--scopes", "sessions:read,sessions:write")
		s.send(initLine, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		s.answers("1")
		lock := lockSession(t, pgURL, sID)
		s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"post_session_message","arguments":{"session_id":%q,"kind":"note","text":"never written"}}}`, sID))
		lock.waitFor(1, "the call")
		s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"user"}}`)
		lock.waitFor(0, "the cancelled statement")
		lock.release()
		s.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
		got := s.answers("3")
		if got["3"][0].Error != nil {
			t.Errorf("ping: %s", got["3"][0].raw)
		}
		for _, m := range got["2"] {
			t.Errorf("the cancelled request was answered: %s", m.raw)
		}
		// Whatever the server still had to say has been said when
		// stdout ends.
		code, rest := s.closeAndWait()
		for _, m := range rest {
			t.Errorf("after stdin closed: %s", m.raw)
		}
		if code != 0 {
			t.Errorf("exit status %d", code)
		}
		if l := s.stderr.String(); strings.Contains(l, "level=ERROR") || !strings.Contains(l, `level=INFO msg="tool call" tool=post_session_message`) ||
			!strings.Contains(l, "outcome=cancelled") {
			t.Errorf("stdio log: want the cancellation at info and no error:\n%s", l)
		}
	})

	if n := count(); n != 0 {
		t.Errorf("%v messages in the session after three cancelled posts, want 0", n)
	}
	deadline := time.Now().Add(20 * time.Second)
	for postOutcomes(t, srv.Base)["cancelled"] != "2" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the open request's call ends after its notification
	}
	if got := postOutcomes(t, srv.Base); got["cancelled"] != "2" || len(got) != 1 {
		t.Errorf("post_session_message outcomes on HTTP: %v, want exactly 2 cancelled", got)
	}
	if l := srv.stderr.String(); strings.Contains(l, "level=ERROR") {
		t.Errorf("serve logged an error:\n%s", l)
	}
}

// connectAt opens an MCP client session at protocol version v.
func connectAt(t *testing.T, url, tok, v string) *mcp.ClientSession {
	t.Helper()
	cs, err := dialAt(context.Background(), url, tok, v)
	if err != nil {
		t.Fatalf("connect %s at %s: %v", url, v, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// dialAt is connectAt for code that has no test to fail (a carrier
// process): the session, or why there is none.
func dialAt(ctx context.Context, url, tok, v string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearerTransport{tok}}, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: v})
}

// rawPost posts a JSON-RPC body to the MCP endpoint.
func rawPost(t *testing.T, url, tok string, h map[string]string, body string) *http.Response {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return nil
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return nil
	}
	return resp
}

// rawSession initializes a 2025-11-25 session and returns its headers.
func rawSession(t *testing.T, url, tok string) map[string]string {
	t.Helper()
	resp := rawPost(t, url, tok, nil, initLine)
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	h := map[string]string{"Mcp-Session-Id": resp.Header.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-11-25"}
	rawPost(t, url, tok, h, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()
	return h
}
