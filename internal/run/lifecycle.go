package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/proc"
	"github.com/continuo-dev/continuo/internal/store"
)

// dispatchLoop starts this process's queued runs: at once when kicked, when
// another process's run ended (a queued one may now start), and every
// store.PollInterval.
func (s *Service) dispatchLoop() {
	defer s.wg.Done()
	wake, err := s.store.Listen(s.bg, dispatchChannel)
	if err != nil {
		s.log.Error("runs: listen for queued runs", "err", err)
		wake = nil
	}
	tick := time.NewTicker(store.PollInterval)
	defer tick.Stop()
	for {
		s.dispatch(s.bg)
		select {
		case <-s.bg.Done():
			return
		case <-s.kick:
		case <-wake:
		case <-tick.C:
		}
	}
}

// dispatch tries to start every queued run this process owns, oldest first.
func (s *Service) dispatch(ctx context.Context) {
	var queued []continuo.Run
	err := s.store.Read(ctx, func(tx store.Tx) (err error) {
		queued, err = tx.RunList(ctx, store.RunListParams{States: []continuo.RunState{continuo.RunQueued}, Owner: s.self})
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("runs: list queued runs", "err", err)
		}
		return
	}
	for i := range queued {
		s.begin(ctx, queued[i].ID)
	}
}

// begin makes a queued run running and executes it, unless it was
// cancelled meanwhile (then it ends cancelled) or another run of the same
// check runs in its directory (then it stays queued).
func (s *Service) begin(ctx context.Context, id string) {
	exec := func(r *continuo.Run) Executor { return s.exec[r.Kind] }
	// An executor with limited slots takes one before the run may start;
	// the run stays queued while none is free.
	var cur *continuo.Run
	if err := s.store.Read(ctx, func(tx store.Tx) (err error) { cur, err = tx.RunGet(ctx, id); return err }); err != nil {
		return
	}
	admitter, _ := exec(cur).(Admitter)
	if admitter != nil && cur.State == continuo.RunQueued && !cur.CancelRequested {
		if !admitter.Admit(cur) {
			return
		}
	} else {
		admitter = nil // nothing to take: it will not start, or needs no slot
	}
	started := false
	defer func() {
		if admitter != nil && !started {
			admitter.Release(cur)
		}
	}()
	r, err := s.update(ctx, id, func(tx store.Tx, r *continuo.Run) (continuo.RunState, error) {
		if r.State != continuo.RunQueued || r.Owner != s.self {
			return "", nil
		}
		if r.CancelRequested {
			finish(r, s.now(), Outcome{ErrorKind: "cancelled"})
			return continuo.RunCancelled, nil
		}
		if exec(r) == nil {
			finish(r, s.now(), Outcome{ErrorKind: "no_executor"})
			return continuo.RunFailed, nil
		}
		if busy, err := slotBusy(ctx, tx, r); err != nil || busy {
			return "", err
		}
		now := s.now()
		r.StartedAt = &now
		r.LeaseUntil = now.Add(LeaseTTL)
		return continuo.RunRunning, nil
	}, store.Note{Channel: dispatchChannel})
	switch {
	case errors.Is(err, store.ErrConflict):
		return // another run of this check runs in this directory: stay queued
	case err != nil:
		if ctx.Err() == nil {
			s.log.Error("runs: start run", "run", id, "err", err)
		}
		return
	case r.State != continuo.RunRunning || r.Owner != s.self:
		return
	}
	s.mu.Lock()
	if _, dup := s.active[r.ID]; dup {
		s.mu.Unlock()
		return
	}
	rctx, cancel := context.WithCancelCause(s.bg)
	s.active[r.ID] = &active{cancel: cancel}
	s.mu.Unlock()
	started = true
	s.wg.Add(1)
	go func() {
		s.execute(rctx, cancel, r, exec(r))
		if admitter != nil {
			admitter.Release(cur)
			s.Kick() // a run of this provider may be waiting for the slot
		}
	}()
}

// execute runs r with its executor and records how it ended.
func (s *Service) execute(ctx context.Context, cancel context.CancelCauseFunc, r *continuo.Run, ex Executor) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.active, r.ID)
		s.mu.Unlock()
		cancel(nil)
	}()
	if d := timeoutOf(r); d > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, d, errTimedOut)
		defer stop()
	}
	log := s.openLog(r)
	log.State("running")
	out := ex.Execute(ctx, r, log)

	state := continuo.RunFailed
	switch cause := context.Cause(ctx); {
	case out.Stopped && errors.Is(cause, errCancelled):
		state, out.ErrorKind = continuo.RunCancelled, "cancelled"
	case out.Stopped && errors.Is(cause, errTimedOut):
		state, out.ErrorKind = continuo.RunTimedOut, "timeout"
	case out.Stopped:
		state, out.ErrorKind = continuo.RunInterrupted, "server_stopped"
	case out.Succeeded:
		state = continuo.RunSucceeded
	}
	if out.Stopped {
		out.ExitCode = nil // a signal's, not the work's
	}
	log.State(endSentence(state, out))
	log.Close()

	// The final write must happen even while the server stops.
	fctx, done := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer done()
	_, err := s.update(fctx, r.ID, func(_ store.Tx, cur *continuo.Run) (continuo.RunState, error) {
		if cur.State.Terminal() {
			return "", nil // interrupted meanwhile (our lease ran out): that record stands
		}
		finish(cur, s.now(), out)
		return state, nil
	}, store.Note{Channel: dispatchChannel})
	if err != nil {
		s.log.Error("runs: record the end of a run", "run", r.ID, "err", err)
	}
}

// slotBusy tells whether another validation run of r's check runs in r's
// directory, as this transaction sees it. Such a run's end notifies the
// dispatch channel, so r is started again after it; and because r's start
// time is taken only once the other's end is visible, it is never earlier
// than that end (the unique index alone would make this start wait for the
// end's commit with a start time taken before it).
func slotBusy(ctx context.Context, tx store.Tx, r *continuo.Run) (bool, error) {
	if r.Kind != continuo.RunValidation || r.Check == "" {
		return false, nil
	}
	running, err := tx.RunList(ctx, store.RunListParams{Kind: continuo.RunValidation, Dir: r.Dir, Check: r.Check,
		States: []continuo.RunState{continuo.RunRunning}, Limit: 1})
	return len(running) > 0, err
}

// finish records r's end at now (the caller moves it to its end state).
func finish(r *continuo.Run, now time.Time, out Outcome) {
	r.EndedAt = &now
	r.ExitCode = out.ExitCode
	r.ErrorKind = out.ErrorKind
	if out.Usage != "" {
		r.Usage = out.Usage
	}
	r.LeaseUntil = time.Time{}
}

// endSentence is the state event that ends a run's log.
func endSentence(state continuo.RunState, out Outcome) string {
	s := string(state)
	if out.ExitCode != nil {
		s += fmt.Sprintf(" (exit status %d)", *out.ExitCode)
	} else if out.ErrorKind != "" && state == continuo.RunFailed {
		s += " (" + out.ErrorKind + ")"
	}
	return s
}

// timeoutOf reads a run's timeout from its spec (every kind's spec has
// timeout_secs).
func timeoutOf(r *continuo.Run) time.Duration {
	var spec struct {
		TimeoutSecs int `json:"timeout_secs"`
	}
	if json.Unmarshal([]byte(r.Spec), &spec) != nil || spec.TimeoutSecs <= 0 {
		return 0
	}
	return time.Duration(spec.TimeoutSecs) * time.Second
}

// renewLoop keeps this process's leases alive.
func (s *Service) renewLoop() {
	defer s.wg.Done()
	tick := time.NewTicker(LeaseRenew)
	defer tick.Stop()
	for {
		select {
		case <-s.bg.Done():
			return
		case <-tick.C:
		}
		err := s.store.Write(s.bg, func(tx store.Tx) error {
			_, err := tx.RunRenew(s.bg, s.self, s.now().Add(LeaseTTL))
			return err
		})
		if err != nil && s.bg.Err() == nil {
			s.log.Error("runs: renew leases", "err", err)
		}
	}
}

// sweepLoop interrupts abandoned runs every SweepInterval, and stops the
// runs of this process whose cancellation was requested.
func (s *Service) sweepLoop(cancels <-chan string) {
	defer s.wg.Done()
	tick := time.NewTicker(SweepInterval)
	defer tick.Stop()
	for {
		select {
		case <-s.bg.Done():
			return
		case id, ok := <-cancels:
			if !ok {
				return
			}
			s.cancelLocal(id)
			continue
		case <-tick.C:
		}
		s.sweep(s.bg)
		s.cancelRequested(s.bg)
	}
}

// cancelLocal stops the run with the given ID if this process runs it.
func (s *Service) cancelLocal(id string) {
	s.mu.Lock()
	a := s.active[id]
	s.mu.Unlock()
	if a != nil {
		a.cancel(errCancelled)
	}
}

// cancelRequested stops this process's runs whose cancellation was
// requested: the fallback for a cancellation notification that was lost.
func (s *Service) cancelRequested(ctx context.Context) {
	var runs []continuo.Run
	err := s.store.Read(ctx, func(tx store.Tx) (err error) {
		runs, err = tx.RunList(ctx, store.RunListParams{States: []continuo.RunState{continuo.RunRunning}, Owner: s.self})
		return err
	})
	if err != nil {
		return
	}
	for _, r := range runs {
		if r.CancelRequested {
			s.cancelLocal(r.ID)
		}
	}
}

// sweep interrupts the runs that nobody will finish: those whose lease ran
// out, and those whose owner is a process of this host that is gone; and
// kills what is left of their process groups on this host.
func (s *Service) sweep(ctx context.Context) {
	now := s.now()
	var expired, open []continuo.Run
	err := s.store.Read(ctx, func(tx store.Tx) (err error) {
		states := []continuo.RunState{continuo.RunQueued, continuo.RunRunning}
		if expired, err = tx.RunList(ctx, store.RunListParams{States: states, LeaseBefore: now}); err != nil {
			return err
		}
		open, err = tx.RunList(ctx, store.RunListParams{States: states, Limit: 1000})
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("runs: sweep", "err", err)
		}
		return
	}
	lost := map[string]string{}
	for _, r := range expired {
		lost[r.ID] = "lease_expired"
	}
	for _, r := range open {
		if r.Owner == s.self {
			continue
		}
		if alive, known := proc.Alive(r.Owner); known && !alive {
			lost[r.ID] = "owner_lost"
		}
	}
	for id, why := range lost {
		r, err := s.update(ctx, id, func(_ store.Tx, r *continuo.Run) (continuo.RunState, error) {
			if r.State.Terminal() {
				return "", nil
			}
			finish(r, s.now(), Outcome{ErrorKind: why})
			return continuo.RunInterrupted, nil
		}, store.Note{Channel: dispatchChannel})
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("runs: interrupt an abandoned run", "run", id, "err", err)
			}
			continue
		}
		if r.State == continuo.RunInterrupted {
			s.cancelLocal(id) // ours whose lease lapsed (this process was paused): the record says it ended
			if r.Proc != "" { // KillGroup does nothing for another host's group
				if n, err := proc.KillGroup(r.Proc); err != nil {
					s.log.Error("runs: kill the process group of an interrupted run", "run", id, "err", err)
				} else if n > 0 {
					s.log.Info("runs: killed what was left of an interrupted run", "run", id, "processes", n)
				}
			}
		}
	}
}
