package cli

import "testing"

func TestIsGoRunBuild(t *testing.T) {
	for path, want := range map[string]bool{
		"/tmp/go-build2651233430/b001/exe/continuo": true,
		"/home/me/go/bin/continuo":                  false,
		"/usr/local/bin/continuo":                   false,
		"/home/me/.cache/go-build/x/continuo":       true,
	} {
		if got := isGoRunBuild(path); got != want {
			t.Errorf("%s: %v", path, got)
		}
	}
}
