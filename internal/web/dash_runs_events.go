package web

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/run"
)

// GET /r/{run}/events: a run's new output as server-sent events, for the
// run page's script (dash.js). Each event of the run's log is an event
// "log" whose id is the observation token after it, so that a browser
// that reconnects (it sends the last id as Last-Event-ID) resumes exactly
// after what it has; without one the stream starts after the token in
// ?after= (the page's own), else at the beginning. "state" says the run's
// state when it changes (and first), "gap" that output was dropped from
// the log before it could be sent, and "end" that the run has ended and
// everything it wrote was sent: the last event of the stream. A stream
// lasts at most runStreamMax, then ends without "end", and the browser
// reconnects where it was.
//
// It waits through run.Service.Observe — on the store's notifications of
// the run, never polling the database itself — so each event leaves as
// soon as its append commits; the caller's scope and sight of the run are
// the service's, checked on every read, and the browser's sign-in is
// checked again after every wait.

// runStreamMax bounds one stream (nanoseconds; a variable for tests).
var runStreamMax atomic.Int64

// runStreamBeat is the longest a stream stays silent: a comment then
// tells proxies and the browser that it is alive.
const runStreamBeat = 20 * time.Second

func init() { runStreamMax.Store(int64(5 * time.Minute)) }

// The data of the stream's events.
type (
	runLogEvent struct {
		Seq  int64  `json:"seq"`
		Kind string `json:"kind"`
		Text string `json:"text"`
	}
	runStateEvent struct {
		State           string `json:"state"`
		CancelRequested bool   `json:"cancel_requested,omitempty"`
		ExitCode        *int   `json:"exit_code,omitempty"`
		ErrorKind       string `json:"error_kind,omitempty"`
		EndedAt         string `json:"ended_at,omitempty"`
	}
)

func (d *dash) runEvents(w http.ResponseWriter, r *http.Request) {
	c, ok := d.caller(w, r)
	if !ok {
		return
	}
	ctx, id := r.Context(), r.PathValue("run")
	token := r.Header.Get("Last-Event-ID") // the browser's, when it reconnects
	if token == "" {
		token = r.URL.Query().Get("after")
	}
	// The first read answers what the caller may not see (or a token that
	// is not theirs) as a page, before the stream starts.
	o, err := d.svc.Runs.Observe(ctx, c, id, token, 0)
	if err != nil {
		d.fail(w, r, c, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Accel-Buffering", "no") // a buffering proxy would hold the events back
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(event, id string, data any) error {
		b, err := json.Marshal(data)
		if err != nil {
			return err
		}
		msg := "event: " + event + "\n"
		if id != "" {
			msg += "id: " + id + "\n"
		}
		_, err = w.Write([]byte(msg + "data: " + string(b) + "\n\n"))
		return err
	}
	if _, err := w.Write([]byte("retry: 2000\n\n")); err != nil {
		return
	}
	deadline := time.Now().Add(time.Duration(runStreamMax.Load()))
	var sent *runStateEvent // the state last sent
	for {
		if o.HistoryLost {
			gapID := ""
			if len(o.Events) == 0 {
				gapID = o.Token // after what was lost
			}
			if send("gap", gapID, struct{}{}) != nil {
				return
			}
		}
		for _, e := range o.Events {
			if send("log", d.svc.Runs.Token(c, id, e.Seq), runLogEvent{Seq: e.Seq, Kind: string(e.Kind), Text: e.Text}) != nil {
				return
			}
		}
		if st := stateOf(&o.Run); sent == nil || st.State != sent.State || st.CancelRequested != sent.CancelRequested {
			if send("state", o.Token, st) != nil {
				return
			}
			sent = &st
		}
		if o.Run.State.Terminal() && !o.HasMore {
			_ = send("end", o.Token, stateOf(&o.Run))
			_ = rc.Flush()
			return
		}
		if rc.Flush() != nil {
			return
		}
		left := time.Until(deadline)
		if left <= 0 {
			return // the browser reconnects with the last id
		}
		wait := time.Duration(0) // the next page of what is there already
		if !o.HasMore {
			wait = min(left, runStreamBeat)
		}
		if o, err = d.svc.Runs.Observe(ctx, c, id, o.Token, wait); err != nil {
			if ctx.Err() == nil {
				d.log.WarnContext(ctx, "dashboard: run events", "run", id, "err", err)
			}
			return // the browser reconnects; a run it may no longer see answers 404 then
		}
		// A browser that signed out (or whose token was revoked) hears no
		// more: its reconnect is sent to sign in.
		if still, err := d.edge.signedIn(w, r); err != nil || still == nil {
			return
		}
		if len(o.Events) == 0 && !o.HistoryLost {
			if _, err := w.Write([]byte(": waiting\n\n")); err != nil {
				return
			}
		}
	}
}

// stateOf is what the state and end events say about a run.
func stateOf(r *continuo.Run) runStateEvent {
	v := runStateEvent{State: string(r.State), CancelRequested: r.CancelRequested && !r.State.Terminal(), ExitCode: r.ExitCode, ErrorKind: r.ErrorKind}
	if r.EndedAt != nil {
		v.EndedAt = r.EndedAt.UTC().Format(continuo.TimeFormat)
	}
	return v
}

// A stream's waits stay within Observe's bound.
const _ = uint64(run.MaxWait - runStreamBeat)
