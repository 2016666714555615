package provider

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll reads every event of in through r's chunks, and the error that
// ended the stream.
func readAll(r io.Reader, maxLine, maxEvent int) ([]sseEvent, error) {
	sr := newSSEReader(r, maxLine, maxEvent)
	var evs []sseEvent
	for {
		ev, err := sr.next()
		if err != nil {
			if _, again := sr.next(); again != err {
				return evs, errors.New("error not sticky")
			}
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func TestSSE(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		want []sseEvent
		err  error
	}{
		{"empty", "", nil, io.EOF},
		{"one", "data: {\"a\":1}\n\n", []sseEvent{{"", `{"a":1}`}}, io.EOF},
		{"named", "event: created\ndata: {}\n\n", []sseEvent{{"created", "{}"}}, io.EOF},
		{"joined data", "data: a\ndata:b\ndata:  c\n\n", []sseEvent{{"", "a\nb\n c"}}, io.EOF},
		{"crlf", "event: x\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n", []sseEvent{{"x", "1"}, {"", "2"}}, io.EOF},
		{"name resets", "event: x\ndata: 1\n\ndata: 2\n\n", []sseEvent{{"x", "1"}, {"", "2"}}, io.EOF},
		{"comments, id, retry and unknown fields", ": ping\nid: 7\nretry: 10\nfoo: bar\ndata: 1\n: more\n\n", []sseEvent{{"", "1"}}, io.EOF},
		{"no data, no event", "event: x\n\ndata: 1\n\n", []sseEvent{{"", "1"}}, io.EOF},
		{"empty data is an event", "data:\n\n", []sseEvent{{"", ""}}, io.EOF},
		{"field without colon", "data\ndata\n\n", []sseEvent{{"", "\n"}}, io.EOF},
		{"bom", "\xef\xbb\xbfdata: 1\n\n", []sseEvent{{"", "1"}}, io.EOF},
		{"bom only first", "data: 1\n\n\xef\xbb\xbfdata: 2\n\n", []sseEvent{{"", "1"}}, io.EOF},
		{"lone cr is text", "data: a\rb\n\n", []sseEvent{{"", "a\rb"}}, io.EOF},
		{"unfinished event dropped", "data: 1\n\ndata: 2\n", []sseEvent{{"", "1"}}, io.EOF},
		{"unterminated line dropped", "data: 1\n\ndata: {\"cut", []sseEvent{{"", "1"}}, io.EOF},
		{"blank lines", "\n\n\r\n", nil, io.EOF},
		{"line at the bound", "data: " + strings.Repeat("x", 10) + "\n\n", []sseEvent{{"", strings.Repeat("x", 10)}}, io.EOF},
		{"line over the bound", "data: 1\n\ndata: " + strings.Repeat("x", 11) + "\n\n", []sseEvent{{"", "1"}}, errSSETooLong},
		{"crlf line at the bound", "data: " + strings.Repeat("x", 10) + "\r\n\r\n", []sseEvent{{"", strings.Repeat("x", 10)}}, io.EOF},
		{"bom line at the bound", "\xef\xbb\xbfdata: " + strings.Repeat("x", 10) + "\r\n\r\n", []sseEvent{{"", strings.Repeat("x", 10)}}, io.EOF},
		{"long unterminated line", "data: " + strings.Repeat("x", 40), nil, errSSETooLong},
		{"event at the bound", "data: 12345678\ndata: 12345678\ndata: 12345678\ndata:12345\n\n", []sseEvent{{"", "12345678\n12345678\n12345678\n12345"}}, io.EOF},
		{"event over the bound", "data: 12345678\ndata: 12345678\ndata: 12345678\ndata:123456\n\n", nil, errSSETooLong},
	} {
		t.Run(c.name, func(t *testing.T) {
			// maxLine 16 counts "data: " (6) and 10 bytes; maxEvent 32.
			for _, r := range []io.Reader{strings.NewReader(c.in), iotest.OneByteReader(strings.NewReader(c.in))} {
				evs, err := readAll(r, 16, 32)
				if !reflect.DeepEqual(evs, c.want) || err != c.err {
					t.Fatalf("got %q, %v; want %q, %v", evs, err, c.want, c.err)
				}
			}
		})
	}
}

// TestSSEReadError: a cut body is the read error, not io.EOF, and the
// event it cut is not dispatched.
func TestSSEReadError(t *testing.T) {
	cut := errors.New("cut")
	r := io.MultiReader(strings.NewReader("data: 1\n\ndata: {\"type\":"), iotest.ErrReader(cut))
	evs, err := readAll(r, maxSSELine, maxSSEEvent)
	if want := []sseEvent{{"", "1"}}; !reflect.DeepEqual(evs, want) || err != cut {
		t.Fatalf("got %q, %v; want %q, %v", evs, err, want, cut)
	}
}

// TestSSEBounds: the real bounds, at and past them.
func TestSSEBounds(t *testing.T) {
	at := "data: " + strings.Repeat("x", maxSSELine-6)
	evs, err := readAll(strings.NewReader(at+"\r\n\r\n"), maxSSELine, maxSSEEvent)
	if err != io.EOF || len(evs) != 1 || len(evs[0].data) != maxSSELine-6 {
		t.Fatalf("a line at the bound: %d events, %v", len(evs), err)
	}
	if _, err := readAll(strings.NewReader(at+"x\n\n"), maxSSELine, maxSSEEvent); err != errSSETooLong {
		t.Fatalf("a line past the bound: %v", err)
	}
	half := "data: " + strings.Repeat("x", maxSSEEvent/2) + "\n"
	if _, err := readAll(strings.NewReader(half+half+"\n"), maxSSELine, maxSSEEvent); err != errSSETooLong {
		t.Fatalf("an event past the bound: %v", err)
	}
}

// refSSE is the event stream format read the plain way, with the whole
// input in hand: what sseReader must produce from any split of it.
func refSSE(in string, maxLine, maxEvent int) ([]sseEvent, error) {
	in = strings.TrimPrefix(in, "\xef\xbb\xbf")
	var evs []sseEvent
	var name, data string
	hasData := false
	for _, line := range strings.SplitAfter(in, "\n") {
		if line == "" {
			continue // after the last "\n"
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		switch {
		case len(line) > maxLine:
			return evs, errSSETooLong
		case line == "":
			if hasData {
				evs = append(evs, sseEvent{name, data})
			}
			name, data, hasData = "", "", false
		case line[0] == ':':
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "data":
				if hasData {
					data += "\n"
				}
				data += value
				hasData = true
				if len(data) > maxEvent {
					return evs, errSSETooLong
				}
			case "event":
				name = value
			}
		}
	}
	return evs, io.EOF
}

// chunks splits in at lengths drawn from cuts.
type chunks struct {
	rest string
	cuts []byte
	i    int
}

func (c *chunks) Read(p []byte) (int, error) {
	if c.rest == "" {
		return 0, io.EOF
	}
	n := len(c.rest)
	if len(c.cuts) > 0 {
		n = min(n, 1+int(c.cuts[c.i%len(c.cuts)]))
		c.i++
	}
	n = copy(p, c.rest[:n])
	c.rest = c.rest[n:]
	return n, nil
}

func FuzzSSE(f *testing.F) {
	for _, s := range []string{
		"",
		"event: response.output_text.delta\ndata: {\"delta\":\"x\"}\n\n",
		"data: {\"choices\":[]}\r\n\r\ndata: [DONE]\r\n\r\n",
		": keep-alive\n\nid: 1\nretry: 5\ndata: a\ndata: b\n\n",
		"\xef\xbb\xbfdata\ndata:\n\n\n",
		"data: a\rb\n\n\r\n\r\r\n",
		"event: x\n\nevent: y\ndata: 1\n\ndata: cut",
		"data: " + strings.Repeat("y", 70) + "\n\n",
		"data: 0123456789\ndata: 0123456789\ndata: 0123456789\n\n",
		"\xff\xfe\x00:\n\xc3data:\xa9\n\n",
	} {
		f.Add(s, []byte{1, 7, 200, 3})
	}
	f.Fuzz(func(t *testing.T, in string, cuts []byte) {
		const maxLine, maxEvent = 64, 96
		want, wantErr := refSSE(in, maxLine, maxEvent)
		got, err := readAll(&chunks{rest: in, cuts: cuts}, maxLine, maxEvent)
		if !reflect.DeepEqual(got, want) || err != wantErr {
			t.Fatalf("in %q split by %v:\n got  %q, %v\n want %q, %v", in, cuts, got, err, want, wantErr)
		}
		for _, ev := range got {
			if len(ev.data) > maxEvent {
				t.Fatalf("an event of %d bytes", len(ev.data))
			}
		}
	})
}
