package workflow_test

import (
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/provider"
	"github.com/continuo-dev/continuo/internal/provider/providertest"
	"github.com/continuo-dev/continuo/internal/run"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/workflow"
)

func TestDelegationLimits(t *testing.T) { stores.Each(t, testDelegationLimits) }

// One slot per process: a second run of the provider waits queued while the
// first streams, and starts when it ends; past max_queued waiting runs,
// start_coding_agent is queue_full and makes nothing. The caller needs
// coding_agent:run.
func testDelegationLimits(t *testing.T) {
	f := setup(t, t.TempDir(), workflow.Git{})
	srv := providertest.NewServer(t, providertest.Script{Deltas: providertest.Tokens(400, "w\n"), Delay: 10 * time.Millisecond})
	p, err := provider.New(provider.Config{ID: "slow", Kind: provider.KindChat, BaseURL: srv.BaseURL(), Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	agents := &run.Agents{Providers: map[string]provider.Provider{"slow": p}, Limits: map[string]int{"slow": 1}}
	runs := run.New(f.store, f.auth, run.Options{Key: []byte("k"), Executors: map[continuo.RunKind]run.Executor{continuo.RunAgent: agents}})
	if err := runs.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(runs.Close)
	wf := workflow.New(f.store, f.auth, &workflow.Options{Runs: runs,
		Runners: []workflow.Runner{{ID: "slow", Kind: provider.KindChat, Model: "m", Available: true, MaxQueued: 1}}})
	in := func(key string) workflow.AgentInput {
		return workflow.AgentInput{Project: "demo", ProviderID: "slow", IdempotencyKey: key, Instruction: "go"}
	}
	if _, err := wf.StartCodingAgent(f.ctx, f.caller, in("x")); code(err) != continuo.CodeForbidden {
		t.Fatalf("without coding_agent:run: %v", err)
	}
	c := *f.caller
	c.Scopes = append(c.Scopes, continuo.ScopeCodingAgent)
	first, err := wf.StartCodingAgent(f.ctx, &c, in("a"))
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the first streams.
	tok, texts := first.Token, 0
	for texts == 0 {
		o, err := runs.Observe(f.ctx, &c, first.Run.ID, tok, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		tok = o.Token
		for _, e := range o.Events {
			if e.Kind == continuo.EventText {
				texts++
			}
		}
		if o.Run.State.Terminal() {
			t.Fatalf("the first run ended: %+v", o.Run)
		}
	}
	second, err := wf.StartCodingAgent(f.ctx, &c, in("b"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wf.StartCodingAgent(f.ctx, &c, in("c")); code(err) != continuo.CodeQueueFull {
		t.Fatalf("past max_queued: %v", err)
	}
	if r, _ := runs.Get(f.ctx, &c, second.Run.ID); r.State != continuo.RunQueued {
		t.Fatalf("the second run is %s while the first streams, want queued", r.State)
	}
	if _, err := runs.Cancel(f.ctx, &c, first.Run.ID, run.CancelWait); err != nil {
		t.Fatal(err)
	}
	r, err := runs.Wait(f.ctx, &c, second.Run.ID, 30*time.Second)
	if err != nil || r.State != continuo.RunSucceeded || r.StartedAt == nil {
		t.Fatalf("the second run = %+v, %v", r, err)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("the model server got %d requests, want 2", n)
	}
	o, err := runs.Observe(f.ctx, &c, second.Run.ID, "", 0)
	if err != nil || !strings.Contains(o.Events[0].Text, "running") {
		t.Errorf("the second run's log: %v %v", o, err)
	}
}
