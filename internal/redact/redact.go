// Package redact removes credentials from text before a model reads it.
//
// Continuo stores notes that AI assistants write, and those notes end up in
// handoff briefs, capsules and delegated prompts that other models read
// (CONTRACT.md §1, "Redaction"). An assistant that pasted a key into a note
// must not leak it to every later reader, so every projection passes its text
// through String.
//
// The rules are heuristics with a deliberate bias: a recognisable credential
// is always removed, even when that costs a false positive in code-like text,
// but ordinary prose ("the key decision", "token bucket", "password reset
// flow") is left alone because briefs are useless if they are full of holes.
//
// String is idempotent: every rule skips values that are already
// "[redacted]", and no rule can build a new match out of a replacement,
// because "[redacted]" contains no character any rule treats as part of a
// secret. The fuzz target FuzzString checks this, and that a planted key
// never survives.
package redact

import (
	"regexp"
	"strings"
)

// Placeholder is what every redacted span is replaced with.
const Placeholder = "[redacted]"

// String returns s with every credential-looking span replaced by
// "[redacted]", and whether anything changed.
//
// It never panics, accepts invalid UTF-8, and keeps valid UTF-8 valid (all
// matches start and end at ASCII characters or at the ends of the text).
func String(s string) (string, bool) {
	out := s
	// Order matters only for readability of the result: the whole-block and
	// structural rules run first, so that e.g. a URL keeps its user and host
	// and a header keeps its scheme; the free-standing token shapes run next,
	// and the name=value rule runs last so it sees values the earlier rules
	// already replaced and leaves them alone.
	out = redactPEM(out)
	out = redactURLPasswords(out)
	out = redactBearer(out)
	out = redactTokens(out)
	out = redactAssignments(out)
	return out, out != s
}

// pemRE matches a private key block. The END line is optional (\z) so that a
// key truncated by an excerpt limit is still removed up to the end of the
// text; (?s) lets the body span lines, and the lazy .*? stops at the first END.
// " BLOCK" covers PGP's "PRIVATE KEY BLOCK" armour.
var pemRE = regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)`)

func redactPEM(s string) string {
	if !strings.Contains(s, "-----BEGIN ") { // cheap pre-check: the common case has no key
		return s
	}
	return pemRE.ReplaceAllLiteralString(s, Placeholder)
}

// urlRE matches scheme://user:password@ and captures the password. The
// password runs to the last '@' before the host (greedy, as URL parsers read
// it) but never crosses whitespace, a path, query or fragment, or a quote,
// so it cannot swallow the text around a URL.
var urlRE = regexp.MustCompile("[A-Za-z][A-Za-z0-9+.-]*://[^\\s:/?#@\"'`]*:([^\\s/?#\"'`]+)@")

func redactURLPasswords(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return replaceGroup(s, urlRE, 1, func(string) bool { return true })
}

// bearerRE matches "Bearer <token>" (RFC 6750 token68 characters, at least
// eight of them, so "Bearer abc" in an example stays readable).
var bearerRE = regexp.MustCompile(`(?i)\bbearer[ \t]+([A-Za-z0-9._~+/=-]{8,})`)

// proseWordRE matches what follows "bearer" in prose: lower-case words such
// as "authentication" or "token-based". Real tokens carry digits, capitals or
// punctuation, so this costs almost nothing in recall.
var proseWordRE = regexp.MustCompile(`^[a-z]+(?:[-/][a-z]+)*\.*$`)

func redactBearer(s string) string {
	return replaceGroup(s, bearerRE, 1, func(tok string) bool { return !proseWordRE.MatchString(tok) })
}

// tokenRE matches credentials recognisable by their own shape, wherever they
// appear. Most alternatives have no left boundary on purpose: a key glued to
// a preceding word ("keysk-...") is still a key, and the prefixes are rare
// enough in prose that this does not cost false positives. The exceptions:
//
//   - generic "sk-" must contain a run of 16 letters/digits, so that slugs
//     like "task-management-overview" (words ending in "sk") are not taken for
//     keys; real keys are long random runs.
//   - generic "cto_" needs a non-alphanumeric character (or the start of the
//     text) before it, so "de_facto_standard_..." survives; the documented
//     Continuo form "cto_pat_" needs no boundary.
//
// Group 1 is the secret; the generic cto_ alternative also matches its
// boundary character, which is kept.
var tokenRE = regexp.MustCompile(`(` +
	`sk-ant-[A-Za-z0-9_-]{16,}` +
	`|sk-proj-[A-Za-z0-9_-]{16,}` +
	`|sk-[A-Za-z0-9_-]*?[A-Za-z0-9]{16}[A-Za-z0-9_-]*` +
	`|cto_pat_[A-Za-z0-9_-]{16,}` +
	`|gh[pousr]_[A-Za-z0-9]{20,}` +
	`|github_pat_[A-Za-z0-9_]{20,}` +
	`|(?:AKIA|ASIA)[0-9A-Z]{16}` +
	`|xox[abprs]-[A-Za-z0-9-]{10,}` +
	`|AIza[0-9A-Za-z_-]{35}` +
	`|eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*` +
	`)|(?:^|[^A-Za-z0-9])(cto_[A-Za-z0-9_-]{16,})`)

func redactTokens(s string) string {
	idx := tokenRE.FindAllStringSubmatchIndex(s, -1)
	if idx == nil {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, m := range idx {
		start, end := m[2], m[3]
		if start < 0 {
			start, end = m[4], m[5]
		}
		b.WriteString(s[last:start])
		b.WriteString(Placeholder)
		last = end
	}
	b.WriteString(s[last:])
	return b.String()
}

// replaceGroup replaces capture group g of every match of re with the
// placeholder when keep(group) says so. A group that already is the
// placeholder is left as it is, which keeps the rule idempotent.
func replaceGroup(s string, re *regexp.Regexp, g int, redact func(string) bool) string {
	idx := re.FindAllStringSubmatchIndex(s, -1)
	if idx == nil {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, m := range idx {
		start, end := m[2*g], m[2*g+1]
		if start < 0 || s[start:end] == Placeholder || !redact(s[start:end]) {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(Placeholder)
		last = end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// assignRE finds "name <separator>" candidates: an identifier, optionally
// quoted (also JSON-in-a-string \"name\") or bold in Markdown (**name**:),
// followed by ":", "=", ":=", "=>" or "==". Whether the name is secret and
// where the value ends is decided in Go, because RE2 has no look-around and
// because the value must be parsed with quotes and escapes in mind.
var assignRE = regexp.MustCompile("(?:\\\\?[\"'`])?([A-Za-z0-9_.-]+)(?:\\\\?[\"'`]|\\*{1,2})?[ \\t]*(:=|=>|={1,3}|:)[ \\t]*")

func redactAssignments(s string) string {
	var b strings.Builder
	last, pos := 0, 0
	for pos < len(s) {
		m := assignRE.FindStringSubmatchIndex(s[pos:])
		if m == nil {
			break
		}
		for i := range m {
			if m[i] >= 0 {
				m[i] += pos
			}
		}
		nameStart, nameEnd := m[2], m[3]
		sep := s[m[4]:m[5]]
		valStart := m[1]
		// By default scanning resumes right after the separator, so that in
		// "note: password=x" the rejected "note" does not hide "password".
		pos = valStart
		if !secretName(s[nameStart:nameEnd]) {
			continue
		}
		if sep == ":" && (strings.HasPrefix(s[m[4]+1:], ":") || (m[4] > 0 && s[m[4]-1] == ':')) {
			continue // Rust/C++ paths such as Key::new are not assignments
		}
		if nameStart >= 3 && s[nameStart-3:nameStart] == "://" {
			continue // userinfo of a URL: redactURLPasswords owns it
		}
		vs, ve, ok := valueSpan(s, valStart, s[nameStart:nameEnd], sep)
		if !ok {
			continue
		}
		b.WriteString(s[last:vs])
		b.WriteString(Placeholder)
		last, pos = ve, ve
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// valueSpan finds the value that starts at i (after the separator) and
// reports the span to replace, or ok=false when there is nothing to redact:
// an empty value, a value already redacted, a boolean or null, a nested
// label, or prose after a colon.
func valueSpan(s string, i int, name, sep string) (start, end int, ok bool) {
	start, end, inner, quoted := scanValue(s, i)
	if !quoted && sep == ":" {
		// A type annotation ("token: str = 'x'", "apiKey: string = ...")
		// precedes the real value.
		if j := skipSpaces(s, end); isIdent(inner) && j < len(s) && s[j] == '=' && (j+1 == len(s) || s[j+1] != '=') {
			start, end, inner, quoted = scanValue(s, skipSpaces(s, j+1))
		}
	}
	scheme := false
	if !quoted && isAuthScheme(inner) {
		// "Authorization: Bearer x", "token=Basic x": keep the scheme, which
		// says nothing, and redact the credential after it.
		if j := skipSpaces(s, end); j > end && j < len(s) && !isSpace(s[j]) {
			start, end, inner, quoted = scanValue(s, j)
			scheme = true
		}
	}
	switch {
	case inner == "" || inner == Placeholder || isNullish(inner):
		return 0, 0, false
	case !quoted && isLabel(inner):
		return 0, 0, false // "auth: password: x" — the real name comes next
	case strings.EqualFold(name, "pwd") || strings.EqualFold(name, "oldpwd"):
		if strings.HasPrefix(inner, "/") {
			return 0, 0, false // the shell's working directory, not a password
		}
	}
	if !quoted && !scheme && sep == ":" && !strongName(name) && isProse(s, inner, end) {
		return 0, 0, false
	}
	if quoted {
		// Keep the quotes: the text stays syntactically what it was.
		return start + openQuoteLen(s[start:]), start + openQuoteLen(s[start:]) + len(inner), true
	}
	return start, end, true
}

// scanValue reads one value at i: a quoted string ("...", '...', `...`, or
// \"...\" inside JSON-in-a-string, with backslash escapes, ending at the
// closing quote or, when unterminated, at the end of the line) or a bare
// word ending at whitespace, a quote or a comma. inner is the value without
// its quotes.
func scanValue(s string, i int) (start, end int, inner string, quoted bool) {
	start = i
	if i >= len(s) {
		return i, i, "", false
	}
	if q := openQuoteLen(s[i:]); q > 0 {
		quote := s[i+q-1]
		j := i + q
		for j < len(s) && s[j] != '\n' {
			if q == 2 && s[j] == '\\' && j+1 < len(s) && s[j+1] == quote {
				break // the \" that closes a JSON-in-a-string value
			}
			if s[j] == '\\' && j+1 < len(s) && s[j+1] != '\n' {
				j += 2
				continue
			}
			if q == 1 && s[j] == quote {
				break
			}
			j++
		}
		inner = s[i+q : j]
		end = j
		if j < len(s) && s[j] != '\n' {
			end = j + q // include the closing quote
		}
		return start, end, inner, true
	}
	j := i
	for j < len(s) && !isSpace(s[j]) && s[j] != '"' && s[j] != '\'' && s[j] != '`' && s[j] != ',' {
		j++
	}
	return start, j, s[i:j], false
}

// openQuoteLen is the length of the opening quote at the start of s: 1 for
// a quote character, 2 for a backslash-escaped double quote, else 0.
func openQuoteLen(s string) int {
	switch {
	case s == "":
		return 0
	case s[0] == '"' || s[0] == '\'' || s[0] == '`':
		return 1
	case len(s) >= 2 && s[0] == '\\' && s[1] == '"':
		return 2
	}
	return 0
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func skipSpaces(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

func isIdent(s string) bool {
	if s == "" || !(isLetter(s[0]) || s[0] == '_') {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !isLetter(c) && !isDigit(c) && c != '_' && c != '.' && c != '[' && c != ']' {
			return false
		}
	}
	return true
}

// isLabel reports whether v is itself a "name:" label, as in
// "auth: password: hunter2", so that the real assignment after it is found.
func isLabel(v string) bool {
	return len(v) > 1 && v[len(v)-1] == ':' && isIdent(v[:len(v)-1])
}

// isProse reports whether an unquoted value after "name:" reads like a
// sentence ("Auth: implemented PAT hashing", "API key: rotated yesterday"):
// a plain word followed by another word on the same line. Secrets are rarely
// plain letters and almost never followed by more words.
func isProse(s, v string, end int) bool {
	for i := 0; i < len(v); i++ {
		if !isLetter(v[i]) {
			return false
		}
	}
	j := skipSpaces(s, end)
	return j > end && j < len(s) && (isLetter(s[j]) || isDigit(s[j]) || s[j] == '(')
}

var nullish = map[string]bool{
	"true": true, "false": true, "null": true, "nil": true, "none": true,
	"yes": true, "no": true, "on": true, "off": true, "undefined": true,
	"enabled": true, "disabled": true,
}

// isNullish reports whether v is a boolean or null: "auth: true",
// "oauth: disabled" and "api_key: null" are configuration, not secrets.
func isNullish(v string) bool { return nullish[strings.ToLower(v)] }

var authSchemes = map[string]bool{
	"bearer": true, "basic": true, "digest": true, "token": true, "negotiate": true,
	"ntlm": true, "apikey": true, "dpop": true,
}

func isAuthScheme(v string) bool { return authSchemes[strings.ToLower(v)] }

// secretStems are the name fragments that mark a secret (case-insensitive).
var secretStems = []string{"key", "token", "secret", "password", "passwd", "pwd", "credential", "auth"}

// strongStems never name anything but a secret, so prose exceptions do not
// apply to them.
var strongStems = []string{"secret", "password", "passwd", "pwd", "credential", "authoriz", "authoris"}

// benignWords contain a stem without being about secrets.
var benignWords = map[string]bool{
	"author": true, "authors": true, "authored": true, "authoring": true, "authorship": true,
	"monkey": true, "donkey": true, "turkey": true, "hockey": true, "jockey": true, "whiskey": true,
	"keyboard": true, "keyboards": true, "keyword": true, "keywords": true, "keynote": true,
	"keystroke": true, "keystrokes": true, "keyframe": true, "keyframes": true,
	"keypress": true, "keydown": true, "keyup": true, "hotkey": true, "hotkeys": true,
	// Plurals name counts and collections: max_tokens, num_keys.
	"tokens": true, "keys": true,
	"tokenizer": true, "tokenizers": true, "tokenize": true, "tokenized": true, "tokenization": true,
}

// keyKinds are words that, right before "key", make it a lookup or public
// key rather than a secret: primary_key, idempotency_key, public_key.
var keyKinds = map[string]bool{
	"primary": true, "foreign": true, "sort": true, "partition": true, "composite": true,
	"unique": true, "range": true, "cache": true, "idempotency": true, "delivery": true,
	"dedup": true, "dedupe": true, "lookup": true, "map": true, "hash": true, "row": true,
	"shard": true, "object": true, "public": true, "pub": true, "index": true,
}

// modifiers after the secret word make the name about the secret rather than
// the secret itself: token_env, password_file, key_id, token_type,
// auth_enabled, password_min_length, token_expires_in.
var modifiers = map[string]bool{
	"id": true, "ids": true, "type": true, "kind": true, "name": true, "names": true,
	"env": true, "var": true, "file": true, "path": true, "dir": true, "url": true, "uri": true,
	"endpoint": true, "host": true, "header": true, "len": true, "length": true, "size": true,
	"count": true, "limit": true, "max": true, "min": true, "ttl": true, "expiry": true,
	"expires": true, "expiration": true, "timeout": true, "age": true, "enabled": true,
	"disabled": true, "required": true, "mode": true, "method": true, "scheme": true,
	"provider": true, "format": true, "version": true, "hint": true, "prefix": true,
	"created": true, "updated": true, "rotated": true, "used": true, "usage": true,
	"budget": true, "policy": true, "rotation": true, "source": true, "location": true,
}

// secretName reports whether an assignment's name names a secret. The name
// is split into words (snake, kebab, dotted and camelCase); the last word
// holding a stem must not be a benign word or a lookup key, and no modifier
// may follow it.
func secretName(name string) bool {
	ws := words(name)
	last := -1
	for i, w := range ws {
		if benignWords[w] || (w == "key" && i > 0 && keyKinds[ws[i-1]]) {
			continue
		}
		for _, stem := range secretStems {
			if strings.Contains(w, stem) {
				last = i
				break
			}
		}
	}
	if last < 0 {
		return false
	}
	for _, w := range ws[last+1:] {
		if modifiers[w] {
			return false
		}
	}
	return true
}

// strongName reports whether name contains a stem that is never prose.
func strongName(name string) bool {
	l := strings.ToLower(name)
	for _, stem := range strongStems {
		if strings.Contains(l, stem) {
			return true
		}
	}
	return false
}

// words splits an ASCII identifier into lower-case words at non-alphanumeric
// characters and camelCase boundaries ("OPENAI_API_KEY" → openai api key,
// "apiKey" → api key, "APIKey" → api key).
func words(name string) []string {
	var out []string
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			out = append(out, strings.ToLower(name[start:end]))
		}
		start = -1
	}
	isUpper := func(c byte) bool { return c >= 'A' && c <= 'Z' }
	isLower := func(c byte) bool { return c >= 'a' && c <= 'z' }
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !isLetter(c) && !isDigit(c) {
			flush(i)
			continue
		}
		if start >= 0 && isUpper(c) {
			p := name[i-1]
			// aB starts a word; in "APIKey" the K of "Key" does too.
			if isLower(p) || isDigit(p) || (isUpper(p) && i+1 < len(name) && isLower(name[i+1])) {
				flush(i)
			}
		}
		if start < 0 {
			start = i
		}
	}
	flush(len(name))
	return out
}
