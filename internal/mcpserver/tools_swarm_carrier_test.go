package mcpserver_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostKey is the _meta key a chat host sets to its conversation's ID.
const hostKey = "io.example/conversation_id"

// TestSwarmTrustedMeta: with a trusted host key, the conversation it names
// is the carrier, whichever HTTP session (or stateless request) carries
// the call; without the key trusted, the _meta is ignored.
func TestSwarmTrustedMeta(t *testing.T) {
	t.Run("trusted", func(t *testing.T) {
		f := newFixtureWith(t, fixtureOptions{trustedMeta: hostKey})
		ownerConv := mcp.Meta{hostKey: "conv-owner-" + carrierKey()}
		owner := &worker{c: f.connectAt(f.token("ada", ownerScopes...), stateful).at(t), meta: ownerConv}
		tok := f.token("ada", workerScopes...)
		conv := mcp.Meta{hostKey: "conv-" + carrierKey()}
		first := &worker{c: f.connectAt(tok, stateful).at(t), meta: conv}
		cr := owner.ok("chat_swarm_create", obj{"worker_limit": 2})
		swarmID, invite := cr.str("swarm", "swarm_id"), cr.str("invite")
		j := first.join(swarmID, invite, "hosted")
		wantEq(t, "carrier_source", j.str("worker", "carrier_source"), "host_meta")

		// The host's next request comes on another session: the same
		// conversation, the same carrier.
		second := &worker{c: f.connectAt(tok, stateful).at(t), meta: conv, id: first.id}
		task := owner.ok("chat_swarm_dispatch", obj{"swarm_id": swarmID, "task_key": "t1", "prompt": "p"}).str("task", "task_id")
		wantEq(t, "next from the second session", second.ok("chat_swarm_next", second.args("wait_secs", 0)).str("task", "task_id"), task)
		second.ok("chat_swarm_ack", second.args("task_id", task))
		if r := first.ok("chat_swarm_join", obj{"swarm_id": swarmID, "invite": invite, "label": "hosted"}); r.Data["replayed"] != true ||
			r.str("worker", "worker_id") != first.id {
			t.Fatalf("join again from the first session = %v", r.Data)
		}

		// The same session without the key, or with another
		// conversation's, is another carrier.
		wantFenced(t, (&worker{c: second.c, id: first.id}).call("chat_swarm_next", second.args("wait_secs", 0)), 0)
		otherConv := &worker{c: second.c, id: first.id, meta: mcp.Meta{hostKey: "conv-" + carrierKey()}}
		wantFenced(t, otherConv.call("chat_swarm_next", otherConv.args("wait_secs", 0)), 0)

		// A stateless request with the key needs no carrier_key.
		sl := &worker{c: f.connectAt(tok, stateless).at(t), meta: conv, id: first.id}
		if r := sl.ok("chat_swarm_submit", sl.args("task_id", task, "result", "done")); r.str("task", "state") != "result_ready" {
			t.Fatalf("submit over the stateless protocol = %v", r.Data)
		}

		// The owner's conversation is the owner by its key too: it
		// cannot join from another session.
		ownerAsWorker := &worker{c: f.connectAt(f.token("ada", workerScopes...), stateful).at(t), meta: ownerConv}
		ownerAsWorker.fails("chat_swarm_join", obj{"swarm_id": swarmID, "invite": invite, "label": "me"}, "forbidden")

		long := &worker{c: second.c, id: first.id, meta: mcp.Meta{hostKey: strings.Repeat("c", 129)}}
		if r := long.fails("chat_swarm_next", long.args("wait_secs", 0), "invalid_input"); r.details()["field"] != "_meta."+hostKey {
			t.Fatalf("a host key over 128 bytes = %v", r.Data)
		}
	})

	t.Run("untrusted", func(t *testing.T) {
		f := newFixture(t)
		owner := f.connectAt(f.token("ada", ownerScopes...), stateful).at(t)
		tok := f.token("ada", workerScopes...)
		conv := mcp.Meta{hostKey: "conv-" + carrierKey()}
		first := &worker{c: f.connectAt(tok, stateful).at(t), meta: conv}
		cr := owner.ok("chat_swarm_create", obj{"worker_limit": 2})
		j := first.join(cr.str("swarm", "swarm_id"), cr.str("invite"), "hosted")
		wantEq(t, "carrier_source", j.str("worker", "carrier_source"), "mcp_session")
		second := &worker{c: f.connectAt(tok, stateful).at(t), meta: conv, id: first.id}
		wantFenced(t, second.call("chat_swarm_next", second.args("wait_secs", 0)), 0)
		sl := &worker{c: f.connectAt(tok, stateless).at(t), meta: conv, id: first.id}
		if r := sl.fails("chat_swarm_next", sl.args("wait_secs", 0), "invalid_input"); r.details()["field"] != "carrier_key" {
			t.Fatalf("stateless with an untrusted key = %v", r.Data)
		}
	})
}

// stdio connects a client to a new stdio server (ServeStdio) that runs as
// principal with scopes: one connection, one carrier.
func (f *fixture) stdio(principal string, scopes ...continuo.Scope) *client {
	f.t.Helper()
	caller, err := f.auth.Principal(f.ctx, principal, scopes)
	if err != nil {
		f.t.Fatal(err)
	}
	srv := mcpserver.New(mcpserver.Options{Workflow: f.wf, Runs: f.runs, Swarm: f.sw, Caller: caller, Toolsets: mcpserver.AllToolsets}).Server(0)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- mcpserver.ServeStdio(f.ctx, srv, inR, outW); outW.Close() }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcpserver-test", Version: "1"}, nil).
		Connect(f.ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		f.t.Fatalf("connect over stdio: %v", err)
	}
	f.t.Cleanup(func() {
		cs.Close()
		inW.Close()
		if err := <-served; err != nil && err != context.Canceled {
			f.t.Errorf("ServeStdio: %v", err)
		}
	})
	return &client{t: f.t, cs: cs, schemas: &outputSchemas{}}
}

// TestSwarmStdio: over stdio the connection is the carrier: a worker joins
// and works without carrier_key; another stdio connection is another
// carrier, and a stdio conversation that owns a swarm does not join it.
func TestSwarmStdio(t *testing.T) {
	f := newFixture(t)
	owner := f.connectAt(f.token("ada", ownerScopes...), stateful).at(t)
	cr := owner.ok("chat_swarm_create", obj{"worker_limit": 2})
	swarmID, invite := cr.str("swarm", "swarm_id"), cr.str("invite")
	w := &worker{c: f.stdio("ada", workerScopes...).at(t)}
	j := w.join(swarmID, invite, "stdio")
	wantEq(t, "carrier_source", j.str("worker", "carrier_source"), "mcp_session")
	if r := w.ok("chat_swarm_join", obj{"swarm_id": swarmID, "invite": invite, "label": "stdio"}); r.Data["replayed"] != true {
		t.Fatalf("join again = %v", r.Data)
	}

	task := owner.ok("chat_swarm_dispatch", obj{"swarm_id": swarmID, "task_key": "t1", "prompt": "p"}).str("task", "task_id")
	wantEq(t, "next", w.ok("chat_swarm_next", w.args("wait_secs", 0)).str("task", "task_id"), task)
	w.ok("chat_swarm_ack", w.args("task_id", task))
	w.ok("chat_swarm_checkpoint", w.args("checkpoint", obj{"summary": "working"}))
	w.ok("chat_swarm_submit", w.args("task_id", task, "result", "over stdio"))
	wantEq(t, "collected", owner.ok("chat_swarm_collect", obj{"swarm_id": swarmID, "task_id": task}).str("task", "result"), "over stdio")

	both := &worker{c: f.stdio("ada", continuo.ScopeSwarmOwn, continuo.ScopeSwarmWork).at(t), id: w.id}
	wantFenced(t, both.call("chat_swarm_next", both.args("wait_secs", 0)), 0)
	own := both.c.ok("chat_swarm_create", obj{"worker_limit": 1})
	both.fails("chat_swarm_join", obj{"swarm_id": own.str("swarm", "swarm_id"), "invite": own.str("invite"), "label": "self"}, "forbidden")
}

// headerTransport adds a bearer token and one more header to every request.
type headerTransport struct{ token, name, value string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+h.token)
	r.Header.Set(h.name, h.value)
	return http.DefaultTransport.RoundTrip(r)
}

// TestSwarmStatelessSessionHeader: on the stateless protocol nothing
// checks an Mcp-Session-Id a request sends (there are no sessions), so it
// is no carrier: carrier_key is.
func TestSwarmStatelessSessionHeader(t *testing.T) {
	f := newFixture(t)
	owner := f.connectAt(f.token("ada", ownerScopes...), stateless).at(t)
	cr := owner.ok("chat_swarm_create", obj{"worker_limit": 2})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcpserver-test", Version: "1"}, nil).Connect(f.ctx,
		&mcp.StreamableClientTransport{Endpoint: f.url, MaxRetries: -1, HTTPClient: &http.Client{
			Transport: headerTransport{token: f.token("ada", workerScopes...), name: "Mcp-Session-Id", value: "made-up-session"}}},
		&mcp.ClientSessionOptions{ProtocolVersion: stateless})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	w := &worker{c: &client{t: t, cs: cs, schemas: &outputSchemas{}}}
	join := obj{"swarm_id": cr.str("swarm", "swarm_id"), "invite": cr.str("invite"), "label": "w"}
	if r := w.fails("chat_swarm_join", join, "invalid_input"); r.details()["field"] != "carrier_key" {
		t.Fatalf("join without carrier_key = %v", r.Data)
	}
	w.key = carrierKey()
	wantEq(t, "carrier_source", w.join(join["swarm_id"].(string), join["invite"].(string), "w").str("worker", "carrier_source"), "carrier_key")
}
