package redact

import (
	"strings"
	"sync"
)

// widen extends sp to the whole of any occurrence of the placeholder in
// text that it cuts.
func widen(text string, sp span) span {
	if i := placeholderAround(text, sp.start); i >= 0 && i < sp.start {
		sp.start = i
	}
	if i := placeholderAround(text, sp.end-1); i >= 0 && i+len(Placeholder) > sp.end {
		sp.end = i + len(Placeholder)
	}
	return sp
}

// placeholderAround returns the start of the occurrence of the placeholder
// in text that holds byte i, or -1.
func placeholderAround(text string, i int) int {
	lo := max(0, i-len(Placeholder)+1)
	hi := min(len(text), i+len(Placeholder))
	if k := strings.Index(text[lo:hi], Placeholder); k >= 0 && lo+k <= i {
		return lo + k
	}
	return -1
}

// rules is the matcher of gitleaks' rules and ours, built on first use
// (reading the rule file and compiling some 450 expressions takes tens of
// milliseconds, which a process that never redacts should not pay).
var rules = sync.OnceValue(func() *matcher {
	rs, global, err := gitleaksRules(gitleaksTOML)
	if err != nil {
		panic("redact: " + err.Error()) // the embedded file: TestRules reads it
	}
	own, err := ownRules()
	if err != nil {
		panic("redact: " + err.Error())
	}
	m, err := newMatcher(append(rs, own...), global)
	if err != nil {
		panic("redact: " + err.Error())
	}
	return m
})

// ownRules compiles continuoRules.
func ownRules() ([]secretRule, error) {
	var out []secretRule
	for _, c := range continuoRules {
		r := secretRule{id: c.id, source: sourceContinuo, expr: c.expr, entropy: c.entropy, keywords: c.keywords, accept: c.accept}
		var err error
		if r.plans, err = newPlans(c.expr, 0); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// secretSpans returns the secrets the rules of m find in text, and the
// command rules whose command's name occurs in it.
func secretSpans(m *matcher, text string) ([]span, uint32) {
	ms, commands := m.matches(text)
	if len(ms) == 0 {
		return nil, commands
	}
	out := make([]span, 0, len(ms))
	var aws []span
	for _, x := range ms {
		out = append(out, x.secret)
		if x.rule.id == "aws-access-token" || x.rule.id == awsIDRule {
			aws = append(aws, x.secret)
		}
	}
	if aws != nil {
		// An access key id's secret key travels with it unlabelled (see
		// awsSecrets): it is found here, in the pass that removes the id.
		out = append(out, awsSecrets(text, aws)...)
	}
	return out, commands
}
