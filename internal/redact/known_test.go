package redact

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestRegister(t *testing.T) {
	t.Cleanup(resetKnown)
	resetKnown()
	key := "zq8Lm4xY2Ab9-opaque" // a shape no rule knows
	if out, _ := String("echo " + key); out != "echo "+key {
		t.Fatalf("a rule knows %q: %q", key, out)
	}
	Register(key, "short", "")
	for _, tc := range []struct{ in, want string }{
		{"echo " + key, "echo [redacted]"},
		{"error: bad key " + key + ", retry", "error: bad key [redacted], retry"},
		{"glued" + key + "glued", "glued[redacted]glued"},
		{"twice " + key + key, "twice [redacted][redacted]"},
		{"split " + key[:8] + "\\\n" + key[8:], "split [redacted]"},
		{"a short word stays: short", "a short word stays: short"},
		{"almost " + key[:len(key)-1], "almost " + key[:len(key)-1]},
	} {
		if got, _ := String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Values shorter than MinKnown are not registered: they would be words.
	Register("hunter2abc")
	if got, _ := String("x hunter2abc y"); got != "x hunter2abc y" {
		t.Errorf("a short value was registered: %q", got)
	}
	// RegisterNamed: by the name, as an assignment would be read.
	RegisterNamed("HOME", "/home/someone/projects")
	RegisterNamed("AGENT_API_KEY", "agentvalue-0123456789")
	if got, _ := String("cd /home/someone/projects; agentvalue-0123456789"); got != "cd /home/someone/projects; [redacted]" {
		t.Errorf("RegisterNamed: %q", got)
	}
}

// TestRegisterMintedBound: the newest maxMinted minted values are kept;
// the values of the configuration always are.
func TestRegisterMintedBound(t *testing.T) {
	t.Cleanup(resetKnown)
	resetKnown()
	Register("config-key-0123456789")
	first := "minted-first-0123456789"
	RegisterMinted(first)
	for i := range maxMinted {
		RegisterMinted(fmt.Sprintf("minted-%08d-abcdef", i))
	}
	if got, _ := String(first); got != first {
		t.Errorf("the oldest minted value is still registered: %q", got)
	}
	last := fmt.Sprintf("minted-%08d-abcdef", maxMinted-1)
	if got, _ := String(last + " config-key-0123456789"); got != "[redacted] [redacted]" {
		t.Errorf("newest minted and configured values: %q", got)
	}
	if n := len(known.sums); n != maxMinted+1 {
		t.Errorf("%d values kept, want %d", n, maxMinted+1)
	}
}

// TestRegisterConcurrent: registering while other goroutines redact (run
// it with -race).
func TestRegisterConcurrent(t *testing.T) {
	t.Cleanup(resetKnown)
	resetKnown()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				v := fmt.Sprintf("value-%d-%04d-opaque", g, i)
				RegisterMinted(v)
				if got, _ := String("x " + v); strings.Contains(got, v) {
					t.Errorf("%q survived right after it was registered: %q", v, got)
					return
				}
			}
		}()
	}
	wg.Wait()
}
