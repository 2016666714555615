package redact

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestPlansMatchRegexp holds the matcher to gitleaks' reading of each rule:
// for every rule, gitleaks' and ours, on the corpus and on texts made of the
// rule's own literals, the matches its plans find (anchored tries, the lazy
// prefix put back, windows, the fallback to the whole expression) are
// exactly those of the whole expression's FindAll — or, for a rule split
// into a plan per alternative, cover all of them.
func TestPlansMatchRegexp(t *testing.T) {
	m := rules()
	type text struct {
		s       string
		present []uint64
		hits    []hit
	}
	prepare := func(s string) text {
		if n, changed := normalize(s); changed {
			s = n.text // the matcher reads the normal form
		}
		present, hits := m.find(s, nil)
		return text{s, present, hits}
	}
	var corpus []text
	samples := map[string][]string{} // by rule
	for _, f := range []string{"positive.txt", "gitleaks.txt", "negative.txt", "prose.txt"} {
		for _, s := range readCorpus(t, f) {
			corpus = append(corpus, prepare(s.text))
			samples[s.rule] = append(samples[s.rule], s.text)
		}
	}
	for _, s := range []string{benchProse, benchCode, benchSecrets} {
		corpus = append(corpus, prepare(s))
	}
	perRule := 200
	if raceEnabled || testing.Short() {
		perRule = 20
	}
	r := rand.New(rand.NewPCG(21, 22))
	checked, matched := 0, 0
	for ri := range m.rules {
		rule := &m.rules[ri]
		whole := regexp.MustCompile(rule.expr)
		texts := corpus
		for range perRule {
			texts = append(texts, prepare(ruleText(r, m, ri, samples[rule.id])))
		}
		for _, x := range texts {
			if !m.active(ri, x.present) {
				continue // the rule does not run on this text
			}
			var want []match
			sc := &scan{text: x.s, global: m.global}
			for _, mm := range whole.FindAllStringSubmatchIndex(x.s, -1) {
				want = rule.found(sc, mm, want)
			}
			// A small budget makes the tries turn to FindAll part way.
			budget := 0
			if r.IntN(4) == 0 {
				budget = 1 + r.IntN(200)
			}
			got := m.ruleMatches(ri, &scan{text: x.s, global: m.global, budget: budget}, x.hits, nil)
			checked++
			matched += len(want)
			if len(rule.plans) == 1 {
				if !slices.EqualFunc(got, want, func(a, b match) bool { return a.whole == b.whole && a.secret == b.secret }) {
					t.Fatalf("%s: on %q\n plans  %v\n regexp %v", rule.id, x.s, spansOf(got), spansOf(want))
				}
				continue
			}
			for _, w := range want {
				if !covered(w.secret, got) {
					t.Fatalf("%s (a plan per alternative): on %q\n the secret %v of the regexp is not covered by %v", rule.id, x.s, w.secret, spansOf(got))
				}
			}
		}
	}
	t.Logf("%d rules, %d texts where a rule runs, %d matches of the whole expressions", len(m.rules), checked, matched)
	if matched < 3*len(m.rules) {
		t.Errorf("only %d matches: the texts do not exercise the rules", matched)
	}
}

func spansOf(ms []match) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "[%d,%d)/[%d,%d) ", m.whole.start, m.whole.end, m.secret.start, m.secret.end)
	}
	return b.String()
}

func covered(sp span, ms []match) bool {
	for _, m := range ms {
		if m.secret.start <= sp.start && sp.end <= m.secret.end {
			return true
		}
	}
	return false
}

// ruleText draws a text from rule ri's own literals (its keywords and
// anchors, in both cases), the characters its expressions are made of,
// and runs of token characters: where its plans make their decisions.
func ruleText(r *rand.Rand, m *matcher, ri int, samples []string) string {
	var pieces []string
	for _, id := range m.keywords[ri] {
		pieces = append(pieces, m.lits[id].s)
	}
	for i := range m.rules[ri].plans {
		for _, a := range m.rules[ri].plans[i].anchors {
			pieces = append(pieces, a.s, strings.ToUpper(a.s))
		}
	}
	if len(pieces) == 0 {
		pieces = append(pieces, "x")
	}
	pieces = append(pieces, " ", " ", "\n", "\t", "=", ":", ": ", " = ", "=>", ",", ";", "\"", "'", "`", "_", "-", ".", "/", "+",
		"\\n", "(", ")", "[", "]", "~", "|", "kind: Secret\n", "data:\n  ", "key", "token", "secret", "API", "Q~")
	classes := []string{"alnum", "hex", "HEX", "b64", "b64url", "digit", "lower", "upper"}
	if len(samples) > 0 && r.IntN(2) == 0 {
		// One of the rule's samples with pieces put in at random places:
		// matches and near misses.
		s := samples[r.IntN(len(samples))]
		s = strings.NewReplacer("⟦", "", "⟧", "").Replace(s)
		for n := r.IntN(4); n > 0; n-- {
			i := r.IntN(len(s) + 1)
			for i < len(s) && !utf8.RuneStart(s[i]) {
				i++
			}
			s = s[:i] + pieces[r.IntN(len(pieces))] + s[i:]
		}
		return s
	}
	var b strings.Builder
	for n := 1 + r.IntN(12); n > 0; n-- {
		if r.IntN(3) == 0 {
			b.WriteString(draw(r, classes[r.IntN(len(classes))], 1+r.IntN(70)))
			continue
		}
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}
