package redact

import (
	"slices"
	"strings"
)

// span is a byte range to replace with the placeholder.
type span struct{ start, end int }

// awsNear is how far from an access key id its secret key is looked for.
const awsNear = 256

// awsSecrets finds the secret access key that travels with an access key id
// without a label ("AKIA... wJalr...", a CSV row): a run of exactly 40
// base64 characters with both upper- and lower-case letters (git hashes are
// hex of one case), reaching within awsNear bytes before or after an id; and
// there any run of 100 or more, which is an STS session token. gitleaks and
// detect-secrets find the secret only by its name (aws_secret_access_key =
// ...), which the assignment rule also does; this rule is ours.
//
// It does not make String depend on the text's history: the ids are removed
// in the same pass, so a second pass has no id and finds nothing new. Every
// byte is looked at once, however many ids there are.
func awsSecrets(s string, ids []span) []span {
	slices.SortFunc(ids, func(a, b span) int { return a.start - b.start })
	merged := ids[:1]
	for _, id := range ids[1:] { // bounded and unbounded ids may overlap
		if last := &merged[len(merged)-1]; id.start < last.end {
			last.end = max(last.end, id.end)
		} else {
			merged = append(merged, id)
		}
	}
	ids = merged
	var out []span
	next := 0 // bytes before next have been looked at
	for _, id := range ids {
		j := max(next, id.start-awsNear)
		hi := min(len(s), id.end+awsNear)
		for j > next && isBase64Byte(s[j-1]) { // a run that reaches into the window
			j--
		}
		for j < hi {
			if !isBase64Byte(s[j]) {
				j++
				continue
			}
			k := j
			for k < len(s) && isBase64Byte(s[k]) {
				k++
			}
			if run := s[j:k]; !overlapsAny(ids, j, k) &&
				((len(run) == 40 && hasUpper(run) && hasLower(run)) || len(run) >= 100) {
				out = append(out, span{j, k})
			}
			j = k
		}
		next = max(next, j)
	}
	return out
}

// overlapsAny reports whether [start, end) overlaps one of the sorted,
// disjoint spans.
func overlapsAny(spans []span, start, end int) bool {
	i, _ := slices.BinarySearchFunc(spans, start, func(sp span, t int) int {
		if sp.end <= t {
			return -1
		}
		return 1
	})
	return i < len(spans) && spans[i].start < end
}

func isBase64Byte(c byte) bool { return isLetter(c) || isDigit(c) || c == '+' || c == '/' }
func isWordByte(c byte) bool   { return isLetter(c) || isDigit(c) || c == '_' }

func hasUpper(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r >= 'A' && r <= 'Z' }) >= 0
}
func hasLower(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r >= 'a' && r <= 'z' }) >= 0
}

// replaceSpans replaces every span with the placeholder. Spans may come in
// any order and overlap; overlapping ones are replaced as one. A span that
// already is the placeholder stays, and one that cuts a placeholder takes
// all of it (so that a placeholder is never broken: String's passes end).
func replaceSpans(s string, spans []span) string {
	if len(spans) == 0 {
		return s
	}
	for i := range spans {
		if spans[i].start < spans[i].end && s[spans[i].start:spans[i].end] != Placeholder {
			spans[i] = widen(s, spans[i])
		}
	}
	slices.SortFunc(spans, func(a, b span) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return a.end - b.end
	})
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	changed := false
	for i := 0; i < len(spans); i++ {
		sp := spans[i]
		for i+1 < len(spans) && spans[i+1].start < sp.end {
			i++
			sp.end = max(sp.end, spans[i].end)
		}
		if sp.start < last || sp.start == sp.end || s[sp.start:sp.end] == Placeholder {
			continue
		}
		b.WriteString(s[last:sp.start])
		b.WriteString(Placeholder)
		last = sp.end
		changed = true
	}
	if !changed {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// continuoTokenSpans finds Continuo tokens: "cto_" and at least 16 token
// characters. Plain "cto_" needs a non-alphanumeric character (or the start
// of the text) before it, so identifiers like "de_facto_standard_for_all"
// survive; the documented personal-access-token form "cto_pat_" is redacted
// wherever it appears. This is a hand-written scan rather than a regexp
// because RE2 has no look-behind, and because a rejected candidate may hide
// a real token later in the same run ("de_facto_cto_pat_..."). It runs
// after the other token shapes (it is the one that looks at its left
// neighbour).
func continuoTokenSpans(s string) []span {
	const prefix, pat, minLen = "cto_", "cto_pat_", 16
	var spans []span
	runEnd := 0
	for i := 0; ; {
		k := strings.Index(s[i:], prefix)
		if k < 0 {
			break
		}
		o := i + k
		// All characters from a previous candidate to runEnd are token
		// characters, so a candidate inside that run ends where it does:
		// reusing runEnd keeps the scan linear on "xcto_xcto_xcto_...".
		if o >= runEnd {
			runEnd = o + len(prefix)
			for runEnd < len(s) && isTokenChar(s[runEnd]) {
				runEnd++
			}
		}
		body := runEnd - o - len(prefix)
		if body < minLen {
			i = runEnd // later candidates in this run are shorter still
			continue
		}
		boundary := o == 0 || !(isLetter(s[o-1]) || isDigit(s[o-1]))
		if !boundary && !(strings.HasPrefix(s[o:], pat) && runEnd-o-len(pat) >= minLen) {
			i = o + 1
			continue
		}
		spans = append(spans, span{o, runEnd})
		i = runEnd
	}
	return spans
}

func isTokenChar(c byte) bool { return isLetter(c) || isDigit(c) || c == '_' || c == '-' }
