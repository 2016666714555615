package redact

import (
	"sort"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// A secret can be disguised so that its text no longer matches a rule
// while a reader still sees it: written in full-width letters
// ("ＡＫＩＡ…", which NFKC turns into "AKIA…"), split over two lines with
// a shell continuation (a backslash at the end of the first line, which
// the shell removes), or with invisible characters inside (a zero-width
// space, a soft hyphen). The rules therefore read the text in a normal
// form: Unicode NFKC, with every backslash-newline removed and the
// characters that render as nothing dropped. What they find is mapped
// back to the text as written, and only those spans are replaced: the
// rest of the text stays exactly as it was.

// normalized is a text in normal form and the way back to the original.
type normalized struct {
	text string
	orig string
	// segs cut text and the original into pieces that correspond: piece k
	// is text[segs[k].n:segs[k+1].n] and orig[segs[k].o:segs[k+1].o]. An
	// exact piece is the same bytes on both sides. The last seg marks the
	// ends of both.
	segs []seg
}

type seg struct {
	n, o  int
	exact bool
}

// invisible are the characters NFKC keeps that render as nothing (or as a
// hyphen only at a line break): zero-width space, non-joiner and joiner,
// word joiner, byte-order mark, soft hyphen.
const invisible = "\u200b\u200c\u200d\u2060\ufeff\u00ad"

// normalize returns s in normal form, or ok=false when s already is (the
// common case: ASCII without a line continuation).
func normalize(s string) (n normalized, ok bool) {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	cont := strings.Contains(s, "\\\n") || strings.Contains(s, "\\\r\n")
	if !cont && (ascii || (norm.NFKC.IsNormalString(s) && !strings.ContainsAny(s, invisible))) {
		return normalized{}, false
	}
	var b strings.Builder
	b.Grow(len(s))
	var segs []seg
	add := func(out string, o int, exact bool) {
		k := len(segs) - 1
		switch {
		case exact && k >= 0 && segs[k].exact:
			b.WriteString(out) // one exact piece goes on
			return
		case !exact && k >= 0 && !segs[k].exact && segs[k].o == o && out != "":
			// The iterator gives a long decomposition in parts, the first
			// of which consumes nothing: they are one piece.
			b.WriteString(out)
			return
		}
		segs = append(segs, seg{n: b.Len(), o: o, exact: exact})
		b.WriteString(out)
	}
	for o := 0; o < len(s); {
		// The piece up to the next continuation is normalized alone.
		end := len(s)
		skip := 0
		if k := strings.Index(s[o:], "\\\n"); k >= 0 {
			end, skip = o+k, 2
		}
		if k := strings.Index(s[o:end], "\\\r\n"); k >= 0 {
			end, skip = o+k, 3
		}
		piece := s[o:end]
		var it norm.Iter
		it.InitString(norm.NFKC, piece)
		for !it.Done() {
			start := it.Pos()
			out := string(it.Next())
			stop := it.Pos()
			orig := piece[start:stop]
			if strings.ContainsAny(out, invisible) {
				out = strings.Map(func(r rune) rune {
					if strings.ContainsRune(invisible, r) {
						return -1
					}
					return r
				}, out)
			}
			add(out, o+start, out == orig)
		}
		if skip > 0 {
			add("", end, false) // the continuation: nothing of it is left
		}
		o = end + skip
	}
	segs = append(segs, seg{n: b.Len(), o: len(s)})
	return normalized{text: b.String(), orig: s, segs: segs}, true
}

// piece returns the index of the piece that holds byte i of the normal
// text (0 <= i < len(text)).
func (n *normalized) piece(i int) int {
	// The last seg that starts at or before i; empty pieces (removed
	// continuations) come before the piece that starts where they do.
	return sort.Search(len(n.segs), func(k int) bool { return n.segs[k].n > i }) - 1
}

// back maps a span of the normal text to the smallest span of the original
// that holds all of it: whole pieces where a piece changed, bytes where it
// did not.
func (n *normalized) back(sp span) span {
	if sp.start >= sp.end {
		return span{}
	}
	k := n.piece(sp.start)
	start := n.segs[k].o
	if n.segs[k].exact {
		start += sp.start - n.segs[k].n
		for start > n.segs[k].o && !utf8.RuneStart(n.orig[start]) {
			start-- // a span that starts inside a rune takes all of it
		}
	}
	k = n.piece(sp.end - 1)
	end := n.segs[k+1].o
	if n.segs[k].exact {
		end = n.segs[k].o + sp.end - n.segs[k].n
		for end < n.segs[k+1].o && !utf8.RuneStart(n.orig[end]) {
			end++
		}
	}
	return span{start, end}
}
