package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/continuo-dev/continuo/internal/syncbuf"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The continuity stress test (issue 12): one worker continued a thousand
// times in a row from carrier process to carrier process, while the
// server and the carriers are SIGKILLed at random. Carriers are this test
// binary started again with carrierEnv set (TestMain hands it to
// carrierMain): a stateless MCP client (protocol 2026-07-28) with the
// carrier_key and the continuation ticket it was given in its environment.
// It redeems the ticket, checkpoints, and loops chat_swarm_next; a task it
// gets is executed by appending a line to the executions log (the truth
// the owner reconciles with), then acked, checkpointed and submitted. It
// tells the test what it did in JSON lines on stdout.

// The environment of a carrier process.
const (
	carrierEnv     = "CONTINUO_E2E_CARRIER" // set: this process is a carrier
	carrierURLFile = "CONTINUO_E2E_URL_FILE"
	carrierToken   = "CONTINUO_E2E_TOKEN"
	carrierSwarm   = "CONTINUO_E2E_SWARM"
	carrierTicket  = "CONTINUO_E2E_TICKET"
	carrierKeyEnv  = "CONTINUO_E2E_CARRIER_KEY"
	carrierExecLog = "CONTINUO_E2E_EXEC_LOG"
	carrierLose    = "CONTINUO_E2E_LOSE_REDEEM" // set: the first answer to the redeem is dropped, as if lost with its server
)

// carrierPatience is how long a carrier keeps calling a server that does
// not answer (one being killed and started again) before it gives up.
const carrierPatience = 90 * time.Second

// stressEvent is one line a carrier reports on stdout.
type stressEvent struct {
	Ev        string  `json:"ev"` // lost_answer, redeemed, refused, ready, task, task_end, exit
	WorkerID  string  `json:"worker_id,omitempty"`
	Epoch     float64 `json:"epoch,omitempty"`
	Replayed  bool    `json:"replayed,omitempty"`
	Lost      int     `json:"lost,omitempty"`     // redeem calls that got no answer before the one that did
	Sessions  int     `json:"sessions,omitempty"` // connections that fell back to a session, dropped
	TaskID    string  `json:"task_id,omitempty"`
	AttemptID string  `json:"attempt_id,omitempty"`
	Outcome   string  `json:"outcome,omitempty"` // task_end: submitted, in_doubt
	Code      string  `json:"code,omitempty"`    // refused: the error code
	Reason    string  `json:"reason,omitempty"`  // refused: details.reason
	State     string  `json:"state,omitempty"`   // exit: continued, carrier_fenced, closed
}

// stressCarrier is the carrier process's side.
type stressCarrier struct {
	urlFile, token, key, execLog string
	cs                           *mcp.ClientSession
	out                          *json.Encoder
	lost, sessions               int // calls that got no answer; connections that were sessions
}

// carrierMain runs a carrier process and returns its exit status: 0 when
// it stopped as told (continued, fenced, closed, or its ticket refused).
func carrierMain() int {
	c := &stressCarrier{urlFile: os.Getenv(carrierURLFile), token: os.Getenv(carrierToken), key: os.Getenv(carrierKeyEnv),
		execLog: os.Getenv(carrierExecLog), out: json.NewEncoder(os.Stdout)}
	if err := c.run(os.Getenv(carrierSwarm), os.Getenv(carrierTicket), os.Getenv(carrierLose) != ""); err != nil {
		fmt.Fprintln(os.Stderr, "carrier:", err)
		return 1
	}
	return 0
}

func (c *stressCarrier) report(e stressEvent) { _ = c.out.Encode(e) }

// call calls a tool until a server answers it: a call lost with its server
// (refused, reset, cut off) is made again, on a new connection to the URL
// the test last wrote (a restarted server listens elsewhere).
func (c *stressCarrier) call(tool string, args map[string]any) (result, error) {
	deadline := time.Now().Add(carrierPatience)
	for {
		if c.cs == nil {
			if url, err := os.ReadFile(c.urlFile); err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				c.cs, _ = dialAt(ctx, strings.TrimSpace(string(url)), c.token, "2026-07-28")
				cancel()
				if c.cs != nil && c.cs.InitializeResult().ProtocolVersion != "2026-07-28" {
					// The client fell back to a session (server/discover failed
					// once): its session, not the carrier_key, would name this
					// carrier, and a carrier has one identity.
					c.sessions++
					c.cs.Close()
					c.cs = nil
				}
			}
		}
		if c.cs != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			r, err := tryCall(ctx, c.cs, tool, args)
			cancel()
			if err == nil {
				return r, nil
			}
			c.cs.Close()
			c.cs = nil
		}
		c.lost++
		if time.Now().After(deadline) {
			return result{}, fmt.Errorf("%s: no server answered within %v", tool, carrierPatience)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// run redeems the ticket, checkpoints, and works the worker's tasks until
// it is told to stop.
func (c *stressCarrier) run(swarmID, ticket string, lose bool) error {
	redeem := map[string]any{"swarm_id": swarmID, "continuation_ticket": ticket, "carrier_key": c.key}
	r, err := c.call("chat_swarm_join", redeem)
	if err == nil && lose && !r.IsError {
		// The answer never reached this carrier: it asks again.
		c.report(stressEvent{Ev: "lost_answer", Epoch: r.Data["worker"].(map[string]any)["epoch"].(float64)})
		c.lost++
		r, err = c.call("chat_swarm_join", redeem)
	}
	if err != nil {
		return err
	}
	if r.IsError {
		c.report(stressEvent{Ev: "refused", Code: r.code(), Reason: r.reason()})
		return nil
	}
	w := r.Data["worker"].(map[string]any)
	me := &swarmWorker{id: w["worker_id"].(string), epoch: w["epoch"].(float64), key: c.key}
	c.report(stressEvent{Ev: "redeemed", WorkerID: me.id, Epoch: me.epoch, Replayed: r.Data["replayed"] == true, Lost: c.lost, Sessions: c.sessions})
	if r, err = c.call("chat_swarm_checkpoint", me.args("checkpoint", map[string]any{"summary": "redeemed", "next_step": "wait for a task"})); err != nil || r.IsError {
		return c.stop(r, err, "checkpoint")
	}
	c.report(stressEvent{Ev: "ready"})
	executed := map[string]bool{}
	for {
		r, err := c.call("chat_swarm_next", me.args("wait_secs", 2))
		if err != nil || r.IsError {
			return c.stop(r, err, "next")
		}
		switch r.Data["state"] {
		case "idle":
		case "compact_required":
			// Take no work until the new carrier redeems (then: continued),
			// or the continuation is revoked (then: idle again).
			time.Sleep(50 * time.Millisecond)
		case "continued", "closed":
			c.report(stressEvent{Ev: "exit", State: r.Data["state"].(string)})
			return nil
		case "task":
			task := r.Data["task"].(map[string]any)
			id, attempt := task["task_id"].(string), task["attempt_id"].(string)
			if !executed[id] { // a redelivery is the same execution
				executed[id] = true
				if err := appendSync(c.execLog, fmt.Sprintf("%s %s %v %s\n", id, attempt, me.epoch, c.key)); err != nil {
					return err
				}
				c.report(stressEvent{Ev: "task", TaskID: id, AttemptID: attempt})
			}
			outcome, err := c.work(me, id, swarmResult(task["prompt"].(string), me.id))
			if err != nil || outcome == "" {
				return err
			}
			c.report(stressEvent{Ev: "task_end", TaskID: id, Outcome: outcome})
		default:
			return fmt.Errorf("next: %v", r.Data)
		}
	}
}

// work acks, checkpoints and submits a task it executed: submitted, or
// in_doubt when the task went into doubt under it (its server died), or
// "" when the carrier was fenced and stopped.
func (c *stressCarrier) work(me *swarmWorker, id, res string) (string, error) {
	for _, s := range []struct {
		tool string
		args map[string]any
	}{
		{"chat_swarm_ack", me.args("task_id", id)},
		{"chat_swarm_checkpoint", me.args("checkpoint", map[string]any{"summary": "executed " + id, "next_step": "submit it"})},
		{"chat_swarm_submit", me.args("task_id", id, "result", res)},
	} {
		r, err := c.call(s.tool, s.args)
		switch {
		case err == nil && r.code() == "reconcile_required":
			return "in_doubt", nil
		case err != nil || r.IsError:
			return "", c.stop(r, err, s.tool+" "+id)
		}
	}
	return "submitted", nil
}

// stop ends the carrier on a refused call: fenced is a stop as told
// (reported), anything else an error.
func (c *stressCarrier) stop(r result, err error, what string) error {
	if err == nil && r.code() == "carrier_fenced" {
		c.report(stressEvent{Ev: "exit", State: "carrier_fenced"})
		return nil
	}
	if err == nil {
		err = fmt.Errorf("%s: %v", what, r.Data)
	}
	return err
}

// appendSync appends a line to a file and syncs it.
func appendSync(path, line string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// carrierProc is a carrier process as the test sees it: its key, what it
// reported so far, and whether it still runs. The carrier the test joined
// itself (epoch 0) has no process.
type carrierProc struct {
	key     string
	cmd     *exec.Cmd
	stderr  syncbuf.Buffer
	killed  bool
	mu      sync.Mutex
	events  []stressEvent
	changed chan struct{} // closed and replaced on every event
	exited  chan struct{} // closed once the process was waited for
	err     error         // its exit, once exited is closed
}

func (p *carrierProc) add(e stressEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, e)
	close(p.changed)
	p.changed = make(chan struct{})
}

// alive reports whether the process may still act.
func (p *carrierProc) alive() bool {
	if p.cmd == nil || p.killed {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// kill SIGKILLs the process and waits for it; whatever it reported is
// then all it will ever have reported.
func (p *carrierProc) kill() {
	if p.cmd != nil {
		p.killed = true
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
	}
}

// said returns the first event pred accepts among those reported so far.
func (p *carrierProc) said(pred func(stressEvent) bool) (stressEvent, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.events {
		if pred(e) {
			return e, true
		}
	}
	return stressEvent{}, false
}

// waitFor waits until the carrier reports an event pred accepts (true), or
// has ended without (false).
func (p *carrierProc) waitFor(t *testing.T, what string, pred func(stressEvent) bool) (stressEvent, bool) {
	t.Helper()
	deadline := time.After(2 * carrierPatience)
	for {
		p.mu.Lock()
		changed := p.changed
		p.mu.Unlock()
		if e, ok := p.said(pred); ok {
			return e, true
		}
		select {
		case <-p.exited:
			return p.said(pred) // every line was read before exited closed
		case <-changed:
		case <-deadline:
			p.mu.Lock()
			said := slices.Clone(p.events)
			p.mu.Unlock()
			t.Fatalf("carrier %s: %s: nothing in %v; it reported %v\n%s", p.key, what, 2*carrierPatience, said, p.stderr.String())
		}
	}
}

// pause waits up to d for the carrier to report something or end (a
// short poll of a server's view, with an early wake-up).
func (p *carrierProc) pause(d time.Duration) {
	p.mu.Lock()
	changed := p.changed
	p.mu.Unlock()
	select {
	case <-changed:
	case <-p.exited:
	case <-time.After(d):
	}
}

func is(ev string) func(stressEvent) bool { return func(e stressEvent) bool { return e.Ev == ev } }

func ended(task string) func(stressEvent) bool {
	return func(e stressEvent) bool { return e.Ev == "task_end" && e.TaskID == task }
}

// stressCounts are what a run did, for its log line.
type stressCounts struct {
	steps, prepares, revokes, reused, tasks, serverKills, newKills, oldKills, taskKills, doubtKills int
	leaseWaits, replayed, lostRedeems, staleTickets, lateRedeems, sessions                          int
	reconciles                                                                                      map[string]int
}

// stress is one run: the server, the owner, the worker and its carriers,
// and what the test knows to be true.
type stress struct {
	t                            *testing.T
	rng                          *rand.Rand
	self                         string // this binary: a carrier process
	data, work, urlFile, execLog string
	srv                          *server
	ownerTok, workerTok          string
	o                            *swarmOwner
	ws                           *mcp.ClientSession // calls as any carrier, by its key
	workerID                     string
	epoch                        float64            // the worker's epoch: the transfers committed
	cur                          *carrierProc       // the worker's carrier at epoch
	byEpoch                      map[float64]string // epoch → the key of the carrier that redeemed it
	used                         []string           // the tickets that bound a carrier, oldest first
	tasks                        map[string]string  // task_id → prompt
	outstanding                  string             // the task dispatched and not settled yet
	mayBeLost                    bool               // the worker's carrier may be marked lost (a lease ran out, a server died under a task)
	capsules, envelopes          []int              // the size of each prepared capsule, and of what it holds besides tasks and checkpoint
	n                            stressCounts
}

// stressLeaseWaits bounds how often a run lets a lease run out (each costs
// the lease's 5 s) instead of restarting the server to settle a task held
// by a dead carrier.
const stressLeaseWaits = 2

// TestContinuityStress (issue 12): ≥ 1,000 consecutive rollovers of one
// worker on SQLite (250 on PostgreSQL), each to a new carrier process,
// with random SIGKILLs of the server (restarted on the same data) and of
// the carriers, old and new, before and after their redeem, idle or
// holding a task. After every step: one carrier is the worker's, at an
// epoch that moved by one for each committed transfer and never else
// (each epoch redeemed by one carrier); every carrier before it hears
// continued, every one never bound is fenced; a used or revoked ticket is
// refused to anyone else, while the carrier it bound reads its receipt
// again (replayed); no task is in the executions log twice, and a task it
// shows ran is never queued again (the owner reconciles a task in doubt
// from the log: failed or its result when it ran, requeue with no_effect
// evidence when it did not). At the end the state is bounded: one worker,
// a few ledger entries, a continuation per prepare, a carrier per bind,
// capsules that do not grow.
//
// CONTINUO_STRESS_SEED replays a run's random draws (the seed is logged);
// CONTINUO_STRESS_ROLLOVERS sets the number of rollovers of both engines.
func TestContinuityStress(t *testing.T) { eachEngine(t, continuityStress) }

func continuityStress(t *testing.T, engine string) {
	n := map[string]int{"sqlite": 1000, "postgres": 250}[engine]
	if v := os.Getenv("CONTINUO_STRESS_ROLLOVERS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("CONTINUO_STRESS_ROLLOVERS=%q", v)
		}
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("CONTINUO_STRESS_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("CONTINUO_STRESS_SEED=%q: %v", v, err)
		}
	}
	t.Logf("seed %d (CONTINUO_STRESS_SEED=%d replays its random draws; the timing of the faults still varies), %d rollovers", seed, seed, n)
	began := time.Now()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := &stress{t: t, self: self, o: &swarmOwner{}, rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), data: dataDir(t, engine), work: t.TempDir(),
		urlFile: filepath.Join(dir, "url"), execLog: filepath.Join(dir, "executions.log"),
		byEpoch: map[float64]string{}, tasks: map[string]string{}, n: stressCounts{reconciles: map[string]int{}}}
	s.serve()
	s.ownerTok, s.workerTok = swarmTokens(t, s.data)
	s.connect()
	s.o = createSwarm(t, s.o.cs, nil, 1, map[string]any{"lease_ttl_secs": 5})
	first := joinSwarm(t, s.ws, s.o.swarmID, s.o.invite, 0, carrierKey())
	checkpoint(t, first, "joined")
	s.workerID, s.cur, s.byEpoch[0] = first.id, &carrierProc{key: first.key}, first.key

	for s.epoch < float64(n) || s.outstanding != "" {
		s.n.steps++
		s.settle()
		if s.epoch < float64(n) && s.cur.alive() && s.outstanding == "" && s.rng.IntN(6) == 0 {
			s.task()
		}
		s.rollover()
		s.checkLog()
	}
	s.finish(began, seed)
}

// spawn starts a carrier process with ticket.
func (s *stress) spawn(ticket string) *carrierProc {
	t := s.t
	p := &carrierProc{key: carrierKey(), changed: make(chan struct{}), exited: make(chan struct{})}
	p.cmd = exec.Command(s.self)
	p.cmd.Env = append(os.Environ(), carrierEnv+"=1", carrierURLFile+"="+s.urlFile, carrierToken+"="+s.workerTok,
		carrierSwarm+"="+s.o.swarmID, carrierTicket+"="+ticket, carrierKeyEnv+"="+p.key, carrierExecLog+"="+s.execLog)
	if s.rng.IntN(20) == 0 {
		p.cmd.Env = append(p.cmd.Env, carrierLose+"=1")
	}
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var e stressEvent
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				e = stressEvent{Ev: "unreadable", Reason: sc.Text()}
			}
			p.add(e)
		}
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.kill()
		noRace(t, "a carrier process", p.stderr.String())
	})
	return p
}

// serve starts the server on the run's data, and tells the carriers
// where it listens: the worker endpoint.
func (s *stress) serve() {
	s.srv = start(s.t, s.data, s.work)
	tmp := s.urlFile + ".new"
	if err := os.WriteFile(tmp, []byte(at(s.srv.URL, "worker")), 0o644); err != nil {
		s.t.Fatal(err)
	}
	if err := os.Rename(tmp, s.urlFile); err != nil {
		s.t.Fatal(err)
	}
}

// connect opens the owner's connection and the one the test calls as a
// carrier on, both stateless, to the running server.
func (s *stress) connect() {
	s.o.cs = connectAt(s.t, at(s.srv.URL, "swarm"), s.ownerTok, "2026-07-28")
	s.ws = connectAt(s.t, at(s.srv.URL, "worker"), s.workerTok, "2026-07-28")
}

// restart SIGKILLs the server and starts it again on the same data.
func (s *stress) restart() {
	s.srv.kill()
	s.n.serverKills++
	s.mayBeLost = true // a task held at the kill goes into doubt, and its carrier is marked lost
	s.serve()
	s.connect()
}

// kill SIGKILLs a carrier process, counting it under count.
func (s *stress) kill(p *carrierProc, count *int) {
	if p.alive() {
		p.kill()
		*count++
	}
}

// as is a carrier of the worker at epoch, for the test to call as.
func (s *stress) as(key string, epoch float64) *swarmWorker {
	return &swarmWorker{cs: s.ws, id: s.workerID, epoch: epoch, key: key}
}

// worker is the owner's view of the worker.
func (s *stress) worker() map[string]any {
	ws := must(s.t, s.o.cs, "chat_swarm_status", map[string]any{"swarm_id": s.o.swarmID})["workers"].([]any)
	if len(ws) != 1 {
		s.t.Fatalf("step %d: %d workers: %v", s.n.steps, len(ws), ws)
	}
	return ws[0].(map[string]any)
}

// task dispatches a task for the worker, kills the carrier or the server
// at random while it runs, and settles it.
func (s *stress) task() {
	i := s.n.tasks
	s.n.tasks++
	prompt := swarmPrompt(i)
	id := must(s.t, s.o.cs, "chat_swarm_dispatch", map[string]any{"swarm_id": s.o.swarmID, "task_key": fmt.Sprintf("s%d", i),
		"prompt": prompt, "preferred_worker_id": s.workerID})["task"].(map[string]any)["task_id"].(string)
	s.tasks[id], s.outstanding = prompt, id
	switch r := s.rng.IntN(20); {
	case r < 3:
		time.Sleep(s.delay(25)) // the fault lands at a random point of the task's run
		s.kill(s.cur, &s.n.taskKills)
	case r < 5:
		time.Sleep(s.delay(25))
		s.restart()
	}
	s.settle()
}

// delay is a random delay of 0..ms milliseconds.
func (s *stress) delay(ms int) time.Duration {
	return time.Duration(s.rng.IntN(ms*1000+1)) * time.Microsecond
}

// settle brings the outstanding task to an end the owner knows: collected
// with the result its execution submitted, or reconciled from the
// executions log. It returns early when the task is queued and no carrier
// is alive to take it (the next one will).
func (s *stress) settle() {
	t := s.t
	deadline := time.Now().Add(2 * carrierPatience)
	for s.outstanding != "" {
		id := s.outstanding
		if time.Now().After(deadline) {
			t.Fatalf("step %d: task %s did not settle", s.n.steps, id)
		}
		task := must(t, s.o.cs, "chat_swarm_status", map[string]any{"swarm_id": s.o.swarmID, "task_id": id})["task"].(map[string]any)
		switch task["state"] {
		case "queued":
			if !s.cur.alive() {
				return
			}
			s.cur.pause(20 * time.Millisecond) // it is the worker's: the carrier claims it
		case "claimed", "running":
			if s.cur.alive() {
				s.cur.pause(20 * time.Millisecond)
				continue
			}
			// Its carrier is dead: a lease that runs out, or a restart of the
			// server that delivered it, puts it in doubt.
			if s.n.leaseWaits < stressLeaseWaits && s.rng.IntN(8) == 0 {
				s.n.leaseWaits++
				s.mayBeLost = true
				// (Or a call the carrier made before it died, still running in
				// the server, settles it first.)
				for until := time.Now().Add(60 * time.Second); task["state"] == "claimed" || task["state"] == "running"; {
					if time.Now().After(until) {
						t.Fatalf("step %d: task %s held by a dead carrier, 60 s after: %v", s.n.steps, id, task)
					}
					time.Sleep(50 * time.Millisecond)
					task = must(t, s.o.cs, "chat_swarm_status", map[string]any{"swarm_id": s.o.swarmID, "task_id": id})["task"].(map[string]any)
				}
			} else {
				s.restart()
			}
		case "reconcile_required":
			if _, done := s.cur.said(ended(id)); !done {
				// It may hold the task's answer still unlogged: once it is
				// dead, the log says all it did.
				s.kill(s.cur, &s.n.doubtKills)
			}
			s.reconcile(task)
		case "result_ready":
			if _, done := s.cur.said(ended(id)); s.cur.alive() && !done {
				s.cur.pause(20 * time.Millisecond) // the answer to its submit is on its way
				continue
			}
			got := must(t, s.o.cs, "chat_swarm_collect", map[string]any{"swarm_id": s.o.swarmID, "task_id": id})["task"].(map[string]any)
			if _, ran := s.logged()[id]; got["state"] != "collected" || got["result"] != swarmResult(s.tasks[id], s.workerID) || !ran {
				t.Fatalf("step %d: collect %s (in the executions log: %v): %v", s.n.steps, id, ran, got)
			}
			s.outstanding = ""
		default:
			t.Fatalf("step %d: task %s: %v", s.n.steps, id, task)
		}
	}
}

// reconcile settles a task in doubt from the executions log: it ran ⇒
// failed or its result (at random), it did not ⇒ requeue with no_effect
// evidence naming the latest attempt.
func (s *stress) reconcile(task map[string]any) {
	t := s.t
	id, attempt := task["task_id"].(string), task["attempt_id"].(string)
	args := map[string]any{"swarm_id": s.o.swarmID, "task_id": id, "attempt_id": attempt}
	line, ran := s.logged()[id]
	switch {
	case ran && line[1] != attempt:
		t.Fatalf("step %d: task %s ran as attempt %s and was queued again: its latest attempt is %s", s.n.steps, id, line[1], attempt)
	case ran && s.rng.IntN(2) == 0:
		args["decision"], args["result"] = "result_ready", swarmResult(s.tasks[id], s.workerID)
	case ran:
		args["decision"] = "failed"
	default:
		args["decision"] = "requeue"
	}
	if ran {
		args["evidence"] = map[string]any{"disposition": "applied", "ref": "executions log: " + strings.Join(line, " ")}
	} else {
		args["evidence"] = map[string]any{"disposition": "no_effect", "ref": "executions log: no line for " + id}
	}
	got := must(t, s.o.cs, "chat_swarm_reconcile", args)["task"].(map[string]any)
	want := map[any]string{"result_ready": "result_ready", "failed": "failed", "requeue": "queued"}[args["decision"]]
	if got["state"] != want {
		t.Fatalf("step %d: reconcile %v: %v", s.n.steps, args, got)
	}
	s.n.reconciles[args["decision"].(string)]++
	if want == "failed" {
		s.outstanding = ""
	}
}

// logged reads the executions log: task_id → its line's fields (task,
// attempt, epoch, carrier key). A task in it twice fails the test.
func (s *stress) logged() map[string][]string {
	t := s.t
	b, err := os.ReadFile(s.execLog)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) != 4 {
			t.Fatalf("executions log line %q", l)
		}
		if prev, ok := out[f[0]]; ok {
			t.Fatalf("step %d: task %s executed twice: %v and %v", s.n.steps, f[0], prev, f)
		}
		out[f[0]] = f
	}
	return out
}

// checkLog checks the executions log: no task twice, each execution by
// the carrier that redeemed the epoch it names.
func (s *stress) checkLog() {
	for _, f := range s.logged() {
		e, err := strconv.ParseFloat(f[2], 64)
		if err != nil || s.byEpoch[e] != f[3] {
			s.t.Fatalf("step %d: task %s executed at epoch %s by carrier %s; that epoch was redeemed by %q", s.n.steps, f[0], f[2], f[3], s.byEpoch[e])
		}
	}
}

// rollover prepares a continuation and starts new carriers with its
// ticket, with faults at random, until one of them holds the worker at the
// next epoch or the continuation is revoked; then it checks the
// invariants.
func (s *stress) rollover() {
	t := s.t
	old, from := s.cur, s.epoch
	var p map[string]any
	for {
		r := call(t, s.o.cs, "chat_swarm_prepare_continuation", prepareArgs(s.o, s.workerID))
		if r.code() == "unsafe_boundary" && r.reason() == "task_in_flight" && s.outstanding != "" {
			s.settle() // a carrier took the task meanwhile
			continue
		}
		if r.IsError {
			t.Fatalf("step %d: prepare: %v", s.n.steps, r.Data)
		}
		p = r.Data
		break
	}
	ticket, cn := prepared(t, p, s.workerID, from)
	s.n.prepares++
	capsule, _ := json.Marshal(p["capsule"])
	// What a capsule holds besides its recent tasks (at most ten, each
	// summary bounded) and the checkpoint (bounded) must not grow with the
	// rollovers: no history of earlier epochs or capsules piles up in it.
	envelope := map[string]any{}
	maps.Copy(envelope, p["capsule"].(map[string]any))
	tasks, _ := envelope["recent_tasks"].([]any)
	delete(envelope, "recent_tasks")
	delete(envelope, "checkpoint")
	rest, _ := json.Marshal(envelope)
	if len(tasks) > 10 {
		t.Fatalf("step %d: a capsule names %d recent tasks", s.n.steps, len(tasks))
	}
	s.capsules, s.envelopes = append(s.capsules, len(capsule)), append(s.envelopes, len(rest))

	var tried []*carrierProc // the new carriers given the ticket
	kills := s.n.serverKills
	for {
		next := s.spawn(ticket)
		tried = append(tried, next)
		s.faults(old, next)
		if next.alive() {
			if _, ok := next.waitFor(t, "redeem and checkpoint", func(e stressEvent) bool { return e.Ev == "ready" || e.Ev == "refused" }); !ok {
				t.Fatalf("step %d: carrier %s ended: %v, it reported %v\n%s", s.n.steps, next.key, next.err, next.events, next.stderr.String())
			}
		}
		if e, ok := next.said(is("refused")); ok {
			// A new carrier is refused the ticket only when the checkpoint it
			// was made from changed since (a killed carrier's checkpoint,
			// still running in the server when the ticket was made), or when
			// a carrier given it before, and killed, redeemed it after all
			// (its call still running in the server when the test looked:
			// ticket_invalid used, or conflict lost_race if this carrier's
			// call began before that one committed).
			stale := e.Code == "ticket_invalid" && e.Reason == "checkpoint_changed" && old.killed
			late := (e.Code == "ticket_invalid" && e.Reason == "used" || e.Code == "conflict" && e.Reason == "lost_race") && len(tried) > 1
			if !stale && !late {
				t.Fatalf("step %d: carrier %s (the %d. given the ticket) was refused it: %v", s.n.steps, next.key, len(tried), e)
			}
			if stale {
				s.n.staleTickets++
			} else {
				s.n.lateRedeems++
			}
		}
		if _, ok := next.said(is("ready")); ok {
			break // it holds the worker (checkStep sees the epoch)
		}
		switch w := s.worker(); w["epoch"] {
		case from + 1:
		case from:
			if e, ok := next.said(func(e stressEvent) bool { return e.Ev == "lost_answer" || e.Ev == "redeemed" || e.Ev == "ready" }); ok {
				t.Fatalf("step %d: carrier %s said %v, and the worker is at epoch %v", s.n.steps, next.key, e, from)
			}
			if _, refused := next.said(is("refused")); !refused && s.rng.IntN(2) == 0 {
				s.n.reused++ // the ticket is still good: another new carrier redeems it
				continue
			}
			if !s.revoke(cn, ticket) {
				s.checkStep(nil, tried)
				return
			}
		default:
			t.Fatalf("step %d: the worker moved from epoch %v to %v", s.n.steps, from, w["epoch"])
		}
		break
	}

	// Exactly one of the carriers given the ticket holds the receipt: the
	// one that redeemed it (read again: replayed); the ticket is refused
	// to the others, and to anyone else. A lone carrier that said it
	// redeemed is read again now and then (oneCarrier sees its epoch).
	var winner *carrierProc
	var unbound []*carrierProc
	for _, c := range tried {
		if _, ok := c.said(is("ready")); ok && len(tried) == 1 && s.rng.IntN(4) != 0 {
			winner = c
			break
		}
		if len(tried) == 1 {
			redeem(t, s.as(c.key, from+1), s.o.swarmID, ticket, true)
			winner = c
			break
		}
		r := call(t, s.ws, "chat_swarm_join", redeemArgs(s.o.swarmID, ticket, s.as(c.key, from+1)))
		switch {
		case r.code() == "ticket_invalid":
			unbound = append(unbound, c)
		case winner == nil && !r.IsError:
			redeem(t, s.as(c.key, from+1), s.o.swarmID, ticket, true)
			winner = c
		default:
			t.Fatalf("step %d: carrier %s reading its receipt (the winner: %v): %v", s.n.steps, c.key, winner, r.Data)
		}
	}
	if winner == nil {
		t.Fatalf("step %d: the worker moved to epoch %v and none of %d carriers holds the receipt", s.n.steps, from+1, len(tried))
	}
	if e, ok := winner.said(is("redeemed")); ok {
		if e.WorkerID != s.workerID || e.Epoch != from+1 || e.Replayed && e.Lost == 0 {
			t.Fatalf("step %d: the winner's redeem: %v", s.n.steps, e)
		}
		if l, ok := winner.said(is("lost_answer")); ok && (!e.Replayed || l.Epoch != e.Epoch) {
			t.Fatalf("step %d: the winner redeemed at epoch %v, lost that answer and asked again: %v", s.n.steps, l.Epoch, e)
		}
		if e.Replayed {
			s.n.replayed++
		}
		if e.Lost > 0 {
			s.n.lostRedeems++
		}
		s.n.sessions += e.Sessions
	}
	if prev, ok := s.byEpoch[from+1]; ok {
		t.Fatalf("step %d: epoch %v redeemed twice: by %s and %s", s.n.steps, from+1, prev, winner.key)
	}
	s.byEpoch[from+1], s.epoch, s.cur = winner.key, from+1, winner
	s.used = append(s.used, ticket)
	s.usedRefused(ticket)
	// The transfer made the carrier active; only a server killed since,
	// under a task the new carrier took, can have marked it lost.
	s.mayBeLost = s.n.serverKills != kills
	// The old carrier, if it still runs, hears that it was continued (or
	// fenced, if its first word after the transfer was not a next) and
	// stops.
	if old.alive() {
		e, ok := old.waitFor(t, "stop", is("exit"))
		<-old.exited
		if !ok || (e.State != "continued" && e.State != "carrier_fenced") || old.err != nil {
			t.Fatalf("step %d: the old carrier %s: %v, %v\n%s", s.n.steps, old.key, e, old.err, old.stderr.String())
		}
	}
	s.checkStep([]*carrierProc{old}, unbound)
}

// usedRefused checks that the ticket just used, and now and then an older
// one, are refused to a new carrier.
func (s *stress) usedRefused(ticket string) {
	other := s.as(carrierKey(), s.epoch)
	tickets := []string{ticket}
	if s.rng.IntN(4) == 0 {
		tickets = append(tickets, s.used[s.rng.IntN(len(s.used))])
	}
	for _, tk := range tickets {
		r := call(s.t, s.ws, "chat_swarm_join", redeemArgs(s.o.swarmID, tk, other))
		e, _ := r.Data["error"].(map[string]any)
		if d, _ := e["details"].(map[string]any); r.code() != "ticket_invalid" || d["reason"] != "used" {
			s.t.Fatalf("step %d: a new carrier redeeming a used ticket: %v", s.n.steps, r.Data)
		}
	}
}

// revoke revokes a continuation none of its carriers redeemed, and checks
// that its ticket binds nobody now. It reports true when a killed
// carrier's redeem committed after all (it was still running in the
// server): the continuation is bound, not revocable.
func (s *stress) revoke(cn map[string]any, ticket string) bool {
	t := s.t
	r := call(t, s.o.cs, "chat_swarm_revoke_continuation", map[string]any{"swarm_id": s.o.swarmID, "continuation_id": cn["continuation_id"]})
	e, _ := r.Data["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	switch {
	case r.code() == "terminal_immutable" && d["state"] == "bound":
		if w := s.worker(); w["epoch"] != s.epoch+1 {
			t.Fatalf("step %d: continuation %v is bound and the worker is at epoch %v", s.n.steps, cn["continuation_id"], w["epoch"])
		}
		return true
	case r.IsError || r.Data["continuation"].(map[string]any)["state"] != "revoked":
		t.Fatalf("step %d: revoke %v: %v", s.n.steps, cn["continuation_id"], r.Data)
	}
	s.n.revokes++
	r = call(t, s.ws, "chat_swarm_join", redeemArgs(s.o.swarmID, ticket, s.as(carrierKey(), s.epoch+1)))
	if e, _ := r.Data["error"].(map[string]any); r.code() != "ticket_invalid" || e["details"].(map[string]any)["reason"] != "revoked" {
		t.Fatalf("step %d: a new carrier redeeming a revoked ticket: %v", s.n.steps, r.Data)
	}
	return false
}

// faults kills, at random points of a rollover, the server (then starts
// it again), the new carrier (before or after its redeem) and the old one.
func (s *stress) faults(old, next *carrierProc) {
	type fault struct {
		at time.Duration
		do func()
	}
	var fs []fault
	if s.rng.IntN(50) == 0 {
		fs = append(fs, fault{s.delay(60), s.restart})
	}
	switch s.rng.IntN(32) {
	case 0:
		fs = append(fs, fault{s.delay(120), func() { s.kill(next, &s.n.newKills) }})
	case 1:
		fs = append(fs, fault{s.delay(20), func() {
			next.waitFor(s.t, "redeem", is("redeemed"))
			s.kill(next, &s.n.newKills)
		}})
	}
	if old.alive() && s.rng.IntN(25) == 0 {
		fs = append(fs, fault{s.delay(60), func() { s.kill(old, &s.n.oldKills) }})
	}
	slices.SortFunc(fs, func(a, b fault) int { return int(a.at - b.at) })
	began := time.Now()
	for _, f := range fs {
		time.Sleep(f.at - time.Since(began))
		f.do()
	}
}

// checkStep checks, from outside, that the test's current carrier is the
// worker's one carrier at the worker's epoch: retired hear continued,
// unbound are fenced, and the owner sees one worker at that epoch, its
// carrier active (or lost when that may be so).
func (s *stress) checkStep(retired, unbound []*carrierProc) {
	var rs, us []*swarmWorker
	for _, c := range retired {
		rs = append(rs, s.as(c.key, s.epoch-1))
	}
	for _, c := range unbound {
		us = append(us, s.as(c.key, s.epoch))
	}
	// (No continuation is left open: the next prepare would be refused.)
	a := s.as(s.cur.key, s.epoch)
	if s.outstanding != "" || s.mayBeLost {
		// A next through the carrier would claim the task queued for it.
		onlyCarrier(s.t, s.o, a, s.mayBeLost, rs, us)
		return
	}
	oneCarrier(s.t, s.o, a, "idle", rs, us)
}

// finish closes the swarm (the carrier hears closed and stops), checks the
// run as a whole and the bounded state, and logs what the run did.
func (s *stress) finish(began time.Time, seed uint64) {
	t := s.t
	// Carriers retired long ago still hear that they were continued.
	for range 20 {
		e := float64(s.rng.IntN(int(s.epoch)))
		c := s.as(s.byEpoch[e], e)
		if r := call(t, s.ws, "chat_swarm_next", c.args("wait_secs", 0)); r.IsError || r.Data["state"] != "continued" {
			t.Fatalf("the carrier retired at epoch %v, at the end (epoch %v): %v", e, s.epoch, r.Data)
		}
	}
	if st := must(t, s.o.cs, "chat_swarm_close", map[string]any{"swarm_id": s.o.swarmID}); st["swarm"].(map[string]any)["state"] != "closed" {
		t.Fatalf("close: %v", st)
	}
	if s.cur.alive() {
		e, ok := s.cur.waitFor(t, "stop", is("exit"))
		<-s.cur.exited
		if !ok || e.State != "closed" || s.cur.err != nil {
			t.Fatalf("the last carrier, the swarm closed: %v, %v\n%s", e, s.cur.err, s.cur.stderr.String())
		}
	}
	for e := 0; e <= int(s.epoch); e++ {
		if s.byEpoch[float64(e)] == "" {
			t.Errorf("epoch %d had no carrier", e)
		}
	}
	if len(s.byEpoch) != int(s.epoch)+1 {
		t.Errorf("%d epochs redeemed, the worker is at %v", len(s.byEpoch), s.epoch)
	}
	// Every task ran at most once (logged checks it), and one that ran was
	// never queued again: its latest attempt is the one that ran.
	logged := s.logged()
	for id := range s.tasks {
		task := must(t, s.o.cs, "chat_swarm_status", map[string]any{"swarm_id": s.o.swarmID, "task_id": id})["task"].(map[string]any)
		line, ran := logged[id]
		switch {
		case task["state"] != "collected" && task["state"] != "failed":
			t.Errorf("task %s at the end: %v", id, task)
		case ran && task["attempt_id"] != line[1]:
			t.Errorf("task %s ran as attempt %s; its latest attempt is %v", id, line[1], task["attempt_id"])
		case !ran && task["state"] == "collected":
			t.Errorf("task %s was collected and never ran: %v", id, task)
		}
	}
	s.srv.stop()
	export := filepath.Join(t.TempDir(), "export.jsonl")
	rows := exportRows(t, s.data, export)
	stored := 0
	for _, line := range strings.Split(string(read(t, export)), "\n") {
		var l struct {
			Table string `json:"table"`
			Row   struct {
				Capsule string `json:"capsule"`
			} `json:"row"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Table == "continuations" {
			stored += len(l.Row.Capsule)
		}
	}
	// A capsule's envelope differs only by the digits of its epoch.
	small, large := slices.Min(s.envelopes), slices.Max(s.envelopes)
	t.Logf("%d rollovers in %d steps, %v (seed %d): %d tasks, reconciled %v; SIGKILLed the server %d times, "+
		"new carriers %d times, old carriers %d, carriers holding a task %d, carriers holding a task in doubt %d; %d leases ran out; "+
		"%d continuations revoked, %d tickets given to a second new carrier (%d redeemed by a killed one after all), %d refused for a changed checkpoint; "+
		"%d redeems lost an answer, %d read their receipt again; %d carrier connections fell back to a session",
		int(s.epoch), s.n.steps, time.Since(began).Round(time.Millisecond), seed, s.n.tasks, s.n.reconciles, s.n.serverKills,
		s.n.newKills, s.n.oldKills, s.n.taskKills, s.n.doubtKills, s.n.leaseWaits,
		s.n.revokes, s.n.reused, s.n.lateRedeems, s.n.staleTickets, s.n.lostRedeems, s.n.replayed, s.n.sessions)
	t.Logf("rows %v; capsules of %d..%d bytes (%d..%d besides tasks and checkpoint); %d capsule bytes stored in %d continuations",
		rows, slices.Min(s.capsules), slices.Max(s.capsules), small, large, stored, rows["continuations"])
	switch {
	case rows["workers"] != 1:
		t.Errorf("%d workers", rows["workers"])
	case rows["context_ledger"] > 6:
		t.Errorf("the context ledger holds %d entries after %v rollovers: it grows", rows["context_ledger"], s.epoch)
	case rows["continuations"] != s.n.prepares || rows["carriers"] != int(s.epoch)+1:
		t.Errorf("%d continuations and %d carriers after %d prepares and %v transfers", rows["continuations"], rows["carriers"], s.n.prepares, s.epoch)
	case large-small > len(strconv.Itoa(int(s.epoch)))-1:
		t.Errorf("capsules grow: %d..%d bytes besides their tasks and checkpoint", small, large)
	case stored > 2*slices.Max(s.capsules):
		// The current carrier's capsule, and at most one prepared for the
		// next: a superseded or ended continuation keeps only its hash.
		t.Errorf("%d capsule bytes stored after %v rollovers: they pile up", stored, s.epoch)
	}
}
