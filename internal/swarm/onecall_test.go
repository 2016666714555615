package swarm_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/swarm"
)

// The one-call protocol (issue 24): a batch dispatch, next that acks,
// submit that asks for the next task, collect of every ready result.

func items(keys ...string) []swarm.DispatchItem {
	out := make([]swarm.DispatchItem, len(keys))
	for i, k := range keys {
		out[i] = swarm.DispatchItem{TaskKey: k, Prompt: "do " + k}
	}
	return out
}

func (f *fixture) counts(swarmID string) map[continuo.TaskState]int {
	f.t.Helper()
	st, err := f.svc.SwarmStatus(f.t.Context(), f.owner, ownerCar, swarmID)
	if err != nil {
		f.t.Fatal(err)
	}
	return st.Counts
}

// TestDispatchBatch: a batch is one transaction, all or none, its tasks
// in order; each item replays by its key (an item repeating an earlier
// one's key and content is the same task); an item that cannot be queued
// fails the batch and names its index; the bounds hold before any work.
func TestDispatchBatch(t *testing.T) { stores.Each(t, testDispatchBatch) }

func testDispatchBatch(t *testing.T) {
	f, inv := newSwarm(t)
	ctx := t.Context()
	id := inv.Swarm.ID
	x := f.join(inv, "x")
	batch := items("a", "b", "c")
	batch[1].Payload, batch[2].PreferredWorkerID = json.RawMessage(`{"n": 1}`), x.ref.WorkerID
	rs, err := f.svc.DispatchBatch(ctx, f.owner, ownerCar, id, batch)
	if err != nil || len(rs) != 3 {
		t.Fatalf("batch: %v, %v", rs, err)
	}
	for i, r := range rs {
		if r.Replayed || r.Task.TaskKey != batch[i].TaskKey || r.Task.State != continuo.TaskQueued {
			t.Errorf("item %d: %+v", i, r)
		}
	}
	if rs[1].Task.Payload != `{"n":1}` || rs[2].Task.PreferredWorkerID != x.ref.WorkerID {
		t.Errorf("payload %q, preferred %q", rs[1].Task.Payload, rs[2].Task.PreferredWorkerID)
	}

	// The same batch again, grown by a new task and by a repeat of one of
	// its own items: the old ones and the repeat replay, the new one is
	// queued.
	again := append(append([]swarm.DispatchItem{}, batch...), items("d")[0], batch[0])
	rs2, err := f.svc.DispatchBatch(ctx, f.owner, ownerCar, id, again)
	if err != nil || len(rs2) != 5 {
		t.Fatalf("batch again: %v, %v", rs2, err)
	}
	for i, want := range []bool{true, true, true, false, true} {
		if rs2[i].Replayed != want || i < 3 && rs2[i].Task.ID != rs[i].Task.ID {
			t.Errorf("item %d again: %+v, want replayed %v", i, rs2[i], want)
		}
	}
	if rs2[4].Task.ID != rs[0].Task.ID {
		t.Errorf("the repeated item is %s, want %s", rs2[4].Task.ID, rs[0].Task.ID)
	}
	// A repeat within one new batch is the same task.
	dup, err := f.svc.DispatchBatch(ctx, f.owner, ownerCar, id, items("e", "e"))
	if err != nil || dup[0].Task.ID != dup[1].Task.ID || dup[0].Replayed || !dup[1].Replayed {
		t.Fatalf("a key twice in one batch: %+v, %v", dup, err)
	}
	if n := f.counts(id)[continuo.TaskQueued]; n != 5 {
		t.Fatalf("%d queued, want 5", n)
	}

	// All or none: the conflicting item names its index, and the new
	// items before it are not queued.
	bad := items("f", "g", "a", "h")
	bad[2].Prompt = "something else"
	_, err = f.svc.DispatchBatch(ctx, f.owner, ownerCar, id, bad)
	if e := wantCode(t, err, continuo.CodeConflict, "a changed key in a batch"); e.Details["index"] != 2 {
		t.Fatalf("conflict details %v, want index 2", e.Details)
	}
	clash := items("i", "i")
	clash[1].Prompt = "another"
	_, err = f.svc.DispatchBatch(ctx, f.owner, ownerCar, id, clash)
	if e := wantCode(t, err, continuo.CodeConflict, "one key twice with two prompts"); e.Details["index"] != 1 {
		t.Fatalf("conflict details %v, want index 1", e.Details)
	}
	unknown := items("j", "k")
	unknown[1].PreferredWorkerID = continuo.NewID(continuo.PrefixWorker, time.Now())
	_, err = f.svc.DispatchBatch(ctx, f.owner, ownerCar, id, unknown)
	if e := wantCode(t, err, continuo.CodeInvalidInput, "an unknown preferred worker"); e.Details["field"] != "tasks[1].preferred_worker_id" || e.Details["index"] != 1 {
		t.Fatalf("details %v", e.Details)
	}
	if n := f.counts(id)[continuo.TaskQueued]; n != 5 {
		t.Fatalf("after the refused batches %d queued, want 5", n)
	}

	// Bounds, before any work: the number of items, each item's fields,
	// the bytes of all prompts and payloads together.
	for _, c := range []struct {
		name  string
		items []swarm.DispatchItem
		code  continuo.Code
		field string
	}{
		{"none", nil, continuo.CodeInvalidInput, "tasks"},
		{"101", items(strings.Split(strings.Repeat("k,", 100)+"k", ",")...), continuo.CodeInvalidInput, "tasks"},
		{"an empty prompt", []swarm.DispatchItem{{TaskKey: "x"}, {TaskKey: "y"}}, continuo.CodeInvalidInput, "tasks[0].prompt"},
		{"a payload that is not JSON", []swarm.DispatchItem{{TaskKey: "x", Prompt: "p"}, {TaskKey: "y", Prompt: "p", Payload: json.RawMessage("{")}},
			continuo.CodeInvalidInput, "tasks[1].payload"},
		{"over the batch's bytes", bulky(9, continuo.MaxTaskPrompt), continuo.CodeTooLarge, "tasks"},
	} {
		_, err := f.svc.DispatchBatch(ctx, f.owner, ownerCar, id, c.items)
		if e := wantCode(t, err, c.code, c.name); e.Details["field"] != c.field {
			t.Errorf("%s: field %v, want %s", c.name, e.Details["field"], c.field)
		}
	}
	// The queue's limit holds for the batch as a whole.
	full := make([]swarm.DispatchItem, 0, continuo.MaxDispatchBatch)
	for i := 0; len(full) < continuo.MaxDispatchBatch; i++ {
		full = append(full, swarm.DispatchItem{TaskKey: fmt.Sprint("q", i), Prompt: "p"})
	}
	for b := 0; b < 9; b++ {
		for i := range full {
			full[i].TaskKey = fmt.Sprintf("q%d.%d", b, i)
		}
		if _, err := f.svc.DispatchBatch(ctx, f.owner, ownerCar, id, full); err != nil {
			t.Fatalf("batch %d: %v", b, err)
		}
	}
	for i := range full {
		full[i].TaskKey = fmt.Sprintf("q9.%d", i)
	}
	_, err = f.svc.DispatchBatch(ctx, f.owner, ownerCar, id, full)
	wantCode(t, err, continuo.CodeQueueFull, "a batch past the queue's limit")
	if n := f.counts(id)[continuo.TaskQueued]; n != 905 {
		t.Fatalf("%d queued, want 905: a refused batch queues nothing", n)
	}
}

// bulky is n items of prompts of size bytes.
func bulky(n, size int) []swarm.DispatchItem {
	out := make([]swarm.DispatchItem, n)
	for i := range out {
		out[i] = swarm.DispatchItem{TaskKey: fmt.Sprint("big", i), Prompt: strings.Repeat("p", size)}
	}
	return out
}

// TestNextAck: next with ack claims and marks the task running in one
// call; its replay redelivers the same task, running; a task claimed
// without ack is acked by a next with ack that redelivers it.
func TestNextAck(t *testing.T) { stores.Each(t, testNextAck) }

func testNextAck(t *testing.T) {
	f, inv := newSwarm(t)
	ctx := t.Context()
	x, y := f.join(inv, "x"), f.join(inv, "y")
	task := f.dispatch(inv.Swarm.ID, "one", "")
	d, err := f.svc.Deliver(ctx, x.c, x.car, x.ref, swarm.NextOptions{Ack: true})
	if err != nil || d.State != swarm.NextTask || d.Task.ID != task.ID || d.Task.State != continuo.TaskRunning ||
		d.Attempt.State != continuo.AttemptRunning || d.Attempt.AckedAt == nil {
		t.Fatalf("next with ack: %+v %v", d, err)
	}
	again, err := f.svc.Deliver(ctx, x.c, x.car, x.ref, swarm.NextOptions{Ack: true})
	if err != nil || !again.Redelivery || again.Task.ID != task.ID || again.Attempt.ID != d.Attempt.ID || again.Task.State != continuo.TaskRunning {
		t.Fatalf("its replay: %+v %v", again, err)
	}
	// Claimed without ack, then acked by a redelivering next with ack.
	other := f.dispatch(inv.Swarm.ID, "two", "")
	if d := f.next(y); d.Task.ID != other.ID || d.Task.State != continuo.TaskClaimed {
		t.Fatalf("next without ack: %+v", d)
	}
	if d, err := f.svc.Deliver(ctx, y.c, y.car, y.ref, swarm.NextOptions{Ack: true}); err != nil || !d.Redelivery ||
		d.Task.State != continuo.TaskRunning || d.Attempt.State != continuo.AttemptRunning {
		t.Fatalf("a redelivery with ack: %+v %v", d, err)
	}
	if ts := f.task(inv.Swarm.ID, other.ID); ts.Task.State != continuo.TaskRunning || ts.Attempt.AckedAt == nil {
		t.Fatalf("the task after it: %+v", ts)
	}
}

// TestSubmitNext: a submit that asks for the next task gets it, claimed
// and running, in the same call; its identical replay (a lost answer)
// returns the same next task again; a next half that fails leaves the
// submit standing and says why; without work the next half waits and
// says idle, and in a closed swarm closed.
func TestSubmitNext(t *testing.T) { stores.Each(t, testSubmitNext) }

func testSubmitNext(t *testing.T) {
	f, inv := newSwarm(t)
	ctx := t.Context()
	id := inv.Swarm.ID
	x := f.join(inv, "x")
	if _, err := f.svc.DispatchBatch(ctx, f.owner, ownerCar, id, items("a", "b", "c")); err != nil {
		t.Fatal(err)
	}
	d, err := f.svc.Deliver(ctx, x.c, x.car, x.ref, swarm.NextOptions{Ack: true})
	if err != nil || d.Task.TaskKey != "a" {
		t.Fatalf("first next: %+v %v", d, err)
	}
	ack := swarm.NextOptions{Ack: true}
	s, err := f.svc.SubmitNext(ctx, x.c, x.car, x.ref, d.Task.ID, "A", ack)
	if err != nil || s.Task.State != continuo.TaskResultReady || s.Replayed || s.NextErr != nil || s.Next.State != swarm.NextTask ||
		s.Next.Task.TaskKey != "b" || s.Next.Task.State != continuo.TaskRunning || s.Next.Redelivery {
		t.Fatalf("submit with next: %+v %v", s, err)
	}
	replay, err := f.svc.SubmitNext(ctx, x.c, x.car, x.ref, d.Task.ID, "A", ack)
	if err != nil || !replay.Replayed || replay.Next.Task.ID != s.Next.Task.ID || !replay.Next.Redelivery ||
		replay.Next.Attempt.ID != s.Next.Attempt.ID {
		t.Fatalf("its replay: %+v %v", replay, err)
	}
	_, err = f.svc.SubmitNext(ctx, x.c, x.car, x.ref, d.Task.ID, "A changed", ack)
	wantCode(t, err, continuo.CodeTerminalImmutable, "another result after it")

	// The next half fails after its claim wrote (submit and claim are one
	// transaction, the claim in a savepoint): the submit stands, the
	// failure is said, and the claim is undone — c is queued again and x
	// holds nothing.
	b := s.Next.Task
	broken := errors.New("the next half broke")
	var claimed string
	r, err := swarm.SubmitNextBetween(ctx, f.svc, x.c, x.car, x.ref, b.ID, "B", ack, func() error {
		claimed = "yes"
		return broken
	})
	if err != nil || r.Task.State != continuo.TaskResultReady || r.Next != nil || !errors.Is(r.NextErr, broken) || claimed == "" {
		t.Fatalf("a failed next half: %+v %v", r, err)
	}
	if ts := f.task(id, b.ID); ts.Task.State != continuo.TaskResultReady || ts.Task.Result != "B" {
		t.Fatalf("the submit of a failed next half: %+v", ts.Task)
	}
	queued, err := f.svc.ListTasks(ctx, f.owner, ownerCar, id, continuo.TaskQueued, "", 10)
	if err != nil || len(queued.Tasks) != 1 || queued.Tasks[0].TaskKey != "c" || queued.Tasks[0].Attempt != 0 {
		t.Fatalf("queued after a failed next half: %+v %v, want c alone, never claimed (its claim rolled back)", queued, err)
	}
	st, err := f.svc.SwarmStatus(ctx, f.owner, ownerCar, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range st.Workers {
		if w.ID == x.ref.WorkerID && (w.CurrentTaskID != "" || w.State != continuo.WorkerIdle) {
			t.Fatalf("x after a failed next half: %+v, want idle holding nothing", w)
		}
	}
	// The owner removes x: the task c goes to another worker.
	if _, err := f.svc.RemoveWorker(ctx, f.owner, ownerCar, id, x.ref.WorkerID); err != nil {
		t.Fatal(err)
	}

	// A new worker takes the task preferring it first, then c; then the
	// swarm closes.
	z := f.join(inv, "z")
	c2 := f.dispatch(id, "c2", z.ref.WorkerID)
	if dz, _ := f.svc.Deliver(ctx, z.c, z.car, z.ref, ack); dz.Task.ID != c2.ID {
		t.Fatalf("z got %+v, want the task preferring it", dz.Task)
	}
	sz, err := f.svc.SubmitNext(ctx, z.c, z.car, z.ref, c2.ID, "C2", swarm.NextOptions{Ack: true})
	if err != nil || sz.Next.State != swarm.NextTask || sz.Next.Task.TaskKey != "c" {
		t.Fatalf("z's submit with next: %+v %v", sz, err)
	}
	last := sz.Next.Task
	if _, err := f.svc.Submit(ctx, z.c, z.car, z.ref, last.ID, "C"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.CollectReady(ctx, f.owner, ownerCar, swarm.CollectInput{SwarmID: id, Limit: 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.CloseSwarm(ctx, f.owner, ownerCar, id); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Deliver(ctx, z.c, z.car, z.ref, swarm.NextOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.SubmitNext(ctx, z.c, z.car, z.ref, last.ID, "C", swarm.NextOptions{Wait: 30 * time.Second})
	if e := wantCode(t, err, continuo.CodeInvalidInput, "next.wait_secs 30"); e.Details["field"] != "next.wait_secs" {
		t.Fatalf("details %v", e.Details)
	}
	closed, err := f.svc.SubmitNext(ctx, z.c, z.car, z.ref, last.ID, "C", swarm.NextOptions{Wait: time.Second})
	if err != nil || !closed.Replayed || closed.Next.State != swarm.NextClosed {
		t.Fatalf("a replayed submit with next in a closed swarm: %+v %v", closed, err)
	}
}

// TestCollectReady: collect without a task takes the ready results oldest
// first, up to its limit, each once; with a key its replay returns what
// the first call took, and another limit under that key is a conflict;
// with none ready it waits, and a submit notifies the swarm's results'
// channel — the wake-up a waiting collect listens for.
func TestCollectReady(t *testing.T) { stores.Each(t, testCollectReady) }

func testCollectReady(t *testing.T) {
	f, inv := newSwarm(t)
	ctx := t.Context()
	id := inv.Swarm.ID
	x := f.join(inv, "x")
	rs, err := f.svc.DispatchBatch(ctx, f.owner, ownerCar, id, items("a", "b", "c", "d", "e"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range rs {
		d := f.next(x)
		if _, err := f.svc.Submit(ctx, x.c, x.car, x.ref, d.Task.ID, "result "+d.Task.TaskKey); err != nil {
			t.Fatal(err)
		}
		if d.Task.ID != rs[i].Task.ID {
			t.Fatalf("delivery %d is %s, want %s", i, d.Task.ID, rs[i].Task.ID)
		}
	}
	got, err := f.svc.CollectReady(ctx, f.owner, ownerCar, swarm.CollectInput{SwarmID: id, Limit: 2, Key: "k1"})
	if err != nil || len(got.Tasks) != 2 || got.Replayed || got.Tasks[0].TaskKey != "a" || got.Tasks[1].TaskKey != "b" ||
		got.Tasks[0].State != continuo.TaskCollected || got.Tasks[0].Result != "result a" {
		t.Fatalf("collect 2: %+v %v", got, err)
	}
	again, err := f.svc.CollectReady(ctx, f.owner, ownerCar, swarm.CollectInput{SwarmID: id, Limit: 2, Key: "k1"})
	if err != nil || !again.Replayed || len(again.Tasks) != 2 || again.Tasks[0].ID != got.Tasks[0].ID || again.Tasks[1].ID != got.Tasks[1].ID {
		t.Fatalf("its replay: %+v %v", again, err)
	}
	_, err = f.svc.CollectReady(ctx, f.owner, ownerCar, swarm.CollectInput{SwarmID: id, Limit: 3, Key: "k1"})
	wantCode(t, err, continuo.CodeConflict, "the key with another limit")
	rest, err := f.svc.CollectReady(ctx, f.owner, ownerCar, swarm.CollectInput{SwarmID: id})
	if err != nil || len(rest.Tasks) != 3 || rest.Tasks[0].TaskKey != "c" || rest.Tasks[2].TaskKey != "e" {
		t.Fatalf("collect the rest: %+v %v", rest, err)
	}
	none, err := f.svc.CollectReady(ctx, f.owner, ownerCar, swarm.CollectInput{SwarmID: id, Key: "k2"})
	if err != nil || len(none.Tasks) != 0 {
		t.Fatalf("collect of none ready: %+v %v", none, err)
	}
	if counts := f.counts(id); counts[continuo.TaskCollected] != 5 || len(counts) != 1 {
		t.Fatalf("counts %v", counts)
	}
	for _, in := range []swarm.CollectInput{{SwarmID: id, Limit: 101}, {SwarmID: id, Wait: 26 * time.Second}} {
		_, err := f.svc.CollectReady(ctx, f.owner, ownerCar, in)
		wantCode(t, err, continuo.CodeInvalidInput, fmt.Sprintf("%+v", in))
	}
	_, err = f.svc.CollectReady(ctx, f.outer, ownerCar, swarm.CollectInput{SwarmID: id})
	wantCode(t, err, continuo.CodeNotFound, "another group's swarm")

	// A submit notifies the results' channel; a waiting collect takes the
	// result.
	notes, err := f.store.Listen(ctx, "swarm-ready:"+id)
	if err != nil {
		t.Fatal(err)
	}
	late := f.dispatch(id, "late", "")
	waited := make(chan *swarm.Collected, 1)
	go func() {
		c, err := f.svc.CollectReady(ctx, f.owner, ownerCar, swarm.CollectInput{SwarmID: id, Wait: 25 * time.Second})
		if err != nil {
			t.Error(err)
		}
		waited <- c
	}()
	d := f.next(x)
	if _, err := f.svc.Submit(ctx, x.c, x.car, x.ref, d.Task.ID, "late result"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-notes:
	case <-time.After(10 * time.Second):
		t.Fatal("the submit notified nothing on the swarm's results' channel")
	}
	select {
	case c := <-waited:
		if c == nil || len(c.Tasks) != 1 || c.Tasks[0].ID != late.ID || c.Tasks[0].Result != "late result" {
			t.Fatalf("the waiting collect: %+v", c)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting collect did not return")
	}
}

// TestJoinTicketLabel: a carrier continuing a worker may name its label:
// the worker's own is accepted, another is invalid_input naming label and
// binds nothing (the ticket still binds).
func TestJoinTicketLabel(t *testing.T) { stores.Each(t, testJoinTicketLabel) }

func testJoinTicketLabel(t *testing.T) {
	f, inv := newSwarm(t)
	ctx := t.Context()
	x := f.checkpointed(inv, "reviewer")
	p := f.prepare(inv, x)
	_, err := f.svc.RedeemAs(ctx, x.c, f.carrier(), inv.Swarm.ID, p.Ticket, "someone else")
	if e := wantCode(t, err, continuo.CodeInvalidInput, "another label"); e.Details["field"] != "label" {
		t.Fatalf("details %v", e.Details)
	}
	car := f.carrier()
	b, err := f.svc.RedeemAs(ctx, x.c, car, inv.Swarm.ID, p.Ticket, "reviewer")
	if err != nil || b.Worker.Epoch != 1 || b.Worker.Label != "reviewer" {
		t.Fatalf("its own label: %+v %v", b, err)
	}
	if b, err := f.svc.RedeemAs(ctx, x.c, car, inv.Swarm.ID, p.Ticket, "reviewer"); err != nil || !b.Replayed {
		t.Fatalf("the receipt with the label: %+v %v", b, err)
	}
	_, err = f.svc.RedeemAs(ctx, x.c, car, inv.Swarm.ID, p.Ticket, "other")
	wantCode(t, err, continuo.CodeInvalidInput, "the receipt with another label")
}
