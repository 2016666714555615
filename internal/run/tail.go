package run

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/store"
)

// A run's tail: the last TailLines lines of its output, at most TailBytes
// bytes, read from its newest tailEvents events. What a failed check
// printed last is usually why it failed; the brief and the run page show
// it without paging through the log.
const (
	TailLines  = 20
	TailBytes  = 1024
	tailEvents = 32
)

// Tail returns the last lines of a run the caller may see (as Get).
func (s *Service) Tail(ctx context.Context, c *continuo.Caller, id string) (string, error) {
	if err := c.Require(continuo.ScopeRuntimeRead); err != nil {
		return "", err
	}
	var out string
	err := s.store.Read(ctx, func(tx store.Tx) error {
		r, err := s.visible(ctx, tx, c, id)
		if err != nil {
			return err
		}
		out, err = ReadTail(ctx, tx, r)
		return err
	})
	return out, err
}

// ReadTail is the last lines of r's output (not the log's state lines):
// at most TailLines lines and TailBytes bytes, starting at a line (else a
// rune) boundary, redacted; "" when it printed nothing.
func ReadTail(ctx context.Context, tx store.Tx, r *continuo.Run) (string, error) {
	evs, err := tx.RunEvents(ctx, store.RunEventsParams{RunID: r.ID, AfterSeq: max(0, r.EventSeq-tailEvents),
		Limit: tailEvents, MaxBytes: tailEvents * continuo.MaxRunEvent})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, ev := range evs {
		if ev.Kind == continuo.EventOutput {
			b.WriteString(ev.Text)
		}
	}
	return lastLines(b.String(), TailLines, TailBytes), nil
}

// lastLines returns the redacted end of text: at most lines lines and
// bytes bytes, starting at a line boundary when one is within the bytes,
// else at a rune boundary.
func lastLines(text string, lines, bytes int) string {
	text, _ = redact.String(strings.TrimRight(text, "\n"))
	start := len(text)
	for n := 0; n < lines; n++ {
		i := strings.LastIndexByte(text[:start], '\n')
		if i < 0 {
			start = 0
			break
		}
		start = i
		if n == lines-1 {
			start = i + 1
		}
	}
	if len(text)-start > bytes {
		start = len(text) - bytes
		if text[start-1] != '\n' { // not at a line's start: go to the next one, else a rune's
			if i := strings.IndexByte(text[start:], '\n'); i >= 0 {
				start += i + 1
			} else {
				for start < len(text) && !utf8.RuneStart(text[start]) {
					start++
				}
			}
		}
	}
	return text[start:]
}
