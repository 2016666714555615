package swarm_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/swarm"
)

// settled runs n tasks through worker x, each submitted with result(i).
func (f *fixture) settled(inv *swarm.Invited, x *w, n int, result func(i int) string) {
	f.t.Helper()
	ctx := f.t.Context()
	for i := range n {
		f.dispatch(inv.Swarm.ID, fmt.Sprintf("t%02d", i), x.ref.WorkerID)
		d := f.next(x)
		if d.Task == nil {
			f.t.Fatalf("task %d: next gave %+v", i, d)
		}
		if _, err := f.svc.Ack(ctx, x.c, x.car, x.ref, d.Task.ID); err != nil {
			f.t.Fatal(err)
		}
		if _, err := f.svc.Submit(ctx, x.c, x.car, x.ref, d.Task.ID, result(i)); err != nil {
			f.t.Fatal(err)
		}
	}
}

// TestCapsuleBounds: the largest checkpoint a worker may store and results
// whose summaries swell when escaped in JSON still make a capsule within
// 48 KiB — the oldest tasks make room, counted — with its version, its
// authority, the checkpoint whole, and a hash that is the SHA-256 of its
// bytes.
func TestCapsuleBounds(t *testing.T) { stores.Each(t, testCapsuleBounds) }

func testCapsuleBounds(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	inv := f.create(4, nil)
	x := f.join(inv, "bulky")
	// A control character is 1 byte stored and 6 in JSON (\u0001): ten
	// 512-byte summaries of them are 30 KiB of capsule.
	f.settled(inv, x, 12, func(i int) string { return fmt.Sprintf("result %02d ", i) + strings.Repeat("\x01", 4096) })
	refs := strings.Repeat("r", 7000)
	cp := fmt.Sprintf(`{"summary":"near the checkpoint's bound","blockers":[%q],"artifact_refs":[%q],"next":%q}`,
		strings.Repeat("b", 7000), refs, strings.Repeat("n", continuo.MaxCheckpoint-14_150))
	if len(cp) > continuo.MaxCheckpoint || len(cp) < continuo.MaxCheckpoint-200 {
		t.Fatalf("the checkpoint is %d bytes, want just under %d", len(cp), continuo.MaxCheckpoint)
	}
	if _, err := f.svc.Checkpoint(ctx, x.c, x.car, x.ref, json.RawMessage(cp)); err != nil {
		t.Fatal(err)
	}
	p := f.prepare(inv, x)
	raw := p.Continuation.Capsule
	if len(raw) > continuo.MaxCapsule || len(raw) < continuo.MaxCapsule-4096 {
		t.Fatalf("the capsule is %d bytes, want at most %d (and full)", len(raw), continuo.MaxCapsule)
	}
	sum := sha256.Sum256([]byte(raw))
	if p.Continuation.CapsuleHash != hex.EncodeToString(sum[:]) || swarm.CapsuleHash([]byte(raw)) != p.Continuation.CapsuleHash {
		t.Fatalf("capsule hash %s is not the SHA-256 of its bytes", p.Continuation.CapsuleHash)
	}
	var c swarm.Capsule
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		t.Fatal(err)
	}
	if c.Version != swarm.CapsuleVersion || c.Authority != "context_only" || c.Epoch != 1 || c.Label != "bulky" {
		t.Fatalf("capsule envelope: %+v", c)
	}
	var back, want any
	_ = json.Unmarshal(c.Checkpoint, &back)
	_ = json.Unmarshal([]byte(cp), &want)
	if fmt.Sprint(back) != fmt.Sprint(want) || !strings.Contains(string(c.Artifacts), refs) {
		t.Fatalf("the checkpoint or its artifact refs were cut")
	}
	// Newest first, each summary bounded; what was left out is counted.
	if n := len(c.RecentTasks); n == 0 || n >= 10 || c.TasksLeftOut != 10-n {
		t.Fatalf("%d recent tasks, %d left out", n, c.TasksLeftOut)
	}
	for i, ct := range c.RecentTasks {
		if want := fmt.Sprintf("result %02d ", 11-i); !strings.HasPrefix(ct.Summary, want) || len(ct.Summary) > 512 {
			t.Fatalf("recent task %d: %d bytes, starts %.12q, want %q", i, len(ct.Summary), ct.Summary, want)
		}
	}
}

// TestCapsuleRefusesSecret: a secret that reached stored truth by another
// way than the tools (which refuse or redact it) makes the capsule
// refused, not trimmed — prepare fails with invalid_state
// (capsule_contains_secret) and writes nothing; the planner does not
// continue the worker either.
func TestCapsuleRefusesSecret(t *testing.T) { stores.Each(t, testCapsuleRefusesSecret) }

func testCapsuleRefusesSecret(t *testing.T) {
	f, rt, _ := processFixture(t)
	ctx := t.Context()
	inv := f.create(4, nil)
	x := f.checkpointed(inv, "x")
	f.settled(inv, x, 1, func(int) string { return "done" })
	secret := "ghp_XdnYcLxQlNnVxKW3x9KsQuKf0ElTELYCRPkl" // a token of a real one's entropy
	err := f.store.Write(ctx, func(tx store.Tx) error {
		ts, err := tx.TaskList(ctx, store.TaskListParams{SwarmID: inv.Swarm.ID, WorkerID: x.ref.WorkerID, Limit: 1})
		if err != nil || len(ts) != 1 {
			return fmt.Errorf("tasks %v: %w", ts, err)
		}
		k := ts[0]
		prev := k.Revision
		k.Result, k.Revision = "the key is "+secret, prev+1
		return tx.TaskUpdate(ctx, &k, prev)
	})
	if err != nil {
		t.Fatal(err)
	}
	before := f.continuity(inv, x)
	_, err = f.svc.Prepare(ctx, f.owner, ownerCar, inv.Swarm.ID, x.ref.WorkerID, "context full", 0)
	e := wantCode(t, err, continuo.CodeInvalidState, "prepare with a secret in a result")
	if e.Details["reason"] != "capsule_contains_secret" || strings.Contains(e.Error(), secret) {
		t.Fatalf("refusal: %v %v", e, e.Details)
	}
	if cn := f.openContinuation(x.ref.WorkerID); cn != nil || f.continuity(inv, x) != before {
		t.Fatalf("a refused prepare wrote %+v (worker %s, was %s)", cn, f.continuity(inv, x), before)
	}
	f.compacting(x)
	if err := swarm.PlanPass(ctx, f.svc); err == nil || len(rt.starts) != 0 || f.openContinuation(x.ref.WorkerID) != nil {
		t.Fatalf("the planner on a capsule it cannot build: %v, %d starts", err, len(rt.starts))
	}
}
