package redact

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	continuo "github.com/continuo-dev/continuo"
)

// emitted collects what a Stream emits, checking every call.
type emitted struct {
	t     testing.TB
	calls []string
}

func (e *emitted) emit(text string) {
	e.t.Helper()
	switch {
	case text == "":
		e.t.Errorf("empty emit")
	case len(text) > streamEmit:
		e.t.Errorf("emit of %d bytes, over %d", len(text), streamEmit)
	case !utf8.ValidString(text):
		e.t.Errorf("emit of invalid UTF-8: %q", text)
	case strings.IndexByte(text, 0) >= 0:
		e.t.Errorf("emit with a NUL: %q", text)
	}
	e.calls = append(e.calls, text)
}

func (e *emitted) String() string { return strings.Join(e.calls, "") }

// streamWrites writes each piece to a new Stream, closes it, and returns
// what it emitted.
func streamWrites(t testing.TB, pieces ...string) *emitted {
	t.Helper()
	e := &emitted{t: t}
	s := NewStream(e.emit)
	for _, p := range pieces {
		if n, err := s.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	s.Close()
	return e
}

// split cuts text at random places: often single bytes, sometimes large
// pieces.
func split(r *rand.Rand, text string) []string {
	var out []string
	for len(text) > 0 {
		var n int
		switch r.IntN(4) {
		case 0:
			n = 1
		case 1:
			n = 1 + r.IntN(8)
		case 2:
			n = 1 + r.IntN(200)
		default:
			n = 1 + r.IntN(20000)
		}
		n = min(n, len(text))
		out = append(out, text[:n])
		text = text[n:]
	}
	return out
}

func TestStreamBounds(t *testing.T) {
	if streamEmit != continuo.MaxRunEvent {
		t.Errorf("streamEmit %d, continuo.MaxRunEvent %d", streamEmit, continuo.MaxRunEvent)
	}
	if streamLine != 8<<10 || streamBlock != 64<<10 {
		t.Errorf("streamLine %d, streamBlock %d", streamLine, streamBlock)
	}
}

func TestStreamEmitsCompleteLines(t *testing.T) {
	e := &emitted{t: t}
	s := NewStream(e.emit)
	write := func(p string) {
		t.Helper()
		if _, err := s.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	write("Authorization: Bearer abc")
	if len(e.calls) != 0 {
		t.Fatalf("emitted %q before the line ended", e.calls)
	}
	write("def123456789\nnext: Bearer xyz")
	if got := e.String(); got != "Authorization: Bearer [redacted]\n" {
		t.Fatalf("emitted %q", got)
	}
	write("789abcdef")
	s.Close()
	if got := e.String(); got != "Authorization: Bearer [redacted]\nnext: Bearer [redacted]" {
		t.Errorf("emitted %q", got)
	}
	// Close flushes once; writing after it fails.
	n := len(e.calls)
	s.Close()
	if _, err := s.Write([]byte("more\n")); err == nil || len(e.calls) != n {
		t.Errorf("Write after Close: %v, %d emits", err, len(e.calls)-n)
	}
}

func TestStreamBatches(t *testing.T) {
	// One write of many lines: fewer emits than lines, none over the bound.
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, "line %04d\n", i)
	}
	e := streamWrites(t, b.String())
	if e.String() != b.String() {
		t.Fatal("output differs")
	}
	if len(e.calls) < 2 || len(e.calls) > 4 {
		t.Errorf("%d emits of %d bytes", len(e.calls), b.Len())
	}
	// A write that completes nothing emits nothing.
	e = &emitted{t: t}
	s := NewStream(e.emit)
	_, _ = s.Write([]byte("no newline yet"))
	if len(e.calls) != 0 {
		t.Errorf("emitted %q", e.calls)
	}
}

func TestStreamSanitizes(t *testing.T) {
	const fffd = "\uFFFD"
	tests := []struct{ in, want string }{
		{"a\x00b\n", "a" + fffd + "b\n"},
		{"\xff\xfe ok\n", fffd + fffd + " ok\n"},
		{"\xed\xa0\x80 surrogate\n", fffd + fffd + fffd + " surrogate\n"},
		{"héllo ✓ 日本語 🎉\n", "héllo ✓ 日本語 🎉\n"},
		{"truncated \xe2\x82", "truncated " + fffd + fffd},
		{"\xe2\x82\n\xac", fffd + fffd + "\n" + fffd},
		{"x\x00AWS_SECRET_ACCESS_KEY=abcdef\n", "x" + fffd + "AWS_SECRET_ACCESS_KEY=[redacted]\n"},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, tt := range tests {
		for range 20 {
			if got := streamWrites(t, split(r, tt.in)...).String(); got != tt.want {
				t.Errorf("%q: got %q, want %q", tt.in, got, tt.want)
				break
			}
		}
		// Byte by byte: a multi-byte rune split across writes stays whole.
		var bytes []string
		for i := range len(tt.in) {
			bytes = append(bytes, tt.in[i:i+1])
		}
		if got := streamWrites(t, bytes...).String(); got != tt.want {
			t.Errorf("%q byte by byte: got %q, want %q", tt.in, got, tt.want)
		}
	}
	// Invalid bytes triple: an 8 KiB line of them is 24 KiB, emitted in
	// calls within the bound (emitted checks), each valid UTF-8.
	e := streamWrites(t, strings.Repeat("\xff", streamLine)+"\n")
	if want := strings.Repeat(fffd, streamLine) + "\n"; e.String() != want || len(e.calls) < 2 {
		t.Errorf("%d emits, %d bytes", len(e.calls), len(e.String()))
	}
}

func TestStreamCutsLongLines(t *testing.T) {
	// A line of 2-byte runes, 20 KiB without a newline: it is emitted before
	// it ends, and no cut splits a rune (that would make two U+FFFD).
	line := strings.Repeat("é", 10<<10)
	e := &emitted{t: t}
	s := NewStream(e.emit)
	for i := 0; i < len(line); i += 999 {
		_, _ = s.Write([]byte(line[i:min(len(line), i+999)]))
	}
	if n := len(e.String()); n < 2*streamLine-utf8.UTFMax || n > len(line) {
		t.Errorf("emitted %d bytes of a %d-byte line before its end", n, len(line))
	}
	s.Close()
	if e.String() != line {
		t.Errorf("output differs from the input")
	}
	// At the cut, a rune is kept whole for the next piece.
	for _, r := range []string{"é", "€", "🎉"} {
		for pad := streamLine - 4; pad <= streamLine; pad++ {
			in := strings.Repeat("a", pad) + r + strings.Repeat("b", 100)
			b := []byte(in)
			c := cutPoint(b, streamLine)
			if c > streamLine || !utf8.Valid(b[:c]) || !utf8.Valid(b[c:]) {
				t.Errorf("pad %d, %q: cut at %d splits a rune", pad, r, c)
			}
			if got := streamWrites(t, in).String(); got != in {
				t.Errorf("pad %d, %q: output differs", pad, r)
			}
			// The rune arriving a byte at a time, the cut waits for it.
			pieces := []string{in[:pad]}
			for i := pad; i < len(in); i++ {
				pieces = append(pieces, in[i:i+1])
			}
			if got := streamWrites(t, pieces...).String(); got != in {
				t.Errorf("pad %d, %q, byte by byte: output differs", pad, r)
			}
		}
	}
	// Each piece is redacted on its own: a secret within one is removed.
	secret := "AKIAIOSFODNN7EXAMPLE"
	in := "id " + secret + " " + strings.Repeat("x", 3*streamLine) + "\n"
	if got := streamWrites(t, split(rand.New(rand.NewPCG(3, 4)), in)...).String(); strings.Contains(got, secret) {
		t.Errorf("the secret in the first piece survived")
	}
}

const pemBody = "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi" // not a real key

func pemBlock(kind string, lines int, r *rand.Rand) (block string, body []string) {
	var b strings.Builder
	b.WriteString("-----BEGIN " + kind + "PRIVATE KEY-----\n")
	for i := range lines {
		l := fmt.Sprintf("%s%08d%s", pemBody, i, draw(r, "b64", 16))
		body = append(body, l)
		b.WriteString(l + "\n")
	}
	b.WriteString("-----END " + kind + "PRIVATE KEY-----")
	return b.String(), body
}

func draw(r *rand.Rand, class string, n int) string {
	a := corpusClasses[class]
	b := make([]byte, n)
	for i := range b {
		b[i] = a[r.IntN(len(a))]
	}
	return string(b)
}

func TestStreamHoldsPrivateKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	block, body := pemBlock("RSA ", 20, r)
	in := "before\n" + block + " after\nnext\n"
	want := "before\n[redacted] after\nnext\n"
	for range 50 {
		if got := streamWrites(t, split(r, in)...).String(); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	// Nothing of the block is emitted before its END line.
	e := &emitted{t: t}
	s := NewStream(e.emit)
	end := strings.Index(in, "-----END")
	_, _ = s.Write([]byte(in[:end+5]))
	if e.String() != "before\n" {
		t.Errorf("emitted %q before the END line", e.String())
	}
	_, _ = s.Write([]byte(in[end+5:]))
	s.Close()
	if e.String() != want {
		t.Errorf("got %q", e.String())
	}
	// A block without its END is redacted to the end at Close.
	if got := streamWrites(t, "key: "+block[:len(block)/2]).String(); got != "key: [redacted]" {
		t.Errorf("unterminated: %q", got)
	}
	// END and a new BEGIN on one line; several kinds; text around.
	block2, body2 := pemBlock("OPENSSH ", 3, r)
	in = "k1=" + block + " k2=" + block2 + "\ntail " + pemBody + "\n"
	want = "k1=[redacted] k2=[redacted]\ntail " + pemBody + "\n"
	for range 50 {
		got := streamWrites(t, split(r, in)...).String()
		if got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
		for _, l := range append(body, body2...) {
			if strings.Contains(got, l) {
				t.Fatalf("key line %q survived", l)
			}
		}
	}
}

func TestStreamBoundsPrivateKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	block, body := pemBlock("", 2000, r) // about 128 KiB
	in := "x " + block + " after\nnext\n"
	want := "x [redacted] after\nnext\n"
	e := &emitted{t: t}
	s := NewStream(e.emit)
	end := strings.Index(in, "-----END")
	for _, p := range split(r, in[:end]) {
		_, _ = s.Write([]byte(p))
		if s.held.Len() > streamBlock+3*streamLine {
			t.Fatalf("holding %d bytes", s.held.Len())
		}
	}
	// Past the bound, what was held is out, redacted, before the END.
	if e.String() != "x [redacted]" {
		t.Errorf("before the END: %q", e.String())
	}
	_, _ = s.Write([]byte(in[end:]))
	s.Close()
	if e.String() != want {
		t.Errorf("got %q, want %q", e.String(), want)
	}
	// What String does with the whole text.
	if whole, _ := String(in); whole != want {
		t.Errorf("String: %q", whole)
	}
	for _, l := range body {
		if strings.Contains(e.String(), l) {
			t.Fatalf("key line %q survived", l)
		}
	}
	// Without an END, the rest is dropped up to Close.
	if got := streamWrites(t, split(r, "x "+block[:end-2])...).String(); got != "x [redacted]" {
		t.Errorf("no END: %q", got)
	}
}

func TestStreamContinuedCommandLine(t *testing.T) {
	pw := "Zq8Lm4xY2Ab9Cd3E"
	in := "+ curl -sS \\\n    -u deploy:" + pw + " \\\n    https://example.com/api\ndone\n"
	r := rand.New(rand.NewPCG(9, 10))
	for range 50 {
		got := streamWrites(t, split(r, in)...).String()
		if want, _ := String(in); got != want || strings.Contains(got, pw) {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	// Line by line, String would not know the -u is curl's.
	if line, _ := String("    -u deploy:" + pw + "\n"); !strings.Contains(line, pw) {
		t.Log("String redacts the continuation line alone now; the test no longer shows why lines are joined")
	}
}

func TestStreamPuTTYKey(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	priv := []string{draw(r, "b64", 64), draw(r, "b64", 64), draw(r, "b64", 20) + "=="}
	in := "PuTTY-User-Key-File-3: ssh-rsa\nEncryption: none\nComment: ci\nPublic-Lines: 1\n" +
		"AAAAB3NzaC1yc2EAAAADAQABAAABAQ\nPrivate-Lines: 3\n" + strings.Join(priv, "\n") +
		"\nPrivate-MAC: 0123abcd\n"
	want, _ := String(in)
	for range 50 {
		got := streamWrites(t, split(r, in)...).String()
		if got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	for _, l := range priv {
		if strings.Contains(want, l) {
			t.Fatalf("String left %q", l)
		}
	}
	// Ending the text, the private lines are redacted at Close.
	in = "Private-Lines: 2\n" + priv[0] + "\n" + priv[1]
	if got := streamWrites(t, split(r, in)...).String(); strings.Contains(got, priv[0]) || strings.Contains(got, priv[1]) {
		t.Errorf("at the end: %q", got)
	}
}

func TestStreamAWSKeyPairs(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	id := "ASIA" + draw(r, "upper", 16)
	secret := draw(r, "b64", 38) + "aZ"
	session := draw(r, "b64", 300)
	for _, in := range []string{
		"secret " + secret + "\nid " + id + "\nsession " + session + "\n",
		"id " + id + "\nok\n\n" + secret + "\n",
		"aws_access_key_id " + id + "\n" + strings.Repeat("noise line\n", 20) + secret + "\n",
		secret + "\n" + strings.Repeat("noise line\n", 20) + id,
	} {
		want, _ := String(in)
		for range 20 {
			got := streamWrites(t, split(r, in)...).String()
			if got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
			if strings.Contains(got, secret) || strings.Contains(got, id) {
				t.Fatalf("survived: %q", got)
			}
		}
	}
	// A line with an id waits for 256 more bytes (or Close); other lines
	// do not wait.
	e := &emitted{t: t}
	s := NewStream(e.emit)
	_, _ = s.Write([]byte("first\nid " + id + "\n"))
	if e.String() != "first\n" {
		t.Errorf("emitted %q", e.String())
	}
	_, _ = s.Write([]byte(strings.Repeat("x ", 150) + "\nlast\n"))
	if want := "first\nid [redacted]\n" + strings.Repeat("x ", 150) + "\nlast\n"; e.String() != want {
		t.Errorf("emitted %q", e.String())
	}
	s.Close()
}

// docUnit is one unit of a generated document: what the Stream must
// redact as a whole, and the secrets in it.
type docUnit struct {
	text    string
	secrets []string
}

var proseWords = []string{"ok", "PASS", "FAIL:", "--- RUN", "TestKey", "token", "bucket", "the", "key", "decision",
	"héllo", "日本語", "✓", "(0.01s)", "=", "ns/op", "password", "reset", "flow", "-v", "./...", "go", "test"}

// genUnits draws the units of a document: prose, secrets of several rules
// on their lines, private-key blocks, a continued command line, a PuTTY
// key. Units are built so that the Stream's units are exactly these (no
// prose line ends in a backslash or holds a key marker).
func genUnits(r *rand.Rand) []docUnit {
	var out []docUnit
	add := func(text string, secrets ...string) { out = append(out, docUnit{text, secrets}) }
	for range 1 + r.IntN(40) {
		switch r.IntN(12) {
		case 0, 1, 2, 3:
			var b strings.Builder
			for i := range 1 + r.IntN(30) {
				if i > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(proseWords[r.IntN(len(proseWords))])
			}
			if r.IntN(5) == 0 {
				b.WriteString(strings.Repeat(" padding", r.IntN(600)))
			}
			if r.IntN(8) == 0 {
				b.WriteByte('\r')
			}
			add(b.String() + "\n")
		case 4:
			tok := draw(r, "alnum", 24) + "." + draw(r, "b64url", 30)
			add("> Authorization: Bearer "+tok+"\n", tok)
		case 5:
			sec := draw(r, "b64", 40)
			add("AWS_SECRET_ACCESS_KEY="+sec+"\n", sec)
		case 6:
			key := "sk-" + draw(r, "alnum", 20) + "T3BlbkFJ" + draw(r, "alnum", 20)
			add("export OPENAI_API_KEY="+key+" # from CI\n", key)
		case 7:
			key := "sk-proj-" + draw(r, "b64url", 40)
			add("using "+key+" for the test run\n", key)
		case 8:
			block, body := pemBlock([]string{"", "RSA ", "EC ", "OPENSSH "}[r.IntN(4)], 1+r.IntN(30), r)
			add([]string{"", "key: ", "  "}[r.IntN(3)]+block+[]string{"", " end", ","}[r.IntN(3)]+"\n", body...)
		case 9:
			pw := draw(r, "alnum", 16)
			add("+ curl -sS \\\n    -u deploy:"+pw+" https://example.com/x\n", pw)
		case 10:
			priv := []string{draw(r, "b64", 64), draw(r, "b64", 40) + "="}
			add("Public-Lines: 1\n")
			add("AAAAC3NzaC1lZDI1NTE5AAAAI" + draw(r, "b64", 20) + "\n")
			add("Private-Lines: 2\n"+priv[0]+"\n"+priv[1]+"\n", priv...)
			add("Private-MAC: " + draw(r, "hex", 64) + "\n")
		case 11:
			add("\n")
		}
	}
	if r.IntN(3) == 0 { // the last line without its newline
		u := &out[len(out)-1]
		u.text = strings.TrimSuffix(u.text, "\n")
	}
	return out
}

// TestStreamSplitsAnywhere: for documents of known units, wherever the
// writes split them, the Stream emits String of each unit in turn, and no
// secret survives.
func TestStreamSplitsAnywhere(t *testing.T) {
	docs, splits := 300, 8
	if raceEnabled || testing.Short() {
		docs, splits = 60, 4
	}
	r := rand.New(rand.NewPCG(13, 14))
	for d := range docs {
		units := genUnits(r)
		var in, want strings.Builder
		var secrets []string
		for _, u := range units {
			in.WriteString(u.text)
			red, _ := String(u.text)
			want.WriteString(red)
			secrets = append(secrets, u.secrets...)
		}
		for _, sec := range secrets {
			if strings.Contains(want.String(), sec) {
				t.Fatalf("doc %d: String leaves %q: the generator is wrong", d, sec)
			}
		}
		for range splits {
			got := streamWrites(t, split(r, in.String())...).String()
			if got != want.String() {
				t.Fatalf("doc %d:\n in   %q\n got  %q\n want %q", d, in.String(), got, want.String())
			}
		}
	}
}

// TestStreamCorpus: every sample of the corpus, as a process would print
// it, in random writes: each credential of positive.txt is removed as
// String removes it, and negative.txt stays as it is.
func TestStreamCorpus(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, s := range readCorpus(t, "positive.txt") {
		in := s.text + "\n"
		want, _ := String(in)
		for range 4 {
			got := streamWrites(t, split(r, in)...).String()
			if got != want {
				t.Errorf("%v:\n in   %q\n got  %q\n want %q", s, in, got, want)
				break
			}
		}
	}
	for _, s := range readCorpus(t, "negative.txt") {
		in := s.text + "\n"
		if got := streamWrites(t, split(r, in)...).String(); got != in {
			t.Errorf("%v: changed:\n in  %q\n out %q", s, in, got)
		}
	}
}

func FuzzStream(f *testing.F) {
	r := rand.New(rand.NewPCG(17, 18))
	block, _ := pemBlock("RSA ", 3, r)
	seeds := []string{
		"",
		"plain\nlines\n",
		"Authorization: Bearer abc123def456\n",
		"AWS_SECRET_ACCESS_KEY=" + strings.Repeat("aB1/", 10) + "\n",
		block + "\n",
		"x " + block[:40],
		"-----BEGIN PRIVATE KEY-----\nab\n-----END PRIVATE KEY----- -----BEGIN PRIVATE KEY-----\ncd\n",
		"curl \\\n -u a:b\n",
		"Private-Lines: 1\nAAAA\nnext\n",
		"\xff\xfe\x00 invalid \xc3\n\xa9",
		"\\\n\\\r\n\r\n",
		strings.Repeat("é", streamLine/2+3) + "\n",
		strings.Repeat("x", streamLine-1) + "€€\n",
	}
	for i, s := range seeds {
		f.Add(s, []byte{byte(i), 1, 7, 200, 3})
	}
	f.Fuzz(func(t *testing.T, text string, cuts []byte) {
		// Where the writes split the text changes nothing.
		whole := streamWrites(t, text).String()
		var pieces []string
		rest := text
		for i := 0; len(rest) > 0; i++ {
			n := len(rest)
			if len(cuts) > 0 {
				n = min(n, 1+int(cuts[i%len(cuts)])*int(cuts[i%len(cuts)])/16)
			}
			pieces = append(pieces, rest[:n])
			rest = rest[n:]
		}
		if got := streamWrites(t, pieces...).String(); got != whole {
			t.Fatalf("split %d ways:\n in    %q\n split %q\n whole %q", len(pieces), text, got, whole)
		}
		// Valid text loses nothing but what is redacted.
		if utf8.ValidString(text) && strings.IndexByte(text, 0) < 0 && !strings.Contains(whole, Placeholder) && whole != text {
			t.Fatalf("changed without a redaction:\n in  %q\n out %q", text, whole)
		}
		// A planted secret on its own line never survives. (In a short
		// text: a longer one may put it across a cut of an overlong line.)
		if len(text) > 4096 {
			return
		}
		at := 0
		if len(cuts) > 0 {
			at = int(cuts[0]) * len(text) / 256
		}
		for _, secret := range []string{
			plant("sk-", cuts, 24, alnumChars),
			plant("cto_pat_", cuts, 32, tokenChars),
			plant("AKIA", cuts, 16, upperDigits),
		} {
			for _, line := range []string{secret, "Authorization: Bearer " + secret, "AWS_SECRET_ACCESS_KEY=" + secret} {
				doc := text[:at] + "\n" + line + "\n" + text[at:]
				if got := streamWrites(t, doc).String(); strings.Contains(got, secret) {
					t.Fatalf("planted %q survived:\n in  %q\n out %q", secret, doc, got)
				}
			}
		}
	})
}
