package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// crashText is the text of the message posted under key: the key is in the
// text, so that a duplicate shows as a repeated text.
func crashText(key string) string { return "crash-durability " + key }

func crashPost(sid, key string) map[string]any {
	return map[string]any{"session_id": sid, "kind": "progress", "text": crashText(key), "delivery_key": key}
}

// writerReport is what one writer goroutine saw in one round.
type writerReport struct {
	acked   map[string]string // key -> message_id of every acknowledged post
	unknown []string          // keys whose call failed in transit: outcome unknown
	err     error             // anything that is not allowed to happen
}

// writeUntilFailure posts keyed messages w<g>-r<round>-<n> until a call fails
// (the server is killed under it) and reports what was acknowledged.
func writeUntilFailure(ctx context.Context, cs *mcp.ClientSession, sid string, g, round int, begin <-chan struct{}) writerReport {
	rep := writerReport{acked: map[string]string{}}
	select {
	case <-begin:
	case <-ctx.Done():
		rep.err = ctx.Err()
		return rep
	}
	for n := 0; ; n++ {
		key := fmt.Sprintf("w%d-r%d-%d", g, round, n)
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		r, err := tryCall(cctx, cs, "post_session_message", crashPost(sid, key))
		cancel()
		switch {
		case err != nil:
			// The server died under the call (or before it): it may or may
			// not have committed.
			rep.unknown = append(rep.unknown, key)
			return rep
		case r.IsError:
			rep.err = fmt.Errorf("writer %d: post %s failed: %v", g, key, r.Data)
			return rep
		case r.Data["replayed"] != false || msgID(r.Data) == "":
			rep.err = fmt.Errorf("writer %d: fresh key %s: %v", g, key, r.Data)
			return rep
		}
		rep.acked[key] = msgID(r.Data)
	}
}

// listAll pages through a session's messages (limit 100) and returns them by
// id, the ids by text, and the total_count every page reported.
func listAll(t *testing.T, cs *mcp.ClientSession, sid string) (byID map[string]string, byText map[string][]string, total float64) {
	t.Helper()
	byID, byText = map[string]string{}, map[string][]string{}
	total = -1
	args := map[string]any{"session_id": sid, "limit": 100, "kinds": postKinds} // messages, not instructions
	for page := 0; ; page++ {
		d := must(t, cs, "list_session_messages", args)
		tc := d["total_count"].(float64)
		if total >= 0 && tc != total {
			t.Fatalf("total_count changed while paging: %v then %v", total, tc)
		}
		total = tc
		msgs := d["messages"].([]any)
		if len(msgs) > 100 {
			t.Fatalf("page %d has %d messages, limit 100", page, len(msgs))
		}
		for _, m := range msgs {
			m := m.(map[string]any)
			id, text := m["message_id"].(string), m["text"].(string)
			if _, dup := byID[id]; dup {
				t.Fatalf("message %s listed twice", id)
			}
			byID[id] = text
			byText[text] = append(byText[text], id)
		}
		next, _ := d["next_cursor"].(string)
		if next == "" {
			return byID, byText, total
		}
		if len(msgs) == 0 {
			t.Fatalf("empty page %d with next_cursor %q", page, next)
		}
		args["cursor"] = next
	}
}

// replayAll posts every key again with its original payload, from several
// clients at once, and returns the results by key.
func replayAll(t *testing.T, url, tok, sid string, keys []string) map[string]result {
	t.Helper()
	const workers = 4
	type out struct {
		key string
		r   result
		err error
	}
	jobs := make(chan string)
	outs := make(chan out, len(keys))
	var wg sync.WaitGroup
	for range workers {
		ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
		defer cancel()
		cs, err := dial(ctx, url, tok)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer cs.Close()
		wg.Go(func() {
			for key := range jobs {
				r, err := tryCall(ctx, cs, "post_session_message", crashPost(sid, key))
				outs <- out{key, r, err}
			}
		})
	}
	for _, k := range keys {
		jobs <- k
	}
	close(jobs)
	wg.Wait()
	close(outs)
	res := map[string]result{}
	for o := range outs {
		if o.err != nil {
			t.Fatalf("replay %s: %v", o.key, o.err)
		}
		res[o.key] = o.r
	}
	return res
}

// TestCrashDurability: under kill -9 of a real server process with writers
// in flight, every acknowledged write survives exactly once, and a write
// whose outcome the client never learned can be retried safely by its key.
// It runs on both engines: on PostgreSQL the server process is killed, not
// the database.
func TestCrashDurability(t *testing.T) { eachEngine(t, crashDurability) }

func crashDurability(t *testing.T, engine string) {
	rounds, writers := 20, 8
	if engine == "postgres" {
		rounds = 10
	}
	if testing.Short() {
		rounds = 5
	}
	repo := gitRepo(t)
	data := dataDir(t, engine)
	rng := rand.New(rand.NewPCG(20240611, 7))

	srv := start(t, data, repo)
	tok := token(t, data, "writer", "sessions:read,sessions:write")
	cli(t, data, "project", "grant", "demo", "writer:write")
	setup := connect(t, srv.URL, tok)
	sid := must(t, setup, "work_on_project", map[string]any{"project": "demo", "instruction": "write through crashes"})["session_id"].(string)

	acked := map[string]string{} // key -> message_id
	var unknown []string
	for round := range rounds {
		if round > 0 {
			srv = start(t, data, repo)
		}
		clients := make([]*mcp.ClientSession, writers)
		for g := range clients {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			cs, err := dial(ctx, srv.URL, tok)
			cancel()
			if err != nil {
				t.Fatalf("round %d: connect writer %d: %v", round, g, err)
			}
			clients[g] = cs
		}
		ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
		begin := make(chan struct{})
		reports := make(chan writerReport, writers)
		for g, cs := range clients {
			go func() { reports <- writeUntilFailure(ctx, cs, sid, g, round, begin) }()
		}
		delay := time.Duration(20+rng.IntN(181)) * time.Millisecond
		close(begin)
		time.Sleep(delay) // the kill point; not a readiness wait
		srv.kill()
		roundAcked, roundUnknown := 0, 0
		for range writers {
			rep := <-reports
			if rep.err != nil {
				t.Errorf("round %d: %v", round, rep.err)
			}
			for k, id := range rep.acked {
				acked[k] = id
			}
			unknown = append(unknown, rep.unknown...)
			roundAcked += len(rep.acked)
			roundUnknown += len(rep.unknown)
		}
		cancel()
		for _, cs := range clients {
			cs.Close()
		}
		t.Logf("round %d: killed after %v: %d acknowledged, %d unknown", round, delay, roundAcked, roundUnknown)
		if t.Failed() {
			t.FailNow()
		}
	}

	srv = start(t, data, repo)
	cs := connect(t, srv.URL, tok)
	byID, byText, total := listAll(t, cs, sid)
	if int(total) != len(byID) {
		t.Errorf("total_count %v, but %d distinct messages listed", total, len(byID))
	}
	for text, ids := range byText {
		if len(ids) > 1 {
			t.Errorf("text %q stored %d times: %v", text, len(ids), ids)
		}
	}
	lost := 0
	for key, id := range acked {
		if got, ok := byID[id]; !ok {
			if lost++; lost <= 10 {
				t.Errorf("acknowledged %s (%s) lost", key, id)
			}
		} else if got != crashText(key) {
			t.Errorf("acknowledged %s (%s) has text %q", key, id, got)
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged messages lost", lost, len(acked))
	}
	if t.Failed() {
		t.FailNow()
	}

	// Replaying every acknowledged key returns the original message.
	keys := make([]string, 0, len(acked))
	for k := range acked {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for key, r := range replayAll(t, srv.URL, tok, sid, keys) {
		if r.IsError || r.Data["replayed"] != true || msgID(r.Data) != acked[key] {
			t.Errorf("replay of acknowledged %s: %v (want %s, replayed)", key, r.Data, acked[key])
		}
	}

	// An unknown outcome is resolved by replaying the key: it either had
	// committed (replayed, the listed message) or is created now — never a
	// conflict, never a second copy.
	committed, created := 0, 0
	for key, r := range replayAll(t, srv.URL, tok, sid, unknown) {
		listed := byText[crashText(key)]
		switch {
		case r.IsError:
			t.Errorf("replay of unknown %s: %v", key, r.Data)
		case r.Data["replayed"] == true:
			committed++
			if len(listed) != 1 || listed[0] != msgID(r.Data) {
				t.Errorf("replay of unknown %s says committed as %s, listing has %v", key, msgID(r.Data), listed)
			}
		case r.Data["replayed"] == false:
			created++
			if len(listed) != 0 {
				t.Errorf("replay of unknown %s created %s, but it was already stored as %v", key, msgID(r.Data), listed)
			}
		default:
			t.Errorf("replay of unknown %s: %v", key, r.Data)
		}
	}
	byID2, byText2, total2 := listAll(t, cs, sid)
	if int(total2) != len(byID2) || len(byID2) != len(byID)+created {
		t.Errorf("after resolving unknowns: total_count %v, %d listed, want %d", total2, len(byID2), len(byID)+created)
	}
	for text, ids := range byText2 {
		if len(ids) > 1 {
			t.Errorf("after resolving unknowns: text %q stored %d times: %v", text, len(ids), ids)
		}
	}
	t.Logf("%d rounds, %d writers: %d acknowledged, %d unknown (%d had committed, %d created on replay), %d messages stored",
		rounds, writers, len(acked), len(unknown), committed, created, len(byID2))
}
