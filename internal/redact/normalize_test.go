package redact

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name, in, normal string
	}{
		{"ascii stays", "plain text = 1", ""},
		{"normal non-ASCII stays", "Prüfung — 鍵の管理 ✓", ""},
		{"full-width", "key ＡＫＩＡ１２", "key AKIA12"},
		{"continuation", "a\\\nb", "ab"},
		{"continuation with CR", "a\\\r\nb", "ab"},
		{"invisible", "sk-ab\u200bcd\u00ade\ufefff", "sk-abcdef"},
		{"compatibility forms", "ﬁle ① x²", "file 1 x2"},
		{"decomposed", "e\u0301t\u00e9", "\u00e9t\u00e9"},
	}
	for _, tc := range tests {
		n, changed := normalize(tc.in)
		if tc.normal == "" {
			if changed {
				t.Errorf("%s: normalize(%q) changed it to %q", tc.name, tc.in, n.text)
			}
			continue
		}
		if !changed || n.text != tc.normal {
			t.Errorf("%s: normalize(%q) = %q, %v; want %q", tc.name, tc.in, n.text, changed, tc.normal)
		}
	}
}

// TestNormalizeBack: spans of the normal form map back to the smallest
// span of the original that holds them — exact bytes where the text did
// not change, whole changed pieces (a full-width letter, a continuation)
// where it did — so that the text around a redaction stays as written.
func TestNormalizeBack(t *testing.T) {
	in := "id ＡＫＩＡ１２３ and sk-abc\\\ndef end"
	n, _ := normalize(in)
	if n.text != "id AKIA123 and sk-abcdef end" {
		t.Fatalf("normal %q", n.text)
	}
	at := func(s string) span {
		i := strings.Index(n.text, s)
		return span{i, i + len(s)}
	}
	for _, tc := range []struct{ normal, orig string }{
		{"AKIA123", "ＡＫＩＡ１２３"},
		{"KIA1", "ＫＩＡ１"},
		{"sk-abcdef", "sk-abc\\\ndef"},
		{"abcd", "abc\\\nd"},
		{"and", "and"},
		{"id AKIA123 and sk-abcdef end", in},
	} {
		b := n.back(at(tc.normal))
		if got := in[b.start:b.end]; got != tc.orig {
			t.Errorf("back(%q) = %q, want %q", tc.normal, got, tc.orig)
		}
	}
	key := "id ＡＫＩＡＱ３ＥＧＹＷＬ２ＸＮ７ＰＡＦＤ６ and sk-abcd1234\\\nEFGH5678ijkl9012 end"
	if got, _ := String(key); got != "id [redacted] and [redacted] end" {
		t.Errorf("String(%q) = %q", key, got)
	}
}

// TestNormalizeBackProperties: on random texts of ASCII, full-width and
// combining characters, invisible ones, continuations and invalid bytes,
// every span of the normal form maps to a span of the original on rune
// boundaries, growing with it, and replacing it keeps valid UTF-8 valid.
func TestNormalizeBackProperties(t *testing.T) {
	pieces := []string{"a", "Z", "9", " ", "=", "\\\n", "\\\r\n", "\\", "\n", "ＡＢ", "１２", "ｘ", "\u0301", "e\u0301", "\u200b",
		"\u00ad", "ﬁ", "①", "鍵", "é", "\xff", "\xc3", "sk-", "AKIA"}
	r := rand.New(rand.NewPCG(31, 32))
	for i := 0; i < iterations(20000); i++ {
		var b strings.Builder
		for k := r.IntN(20); k >= 0; k-- {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		in := b.String()
		n, changed := normalize(in)
		if !changed {
			continue
		}
		if len(n.text) == 0 {
			continue
		}
		s := r.IntN(len(n.text))
		e := s + 1 + r.IntN(len(n.text)-s)
		bk := n.back(span{s, e})
		if bk.start < 0 || bk.end > len(in) || bk.start > bk.end {
			t.Fatalf("%q: back(%d,%d) = %v", in, s, e, bk)
		}
		for _, p := range []int{bk.start, bk.end} {
			if p < len(in) && !utf8.RuneStart(in[p]) {
				t.Fatalf("%q: back(%d,%d) = %v cuts a rune", in, s, e, bk)
			}
		}
		if wide := n.back(span{0, len(n.text)}); wide.start > bk.start || wide.end < bk.end {
			t.Fatalf("%q: the whole maps to %v, a part to %v", in, wide, bk)
		}
		if out := replaceSpans(in, []span{bk}); utf8.ValidString(in) && !utf8.ValidString(out) {
			t.Fatalf("%q: replacing %v gives invalid UTF-8 %q", in, bk, out)
		}
	}
}
