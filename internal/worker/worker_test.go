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

func joinAndClose() *script {
	return &script{answers: map[string]any{
		"chat_swarm_join": map[string]any{"worker": map[string]any{"worker_id": "wkr_1", "epoch": 0}},
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
