package mcpserver

import (
	"strings"
	"unicode/utf8"

	"github.com/continuo-dev/continuo/internal/workflow"
)

// The server's instructions (CONTRACT.md §1) are ≤ 2,048 characters and
// name only the tools of the endpoint's toolsets: the session guide (the
// recovery sequence first) when the endpoint has the session tools, a few
// lines for each other toolset, and the line on errors. Each other toolset
// has a guide and a one-line pointer; the guides are used when they all
// fit, else the pointers (the tools' descriptions say the rest).

// toolsetGuide is what the instructions say of one toolset besides
// continuity.
type toolsetGuide struct {
	set         Toolsets
	guide, line string
}

// workerPath is the worker endpoint, under the MCP endpoint.
const workerPath = "/x/worker"

var toolsetGuides = []toolsetGuide{
	{ToolsetDelegation,
		"Delegating a turn to another model: list_runners shows the configured providers; start_coding_agent(project, provider_id, instruction, idempotency_key) runs one turn as a run (context_session_id quotes a session's brief as background); follow it with observe_coding_agent (observation_token: only what is new) and stop it with cancel_coding_agent.",
		"Delegating: list_runners, start_coding_agent, observe_coding_agent."},
	{ToolsetSwarm,
		"Chat Swarm owner: chat_swarm_create(worker_limit) returns swarm_id, an invite (shown once) and worker_endpoint (this server's /mcp" + workerPath + "): give all three to each worker conversation. chat_swarm_dispatch(tasks=[…]) queues up to 100 tasks in one call (same task_key, same task); chat_swarm_collect(wait_secs) takes every ready result. chat_swarm_status shows workers and tasks (reconcile_required: settle with chat_swarm_reconcile); chat_swarm_remove_worker retires a stale worker. A worker's conversation that must be replaced: chat_swarm_prepare_continuation, or approve its request with chat_swarm_approve_continuation. chat_swarm_close once every task is settled.",
		"Swarm owner: chat_swarm_create, chat_swarm_dispatch, chat_swarm_collect; workers use /mcp" + workerPath + "."},
	{ToolsetWorker,
		"Chat Swarm worker: chat_swarm_join(swarm_id, invite, label) once; pass its worker_id and epoch to every call. chat_swarm_next(ack=true) waits for a task and starts it; do it; then chat_swarm_submit(task_id, result, next={ack:true}) hands it in and returns your next task (one call per task), or chat_swarm_fail(task_id, reason, effect). chat_swarm_checkpoint records where you stand. next says compact_required: take no task, keep calling next; continued or closed: stop. chat_swarm_leave when done for good. A new conversation carries a worker on here (/mcp" + workerPath + "): chat_swarm_join(swarm_id, continuation_ticket), or chat_swarm_request_continuation, then chat_swarm_continuation_status.",
		"Worker at /mcp" + workerPath + ": chat_swarm_join, chat_swarm_next(ack=true), chat_swarm_submit(next={ack:true})."},
}

// intro opens the instructions of an endpoint without the session guide.
const intro = "Continuo keeps AI work outside the conversation."

// Instructions returns the instructions of an endpoint of the toolsets
// sets.
func Instructions(sets Toolsets) string {
	for _, short := range []bool{false, true} {
		parts := []string{intro}
		if sets&ToolsetContinuity != 0 {
			parts[0] = workflow.SessionsGuide
		}
		for _, g := range toolsetGuides {
			switch {
			case sets&g.set == 0:
			case short:
				parts = append(parts, g.line)
			default:
				parts = append(parts, g.guide)
			}
		}
		parts = append(parts, workflow.ErrorsGuide)
		if text := strings.Join(parts, "\n"); short || utf8.RuneCountInString(text) <= workflow.MaxGuideChars {
			return text
		}
	}
	panic("unreachable")
}
