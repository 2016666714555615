package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestSwarmTypeScriptWorker runs interop/swarm-worker.mjs: two workers on
// the official TypeScript MCP clients (the v1 SDK at 2025-11-25, carried by
// its session; the v2 client on the stateless 2026-07-28, carried by a
// carrier_key) work a swarm whose owner, here, dispatches and collects 40
// tasks. Each task is collected at its first attempt with the result its
// worker derived from the prompt, and both kinds of carrier joined.
func TestSwarmTypeScriptWorker(t *testing.T) {
	const tasks = 40
	node := nodeScripts(t)
	data := dataDir(t, "sqlite")
	srv := start(t, data, t.TempDir())
	ownerTok, workerTok := swarmTokens(t, data)
	o := createSwarm(t, connectAt(t, at(srv.URL, "swarm"), ownerTok, "2025-11-25"), nil, 2, nil)
	owned := make(chan error, 1)
	go func() { owned <- ownTypeScriptRun(t.Context(), o, tasks) }()
	// Two lines per worker besides the tasks: the swarm closed, for each.
	node.run(t, "swarm-worker.mjs", tasks+2, "--url", at(srv.URL, "worker"), "--token", workerTok, "--swarm", o.swarmID, "--invite", o.invite)
	if err := <-owned; err != nil {
		t.Fatal(err)
	}
}

// ownTypeScriptRun is the owner's side: dispatch, wait for every result
// (polling the counts, with a deadline), collect and check each, close.
func ownTypeScriptRun(ctx context.Context, o *swarmOwner, tasks int) error {
	ctx, cancel := context.WithTimeout(ctx, 100*time.Second)
	defer cancel()
	prompts := map[string]string{}
	for i := range tasks {
		r, err := o.call(ctx, "chat_swarm_dispatch", map[string]any{"task_key": fmt.Sprintf("k%d", i), "prompt": swarmPrompt(i)})
		if err != nil || r.IsError {
			return fmt.Errorf("dispatch %d: %v %v", i, err, r.Data)
		}
		prompts[r.Data["task"].(map[string]any)["task_id"].(string)] = swarmPrompt(i)
	}
	for {
		r, err := o.call(ctx, "chat_swarm_status", map[string]any{})
		if err != nil || r.IsError {
			return fmt.Errorf("status: %v %v", err, r.Data)
		}
		if r.Data["task_counts"].(map[string]any)["result_ready"] == float64(tasks) && len(r.Data["workers"].([]any)) == 2 {
			sources := map[any]bool{}
			for _, w := range r.Data["workers"].([]any) {
				sources[w.(map[string]any)["carrier_source"]] = true
			}
			if len(sources) != 2 || !sources["mcp_session"] || !sources["carrier_key"] {
				return fmt.Errorf("workers: %v", r.Data["workers"])
			}
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not every result was ready in time: %v", r.Data["task_counts"])
		case <-time.After(50 * time.Millisecond): // polling the counts, with a deadline
		}
	}
	for id, prompt := range prompts {
		r, err := o.call(ctx, "chat_swarm_collect", map[string]any{"task_id": id})
		if err != nil || r.IsError {
			return fmt.Errorf("collect %s: %v %v", id, err, r.Data)
		}
		task := r.Data["task"].(map[string]any)
		if want := swarmResult(prompt, task["worker_id"].(string)); task["result"] != want || task["attempt"] != float64(1) {
			return fmt.Errorf("task %s collected as %v, want attempt 1 with result %q", id, task, want)
		}
	}
	return o.close(ctx)
}
