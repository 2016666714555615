package redact

import (
	"fmt"
	"sync"
)

// matcher runs a set of secretRules over a text. One pass over the text
// finds every literal the rules need — each rule's keywords, and the
// anchors of its plans — with a table look-up per byte (the lower-cased
// pair of bytes that begins each literal), as gitleaks' keyword prefilter
// does with Aho-Corasick: a rule runs only when one of its keywords
// occurs, and then only at its anchors.
type matcher struct {
	rules  []secretRule
	global *allowlist // gitleaks' global allowlist, for its rules

	lits    []lit
	heads   []uint32 // lit.head of each
	masks   []uint32
	index   [1 << 16]uint16      // lower-cased first two bytes → 1 + bucket
	pairs   [1 << 16 / 64]uint64 // the pairs of index that have a bucket
	buckets [][]uint16           // lit indexes
	words   int                  // bitset words for lits

	keywords  [][]uint16 // per rule: its keywords' lit indexes
	commands  [][]uint16 // per command rule (cli.go): its words' lit indexes
	anchors   [][]uint64 // per plan (in rule order): its anchors, a lit bitset
	firstPlan []int      // per rule: the index of its first plan in anchors
}

var lowerTable = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if 'A' <= i && i <= 'Z' {
			t[i] += 'a' - 'A'
		}
	}
	return t
}()

func lowerByte(c byte) byte { return lowerTable[c] }

func pairKey(a, b byte) uint16 { return uint16(lowerTable[a])<<8 | uint16(lowerTable[b]) }

func newMatcher(rules []secretRule, global *allowlist) (*matcher, error) {
	m := &matcher{rules: rules, global: global, buckets: [][]uint16{nil}}
	ids := map[lit]uint16{}
	add := func(l lit) (uint16, error) {
		if id, ok := ids[l]; ok {
			return id, nil
		}
		if len(l.s) < 2 {
			return 0, fmt.Errorf("literal %q is shorter than two bytes", l.s)
		}
		id := uint16(len(m.lits))
		m.lits = append(m.lits, l)
		h, mask := l.head()
		m.heads, m.masks = append(m.heads, h), append(m.masks, mask)
		ids[l] = id
		k := pairKey(l.s[0], l.s[1])
		if m.index[k] == 0 {
			m.index[k] = uint16(len(m.buckets))
			m.buckets = append(m.buckets, nil)
		}
		b := m.index[k]
		m.buckets[b] = append(m.buckets[b], id)
		m.pairs[k/64] |= 1 << (k % 64)
		return id, nil
	}
	var planLits [][]uint16
	for _, r := range rules {
		var kw []uint16
		for _, k := range r.keywords {
			id, err := add(lit{s: k, fold: true})
			if err != nil {
				return nil, fmt.Errorf("rule %s: keyword: %w", r.id, err)
			}
			kw = append(kw, id)
		}
		m.keywords = append(m.keywords, kw)
		m.firstPlan = append(m.firstPlan, len(planLits))
		for _, p := range r.plans {
			var ls []uint16
			for _, a := range p.anchors {
				id, err := add(a)
				if err != nil {
					return nil, fmt.Errorf("rule %s: anchor: %w", r.id, err)
				}
				ls = append(ls, id)
			}
			planLits = append(planLits, ls)
		}
	}
	// The command rules' words are found in the same pass (commandsIn
	// would be a second one over the text).
	for _, r := range commandRules {
		var ws []uint16
		for _, w := range r.words {
			id, err := add(lit{s: w})
			if err != nil {
				return nil, fmt.Errorf("command %s: %w", r.id, err)
			}
			ws = append(ws, id)
		}
		m.commands = append(m.commands, ws)
	}
	if len(m.lits) >= 1<<16-1 {
		return nil, fmt.Errorf("%d literals", len(m.lits))
	}
	m.words = (len(m.lits) + 63) / 64
	for _, ls := range planLits {
		set := make([]uint64, m.words)
		for _, id := range ls {
			set[id/64] |= 1 << (id % 64)
		}
		m.anchors = append(m.anchors, set)
	}
	return m, nil
}

// hit is an occurrence of a literal.
type hit struct {
	at  int
	lit uint16
}

// find returns the literals present in text (a bitset) and every
// occurrence, in order of position.
func (m *matcher) find(text string, hits []hit) ([]uint64, []hit) {
	present := make([]uint64, m.words)
	for i := 0; i+1 < len(text); i++ {
		k := pairKey(text[i], text[i+1])
		if m.pairs[k/64]&(1<<(k%64)) == 0 {
			continue
		}
		b := m.index[k]
		w := word(text, i)
		for _, id := range m.buckets[b] {
			if w&m.masks[id] != m.heads[id] {
				continue
			}
			l := &m.lits[id]
			if (len(l.s) > 4 || !l.fold) && !l.at(text, i) {
				continue
			}
			present[id/64] |= 1 << (id % 64)
			hits = append(hits, hit{i, id})
		}
	}
	return present, hits
}

// word is the lower-cased bytes i..i+3 of text (zero past its end), for a
// first comparison with every literal of a bucket at once (lit.head).
func word(text string, i int) uint32 {
	if len(text)-i >= 4 {
		return uint32(lowerByte(text[i])) | uint32(lowerByte(text[i+1]))<<8 | uint32(lowerByte(text[i+2]))<<16 | uint32(lowerByte(text[i+3]))<<24
	}
	var w uint32
	for j := 0; i+j < len(text); j++ {
		w |= uint32(lowerByte(text[i+j])) << (8 * j)
	}
	return w
}

// head is word of the literal's first bytes and the mask of how many.
func (l *lit) head() (w, mask uint32) {
	for j := 0; j < len(l.s) && j < 4; j++ {
		w |= uint32(lowerByte(l.s[j])) << (8 * j)
		mask |= 0xff << (8 * j)
	}
	return w, mask
}

// at reports whether the literal occurs at byte i of text.
func (l *lit) at(text string, i int) bool {
	if len(text)-i < len(l.s) {
		return false
	}
	if !l.fold {
		return text[i:i+len(l.s)] == l.s
	}
	for j := 0; j < len(l.s); j++ {
		if lowerByte(text[i+j]) != l.s[j] {
			return false
		}
	}
	return true
}

// matches returns every match of every rule in text, and a bit per
// command rule whose command's name occurs in it (as commandsIn).
func (m *matcher) matches(text string) ([]match, uint32) {
	bufp := hitPool.Get().(*[]hit)
	present, hits := m.find(text, (*bufp)[:0])
	sc := &scan{text: text, global: m.global, present: present}
	var out []match
	for ri := range m.rules {
		if m.active(ri, present) {
			out = m.ruleMatches(ri, sc, hits, out)
		}
	}
	var commands uint32
	for ci, ws := range m.commands {
		for _, id := range ws {
			if present[id/64]&(1<<(id%64)) != 0 {
				commands |= 1 << ci
			}
		}
	}
	*bufp = hits[:0]
	hitPool.Put(bufp)
	if workHook != nil {
		workHook(sc.work)
	}
	return out, commands
}

// workHook, when set (by tests only: export_test.go), is told the bytes
// each run of the rules gave their expressions.
var workHook func(bytes int)

// active reports whether rule ri runs on a text holding the literals
// present: it has no keywords, or one of them is there.
func (m *matcher) active(ri int, present []uint64) bool {
	if len(m.keywords[ri]) == 0 {
		return true
	}
	for _, id := range m.keywords[ri] {
		if present[id/64]&(1<<(id%64)) != 0 {
			return true
		}
	}
	return false
}

// ruleMatches appends the matches of rule ri, given the literals found.
func (m *matcher) ruleMatches(ri int, sc *scan, hits []hit, out []match) []match {
	var at []int
	first := m.firstPlan[ri]
	return m.rules[ri].matches(sc, func(i int) []int {
		set := m.anchors[first+i]
		at = at[:0]
		if !sc.anyOf(set) {
			return at
		}
		for _, h := range hits {
			if set[h.lit/64]&(1<<(h.lit%64)) != 0 && (len(at) == 0 || at[len(at)-1] != h.at) {
				at = append(at, h.at)
			}
		}
		return at
	}, out)
}

var hitPool = sync.Pool{New: func() any { b := make([]hit, 0, 64); return &b }}
