package mcpserver_test

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// swarmTools are Chat Swarm's tools; TestSwarmBadInput holds their bad
// input.
var swarmTools = []string{"chat_swarm_create", "chat_swarm_invite", "chat_swarm_join", "chat_swarm_dispatch", "chat_swarm_next",
	"chat_swarm_ack", "chat_swarm_checkpoint", "chat_swarm_submit", "chat_swarm_fail", "chat_swarm_leave", "chat_swarm_status", "chat_swarm_collect",
	"chat_swarm_cancel", "chat_swarm_reconcile", "chat_swarm_close", "chat_swarm_remove_worker",
	"chat_swarm_prepare_continuation", "chat_swarm_request_continuation", "chat_swarm_approve_continuation", "chat_swarm_revoke_continuation",
	"chat_swarm_reconcile_continuation", "chat_swarm_continuation_status", "chat_swarm_report_context", "chat_swarm_context_status"}

// The protocol versions the swarm tests speak: stateful sessions (the
// session is the carrier) and stateless requests (carrier_key is).
const (
	stateful  = "2025-11-25"
	stateless = "2026-07-28"
)

var (
	ownerScopes  = []continuo.Scope{continuo.ScopeSwarmOwn}
	workerScopes = []continuo.Scope{continuo.ScopeSwarmWork}
)

// swarmTables are the tables the swarm tools write.
var swarmTables = []string{"swarms", "workers", "carriers", "tasks", "attempts", "continuations", "context_ledger"}

// swarmFingerprint lists every row of the swarm tables, and the sessions'
// fingerprint: any write of a swarm tool changes it.
func (f *fixture) swarmFingerprint() string {
	f.t.Helper()
	var b strings.Builder
	err := f.db.Read(f.ctx, func(tx store.Tx) error {
		for _, table := range swarmTables {
			if err := tx.TableRows(f.ctx, table, func(row map[string]any) error {
				fmt.Fprintf(&b, "%s %v\n", table, row) // fmt sorts a map's keys
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		f.t.Fatalf("swarm fingerprint: %v", err)
	}
	return b.String() + f.fingerprint()
}

// carrierKey returns a new carrier_key: 32 random bytes, base64url.
func carrierKey() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// worker is a swarm worker as its carrier calls: a client connection, and
// the carrier_key it passes ("" when the session is the carrier) or the
// _meta it sends.
type worker struct {
	c     *client
	id    string
	epoch float64
	key   string
	meta  mcp.Meta
}

// args are a worker call's arguments: worker_id, epoch, carrier_key (when
// it has one) and kv, pairs of name and value.
func (w *worker) args(kv ...any) obj {
	a := obj{"worker_id": w.id, "epoch": w.epoch}
	if w.key != "" {
		a["carrier_key"] = w.key
	}
	return with(a, kv...)
}

// call calls a worker tool as w, with w's _meta.
func (w *worker) call(name string, args obj) result {
	w.c.t.Helper()
	return w.c.callWith(&mcp.CallToolParams{Name: name, Arguments: args, Meta: w.meta})
}

func (w *worker) ok(name string, args obj) result {
	w.c.t.Helper()
	r := w.call(name, args)
	if r.IsError {
		w.c.t.Fatalf("%s(%v) failed: %v", name, args, r.Data)
	}
	return r
}

func (w *worker) fails(name string, args obj, code string) result {
	w.c.t.Helper()
	return w.c.wantError(name, args, w.call(name, args), code)
}

// join joins w to a swarm with an invite and sets its worker ID and epoch.
func (w *worker) join(swarmID, invite, label string) result {
	w.c.t.Helper()
	a := obj{"swarm_id": swarmID, "invite": invite, "label": label}
	if w.key != "" {
		a["carrier_key"] = w.key
	}
	r := w.ok("chat_swarm_join", a)
	w.id, w.epoch = r.str("worker", "worker_id"), r.num("worker", "epoch")
	return r
}

// memberToken issues a token for a new principal of an existing group.
func (f *fixture) memberToken(principal, group string, scopes ...continuo.Scope) string {
	f.t.Helper()
	if _, err := f.auth.CreatePrincipal(f.ctx, principal, group); err != nil {
		f.t.Fatalf("CreatePrincipal(%s): %v", principal, err)
	}
	return f.token(principal, scopes...)
}

// absent, as a value given to with, removes the argument.
var absent = &struct{}{}

// with returns a copy of a with kv (pairs of name and value) set.
func with(a obj, kv ...any) obj {
	out := obj{}
	for k, v := range a {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		k := kv[i].(string)
		if kv[i+1] == absent {
			delete(out, k)
		} else {
			out[k] = kv[i+1]
		}
	}
	return out
}

// wantEq fails unless got equals want.
func wantEq(t *testing.T, what string, got, want any) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

// wantFenced fails unless r is carrier_fenced telling the current epoch.
func wantFenced(t *testing.T, r result, epoch float64) {
	t.Helper()
	if r.code() != "carrier_fenced" || r.details()["epoch"] != epoch {
		t.Fatalf("want carrier_fenced at epoch %v: %v", epoch, r.Data)
	}
}
