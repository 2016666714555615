package store

import (
	"slices"
	"strings"
	"unicode"
)

// Text search (list_session_messages' query) is a word match, the same on
// every engine: a text is split into words at every character that is not a
// letter, a number or a private-use character, and lower-cased; a query
// matches an entry whose text holds every word of the query, in any order,
// as whole words. No stemming, no prefixes, no diacritic folding.
//
// Continuo does the splitting and the case folding itself (SearchDoc,
// SearchWords), so that the engines' tokenizers only ever see lower-case
// words separated by single spaces, which SQLite FTS5 (unicode61,
// remove_diacritics 0) and PostgreSQL (to_tsvector('simple', …)) both split
// into exactly those words.
//
// What is indexed is the redacted text (the drivers' writers call
// SearchDoc on redact.String of the text): a secret is never searchable,
// so no query can probe for one.

// MaxSearchWords bounds how many words a query may hold.
const MaxSearchWords = 32

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r)
}

func notWordRune(r rune) bool { return !isWordRune(r) }

// SearchWords splits s into its lower-case words, in order, duplicates
// removed.
func SearchWords(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(s, notWordRune) {
		w = strings.ToLower(w)
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// SearchDoc is the stored search text of s: its lower-case words separated
// by single spaces, with a space before the first and after the last (so
// that a word can also be found with LIKE '% word %').
func SearchDoc(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte(' ')
	for _, w := range strings.FieldsFunc(s, notWordRune) {
		b.WriteString(strings.ToLower(w))
		b.WriteByte(' ')
	}
	return b.String()
}
