package workflow

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
)

// TestProjectInstructionsContained: project.instructions reads only a
// regular file inside the checkout (or worktree). A symlink out of the
// root, a FIFO, a directory or a device is reported unavailable and never
// read; a symlink that stays inside is followed; a FIFO never hangs the
// call.
func TestProjectInstructionsContained(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(secret, []byte("root:x:0:0:SECRET-OUTSIDE-THE-ROOT\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		make   func(t *testing.T, root string)
		status string
		source string
		text   string
	}{
		{"regular file", func(t *testing.T, root string) { write(t, root, "AGENTS.md", "be careful") }, "available", "AGENTS.md", "be careful"},
		{"symlink out of the root", func(t *testing.T, root string) { link(t, secret, filepath.Join(root, "AGENTS.md")) }, "unavailable", "AGENTS.md", ""},
		{"relative symlink out of the root", func(t *testing.T, root string) {
			rel, _ := filepath.Rel(root, secret)
			link(t, rel, filepath.Join(root, "AGENTS.md"))
		}, "unavailable", "AGENTS.md", ""},
		{"symlink inside the root", func(t *testing.T, root string) {
			write(t, root, "docs/agents.md", "inside")
			link(t, "docs/agents.md", filepath.Join(root, "CLAUDE.md"))
		}, "available", "CLAUDE.md", "inside"},
		{"fifo", func(t *testing.T, root string) {
			if err := syscall.Mkfifo(filepath.Join(root, "CLAUDE.md"), 0o644); err != nil {
				t.Skip("mkfifo:", err)
			}
		}, "unavailable", "CLAUDE.md", ""},
		{"directory", func(t *testing.T, root string) {
			if err := os.Mkdir(filepath.Join(root, "AGENTS.md"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, "unavailable", "AGENTS.md", ""},
		{"device", func(t *testing.T, root string) { link(t, "/dev/zero", filepath.Join(root, "AGENTS.md")) }, "unavailable", "AGENTS.md", ""},
		{"none", func(t *testing.T, root string) {}, "not_found", "", ""},
		{"too long", func(t *testing.T, root string) { write(t, root, "AGENTS.md", strings.Repeat("x", maxMaterial+100)) }, "available", "AGENTS.md", strings.Repeat("x", maxMaterial)},
	}
	for _, c := range cases {
		for _, mode := range []string{"checkout", "worktree"} {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				root := t.TempDir()
				c.make(t, root)
				r := &WorkResult{Project: &continuo.Project{Root: root}}
				if mode == "worktree" {
					r = &WorkResult{Project: &continuo.Project{Root: t.TempDir()}, Worktree: root}
				}
				done := make(chan Material, 1)
				go func() { done <- projectInstructions(r) }()
				var m Material
				select {
				case m = <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("reading the project instructions hangs")
				}
				if m.Status != c.status || m.Source != c.source || m.Text != c.text {
					t.Errorf("got status %q source %q text %.40q; want %q %q %.40q", m.Status, m.Source, m.Text, c.status, c.source, c.text)
				}
				if strings.Contains(m.Text, "SECRET-OUTSIDE") {
					t.Error("a file outside the root was read")
				}
				if c.name == "too long" && !m.Truncated {
					t.Error("a cut text is not marked truncated")
				}
			})
		}
	}
}

func write(t *testing.T, root, name, text string) {
	t.Helper()
	p := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func link(t *testing.T, target, at string) {
	t.Helper()
	if err := os.Symlink(target, at); err != nil {
		t.Fatal(err)
	}
}
