package redact

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Stream bounds.
const (
	// streamLine is the longest line Stream redacts whole; a longer one is
	// cut into pieces of at most this many bytes.
	streamLine = 8 << 10
	// streamBlock bounds a held private-key block.
	streamBlock = 64 << 10
	// streamEmit bounds the text of one emit call: continuo.MaxRunEvent,
	// the bound of a run event's text (TestStreamBounds holds them equal).
	streamEmit = 16 << 10
)

// Stream redacts text written to it line by line and passes each redacted
// piece to emit. It is the redactor of a process's output, which arrives in
// writes that split lines anywhere.
//
// It emits only complete lines: String needs the whole line, since a token
// split across two writes would otherwise leak its second half. The unit of
// redaction is a line, up to and including its '\n', widened for the rules
// of String that read across lines:
//
//   - A line ending in a backslash goes on with the next ("curl \⏎ -u
//     user:pw"), as commandSpans reads a command line.
//
//   - A private-key block, from the line with "-----BEGIN ... PRIVATE
//     KEY-----" to the line with its END, is held and redacted as a whole,
//     and so is a PuTTY key's "Private-Lines: N" line with the base64 lines
//     after it. A held block that grows past 64 KiB is redacted as it
//     stands (String turns a key without its end into Placeholder, and
//     keeps the text before its BEGIN), and the rest of it is dropped, up
//     to its END line or the first line that is not base64.
//
//   - String removes an unlabelled AWS secret key found within 256 bytes
//     of an access key id, before or after it. A unit holding an id, or a
//     run of base64 that could be such a secret (see awsSecrets), is
//     redacted together with the units after it, up to 256 bytes past the
//     last of those (at most 16 KiB in all). Such a line is emitted only
//     once those bytes came, or at Close.
//
// A line longer than 8 KiB without a newline is cut into pieces of at most
// 8 KiB, each redacted alone: a secret straddling a cut can escape, whole
// or in part. Lines that long are rare in test output. A cut never splits
// a UTF-8 sequence.
//
// Every emitted text is valid UTF-8 without NUL bytes, because PostgreSQL's
// TEXT refuses both: each byte of an invalid sequence, and each NUL,
// becomes U+FFFD before redaction. emit may get several units in one call,
// never more than 16 KiB (continuo.MaxRunEvent) and never an empty text; a
// unit that grew past that (an invalid byte triples) is split across calls
// at a rune boundary, after its redaction. Write emits every unit it
// completes before it returns, but for the held blocks and the units kept
// for an AWS key above; Close emits the rest.
//
// Where writes split the text never changes what is emitted in all: only
// how it is divided among emit calls.
//
// A Stream is not safe for concurrent use.
type Stream struct {
	emit func(string)

	buf     []byte // raw bytes of the current unit and what follows
	scanned int    // buf[:scanned] holds no end of the current unit

	mode streamMode
	held strings.Builder // the block being held (sanitized)
	// group holds units near an AWS key id or a possible secret key, and
	// groupTail counts its bytes after the last of those.
	group     strings.Builder
	groupTail int
	out       strings.Builder // redacted text not yet emitted

	closed bool
}

type streamMode int

const (
	modeLines     streamMode = iota
	modeKey                  // holding a private-key block up to its END line
	modeKeyDrop              // dropping the rest of an overlong private-key block
	modePutty                // holding a PuTTY key's private lines
	modePuttyDrop            // dropping the rest of overlong private lines
)

// errStreamClosed is returned by a Write after Close.
var errStreamClosed = errors.New("redact: write to a closed Stream")

// NewStream returns a Stream that passes redacted text to emit.
func NewStream(emit func(text string)) *Stream { return &Stream{emit: emit} }

// Write takes p, emits every unit it completes and returns len(p).
func (s *Stream) Write(p []byte) (int, error) {
	if s.closed {
		return 0, errStreamClosed
	}
	s.buf = append(s.buf, p...)
	s.units(false)
	s.flush()
	return len(p), nil
}

// Close emits what is pending: the last line without its newline, a held
// block without its end (redacted to its end, as String does). Later
// writes fail; Close again does nothing.
func (s *Stream) Close() {
	if s.closed {
		return
	}
	s.closed = true
	s.units(true)
	s.flushGroup()
	if s.mode == modeKey || s.mode == modePutty {
		s.output(redactText(s.held.String()))
	}
	s.held.Reset()
	s.mode = modeLines
	s.flush()
}

// units takes every complete unit off buf; at the end (final) the rest is
// one too.
func (s *Stream) units(final bool) {
	off := 0
	for off < len(s.buf) {
		n := s.unitEnd(s.buf[off:], final)
		if n == 0 {
			break
		}
		s.unit(sanitize(s.buf[off : off+n]))
		off += n
		s.scanned = 0
	}
	switch {
	case off == 0:
	case cap(s.buf) > 4*streamLine: // after a large write: do not keep its memory
		s.buf = append([]byte(nil), s.buf[off:]...)
	default:
		s.buf = append(s.buf[:0], s.buf[off:]...)
	}
}

// unitEnd returns the length of the unit at the start of b, or 0 when b
// does not hold all of it yet. It depends only on the bytes of b it needs,
// so that where writes split the text never changes where units end: the
// end of the first newline not after a backslash (or a backslash and '\r'),
// within streamLine bytes; else a cut at streamLine, decided once
// utf8.UTFMax-1 bytes after it are known, so that a rune is not split.
func (s *Stream) unitEnd(b []byte, final bool) int {
	for i := s.scanned; i < len(b) && i <= streamLine; {
		k := bytes.IndexByte(b[i:min(len(b), streamLine+1)], '\n')
		if k < 0 {
			break
		}
		j := i + k
		if !(j > 0 && b[j-1] == '\\') && !(j > 1 && b[j-1] == '\r' && b[j-2] == '\\') {
			return j + 1
		}
		i = j + 1
	}
	s.scanned = min(len(b), streamLine+1)
	switch {
	case len(b) >= streamLine+utf8.UTFMax-1, final && len(b) > streamLine:
		return cutPoint(b, streamLine)
	case final:
		return len(b)
	}
	return 0
}

// cutPoint is n, or the start of the rune that a cut at n would split.
// It reads b no further than n+utf8.UTFMax-1.
func cutPoint(b []byte, n int) int {
	for i := n - 1; i >= 0 && i > n-utf8.UTFMax; i-- {
		if !utf8.RuneStart(b[i]) {
			continue
		}
		r, size := utf8.DecodeRune(b[i:min(len(b), i+utf8.UTFMax)])
		if (r != utf8.RuneError || size > 1) && i+size > n {
			return i
		}
		return n
	}
	return n
}

// unit redacts, holds or drops one unit.
func (s *Stream) unit(u string) {
	switch s.mode {
	case modeLines:
		s.line(u)
	case modeKey:
		s.held.WriteString(u)
		if m := pemEndRE.FindStringIndex(u); m != nil && !pemOpens(u[m[1]:]) {
			s.release()
		} else if s.held.Len() > streamBlock {
			s.giveUp(modeKeyDrop)
		}
	case modeKeyDrop:
		if m := pemEndRE.FindStringIndex(u); m != nil {
			s.mode = modeLines
			s.line(u[m[1]:])
		}
	case modePutty:
		if !base64Line(u) {
			s.release()
			s.line(u)
			return
		}
		s.held.WriteString(u)
		if s.held.Len() > streamBlock {
			s.giveUp(modePuttyDrop)
		}
	case modePuttyDrop:
		if !base64Line(u) {
			s.mode = modeLines
			s.line(u)
		}
	}
}

// line redacts a unit read outside a block, or starts holding one.
func (s *Stream) line(u string) {
	switch {
	case u == "":
	case pemOpens(u):
		s.flushGroup()
		s.mode = modeKey
		s.held.WriteString(u)
	case puttyStartRE.MatchString(u):
		s.flushGroup()
		s.mode = modePutty
		s.held.WriteString(u)
	default:
		end := awsEnd(u)
		if end < 0 && s.group.Len() == 0 {
			s.output(redactText(u))
			return
		}
		s.group.WriteString(u)
		if end >= 0 {
			s.groupTail = len(u) - end
		} else {
			s.groupTail += len(u)
		}
		if s.groupTail >= awsNear || s.group.Len() > maxGroup {
			s.flushGroup()
		}
	}
}

// maxGroup bounds the units redacted together for an AWS key.
const maxGroup = 2 * streamLine

func (s *Stream) flushGroup() {
	if s.group.Len() > 0 {
		s.output(redactText(s.group.String()))
		s.group.Reset()
		s.groupTail = 0
	}
}

// awsIDRE finds every AWS access key id that the rules find (gitleaks'
// aws-access-token and ours, awsIDRule), and some more: awsSecrets looks
// near them.
var awsIDRE = regexp.MustCompile(`A(?:KIA|SIA|BIA)[A-Z0-9]{16}|(?:ACCA|A3T[A-Z0-9])[A-Z0-9]{16}`)

// awsEnd returns where the last AWS access key id in u ends, or the last
// run of base64 that awsSecrets would take for a secret next to one (40
// characters of both cases, or 100 or more); -1 when there is none.
func awsEnd(u string) int {
	end := -1
	if m := awsIDRE.FindAllStringIndex(u, -1); m != nil {
		end = m[len(m)-1][1]
	}
	for j := 0; j < len(u); {
		if !isBase64Byte(u[j]) {
			j++
			continue
		}
		k := j
		for k < len(u) && isBase64Byte(u[k]) {
			k++
		}
		if run := u[j:k]; (len(run) == 40 && hasUpper(run) && hasLower(run)) || len(run) >= 100 {
			end = max(end, k)
		}
		j = k
	}
	return end
}

// release redacts and emits the held block.
func (s *Stream) release() {
	s.output(redactText(s.held.String()))
	s.held.Reset()
	s.mode = modeLines
}

// giveUp emits the overlong held block redacted as it stands — String
// removes an unterminated key to the end of its text — and drops the rest.
func (s *Stream) giveUp(drop streamMode) {
	s.release()
	s.mode = drop
}

// output queues redacted text, emitting first what would make the queue
// exceed streamEmit.
func (s *Stream) output(t string) {
	if t == "" {
		return
	}
	if s.out.Len() > 0 && s.out.Len()+len(t) > streamEmit {
		s.flush()
	}
	for len(t) > streamEmit {
		c := streamEmit
		for c > 0 && !utf8.RuneStart(t[c]) {
			c--
		}
		s.emit(t[:c])
		t = t[c:]
	}
	s.out.WriteString(t)
}

func (s *Stream) flush() {
	if s.out.Len() > 0 {
		s.emit(s.out.String())
		s.out.Reset()
	}
}

func redactText(t string) string {
	out, _ := String(t)
	return out
}

// The markers of pemRE, apart.
var (
	pemBeginRE = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----`)
	pemEndRE   = regexp.MustCompile(`-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----`)
	// puttyStartRE is the line puttyRE starts with, at the end of a unit.
	puttyStartRE = regexp.MustCompile(`Private-Lines: *[0-9]+\r?\n\z`)
)

// pemOpens reports whether s leaves a private-key block open: a BEGIN
// marker without an END after it, reading the markers as pemRE does (each
// BEGIN ends at the first END after it).
func pemOpens(s string) bool {
	if !strings.Contains(s, "-----BEGIN ") {
		return false
	}
	for {
		b := pemBeginRE.FindStringIndex(s)
		if b == nil {
			return false
		}
		s = s[b[1]:]
		e := pemEndRE.FindStringIndex(s)
		if e == nil {
			return true
		}
		s = s[e[1]:]
	}
}

// base64Line reports whether u is one of a PuTTY key's private lines as
// puttyRE reads them: base64 characters, then the end of the line (or of
// the text, or of a cut piece).
func base64Line(u string) bool {
	u = strings.TrimSuffix(strings.TrimSuffix(u, "\n"), "\r")
	if u == "" {
		return false
	}
	for i := 0; i < len(u); i++ {
		if c := u[i]; !isLetter(c) && !isDigit(c) && c != '+' && c != '/' && c != '=' {
			return false
		}
	}
	return true
}

// sanitize makes b valid UTF-8 without NUL: each byte of an invalid
// sequence, and each NUL, becomes U+FFFD. (strings.ToValidUTF8 would make
// one U+FFFD of a run, which would depend on where a cut falls.)
func sanitize(b []byte) string {
	if utf8.Valid(b) && bytes.IndexByte(b, 0) < 0 {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 16)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == 0 || (r == utf8.RuneError && size == 1) {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.Write(b[:size])
		}
		b = b[size:]
	}
	return sb.String()
}

// Pending returns the raw text Stream holds of the line being written when
// that is all it holds: no earlier unit is waiting (a key block, a unit
// kept near an AWS key id, a continued line) and nothing redacted is
// waiting to be emitted. ok is false otherwise. It is for a writer that
// releases the safe start of a partial line early (see run's live text):
// what Stream emits for that line later still begins with its redaction.
func (s *Stream) Pending() (line string, ok bool) {
	if s.closed || s.mode != modeLines || s.group.Len() > 0 || s.out.Len() > 0 || s.held.Len() > 0 {
		return "", false
	}
	if bytes.IndexByte(s.buf, '\n') >= 0 {
		return "", false
	}
	return string(s.buf), true
}
