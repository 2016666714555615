package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/continuo-dev/continuo/internal/provider/providertest"
)

// fakeKey is the API key the test model servers expect; it must appear in
// no result, log or export.
const fakeKey = "sk-test-e2e-" + "Zq9xW2vK7mN4pR8sT1uY3bC6dF0gH5jL"

// delegationConfig writes a config with one provider per test server.
func delegationConfig(t *testing.T, providers map[string]string) string {
	t.Helper()
	var b strings.Builder
	for id, spec := range providers {
		kind, url, _ := strings.Cut(spec, " ")
		fmt.Fprintf(&b, "[[providers]]\nid = %q\nkind = %q\nbase_url = %q\nmodel = \"test-model\"\napi_key_env = \"E2E_MODEL_KEY\"\nmax_concurrency = 4\ndescription = \"test %s\"\n\n", id, kind, url, id)
	}
	path := filepath.Join(t.TempDir(), "continuo.toml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// untilEnded long-polls a run until it has ended (failing after 30 s) and
// returns it with all the text it produced.
func untilEnded(t *testing.T, cs *mcp.ClientSession, tool, id string) (map[string]any, string) {
	t.Helper()
	var text strings.Builder
	tok := ""
	deadline := time.Now().Add(30 * time.Second)
	for {
		args := map[string]any{"run_id": id, "wait_secs": 5}
		if tok != "" {
			args["observation_token"] = tok
		}
		o := must(t, cs, tool, args)
		if b, _ := json.Marshal(o); strings.Contains(string(b), fakeKey) {
			t.Fatalf("the API key is in an %s result", tool)
		}
		tok = o["observation_token"].(string)
		for _, e := range o["events"].([]any) {
			if m := e.(map[string]any); m["kind"] == "text" {
				text.WriteString(m["text"].(string))
			}
		}
		r := o["run"].(map[string]any)
		if s := r["state"]; s != "queued" && s != "running" && o["has_more"] != true {
			return r, text.String()
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s did not end: %v", id, r)
		}
	}
}

// TestDelegationOpenAI: start_coding_agent on both OpenAI kinds against
// real local servers speaking the streaming protocols, over MCP on both
// engines: the text and usage arrive, a keyed retry is the same run (one
// request to the model, also after a restart), a changed request under the
// key is a conflict, failures end failed with their kind, a slow stream is
// cancelled, the prompt is bounded, another group's session cannot be
// quoted, an answer reaches an explicit recording session, and the API key
// is in no result, log or export.
func TestDelegationOpenAI(t *testing.T) { eachEngine(t, delegationOpenAI) }

func delegationOpenAI(t *testing.T, engine string) {
	chatOK := providertest.NewServer(t, providertest.Script{Deltas: []string{"Looks ", "good ", "to me.\n"}, APIKey: fakeKey})
	respOK := providertest.NewServer(t, providertest.Script{Deltas: []string{"Ship ", "it.\n"}, APIKey: fakeKey})
	respShort := providertest.NewServer(t, providertest.Script{Deltas: []string{"cut"}, End: providertest.EndIncomplete, APIKey: fakeKey})
	denied := providertest.NewServer(t, providertest.Script{APIKey: "sk-another-key-the-server-wants-000000"})
	slow := providertest.NewServer(t, providertest.Script{Deltas: providertest.Tokens(1000, "slow\n"), Delay: 50 * time.Millisecond, APIKey: fakeKey})
	config := delegationConfig(t, map[string]string{
		"chat": "openai-chat " + chatOK.BaseURL(), "resp": "openai-responses " + respOK.BaseURL(),
		"short": "openai-responses " + respShort.BaseURL(), "denied": "openai-chat " + denied.BaseURL(),
		"slow": "openai-chat " + slow.BaseURL(),
	})
	repo := gitRepo(t)
	dd := dataDir(t, engine)
	env := []string{"E2E_MODEL_KEY=" + fakeKey}
	srv := startEnv(t, dd, repo, env, "--config", config)
	admin := srv.Admin
	cs := connect(t, at(srv.URL, "all"), admin)
	sid := must(t, cs, "work_on_project", map[string]any{"project": "demo", "instruction": "review the parser"})["session_id"].(string)
	must(t, cs, "post_session_message", map[string]any{"session_id": sid, "kind": "decision", "text": "Keep the AST immutable."})
	// The answer goes to another session: one quoted as context must stay
	// as it is for a keyed retry to be the same request.
	rec := must(t, cs, "work_on_project", map[string]any{"project": "demo", "instruction": "collect reviews"})["session_id"].(string)

	runners := must(t, cs, "list_runners", map[string]any{"project": "demo"})["providers"].([]any)
	if len(runners) != 5 {
		t.Fatalf("list_runners = %v", runners)
	}
	for _, r := range runners {
		m := r.(map[string]any)
		if m["available"] != true || m["model"] != "test-model" || len(m) != 5 {
			t.Errorf("runner %v", m)
		}
	}

	start := func(provider, key, instruction string, extra map[string]any) result {
		args := map[string]any{"project": "demo", "provider_id": provider, "idempotency_key": key, "instruction": instruction}
		for k, v := range extra {
			args[k] = v
		}
		return call(t, cs, "start_coding_agent", args)
	}
	res := start("chat", "k1", "Review the decision.", map[string]any{"context_session_id": sid, "recording_session_id": rec})
	if res.IsError {
		t.Fatalf("start_coding_agent: %v", res.Data)
	}
	id := res.Data["run"].(map[string]any)["run_id"].(string)
	r, text := untilEnded(t, cs, "observe_coding_agent", id)
	if r["state"] != "succeeded" || text != "Looks good to me.\n" || r["usage"] == nil {
		t.Fatalf("chat run = %v, text %q", r, text)
	}
	reqs := chatOK.Requests()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), "Keep the AST immutable.") || !strings.Contains(string(reqs[0].Body), "not verified facts") {
		t.Fatalf("the model server got %d requests; the prompt: %s", len(reqs), reqs[0].Body)
	}
	again := start("chat", "k1", "Review the decision.", map[string]any{"context_session_id": sid, "recording_session_id": rec})
	if again.IsError || again.Data["replayed"] != true || again.Data["run"].(map[string]any)["run_id"] != id {
		t.Fatalf("replay = %v", again.Data)
	}
	if c := start("chat", "k1", "Something else.", nil); c.code() != "conflict" {
		t.Errorf("changed request under the key = %v", c.Data)
	}
	// A changed context is a changed request too.
	must(t, cs, "post_session_message", map[string]any{"session_id": sid, "kind": "todo", "text": "add a test"})
	if c := start("chat", "k1", "Review the decision.", map[string]any{"context_session_id": sid, "recording_session_id": rec}); c.code() != "conflict" {
		t.Errorf("the same key after the context changed = %v", c.Data)
	}
	notes := must(t, cs, "list_session_messages", map[string]any{"session_id": rec, "kinds": []any{"note"}})["messages"].([]any)
	if len(notes) != 1 || !strings.Contains(notes[0].(map[string]any)["text"].(string), "Looks good to me.") {
		t.Errorf("recording session notes = %v", notes)
	}

	r, text = untilEnded(t, cs, "observe_run", start("resp", "k2", "Ship?", nil).Data["run"].(map[string]any)["run_id"].(string))
	if r["state"] != "succeeded" || text != "Ship it.\n" {
		t.Errorf("responses run = %v %q", r, text)
	}
	r, _ = untilEnded(t, cs, "observe_run", start("short", "k3", "x", nil).Data["run"].(map[string]any)["run_id"].(string))
	if r["state"] != "failed" || r["error_kind"] != "incomplete" {
		t.Errorf("incomplete run = %v", r)
	}
	r, _ = untilEnded(t, cs, "observe_run", start("denied", "k4", "x", nil).Data["run"].(map[string]any)["run_id"].(string))
	if r["state"] != "failed" || r["error_kind"] != "http_status" {
		t.Errorf("denied run = %v", r)
	}
	slowRun := start("slow", "k5", "x", nil).Data
	slowID, slowTok := slowRun["run"].(map[string]any)["run_id"].(string), slowRun["observation_token"].(string)
	waitOutput(t, cs, slowID, &slowTok, "slow") // streaming: the cancel stops a stream, not a queued run
	c := must(t, cs, "cancel_coding_agent", map[string]any{"run_id": slowID})["run"].(map[string]any)
	if c["state"] != "cancelled" {
		t.Errorf("cancelled slow run = %v", c)
	}
	if sr := slow.Requests(); len(sr) != 1 {
		t.Errorf("the slow server got %d requests", len(sr))
	} else {
		select {
		case <-sr[0].Gone:
		case <-time.After(30 * time.Second):
			t.Error("the cancelled stream's connection was not closed")
		}
	}

	// Bounds and other groups.
	if tl := start("chat", "k6", strings.Repeat("x", 65530), map[string]any{"context_session_id": sid}); tl.code() != "too_large" {
		t.Errorf("a prompt over 64 KiB = %v", tl.code())
	}
	other := connect(t, at(srv.URL, "all"), token(t, dd, "mallory", "sessions:read,sessions:write,project:write,coding_agent:run,runtime:read"))
	cli(t, dd, "project", "grant", "demo", "mallory:write")
	if fr := call(t, other, "start_coding_agent", map[string]any{"project": "demo", "provider_id": "chat", "idempotency_key": "m1",
		"instruction": "x", "context_session_id": sid}); fr.code() != "not_found" {
		t.Errorf("quoting another group's session = %v", fr.Data)
	}
	if uk := start("nope", "k7", "x", nil); uk.code() != "invalid_input" {
		t.Errorf("an unknown provider = %v", uk.code())
	}

	// A timeout ends the run timed_out and closes the stream.
	r, _ = untilEnded(t, cs, "observe_run", start("slow", "k8", "y", map[string]any{"timeout_secs": 1}).Data["run"].(map[string]any)["run_id"].(string))
	if r["state"] != "timed_out" || r["error_kind"] != "timeout" {
		t.Errorf("timed-out run = %v", r)
	}

	// A restart while a run streams: the run ends interrupted and is never
	// sent again; its token and its key still answer afterwards.
	midRun := start("slow", "k9", "z", nil).Data
	midID, midTok := midRun["run"].(map[string]any)["run_id"].(string), midRun["observation_token"].(string)
	waitOutput(t, cs, midID, &midTok, "slow")
	before := len(slow.Requests())
	srv.stop()
	srv = startEnv(t, dd, repo, env, "--config", config)
	cs = connect(t, at(srv.URL, "all"), admin)
	if r := untilNotRunning(t, cs, midID, midTok, 30*time.Second); r["state"] != "interrupted" {
		t.Errorf("the run streaming at the restart = %v", r)
	}
	if again := start("slow", "k9", "z", nil); again.Data["replayed"] != true || again.Data["run"].(map[string]any)["state"] != "interrupted" ||
		len(slow.Requests()) != before {
		t.Errorf("its key after the restart = %v; the model got %d requests, had %d", again.Data, len(slow.Requests()), before)
	}
	again = start("chat", "k1", "Review the decision.", nil)
	if again.code() != "conflict" || len(chatOK.Requests()) != 1 {
		t.Errorf("a changed request under the key after the restart = %v, requests %d", again.Data, len(chatOK.Requests()))
	}
	again = start("resp", "k2", "Ship?", nil)
	if again.Data["replayed"] != true || again.Data["run"].(map[string]any)["state"] != "succeeded" || len(respOK.Requests()) != 1 {
		t.Errorf("replay after the restart = %v, requests %d", again.Data, len(respOK.Requests()))
	}

	srv.stop()
	nowhere(t, srv, fakeKey, "the API key")
	for _, s := range []*providertest.Server{chatOK, respOK, respShort, slow} {
		for _, rq := range s.Requests() {
			if rq.Authorization != "Bearer "+fakeKey {
				t.Errorf("a request to %s carried %q", s.URL, rq.Authorization)
			}
		}
	}
}

// TestDelegationACP: start_coding_agent on a real ACP agent process (the
// official TypeScript SDK's, started by the server with only the mapped
// environment): the turn's text, tool and permission events (read allowed
// by the provider's policy, edit rejected), a cancel that ends the agent,
// and a crash mid-prompt.
func TestDelegationACP(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(root, "interop", "acp-agent", "agent.mjs")
	if _, err := os.Stat(filepath.Join(root, "interop", "node_modules", "@agentclientprotocol", "sdk")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the ACP TypeScript SDK is not installed (cd interop && npm ci): %v", err)
		}
		t.Skip("the ACP TypeScript SDK is not installed (cd interop && npm ci)")
	}
	path := filepath.Join(t.TempDir(), "continuo.toml")
	body := fmt.Sprintf(`[[providers]]
id = "agent"
kind = "acp"
command = ["node", %q]
env = { PATH = "PATH" }
allow_tools = ["read"]
description = "the scripted ACP agent"

[[providers]]
id = "agent-mcp"
kind = "acp"
command = ["node", %q]
env = { PATH = "PATH", ACP_MCP_HTTP = "E2E_ACP_MCP" }
mcp = true
`, agent, agent)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	repo := gitRepo(t)
	dd := dataDir(t, "sqlite")
	srv := startEnv(t, dd, repo, []string{"E2E_ACP_MCP=1"}, "--config", path)
	cs := connect(t, at(srv.URL, "all"), srv.Admin)
	startOn := func(provider, key, instruction string) string {
		return must(t, cs, "start_coding_agent", map[string]any{"project": "demo", "provider_id": provider, "idempotency_key": key,
			"instruction": instruction})["run"].(map[string]any)["run_id"].(string)
	}
	startTurn := func(key, instruction string) string { return startOn("agent", key, instruction) }
	events := func(id string) map[string]string {
		out := map[string]string{}
		o := must(t, cs, "observe_run", map[string]any{"run_id": id})
		for _, e := range o["events"].([]any) {
			m := e.(map[string]any)
			out[m["kind"].(string)] += m["text"].(string)
		}
		return out
	}

	id := startTurn("a1", "stream")
	r, text := untilEnded(t, cs, "observe_coding_agent", id)
	if r["state"] != "succeeded" || text != "Hello, world!" {
		t.Fatalf("stream turn = %v %q", r, text)
	}
	if ev := events(id); ev["tool"] == "" || ev["thought"] == "" {
		t.Errorf("the turn's tool and thought events: %v", ev)
	}

	id = startTurn("a2", "permission")
	r, text = untilEnded(t, cs, "observe_run", id)
	ev := events(id)
	if r["state"] != "succeeded" || !strings.Contains(text, "read: allow") || !strings.Contains(text, "edit: reject") ||
		!strings.Contains(ev["permission"], "allowed read") || !strings.Contains(ev["permission"], "rejected edit") {
		t.Errorf("permission turn = %v %q %v", r, text, ev)
	}

	id = startTurn("a3", "slow")
	tok := must(t, cs, "observe_run", map[string]any{"run_id": id})["observation_token"].(string)
	waitOutput(t, cs, id, &tok, "pid")
	c := must(t, cs, "cancel_coding_agent", map[string]any{"run_id": id})["run"].(map[string]any)
	if c["state"] != "cancelled" {
		t.Errorf("cancelled turn = %v", c)
	}

	r, _ = untilEnded(t, cs, "observe_run", startTurn("a4", "crash"))
	if r["state"] != "failed" || r["error_kind"] != "process_exited" {
		t.Errorf("crash turn = %v", r)
	}
	// Continuo as the agent's MCP server, with a token for the run that is
	// revoked when the run ends.
	r, text = untilEnded(t, cs, "observe_run", startOn("agent-mcp", "a6", "mcp"))
	if r["state"] != "succeeded" || !strings.Contains(text, "mcp http continuo "+srv.URL+" with-authorization") {
		t.Errorf("the MCP servers the agent got: %v %q", r["state"], text)
	}
	var agentTokens []any
	for _, tk := range cliJSON(t, dd, "token", "list")["tokens"].([]any) {
		if m := tk.(map[string]any); strings.HasPrefix(m["principal"].(string), "agents.") {
			agentTokens = append(agentTokens, m)
			if m["state"] != "revoked" {
				t.Errorf("the run's token is %v after the run", m["state"])
			}
		}
	}
	if len(agentTokens) != 1 {
		t.Errorf("run tokens: %v", agentTokens)
	}

	r, text = untilEnded(t, cs, "observe_run", startTurn("a5", "echo-env"))
	if r["state"] != "succeeded" || !strings.Contains(text, "env PATH") || strings.Contains(text, "CONTINUO") {
		t.Errorf("the agent's environment: %v %q", r["state"], text)
	}
}
