package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo/internal/auth"
)

// TestDashboardInBrowser drives the dashboard in headless Chromium
// (interop/dashboard.mjs, playwright-core) against a real serve process,
// as a person uses it: sign in with a token, watch a validation run's
// output arrive live (server-sent events), read a session's handoff brief,
// approve a worker's pending continuation and see its epoch move, requeue
// a task in doubt with the evidence the contract asks for, revoke a token
// and see /mcp refuse it, and open the home, session and swarm pages on a
// phone, where they must not scroll sideways. Every page is checked for
// rendering (its stylesheet applied, no template error text, no secret:
// the planted one, the sign-in token's, the revoked token's) and
// photographed; each screenshot must be a real rendering.
func TestDashboardInBrowser(t *testing.T) {
	node, chromium := browserScripts(t)
	// The script spends at most its budget (it fails the step under way
	// once it is spent) within the limit on its process; the run it
	// watches waits for it at most that long.
	const budget, limit = 150 * time.Second, 180 * time.Second
	// The run prints its first line, then waits for the gate, which the
	// script opens once the page shows that line: the run is still running
	// when the page opens, however long Node and Chromium take to start.
	const runLines = 12
	gate := filepath.Join(t.TempDir(), "gate")
	config := filepath.Join(t.TempDir(), "continuo.toml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`
[projects.demo.checks.slow]
command = ["sh", "-c", "echo line 1; while [ ! -e \"$1\" ]; do sleep 0.05; done; for i in $(seq 2 %d); do echo line $i; sleep 0.1; done", "slow", %q]
timeout_secs = %d
`, runLines, gate, int(limit.Seconds()))), 0o600); err != nil {
		t.Fatal(err)
	}
	dd := dataDir(t, "sqlite")
	srv := start(t, dd, gitRepo(t), "--config", config)
	admin := connect(t, at(srv.URL, "all"), srv.Admin)

	// A session with a brief and notes; one note holds a credential, which
	// is redacted where it is stored and so shown nowhere.
	planted := "ghp_" + strings.Repeat("Z9x", 12)
	sid := must(t, admin, "work_on_project", map[string]any{"project": "demo", "instruction": "Ship the dashboard for people"})["session_id"].(string)
	for _, n := range []map[string]any{
		{"kind": "decision", "text": "Pages are server-rendered; script only enhances"},
		{"kind": "todo", "text": "Photograph every page"},
		{"kind": "progress", "text": "deploy key " + planted + " rotated"},
	} {
		n["session_id"] = sid
		must(t, admin, "post_session_message", n)
	}

	// A swarm: a worker at epoch 0 with a checkpoint, a task of it in
	// doubt (failed with effect unknown), and a new carrier's pending
	// request to continue it.
	created := must(t, admin, "chat_swarm_create", map[string]any{"worker_limit": 2})
	swarmID := created["swarm"].(map[string]any)["swarm_id"].(string)
	cliJSON(t, dd, "principal", "create", "crew", "--group", "admin")
	workerTok := token(t, dd, "crew", "swarm:work")
	ws := connectAt(t, at(srv.URL, "worker"), workerTok, "2026-07-28")
	w := joinSwarm(t, ws, swarmID, created["invite"].(string), 0, carrierKey())
	checkpoint(t, w, "joined")
	taskID := must(t, admin, "chat_swarm_dispatch", map[string]any{"swarm_id": swarmID, "task_key": "migrate", "prompt": "migrate the schema",
		"preferred_worker_id": w.id})["task"].(map[string]any)["task_id"].(string)
	if d := must(t, ws, "chat_swarm_next", w.args("wait_secs", 0)); d["state"] != "task" {
		t.Fatalf("next: %v", d)
	}
	must(t, ws, "chat_swarm_ack", w.args("task_id", taskID))
	must(t, ws, "chat_swarm_fail", w.args("task_id", taskID, "reason", "the connection dropped mid-way", "effect", "unknown"))
	next := carrierFor(w, ws, carrierKey())
	cn := must(t, ws, "chat_swarm_request_continuation", map[string]any{"swarm_id": swarmID, "worker_id": w.id, "source_epoch": 0,
		"carrier_key": next.key})["continuation"].(map[string]any)

	// A token the admin revokes in the browser.
	var bob struct {
		Token   string `json:"token"`
		TokenID string `json:"token_id"`
	}
	cliDecode(t, dd, &bob, "token", "create", "--principal", "bob", "--scopes", "sessions:read")

	// The run the browser watches: it starts now, and waits for the gate.
	run := must(t, admin, "run_validation", map[string]any{"session_id": sid, "check": "slow", "wait_secs": 0})["run"].(map[string]any)

	shots := t.TempDir()
	if d := os.Getenv("CONTINUO_E2E_SHOTS"); d != "" { // keep them to look at
		shots = d
	}
	// No page may show a token's secret: it is shown once, on the answer
	// to its creation in /admin/tokens (TestDashAdminTokenCreate), and
	// these two were made by the CLI.
	secrets := map[string]string{"the planted credential": planted,
		"the sign-in token": srv.Admin, "the sign-in token's secret part": strings.TrimPrefix(srv.Admin, auth.TokenPrefix),
		"the revoked token": bob.Token, "the revoked token's secret part": strings.TrimPrefix(bob.Token, auth.TokenPrefix)}
	plan := map[string]any{"base": srv.Base, "secret": srv.Admin, "session": sid, "task": "Ship the dashboard", "run": run["run_id"],
		"gate": gate, "runLines": runLines, "swarm": swarmID, "worker": w.id, "continuation": cn["continuation_id"], "doubtTask": taskID,
		"revokeToken": bob.Token, "revokeTokenID": bob.TokenID, "secrets": secrets, "shots": shots, "budgetMs": budget.Milliseconds()}
	planFile := filepath.Join(t.TempDir(), "plan.json")
	b, _ := json.Marshal(plan)
	if err := os.WriteFile(planFile, b, 0o600); err != nil {
		t.Fatal(err)
	}

	// The new carrier's side: once the owner approves in the browser, it
	// reads its continuation's status, which binds it.
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	bound := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			r, _, err := swarmCall(ctx, nil, ws, "chat_swarm_continuation_status",
				map[string]any{"swarm_id": swarmID, "carrier_key": next.key})
			if err == nil && !r.IsError {
				if c, _ := r.Data["continuation"].(map[string]any); c["state"] == "bound" {
					bound <- nil
					return
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
		bound <- fmt.Errorf("the continuation was never bound")
	}()
	node.runWithin(t, limit, "dashboard.mjs", 9, "--plan", planFile, "--chromium", chromium)
	if err := <-bound; err != nil {
		t.Fatal(err)
	}

	shotFiles, _ := filepath.Glob(filepath.Join(shots, "*.png"))
	if len(shotFiles) != 9 {
		t.Fatalf("%d screenshots: %v", len(shotFiles), shotFiles)
	}
	for _, f := range shotFiles {
		t.Run(filepath.Base(f), func(t *testing.T) { checkScreenshot(t, f) })
	}
	st := must(t, admin, "chat_swarm_status", map[string]any{"swarm_id": swarmID, "task_id": taskID})
	if task := st["task"].(map[string]any); task["state"] != "queued" {
		t.Errorf("the requeued task is %v", task)
	}
}
