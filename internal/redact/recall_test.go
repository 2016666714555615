package redact

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestRecallAndFalsePositives measures the redactor on the corpus and
// fails below 100% recall or above 0.1% false positives per line.
//
// Recall is over the samples of the positive files (positive.txt, and
// gitleaks.txt: gitleaks' own true positives): a sample counts when
// nothing of its secrets survives. False positives are over ordinary
// engineering text: this repository's Go sources (not its tests, which
// plant fake credentials on purpose) and documents, the messages of its
// history, negative.txt and prose.txt (prose without credentials that
// talks about them); a line counts when String changes it. The repository's
// text is read with git at test time — nothing of it is copied here — and
// internal/redact/testdata is left out. Under the race detector a fixed
// sample of one file and message in two is read (the whole without it).
func TestRecallAndFalsePositives(t *testing.T) {
	total, recalled := 0, 0
	for _, file := range positiveFiles {
		for _, s := range readCorpus(t, file) {
			total++
			if out, changed := String(s.text); changed && s.leaks(out) == "" {
				recalled++
			} else {
				t.Errorf("%v: not redacted:\n in  %s\n out %s", s, s.text, out)
			}
		}
	}
	recall := float64(recalled) / float64(total)
	t.Logf("recall: %d of %d samples (%.2f%%)", recalled, total, 100*recall)

	docs := negativeDocs(t)
	lines, flagged := 0, 0
	for _, d := range docs {
		n := strings.Count(d.text, "\n") + 1
		lines += n
		if out, changed := String(d.text); !changed || out == d.text {
			continue
		}
		for i, l := range strings.Split(d.text, "\n") {
			if out, changed := String(l); changed {
				flagged++
				if flagged <= 40 {
					t.Logf("false positive %s:%d (%s)\n in  %s\n out %s", d.name, i+1, strings.Join(explain(l), ", "), l, out)
				}
			}
		}
	}
	rate := float64(flagged) / float64(lines)
	t.Logf("false positives: %d of %d lines in %d documents (%.4f%%)", flagged, lines, len(docs), 100*rate)
	if recall < 1 {
		t.Errorf("recall %.2f%%, want 100%%", 100*recall)
	}
	if rate > 0.001 {
		t.Errorf("false positives on %.4f%% of lines, want at most 0.1%%", 100*rate)
	}
	if lines < 1000 {
		t.Errorf("only %d lines of ordinary text: the negative corpus was not read", lines)
	}
}

type doc struct{ name, text string }

// Under the race detector, which slows String tenfold, the repository's
// files and messages are read one in raceSample (a fixed choice).
var raceSample, raceOffset = 2, 0

// negativeDocs returns the texts without credentials: negative.txt and
// prose.txt, and this repository's sources, documents and commit messages.
func negativeDocs(t *testing.T) []doc {
	var docs []doc
	for _, f := range []string{"negative.txt", "prose.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", "corpus", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range readCorpus(t, f) {
			docs = append(docs, doc{fmt.Sprintf("%s:%d", f, s.line), s.text})
		}
		_ = b
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("git rev-parse: %v: CI reads the repository's text with git", err)
		}
		t.Logf("not in a git checkout (%v): the repository's text is not read", err)
		return docs
	}
	root := strings.TrimSpace(string(top))
	git := func(args ...string) []byte {
		cmd := exec.Command("git", append([]string{"-C", root}, args...)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return out
	}
	files := strings.Split(strings.TrimSpace(string(git("ls-files", "-z", "--", "*.go", "*.md"))), "\x00")
	for i, f := range files {
		switch {
		case f == "", strings.HasSuffix(f, "_test.go"), strings.Contains(f, "/testdata/"), strings.HasPrefix(f, "testdata/"):
			continue
		case raceEnabled && i%raceSample != raceOffset:
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue // deleted in the work tree
		}
		if !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
			continue
		}
		docs = append(docs, doc{f, string(b)})
	}
	for i, msg := range strings.Split(string(git("log", "-z", "--format=%B")), "\x00") {
		if raceEnabled && i%raceSample != raceOffset {
			continue
		}
		if msg = strings.TrimSpace(msg); msg != "" {
			docs = append(docs, doc{fmt.Sprintf("git log message %d", i), msg})
		}
	}
	return docs
}

// explain names the rules that find something in s (for the log of a false
// positive).
func explain(s string) []string {
	n, changed := normalize(s)
	base := s
	if changed {
		base = n.text
	}
	var out []string
	ms, _ := rules().matches(base)
	for _, m := range ms {
		out = append(out, m.rule.source+":"+m.rule.id)
	}
	for _, r := range []struct {
		name  string
		spans []span
	}{
		{"known value", knownSpans(base, nil)}, {"private key", pemSpans(base)}, {"putty key", puttySpans(base)},
		{"url password", urlPasswordSpans(base)}, {"bearer", bearerTokens(base, bearerCredential)},
		{"continuo token", continuoTokenSpans(base)}, {"command line", commandSpans(base)},
		{"assignment", assignmentSpans(base)},
	} {
		if len(r.spans) > 0 {
			out = append(out, r.name)
		}
	}
	return out
}
