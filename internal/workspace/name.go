package workspace

import "strings"

// ProjectName is the project name a checkout directory gets: its base name
// with every character outside [A-Za-z0-9._-] made '-', at most 64 bytes
// ("project" when nothing usable is left). serve registers a checkout under
// it, and the hook finds a checkout's project by it.
func ProjectName(dir string) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '-'
	}, dir)
	if len(name) > 64 {
		name = name[:64]
	}
	if name == "" || name == "." || name == ".." {
		return "project"
	}
	return name
}
