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
// and see /mcp refuse it; act as the human half of the loop — answer a
// question, add and retire a standing instruction, resolve a todo and a
// risk, cancel a task, close a swarm once its cancelled task is settled —
// each refused without the scope and from another group, each surviving a
// reload, and what it did read back in the brief a model gets; then open
// every page on a desktop and a phone, where none may scroll sideways.
// Every page is checked for rendering (its stylesheet applied, no template
// error text, no secret: the planted one, the tokens') and photographed
// (into a temporary directory, or CONTINUO_E2E_SHOTS to keep them); each
// screenshot must be a real rendering.
func TestDashboardInBrowser(t *testing.T) {
	node, chromium := browserScripts(t)
	// The script spends at most its budget (it fails the step under way
	// once it is spent) within the limit on its process; the run it
	// watches waits for it at most that long.
	const budget, limit = 240 * time.Second, 270 * time.Second
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
	planted := "ghp_7X8s51fbLtByHwiUmrCaoND5bgfTFAbGOUBw" // a token of a real one's entropy
	sid := must(t, admin, "work_on_project", map[string]any{"project": "demo", "instruction": "Ship the dashboard for people"})["session_id"].(string)
	notes := map[string]string{} // kind → the note's ID
	for _, n := range []map[string]any{
		{"kind": "decision", "text": "Pages are server-rendered; script only enhances"},
		{"kind": "todo", "text": "Photograph every page"},
		{"kind": "risk", "text": "A wide table may push the page sideways on a phone"},
		{"kind": "question", "text": "Which port should the demo listen on?"},
		{"kind": "guidance", "text": "Never deploy on a Friday"},
		{"kind": "progress", "text": "deploy key " + planted + " rotated"},
	} {
		n["session_id"] = sid
		notes[n["kind"].(string)] = must(t, admin, "post_session_message", n)["message"].(map[string]any)["message_id"].(string)
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

	// The admin's swarm to close: a task its worker runs (the owner cancels
	// it, and settles it when the worker does not answer) and a queued one
	// the owner cancels.
	created2 := must(t, admin, "chat_swarm_create", map[string]any{"worker_limit": 1})
	closeSwarm := created2["swarm"].(map[string]any)["swarm_id"].(string)
	w2 := joinSwarm(t, ws, closeSwarm, created2["invite"].(string), 1, carrierKey())
	running := must(t, admin, "chat_swarm_dispatch", map[string]any{"swarm_id": closeSwarm, "task_key": "index", "prompt": "rebuild the index",
		"preferred_worker_id": w2.id})["task"].(map[string]any)["task_id"].(string)
	if d := must(t, ws, "chat_swarm_next", w2.args("wait_secs", 0)); d["state"] != "task" {
		t.Fatalf("next: %v", d)
	}
	must(t, ws, "chat_swarm_ack", w2.args("task_id", running))
	queued := must(t, admin, "chat_swarm_dispatch", map[string]any{"swarm_id": closeSwarm, "task_key": "later", "prompt": "tidy up",
		"preferred_worker_id": w2.id})["task"].(map[string]any)["task_id"].(string)

	// Who is refused: a token of the admin's group that may only read
	// sessions, and a member of another group with every scope of a user.
	reader := token(t, dd, "crew", "sessions:read")
	cli(t, dd, "group", "create", "others")
	cli(t, dd, "principal", "create", "mallory", "--group", "others")
	stranger := token(t, dd, "mallory", "sessions:read,sessions:write,swarm:own")

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
	secrets := map[string]string{"the planted credential": planted, "the reader's token": reader, "the stranger's token": stranger,
		"the sign-in token": srv.Admin, "the sign-in token's secret part": strings.TrimPrefix(srv.Admin, auth.TokenPrefix),
		"the revoked token": bob.Token, "the revoked token's secret part": strings.TrimPrefix(bob.Token, auth.TokenPrefix)}
	plan := map[string]any{"base": srv.Base, "secret": srv.Admin, "session": sid, "task": "Ship the dashboard", "run": run["run_id"],
		"gate": gate, "runLines": runLines, "swarm": swarmID, "worker": w.id, "continuation": cn["continuation_id"], "doubtTask": taskID,
		"revokeToken": bob.Token, "revokeTokenID": bob.TokenID, "secrets": secrets, "shots": shots, "budgetMs": budget.Milliseconds(),
		"question": notes["question"], "todo": notes["todo"], "risk": notes["risk"], "guidance": notes["guidance"],
		"reader": reader, "stranger": stranger, "closeSwarm": closeSwarm, "runningTask": running, "queuedTask": queued,
		"pages": dashboardPages, "project": "demo"}
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
	node.runWithin(t, limit, "dashboard.mjs", 17, "--plan", planFile, "--chromium", chromium)
	if err := <-bound; err != nil {
		t.Fatal(err)
	}

	// Every page twice (a desktop and a phone), and the steps' own.
	shotFiles, _ := filepath.Glob(filepath.Join(shots, "*.png"))
	if want := 2*len(dashboardPages) + 7; len(shotFiles) != want {
		t.Fatalf("%d screenshots, want %d: %v", len(shotFiles), want, shotFiles)
	}
	for _, f := range shotFiles {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel() // decoding a PNG is slow under -race
			checkScreenshot(t, f)
		})
	}
	st := must(t, admin, "chat_swarm_status", map[string]any{"swarm_id": swarmID, "task_id": taskID})
	if task := st["task"].(map[string]any); task["state"] != "queued" {
		t.Errorf("the requeued task is %v", task)
	}

	// What the person did in the browser, the next model reads in the
	// brief: the answer, the new standing instruction; the retired one,
	// the resolved todo and risk are gone from it; what was refused is
	// nowhere.
	brief := must(t, admin, "read_session_handoff", map[string]any{"session_id": sid})
	b, _ = json.Marshal(brief)
	text := string(b)
	for _, want := range []string{dashboardAnswer, dashboardGuidance} {
		if !strings.Contains(text, want) {
			t.Errorf("the brief lacks %q: %s", want, text)
		}
	}
	for _, gone := range []string{"Never deploy on a Friday", "Photograph every page", "A wide table may push", dashboardRefused} {
		if strings.Contains(text, gone) {
			t.Errorf("the brief still holds %q: %s", gone, text)
		}
	}
	all, _ := json.Marshal(must(t, admin, "list_session_messages", map[string]any{"session_id": sid, "limit": 100}))
	if strings.Contains(string(all), dashboardRefused) {
		t.Errorf("a refused action wrote a note: %s", all)
	}
	closed := must(t, admin, "chat_swarm_status", map[string]any{"swarm_id": closeSwarm})
	if sw := closed["swarm"].(map[string]any); sw["state"] != "closed" {
		t.Errorf("the swarm closed in the browser is %v", sw["state"])
	}
}

// The texts the browser writes (dashboard.mjs): an answer and a standing
// instruction, and what every refused action tries to write.
const (
	dashboardAnswer   = "Port 8080, behind the proxy"
	dashboardGuidance = "Keep every page usable on a phone"
	dashboardRefused  = "written by a refused action"
)

// dashboardPages are the pages dashboard.mjs opens on a desktop and a
// phone, and photographs; each must not scroll sideways. {session},
// {question}, {run}, {swarm}, {task} and {project} are the plan's.
var dashboardPages = []string{"/", "/p/{project}", "/s/{session}", "/s/{session}/m/{question}", "/p/{project}/evidence",
	"/p/{project}/runs", "/r/{run}", "/swarms", "/w/{swarm}", "/w/{swarm}/tasks", "/w/{swarm}/tasks/{task}", "/admin",
	"/admin/principals", "/admin/groups", "/admin/tokens", "/admin/projects", "/admin/oauth", "signed out /"}
