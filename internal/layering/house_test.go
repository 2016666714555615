package layering_test

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// architecture is the document whose section "The house" describes every
// room (see room) in a paragraph of its own.
const architecture = "../../docs/ARCHITECTURE.md"

// roomHeading is how a paragraph of the house names its room and the
// room's place: **`internal/oauth`** (service, rank 1).
var roomHeading = regexp.MustCompile("^\\*\\*`([^`]+)`\\*\\* \\(([^)]+)\\)\\.")

// houseParagraphs returns the rooms the section "## The house" of text
// describes, each with the place its paragraph states, in their order.
func houseParagraphs(text string) (names, places []string, err error) {
	_, section, ok := strings.Cut(text, "\n## The house\n")
	if !ok {
		return nil, nil, fmt.Errorf("no section \"## The house\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, para := range strings.Split(section, "\n\n") {
		para = strings.TrimSpace(para)
		if !strings.HasPrefix(para, "**`") {
			continue
		}
		m := roomHeading.FindStringSubmatch(para)
		if m == nil {
			return nil, nil, fmt.Errorf("a paragraph of the house does not start as **`room`** (layer).: %.60q", para)
		}
		names, places = append(names, m[1]), append(places, m[2])
	}
	return names, places, nil
}

// place is what the house says of a room's place: its layer and, for a
// service, its rank.
func place(r string) string {
	if rank, ok := services[r]; ok && layers[r] == layerService {
		return fmt.Sprintf("%s, rank %d", layerNames[layerService], rank)
	}
	return layerNames[layers[r]]
}

// roomName is how the house names a room: its path, or for the root
// package its name.
func roomName(r string) string {
	if r == "" {
		return "continuo"
	}
	return r
}

// checkHouse returns what the house of text says wrongly, one line each.
func checkHouse(text string) []string {
	names, places, err := houseParagraphs(text)
	if err != nil {
		return []string{err.Error()}
	}
	var bad []string
	seen := map[string]bool{}
	for i, n := range names {
		r := n
		if n == roomName("") {
			r = ""
		}
		switch _, placed := layers[r]; {
		case seen[n]:
			bad = append(bad, fmt.Sprintf("the house describes %s twice", n))
		case !placed || room(r) != r:
			bad = append(bad, fmt.Sprintf("the house describes %s, which is no room of the layering table", n))
		case places[i] != place(r):
			bad = append(bad, fmt.Sprintf("the house places %s in (%s); the layering table in (%s)", n, places[i], place(r)))
		}
		seen[n] = true
	}
	for r := range layers {
		if room(r) == r && !seen[roomName(r)] {
			bad = append(bad, fmt.Sprintf("the house has no paragraph for the room %s (%s)", roomName(r), place(r)))
		}
	}
	slices.Sort(bad)
	return bad
}

// TestHouse holds docs/ARCHITECTURE.md's section "The house" to the
// layering table: a paragraph for every room, none for anything else, each
// in the layer (and rank) the table gives it.
func TestHouse(t *testing.T) {
	text, err := os.ReadFile(architecture)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range checkHouse(string(text)) {
		t.Error(b)
	}
}

// TestHouseRefuses: the check fails on a missing room, an unknown one and
// a wrong layer.
func TestHouseRefuses(t *testing.T) {
	text, err := os.ReadFile(architecture)
	if err != nil {
		t.Fatal(err)
	}
	s := string(text)
	for name, c := range map[string]struct{ old, new, want string }{
		"missing":     {"**`internal/proc`** (store/support).", "The process room.", "no paragraph for the room internal/proc"},
		"unknown":     {"**`internal/proc`** (store/support).", "**`internal/procs`** (store/support).", "internal/procs, which is no room"},
		"wrong layer": {"**`internal/oauth`** (service, rank 1).", "**`internal/oauth`** (edge).", "places internal/oauth in (edge)"},
		"nested":      {"**`internal/proc`** (store/support).", "**`internal/store/sqlite`** (store/support).", "internal/store/sqlite, which is no room"},
	} {
		if !strings.Contains(s, c.old) {
			t.Fatalf("%s: the house has no %q", name, c.old)
		}
		bad := checkHouse(strings.Replace(s, c.old, c.new, 1))
		if !slices.ContainsFunc(bad, func(b string) bool { return strings.Contains(b, c.want) }) {
			t.Errorf("%s: %q, want a line with %q", name, bad, c.want)
		}
	}
}
