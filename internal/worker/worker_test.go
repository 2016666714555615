package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo/internal/hook"
)

// script is a hook.Caller that answers each tool from a table and records
// every call's arguments.
type script struct {
	answers map[string]any
	fails   map[string]error // tool → the error it fails with
	calls   []map[string]any
}

func (s *script) Call(_ context.Context, tool string, args map[string]any, out any) error {
	s.calls = append(s.calls, map[string]any{"tool": tool, "carrier_key": args["carrier_key"]})
	if err := s.fails[tool]; err != nil {
		return err
	}
	b, err := json.Marshal(s.answers[tool])
	if err != nil || out == nil {
		return err
	}
	return json.Unmarshal(b, out)
}

func (s *script) Close() error { return nil }

// joinAndClose joins a worker that has a checkpoint (a continued one, say)
// to a swarm that closed.
func joinAndClose() *script {
	return &script{answers: map[string]any{
		"chat_swarm_join": map[string]any{"worker": map[string]any{"worker_id": "wkr_1", "epoch": 0, "checkpoint_at": "2026-01-01T00:00:00Z"}},
		"chat_swarm_next": map[string]any{"state": "closed"},
	}}
}

// TestCarrierKey: a carrier key given in the configuration is the one
// every call carries, a missing one is a random one of at least 22 bytes,
// and a short one is refused before any call.
func TestCarrierKey(t *testing.T) {
	given := strings.Repeat("k", 32)
	c := joinAndClose()
	if why, err := Run(t.Context(), c, Config{SwarmID: "swm_1", Invite: "cto_inv_x", CarrierKey: given}); err != nil || why != StopClosed {
		t.Fatalf("Run = %q, %v", why, err)
	}
	if len(c.calls) != 2 {
		t.Fatalf("calls %v, want join and next", c.calls)
	}
	for _, call := range c.calls {
		if call["carrier_key"] != given {
			t.Errorf("%v carried another key than the one given", call)
		}
	}

	c = joinAndClose()
	if _, err := Run(t.Context(), c, Config{SwarmID: "swm_1", Invite: "cto_inv_x"}); err != nil {
		t.Fatal(err)
	}
	if k, _ := c.calls[0]["carrier_key"].(string); len(k) < 22 || c.calls[1]["carrier_key"] != k {
		t.Errorf("a random carrier key: %v", c.calls)
	}

	c = joinAndClose()
	if _, err := Run(t.Context(), c, Config{SwarmID: "swm_1", Invite: "cto_inv_x", CarrierKey: "short"}); err == nil || len(c.calls) != 0 {
		t.Errorf("a 5-byte carrier key: %v, calls %v", err, c.calls)
	}
}

// TestRevoked: a carrier whose token the server refuses once it has
// joined — the server revokes the token of a carrier it started when it
// retires it — stops at once, with success; a token refused at the join
// is an error. Neither is retried.
func TestRevoked(t *testing.T) {
	refused := fmt.Errorf("chat_swarm_next: sending: %w", hook.ErrUnauthorized)
	c := joinAndClose()
	c.fails = map[string]error{"chat_swarm_next": refused}
	if why, err := Run(t.Context(), c, Config{SwarmID: "swm_1", Invite: "cto_inv_x"}); err != nil || why != StopRevoked || len(c.calls) != 2 {
		t.Errorf("Run = %q, %v after calls %v; want revoked after join and one next", why, err, c.calls)
	}

	c = joinAndClose()
	c.fails = map[string]error{"chat_swarm_join": refused}
	if why, err := Run(t.Context(), c, Config{SwarmID: "swm_1", Ticket: "cto_cnt_x"}); err == nil || len(c.calls) != 1 {
		t.Errorf("Run = %q, %v after calls %v; want the join's error", why, err, c.calls)
	}
}

// swarmServer is a hook.Caller that plays a swarm with n queued tasks for
// one worker, answering as the server would: join (a new worker, no
// checkpoint), next and submit's next hand out the tasks in turn with
// ack, and when they are done next says closed. The provider answers each
// task at once. It records the swarm calls.
type swarmServer struct {
	n, given int
	calls    []string
	args     []map[string]any
}

func (s *swarmServer) Call(_ context.Context, tool string, args map[string]any, out any) error {
	if strings.HasPrefix(tool, "chat_swarm_") {
		s.calls, s.args = append(s.calls, tool), append(s.args, args)
	}
	next := func() map[string]any {
		if s.given == s.n {
			return map[string]any{"state": "closed"}
		}
		s.given++
		return map[string]any{"state": "task", "task": map[string]any{"task_id": fmt.Sprint("tsk_", s.given), "attempt_id": fmt.Sprint("att_", s.given),
			"prompt": fmt.Sprint("task ", s.given), "state": "running"}}
	}
	var answer any
	switch tool {
	case "chat_swarm_join":
		answer = map[string]any{"worker": map[string]any{"worker_id": "wkr_1", "epoch": 0}}
	case "chat_swarm_next":
		answer = next()
	case "chat_swarm_submit":
		answer = map[string]any{"task": map[string]any{"task_id": args["task_id"], "state": "result_ready"}, "next": next()}
	case "start_coding_agent":
		answer = map[string]any{"run": map[string]any{"run_id": "run_1", "state": "running"}}
	case "observe_coding_agent":
		answer = map[string]any{"run": map[string]any{"state": "succeeded"}, "events": []any{map[string]any{"kind": "text", "text": "ok"}}}
	}
	b, err := json.Marshal(answer)
	if err != nil || out == nil {
		return err
	}
	return json.Unmarshal(b, out)
}

func (s *swarmServer) Close() error { return nil }

// TestShortLoop: the reference worker runs each task with one swarm call
// — the submit that hands in its result and takes the next task (ack) —
// after a join, one checkpoint (a new worker has none), one next with ack,
// and one report of its context estimate; it stops when next says the
// swarm closed.
func TestShortLoop(t *testing.T) {
	const tasks = 5
	s := &swarmServer{n: tasks}
	why, err := Run(t.Context(), s, Config{SwarmID: "swm_1", Invite: "cto_inv_x", ProviderID: "p", Project: "demo"})
	if err != nil || why != StopClosed {
		t.Fatalf("Run = %q, %v", why, err)
	}
	want := []string{"chat_swarm_join", "chat_swarm_checkpoint", "chat_swarm_next", "chat_swarm_submit", "chat_swarm_report_context"}
	for range tasks - 1 {
		want = append(want, "chat_swarm_submit")
	}
	if strings.Join(s.calls, " ") != strings.Join(want, " ") {
		t.Fatalf("swarm calls:\n%v\nwant:\n%v", s.calls, want)
	}
	if s.args[2]["ack"] != true {
		t.Errorf("the first next: %v, want ack", s.args[2])
	}
	for i, a := range s.args {
		if s.calls[i] != "chat_swarm_submit" {
			continue
		}
		if n, _ := a["next"].(map[string]any); n["ack"] != true || a["result"] != "ok" {
			t.Errorf("submit %v: want the model's text and next with ack", a)
		}
	}
}
