package mcpserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// waiting is a chat_swarm_next call in flight, with what its client is
// told meanwhile.
type waiting struct {
	w        *worker
	done     chan outcome
	progress chan *mcp.ProgressNotificationParams
}

type outcome struct {
	res *mcp.CallToolResult
	err error
}

// progressClient connects a client whose progress notifications go to
// the channel it returns.
func (f *fixture) progressClient(tok, version string) (*client, chan *mcp.ProgressNotificationParams) {
	f.t.Helper()
	progress := make(chan *mcp.ProgressNotificationParams, 64)
	c := f.connectWith(tok, version, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		select {
		case progress <- req.Params:
		default:
		}
	}})
	return c, progress
}

// wait starts w's chat_swarm_next of wait_secs with a progress token.
func (w *worker) wait(secs int, progress chan *mcp.ProgressNotificationParams, token string) *waiting {
	p := &mcp.CallToolParams{Name: "chat_swarm_next", Arguments: w.args("wait_secs", secs), Meta: w.meta}
	p.SetProgressToken(token)
	x := &waiting{w: w, done: make(chan outcome, 1), progress: progress}
	go func() {
		res, err := w.c.cs.CallTool(context.Background(), p)
		x.done <- outcome{res, err}
	}()
	return x
}

// told waits for the progress notification that says the call waits, and
// fails if the call ended first.
func (x *waiting) told(t *testing.T, token string) *mcp.ProgressNotificationParams {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case p := <-x.progress:
			if p.ProgressToken == token {
				return p
			}
		case o := <-x.done:
			t.Fatalf("next ended before any progress: %v", x.w.c.result("chat_swarm_next", o.res, o.err).Data)
		case <-deadline:
			t.Fatalf("no progress notification for %s within 20 s", token)
		}
	}
}

// result waits for the call's result.
func (x *waiting) result(t *testing.T) result {
	t.Helper()
	select {
	case o := <-x.done:
		return x.w.c.at(t).result("chat_swarm_next", o.res, o.err)
	case <-time.After(40 * time.Second):
		t.Fatal("next did not return within 40 s")
	}
	return result{}
}

// ended reports whether the call has returned (without taking its result).
func (x *waiting) ended() bool { return len(x.done) > 0 }

// TestSwarmNextWakes: two workers wait in chat_swarm_next with progress
// tokens on stateful sessions; each is told it waits, and each returns
// with the task dispatched for it while it waits: the one a task prefers
// first, while the other goes on waiting.
func TestSwarmNextWakes(t *testing.T) {
	f := newFixture(t)
	owner := f.connectAt(f.token("ada", ownerScopes...), stateful).at(t)
	tok := f.token("ada", workerScopes...)
	ca, pa := f.progressClient(tok, stateful)
	cb, pb := f.progressClient(tok, stateful)
	a, b := &worker{c: ca.at(t)}, &worker{c: cb.at(t)}
	cr := owner.ok("chat_swarm_create", obj{"worker_limit": 2})
	swarmID := cr.str("swarm", "swarm_id")
	a.join(swarmID, cr.str("invite"), "a")
	b.join(swarmID, cr.str("invite"), "b")

	wa, wb := a.wait(25, pa, "wait-a"), b.wait(25, pb, "wait-b")
	for _, x := range []struct {
		w     *waiting
		token string
	}{{wa, "wait-a"}, {wb, "wait-b"}} {
		p := x.w.told(t, x.token)
		if p.Progress <= 0 || p.Total != 25 || p.Message == "" {
			t.Fatalf("progress = %+v, want progress of a total of 25 s, with a message", p)
		}
	}

	forB := owner.ok("chat_swarm_dispatch", obj{"swarm_id": swarmID, "task_key": "for-b", "prompt": "b's", "preferred_worker_id": b.id}).str("task", "task_id")
	rb := wb.result(t)
	if rb.str("state") != "task" || rb.str("task", "task_id") != forB || rb.str("task", "prompt") != "b's" {
		t.Fatalf("B's next = %v", rb.Data)
	}
	if wa.ended() {
		t.Fatalf("A's next ended on a task for B: %v", wa.result(t).Data)
	}
	forAny := owner.ok("chat_swarm_dispatch", obj{"swarm_id": swarmID, "task_key": "for-any", "prompt": "anyone's"}).str("task", "task_id")
	if ra := wa.result(t); ra.str("state") != "task" || ra.str("task", "task_id") != forAny || ra.str("task", "worker_id") != a.id {
		t.Fatalf("A's next = %v", ra.Data)
	}
}

// TestSwarmNextProgressStateless: on the stateless protocol a wait with a
// progress token is answered as a stream: its progress notifications
// arrive, then its answer.
func TestSwarmNextProgressStateless(t *testing.T) {
	f := newFixture(t)
	owner := f.connectAt(f.token("ada", ownerScopes...), stateless).at(t)
	c, progress := f.progressClient(f.token("ada", workerScopes...), stateless)
	w := &worker{c: c.at(t), key: carrierKey()}
	cr := owner.ok("chat_swarm_create", obj{"worker_limit": 1})
	w.join(cr.str("swarm", "swarm_id"), cr.str("invite"), "w")
	if r := w.wait(6, progress, "wait-stateless").result(t); r.str("state") != "idle" {
		t.Fatalf("next = %v, want idle", r.Data)
	}
	if len(progress) == 0 {
		t.Fatal("no progress notification reached a stateless client that asked for them")
	}
}
