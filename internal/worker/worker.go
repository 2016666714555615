// Package worker is `continuo worker`, the reference Chat Swarm worker
// (CONTRACT.md §10): an MCP client that carries one worker. It joins with
// an invite (or, as a replacement carrier, with a continuation ticket),
// takes its first task with next(ack), then runs each task as one turn of
// a configured model provider through start_coding_agent (so model
// credentials stay in the server) and hands in the model's text with the
// submit that also takes the next task (submit's next, with ack): one
// swarm call per task. It checkpoints once, when its worker has no
// checkpoint (it keeps no state between tasks: each is one model turn),
// and reports its own context estimate once per carrier. It stops, with
// success, when the worker is continued by another carrier, fenced,
// retired or its swarm closed, or when its token is revoked once it has
// joined.
package worker

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/hook"
)

// Config is what a worker needs.
type Config struct {
	SwarmID    string
	ProviderID string // the model provider that runs each task (list_runners)
	Project    string // the project the provider's runs belong to
	Invite     string // join as a new worker; or
	Ticket     string // continue a worker as its replacement carrier
	Label      string // with Invite
	// CarrierKey is this carrier's identity on the stateless protocol
	// (CONTRACT.md §2: at least continuo.MinCarrierKey bytes of a random
	// value); "" means a new random one, which is what a carrier should
	// use unless whoever starts it must be able to name it later.
	CarrierKey string
	// Wait is next's wait; 0 means 20 s.
	Wait time.Duration
	// RunTimeout bounds one task's provider turn; 0 means 300 s.
	RunTimeout time.Duration
	// Patience is how long a call that fails short of an answer (the
	// server restarting, a connection cut) is retried; 0 means 2 min.
	Patience time.Duration
	Logger   *slog.Logger
}

// Stopped says why a worker stopped without an error.
type Stopped string

// Why a worker stops.
const (
	StopContinued Stopped = "continued" // another carrier carries the worker now
	StopFenced    Stopped = "fenced"    // this carrier is not the worker's any more
	StopClosed    Stopped = "closed"    // the swarm closed
	// StopRevoked: the token it joined with was refused since. The server
	// revokes the token of a carrier it started when it retires that
	// carrier (CONTRACT.md §8), so such a carrier learns it was replaced
	// this way rather than by a next that says continued.
	StopRevoked Stopped = "revoked"
)

// worker is one carrier's loop.
type worker struct {
	cfg      Config
	c        hook.Caller
	key      string // this carrier's identity (the stateless protocol's carrier_key)
	id       string
	epoch    int64
	handled  int64 // bytes of prompts and results this carrier read and wrote
	reported bool  // this carrier reported its context estimate
	log      *slog.Logger
	// next is what the last submit (or next) answered: the task to work
	// on, or what to do instead; nil means ask next.
	next *nextView
	// idle is how long to wait before asking again while the worker's
	// carrier is being replaced (compact_required): it grows, so that a
	// replacement that does not come costs few calls.
	idle time.Duration
}

// Run carries one worker through c until it is continued, fenced, its
// swarm closed or its token revoked (a Stopped reason and nil), or ctx
// ends, or a call fails in a way a retry cannot mend.
func Run(ctx context.Context, c hook.Caller, cfg Config) (Stopped, error) {
	if cfg.Wait <= 0 {
		cfg.Wait = 20 * time.Second
	}
	if cfg.RunTimeout <= 0 {
		cfg.RunTimeout = 300 * time.Second
	}
	if cfg.Patience <= 0 {
		cfg.Patience = 2 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	key := cfg.CarrierKey
	switch {
	case key == "":
		key = newKey()
	case len(key) < continuo.MinCarrierKey:
		return "", fmt.Errorf("worker: a carrier key must be at least %d bytes of a random value", continuo.MinCarrierKey)
	}
	w := &worker{cfg: cfg, c: patient{c, cfg.Patience, cfg.Logger}, key: key, log: cfg.Logger, idle: time.Second}
	if err := w.join(ctx); err != nil {
		return "", err
	}
	for {
		stop, err := w.step(ctx)
		switch {
		case hook.IsCode(err, "carrier_fenced"):
			w.log.Info("worker fenced: another carrier holds it", "worker", w.id)
			return StopFenced, nil
		case errors.Is(err, hook.ErrUnauthorized):
			w.log.Info("worker stops: its token was revoked", "worker", w.id)
			return StopRevoked, nil
		case err != nil:
			return "", err
		case stop != "":
			w.log.Info("worker stops", "worker", w.id, "why", stop)
			return stop, nil
		}
	}
}

// patient retries a call that failed short of an answer until patience
// runs out (a token the server refused is an answer: no retry mends it).
// Every call a worker makes is safe to repeat — join by carrier
// and material, next by redelivery, ack and checkpoint as states, submit
// by content, start_coding_agent by its idempotency key, the rest reads —
// so a retry after a lost answer does nothing twice, and a carrier lives
// through its server's restart.
type patient struct {
	hook.Caller
	patience time.Duration
	log      *slog.Logger
}

func (p patient) Call(ctx context.Context, tool string, args map[string]any, out any) error {
	var since time.Time
	delay := 100 * time.Millisecond
	for {
		err := p.Caller.Call(ctx, tool, args, out)
		var te *hook.ToolError
		switch {
		case err == nil || errors.As(err, &te) || errors.Is(err, hook.ErrUnauthorized) || ctx.Err() != nil:
			return err
		case since.IsZero():
			since = time.Now()
		case time.Since(since) > p.patience:
			return err
		}
		p.log.Warn("worker: no answer; retrying", "tool", tool, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

func newKey() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

type workerView struct {
	WorkerID     string `json:"worker_id"`
	Epoch        int64  `json:"epoch"`
	CheckpointAt string `json:"checkpoint_at"`
}

func (w *worker) join(ctx context.Context) error {
	args := map[string]any{"swarm_id": w.cfg.SwarmID, "carrier_key": w.key}
	switch {
	case w.cfg.Ticket != "":
		args["continuation_ticket"] = w.cfg.Ticket
	case w.cfg.Invite != "":
		args["invite"], args["label"] = w.cfg.Invite, w.cfg.Label
	default:
		return errors.New("worker: an invite or a continuation ticket is needed")
	}
	var out struct {
		Worker workerView `json:"worker"`
	}
	if err := w.c.Call(ctx, "chat_swarm_join", args, &out); err != nil {
		return err
	}
	w.id, w.epoch = out.Worker.WorkerID, out.Worker.Epoch
	w.log.Info("worker joined", "worker", w.id, "epoch", w.epoch, "continued", w.cfg.Ticket != "")
	if out.Worker.CheckpointAt != "" {
		return nil // a continued worker has one: its capsule rests on it
	}
	// Its checkpoint says what a new carrier starts from: nothing but the
	// tasks' results, which the capsule lists (each task is one model
	// turn). It never changes, so a continuation prepared for the worker
	// stays valid whenever it comes.
	return w.c.Call(ctx, "chat_swarm_checkpoint", w.args("checkpoint", map[string]any{
		"summary": "reference worker: each task is one turn of the model; no state is kept between tasks",
		"state":   "ready", "next_step": "take the next task"}), nil)
}

// args are a worker call's arguments with the worker's identity.
func (w *worker) args(kv ...any) map[string]any {
	m := map[string]any{"worker_id": w.id, "epoch": w.epoch, "carrier_key": w.key}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

type task struct {
	TaskID    string `json:"task_id"`
	AttemptID string `json:"attempt_id"`
	Prompt    string `json:"prompt"`
}

// nextView is chat_swarm_next's answer, alone or in submit's next.
type nextView struct {
	State string `json:"state"`
	Task  *task  `json:"task"`
}

// step works the task the last answer gave, or asks next for one (with
// ack: it starts at once), or waits while its carrier is replaced.
func (w *worker) step(ctx context.Context) (Stopped, error) {
	n := w.next
	w.next = nil
	if n == nil {
		n = &nextView{}
		if err := w.c.Call(ctx, "chat_swarm_next", w.args("wait_secs", int(w.cfg.Wait/time.Second), "ack", true), n); err != nil {
			return "", err
		}
	}
	switch n.State {
	case "continued":
		return StopContinued, nil
	case "closed":
		return StopClosed, nil
	case "compact_required":
		// Its replacement is under way (or blocked): take no work, ask
		// again later, less often each time.
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(w.idle):
		}
		w.idle = min(2*w.idle, w.cfg.Wait)
		return "", nil
	case "task":
		w.idle = time.Second
		return "", w.work(ctx, n.Task)
	}
	return "", nil
}

// work runs one task through the provider and hands in its answer with
// the submit that takes the next task.
func (w *worker) work(ctx context.Context, t *task) error {
	w.handled += int64(len(t.Prompt))
	text, runErr := w.delegate(ctx, t)
	if runErr != nil {
		// The provider's turn did not complete: nothing was handed in,
		// and a model's turn has no effect outside its answer.
		reason := runErr.Error()
		if len(reason) > 1024 {
			reason = reason[:1024]
		}
		return w.c.Call(ctx, "chat_swarm_fail", w.args("task_id", t.TaskID, "reason", reason, "effect", "none"), nil)
	}
	w.handled += int64(len(text))
	var out struct {
		Next      *nextView `json:"next"`
		NextError *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"next_error"`
	}
	if err := w.c.Call(ctx, "chat_swarm_submit", w.args("task_id", t.TaskID, "result", text,
		"next", map[string]any{"ack": true, "wait_secs": int(w.cfg.Wait / time.Second)}), &out); err != nil {
		return err
	}
	if out.NextError != nil {
		// The result is in; the next half failed: ask next by itself.
		w.log.Warn("worker: the next task did not come with the submit", "code", out.NextError.Code, "message", out.NextError.Message)
	} else {
		w.next = out.Next
	}
	if w.reported {
		return nil
	}
	// Once per carrier: its own estimate, labelled as one (the server
	// counts the same bytes itself; a chat model would report what its
	// host says).
	w.reported = true
	return w.c.Call(ctx, "chat_swarm_report_context", w.args("tokens", w.handled/4, "source", "estimate",
		"basis", "reference worker: bytes of prompts and answers it handled / 4"), nil)
}

// renewEvery is how often a task's lease is renewed while its model turn
// runs: well within the default lease of 5 minutes.
const renewEvery = time.Minute

type run struct {
	RunID     string `json:"run_id"`
	State     string `json:"state"`
	ErrorKind string `json:"error_kind"`
}

type event struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// delegate runs the task's prompt as one provider turn and returns the
// model's text.
func (w *worker) delegate(ctx context.Context, t *task) (string, error) {
	var started struct {
		Run   run    `json:"run"`
		Token string `json:"observation_token"`
	}
	if err := w.c.Call(ctx, "start_coding_agent", map[string]any{"project": w.cfg.Project, "provider_id": w.cfg.ProviderID,
		"idempotency_key": "swarm " + t.TaskID + " " + t.AttemptID, "instruction": t.Prompt,
		"timeout_secs": int(w.cfg.RunTimeout / time.Second)}, &started); err != nil {
		return "", err
	}
	var text strings.Builder
	token := ""
	renewed := time.Now()
	for {
		if time.Since(renewed) > renewEvery {
			// A long turn: next redelivers the task, which renews its
			// lease (the submit would otherwise find it expired).
			if err := w.c.Call(ctx, "chat_swarm_next", w.args("wait_secs", 0), nil); err != nil {
				return "", err
			}
			renewed = time.Now()
		}
		args := map[string]any{"run_id": started.Run.RunID, "wait_secs": 25}
		if token != "" {
			args["observation_token"] = token
		}
		var o struct {
			Run     run     `json:"run"`
			Events  []event `json:"events"`
			Token   string  `json:"observation_token"`
			HasMore bool    `json:"has_more"`
		}
		if err := w.c.Call(ctx, "observe_coding_agent", args, &o); err != nil {
			return "", err
		}
		for _, e := range o.Events {
			if e.Kind == "text" {
				text.WriteString(e.Text)
			}
		}
		token = o.Token
		if !o.HasMore && o.Run.State != "queued" && o.Run.State != "running" {
			if o.Run.State != "succeeded" {
				return "", fmt.Errorf("the provider's run ended %s (%s)", o.Run.State, o.Run.ErrorKind)
			}
			if text.Len() == 0 {
				return "", errors.New("the provider answered nothing")
			}
			return text.String(), nil
		}
	}
}
