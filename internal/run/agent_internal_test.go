package run

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
)

// liveText feeds text to an agent sink in the given pieces and returns
// what reached the log after each piece, and in all.
func liveText(pieces []string) (steps []string, all string) {
	var b strings.Builder
	s := newAgentSink(func(kind continuo.RunEventKind, text string) {
		if kind == continuo.EventText {
			b.WriteString(text)
		}
	})
	for _, p := range pieces {
		s.Text(p)
		steps = append(steps, b.String())
	}
	s.close()
	return steps, b.String()
}

// The model's text shows as it arrives, a line's start released at its
// blanks, and in all it is exactly what a whole-line redaction gives: the
// early part is never shown twice, and a secret, however the deltas split
// it, never shows.
func TestAgentSinkLive(t *testing.T) {
	steps, all := liveText([]string{"The parser ", "looks fine", ", but the ", "lexer is slow.\n", "Next"})
	if steps[0] != "The parser " || steps[1] != "The parser looks " || steps[2] != "The parser looks fine, but the " {
		t.Errorf("released as it came: %q", steps)
	}
	if all != "The parser looks fine, but the lexer is slow.\nNext" {
		t.Errorf("in all: %q", all)
	}

	secrets := []string{"ghp_7X8s51fbLtByHwiUmrCaoND5bgfTFAbGOUBw", "sk-proj-" + strings.Repeat("Zx9Qw2", 7), "hunter2hunter2xyz"}
	texts := []string{
		"Use the token " + secrets[0] + " for the API, then stop.\n",
		"Authorization: Bearer " + secrets[1] + " is what the client sends\n",
		"the password: " + secrets[2] + " was in the config\n",
		`it said password = "` + secrets[2] + ` and more" there` + "\n",
		"export OPENAI_API_KEY=" + secrets[1] + " before running\n",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA" + strings.Repeat("x", 60) + "\n-----END RSA PRIVATE KEY-----\nafter the key\n",
	}
	rng := rand.New(rand.NewSource(1))
	for _, text := range texts {
		var want strings.Builder
		st := redact.NewStream(func(s string) { want.WriteString(s) })
		_, _ = st.Write([]byte(text))
		st.Close()
		for trial := 0; trial < 200; trial++ {
			var pieces []string
			for rest := text; rest != ""; {
				n := 1 + rng.Intn(min(len(rest), 12))
				pieces = append(pieces, rest[:n])
				rest = rest[n:]
			}
			steps, all := liveText(pieces)
			for _, sec := range secrets {
				for _, step := range steps {
					if strings.Contains(step, sec) || strings.Contains(all, sec) {
						t.Fatalf("%q split as %q showed a secret: %q", text, pieces, step)
					}
				}
			}
			if all != want.String() {
				t.Fatalf("%q split as %q gave %q, want %q", text, pieces, all, want.String())
			}
		}
	}
}
