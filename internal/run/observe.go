package run

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strconv"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// Observation bounds: one observe_run returns at most MaxObserveBytes of
// event text (has_more says there is more) and waits at most MaxWait.
const (
	MaxObserveBytes  = 32 << 10
	MaxObserveEvents = 200
	MaxWait          = 60 * time.Second
	// CancelWait is how long cancel_run waits for the run to end: the
	// grace a process group gets, and a margin.
	CancelWait = StopGrace + 5*time.Second
)

// observationKey derives the key of observation tokens from the server's
// persistent key, so that they stay valid across restarts and replicas.
func observationKey(key []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("continuo observation tokens v1"))
	return m.Sum(nil)
}

// Token returns the observation token of position seq (the last event seen)
// in a run, for one principal: opaque, bound to both, tamper-evident.
func (s *Service) Token(c *continuo.Caller, runID string, seq int64) string {
	var b [8 + 16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(seq))
	copy(b[8:], s.tokenMAC(c, runID, seq))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (s *Service) tokenMAC(c *continuo.Caller, runID string, seq int64) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(runID + "\x00" + c.PrincipalID + "\x00" + strconv.FormatInt(seq, 10)))
	return m.Sum(nil)[:16]
}

// parseToken returns the position a token names; a token of another run or
// another principal, or a changed one, is invalid_input.
func (s *Service) parseToken(c *continuo.Caller, runID, token string) (int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err == nil && len(b) == 24 {
		seq := int64(binary.BigEndian.Uint64(b[:8]))
		if seq >= 0 && hmac.Equal(b[8:], s.tokenMAC(c, runID, seq)) {
			return seq, nil
		}
	}
	return 0, continuo.Invalid("observation_token", "is not a token of this run for this caller; omit it to read from the start")
}

// Observation is what observe_run returns.
type Observation struct {
	Run         continuo.Run
	Events      []continuo.RunEvent
	Token       string
	HasMore     bool
	HistoryLost bool // events after the token's position were dropped from the log
}

// Get returns a run the caller may see: its group's, while the group
// reaches the run's project; anything else is not_found.
func (s *Service) Get(ctx context.Context, c *continuo.Caller, id string) (*continuo.Run, error) {
	if err := c.Require(continuo.ScopeRuntimeRead); err != nil {
		return nil, err
	}
	return s.get(ctx, c, id)
}

// get is Get without the scope check, for callers that checked their own
// (starting or cancelling a run lets the caller see it end).
func (s *Service) get(ctx context.Context, c *continuo.Caller, id string) (*continuo.Run, error) {
	var r *continuo.Run
	err := s.store.Read(ctx, func(tx store.Tx) (err error) {
		r, err = s.visible(ctx, tx, c, id)
		return err
	})
	return r, err
}

// visible reads a run the caller may see.
func (s *Service) visible(ctx context.Context, tx store.Tx, c *continuo.Caller, id string) (*continuo.Run, error) {
	if !continuo.ValidID(continuo.PrefixRun, id) {
		return nil, continuo.Invalid("run_id", "must be a run_… id")
	}
	r, err := tx.RunGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && r.GroupID != c.GroupID {
		return nil, continuo.NotFound("run", id)
	} else if err != nil {
		return nil, err
	}
	access, err := s.auth.Access(ctx, tx, c, r.ProjectID)
	if err != nil {
		return nil, err
	}
	if access == "" {
		return nil, continuo.NotFound("run", id)
	}
	return r, nil
}

// Observe returns a run's events after the position token names (all
// retained ones without a token), waiting up to wait for new ones while the
// run has not ended.
func (s *Service) Observe(ctx context.Context, c *continuo.Caller, runID, token string, wait time.Duration) (*Observation, error) {
	if err := c.Require(continuo.ScopeRuntimeRead); err != nil {
		return nil, err
	}
	if wait < 0 || wait > MaxWait {
		return nil, continuo.Invalid("wait_secs", "must be 0..%d", int(MaxWait.Seconds()))
	}
	var after int64
	if token != "" {
		var err error
		if after, err = s.parseToken(c, runID, token); err != nil {
			return nil, err
		}
	}
	var o *Observation
	err := s.await(ctx, runID, wait, func() (done bool, err error) {
		o, err = s.read(ctx, c, runID, after)
		return err == nil && (len(o.Events) > 0 || o.Run.State.Terminal()), err
	})
	if err != nil {
		return nil, err
	}
	return o, nil
}

// await calls check until it reports done or wait has passed (then once
// more), waking on the run's notifications and at least every
// store.PollInterval. It subscribes before the first check, so nothing
// lands unheard between a check and the wait.
func (s *Service) await(ctx context.Context, runID string, wait time.Duration, check func() (bool, error)) error {
	var wake <-chan string
	if wait > 0 {
		lctx, stop := context.WithCancel(ctx)
		defer stop()
		var err error
		if wake, err = s.store.Listen(lctx, eventChannel(runID)); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(wait)
	for {
		done, err := check()
		left := time.Until(deadline)
		if err != nil || done || left <= 0 {
			return err
		}
		t := time.NewTimer(min(left, store.PollInterval))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// read reads one page of events after a position, in one snapshot with the
// run.
func (s *Service) read(ctx context.Context, c *continuo.Caller, runID string, after int64) (*Observation, error) {
	var o *Observation
	err := s.store.Read(ctx, func(tx store.Tx) error {
		r, err := s.visible(ctx, tx, c, runID)
		if err != nil {
			return err
		}
		if after > r.EventSeq {
			return continuo.Invalid("observation_token", "is ahead of the run's log")
		}
		evs, err := tx.RunEvents(ctx, store.RunEventsParams{RunID: runID, AfterSeq: after, Limit: MaxObserveEvents, MaxBytes: MaxObserveBytes})
		if err != nil {
			return err
		}
		o = &Observation{Run: *r, Events: evs}
		next := after + 1
		last := after
		for _, e := range evs {
			if e.Seq != next {
				o.HistoryLost = true
			}
			next, last = e.Seq+1, e.Seq
		}
		if len(evs) == 0 && after < r.EventSeq {
			o.HistoryLost = true // everything after it was dropped
			last = r.EventSeq
		}
		o.HasMore = last < r.EventSeq
		o.Token = s.Token(c, runID, last)
		return nil
	})
	return o, err
}

// Cancel requests that a run stop: a queued run ends cancelled at once; a
// running one is stopped by its owner (wherever it runs) and ends
// cancelled unless it finished first. It waits up to wait for the run to
// end and returns it as it is then. Cancelling an ended run changes
// nothing.
func (s *Service) Cancel(ctx context.Context, c *continuo.Caller, id string, wait time.Duration) (*continuo.Run, error) {
	var r *continuo.Run
	err := s.store.Write(ctx, func(tx store.Tx) error {
		cur, err := s.visible(ctx, tx, c, id)
		if err != nil {
			return err
		}
		if err := mayChange(c, cur); err != nil {
			return err
		}
		r = cur
		if cur.State.Terminal() || cur.CancelRequested {
			return nil
		}
		if _, err := tx.RunRequestCancel(ctx, id); err != nil {
			return err
		}
		r.CancelRequested = true
		if err := tx.Notify(ctx, cancelChannel, id); err != nil {
			return err
		}
		return tx.Notify(ctx, dispatchChannel, "")
	})
	if err != nil {
		return nil, err
	}
	s.cancelLocal(id)
	if r.State == continuo.RunQueued && r.Owner == s.self {
		s.begin(ctx, id) // ends it cancelled now
	}
	if r.State.Terminal() || wait <= 0 {
		return s.get(ctx, c, id)
	}
	return s.Wait(ctx, c, id, wait)
}

// mayChange checks that the caller may stop a run: a validation run needs
// project:write, an agent run coding_agent:run.
func mayChange(c *continuo.Caller, r *continuo.Run) error {
	scope := continuo.ScopeProjectWrite
	if r.Kind == continuo.RunAgent {
		scope = continuo.ScopeCodingAgent
	}
	return c.Require(scope)
}

// Wait waits up to wait for a run the caller may see to end and returns it
// as it is then. It checks no scope: it is for callers that started or
// cancelled the run.
func (s *Service) Wait(ctx context.Context, c *continuo.Caller, id string, wait time.Duration) (*continuo.Run, error) {
	var r *continuo.Run
	err := s.await(ctx, id, wait, func() (done bool, err error) {
		r, err = s.get(ctx, c, id)
		return err == nil && r.State.Terminal(), err
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}
