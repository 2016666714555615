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
// String is idempotent. Every rule skips values that already are
// "[redacted]"; the shape rules (URL password, Bearer, key prefixes) match
// no '[' or ']' and do not look at their neighbours (the one exception,
// Continuo's "cto_", runs after the others), so no replacement can turn a
// non-match into a match on a second pass. FuzzString checks this, and that
// a planted key never survives wherever it lands.
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
	// The whole-block and structural rules run first, so that a URL keeps
	// its user and host and a header keeps its scheme word; the free-standing
	// token shapes run next; the name=value rule runs last so that it sees
	// values the earlier rules already replaced and leaves them alone.
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
// so it cannot swallow the text around a URL. Brackets are not allowed in
// userinfo (RFC 3986), and excluding them means a match can never contain an
// earlier "[redacted]", which keeps the rule idempotent.
var urlRE = regexp.MustCompile("[A-Za-z][A-Za-z0-9+.-]*://[^\\s:/?#@\"'`\\[\\]]*:([^\\s/?#\"'`\\[\\]]+)@")

func redactURLPasswords(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return replaceGroup(s, urlRE, 1, func(string) bool { return true })
}

// bearerRE matches "Bearer <token>" (RFC 6750 token68 characters, at least
// eight of them, so "Bearer abc" in an example stays readable). It has no
// word boundary before "bearer" on purpose: every rule that runs before the
// name=value rule looks only at the characters it matches, never at their
// neighbours, so a later replacement cannot turn a non-match into a match.
var bearerRE = regexp.MustCompile(`(?i)bearer[ \t]+([A-Za-z0-9._~+/=-]{8,})`)

// proseWordRE matches what follows "bearer" in prose: lower-case words such
// as "authentication" or "token-based". Real tokens carry digits, capitals or
// punctuation, so this costs almost nothing in recall. It also matches every
// prefix of such words ("token-"), because a later rule may cut the word
// short with "[redacted]" and the rule must then still say "prose".
var proseWordRE = regexp.MustCompile(`^[a-z]+(?:[-/][a-z]+)*(?:[-/]|\.*)$`)

func redactBearer(s string) string {
	return replaceGroup(s, bearerRE, 1, func(tok string) bool { return !proseWordRE.MatchString(tok) })
}

// tokenRule is a credential recognisable by its own shape. hints are
// literals one of which every match contains; they let the common text
// without any of them skip the regexp entirely.
type tokenRule struct {
	hints []string
	re    *regexp.Regexp
}

// tokenRules have no left boundary on purpose: a key glued to a preceding
// word ("mykeysk-...") is still a key, and the prefixes are rare enough in
// prose that this costs no false positives. Generic "sk-" must contain a run
// of 16 letters/digits, so that slugs like "task-management-overview" (words
// ending in "sk") are not taken for keys; real keys are long random runs.
// None of the character classes contains '[' or ']', so a match can never
// include an earlier "[redacted]".
var tokenRules = []tokenRule{
	{[]string{"sk-"}, regexp.MustCompile(`sk-(?:ant-[A-Za-z0-9_-]{16,}|proj-[A-Za-z0-9_-]{16,}|[A-Za-z0-9_-]*?[A-Za-z0-9]{16}[A-Za-z0-9_-]*)`)},
	{[]string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}, regexp.MustCompile(`g(?:h[pousr]_[A-Za-z0-9]{20,}|ithub_pat_[A-Za-z0-9_]{20,})`)},
	{[]string{"AKIA", "ASIA"}, regexp.MustCompile(`A(?:KIA|SIA)[0-9A-Z]{16}`)},
	{[]string{"xox"}, regexp.MustCompile(`xox[abprs]-[A-Za-z0-9-]{10,}`)},
	{[]string{"AIza"}, regexp.MustCompile(`AIza[0-9A-Za-z_-]{35}`)},
	{[]string{"eyJ"}, regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*`)},
}

func redactTokens(s string) string {
	for _, r := range tokenRules {
		for _, h := range r.hints {
			if strings.Contains(s, h) {
				s = r.re.ReplaceAllLiteralString(s, Placeholder)
				break
			}
		}
	}
	// Continuo's own tokens run last: they are the one shape that looks at
	// its left neighbour, so every other replacement must already be done.
	return redactContinuoTokens(s)
}

// redactContinuoTokens removes Continuo tokens: "cto_" and at least 16 token
// characters. Plain "cto_" needs a non-alphanumeric character (or the start
// of the text) before it, so identifiers like "de_facto_standard_for_all"
// survive; the documented personal-access-token form "cto_pat_" is redacted
// wherever it appears. This is a hand-written scan rather than a regexp
// because RE2 has no look-behind, and because a rejected candidate may hide
// a real token later in the same run ("de_facto_cto_pat_...").
func redactContinuoTokens(s string) string {
	const prefix, pat, minLen = "cto_", "cto_pat_", 16
	var b strings.Builder
	last, runEnd := 0, 0
	for i := 0; ; {
		k := strings.Index(s[i:], prefix)
		if k < 0 {
			break
		}
		o := i + k
		// All characters from a previous candidate to runEnd are token
		// characters, so a candidate inside that run ends where it does:
		// reusing runEnd keeps the scan linear on "xcto_xcto_xcto_...".
		if o >= runEnd {
			runEnd = o + len(prefix)
			for runEnd < len(s) && isTokenChar(s[runEnd]) {
				runEnd++
			}
		}
		body := runEnd - o - len(prefix)
		if body < minLen {
			i = runEnd // later candidates in this run are shorter still
			continue
		}
		boundary := o == 0 || !(isLetter(s[o-1]) || isDigit(s[o-1]))
		if !boundary && !(strings.HasPrefix(s[o:], pat) && runEnd-o-len(pat) >= minLen) {
			i = o + 1
			continue
		}
		b.WriteString(s[last:o])
		b.WriteString(Placeholder)
		last, i = runEnd, runEnd
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func isTokenChar(c byte) bool { return isLetter(c) || isDigit(c) || c == '_' || c == '-' }

// replaceGroup replaces capture group g of every match of re with the
// placeholder when redact(group) says so. A group that already is the
// placeholder is left as it is, which keeps the rule idempotent.
func replaceGroup(s string, re *regexp.Regexp, g int, redact func(string) bool) string {
	idx := re.FindAllStringSubmatchIndex(s, -1)
	if idx == nil {
		return s
	}
	var b strings.Builder
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

// redactAssignments redacts the values of secret-named assignments:
// "API_KEY=abc", `export OPENAI_API_KEY="..."`, "password: hunter2",
// `"client_secret": "x"`, "token := ...", "'secret' => ...". It is driven by
// the separators (":" "=" ":=" "=>" "==") rather than by a regexp over names,
// because separators are rare in prose and a regexp without a literal prefix
// would try a match at every byte.
//
// The name is the run of [A-Za-z0-9_.-] before the separator, optionally
// followed by a closing quote (also the \" of JSON inside a string) or by
// Markdown bold ("**Password**:"). Whether it names a secret, and where the
// value ends, is decided by secretName and valueSpan.
func redactAssignments(s string) string {
	var b strings.Builder
	last := 0 // end of the last replacement: names never start before it
	for i := 0; i < len(s); {
		k := strings.IndexAny(s[i:], ":=")
		if k < 0 {
			break
		}
		p := i + k
		sepEnd := p + 1
		switch {
		case s[p] == ':' && sepEnd < len(s) && s[sepEnd] == '=':
			sepEnd++
		case s[p] == '=' && sepEnd < len(s) && s[sepEnd] == '>':
			sepEnd++
		case s[p] == '=':
			for sepEnd < len(s) && sepEnd-p < 3 && s[sepEnd] == '=' {
				sepEnd++
			}
		}
		i = sepEnd // by default scanning goes on after this separator
		sep := s[p:sepEnd]
		if sep == ":" && ((sepEnd < len(s) && s[sepEnd] == ':') || (p > 0 && s[p-1] == ':')) {
			continue // Rust/C++ paths such as Key::new are not assignments
		}
		nameStart, nameEnd := nameBefore(s, p, last)
		if nameStart == nameEnd || !secretName(s[nameStart:nameEnd]) || lookupKey(s, nameStart, nameEnd, last) {
			continue
		}
		if nameStart >= 3 && s[nameStart-3:nameStart] == "://" {
			continue // userinfo of a URL: redactURLPasswords owns it
		}
		vs, ve, ok := valueSpan(s, skipSpaces(s, sepEnd), s[nameStart:nameEnd], sep)
		if !ok {
			continue
		}
		b.WriteString(s[last:vs])
		b.WriteString(Placeholder)
		last, i = ve, ve
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// nameBefore finds the name that ends before the separator at p, not
// reaching back past floor (the end of the previous replacement). It
// returns an empty span when there is none.
func nameBefore(s string, p, floor int) (start, end int) {
	j := p
	for j > floor && (s[j-1] == ' ' || s[j-1] == '\t') {
		j--
	}
	if j > floor && (s[j-1] == '"' || s[j-1] == '\'' || s[j-1] == '`') {
		j--
		if j > floor && s[j-1] == '\\' {
			j--
		}
	} else {
		for n := 0; n < 2 && j > floor && s[j-1] == '*'; n++ {
			j--
		}
	}
	end = j
	for j > floor && isNameChar(s[j-1]) {
		j--
	}
	return j, end
}

// lookupKey reports whether the name "key" is the last word of a phrase
// such as "Primary key: id" or "sort key: created_at", which names a lookup
// key and not a secret (secretName sees the same for primary_key).
func lookupKey(s string, nameStart, nameEnd, floor int) bool {
	if !strings.EqualFold(s[nameStart:nameEnd], "key") {
		return false
	}
	j := nameStart
	for j > floor && s[j-1] == ' ' {
		j--
	}
	end := j
	for j > floor && isLetter(s[j-1]) {
		j--
	}
	return end < nameStart && keyKinds[strings.ToLower(s[j:end])]
}

func isNameChar(c byte) bool {
	return isLetter(c) || isDigit(c) || c == '_' || c == '.' || c == '-'
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
