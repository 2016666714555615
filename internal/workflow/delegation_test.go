package workflow_test

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/provider"
	"github.com/continuo-dev/continuo/internal/provider/providertest"
	"github.com/continuo-dev/continuo/internal/redact"
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

func TestDelegationRedactsKnownKey(t *testing.T) { stores.Each(t, testDelegationRedactsKnownKey) }

// A provider that echoes its API key back — in the model's text, in a
// failure — never gets it into observe_run or into the note a run posts,
// though the key has a shape no rule knows: provider.New registered it with
// the redactor, which removes it by its value (issue 23).
func testDelegationRedactsKnownKey(t *testing.T) {
	f := setup(t, t.TempDir(), workflow.Git{})
	var b [18]byte
	_, _ = rand.Read(b[:])
	key := "opaque." + base64.RawURLEncoding.EncodeToString(b[:]) // no provider's shape
	if out, _ := redact.String("echo: " + key); out != "echo: "+key {
		t.Fatalf("a rule knows the key's shape (%q): the test would not show redaction by value", out)
	}
	ok := providertest.NewServer(t, providertest.Script{Deltas: []string{"echo: ", key, "\n", "done\n"}, APIKey: key})
	failing := providertest.NewServer(t, providertest.Script{Deltas: []string{"partial ", key, "\n"}, End: providertest.EndFailed,
		EchoBareKey: true, APIKey: key})
	status := providertest.NewServer(t, providertest.Script{End: providertest.EndStatus, EchoBareKey: true, APIKey: key})
	providers := map[string]provider.Provider{}
	var runners []workflow.Runner
	for id, srv := range map[string]*providertest.Server{"ok": ok, "failing": failing, "status": status} {
		p, err := provider.New(provider.Config{ID: id, Kind: provider.KindChat, BaseURL: srv.BaseURL(), Model: "m", APIKey: key})
		if err != nil {
			t.Fatal(err)
		}
		providers[id] = p
		runners = append(runners, workflow.Runner{ID: id, Kind: provider.KindChat, Model: "m", Available: true})
	}
	if out, _ := redact.String("echo: " + key); out != "echo: "+redact.Placeholder {
		t.Fatalf("after provider.New, String = %q", out)
	}
	agents := &run.Agents{Providers: providers}
	runs := run.New(f.store, f.auth, run.Options{Key: []byte("k"), Executors: map[continuo.RunKind]run.Executor{continuo.RunAgent: agents}})
	if err := runs.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(runs.Close)
	wf := workflow.New(f.store, f.auth, &workflow.Options{Runs: runs, Runners: runners})
	agents.Record = wf.RecordAnswer
	c := *f.caller
	c.Scopes = append(c.Scopes, continuo.ScopeCodingAgent)
	sess := f.start(t)
	for _, tc := range []struct {
		provider string
		want     continuo.RunState
	}{{"ok", continuo.RunSucceeded}, {"failing", continuo.RunFailed}, {"status", continuo.RunFailed}} {
		started, err := wf.StartCodingAgent(f.ctx, &c, workflow.AgentInput{Project: "demo", ProviderID: tc.provider,
			IdempotencyKey: tc.provider, Instruction: "say it back", RecordingSessionID: sess.ID})
		if err != nil {
			t.Fatal(err)
		}
		r, err := runs.Wait(f.ctx, &c, started.Run.ID, 30*time.Second)
		if err != nil || r.State != tc.want {
			t.Fatalf("%s: run %+v, %v; want %s", tc.provider, r, err, tc.want)
		}
		o, err := runs.Observe(f.ctx, &c, started.Run.ID, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		var all strings.Builder
		for _, e := range o.Events {
			all.WriteString(e.Text)
		}
		if strings.Contains(all.String(), key) {
			t.Errorf("%s: observe_run shows the key:\n%s", tc.provider, all.String())
		}
		if tc.provider != "status" && !strings.Contains(all.String(), redact.Placeholder) {
			t.Errorf("%s: the echo is not in the log, redacted:\n%s", tc.provider, all.String())
		}
	}
	page, err := wf.ListMessages(f.ctx, f.caller, workflow.MessageQuery{SessionID: sess.ID, Kinds: []continuo.Kind{continuo.KindNote}, Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Messages) != 1 || !strings.Contains(page.Messages[0].Text, "Answer of delegated run") {
		t.Fatalf("the recording session's notes: %+v", page.Messages)
	}
	if note := page.Messages[0].Text; strings.Contains(note, key) || !strings.Contains(note, "echo: "+redact.Placeholder) {
		t.Errorf("the note the run posted:\n%s", note)
	}
}
