package redact

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The regexps the URL and Bearer scans replaced; the scans must find
// exactly their matches.
var (
	urlOracle    = regexp.MustCompile("[A-Za-z][A-Za-z0-9+.-]*://[^\\s:/?#@\"'`\\[\\]]*:([^\\s/?#\"'`\\[\\]]+)@")
	bearerOracle = regexp.MustCompile(`(?i)bearer[ \t]+([A-Za-z0-9._~+/=-]{8,})`)
)

// iterations scales a randomized test down under -short and -race.
func iterations(n int) int {
	if testing.Short() || raceEnabled {
		return n / 10
	}
	return n
}

func oracleSpans(re *regexp.Regexp, s string) []span {
	var out []span
	for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
		out = append(out, span{m[2], m[3]})
	}
	return out
}

// randomText draws from pieces that make the scans' decisions likely: scheme
// characters, separators, "bearer" in several cases, quotes and brackets.
func randomText(r *rand.Rand, pieces []string) string {
	var b strings.Builder
	for n := r.IntN(24); n > 0; n-- {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

func TestURLScanMatchesRegexp(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"://", "://", "://", "s://u:p@", "a://:", ":", ":", "@", "@", "@", "/", "?", "#", " ", "\t", "\n",
		"a", "Z", "9", "+", ".", "-", "http", "x1", "'", "\"", "`", "[", "]", "[redacted]", "u", "pw", "@@", "ü", "\xff"}
	matched := 0
	for i := 0; i < iterations(200000); i++ {
		s := randomText(r, pieces)
		got, want := urlPasswords(s), oracleSpans(urlOracle, s)
		if !slices.Equal(got, want) {
			t.Fatalf("%q: scan %v, regexp %v", s, got, want)
		}
		matched += len(want)
	}
	if matched < iterations(200000)/20 {
		t.Fatalf("only %d matches: the generator does not exercise the scan", matched)
	}
}

func TestBearerScanMatchesRegexp(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	pieces := []string{"bearer", "Bearer", "BEARER", "bEaReR", "bear", "b", "B", "er", " ", "\t", "\n", "abcd", "1234",
		"._~+/=-", "[", "]", "\"", "x", "ß", "\xff"}
	matched := 0
	for i := 0; i < iterations(200000); i++ {
		s := randomText(r, pieces)
		got, want := bearerTokens(s, func(string) bool { return true }), oracleSpans(bearerOracle, s)
		if !slices.Equal(got, want) {
			t.Fatalf("%q: scan %v, regexp %v", s, got, want)
		}
		matched += len(want)
	}
	if matched < iterations(200000)/20 {
		t.Fatalf("only %d matches: the generator does not exercise the scan", matched)
	}
}

// ruleLiterals returns every literal the matcher looks for (keywords and
// anchors), each once (lower-case when found case-insensitively).
func ruleLiterals(t testing.TB) []string {
	m := rules()
	var out []string
	for _, l := range m.lits {
		out = append(out, l.s)
	}
	return out
}

// TestPlaceholderTriggersNothing: the placeholder holds no keyword or
// anchor of a rule and no command name, so that a redacted text does not
// wake rules, and it redacts to itself.
func TestPlaceholderTriggersNothing(t *testing.T) {
	for _, l := range rules().lits {
		for i := range Placeholder {
			if l.at(Placeholder, i) {
				t.Errorf("literal %q is in the placeholder", l.s)
			}
		}
	}
	for _, r := range commandRules {
		for _, w := range r.words {
			if strings.Contains(Placeholder, w) || len(w) < 2 {
				t.Errorf("%s: word %q", r.id, w)
			}
		}
	}
	for _, s := range []string{Placeholder, Placeholder + Placeholder, "x" + Placeholder + "y", "password=" + Placeholder} {
		if out, changed := String(s); out != s || changed {
			t.Errorf("String(%q) = %q", s, out)
		}
	}
}

// TestIdempotentOnShapes strings together the rules' prefixes, bodies of
// their characters, separators, command names and placeholders, which
// random bytes seldom assemble, and checks that a second pass changes
// nothing.
func TestIdempotentOnShapes(t *testing.T) {
	pieces := []string{" ", "\n", "\\\n", "=", ": ", ";", ",", "'", "\"", "@", "://", "/", ".", "-", "_", "~",
		Placeholder, "[", "]", "bearer ", "Bearer ", "cto_", "cto_pat_", "curl ", "mysql ", "redis-cli ", " -u ", " -p",
		" -a ", "password=", "token: ", "DB_PASS=", "Authorization: Basic ", "-----BEGIN PRIVATE KEY-----",
		"Private-Lines: 1\n", "https://u:p@h", "AccountKey=", "x", "Q", "9", "ab12CD34ef56GH78", "0123456789abcdef",
		"AKIAIOSFODNN7EXAMPLE", "hooks.slack.com/services/", "ses_", "ABCDEFGHIJKLMNOP", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", strings.Repeat("Ab9+", 26)}
	pieces = append(pieces, ruleLiterals(t)...)
	rnd := rand.New(rand.NewPCG(13, 14))
	n := iterations(100000)
	if raceEnabled {
		n = 2000 // texts of many literals keep the rules busy: String is slow under the race detector
	}
	for i := 0; i < n; i++ {
		var b strings.Builder
		for k := rnd.IntN(16); k >= 0; k-- {
			b.WriteString(pieces[rnd.IntN(len(pieces))])
		}
		in := b.String()
		once, changed := String(in)
		if changed != (once != in) {
			t.Fatalf("changed = %v for %q -> %q", changed, in, once)
		}
		if twice, _ := String(once); twice != once {
			t.Fatalf("not idempotent:\n in    %q\n once  %q\n twice %q", in, once, twice)
		}
	}
}

// TestLinearWork guards against a rule whose cost grows with the square of
// the text: a literal repeated many times ("sk-sk-sk-...", "eyJeyJ...",
// "curl -u curl -u ...") is the worst case for rules tried at each anchor,
// each of which may read to the end of the text. It counts the bytes the
// rules' expressions are given (regexpWork), which unlike a time is
// deterministic: sixteen times the text may cost at most sixteen times as
// much, and half as much again (a quadratic rule costs 256 times). Every
// keyword and anchor of the rules is tried.
func TestLinearWork(t *testing.T) {
	small, large := 4<<10, 64<<10
	if raceEnabled {
		small, large = 1<<10, 16<<10 // String is slow under the race detector
	}
	pieces := ruleLiterals(t)
	pieces = append(pieces, "bearer ", "cto_", "://u:", "curl -u ", "mysql -p", "a=", "key: ", "Private-Lines: 1\n", "AKIAIOSFODNN7EXAMPLE ",
		"-----BEGIN PRIVATE KEY-----")
	for _, p := range pieces {
		ws := regexpWork(strings.Repeat(p, small/len(p)))
		wl := regexpWork(strings.Repeat(p, large/len(p)))
		if ratio := float64(wl) / float64(max(ws, small)); ratio > 1.5*float64(large/small) {
			t.Errorf("%q: %d bytes of work at %d KiB, %d at %d KiB (%.1f×)", p, ws, small>>10, wl, large>>10, ratio)
		}
	}
}
