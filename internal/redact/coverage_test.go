package redact

import "testing"

// TestCorpusCoversEveryRule: positive.txt has a sample of every token and
// command rule, and of every rule that is not in those tables.
func TestCorpusCoversEveryRule(t *testing.T) {
	have := map[string]bool{}
	for _, s := range readCorpus(t, "positive.txt") {
		have[s.rule] = true
	}
	want := []string{"pem-private-key", "putty-private-key", "url-password", "bearer", "authorization-basic",
		"assignment", "azure-storage-key", "aws-secret-access-key", "continuo-token"}
	for _, r := range tokenRules {
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
}
