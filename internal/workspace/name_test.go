package workspace

import (
	"strings"
	"testing"
)

func TestProjectName(t *testing.T) {
	for in, want := range map[string]string{
		"myrepo": "myrepo", "My Repo!": "My-Repo-", "a.b_c-d": "a.b_c-d", "": "project", ".": "project", "..": "project",
		"héllo": "h-llo", strings.Repeat("x", 70): strings.Repeat("x", 64),
	} {
		if got := ProjectName(in); got != want {
			t.Errorf("ProjectName(%q) = %q, want %q", in, got, want)
		}
	}
}
