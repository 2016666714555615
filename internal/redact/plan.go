package redact

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// plan is how a rule's matches are found. A gitleaks rule as written often
// has no literal to start from ("(?i)\b(...)", or generic-api-key's
// "[\w.-]{0,50}?(?:access|auth|...)"): Go's regexp then tries a match at
// every byte of the text, and running every rule whose keyword occurs
// would make String tens of times slower on prose. So, where the
// expression allows, a rule is matched only where it can start:
//
//   - anchors are literals (found case-insensitively when fold) that every
//     match begins with, read from the expression's syntax (seqLits); the
//     rule is tried, anchored, at each occurrence of one, left to right,
//     after the end of its last match — which finds exactly the matches
//     FindAll finds (TestPlansMatchRegexp holds every rule to it).
//   - ext is a lazy prefix "C{0,n}?" stripped before the anchors were read
//     (the identifier before a keyword in gitleaks' semi-generic rules). A
//     match found without it is widened to the left over up to n runes of
//     C, not before the end of the last match: the leftmost start FindAll
//     gives the whole expression.
//
// A plan whose anchors cannot be read runs its whole expression. An
// expression that is an alternation at the top, without a secretGroup,
// gets a plan per alternative: their matches may then overlap where the
// alternation's would not, which only ever redacts more.
//
// A plan's expressions are compiled on first use (compiled): most rules
// never run in a given process, and printing a parsed expression back
// (which the anchored forms need) costs milliseconds for the large
// classes of gitleaks' rules.
type plan struct {
	anchors []lit
	ext     []rune // the stripped prefix's character class (ranges), or nil
	extMax  int
	// maxLen bounds the anchored expression's matches, in bytes, when
	// bounded: a try then reads a window of the text, not all of it.
	maxLen  int
	bounded bool
	// reach, when set, is a cheap test that every match passes.
	reach *reach

	compiled func() *planRE
}

// planRE are a plan's compiled expressions.
type planRE struct {
	whole   *regexp.Regexp // the expression (or alternative) as written
	anch0   *regexp.Regexp // \A(?:R): a try at the start of the text
	anchCtx *regexp.Regexp // \A(?s:.)(?:R): a try after one rune of context
	// quick is \A(?s:.)?(?:R'), where R' matches a prefix of every match of
	// R and reads at most quickLen bytes: a try that it refuses, given
	// those bytes, fails (see quickPrefix).
	quick    *regexp.Regexp
	quickLen int
}

// lit is a literal a match may begin with.
type lit struct {
	s    string // lower-case when fold
	fold bool
}

// quickRepeat is the largest repetition quickPrefix keeps: gitleaks'
// "{0,20}" between a name and its operator stays, the "{10,150}" of a
// value is cut to its first ten.
const quickRepeat = 20

const (
	maxLitLen = 8  // anchors are cut to this length
	maxLits   = 64 // a rule with more anchors runs whole
	minAnchor = 2  // nor does one with an anchor shorter than this
)

// litSet is what seqLits reads: every match begins with one of lits;
// complete means each literal is all that the expression matches.
type litSet struct {
	lits     []lit
	complete bool
}

// newPlans reads the plans of the expression expr (see plan); group is the
// rule's secretGroup.
func newPlans(expr string, group int) ([]plan, error) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, err
	}
	if re.Op == syntax.OpAlternate && group == 0 {
		var out []plan
		for _, alt := range re.Sub {
			out = append(out, newPlan(alt, ""))
		}
		return out, nil
	}
	return []plan{newPlan(re, expr)}, nil
}

// newPlan reads the plan of the parsed expression re; expr is its text
// when the caller has it (else it is printed from re when needed).
func newPlan(re *syntax.Regexp, expr string) plan {
	source := func() string {
		if expr != "" {
			return expr
		}
		return re.String()
	}
	whole := func() *planRE { return &planRE{whole: regexp.MustCompile(source())} }
	nodes := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		nodes = re.Sub
	}
	// A run of lazy prefixes of one class (gitleaks' case-sensitive
	// semi-generic rules have two) reads as one: C{0,m}?C{0,n}? prefers the
	// shortest total, as C{0,m+n}? does.
	var ext []rune
	extMax := 0
	for len(nodes) > 1 {
		h := nodes[0]
		if h.Op != syntax.OpRepeat || h.Min != 0 || h.Max <= 0 || h.Flags&syntax.NonGreedy == 0 ||
			h.Sub[0].Op != syntax.OpCharClass {
			break
		}
		c, ok := sameClass(ext, h.Sub[0].Rune)
		if !ok {
			break
		}
		ext, extMax = c, extMax+h.Max
		nodes = nodes[1:]
	}
	set, ok := seqLits(nodes)
	if ok && (len(set.lits) == 0 || len(set.lits) > maxLits) {
		ok = false
	}
	for _, l := range set.lits {
		ok = ok && len(l.s) >= minAnchor
	}
	if !ok {
		return plan{compiled: sync.OnceValue(whole)}
	}
	rest := nodes[0]
	if len(nodes) > 1 {
		rest = &syntax.Regexp{Op: syntax.OpConcat, Sub: nodes}
	}
	p := plan{anchors: dedupLits(set.lits), ext: ext, extMax: extMax, reach: newReach(nodes)}
	p.maxLen, p.bounded = maxBytes(rest)
	p.compiled = sync.OnceValue(func() *planRE {
		c := whole()
		body := rest.String()
		c.anch0 = regexp.MustCompile(`\A(?:` + body + `)`)
		c.anchCtx = regexp.MustCompile(`\A(?s:.)(?:` + body + `)`)
		if c.anch0.NumSubexp() != c.whole.NumSubexp() {
			panic("redact: the anchored form of " + c.whole.String() + " has other groups")
		}
		if q, _ := quickPrefix(rest); q != nil {
			if n, ok := maxBytes(q); ok && (!p.bounded || n < p.maxLen || len(q.String()) < len(body)) {
				c.quick = regexp.MustCompile(`\A(?s:.)?(?:` + q.String() + `)`)
				c.quickLen = utf8.UTFMax + n + utf8.UTFMax // the context rune, R', the rune after it
			}
		}
		return c
	})
	return p
}

// quickPrefix returns an expression that matches a prefix of every match
// of re and is small and quick to try: re up to its first repetition that
// is unbounded or allows more than quickRepeat, which is cut to its
// minimum, the rest of it dropped. truncated says that something was
// dropped.
func quickPrefix(re *syntax.Regexp) (q *syntax.Regexp, truncated bool) {
	switch re.Op {
	case syntax.OpConcat:
		return quickSeq(re.Flags, re.Sub)
	case syntax.OpAlternate:
		out := &syntax.Regexp{Op: syntax.OpAlternate, Flags: re.Flags}
		trunc := false
		for _, sub := range re.Sub {
			n, t := quickPrefix(sub)
			out.Sub = append(out.Sub, n)
			trunc = trunc || t
		}
		return out, trunc
	case syntax.OpCapture:
		n, t := quickPrefix(re.Sub[0])
		return &syntax.Regexp{Op: syntax.OpCapture, Flags: re.Flags, Cap: re.Cap, Name: re.Name, Sub: []*syntax.Regexp{n}}, t
	case syntax.OpQuest:
		n, t := quickPrefix(re.Sub[0])
		return &syntax.Regexp{Op: syntax.OpQuest, Flags: re.Flags, Sub: []*syntax.Regexp{n}}, t
	case syntax.OpStar, syntax.OpPlus, syntax.OpRepeat:
		min, max := re.Min, re.Max
		switch re.Op {
		case syntax.OpStar:
			min, max = 0, -1
		case syntax.OpPlus:
			min, max = 1, -1
		}
		n, t := quickPrefix(re.Sub[0])
		if t {
			// A match begins with one of the sub-expression's, or is empty.
			return &syntax.Regexp{Op: syntax.OpQuest, Flags: re.Flags, Sub: []*syntax.Regexp{n}}, true
		}
		if max < 0 || max > quickRepeat {
			return &syntax.Regexp{Op: syntax.OpRepeat, Flags: re.Flags, Min: min, Max: min, Sub: []*syntax.Regexp{n}}, true
		}
		return &syntax.Regexp{Op: syntax.OpRepeat, Flags: re.Flags, Min: min, Max: max, Sub: []*syntax.Regexp{n}}, false
	}
	return re, false
}

// normalRune reports whether r can occur in text in normal form: (?i)
// adds the long s and the Kelvin sign to s and k, which NFKC turns into s
// and K, so that the matcher, which reads the normal form, never sees them.
func normalRune(r rune) bool { return r < utf8.RuneSelf || norm.NFKC.IsNormalString(string(r)) }

// quickSeq is quickPrefix of a sequence. An optional part whose prefix is
// cut ("(?:for (?:\w+)+)? is X") leaves two ways a match may begin: with
// that part's prefix, or with the prefix of the rest — which still holds
// what follows ("is").
func quickSeq(flags syntax.Flags, nodes []*syntax.Regexp) (*syntax.Regexp, bool) {
	out := &syntax.Regexp{Op: syntax.OpConcat, Flags: flags}
	for i, sub := range nodes {
		n, t := quickPrefix(sub)
		if t && sub.Op == syntax.OpQuest && i+1 < len(nodes) {
			rest, _ := quickSeq(flags, nodes[i+1:])
			alt := &syntax.Regexp{Op: syntax.OpAlternate, Flags: flags, Sub: []*syntax.Regexp{n.Sub[0], rest}}
			out.Sub = append(out.Sub, alt)
			return out, true
		}
		out.Sub = append(out.Sub, n)
		if t {
			return out, true
		}
	}
	return out, false
}

// maxBytes is the longest text re can match, in bytes, if it is bounded,
// in text of normal form (the windows of tries rest on it).
func maxBytes(re *syntax.Regexp) (int, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return 0, true
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			w := utf8.RuneLen(r)
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					if normalRune(f) {
						w = max(w, utf8.RuneLen(f))
					}
				}
			}
			n += w
		}
		return n, true
	case syntax.OpCharClass:
		w := 0
		for i := 0; i < len(re.Rune); i += 2 {
			if lo, hi := re.Rune[i], re.Rune[i+1]; lo != hi || normalRune(lo) {
				w = max(w, utf8.RuneLen(min(hi, unicode.MaxRune)))
			}
		}
		return w, true
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax, true
	case syntax.OpCapture, syntax.OpQuest:
		return maxBytes(re.Sub[0])
	case syntax.OpConcat, syntax.OpAlternate:
		total := 0
		for _, sub := range re.Sub {
			n, ok := maxBytes(sub)
			if !ok {
				return 0, false
			}
			if re.Op == syntax.OpConcat {
				total += n
			} else {
				total = max(total, n)
			}
		}
		return total, true
	case syntax.OpRepeat:
		if re.Max < 0 {
			return 0, false
		}
		n, ok := maxBytes(re.Sub[0])
		return n * re.Max, ok
	}
	return 0, false
}

// sameClass reports whether the character classes a and b (ranges) are
// the same on normalized text, and returns their union: (?i) adds to \w
// the long s and the Kelvin sign, which NFKC turns into s and K, so that
// the matcher never sees them.
func sameClass(a, b []rune) ([]rune, bool) {
	if a == nil || slices.Equal(a, b) {
		return b, true
	}
	for _, pair := range [][2][]rune{{a, b}, {b, a}} {
		for i := 0; i < len(pair[0]); i += 2 {
			if pair[0][i+1]-pair[0][i] > 1<<12 {
				return nil, false // a wide class: only the same one is the same
			}
			for r := pair[0][i]; r <= pair[0][i+1]; r++ {
				if !classHas(pair[1], r) && norm.NFKC.IsNormalString(string(r)) {
					return nil, false
				}
			}
		}
	}
	if len(a) >= len(b) {
		return a, true
	}
	return b, true
}

func dedupLits(ls []lit) []lit {
	slices.SortFunc(ls, func(a, b lit) int {
		if c := strings.Compare(a.s, b.s); c != 0 {
			return c
		}
		if a.fold == b.fold {
			return 0
		}
		if a.fold {
			return 1
		}
		return -1
	})
	return slices.Compact(ls)
}

// seqLits reads the literals a sequence of expressions begins with.
func seqLits(nodes []*syntax.Regexp) (litSet, bool) {
	if len(nodes) == 0 {
		return litSet{lits: []lit{{}}, complete: true}, true
	}
	h := nodes[0]
	switch {
	case h.Op == syntax.OpQuest || h.Op == syntax.OpStar || (h.Op == syntax.OpRepeat && h.Min == 0):
		// X? R is X R or R; X* R and X{0,n} R begin with X or with R.
		var with litSet
		var ok bool
		if h.Op == syntax.OpQuest {
			with, ok = seqLits(append([]*syntax.Regexp{h.Sub[0]}, nodes[1:]...))
		} else {
			with, ok = nodeLits(h.Sub[0])
			with.complete = false
		}
		if !ok {
			return litSet{}, false
		}
		without, ok := seqLits(nodes[1:])
		if !ok {
			return litSet{}, false
		}
		return union(with, without)
	}
	head, ok := nodeLits(h)
	if !ok {
		return litSet{}, false
	}
	if !head.complete {
		return head, true
	}
	rest, ok := seqLits(nodes[1:])
	if !ok {
		// The head alone is still a prefix of every match.
		head.complete = false
		return head, true
	}
	return cross(head, rest)
}

// nodeLits reads the literals one expression begins with.
func nodeLits(re *syntax.Regexp) (litSet, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return litSet{lits: []lit{{}}, complete: true}, true
	case syntax.OpLiteral:
		s := string(re.Rune)
		fold := re.Flags&syntax.FoldCase != 0
		if fold {
			for _, r := range re.Rune {
				if r >= utf8.RuneSelf {
					return litSet{}, false // folding beyond ASCII: leave it to the whole expression
				}
			}
			s = strings.ToLower(s)
		}
		return litSet{lits: []lit{{s, fold}}, complete: true}, true
	case syntax.OpCharClass:
		var ls []lit
		for i := 0; i < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if len(ls) == 4 {
					return litSet{}, false
				}
				ls = append(ls, lit{s: string(r)})
			}
		}
		return litSet{lits: ls, complete: true}, true
	case syntax.OpCapture:
		return nodeLits(re.Sub[0])
	case syntax.OpConcat:
		return seqLits(re.Sub)
	case syntax.OpAlternate:
		out := litSet{complete: true}
		for _, sub := range re.Sub {
			s, ok := nodeLits(sub)
			if !ok {
				return litSet{}, false
			}
			var uok bool
			if out, uok = union(out, s); !uok {
				return litSet{}, false
			}
		}
		return out, true
	case syntax.OpPlus:
		s, ok := nodeLits(re.Sub[0])
		s.complete = false
		return s, ok
	case syntax.OpRepeat:
		if re.Min == 0 {
			return litSet{}, false
		}
		s, ok := nodeLits(re.Sub[0])
		s.complete = s.complete && re.Min == 1 && re.Max == 1
		return s, ok
	}
	return litSet{}, false
}

func union(a, b litSet) (litSet, bool) {
	if a.lits == nil {
		return b, true
	}
	out := litSet{lits: append(slices.Clip(a.lits), b.lits...), complete: a.complete && b.complete}
	return out, len(out.lits) <= maxLits
}

func cross(a, b litSet) (litSet, bool) {
	if len(a.lits)*len(b.lits) > maxLits {
		// Too many combinations: the heads alone still begin every match.
		return litSet{lits: a.lits}, true
	}
	out := litSet{complete: a.complete && b.complete}
	for _, x := range a.lits {
		for _, y := range b.lits {
			l := lit{x.s + y.s, x.fold || y.fold}
			if l.fold {
				l.s = strings.ToLower(l.s)
			}
			if len(l.s) > maxLitLen {
				l.s = l.s[:maxLitLen]
				out.complete = false
			}
			out.lits = append(out.lits, l)
		}
	}
	return out, true
}

// reach is a necessary condition of a match that costs a short scan: a
// byte of set need occurs within max bytes of the match's start, and every
// byte before it is one of via. It is read from the first element of an
// expression's top-level sequence that cannot match empty and must begin
// with a byte of a small set of punctuation: in gitleaks' semi-generic rules,
// the operator after the identifier ("=", ":", "=>", ","...), which prose
// seldom has right after "key" or "token".
type reach struct {
	need, via byteSet
	max       int
	// After the needed byte, when run > 0: a run of at least run bytes of
	// runSet begins within skip bytes of skipSet (gitleaks' value of ten
	// or more characters after its operator and some quotes or blanks).
	skipSet, runSet byteSet
	skip, run       int
}

type byteSet [4]uint64

func (b *byteSet) add(c byte)      { b[c/64] |= 1 << (c % 64) }
func (b *byteSet) has(c byte) bool { return b[c/64]&(1<<(c%64)) != 0 }
func (b *byteSet) union(o byteSet) {
	b[0], b[1], b[2], b[3] = b[0]|o[0], b[1]|o[1], b[2]|o[2], b[3]|o[3]
}
func (b *byteSet) addHigh() { b[2], b[3] = ^uint64(0), ^uint64(0) }
func (b *byteSet) intersects(o byteSet) bool {
	return b[0]&o[0]|b[1]&o[1]|b[2]&o[2]|b[3]&o[3] != 0
}

func (r *reach) test(text string, at int) bool {
	end := min(len(text), at+r.max+1)
	for j := at; j < end; j++ {
		c := text[j]
		if r.need.has(c) && r.tail(text, j+1) {
			return true
		}
		if !r.via.has(c) {
			return false
		}
	}
	return false
}

// tail reports whether the run the reach wants begins within skip bytes
// of i.
func (r *reach) tail(text string, i int) bool {
	if r.run == 0 {
		return true
	}
	n := 0 // the length of the run of runSet bytes that ends at s
	for s := i; s < len(text) && s < i+r.skip+r.run; s++ {
		c := text[s]
		switch {
		case r.runSet.has(c):
			if n++; n >= r.run {
				return true
			}
		case r.skipSet.has(c) && s < i+r.skip:
			n = 0
		default:
			return false
		}
	}
	return false
}

// newReach reads a reach from a sequence of expressions, or returns nil.
func newReach(nodes []*syntax.Regexp) *reach {
	var ordinary byteSet // letters, digits and blanks: too common to need
	for c := 0; c < 128; c++ {
		if isLetter(byte(c)) || isDigit(byte(c)) || isSpace(byte(c)) {
			ordinary.add(byte(c))
		}
	}
	r := &reach{}
	for k, n := range nodes {
		if !nullable(n) {
			if f, ok := firstBytes(n); ok && !f.intersects(ordinary) && f[2]|f[3] == 0 {
				r.need = f
				r.readTail(n, nodes[k+1:])
				return r
			}
		}
		m, ok := maxBytes(n)
		if !ok {
			return nil
		}
		a, ok := allBytes(n)
		if !ok {
			return nil
		}
		r.max += m
		r.via.union(a)
	}
	return nil
}

// readTail reads what follows the needed node: the rest of it and the
// nodes that may match nothing are the skip, and the first node that may
// not, the run — when all of them are bounded and the run is at least four
// bytes long (shorter, it would reject little).
func (r *reach) readTail(need *syntax.Regexp, after []*syntax.Regexp) {
	m, ok := maxBytes(need)
	a, ok2 := allBytes(need)
	if !ok || !ok2 {
		return
	}
	skip, skipSet := m-1, a
	for _, n := range after {
		if nullable(n) {
			m, ok := maxBytes(n)
			a, ok2 := allBytes(n)
			if !ok || !ok2 {
				return
			}
			skip += m
			skipSet.union(a)
			continue
		}
		run := minBytes(n)
		runSet, ok := allBytes(n)
		if !ok || run < 4 {
			return
		}
		r.skipSet, r.runSet, r.skip, r.run = skipSet, runSet, skip, run
		return
	}
}

// minBytes is the shortest text re can match, in bytes.
func minBytes(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return len(string(re.Rune))
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture, syntax.OpPlus:
		return minBytes(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min * minBytes(re.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, sub := range re.Sub {
			n += minBytes(sub)
		}
		return n
	case syntax.OpAlternate:
		n := -1
		for _, sub := range re.Sub {
			if m := minBytes(sub); n < 0 || m < n {
				n = m
			}
		}
		return max(n, 0)
	}
	return 0
}

func nullable(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpLiteral, syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return false
	case syntax.OpCapture, syntax.OpPlus:
		return nullable(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min == 0 || nullable(re.Sub[0])
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !nullable(sub) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			if nullable(sub) {
				return true
			}
		}
		return false
	}
	return true // empty-width assertions, empty match, x?, x*
}

// runeBytes adds the bytes that the rune r, or (fold) any rune of its
// case-folding orbit, may put in a text.
func runeBytes(b *byteSet, r rune, fold bool, first bool) {
	rs := []rune{r}
	if fold {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			rs = append(rs, f)
		}
	}
	for _, x := range rs {
		if x >= utf8.RuneSelf {
			b.addHigh()
			continue
		}
		b.add(byte(x))
	}
	_ = first
}

// firstBytes is the set of bytes a non-empty match of re may begin with.
func firstBytes(re *syntax.Regexp) (byteSet, bool) {
	var b byteSet
	switch re.Op {
	case syntax.OpLiteral:
		runeBytes(&b, re.Rune[0], re.Flags&syntax.FoldCase != 0, true)
		return b, true
	case syntax.OpCharClass:
		return classBytes(re.Rune), true
	case syntax.OpCapture, syntax.OpPlus, syntax.OpRepeat, syntax.OpQuest, syntax.OpStar:
		return firstBytes(re.Sub[0])
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			f, ok := firstBytes(sub)
			if !ok {
				return b, false
			}
			b.union(f)
		}
		return b, true
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			f, ok := firstBytes(sub)
			if !ok {
				return b, false
			}
			b.union(f)
			if !nullable(sub) {
				return b, true
			}
		}
		return b, true
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return b, true
	}
	return b, false
}

// allBytes is the set of bytes any match of re may hold.
func allBytes(re *syntax.Regexp) (byteSet, bool) {
	var b byteSet
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			runeBytes(&b, r, re.Flags&syntax.FoldCase != 0, false)
		}
		return b, true
	case syntax.OpCharClass:
		return classBytes(re.Rune), true
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		for i := range b {
			b[i] = ^uint64(0)
		}
		return b, true
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return b, true
	}
	for _, sub := range re.Sub {
		a, ok := allBytes(sub)
		if !ok {
			return b, false
		}
		b.union(a)
	}
	return b, len(re.Sub) > 0
}

func classBytes(ranges []rune) byteSet {
	var b byteSet
	for i := 0; i < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		for c := lo; c <= hi && c < utf8.RuneSelf; c++ {
			b.add(byte(c))
		}
		if hi >= utf8.RuneSelf {
			b.addHigh()
		}
	}
	return b
}
