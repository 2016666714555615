package provider

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// The bounds of an event stream. A Responses API event carries one JSON
// object on one line, and response.completed repeats the whole answer, so
// a line is bounded well above any max_output_tokens a model allows today;
// a stream that goes past it is not one we can trust to parse, and it must
// not grow our memory without bound.
const (
	maxSSELine  = 1 << 20 // one line, without its line ending
	maxSSEEvent = 1 << 20 // the data of one event: its data lines joined with "\n"
)

// errSSETooLong is the reader's error for a line or an event over its bound.
var errSSETooLong = errors.New("provider: event stream line or event over its bound")

// sseEvent is one dispatched Server-Sent Event.
type sseEvent struct {
	name string // the event field ("" when the event has none)
	data string // the data fields joined with "\n"
}

// sseReader reads Server-Sent Events (the WHATWG event stream format) from
// a response body, strictly and within bounds: lines end with LF or CRLF
// (a lone CR is not a line ending: no server we speak to sends one, and
// accepting it would make "\r" inside a line ambiguous); a leading BOM is
// skipped; "data" fields are joined with "\n"; "event" names the event;
// comments (":…"), "id", "retry" and unknown fields are ignored; a blank
// line dispatches the event if it has data. An event the stream does not
// end with a blank line is dropped, as the format says: its last line may
// have been cut.
type sseReader struct {
	sc       *bufio.Scanner
	maxLine  int
	maxEvent int
	started  bool // the first line has been read (and its BOM skipped)
	name     string
	data     []byte
	hasData  bool // a data field was seen (data may still be empty)
	err      error
}

var utf8BOM = []byte("\xef\xbb\xbf")

// newSSEReader reads events from r, with lines of at most maxLine bytes
// and events of at most maxEvent bytes of data.
func newSSEReader(r io.Reader, maxLine, maxEvent int) *sseReader {
	sc := bufio.NewScanner(r)
	// Room for the longest line, its CRLF and a BOM; the length itself is
	// checked below, so that a line of maxLine+1 bytes fails the same way
	// whether or not it fits the buffer.
	sc.Buffer(make([]byte, 0, min(4096, maxLine+5)), maxLine+len(utf8BOM)+2)
	return &sseReader{sc: sc, maxLine: maxLine, maxEvent: maxEvent}
}

// next returns the next event. At the end of the stream it returns io.EOF
// (a clean end of the body) or the read error (a cut connection, a closed
// body); errSSETooLong for a line or event over its bound. Errors are
// sticky.
func (s *sseReader) next() (sseEvent, error) {
	if s.err != nil {
		return sseEvent{}, s.err
	}
	for s.sc.Scan() {
		line := s.sc.Bytes() // ScanLines drops the "\n" and a "\r" before it
		if !s.started {
			s.started = true
			line = bytes.TrimPrefix(line, utf8BOM)
		}
		if len(line) > s.maxLine {
			return s.fail(errSSETooLong)
		}
		if len(line) == 0 {
			if !s.hasData {
				s.name = "" // an event without data is not dispatched
				continue
			}
			ev := sseEvent{name: s.name, data: string(s.data)}
			s.name, s.data, s.hasData = "", s.data[:0], false
			return ev, nil
		}
		if line[0] == ':' {
			continue // a comment (keep-alives)
		}
		field, value, _ := bytes.Cut(line, []byte(":")) // no colon: the whole line names the field
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			n := len(s.data) + len(value)
			if s.hasData {
				n++
			}
			if n > s.maxEvent {
				return s.fail(errSSETooLong)
			}
			if s.hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			s.hasData = true
		case "event":
			s.name = string(value)
		}
		// "id", "retry" and anything else: we never reconnect, so neither
		// the last event id nor the retry delay means anything to us.
	}
	err := s.sc.Err()
	switch {
	case err == nil:
		err = io.EOF
	case errors.Is(err, bufio.ErrTooLong):
		err = errSSETooLong
	}
	return s.fail(err)
}

func (s *sseReader) fail(err error) (sseEvent, error) {
	s.err = err
	return sseEvent{}, err
}
