package e2e

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/continuo-dev/continuo/internal/provider/providertest"
	"github.com/continuo-dev/continuo/internal/store/pgtest"
)

// runReplicas starts two `continuo serve` processes on one fresh
// PostgreSQL database, both with the validation config.
func runReplicas(t *testing.T, repo, config string) (r1, r2 *server) {
	t.Helper()
	db := pgtest.Database(t)
	d1, d2 := filepath.Join(t.TempDir(), "r1"), filepath.Join(t.TempDir(), "r2")
	useDatabase(d1, db)
	useDatabase(d2, db)
	r1 = start(t, d1, repo, "--config", config)
	r2 = start(t, d2, repo, "--config", config)
	return r1, r2
}

// TestReplicasRuns: a check started through one replica is observed
// (long-polled) and cancelled through the other, and the cancel reaches
// the process where it runs; a second session asking for the same check
// on the same source through the other replica shares the run; a run whose
// replica was killed is interrupted by the survivor, and its processes are
// gone.
func TestReplicasRuns(t *testing.T) {
	pgtest.BaseURL(t)
	repo := gitRepo(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	r1, r2 := runReplicas(t, repo, validationConfig(t, pidFile))
	a := connect(t, at(r1.URL, "all"), r1.Admin)
	b := connect(t, at(r2.URL, "all"), r1.Admin)
	s1 := must(t, a, "work_on_project", map[string]any{"project": "demo", "instruction": "one"})["session_id"].(string)
	s2 := must(t, b, "work_on_project", map[string]any{"project": "demo", "instruction": "two"})["session_id"].(string)

	res := must(t, a, "run_validation", map[string]any{"session_id": s1, "check": "slow"})
	id := res["run"].(map[string]any)["run_id"].(string)
	tok := res["observation_token"].(string)
	waitOutput(t, b, id, &tok, "started")
	child, err := readPid(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	shared := must(t, b, "run_validation", map[string]any{"session_id": s2, "check": "slow"})
	if shared["shared"] != true || shared["run"].(map[string]any)["run_id"] != id {
		t.Fatalf("the same check on the same source through the other replica: %v", shared)
	}
	c := must(t, b, "cancel_run", map[string]any{"run_id": id})["run"].(map[string]any)
	if c["state"] != "cancelled" {
		t.Fatalf("cancel through the other replica: %v", c)
	}
	waitGone(t, child)
	for _, sid := range []string{s1, s2} {
		if st, _, _ := briefValidation(t, b, sid); st["slow"] != "not_run" {
			t.Errorf("session %s: slow = %s after the cancel", sid, st["slow"])
		}
	}

	res = must(t, a, "run_validation", map[string]any{"session_id": s1, "check": "slow"})
	id = res["run"].(map[string]any)["run_id"].(string)
	tok = res["observation_token"].(string)
	waitOutput(t, b, id, &tok, "started")
	if child, err = readPid(pidFile); err != nil {
		t.Fatal(err)
	}
	r1.kill()
	r := untilNotRunning(t, b, id, tok, 40*time.Second)
	if r["state"] != "interrupted" {
		t.Fatalf("the run of the killed replica is %v", r)
	}
	waitGone(t, child)
}

// TestReplicasGoalRace: ten checkpoint_goal calls at one revision, spread
// over two replicas, have one winner and nine revision_conflict losers told
// the current revision — 200 times over.
func TestReplicasGoalRace(t *testing.T) {
	pgtest.BaseURL(t)
	repo := gitRepo(t)
	r1, r2 := runReplicas(t, repo, validationConfig(t, filepath.Join(t.TempDir(), "pid")))
	c1 := connect(t, at(r1.URL, "all"), r1.Admin)
	c2 := connect(t, at(r2.URL, "all"), r1.Admin)
	sid := must(t, c1, "work_on_project", map[string]any{"project": "demo", "instruction": "race"})["session_id"].(string)
	g := must(t, c1, "create_goal", map[string]any{"session_id": sid, "title": "race", "objective": "one winner each time",
		"completion_conditions": []any{}, "steps": []any{map[string]any{"id": "s1", "title": "step"}}, "idempotency_key": "create"})["goal"].(map[string]any)
	goalID := g["goal_id"].(string)
	rev := int(g["revision"].(float64))
	const trials, racers = 200, 10
	for trial := 0; trial < trials; trial++ {
		var wg sync.WaitGroup
		codes := make([]string, racers)
		current := make([]float64, racers)
		for i := 0; i < racers; i++ {
			cs := c1
			if i%2 == 1 {
				cs = c2
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := call(t, cs, "checkpoint_goal", map[string]any{"goal_id": goalID, "expected_revision": rev,
					"idempotency_key": fmt.Sprintf("t%d-r%d", trial, i), "completed_step_ids": []any{}, "summary": fmt.Sprintf("racer %d", i)})
				codes[i] = r.code()
				if e, ok := r.Data["error"].(map[string]any); ok {
					if d, ok := e["details"].(map[string]any); ok {
						current[i], _ = d["current_revision"].(float64)
					}
				}
			}()
		}
		wg.Wait()
		wins := 0
		for i, c := range codes {
			switch c {
			case "":
				wins++
			case "revision_conflict":
				if current[i] != float64(rev+1) {
					t.Fatalf("trial %d: a loser was told current revision %v, want %d", trial, current[i], rev+1)
				}
			default:
				t.Fatalf("trial %d: racer %d got %q", trial, i, c)
			}
		}
		if wins != 1 {
			t.Fatalf("trial %d: %d winners (%v)", trial, wins, codes)
		}
		rev++
	}
	got := must(t, c2, "get_goal", map[string]any{"goal_id": goalID, "history_limit": 0})["goal"].(map[string]any)
	if int(got["revision"].(float64)) != rev {
		t.Errorf("revision after %d trials = %v, want %d", trials, got["revision"], rev)
	}
}

// TestReplicasDelegation: a delegated run started through one replica is
// observed and cancelled through the other; when the replica streaming a
// run is killed, the survivor ends it interrupted, and the model server got
// exactly one request for it — it is never sent again.
func TestReplicasDelegation(t *testing.T) {
	pgtest.BaseURL(t)
	repo := gitRepo(t)
	slow := providertest.NewServer(t, providertest.Script{Deltas: providertest.Tokens(2000, "word\n"), Delay: 20 * time.Millisecond, APIKey: fakeKey})
	config := delegationConfig(t, map[string]string{"slow": "openai-chat " + slow.BaseURL()})
	db := pgtest.Database(t)
	d1, d2 := filepath.Join(t.TempDir(), "r1"), filepath.Join(t.TempDir(), "r2")
	useDatabase(d1, db)
	useDatabase(d2, db)
	env := []string{"E2E_MODEL_KEY=" + fakeKey}
	r1 := startEnv(t, d1, repo, env, "--config", config)
	r2 := startEnv(t, d2, repo, env, "--config", config)
	a := connect(t, at(r1.URL, "all"), r1.Admin)
	b := connect(t, at(r2.URL, "all"), r1.Admin)

	startSlow := func(key string) (string, string) {
		res := must(t, a, "start_coding_agent", map[string]any{"project": "demo", "provider_id": "slow", "idempotency_key": key, "instruction": "go"})
		return res["run"].(map[string]any)["run_id"].(string), res["observation_token"].(string)
	}
	id, tok := startSlow("one")
	waitOutput(t, b, id, &tok, "word")
	c := must(t, b, "cancel_coding_agent", map[string]any{"run_id": id})["run"].(map[string]any)
	if c["state"] != "cancelled" {
		t.Fatalf("cancel through the other replica = %v", c)
	}
	select {
	case <-slow.Requests()[0].Gone:
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled stream was not closed on the replica that streamed it")
	}

	id, tok = startSlow("two")
	waitOutput(t, b, id, &tok, "word")
	r1.kill()
	r := untilNotRunning(t, b, id, tok, 40*time.Second)
	if r["state"] != "interrupted" {
		t.Fatalf("the run of the killed replica is %v", r)
	}
	if n := len(slow.Requests()); n != 2 {
		t.Errorf("the model server got %d requests for 2 runs", n)
	}
}
