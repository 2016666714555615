package redact

import "testing"

// TestCorpusCoversEveryRule: positive.txt has a sample of every rule of
// ours — the rules in gitleaks' form (continuoRules), the command rules and
// the structural ones — and gitleaks.txt one of every rule of gitleaks'
// that reads content.
func TestCorpusCoversEveryRule(t *testing.T) {
	have := map[string]bool{}
	for _, s := range readCorpus(t, "positive.txt") {
		have[s.rule] = true
	}
	want := []string{"pem-private-key", "putty-private-key", "url-password", "bearer", "authorization-basic",
		"assignment", "azure-storage-key", "aws-secret-access-key", "continuo-token", "normalized"}
	for _, r := range continuoRules {
		want = append(want, r.id)
	}
	for _, r := range commandRules {
		want = append(want, r.id)
	}
	for _, id := range want {
		if !have[id] {
			t.Errorf("no sample of rule %q in testdata/corpus/positive.txt", id)
		}
	}
	gl := map[string]bool{}
	for _, s := range readCorpus(t, "gitleaks.txt") {
		gl[s.rule] = true
	}
	rs, _, err := gitleaksRules(gitleaksTOML)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if !gl[r.id] {
			t.Errorf("no sample of gitleaks rule %q in testdata/corpus/gitleaks.txt", r.id)
		}
	}
}

// TestOwnRulesAreNeeded: each of our rules in gitleaks' form is there
// because a sample of positive.txt needs it — without the rule, String
// leaves something of that sample's secret.
func TestOwnRulesAreNeeded(t *testing.T) {
	all := rules()
	samples := readCorpus(t, "positive.txt")
	seen := map[string]bool{}
	for _, c := range continuoRules {
		if seen[c.id] {
			continue
		}
		seen[c.id] = true
		var rs []secretRule
		for _, r := range all.rules {
			if r.source != sourceContinuo || r.id != c.id {
				rs = append(rs, r)
			}
		}
		m, err := newMatcher(rs, all.global)
		if err != nil {
			t.Fatal(err)
		}
		var needs []string
		for _, s := range samples {
			if s.rule != c.id {
				continue
			}
			if out, changed := stringWith(m, s.text); !changed || s.leaks(out) != "" {
				needs = append(needs, s.String())
			}
		}
		if len(needs) == 0 {
			t.Errorf("rule %s: no sample of positive.txt leaks without it", c.id)
		} else {
			t.Logf("rule %s is needed by %v", c.id, needs)
		}
	}
}
