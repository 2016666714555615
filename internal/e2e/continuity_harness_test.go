package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Helpers of the worker continuity tests (CONTRACT.md §8): a carrier is a
// swarmWorker value — a connection, the worker it names, the epoch it
// holds and its carrier_key (stateless) — so that the old carrier of a
// worker and its new one are two values naming one worker_id.

// prepare has the owner prepare a continuation of worker id: the ticket and
// the continuation, which must continue the worker from epoch from.
func prepare(t *testing.T, o *swarmOwner, id string, from float64) (string, map[string]any) {
	t.Helper()
	return prepared(t, must(t, o.cs, "chat_swarm_prepare_continuation", prepareArgs(o, id)), id, from)
}

// prepareArgs are chat_swarm_prepare_continuation's arguments for worker id.
func prepareArgs(o *swarmOwner, id string) map[string]any {
	return map[string]any{"swarm_id": o.swarmID, "worker_id": id, "reason": "rollover"}
}

// prepared checks what chat_swarm_prepare_continuation answered for
// worker id at epoch from (as prepare does), and returns its ticket and
// continuation.
func prepared(t *testing.T, p map[string]any, id string, from float64) (string, map[string]any) {
	t.Helper()
	cn := p["continuation"].(map[string]any)
	ticket, _ := p["ticket"].(string)
	if ticket == "" || cn["source_epoch"] != from || cn["target_epoch"] != from+1 || cn["state"] != "pending" || cn["worker_id"] != id {
		t.Fatalf("prepare from epoch %v: %v", from, p)
	}
	return ticket, cn
}

// redeemArgs are chat_swarm_join's arguments for carrier c redeeming ticket.
func redeemArgs(swarmID, ticket string, c *swarmWorker) map[string]any {
	a := map[string]any{"swarm_id": swarmID, "continuation_ticket": ticket}
	if c.key != "" {
		a["carrier_key"] = c.key
	}
	return a
}

// redeem has carrier c redeem ticket, which must move worker c.id to
// epoch c.epoch (replayed: as a re-read of c's own receipt).
func redeem(t *testing.T, c *swarmWorker, swarmID, ticket string, replayed bool) map[string]any {
	t.Helper()
	r := must(t, c.cs, "chat_swarm_join", redeemArgs(swarmID, ticket, c))
	w := r["worker"].(map[string]any)
	if w["worker_id"] != c.id || w["epoch"] != c.epoch || w["carrier_state"] != "active" || (r["replayed"] == true) != replayed {
		t.Fatalf("redeem (replayed %v) for worker %s at epoch %v: %v", replayed, c.id, c.epoch, r)
	}
	return r
}

// carrierFor is a new carrier of worker w at the epoch after w's, on cs
// with key (stateless; "" for a session).
func carrierFor(w *swarmWorker, cs *mcp.ClientSession, key string) *swarmWorker {
	return &swarmWorker{n: w.n, cs: cs, id: w.id, epoch: w.epoch + 1, key: key}
}

// checkpoint records a checkpoint through carrier c, which must be the
// worker's active carrier.
func checkpoint(t *testing.T, c *swarmWorker, summary string) {
	t.Helper()
	r := must(t, c.cs, "chat_swarm_checkpoint", c.args("checkpoint", map[string]any{"summary": summary, "next_step": "wait for a task"}))
	if w := r["worker"].(map[string]any); w["epoch"] != c.epoch || w["checkpoint_at"] == nil {
		t.Fatalf("checkpoint at epoch %v: %v", c.epoch, r)
	}
}

// fencedCode checks that a worker call through c is refused with
// carrier_fenced, naming the worker's current epoch.
func fencedCode(t *testing.T, c *swarmWorker, what string, r result, epoch float64) {
	t.Helper()
	e, _ := r.Data["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	if r.code() != "carrier_fenced" || d["epoch"] != epoch {
		t.Fatalf("%s through a carrier that is not the worker's (it holds epoch %v; the worker is at %v): %v", what, c.epoch, epoch, r.Data)
	}
}

// oneCarrier checks, through the tools, that active is worker's only
// active carrier at epoch active.epoch: its next (not waiting) answers
// state (idle; compact_required while a continuation is prepared),
// while each retired carrier's next answers continued and each carrier
// never bound (a loser of a race, a ticket not yet redeemed) is
// carrier_fenced; every one of them is fenced from a checkpoint; and the
// owner sees one worker, at that epoch, with an active carrier.
func oneCarrier(t *testing.T, o *swarmOwner, active *swarmWorker, state string, retired, unbound []*swarmWorker) {
	t.Helper()
	if r := must(t, active.cs, "chat_swarm_next", active.args("wait_secs", 0)); r["state"] != state {
		t.Fatalf("the active carrier's next at epoch %v: %v, want %s", active.epoch, r, state)
	}
	onlyCarrier(t, o, active, false, retired, unbound)
}

// onlyCarrier is oneCarrier without the call through the active carrier
// (which would claim a task queued for the worker): the retired carriers
// hear continued, the unbound ones are fenced, and the owner sees one
// worker at active's epoch with an active carrier (or, when lostOK, a lost
// one: its lease ran out or its server died while it held a task).
func onlyCarrier(t *testing.T, o *swarmOwner, active *swarmWorker, lostOK bool, retired, unbound []*swarmWorker) {
	t.Helper()
	for _, c := range retired {
		if r := call(t, c.cs, "chat_swarm_next", c.args("wait_secs", 0)); r.IsError || r.Data["state"] != "continued" {
			t.Fatalf("the next of a carrier retired at epoch %v (the worker is at %v): %v", c.epoch, active.epoch, r.Data)
		}
	}
	for _, c := range unbound {
		fencedCode(t, c, "next", call(t, c.cs, "chat_swarm_next", c.args("wait_secs", 0)), active.epoch)
	}
	for _, c := range append(append([]*swarmWorker(nil), retired...), unbound...) {
		r := call(t, c.cs, "chat_swarm_checkpoint", c.args("checkpoint", map[string]any{"summary": "not mine to write"}))
		fencedCode(t, c, "checkpoint", r, active.epoch)
	}
	st := must(t, o.cs, "chat_swarm_status", map[string]any{"swarm_id": o.swarmID})
	ws := st["workers"].([]any)
	if len(ws) != 1 {
		t.Fatalf("%d workers, want 1: %v", len(ws), ws)
	}
	w := ws[0].(map[string]any)
	if w["worker_id"] != active.id || w["epoch"] != active.epoch || w["carrier_state"] != "active" && (!lostOK || w["carrier_state"] != "lost") {
		t.Fatalf("the owner sees %v, want worker %s at epoch %v with an active carrier (lost too: %v)", w, active.id, active.epoch, lostOK)
	}
}

// answer is what a tool call running in the background returned.
type answer struct {
	r   result
	err error
}

// waitingSession opens a stateful session whose progress notifications
// (a next that waits sends them) are signalled on the returned channel.
func waitingSession(t *testing.T, url, tok string) (*mcp.ClientSession, <-chan struct{}) {
	t.Helper()
	waiting := make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-continuity", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			select {
			case waiting <- struct{}{}:
			default:
			}
		}})
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearerTransport{tok}}, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, waiting
}

// waitInNext starts carrier c's next with wait_secs 25 and a progress
// token, and returns once the server has said that the call waits (its
// first progress notification on waiting); the call's answer comes on the
// returned channel.
func waitInNext(t *testing.T, c *swarmWorker, waiting <-chan struct{}) <-chan answer {
	t.Helper()
	answered := make(chan answer, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "chat_swarm_next", Arguments: c.args("wait_secs", 25)}
		params.SetProgressToken("wait")
		var a answer
		res, err := c.cs.CallTool(t.Context(), params)
		if a.err = err; err == nil {
			a.r.IsError = res.IsError
			b, _ := json.Marshal(res.StructuredContent)
			a.err = json.Unmarshal(b, &a.r.Data)
		}
		answered <- a
	}()
	select {
	case <-waiting:
	case a := <-answered:
		t.Fatalf("next at epoch %v answered before it waited: %v %v", c.epoch, a.r.Data, a.err)
	case <-time.After(20 * time.Second):
		t.Fatal("no progress notification from the waiting next within 20 s")
	}
	return answered
}

// awaitAnswer waits for a background call's answer.
func awaitAnswer(t *testing.T, what string, ch <-chan answer) result {
	t.Helper()
	select {
	case a := <-ch:
		if a.err != nil {
			t.Fatalf("%s: %v", what, a.err)
		}
		return a.r
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no answer within 30 s", what)
	}
	return result{}
}

// exportRows counts the rows of each table in `continuo export` of dataDir.
func exportRows(t *testing.T, dataDir, file string) map[string]int {
	t.Helper()
	rows := map[string]int{}
	for table, rs := range exported(t, dataDir, file) {
		rows[table] = len(rs)
	}
	return rows
}

// exported runs `continuo export` of dataDir into file and returns its
// rows, table by table (column → value; integers as float64).
func exported(t *testing.T, dataDir, file string) map[string][]map[string]any {
	t.Helper()
	cli(t, dataDir, "export", file)
	rows := map[string][]map[string]any{}
	for i, line := range bytes.Split(bytes.TrimSpace(read(t, file)), []byte("\n")) {
		var l struct {
			Table string         `json:"table"`
			Row   map[string]any `json:"row"`
		}
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatalf("export line %d: %v", i+1, err)
		}
		if l.Table != "" {
			rows[l.Table] = append(rows[l.Table], l.Row)
		}
	}
	return rows
}
