package e2e

import (
	"bytes"
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo/internal/provider/providertest"
	"github.com/continuo-dev/continuo/internal/syncbuf"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// workerProcess is a running `continuo worker`.
type workerProcess struct {
	cmd  *exec.Cmd
	out  *syncbuf.Buffer
	done chan error
}

// startWorker runs `continuo worker` against the MCP endpoint url of srv
// with env (NAME=value).
func startWorker(t *testing.T, dd string, srv *server, url, swarmID string, env ...string) *workerProcess {
	t.Helper()
	cmd := command(dd, "worker", "--server", url, "--swarm", swarmID, "--provider", "chat", "--project", "demo")
	cmd.Env = append(cmd.Env, append([]string{"CONTINUO_TOKEN=" + srv.Admin}, env...)...)
	out := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &workerProcess{cmd: cmd, out: out, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

// exited waits for the worker to exit and returns its output and error.
func (p *workerProcess) exited(t *testing.T) (string, error) {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		return p.out.String(), err
	case <-time.After(60 * time.Second):
		t.Fatalf("the worker did not stop; it printed:\n%s", p.out.String())
	}
	return "", nil
}

// collectAll waits until n tasks are result_ready and collects them,
// returning their results.
func collectAll(t *testing.T, owner *mcp.ClientSession, swarmID string, n int) []string {
	t.Helper()
	var results []string
	deadline := time.Now().Add(60 * time.Second)
	for len(results) < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d results arrived", len(results), n)
		}
		page := must(t, owner, "chat_swarm_status", map[string]any{"swarm_id": swarmID, "state": "result_ready"})
		tasks, _ := page["tasks"].([]any)
		if len(tasks) == 0 {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for _, x := range tasks {
			id := x.(map[string]any)["task_id"].(string)
			c := must(t, owner, "chat_swarm_collect", map[string]any{"swarm_id": swarmID, "task_id": id})
			results = append(results, c["task"].(map[string]any)["result"].(string))
		}
	}
	return results
}

// settled waits until a swarm's one worker is steady with an active
// carrier and no continuation of it is open — every rollover under way has
// bound its new carrier — and returns it as chat_swarm_status shows it.
func settled(t *testing.T, owner *mcp.ClientSession, swarmID string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st := must(t, owner, "chat_swarm_status", map[string]any{"swarm_id": swarmID})
		ws, _ := st["workers"].([]any)
		if len(ws) != 1 {
			t.Fatalf("workers: %v", ws)
		}
		w := ws[0].(map[string]any)
		if w["continuity_state"] == "steady" && w["carrier_state"] == "active" && st["continuations"] == nil {
			return w
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker did not settle: %v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitLog waits until the file at path (a carrier's log) holds text n
// times, and returns what it holds.
func waitLog(t *testing.T, path, text string, n int) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		if bytes.Count(b, []byte(text)) >= n {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not say %q %d times; it holds:\n%s", path, text, n, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReferenceWorker: `continuo worker` carries a worker — each task's
// prompt runs as one turn of the server's model provider, and the model's
// text is the result — and, when the owner prepares a continuation, a
// second `continuo worker` started with the ticket in its environment
// takes the worker over at epoch 1: the first stops by itself
// (continued), the next task reaches the second, no task runs twice.
func TestReferenceWorker(t *testing.T) {
	model := providertest.NewServer(t, providertest.Script{Deltas: []string{"Looks ", "good."}, APIKey: fakeKey})
	config := delegationConfig(t, map[string]string{"chat": "openai-chat " + model.BaseURL()})
	dd := dataDir(t, "sqlite")
	srv := startEnv(t, dd, gitRepo(t), []string{"E2E_MODEL_KEY=" + fakeKey}, "--config", config)
	owner := connectAt(t, at(srv.URL, "swarm"), srv.Admin, "2025-11-25")
	created := must(t, owner, "chat_swarm_create", map[string]any{"worker_limit": 2})
	swarmID := created["swarm"].(map[string]any)["swarm_id"].(string)
	// The invite names the worker endpoint, where the worker asks for
	// delegation too (its provider's runs).
	endpoint, _ := created["worker_endpoint"].(string)
	if endpoint != at(srv.URL, "worker") {
		t.Fatalf("worker_endpoint = %q, want %s", endpoint, at(srv.URL, "worker"))
	}
	a := startWorker(t, dd, srv, endpoint, swarmID, "CONTINUO_INVITE="+created["invite"].(string))
	for _, k := range []string{"one", "two", "three"} {
		must(t, owner, "chat_swarm_dispatch", map[string]any{"swarm_id": swarmID, "task_key": k, "prompt": "Review change " + k})
	}
	for _, r := range collectAll(t, owner, swarmID, 3) {
		if r != "Looks good." {
			t.Errorf("a result is %q, want the model's text", r)
		}
	}
	st := must(t, owner, "chat_swarm_status", map[string]any{"swarm_id": swarmID})
	ws := st["workers"].([]any)
	if len(ws) != 1 {
		t.Fatalf("workers = %v", ws)
	}
	workerID := ws[0].(map[string]any)["worker_id"].(string)

	// The owner rolls the worker over to a new carrier.
	p := must(t, owner, "chat_swarm_prepare_continuation", map[string]any{"swarm_id": swarmID, "worker_id": workerID, "reason": "fresh context"})
	b := startWorker(t, dd, srv, endpoint, swarmID, "CONTINUO_CONTINUATION_TICKET="+p["ticket"].(string))
	out, err := a.exited(t)
	if err != nil || !strings.Contains(out, "stopped (continued)") {
		t.Fatalf("the first worker: %v\n%s", err, out)
	}
	must(t, owner, "chat_swarm_dispatch", map[string]any{"swarm_id": swarmID, "task_key": "four", "prompt": "Review change four",
		"preferred_worker_id": workerID})
	if r := collectAll(t, owner, swarmID, 1); r[0] != "Looks good." {
		t.Errorf("the fourth result is %q", r[0])
	}
	st = must(t, owner, "chat_swarm_status", map[string]any{"swarm_id": swarmID})
	w := st["workers"].([]any)[0].(map[string]any)
	if len(st["workers"].([]any)) != 1 || w["worker_id"] != workerID || w["epoch"] != float64(1) {
		t.Fatalf("after the rollover: %v", st["workers"])
	}
	if n := len(model.Requests()); n != 4 {
		t.Errorf("the model got %d requests for 4 tasks", n)
	}
	must(t, owner, "chat_swarm_close", map[string]any{"swarm_id": swarmID})
	out, err = b.exited(t)
	if err != nil || !strings.Contains(out, "stopped (closed)") {
		t.Fatalf("the second worker: %v\n%s", err, out)
	}
	if bytes.Contains([]byte(a.out.String()+out), []byte(fakeKey)) {
		t.Error("a worker printed the model's key")
	}
}

// TestWorkerOutlivesServer: a `continuo worker` waiting in next when its
// server is SIGKILLed retries until the server is back on its address,
// and goes on carrying the worker: the task dispatched after the restart
// reaches it, at the same epoch, and runs once.
func TestWorkerOutlivesServer(t *testing.T) {
	model := providertest.NewServer(t, providertest.Script{Deltas: []string{"Looks ", "good."}, APIKey: fakeKey})
	config := delegationConfig(t, map[string]string{"chat": "openai-chat " + model.BaseURL()})
	dd, work := dataDir(t, "sqlite"), gitRepo(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	env := []string{"E2E_MODEL_KEY=" + fakeKey}
	srv := startEnv(t, dd, work, env, "--config", config, "--listen", addr)
	admin := srv.Admin
	owner := connectAt(t, at(srv.URL, "swarm"), admin, "2026-07-28")
	created := must(t, owner, "chat_swarm_create", map[string]any{"worker_limit": 1})
	swarmID := created["swarm"].(map[string]any)["swarm_id"].(string)
	// The default endpoint: the worker asks for its toolsets itself.
	a := startWorker(t, dd, srv, srv.URL, swarmID, "CONTINUO_INVITE="+created["invite"].(string))
	must(t, owner, "chat_swarm_dispatch", map[string]any{"swarm_id": swarmID, "task_key": "before", "prompt": "Review change one"})
	collectAll(t, owner, swarmID, 1)

	srv.kill()
	srv = startEnv(t, dd, work, env, "--config", config, "--listen", addr)
	owner = connectAt(t, at(srv.URL, "swarm"), admin, "2026-07-28")
	must(t, owner, "chat_swarm_dispatch", map[string]any{"swarm_id": swarmID, "task_key": "after", "prompt": "Review change two"})
	if r := collectAll(t, owner, swarmID, 1); r[0] != "Looks good." {
		t.Errorf("the result after the restart is %q", r[0])
	}
	st := must(t, owner, "chat_swarm_status", map[string]any{"swarm_id": swarmID})
	if ws := st["workers"].([]any); len(ws) != 1 || ws[0].(map[string]any)["epoch"] != float64(0) {
		t.Fatalf("workers after the restart: %v", ws)
	}
	if n := len(model.Requests()); n != 2 {
		t.Errorf("the model got %d requests for 2 tasks", n)
	}
	must(t, owner, "chat_swarm_close", map[string]any{"swarm_id": swarmID})
	if out, err := a.exited(t); err != nil || !strings.Contains(out, "stopped (closed)") || !strings.Contains(out, "retrying") {
		t.Fatalf("the worker: %v\n%s", err, out)
	}
}
