package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/store/sqlite"
	"github.com/continuo-dev/continuo/internal/workflow"
)

const filler = "The worker re-ran the focused tests after moving the retry loop out of the writer goroutine; " +
	"timings are unchanged within noise and the flaky case no longer reproduces on this checkout. "

// messageText is a ~200-byte message body, unique per (i, client).
func messageText(i, client int) string {
	head := fmt.Sprintf("bench message %07d c%02d: ", i, client)
	s := head + filler
	for len(s) < 200 {
		s += filler
	}
	return s[:200]
}

// kindFor is the deterministic kind mix of the handoff sessions: mostly
// progress and notes, some decisions, todos, risks and questions.
func kindFor(i int) continuo.Kind {
	x := uint64(i) + 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x ^= x >> 31
	switch r := x % 100; {
	case r < 45:
		return continuo.KindProgress
	case r < 78:
		return continuo.KindNote
	case r < 86:
		return continuo.KindDecision
	case r < 92:
		return continuo.KindTodo
	case r < 96:
		return continuo.KindRisk
	default:
		return continuo.KindQuestion
	}
}

func progressKind(int) continuo.Kind { return continuo.KindProgress }

// postResult is the outcome of a post loop.
type postResult struct {
	N         int // successful posts
	Failed    int // calls answered with isError, a JSON-RPC error or an HTTP error, or that failed in transport
	FirstFail error
	Elapsed   time.Duration
	Lat       []time.Duration
}

func (r postResult) perSec() float64 { return float64(r.N) / r.Elapsed.Seconds() }

// maxConsecutiveFailures stops a post loop whose client keeps failing: the
// server is broken and there is nothing left to measure.
const maxConsecutiveFailures = 20

// postLoop has every client post keyed messages (client i into sessions[i])
// until d has passed (d > 0) or until limit messages were posted in total
// (limit > 0). Every post carries a unique delivery_key, and each client
// has one call in flight at a time. A failed call is counted (and its
// index is not retried); the loop only returns an error when a client
// fails maxConsecutiveFailures times in a row. The elapsed time runs until
// the last in-flight call has returned.
func postLoop(clients []mcpClient, sessions []string, d time.Duration, limit int, keyPrefix string,
	kind func(int) continuo.Kind) (postResult, error) {
	return opLoop(len(clients), d, limit, func(ctx context.Context, ci, i int) error {
		return clients[ci].post(ctx, sessions[ci], string(kind(i)), messageText(i, ci), keyPrefix+"-"+strconv.Itoa(i))
	})
}

// pingLoop has every client send JSON-RPC pings for d, one in flight per
// client, counted like postLoop's posts.
func pingLoop(clients []mcpClient, d time.Duration) (postResult, error) {
	return opLoop(len(clients), d, 0, func(ctx context.Context, ci, _ int) error { return clients[ci].ping(ctx) })
}

// opLoop runs op(ctx, client, i) from n goroutines, one call in flight per
// goroutine, with a global call index i starting at 1, until d has passed
// (d > 0) or limit calls were started (limit > 0); see postLoop.
func opLoop(n int, d time.Duration, limit int, op func(ctx context.Context, ci, i int) error) (postResult, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var next atomic.Int64
	var fatal error
	var mu sync.Mutex
	lats := make([][]time.Duration, n)
	failed := make([]int, n)
	firstFail := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for ci := range n {
		wg.Add(1)
		go func(ci int) {
			defer wg.Done()
			lat := make([]time.Duration, 0, 1024)
			consecutive := 0
			for ctx.Err() == nil {
				if d > 0 && !time.Now().Before(deadline) {
					break
				}
				i := int(next.Add(1))
				if limit > 0 && i > limit {
					break
				}
				t0 := time.Now()
				err := op(ctx, ci, i)
				if err != nil {
					if ctx.Err() != nil {
						break
					}
					failed[ci]++
					if firstFail[ci] == nil {
						firstFail[ci] = err
					}
					if consecutive++; consecutive >= maxConsecutiveFailures {
						mu.Lock()
						if fatal == nil {
							fatal = fmt.Errorf("%d consecutive failed calls, last: %w", consecutive, err)
						}
						mu.Unlock()
						cancel()
						break
					}
					continue
				}
				consecutive = 0
				lat = append(lat, time.Since(t0))
			}
			lats[ci] = lat
		}(ci)
	}
	wg.Wait()
	res := postResult{Elapsed: time.Since(start)}
	for ci, l := range lats {
		res.N += len(l)
		res.Lat = append(res.Lat, l...)
		res.Failed += failed[ci]
		if res.FirstFail == nil {
			res.FirstFail = firstFail[ci]
		}
	}
	return res, fatal
}

// postAll is postLoop for setup and fill writes, where every post must
// succeed: any failed call is an error.
func postAll(clients []mcpClient, sessions []string, limit int, keyPrefix string, kind func(int) continuo.Kind) (postResult, error) {
	r, err := postLoop(clients, sessions, 0, limit, keyPrefix, kind)
	if err == nil && r.Failed > 0 {
		err = fmt.Errorf("%d of %d posts failed, first: %w", r.Failed, limit, r.FirstFail)
	}
	return r, err
}

// handoffLatencies reads the handoff of every session in turn (interleaved,
// so that load drift on a shared machine hits all of them alike): warm
// rounds first, then n measured rounds.
func handoffLatencies(c mcpClient, sessions []string, warm, n int) ([][]time.Duration, error) {
	ctx := context.Background()
	out := make([][]time.Duration, len(sessions))
	for round := 0; round < warm+n; round++ {
		for si, sid := range sessions {
			t0 := time.Now()
			if err := c.callFast(ctx, "read_session_handoff", map[string]any{"session_id": sid}); err != nil {
				return nil, err
			}
			if round >= warm {
				out[si] = append(out[si], time.Since(t0))
			}
		}
	}
	return out, nil
}

// fillInProcess writes n messages into a session of the (stopped) server's
// database by running the server's own write path in this process:
// workflow.Service.PostMessage over internal/store/sqlite, with the same
// group commit, counters, seq, revision and idempotency records as a
// post_session_message call — only the HTTP/JSON-RPC layer is skipped.
func fillInProcess(dbPath, token, sessionID string, n, workers int, keyPrefix string) (time.Duration, error) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, dbPath, nil)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	a := auth.New(st, nil)
	wf := workflow.New(st, a, nil)
	caller, err := a.Authenticate(ctx, token)
	if err != nil {
		return 0, fmt.Errorf("authenticate: %w", err)
	}
	var next atomic.Int64
	errc := make(chan error, workers)
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1))
				if i > n {
					return
				}
				if _, _, err := wf.PostMessage(ctx, caller, workflow.Post{SessionID: sessionID, Kind: kindFor(i),
					Text: messageText(i, 0), DeliveryKey: keyPrefix + "-" + strconv.Itoa(i)}); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// percentile returns the p-quantile (nearest rank) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	k := int(math.Ceil(p*float64(len(s)))) - 1
	if k < 0 {
		k = 0
	}
	return s[k]
}

func msStr(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) + " ms" }

func mbStr(b int64) string { return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + " MB" }

// gitRepo makes a git checkout with one commit under dir.
func gitRepo(dir string) error {
	run := func(args ...string) error {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(cmd.Environ(), "GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.com",
			"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.com", "HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := run("init", "-q", "-b", "main"); err != nil {
		return err
	}
	if err := os.WriteFile(dir+"/README.md", []byte("# bench\n"), 0o644); err != nil {
		return err
	}
	if err := run("add", "."); err != nil {
		return err
	}
	return run("commit", "-q", "-m", "first")
}
