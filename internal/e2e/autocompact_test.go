package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo/internal/provider/providertest"
)

// TestAutoCompact is the live rollover witness: the server runs the
// process carrier runtime, the swarm's compaction threshold is low, and a
// `continuo worker` (whose tasks run on a local OpenAI-compatible server)
// works until its context pressure reaches it. Then, with no manual step,
// the server prepares a continuation, mints the new carrier's token and
// starts `continuo worker` with the ticket in its environment; the new
// carrier redeems it, the old one stops by itself with exit status 0
// (continued; fenced if the transfer beat its last report; revoked, the
// token the server started it with, if it is one the server started), and
// the work goes on. The witness holds the server to all of it: one worker_id; the
// epoch +1 per rollover, each epoch bound once, by a carrier the server
// started (its operation succeeded, its log says it joined); the retired
// first carrier's submit refused with carrier_fenced; a task dispatched
// to the worker afterwards run by its newest carrier; each carrier's own
// context estimate on record; every task run exactly once; and no storm:
// the carriers the server started are its rollovers plus its retries (one
// per continuation it prepared), and each epoch ran a task before it
// rolled over.
//
// It runs with two policies: a budget of 2,000 tokens whose threshold two
// of the 600-token prompts reach, and a small budget of 4,000 tokens
// whose threshold (1,000) the reserve (500), the capsule and one prompt
// reach: every task trips it, and each new epoch takes its one task before
// it rolls over again — as many carriers as tasks, never more.
func TestAutoCompact(t *testing.T) {
	for _, c := range []struct {
		name      string
		compact   map[string]any
		minEpochs int
	}{
		{"budget 2000", map[string]any{"budget_tokens": 2000, "threshold": 0.5, "reserve_tokens": 0}, 2},
		{"budget 4000", map[string]any{"budget_tokens": 4000, "threshold": 0.25, "reserve_tokens": 500}, 5},
	} {
		t.Run(c.name, func(t *testing.T) { autoCompact(t, c.compact, c.minEpochs) })
	}
}

func autoCompact(t *testing.T, compaction map[string]any, minEpochs int) {
	model := providertest.NewServer(t, providertest.Script{Deltas: []string{"Looks ", "good."}, APIKey: fakeKey})
	config := delegationConfig(t, map[string]string{"chat": "openai-chat " + model.BaseURL()})
	f, err := os.OpenFile(config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "[swarm]\nruntime = \"process\"\nprocess_command = [%q, \"worker\", \"--provider\", \"chat\", \"--project\", \"demo\"]\n", binary)
	f.Close()
	dd := dataDir(t, "sqlite")
	srv := startEnv(t, dd, gitRepo(t), []string{"E2E_MODEL_KEY=" + fakeKey}, "--config", config)
	owner := connectAt(t, at(srv.URL, "swarm"), srv.Admin, "2025-11-25")
	created := must(t, owner, "chat_swarm_create", map[string]any{"worker_limit": 1, "policy": map[string]any{"compaction": compaction}})
	swarmID := created["swarm"].(map[string]any)["swarm_id"].(string)
	// The test names the first carrier's key, so that it can speak as that
	// carrier once the carrier is retired.
	keyA := carrierKey()
	first := startWorker(t, dd, srv, created["worker_endpoint"].(string), swarmID, "CONTINUO_INVITE="+created["invite"].(string), "CONTINUO_CARRIER_KEY="+keyA)
	const tasks = 6
	keys := make([]string, 0, tasks+1)
	ids := map[string]string{} // task_key → task_id
	for i := range tasks {
		key := fmt.Sprint("t", i)
		// Each prompt names its task, so that the model's requests count
		// each task's executions; 2,400 bytes of it are 600 tokens.
		d := must(t, owner, "chat_swarm_dispatch", map[string]any{"swarm_id": swarmID, "task_key": key,
			"prompt": "[" + key + "] " + strings.Repeat("Review this change carefully. ", 80)})
		keys, ids[key] = append(keys, key), d["task"].(map[string]any)["task_id"].(string)
	}
	var carrierLog string // the log of the carriers the server started, once known
	stopped := false      // the server, before the export
	t.Cleanup(func() {
		if t.Failed() && !stopped {
			st := must(t, owner, "chat_swarm_status", map[string]any{"swarm_id": swarmID})
			t.Logf("failed: %v", must(t, owner, "chat_swarm_status", map[string]any{"swarm_id": swarmID, "state": "failed"}))
			b, _ := os.ReadFile(carrierLog)
			t.Logf("status: %v\nserver:\n%s\nfirst carrier:\n%s\nstarted carriers:\n%s", st, srv.stderr.String(), first.out.String(), b)
		}
	})
	for _, r := range collectAll(t, owner, swarmID, tasks) {
		if r != "Looks good." {
			t.Errorf("a result is %q", r)
		}
	}
	out, err := first.exited(t)
	if err != nil || !strings.Contains(out, "stopped (continued)") && !strings.Contains(out, "stopped (fenced)") {
		t.Fatalf("the first carrier, once replaced, must stop by itself with exit status 0: %v\n%s", err, out)
	}
	w := settled(t, owner, swarmID)
	workerID, epoch := w["worker_id"].(string), w["epoch"].(float64)
	if epoch < float64(minEpochs) || epoch > tasks {
		t.Fatalf("after %d tasks of 600 tokens with %v the worker is at epoch %v, want %d..%d rollovers (one task at least in each epoch)",
			tasks, compaction, epoch, minEpochs, tasks)
	}
	carrierLog = filepath.Join(dd, "carriers", workerID+".log")

	// The retired first carrier, as itself (its token, its key): its next
	// says continued, its checkpoint is fenced, and its submit — the
	// replay of its first task's, which it would send had the answer been
	// lost, and a changed one at the worker's current epoch — is refused
	// with carrier_fenced, leaving the task as it was collected.
	o := &swarmOwner{cs: owner, swarmID: swarmID}
	a := &swarmWorker{cs: connectAt(t, at(srv.URL, "worker"), srv.Admin, "2026-07-28"), id: workerID, key: keyA}
	onlyCarrier(t, o, &swarmWorker{id: workerID, epoch: epoch}, false, []*swarmWorker{a}, nil)
	for _, submit := range []struct {
		epoch  float64
		result string
	}{{0, "Looks good."}, {epoch, "Looks different."}} {
		a.epoch = submit.epoch
		r := call(t, a.cs, "chat_swarm_submit", a.args("task_id", ids["t0"], "result", submit.result))
		fencedCode(t, a, "submit", r, epoch)
	}
	t0 := must(t, owner, "chat_swarm_status", map[string]any{"swarm_id": swarmID, "task_id": ids["t0"]})["task"].(map[string]any)
	if t0["state"] != "collected" || t0["result"] != "Looks good." {
		t.Fatalf("task t0 after the retired carrier's submits: %v", t0)
	}

	// A task for the worker reaches its newest carrier, which runs it;
	// short, it trips nothing.
	d := must(t, owner, "chat_swarm_dispatch", map[string]any{"swarm_id": swarmID, "task_key": "after", "prompt": "[after] Review change seven.",
		"preferred_worker_id": workerID})
	keys, ids["after"] = append(keys, "after"), d["task"].(map[string]any)["task_id"].(string)
	if r := collectAll(t, owner, swarmID, 1); r[0] != "Looks good." {
		t.Errorf("the result of the task after the rollovers is %q", r[0])
	}
	if w := settled(t, owner, swarmID); w["epoch"] != epoch {
		t.Fatalf("the task after the rollovers moved the worker on: %v", w)
	}
	must(t, owner, "chat_swarm_close", map[string]any{"swarm_id": swarmID})
	// Each carrier the server started stops by itself: the newest when
	// the swarm closes, each one before it when replaced. A carrier that
	// stops prints why and exits 0; one that fails prints no such line.
	log := waitLog(t, carrierLog, "continuo worker: stopped (", int(epoch))
	// No storm: the carriers started are the planner's rollovers plus its
	// retries, as its log and /metrics count them.
	started := strings.Count(srv.stderr.String(), "a replacement carrier started")
	m := scrape(t, srv.Base)
	if started != int(epoch) || m[`continuo_swarm_carrier_starts_total{outcome="started"}`] != epoch ||
		m["continuo_swarm_rollovers_total"]+m["continuo_swarm_carrier_retries_total"] != epoch ||
		m["continuo_swarm_continuations_bound_total"] != epoch || m["continuo_swarm_workers_compact_blocked"] != 0 {
		t.Errorf("%d carriers started (log) for %v rollovers; metrics %v", started, epoch, m)
	}
	srv.stop()
	stopped = true

	// Zero duplicate executions: one model request per task, one attempt
	// per task, every task collected.
	for _, key := range keys {
		n := 0
		for _, r := range model.Requests() {
			if bytes.Contains(r.Body, []byte("["+key+"]")) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("the model got %d requests for task %s", n, key)
		}
	}
	if n := len(model.Requests()); n != len(keys) {
		t.Errorf("the model got %d requests for %d tasks", n, len(keys))
	}
	rows := exported(t, dd, filepath.Join(t.TempDir(), "export.jsonl"))
	attempts := map[string]map[string]any{} // task_id → its attempt
	for _, at := range rows["attempts"] {
		id := at["task_id"].(string)
		if attempts[id] != nil || at["number"] != float64(1) || at["state"] != "submitted" || at["worker_id"] != workerID {
			t.Errorf("attempt %v (the task's first: %v)", at, attempts[id])
		}
		attempts[id] = at
	}
	for _, tk := range rows["tasks"] {
		if tk["state"] != "collected" || attempts[tk["id"].(string)] == nil {
			t.Errorf("task %v, attempt %v", tk, attempts[tk["id"].(string)])
		}
	}
	if len(rows["tasks"]) != len(keys) || len(attempts) != len(keys) {
		t.Errorf("%d tasks and %d attempts, want %d of each", len(rows["tasks"]), len(attempts), len(keys))
	}
	// The task after the rollovers ran at the newest epoch: its carrier's.
	if at := attempts[ids["after"]]; at["epoch"] != epoch {
		t.Errorf("the task after the rollovers ran at epoch %v, want %v: %v", at["epoch"], epoch, at)
	}

	// One worker; epoch +1 per rollover: as many continuations as epochs,
	// each from source_epoch to source_epoch+1, each epoch bound once and
	// its carrier retired when the next was bound. Every continuation is
	// the planner's (no one prepared or approved one), its carrier started
	// by the server (operation succeeded, a process recorded).
	if ws := rows["workers"]; len(ws) != 1 || ws[0]["id"] != workerID || ws[0]["epoch"] != epoch {
		t.Errorf("workers %v, want %s at epoch %v", ws, workerID, epoch)
	}
	targets := map[float64]int{}
	for _, cn := range rows["continuations"] {
		targets[cn["target_epoch"].(float64)]++
		switch {
		case cn["worker_id"] != workerID || cn["target_epoch"] != cn["source_epoch"].(float64)+1 || cn["state"] != "bound":
			t.Errorf("continuation %v is not one bound rollover of %s by one epoch", cn, workerID)
		case cn["path"] != "ticket" || cn["requested_by"] != "planner" || cn["approved_by"] != "":
			t.Errorf("continuation %v was not the planner's alone", cn)
		case cn["carrier_op"] != "succeeded" || cn["carrier_proc"] == "" || cn["target_source"] != "carrier_key":
			t.Errorf("continuation %v: its carrier was not one the server started", cn)
		}
	}
	carriers := map[float64]int{}
	for _, c := range rows["carriers"] {
		e := c["epoch"].(float64)
		carriers[e]++
		if want := map[bool]string{true: "active", false: "retired"}[e == epoch]; c["worker_id"] != workerID || c["state"] != want {
			t.Errorf("carrier %v, want %s", c, want)
		}
	}
	if len(rows["continuations"]) != int(epoch) || len(rows["carriers"]) != int(epoch)+1 {
		t.Errorf("%d continuations and %d carriers at epoch %v", len(rows["continuations"]), len(rows["carriers"]), epoch)
	}
	for e := float64(0); e <= epoch; e++ {
		if carriers[e] != 1 || e > 0 && targets[e] != 1 {
			t.Errorf("epoch %v: %d carriers bound, %d continuations to it; want 1 of each", e, carriers[e], targets[e])
		}
	}

	// The server's carriers: each of them joined as the worker's
	// replacement at its epoch, and each stopped once by itself — replaced,
	// but the newest, which stopped when the swarm closed.
	for e := 1; e <= int(epoch); e++ {
		if !strings.Contains(log, fmt.Sprintf(`msg="worker joined" worker=%s epoch=%d continued=true`, workerID, e)) {
			t.Errorf("no started carrier says it joined at epoch %d:\n%s", e, log)
		}
	}
	replaced := strings.Count(log, "stopped (continued)") + strings.Count(log, "stopped (fenced)") + strings.Count(log, "stopped (revoked)")
	if n := strings.Count(log, "continuo worker: stopped ("); n != int(epoch) || replaced != int(epoch)-1 || !strings.Contains(log, "stopped (closed)") {
		t.Errorf("%d started carriers stopped, %d of them replaced; want %v, %v and the newest closed:\n%s", n, replaced, epoch, epoch-1, log)
	}

	// Each epoch ran a task before it rolled over: the capsule alone never
	// made it compact_required.
	for e := float64(0); e < epoch; e++ {
		ran := false
		for _, at := range rows["attempts"] {
			ran = ran || at["epoch"] == e
		}
		if !ran {
			t.Errorf("epoch %v rolled over without a task", e)
		}
	}

	// Each carrier reports its own context estimate, labelled as one: the
	// newest epoch's ledger (the one kept in full) holds its carrier's.
	estimates := 0
	for _, l := range rows["context_ledger"] {
		if l["epoch"] == epoch && l["source"] == "estimate" && strings.HasPrefix(l["basis"].(string), "reference worker") {
			estimates++
		}
	}
	if estimates != 1 {
		t.Errorf("%d estimates of the newest carrier in the ledger: %v", estimates, rows["context_ledger"])
	}
	t.Logf("%d tasks, worker at epoch %v after as many automatic rollovers", len(keys), epoch)
}

// scrape reads the swarm's series from a server's /metrics: each sample's
// name (with its labels) and value.
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(name, "continuo_swarm_") {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("/metrics: %q", line)
		}
		out[name] = v
	}
	return out
}
