package run

import (
	"context"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// Log is the output log of one run, written by its executor. Text is
// batched into events of at most continuo.MaxRunEvent bytes and appended
// as soon as the append before it has committed (so it waits for at most
// one commit, and batches itself when it comes faster); the log keeps
// the run's first continuo.MaxRunHead bytes and its newest bytes up to
// continuo.MaxRunKept in all, dropping the oldest events past the head.
// Text must already be redacted, valid UTF-8 and free of NUL bytes
// (redact.Stream makes output so).
type Log struct {
	s   *Service
	run *continuo.Run

	mu      sync.Mutex
	room    *sync.Cond          // signalled when pending was taken
	pending []continuo.RunEvent // not yet appended, each ≤ MaxRunEvent
	size    int                 // bytes pending
	ready   chan struct{}       // something is pending
	held    bool                // appends wait for Release
	closed  bool

	// The counters as appended; only the flusher touches them.
	seq, outBytes, kept, headSeq, dropped int64
	tail                                  []sized // retained events past the head, oldest first

	done chan struct{}
}

type sized struct{ seq, n int64 }

func (s *Service) openLog(r *continuo.Run) *Log {
	l := &Log{s: s, run: r, ready: make(chan struct{}, 1), done: make(chan struct{}),
		seq: r.EventSeq, outBytes: r.OutputBytes, kept: r.KeptBytes, headSeq: r.HeadSeq, dropped: r.DroppedThrough}
	l.room = sync.NewCond(&l.mu)
	go l.flushLoop()
	return l
}

// maxPending bounds the text waiting to be appended: a writer faster than
// the database waits (a process's output pipe then fills, and it blocks).
const maxPending = continuo.MaxRunKept

// Write adds output text to the log.
func (l *Log) Write(kind continuo.RunEventKind, text string) {
	if text == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.size >= maxPending && !l.closed {
		l.room.Wait()
	}
	if l.closed {
		return
	}
	l.size += len(text)
	now := l.s.now()
	for text != "" {
		if n := len(l.pending); n > 0 && l.pending[n-1].Kind == kind && len(l.pending[n-1].Text) < continuo.MaxRunEvent {
			last := &l.pending[n-1]
			room := continuo.MaxRunEvent - len(last.Text)
			cut := cutAt(text, room)
			if cut == 0 {
				// Not even one rune fits: start a new event.
				l.pending = append(l.pending, continuo.RunEvent{Kind: kind, At: now})
				continue
			}
			last.Text += text[:cut]
			text = text[cut:]
		} else {
			cut := cutAt(text, continuo.MaxRunEvent)
			l.pending = append(l.pending, continuo.RunEvent{Kind: kind, Text: text[:cut], At: now})
			text = text[cut:]
		}
	}
	// Wake the flusher: it appends at once, or right after the append
	// under way, so text waits for at most one commit and batches itself
	// under load.
	select {
	case l.ready <- struct{}{}:
	default:
	}
}

// Hold makes appends wait until Release: what is written meanwhile is kept
// (and, past maxPending, makes the writer wait). The command executor holds
// the log until the run's process group is recorded, so that no output can
// be seen before the record that lets another process kill the group.
func (l *Log) Hold() {
	l.mu.Lock()
	l.held = true
	l.mu.Unlock()
}

// Release ends a Hold.
func (l *Log) Release() {
	l.mu.Lock()
	l.held = false
	l.mu.Unlock()
	select {
	case l.ready <- struct{}{}:
	default:
	}
}

// State adds a state event (a fixed sentence such as "running").
func (l *Log) State(sentence string) { l.Write(continuo.EventState, sentence+"\n") }

// cutAt returns the largest prefix length ≤ max of s that ends on a rune
// boundary.
func cutAt(s string, max int) int {
	if len(s) <= max {
		return len(s)
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return max
}

// Close appends what is pending and stops the flusher.
func (l *Log) Close() {
	l.mu.Lock()
	l.closed = true
	l.room.Broadcast()
	l.mu.Unlock()
	select {
	case l.ready <- struct{}{}:
	default:
	}
	<-l.done
}

func (l *Log) flushLoop() {
	defer close(l.done)
	for {
		<-l.ready
		l.mu.Lock()
		if l.held && !l.closed {
			l.mu.Unlock()
			continue // Release wakes it
		}
		batch := l.pending
		l.pending, l.size = nil, 0
		closed := l.closed
		l.room.Broadcast()
		l.mu.Unlock()
		if len(batch) > 0 {
			l.append(batch)
		}
		if closed {
			return // Write adds nothing once closed: the batch was the rest
		}
	}
}

// append writes a batch: numbers the events, updates the counters, drops
// the oldest events past the head while more than MaxRunKept bytes are
// kept, and wakes the run's observers. A failed append is logged and its
// events are lost (the counters stay as appended, so the next one fits).
func (l *Log) append(batch []continuo.RunEvent) {
	a := store.RunAppend{RunID: l.run.ID, PrevSeq: l.seq}
	seq, outBytes, kept, headSeq, dropped := l.seq, l.outBytes, l.kept, l.headSeq, l.dropped
	tail := l.tail
	for i := range batch {
		seq++
		n := int64(len(batch[i].Text))
		batch[i].RunID, batch[i].Seq = l.run.ID, seq
		if batch[i].Kind != continuo.EventState {
			outBytes += n // what the run produced; its state lines are ours
		}
		kept += n
		// Until the first event past the head, nothing was dropped: kept
		// counts every byte so far.
		if headSeq == seq-1 && kept <= continuo.MaxRunHead {
			headSeq = seq // still within the head: kept for good
		} else {
			tail = append(tail, sized{seq, n})
		}
	}
	for kept > continuo.MaxRunKept && len(tail) > 1 {
		if a.DropFrom == 0 {
			a.DropFrom = tail[0].seq
		}
		kept -= tail[0].n
		dropped = tail[0].seq
		a.DropThrough = dropped
		tail = tail[1:]
	}
	a.Events, a.OutputBytes, a.KeptBytes, a.HeadSeq, a.DroppedThrough = batch, outBytes, kept, headSeq, dropped
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := l.s.store.Write(ctx, func(tx store.Tx) error {
		if err := tx.RunAppend(ctx, a); err != nil {
			return err
		}
		return tx.Notify(ctx, eventChannel(l.run.ID), "")
	})
	if err != nil {
		l.s.log.Error("runs: append output", "run", l.run.ID, "events", len(batch), "err", err)
		return
	}
	l.seq, l.outBytes, l.kept, l.headSeq, l.dropped, l.tail = seq, outBytes, kept, headSeq, dropped, tail
}
