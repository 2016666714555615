package e2e

import (
	"fmt"
	"os"
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
// carrier redeems it, the old one stops by itself (continued), and the
// work goes on: same worker, the epoch +1 per rollover, every task run
// exactly once.
func TestAutoCompact(t *testing.T) {
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
	owner := connectAt(t, srv.URL, srv.Admin, "2025-11-25")
	// 1,000 tokens trip it: two of the 600-token prompts below.
	created := must(t, owner, "chat_swarm_create", map[string]any{"worker_limit": 1,
		"policy": map[string]any{"compaction": map[string]any{"budget_tokens": 2000, "threshold": 0.5, "reserve_tokens": 0}}})
	swarmID := created["swarm"].(map[string]any)["swarm_id"].(string)
	first := startWorker(t, dd, srv, swarmID, "CONTINUO_INVITE="+created["invite"].(string))
	const tasks = 6
	prompt := strings.Repeat("Review this change carefully. ", 80) // 2,400 bytes
	for i := range tasks {
		must(t, owner, "chat_swarm_dispatch", map[string]any{"swarm_id": swarmID, "task_key": fmt.Sprint("t", i), "prompt": prompt})
	}
	t.Cleanup(func() {
		if t.Failed() {
			st := must(t, owner, "chat_swarm_status", map[string]any{"swarm_id": swarmID})
			t.Logf("failed: %v", must(t, owner, "chat_swarm_status", map[string]any{"swarm_id": swarmID, "state": "failed"}))
			t.Logf("status: %v\nserver:\n%s\nfirst carrier:\n%s", st, srv.stderr.String(), first.out.String())
		}
	})
	for _, r := range collectAll(t, owner, swarmID, tasks) {
		if r != "Looks good." {
			t.Errorf("a result is %q", r)
		}
	}
	out, err := first.exited(t)
	if err != nil || !strings.Contains(out, "stopped (continued)") {
		t.Fatalf("the first carrier: %v\n%s", err, out)
	}
	st := must(t, owner, "chat_swarm_status", map[string]any{"swarm_id": swarmID})
	ws := st["workers"].([]any)
	if len(ws) != 1 {
		t.Fatalf("workers: %v", ws)
	}
	epoch := ws[0].(map[string]any)["epoch"].(float64)
	if epoch < 2 {
		t.Errorf("after %d tasks of 600 tokens with a 1,000-token threshold the worker is at epoch %v, want at least 2 rollovers", tasks, epoch)
	}
	if n := len(model.Requests()); n != tasks {
		t.Errorf("the model got %d requests for %d tasks", n, tasks)
	}
	if counts := st["task_counts"].(map[string]any); counts["collected"] != float64(tasks) || len(counts) != 1 {
		t.Errorf("task counts %v", counts)
	}
	t.Logf("%d tasks, worker at epoch %v after as many automatic rollovers", tasks, epoch)

}
