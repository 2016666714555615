package redact

import (
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// This file uses nothing but String and Placeholder, so that it runs against
// any version of the redactor (the corpus was checked against the one before
// it: see docs/DECISIONS.md).

// sample is one block of a corpus file.
type sample struct {
	file, rule, note string
	line             int
	text             string   // the text given to String
	secrets          []string // the marked spans of text
}

// corpusClasses are the alphabets of {{class:n}}.
var corpusClasses = map[string]string{
	"alnum":  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
	"alpha":  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
	"upper":  "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
	"lower":  "abcdefghijklmnopqrstuvwxyz",
	"digit":  "0123456789",
	"hex":    "0123456789abcdef",
	"HEX":    "0123456789ABCDEF",
	"b64":    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
	"b64url": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-",
	"base32": "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
	"crock":  "0123456789ABCDEFGHJKMNPQRSTVWXYZ",
	"bech32": "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",
	"azure":  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_~.-",
}

var templateRE = regexp.MustCompile(`\{\{([A-Za-z0-9]+):([0-9]+)\}\}`)

const (
	markOpen  = "⟦"
	markClose = "⟧"
)

// readCorpus parses a corpus file; each block's templates are expanded with
// a generator seeded by the block's position, so a sample's values stay the
// same when other samples are added.
func readCorpus(t *testing.T, name string) []sample {
	t.Helper()
	b, err := os.ReadFile("testdata/corpus/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var out []sample
	var cur *sample
	var body []string
	flush := func() {
		if cur == nil {
			return
		}
		cur.text = strings.Join(body, "\n")
		out = append(out, *cur)
		cur, body = nil, nil
	}
	for i, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "@ "):
			flush()
			rule, note, _ := strings.Cut(strings.TrimPrefix(l, "@ "), " ")
			cur = &sample{file: name, rule: rule, note: note, line: i + 1}
		case cur != nil:
			body = append(body, l)
		}
	}
	flush()
	for k := range out {
		s := &out[k]
		s.text = strings.TrimRight(s.text, "\n")
		r := rand.New(rand.NewPCG(uint64(k), 0x5eed))
		var bad string
		s.text = templateRE.ReplaceAllStringFunc(s.text, func(m string) string {
			g := templateRE.FindStringSubmatch(m)
			alphabet, ok := corpusClasses[g[1]]
			n, _ := strconv.Atoi(g[2])
			if !ok {
				bad = g[1]
			}
			var b strings.Builder
			for range n {
				b.WriteByte(alphabet[r.IntN(max(1, len(alphabet)))%max(1, len(alphabet))])
			}
			return b.String()
		})
		if bad != "" {
			t.Fatalf("%s:%d: unknown class %q", name, s.line, bad)
		}
		// Take out the markers, remembering what they held.
		var plain strings.Builder
		rest := s.text
		for {
			i := strings.Index(rest, markOpen)
			if i < 0 {
				break
			}
			j := strings.Index(rest[i:], markClose)
			if j < 0 {
				t.Fatalf("%s:%d: unclosed %s", name, s.line, markOpen)
			}
			plain.WriteString(rest[:i])
			secret := rest[i+len(markOpen) : i+j]
			s.secrets = append(s.secrets, secret)
			plain.WriteString(secret)
			rest = rest[i+j+len(markClose):]
		}
		plain.WriteString(rest)
		s.text = plain.String()
		// gitleaks.txt marks the secret as gitleaks reads it; where we keep
		// part of it (the user of curl -u, a webhook's host), the rest is
		// the secret.
		if o, ok := gitleaksOverrides[s.rule]; ok && o.narrow != nil && name == "gitleaks.txt" {
			for i, sec := range s.secrets {
				if k := strings.Index(s.text, sec); k >= 0 {
					sp := o.narrow(s.text, span{k, k + len(sec)})
					s.secrets[i] = s.text[sp.start:sp.end]
				}
			}
		}
	}
	return out
}

func (s sample) String() string { return fmt.Sprintf("%s:%d (%s %s)", s.file, s.line, s.rule, s.note) }

// positiveFiles are the corpus files of credentials: ours, and the true
// positives of gitleaks' own rule definitions (testdata/gitleaks-samples
// writes gitleaks.txt).
var positiveFiles = []string{"positive.txt", "gitleaks.txt"}

// leaks returns the first piece of a marked secret of s that survives in
// out: 8 characters of it (or all of a shorter one) that the text around
// the secrets does not also hold.
func (s sample) leaks(out string) string {
	// A piece of the secret may also occur in the text around it
	// ("glpat-" in prose, say): only pieces that do not are checked.
	context := s.text
	for _, sec := range s.secrets {
		context = strings.Replace(context, sec, "\x00", 1)
	}
	for _, sec := range s.secrets {
		n := min(8, len(sec))
		for i := 0; i+n <= len(sec); i++ {
			if piece := sec[i : i+n]; strings.Contains(out, piece) && !strings.Contains(context, piece) {
				return piece
			}
		}
	}
	return ""
}

// TestCorpus: every credential of the positive files is removed, leaving no
// piece of 8 characters (or all of a shorter one), a second pass changes
// nothing, and the text in negative.txt stays exactly as it is.
func TestCorpus(t *testing.T) {
	for _, file := range positiveFiles {
		for _, s := range readCorpus(t, file) {
			if len(s.secrets) == 0 {
				t.Errorf("%v: no secret marked", s)
				continue
			}
			out, changed := String(s.text)
			if !changed {
				t.Errorf("%v: nothing redacted in\n%s", s, s.text)
				continue
			}
			if piece := s.leaks(out); piece != "" {
				t.Errorf("%v: %q of the secret survived:\n in  %s\n out %s", s, piece, s.text, out)
			}
			if again, ch := String(out); again != out || ch {
				t.Errorf("%v: not idempotent:\n once  %s\n twice %s", s, out, again)
			}
		}
	}
	for _, s := range readCorpus(t, "negative.txt") {
		if out, changed := String(s.text); out != s.text || changed {
			t.Errorf("%v: changed:\n in  %s\n out %s", s, s.text, out)
		}
	}
}

// TestCorpusRandomIDs: Continuo IDs, git hashes and UUIDs, drawn at random
// in numbers no corpus file holds, all stay.
func TestCorpusRandomIDs(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	draw := func(class string, n int) string {
		a := corpusClasses[class]
		b := make([]byte, n)
		for i := range b {
			b[i] = a[r.IntN(len(a))]
		}
		return string(b)
	}
	prefixes := []string{"prj_", "ses_", "msg_", "grp_", "prn_", "tok_"}
	for i := 0; i < 20000; i++ {
		text := prefixes[i%len(prefixes)] + draw("crock", 26) + " " + draw("hex", 40) + " " +
			draw("hex", 8) + "-" + draw("hex", 4) + "-" + draw("hex", 4) + "-" + draw("hex", 4) + "-" + draw("hex", 12) +
			" " + strings.ToUpper(draw("hex", 40))
		if out, changed := String(text); changed {
			t.Fatalf("changed:\n in  %s\n out %s", text, out)
		}
	}
}
