package run

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// lastLines keeps whole lines when it can, else whole runes, within both
// bounds.
func TestLastLines(t *testing.T) {
	for _, tc := range []struct {
		text         string
		lines, bytes int
		want         string
	}{
		{"", 3, 100, ""},
		{"a\nb\nc\nd\n", 2, 100, "c\nd"},
		{"a\nb\n", 5, 100, "a\nb"},
		{"aaaa\nbbbb\ncccc", 3, 9, "bbbb\ncccc"},
		{"aaaa\nbbbb\ncccc", 3, 8, "cccc"},
		{strings.Repeat("é", 10), 3, 5, "éé"},
	} {
		got := lastLines(tc.text, tc.lines, tc.bytes)
		if got != tc.want || len(got) > tc.bytes || !utf8.ValidString(got) {
			t.Errorf("lastLines(%q, %d, %d) = %q, want %q", tc.text, tc.lines, tc.bytes, got, tc.want)
		}
	}
}
