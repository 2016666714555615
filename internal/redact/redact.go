// Package redact removes credentials from text before a model reads it.
//
// Continuo stores notes that AI assistants write, and those notes end up in
// handoff briefs, capsules and delegated prompts that other models read
// (CONTRACT.md §1, "Redaction"). An assistant that pasted a key into a note
// must not leak it to every later reader, so every projection passes its text
// through String, and error details through Value.
//
// The rules are those of gitleaks' default configuration (embedded,
// gitleaks.go), ours in the same form where a sample needs them (extra.go),
// and structural ones for what no list of shapes finds (private keys, URL
// passwords, Bearer tokens, Continuo's tokens, command-line passwords,
// secret-named assignments); values the server knows are removed by value
// (known.go). They read the text in a normal form (normalize.go) and what
// they find is replaced in the text as written. The bias is deliberate: a
// recognisable credential is always removed, but ordinary prose ("the key
// decision", "token bucket", "password reset flow") and code are left
// alone, because briefs are useless if they are full of holes. The corpus
// in testdata/corpus holds samples of every rule and text that must stay;
// docs/SECURITY.md says how well they do.
//
// String is deterministic and idempotent: it repeats its pass until the
// text no longer changes. FuzzString checks this, that valid UTF-8 stays
// valid, and that a planted key never survives wherever it lands.
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
// replaced spans start and end at rune boundaries).
func String(s string) (string, bool) { return stringWith(rules(), s) }

// stringWith is String with the rules of m.
func stringWith(m *matcher, s string) (string, bool) {
	out := s
	// One pass finds what its rules find in the text as it then stands;
	// a replacement can make a rule match on the next (a boundary after
	// "]", a value that now follows a known name), so String repeats the
	// pass until it changes nothing: String(String(s)) == String(s). Each
	// pass that changes something removes text that is not a placeholder,
	// or merges placeholders, so it ends; the bound is for safety.
	for range maxPasses {
		next := redactPass(m, out)
		if next == out {
			break
		}
		out = next
	}
	return out, out != s
}

// maxPasses bounds String's passes; in practice a text with a secret
// takes two (the second finds nothing).
const maxPasses = 8

// redactPass is one pass of every rule over s.
func redactPass(m *matcher, s string) string {
	n, changed := normalize(s)
	base := s
	if changed {
		base = n.text
	}
	// Every rule reads the same text, and what any of them finds goes: a
	// rule never sees another's placeholder in the middle of what it would
	// match (a token that one rule ends early and another reads to its
	// end). What a replacement changes for a rule's reading of the text —
	// a value now after a known name, a boundary after "]" — the next pass
	// sees.
	spans := knownSpans(base, nil)            // the values the server knows
	secrets, commands := secretSpans(m, base) // gitleaks' rules and ours
	spans = append(spans, secrets...)
	spans = append(spans, pemSpans(base)...)
	spans = append(spans, puttySpans(base)...)
	spans = append(spans, urlPasswordSpans(base)...)
	spans = append(spans, bearerTokens(base, bearerCredential)...)
	spans = append(spans, continuoTokenSpans(base)...)
	spans = append(spans, commandSpansOf(base, commands)...)
	spans = append(spans, assignmentSpans(base)...)
	if len(spans) == 0 {
		return s
	}
	if changed {
		for i, sp := range spans {
			spans[i] = n.back(sp)
		}
	}
	return replaceSpans(s, spans)
}

// pemRE matches a private key block. The END line is optional (\z) so that a
// key truncated by an excerpt limit is still removed up to the end of the
// text; (?s) lets the body span lines, and the lazy .*? stops at the first END.
// " BLOCK" covers PGP's "PRIVATE KEY BLOCK" armour. (gitleaks private-key,
// detect-secrets private_key.)
var pemRE = regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)`)

// puttyRE matches the private half of a PuTTY key file
// (PuTTY-User-Key-File-2/3; detect-secrets private_key): the whole base64
// lines after "Private-Lines: N" (group 1). The label, the public half and
// the MAC stay.
var puttyRE = regexp.MustCompile(`Private-Lines: *[0-9]+\r?\n([A-Za-z0-9+/=]+(?:\r?\n[A-Za-z0-9+/=]+)*)(?:\r?\n|\z)`)

func pemSpans(s string) []span {
	if !strings.Contains(s, "-----BEGIN ") { // cheap pre-check: the common case has no key
		return nil
	}
	var spans []span
	for _, m := range pemRE.FindAllStringIndex(s, -1) {
		spans = append(spans, span{m[0], m[1]})
	}
	return spans
}

func puttySpans(s string) []span {
	if !strings.Contains(s, "Private-Lines:") {
		return nil
	}
	var spans []span
	for _, m := range puttyRE.FindAllStringSubmatchIndex(s, -1) {
		spans = append(spans, span{m[2], m[3]})
	}
	return spans
}

// urlPasswordSpans finds the password of scheme://user:password@host
// (detect-secrets basic_auth; gitleaks finds them only through its generic
// rule). It is a scan from each "://", with the meaning of the regexp
//
//	[A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@"'`\[\]]*:([^\s/?#"'`\[\]]+)@
//
// (TestURLScanMatchesRegexp holds it to that): the password runs to the last
// '@' before the host (greedy, as URL parsers read it) but never crosses
// whitespace, a path, query or fragment, or a quote, so it cannot swallow the
// text around a URL. Brackets are not allowed in userinfo (RFC 3986), and
// excluding them means a match can never contain an earlier "[redacted]",
// which keeps the rule idempotent. A regexp that must find its scheme
// without a literal to start from tried a match at every letter of the
// text; it was most of String's cost.
func urlPasswordSpans(s string) []span {
	if !strings.Contains(s, "://") {
		return nil
	}
	spans := urlPasswords(s)
	out := spans[:0]
	for _, sp := range spans {
		// A document's "scheme://user:password@host" shows where a
		// password goes; it holds none.
		if v := s[sp.start:sp.end]; !placeholderValue(v) && !urlPlaceholders[strings.ToLower(v)] {
			out = append(out, sp)
		}
	}
	return out
}

// urlPlaceholders are the words that stand for a URL's password in
// documentation.
var urlPlaceholders = map[string]bool{"password": true, "pass": true, "pwd": true, "passwd": true, "secret": true}

// urlPasswords returns the password span of every URL with userinfo, as
// FindAllStringSubmatchIndex would for the regexp above.
func urlPasswords(s string) []span {
	var out []span
	last := 0 // end of the last match
	for i := last; ; {
		k := strings.Index(s[i:], "://")
		if k < 0 {
			return out
		}
		p := i + k
		i = p + 1
		// The scheme: the leftmost letter of the run of scheme characters
		// that ends at p, not before the last match.
		q := p
		for q > last && isSchemeChar(s[q-1]) {
			q--
		}
		for q < p && !isLetter(s[q]) {
			q++
		}
		if q == p {
			continue
		}
		// user, then ':', then the password up to the last '@' of its run.
		u := p + 3
		for u < len(s) && isUserChar(s[u]) {
			u++
		}
		if u == len(s) || s[u] != ':' {
			continue
		}
		pw := u + 1
		r, at := pw, -1
		for r < len(s) && isPasswordChar(s[r]) {
			if s[r] == '@' && r > pw {
				at = r
			}
			r++
		}
		if at < 0 {
			continue
		}
		out = append(out, span{pw, at})
		last = at + 1
		i = last
	}
}

func isSchemeChar(c byte) bool {
	return isLetter(c) || isDigit(c) || c == '+' || c == '.' || c == '-'
}

// isPasswordChar is [^\s/?#"'`\[\]]; isUserChar also excludes ':' and '@'.
func isPasswordChar(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\v', '\f', '/', '?', '#', '"', '\'', '`', '[', ']':
		return false
	}
	return true
}

func isUserChar(c byte) bool { return c != ':' && c != '@' && isPasswordChar(c) }

// bearerTokens (with keep rejecting prose) finds the token of "Bearer <token>" (RFC 6750 token68
// characters, at least eight of them, so "Bearer abc" in an example stays
// readable). It is a scan with the meaning of the regexp
//
//	(?i)bearer[ \t]+([A-Za-z0-9._~+/=-]{8,})
//
// (TestBearerScanMatchesRegexp). It has no word boundary before "bearer" on
// purpose: every rule that runs before the name=value rule looks only at the
// characters it matches, never at their neighbours, so a later replacement
// cannot turn a non-match into a match.
//
// A token that reads as prose (see proseWordRE) stays, and unlike a regexp
// match it does not hide what follows: in "bearer token-based-bearer
// AccountKey=x" the second "bearer" still counts. (Hidden, it would surface
// on a second pass once another rule removed the first: not idempotent.)
// bearerTokens returns the token span of every "bearer <token>" for which
// keep(token) is true; a token it rejects is not consumed.
func bearerTokens(s string, keep func(string) bool) []span {
	var out []span
	lower, upper := -1, -1 // the next 'b' and 'B' at or after i, once known
	for i := 0; i+6 <= len(s); i++ {
		// IndexByte is vectorised: finding the b's is most of the work.
		if lower < i {
			if lower = strings.IndexByte(s[i:], 'b'); lower < 0 {
				lower = len(s)
			} else {
				lower += i
			}
		}
		if upper < i {
			if upper = strings.IndexByte(s[i:], 'B'); upper < 0 {
				upper = len(s)
			} else {
				upper += i
			}
		}
		if i = min(lower, upper); i+6 > len(s) {
			break
		}
		if !strings.EqualFold(s[i:i+6], "bearer") {
			continue
		}
		j := i + 6
		for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
			j++
		}
		if j == i+6 {
			continue
		}
		k := j
		for k < len(s) && isToken68(s[k]) {
			k++
		}
		if k-j < 8 || !keep(s[j:k]) {
			continue
		}
		out = append(out, span{j, k})
		i = k - 1
	}
	return out
}

func isToken68(c byte) bool {
	return isLetter(c) || isDigit(c) || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' || c == '=' || c == '-'
}

// proseWordRE matches what follows "bearer" in prose: lower-case words such
// as "authentication" or "token-based". Real tokens carry digits, capitals or
// punctuation, so this costs almost nothing in recall. It also matches every
// prefix of such words ("token-"), because a later rule may cut the word
// short with "[redacted]" and the rule must then still say "prose".
var proseWordRE = regexp.MustCompile(`^[a-z]+(?:[-/][a-z]+)*(?:[-/]|\.*)$`)

// bearerCredential says whether what follows "bearer" is taken for a
// credential: not a word of prose, not a placeholder of a document
// ("Bearer cto_pat_…", "Bearer <token>"), not a command-line option
// ("-bench Bearer -benchtime 2s").
func bearerCredential(tok string) bool {
	return !proseWordRE.MatchString(tok) && !placeholderValue(tok) && tok[0] != '-'
}

// assignmentSpans finds the values of secret-named assignments:
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
func assignmentSpans(s string) []span {
	var spans []span
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
			continue // userinfo of a URL: urlPasswordSpans owns it
		}
		if v := skipSpaces(s, sepEnd); v < len(s) && insideQuotes(s, p, s[v]) {
			continue // `"TOKEN=" + token`, "`-u key:`": the quote after the separator closes the name's string
		}
		vs, ve, ok := valueSpan(s, skipSpaces(s, sepEnd), s[nameStart:nameEnd], sep)
		if !ok {
			continue
		}
		spans = append(spans, span{vs, ve})
		last, i = ve, ve
	}
	return spans
}

// insideQuotes reports whether position i of its line (a separator) is
// inside a span quoted with q ('"', '\” or '`'): an odd number of them
// come before it. (A quoted name, `"password": "x"`, brings two.)
func insideQuotes(s string, i int, q byte) bool {
	if q != '"' && q != '\'' && q != '`' {
		return false
	}
	start := strings.LastIndexByte(s[:i], '\n') + 1
	return strings.Count(s[start:i], string(q))%2 == 1
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
	strong := strongName(name)
	switch {
	case inner == "" || inner == Placeholder || isNullish(inner) || placeholderValue(inner):
		return 0, 0, false
	case !quoted && (isLabel(inner) || isAuthScheme(inner)):
		return 0, 0, false // "auth: password: x" — the real name comes next; "Authorization: Bearer" alone
	case !quoted && codeValue(s, name, inner, end, strong):
		return 0, 0, false
	case scheme && strings.ToLower(inner) == inner && isWord(strings.TrimRight(inner, ".,;:)")) &&
		(strings.TrimRight(inner, ".,;:)") != inner || isProse(s, inner, end)):
		return 0, 0, false // "an Authorization: Basic header." — a word of a sentence, not a credential
	case !strong && weakValue(name, inner):
		return 0, 0, false
	case strings.EqualFold(name, "pwd") || strings.EqualFold(name, "oldpwd"):
		if strings.HasPrefix(inner, "/") {
			return 0, 0, false // the shell's working directory, not a password
		}
	}
	if !quoted && !scheme && sep == ":" && !strong && isProse(s, inner, end) {
		return 0, 0, false
	}
	if quoted {
		// Keep the quotes: the text stays syntactically what it was.
		return start + openQuoteLen(s[start:]), start + openQuoteLen(s[start:]) + len(inner), true
	}
	return start, end, true
}

// placeholderValue reports whether v stands for a value in documentation
// and templates rather than being one: an ellipsis (NFKC makes "…" three
// dots), "<token>", a variable ($VAR, ${VAR}, %VAR%), a template
// ({{ .Token }}), a format verb (%s, %w, %08d) — the shapes of gitleaks'
// global allowlist, and the ellipses of this project's own docs
// ("cto_pat_…", "KEY=…"). (Scans, not a regexp: it is asked of every
// value.)
func placeholderValue(v string) bool {
	v = strings.TrimRight(v, "\\\"'`")
	switch {
	case strings.Contains(v, "…"), strings.Contains(v, "..."):
		return true
	case len(v) >= 3 && v[0] == '<' && v[len(v)-1] == '>':
		return !strings.ContainsAny(v[1:len(v)-1], "<>")
	case len(v) >= 4 && strings.HasPrefix(v, "{{") && strings.HasSuffix(v, "}}"):
		return true
	case len(v) >= 2 && v[0] == '$':
		name := v[1:]
		if name[0] == '{' {
			if name[len(name)-1] != '}' {
				return false
			}
			name = name[1 : len(name)-1]
		}
		return isIdent(name) && !strings.ContainsAny(name, ".[]")
	case len(v) >= 3 && v[0] == '%' && v[len(v)-1] == '%':
		return isIdent(v[1:len(v)-1]) && !strings.ContainsAny(v, ".[]")
	case len(v) >= 2 && v[0] == '%' && isLetter(v[len(v)-1]):
		return strings.Trim(v[1:len(v)-1], "-+# 0123456789.*") == "" // a format verb
	}
	return false
}

// codeExpr reports whether v begins a call, a composite literal or an
// index ("getenv(name", "secretKind{", "map[string]bool{", "[]string{"),
// or is a name that the closing brackets of one follow ("a.Token}}").
func codeExpr(v string) bool {
	if v == "" {
		return false
	}
	if v[0] == '[' || v[0] == '{' || v[0] == '(' {
		return true
	}
	i := 0
	if v[0] == '&' || v[0] == '*' {
		i++
	}
	if i == len(v) || !(isLetter(v[i]) || v[i] == '_') {
		return false
	}
	for i < len(v) && (isLetter(v[i]) || isDigit(v[i]) || v[i] == '_' || v[i] == '.') {
		i++
	}
	if i == len(v) {
		return false
	}
	if v[i] == '(' || v[i] == '{' || v[i] == '[' {
		return true
	}
	return strings.Trim(v[i:], ")}]") == ""
}

// selector reports whether v is a Go, JavaScript or Python expression
// naming a field: "srv.Token", "a.auth", "cfg.api_key".
func selector(v string) bool {
	parts := 0
	for _, p := range strings.Split(v, ".") {
		if p == "" || !(isLetter(p[0]) || p[0] == '_') {
			return false
		}
		for i := 1; i < len(p); i++ {
			if !isLetter(p[i]) && !isDigit(p[i]) && p[i] != '_' {
				return false
			}
		}
		parts++
	}
	return parts > 1
}

// proseFillers are words that follow a label's colon in prose, never as a
// credential: "it lost its secret: the …", "authorised: by …".
var proseFillers = map[string]bool{
	"the": true, "a": true, "an": true, "is": true, "are": true, "was": true, "were": true, "be": true,
	"by": true, "in": true, "on": true, "of": true, "to": true, "for": true, "with": true, "from": true,
	"and": true, "or": true, "not": true, "it": true, "its": true, "this": true, "that": true, "as": true,
	"at": true, "if": true, "when": true, "see": true,
}

// codeValue reports whether an unquoted value is an expression of code
// rather than a literal: a call, a composite literal or index ("func(tx",
// "secretKind{", "a.Token}"), a field selector ("srv.Token"), an operand
// ("prefix + …"), a variable named like the secret ("token: token"), a
// name of one or two characters under a weak name ("k", "x", "?"), or a
// word of prose. Secrets that are code literals are quoted, and then still
// redacted.
func codeValue(s, name, v string, end int, strong bool) bool {
	if codeExpr(v) || selector(v) || (!strong && len(v) <= 2) || proseFillers[strings.ToLower(v)] {
		return true
	}
	if j := skipSpaces(s, end); j < len(s) && (s[j] == '(' || s[j] == '+' || s[j] == '[' || s[j] == '.' && j == end) {
		return true
	}
	lv := strings.ToLower(v)
	for _, stem := range secretStems {
		if lv == stem || lv == stem+"s" {
			return true
		}
	}
	ws := words(name)
	return len(ws) > 0 && lv == ws[len(ws)-1]
}

// upperSnakeRE is an environment variable's name ("MY_AGENT_KEY"): a
// value of that shape names where a secret is, it is not one.
var upperSnakeRE = regexp.MustCompile(`^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$`)

// placeholderWords stand for a value in examples.
var placeholderWords = map[string]bool{
	"value": true, "values": true, "placeholder": true, "changeme": true, "example": true, "dummy": true,
	"todo": true, "tbd": true, "redacted": true, "hidden": true, "secret": true, "token": true,
}

// weakValue reports whether a value under a name that is only weakly a
// secret's (key, token, auth: not password or secret) is no credential:
// a placeholder word, an environment variable's name, a whole number of
// up to six digits (a limit: "max_tokens = 4096" is caught by its name,
// "MaxTaskKey = 128" by this); and, where the name is code's or a
// document's (it has a lower-case letter; "API_KEY=abc" stays a secret),
// a value of letters, '_', '.' and '-' alone ("refusal", "mcp_session_key",
// "context_only": gitleaks' generic-api-key allows them alike), one of one
// or two characters, or one with a blank in it (a list of columns).
func weakValue(name, v string) bool {
	lv := strings.ToLower(v)
	if placeholderWords[lv] || upperSnakeRE.MatchString(v) || (len(v) <= 6 && isDigits(v)) {
		return true
	}
	if strings.ToUpper(name) == name {
		return false
	}
	return lettersOnlyRE.MatchString(v) || len(v) <= 2 || strings.ContainsAny(v, " \t")
}

var lettersOnlyRE = regexp.MustCompile(`^[A-Za-z_.-]+$`)

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

// isWord reports whether s is letters alone.
func isWord(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isLetter(s[i]) {
			return false
		}
	}
	return s != ""
}

// scanValue reads one value at i: a quoted string ("...", '...', `...`, or
// \"...\" inside JSON-in-a-string, with backslash escapes, ending at the
// closing quote or, when unterminated, at the end of the line) or a bare
// word ending at whitespace, a quote, a comma or a semicolon (which ends a
// value in connection strings, "AccountKey=...;EndpointSuffix=...", and in
// shell and code: gitleaks' generic rule stops there too). inner is the value
// without its quotes.
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
	for j < len(s) && !isSpace(s[j]) && s[j] != '"' && s[j] != '\'' && s[j] != '`' && s[j] != ',' && s[j] != ';' {
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
// gitleaks' generic-api-key rule and detect-secrets' keyword plugin use the
// same words, and "creds" and "passphrase" from them; see also "pass" in
// secretName.
var secretStems = []string{"key", "token", "secret", "password", "passwd", "pwd", "credential", "creds", "auth", "passphrase", "passcode"}

// strongStems never name anything but a secret, so prose exceptions do not
// apply to them.
var strongStems = []string{"secret", "password", "passwd", "pwd", "credential", "authoriz", "authoris", "passphrase"}

// benignWords contain a stem without being about secrets.
var benignWords = map[string]bool{
	"author": true, "authors": true, "authored": true, "authoring": true, "authorship": true,
	"authority": true, "authorities": true, "authorized": true, "authorised": true, "unauthorized": true,
	"unauthorised": true, "authenticate": true, "authenticated": true, "authentication": true,
	"authenticator": true,
	"monkey":        true, "donkey": true, "turkey": true, "hockey": true, "jockey": true, "whiskey": true,
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
	// A key's hash or fingerprint is not the key; a token's column, field or
	// metadata is about it; a scanned secret is a check.
	"hash": true, "hashes": true, "digest": true, "fingerprint": true, "col": true, "cols": true,
	"column": true, "columns": true, "field": true, "fields": true, "meta": true, "metadata": true,
	"channel": true, "methods": true, "supported": true, "scanned": true, "scanning": true, "scan": true,
}

// secretName reports whether an assignment's name names a secret. The name
// is split into words (snake, kebab, dotted and camelCase); the last word
// holding a stem must not be a benign word or a lookup key, and no modifier
// may follow it. "pass" counts only as the last word of a longer name
// (DB_PASS, smtpPass, as detect-secrets' db_pass and key_pass): alone it is
// too often prose ("First pass: 20 files").
func secretName(name string) bool {
	if !hasStem(name) {
		return false // most names: no need to split them into words
	}
	ws := words(name)
	last := -1
	for i, w := range ws {
		if benignWords[w] || (w == "key" && i > 0 && keyKinds[ws[i-1]]) {
			continue
		}
		if w == "pass" && i > 0 && i == len(ws)-1 {
			last = i
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

// hasStem reports whether name holds a secret stem or "pass" (ASCII
// letters in any case), without allocating.
func hasStem(name string) bool {
	for i := 0; i < len(name); i++ {
		switch lowerByte(name[i]) {
		case 'k', 't', 's', 'p', 'c', 'a':
			for _, stem := range secretStems {
				if len(name)-i >= len(stem) && asciiEqualFold(name[i:i+len(stem)], stem) {
					return true
				}
			}
			if len(name)-i >= 4 && asciiEqualFold(name[i:i+4], "pass") {
				return true
			}
		}
	}
	return false
}

// asciiEqualFold compares s with the lower-case ASCII word w.
func asciiEqualFold(s, w string) bool {
	for j := 0; j < len(w); j++ {
		if lowerByte(s[j]) != w[j] {
			return false
		}
	}
	return true
}

// strongName reports whether name contains a stem that is never prose,
// or ends in "pass" (DB_PASS, smtpPass), a secret name's (secretName).
func strongName(name string) bool {
	l := strings.ToLower(name)
	for _, stem := range strongStems {
		if strings.Contains(l, stem) {
			return true
		}
	}
	ws := words(name)
	return len(ws) > 1 && ws[len(ws)-1] == "pass"
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
