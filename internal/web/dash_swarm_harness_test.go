package web_test

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/swarm"
)

// The swarm pages' tests build their swarms through the real swarm
// service, as an owner conversation and worker conversations would (each
// its own carrier), and look at them through the owner's browser, whose
// own carrier is the dashboard's.

// swarmWorld is one group's swarm: its owner (a swarm:own token, signed in
// in b), the principal of the group its workers run as, and the swarm with
// its invite.
type swarmWorld struct {
	t     *testing.T
	s     *dashServer
	name  string
	owner *continuo.Caller
	car   swarm.Carrier // the owner conversation's carrier
	crew  *continuo.Caller
	inv   *swarm.Invited
	b     *dashBrowser
	n     int
}

func newSwarmWorld(t *testing.T, s *dashServer, name string, policy *continuo.SwarmPolicy) *swarmWorld {
	t.Helper()
	tok := s.token(name, continuo.ScopeSessionsRead, continuo.ScopeSwarmOwn)
	w := &swarmWorld{t: t, s: s, name: name, owner: s.caller(tok), crew: s.caller(s.member(name+"-crew", name, continuo.ScopeSwarmWork))}
	w.car = w.carrier()
	inv, err := s.swarm.Create(t.Context(), w.owner, w.car, swarm.CreateInput{WorkerLimit: 8, Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	w.inv, w.b = inv, s.browser(tok)
	return w
}

func (w *swarmWorld) id() string { return w.inv.Swarm.ID }

// carrier returns a new conversation's identity.
func (w *swarmWorld) carrier() swarm.Carrier {
	w.n++
	return swarm.Carrier{Source: continuo.CarrierFromKey, Key: fmt.Sprintf("%s-conversation-%022d", w.name, w.n)}
}

// swarmHand is a worker as its carrier holds it.
type swarmHand struct {
	car swarm.Carrier
	ref swarm.WorkerRef
}

func (w *swarmWorld) join(label string) *swarmHand {
	w.t.Helper()
	car := w.carrier()
	j, err := w.s.swarm.Join(w.t.Context(), w.crew, car, swarm.JoinInput{SwarmID: w.id(), Invite: w.inv.Invite, Label: label})
	if err != nil {
		w.t.Fatal(err)
	}
	return &swarmHand{car: car, ref: swarm.WorkerRef{WorkerID: j.Worker.ID, Epoch: j.Worker.Epoch}}
}

// checkpointed joins a worker that checkpointed (a safe boundary).
func (w *swarmWorld) checkpointed(label string) *swarmHand {
	w.t.Helper()
	x := w.join(label)
	cp, _ := json.Marshal(map[string]string{"summary": label + " at work"})
	if _, err := w.s.swarm.Checkpoint(w.t.Context(), w.crew, x.car, x.ref, cp); err != nil {
		w.t.Fatal(err)
	}
	return x
}

func (w *swarmWorld) dispatch(key, prompt, prefer string) *continuo.Task {
	w.t.Helper()
	r, err := w.s.swarm.Dispatch(w.t.Context(), w.owner, w.car, swarm.DispatchInput{SwarmID: w.id(), TaskKey: key, Prompt: prompt, PreferredWorkerID: prefer})
	if err != nil {
		w.t.Fatal(err)
	}
	return &r.Task
}

func (w *swarmWorld) next(x *swarmHand) *swarm.Delivery {
	w.t.Helper()
	d, err := w.s.swarm.Next(w.t.Context(), w.crew, x.car, x.ref, 0, nil)
	if err != nil || d.State != swarm.NextTask {
		w.t.Fatalf("next: %+v %v", d, err)
	}
	return d
}

// inDoubt makes a task that x claimed and then failed without knowing
// whether it acted: reconcile_required, with its attempt in doubt.
func (w *swarmWorld) inDoubt(x *swarmHand, key, note string) (*continuo.Task, *continuo.Attempt) {
	w.t.Helper()
	task := w.dispatch(key, "do "+key, x.ref.WorkerID)
	d := w.next(x)
	if d.Task.ID != task.ID {
		w.t.Fatalf("x took %s, not %s", d.Task.ID, task.ID)
	}
	r, err := w.s.swarm.Fail(w.t.Context(), w.crew, x.car, x.ref, task.ID, note, swarm.EffectMaybe)
	if err != nil || r.Task.State != continuo.TaskReconcileRequired {
		w.t.Fatalf("fail with effect unknown: %+v %v", r, err)
	}
	return &r.Task, d.Attempt
}

// request is a new conversation of x's principal asking to continue x
// (the approval path); it returns the request and that conversation.
func (w *swarmWorld) request(x *swarmHand, reason string) (*continuo.Continuation, swarm.Carrier) {
	w.t.Helper()
	car := w.carrier()
	cn, _, err := w.s.swarm.Request(w.t.Context(), w.crew, car, swarm.RequestInput{SwarmID: w.id(), WorkerID: x.ref.WorkerID,
		SourceEpoch: x.ref.Epoch, Reason: reason})
	if err != nil {
		w.t.Fatal(err)
	}
	return cn, car
}

// inDoubtContinuation prepares a ticket continuation of x and puts it
// where a carrier start whose outcome is unknown leaves it (the planner's
// doing; written here directly): reconcile_required.
func (w *swarmWorld) inDoubtContinuation(x *swarmHand) *continuo.Continuation {
	w.t.Helper()
	ctx := w.t.Context()
	p, err := w.s.swarm.Prepare(ctx, w.owner, w.car, w.id(), x.ref.WorkerID, "context full", 0)
	if err != nil {
		w.t.Fatal(err)
	}
	cn := p.Continuation
	if err := w.s.store.Write(ctx, func(tx store.Tx) error {
		c, err := tx.ContinuationGet(ctx, cn.ID)
		if err != nil {
			return err
		}
		prev := c.Version
		c.CarrierOp, c.Version = continuo.OpUnknown, prev+1
		if err := tx.ContinuationMove(ctx, c, prev, continuo.ContinuationReconcileRequired); err != nil {
			return err
		}
		cn = *c
		return nil
	}); err != nil {
		w.t.Fatal(err)
	}
	return &cn
}

func (w *swarmWorld) task(id string) *swarm.TaskStatus {
	w.t.Helper()
	ts, err := w.s.swarm.TaskStatus(w.t.Context(), w.owner, w.car, w.id(), id)
	if err != nil {
		w.t.Fatal(err)
	}
	return ts
}

func (w *swarmWorld) status() *swarm.Status {
	w.t.Helper()
	st, err := w.s.swarm.SwarmStatus(w.t.Context(), w.owner, w.car, w.id())
	if err != nil {
		w.t.Fatal(err)
	}
	return st
}

// history returns the swarm's continuations (a page's worth, newest
// first) as its owner's overview reads them.
func (w *swarmWorld) history() []continuo.Continuation {
	w.t.Helper()
	o, err := w.s.swarm.Overview(w.t.Context(), w.owner, w.car, w.id(), swarm.OverviewInput{Bucket: time.Hour, Buckets: 1})
	if err != nil {
		w.t.Fatal(err)
	}
	return o.History.Continuations
}

// continuation returns one of the swarm's continuations as stored.
func (w *swarmWorld) continuation(id string) *continuo.Continuation {
	w.t.Helper()
	for _, c := range w.history() {
		if c.ID == id {
			return &c
		}
	}
	w.t.Fatalf("no continuation %s", id)
	return nil
}

// swarmHas fails the test unless body holds every one of want.
func swarmHas(t *testing.T, what, body string, want ...string) {
	t.Helper()
	for _, s := range want {
		if !strings.Contains(body, s) {
			t.Errorf("%s lacks %q", what, s)
		}
	}
	if t.Failed() {
		t.Fatalf("%s:\n%s", what, body)
	}
}

// swarmLacks fails the test if body holds any of bad.
func swarmLacks(t *testing.T, what, body string, bad ...string) {
	t.Helper()
	for _, s := range bad {
		if strings.Contains(body, s) {
			t.Fatalf("%s holds %q:\n%s", what, s, body)
		}
	}
}

// swarmPost posts a form from the browser with the given Origin header
// ("" for none).
func swarmPost(b *dashBrowser, origin, path string, form url.Values) response {
	b.s.t.Helper()
	req, _ := http.NewRequest("POST", b.s.url+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	return do(b.s.t, b.c, req)
}

// swarmEscaped is s as html/template writes it in text.
func swarmEscaped(s string) string { return html.EscapeString(s) }
