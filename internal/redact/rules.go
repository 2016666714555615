package redact

import (
	"io"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// secretRule is one rule of the matcher: gitleaks' default rules
// (gitleaks.go) and ours (extra.go) alike. It follows gitleaks' reading of
// a rule (detect/detect.go, detectRule): the rule runs only on text that
// holds one of its keywords (lower-case, found case-insensitively); each
// match of its expression yields a secret — its secretGroup, else its
// first non-empty group, else the whole match — which is dropped when its
// Shannon entropy is at most the rule's entropy or an allowlist allows it.
// The secret is what is redacted.
type secretRule struct {
	id       string
	source   string   // "gitleaks" or "continuo"
	expr     string   // the rule's expression as written
	group    int      // secretGroup
	entropy  float64  // 0: no entropy check
	keywords []string // lower-case; none: the rule always runs
	allow    []allowlist
	// accept, for our rules, is a further check of a secret and its match
	// (text, the secret's span, the match's span).
	accept func(text string, secret, match span) bool
	// narrow, for a few gitleaks rules, keeps part of their secret
	// (gitleaksOverrides).
	narrow func(text string, secret span) span

	plans []plan
}

// allowlist is one of gitleaks' allowlists, as it applies to text without
// a file path or commit: regexes (against the secret, the match or the
// line) and stop words (against the secret). With condition AND, a list
// that also names paths or commits never applies here, as in gitleaks when
// a fragment has no path.
type allowlist struct {
	target    string // "" (the secret), "match" or "line"
	regexes   []*search
	stopwords []string // lower-case
	and       bool
	never     bool // AND with paths or commits: cannot hold without a path

	stopIndex map[uint16][]string // stop words by their first two bytes
	short     []string            // stop words shorter than two bytes
}

// indexStopwords fills a.stopIndex and a.short from a.stopwords.
func (a *allowlist) indexStopwords() {
	a.stopIndex = map[uint16][]string{}
	for _, w := range a.stopwords {
		if len(w) < 2 {
			a.short = append(a.short, w)
			continue
		}
		k := uint16(w[0])<<8 | uint16(w[1])
		a.stopIndex[k] = append(a.stopIndex[k], w)
	}
}

func (a *allowlist) allows(secret, match, line string, work *int) bool {
	if a.never {
		return false
	}
	target := secret
	switch a.target {
	case "match":
		target = match
	case "line":
		target = line
	}
	re := false
	for _, r := range a.regexes {
		if r.in(target, work) {
			re = true
			break
		}
	}
	sw := len(a.stopwords) > 0 && a.hasStopword(secret)
	if a.and {
		return (len(a.regexes) == 0 || re) && (len(a.stopwords) == 0 || sw)
	}
	return re || sw
}

// hasStopword reports whether the lower-cased secret holds a stop word
// (gitleaks uses Aho-Corasick; the words are indexed by their first two
// bytes here, generic-api-key has some 1,400 of them).
func (a *allowlist) hasStopword(secret string) bool {
	l := strings.ToLower(secret)
	for _, w := range a.short {
		if strings.Contains(l, w) {
			return true
		}
	}
	for i := 0; i+1 < len(l); i++ {
		for _, w := range a.stopIndex[uint16(l[i])<<8|uint16(l[i+1])] {
			if strings.HasPrefix(l[i:], w) {
				return true
			}
		}
	}
	return false
}

// entropy is gitleaks' shannonEntropy: the distribution of the runes of s,
// over its length in bytes.
func entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var ascii [128]int
	var other map[rune]int
	for _, r := range s {
		if r < 128 {
			ascii[r]++
			continue
		}
		if other == nil {
			other = map[rune]int{}
		}
		other[r]++
	}
	inv := 1 / float64(len(s))
	var e float64
	add := func(n int) {
		if n > 0 {
			f := float64(n) * inv
			e -= f * math.Log2(f)
		}
	}
	for _, n := range ascii {
		add(n)
	}
	for _, n := range other {
		add(n)
	}
	return e
}

// match is one match of a rule: the whole match and the secret's span.
type match struct {
	rule          *secretRule
	whole, secret span
}

// A plan's tries share a budget: the bytes their expressions may read, the
// text's length (tryBudget). A text of many anchors
// ("sk-sk-sk-…", 256 KiB of it) would otherwise make the tries read its
// length many times over: a bounded try reads its window, an unbounded one
// ("{16,}", ".*"; gitleaks' curl rules read the rest of the line at each
// "curl", "sk-" keys the rest of a run of token characters) as far as its
// expression goes, possibly to the end of the text. When the budget is
// spent, the plan runs its whole expression over the text instead: one
// FindAll, which RE2 does in linear time, and from where the tries stopped
// the same matches. A plan thus reads at most about twice the text,
// whatever the text (TestLinearWork).
func tryBudget(n int) int { return n }

// scan is the state of one run of the rules over a text.
type scan struct {
	text   string
	global *allowlist // gitleaks' global allowlist
	// lines caches what an allowlist of regexTarget "line" says of a line
	// (by its start), so that many matches on one long line read it once.
	lines    map[lineKey]bool
	newlines []int // positions of '\n', once needed
	// present has a bit for each literal of the matcher found in the text
	// (nil: not known).
	present []uint64
	// work counts the bytes given to the rules' expressions (the windows
	// of tries, what unbounded tries read, the texts of FindAll), for
	// TestLinearWork. budget, when not 0, replaces tryBudget (tests).
	work   int
	budget int
}

// planBudget is the budget of a plan's tries on sc's text.
func (sc *scan) planBudget() int {
	if sc.budget != 0 {
		return sc.budget
	}
	return tryBudget(len(sc.text))
}

// anyOf reports whether one of the literals of set (a bitset) was found.
func (sc *scan) anyOf(set []uint64) bool {
	if sc.present == nil {
		return true
	}
	for i, w := range set {
		if w&sc.present[i] != 0 {
			return true
		}
	}
	return false
}

type lineKey struct {
	a     *allowlist
	start int
}

// matches appends the matches of rule r, as FindAll finds them. anchorAt(i)
// lists, in increasing order, where one of the anchors of plan i occurs.
func (r *secretRule) matches(sc *scan, anchorAt func(i int) []int, out []match) []match {
	text := sc.text
	for i := range r.plans {
		p := &r.plans[i]
		var at []int
		if p.anchors != nil {
			at = anchorAt(i)
		}
		if p.anchors == nil {
			sc.work += len(text)
			for _, m := range p.compiled().whole.FindAllStringSubmatchIndex(text, -1) {
				out = r.found(sc, m, out)
			}
			continue
		}
		prev, budget := 0, sc.planBudget()
		for _, a := range at {
			if a < prev {
				continue
			}
			m, ok := p.try(text, a, &budget, &sc.work)
			if !ok {
				// The budget is spent. The matches of the whole expression
				// from here on are those FindAll finds after prev (it found
				// ours before).
				sc.work += len(text)
				for _, m := range p.compiled().whole.FindAllStringSubmatchIndex(text, -1) {
					if m[0] >= prev {
						out = r.found(sc, m, out)
					}
				}
				break
			}
			if m == nil || m[1] == m[0] {
				continue
			}
			if p.ext != nil {
				s, n := m[0], 0
				for s > prev && n < p.extMax {
					c, size := utf8.DecodeLastRuneInString(text[:s])
					if !classHas(p.ext, c) {
						break
					}
					s -= size
					n++
				}
				m[0] = s
			}
			out = r.found(sc, m, out)
			prev = m[1]
		}
	}
	return out
}

// try matches the plan's anchored expression at byte at of text, with the
// rune before it as context (for \b), and returns the submatch indexes;
// ok=false when the bytes it would read exceed *budget (which it then
// leaves as it was: the caller turns to FindAll). It takes what it reads
// from *budget and adds it to *work.
//
// A bounded plan's expression is given the bytes it can reach: the context
// rune, maxLen bytes and a rune after them (what \b and $ look at) — which
// gives the match it would find in all of the text — and the quick test's
// window likewise. (Go's backtracker clears a bitmap of the length of its
// input at every call: given the rest of the text, tries at many anchors
// would cost its square.) An unbounded plan's expression reads the rest of
// the text through a reader that stops at the budget: the NFA reads only
// as far as a match can still go, and a try that reaches the budget is
// abandoned.
func (p *plan) try(text string, at int, budget, work *int) (m []int, ok bool) {
	if p.reach != nil && !p.reach.test(text, at) {
		return nil, true
	}
	c := p.compiled()
	_, size := utf8.DecodeLastRuneInString(text[:at])
	q := at - size
	// A reach that reads the value too (gitleaks' semi-generic rules) is
	// as strict as the quick test, for less.
	if c.quick != nil && (p.reach == nil || p.reach.run == 0) {
		w := min(len(text), q+c.quickLen)
		if w-q > *budget {
			return nil, false
		}
		*budget -= w - q
		*work += w - q
		if !c.quick.MatchString(text[q:w]) {
			return nil, true
		}
	}
	if !p.bounded || p.maxLen > maxWindow {
		return p.read(c, text, q, at, budget, work)
	}
	end := min(len(text), at+p.maxLen+utf8.UTFMax)
	if end-q > *budget {
		return nil, false
	}
	*budget -= end - q
	*work += end - q
	return p.anchored(c, text, q, at, end), true
}

// maxWindow is the largest window a bounded try is given; a plan whose
// matches may be longer reads through a reader, as an unbounded one.
const maxWindow = 1024

// read is anchored through a reader of text from q that stops at the
// budget.
func (p *plan) read(c *planRE, text string, q, at int, budget, work *int) ([]int, bool) {
	start, re := q, c.anchCtx
	if at == 0 {
		start, re = 0, c.anch0
	}
	rd := &budgetReader{s: text[start:], limit: *budget}
	m := re.FindReaderSubmatchIndex(rd)
	*work += rd.i
	if rd.spent {
		return nil, false
	}
	*budget -= rd.i
	if m == nil {
		return nil, true
	}
	for i := range m {
		if m[i] >= 0 {
			m[i] += start
		}
	}
	m[0] = at
	return m, true
}

// budgetReader reads the runes of s up to limit bytes, then reports the
// end of the text and that it stopped early.
type budgetReader struct {
	s        string
	i, limit int
	spent    bool
}

func (r *budgetReader) ReadRune() (rune, int, error) {
	if r.i >= len(r.s) {
		return 0, 0, io.EOF
	}
	if r.i >= r.limit {
		r.spent = true
		return 0, 0, io.EOF
	}
	c, size := utf8.DecodeRuneInString(r.s[r.i:])
	r.i += size
	return c, size, nil
}

// anchored runs the anchored expression at byte at of text[:end], q being
// where the rune before at starts.
func (p *plan) anchored(c *planRE, text string, q, at, end int) []int {
	if at == 0 {
		return c.anch0.FindStringSubmatchIndex(text[:end])
	}
	m := c.anchCtx.FindStringSubmatchIndex(text[q:end])
	if m == nil {
		return nil
	}
	for i := range m {
		if m[i] >= 0 {
			m[i] += q
		}
	}
	m[0] = at
	return m
}

func classHas(class []rune, c rune) bool {
	for i := 0; i < len(class); i += 2 {
		if class[i] <= c && c <= class[i+1] {
			return true
		}
	}
	return false
}

// found applies the rule's secret group, entropy, checks and allowlists
// to one match (submatch indexes m) and appends it when it stands.
func (r *secretRule) found(sc *scan, m []int, out []match) []match {
	text := sc.text
	whole := span{m[0], m[1]}
	// gitleaks trims newlines off the match (issue 1352).
	for whole.start < whole.end && text[whole.start] == '\n' {
		whole.start++
	}
	for whole.end > whole.start && text[whole.end-1] == '\n' {
		whole.end--
	}
	if whole.start == whole.end {
		return out
	}
	sec := whole
	if n := len(m) / 2; n > 1 {
		switch {
		case r.group > 0:
			if r.group >= n || m[2*r.group] < 0 {
				return out
			}
			sec = span{m[2*r.group], m[2*r.group+1]}
		default:
			for g := 1; g < n; g++ {
				if m[2*g] >= 0 && m[2*g+1] > m[2*g] {
					sec = span{m[2*g], m[2*g+1]}
					break
				}
			}
		}
	}
	if sec.start == sec.end {
		return out
	}
	secret := text[sec.start:sec.end]
	if r.entropy > 0 && entropy(secret) <= r.entropy {
		return out
	}
	if r.accept != nil && !r.accept(text, sec, whole) {
		return out
	}
	var global *allowlist
	if r.source == sourceGitleaks {
		global = sc.global
	}
	if global != nil || len(r.allow) > 0 {
		matchText := text[whole.start:whole.end]
		ls, le := sc.line(whole)
		if global != nil && sc.allows(global, secret, matchText, text[ls:le], ls) {
			return out
		}
		for i := range r.allow {
			if sc.allows(&r.allow[i], secret, matchText, text[ls:le], ls) {
				return out
			}
		}
	}
	if r.narrow != nil {
		if sec = r.narrow(text, sec); sec.start >= sec.end {
			return out
		}
	}
	return append(out, match{r, whole, sec})
}

// line returns the start and end of the lines that hold sp (gitleaks'
// Finding.Line). The text's newlines are found once, not per match: many
// matches on a long line would otherwise cost the square of its length.
func (sc *scan) line(sp span) (start, end int) {
	if sc.newlines == nil {
		sc.newlines = []int{}
		for i := 0; ; {
			k := strings.IndexByte(sc.text[i:], '\n')
			if k < 0 {
				break
			}
			sc.newlines = append(sc.newlines, i+k)
			i += k + 1
		}
	}
	k, _ := slices.BinarySearch(sc.newlines, sp.start) // the first newline at or after start
	if k > 0 {
		start = sc.newlines[k-1] + 1
	}
	k, _ = slices.BinarySearch(sc.newlines, sp.end)
	end = len(sc.text)
	if k < len(sc.newlines) {
		end = sc.newlines[k]
	}
	return start, end
}

// allows asks the allowlist a, caching its answer for a line.
func (sc *scan) allows(a *allowlist, secret, match, line string, lineStart int) bool {
	if a.target != "line" {
		return a.allows(secret, match, line, &sc.work)
	}
	k := lineKey{a, lineStart}
	if v, ok := sc.lines[k]; ok {
		return v
	}
	v := a.allows(secret, match, line, &sc.work)
	if sc.lines == nil {
		sc.lines = map[lineKey]bool{}
	}
	sc.lines[k] = v
	return v
}

// search answers whether an expression matches anywhere in a short text
// (an allowlist's secret, match or line) through the expression's plans,
// so that an alternation of words such as generic-api-key's allowlist
// ("access(?:ibility|or)|access[_.-]?id|…", case-insensitive) is tried
// where its words occur rather than by an automaton at every byte.
type search struct {
	plans []plan
	// pairs has a bit for the lower-cased first two bytes of every
	// anchor: a text that holds none is not searched further.
	pairs byteSetPairs
}

type byteSetPairs [1 << 16 / 64]uint64

func newSearch(expr string) (*search, error) {
	ps, err := newPlans(expr, 0)
	if err != nil {
		return nil, err
	}
	x := &search{plans: ps}
	for _, p := range ps {
		for _, a := range p.anchors {
			k := pairKey(a.s[0], a.s[1])
			x.pairs[k/64] |= 1 << (k % 64)
		}
	}
	return x, nil
}

// anyPair reports whether s holds the first two bytes of an anchor.
func (x *search) anyPair(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if k := pairKey(s[i], s[i+1]); x.pairs[k/64]&(1<<(k%64)) != 0 {
			return true
		}
	}
	return false
}

// in reports whether the expression matches somewhere in s.
func (x *search) in(s string, work *int) bool {
	var lower string
	anchored := false
	for i := range x.plans {
		if x.plans[i].anchors != nil {
			anchored = true
		}
	}
	if anchored && !x.anyPair(s) {
		// No anchored plan can match: only the whole ones are left.
		for i := range x.plans {
			if x.plans[i].anchors == nil {
				*work += len(s)
				if x.plans[i].compiled().whole.MatchString(s) {
					return true
				}
			}
		}
		return false
	}
	for i := range x.plans {
		p := &x.plans[i]
		if p.anchors == nil {
			*work += len(s)
			if p.compiled().whole.MatchString(s) {
				return true
			}
			continue
		}
		budget := tryBudget(len(s))
	anchors:
		for _, a := range p.anchors {
			hay := s
			if a.fold {
				if lower == "" {
					lower = asciiLower(s)
				}
				hay = lower
			}
			for off := 0; ; {
				k := strings.Index(hay[off:], a.s)
				if k < 0 {
					break
				}
				m, ok := p.try(s, off+k, &budget, work)
				if !ok {
					// The budget is spent: the whole expression decides.
					*work += len(s)
					if p.compiled().whole.MatchString(s) {
						return true
					}
					break anchors
				}
				if m != nil {
					return true
				}
				off += k + 1
			}
		}
	}
	return false
}

// asciiLower lower-cases the ASCII letters of s, keeping every byte where
// it is (strings.ToLower may change lengths).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		b[i] = lowerByte(c)
	}
	return string(b)
}
