package redact

import (
	"regexp"
	"strings"
)

// continuoRules are our rules in gitleaks' form, for credentials its
// default rules miss. Each is here because a sample of testdata/corpus
// needs it (named in its comment as file:header); TestOwnRulesAreNeeded
// checks that each still is: without it, its sample would leak.
var continuoRules = []struct {
	id       string
	expr     string
	keywords []string
	entropy  float64
	accept   func(text string, secret, match span) bool
}{
	// Shapes of the redactor before gitleaks' rules came (docs/DECISIONS.md,
	// "Redaction"), kept where a sample shows gitleaks' rule missing what
	// they find: gitleaks wants exact lengths, a boundary or a quote after
	// the token, or entropy that a made-up key lacks; a missed key costs
	// more than a hole in a brief.
	//
	// Keys of "sk-" without the "T3BlbkFJ" marker or the exact lengths
	// gitleaks wants: those of the many OpenAI-compatible APIs a provider of
	// kind openai-chat may name (DeepSeek, OpenRouter's sk-or-v1-, …) and
	// Anthropic's OAuth tokens (sk-ant-oat01-, Claude Code's): any "sk-"
	// with a run of 16 letters or digits (slugs such as
	// "task-management-overview" are not keys). (positive.txt:
	// openai-anthropic (an OpenAI-compatible API's key), (OpenRouter),
	// (Anthropic OAuth).)
	{id: "openai-anthropic",
		expr: `sk-(?:ant-[A-Za-z0-9_-]{16,}|proj-[A-Za-z0-9_-]{16,}|[A-Za-z0-9_-]*?[A-Za-z0-9]{16}[A-Za-z0-9_-]*)`},
	// A Slack webhook's path to its end (gitleaks: 43 to 56 characters).
	// The host stays. (positive.txt: slack-webhook (workflows).)
	{id: "slack-webhook", expr: `hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9+/_-]{20,})`},
	// AWS access key ids, the documentation's …EXAMPLE ones too (gitleaks
	// allows those), which are pasted with real secret keys beside them.
	// Their unlabelled secret keys nearby go with them (awsSecrets).
	// (positive.txt: aws-access-key-id (the documentation's key id).)
	{id: awsIDRule, expr: `A(?:KIA|SIA|BIA)[A-Z0-9]{16}`},
	// PyPI and TestPyPI upload tokens, which gitleaks knows for pypi.org
	// only. (positive.txt: pypi (test.pypi.org).)
	{id: "pypi", expr: `pypi-AgE[A-Za-z0-9_-]{50,}`},
	// Square OAuth secrets (sq0csp-), which gitleaks does not know.
	// (positive.txt: square (square_oauth).)
	{id: "square", expr: `sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}`},

	// A Discord bot token: the bot's id in base64 (a snowflake's first
	// digit makes it begin MT, Mj, Mz, ND, NT, Nj, Nz, OD or OT), a
	// timestamp and an HMAC. gitleaks' discord rules want the word
	// "discord" and an assignment. (positive.txt: discord-bot-token.)
	{id: "discord-bot-token", entropy: 3.5,
		expr: `\b((?:M[TjzD]|N[DTjz]|O[DT])[A-Za-z0-9_-]{21,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38})\b`},
	// A Telegram bot token, "<bot id>:A<34>": gitleaks' rule wants the word
	// "telegram" before it. The digits are a lazy prefix, so that the rule
	// is tried only at ":A" (see plan); accept wants 5..16 of them, as
	// gitleaks does. (positive.txt: telegram-bot-token.)
	{id: "telegram-bot-token",
		expr:   `[0-9]{0,16}?:A[A-Za-z0-9_-]{34}\b`,
		accept: telegramDigits},
	// A Mailgun private key: "key-" and 32 characters, lower-case letters
	// and digits (the documentation's own example is not hex, as gitleaks'
	// rule wants, which also wants the word "mailgun").
	// (positive.txt: mailgun-key.)
	{id: "mailgun-key", expr: `key-[0-9a-z]{32}\b`},
	// HashiCorp Vault tokens of every length: service (hvs.), batch (hvb.)
	// and recovery (hvr.) tokens. gitleaks wants 90 characters or more
	// after hvs., but tokens of 24 are issued too.
	// (positive.txt: vault-token.)
	{id: "vault-token", expr: `\bhv[sbr]\.[A-Za-z0-9_-]{24,}`},
	// Doppler tokens of every kind: personal (dp.pt.), service (dp.st.,
	// with the environment's name), CLI (dp.ct.), service account (dp.sa.),
	// SCIM and audit. gitleaks knows dp.pt. only.
	// (positive.txt: doppler-token.)
	{id: "doppler-token", expr: `dp\.(?:pt|st|ct|sa|scim|audit)\.(?:[A-Za-z0-9_-]{1,40}\.)?[A-Za-z0-9]{40,44}\b`},
	// An AWS secret access key said in prose or a table, without an
	// assignment: 40 base64 characters of high entropy within a line after
	// "aws" or "secret access key". gitleaks has no rule for the secret key
	// (only for the key id). (positive.txt: aws-secret-prose.)
	{id: "aws-secret-prose", entropy: 4.2, accept: mixedCase,
		expr: `(?i)\b(?:aws|amazon|secret[ _-]?access[ _-]?key)[^\n]{0,100}?(?-i:\b([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$))`},
	// The secret half of a Twilio pair: 32 hex digits after the account
	// SID (AC and 32 hex digits) or the word "twilio", on the same line.
	// gitleaks knows Twilio's SK… API keys only.
	// (positive.txt: twilio-auth-token.)
	{id: "twilio-auth-token", entropy: 3,
		expr: `\bAC[0-9a-f]{32}\b[^\n]{0,100}?\b([0-9a-f]{32})\b`},
	{id: "twilio-auth-token", entropy: 3,
		expr: `(?i)\btwilio[^\n]{0,100}?(?-i:\b([0-9a-f]{32})\b)`},
	// A secret stated in prose: "the password is hunter2", "my API key
	// was 'x y'", "the token for the staging db is …" (up to four words
	// after for/of/to/on/in). Blanks between its words are bounded (three at
	// most) so that its quick test reads the verb (see plan). The value
	// is quoted, or a word that does not read as prose (proseSecret).
	// gitleaks' generic rule wants an operator (=, :) and 10 characters of
	// entropy. (positive.txt: prose-secret.)
	{id: "prose-secret", accept: proseSecret,
		expr: `(?i)\b(?:password|passphrase|passcode|passwd|pwd|secret|token|credentials?|(?:api|access|secret|private|license|master|root|admin)[ _-]?(?:key|token|password))\b` +
			`(?:[ \t]{1,3}(?:for|of|to|on|in)(?:[ \t]{1,3}[\w@./-]{1,30}){1,4}?)?` +
			`[ \t]{1,3}(?:(?:is|was|has been|have been)[ \t]{1,3}(?:set|changed|reset|rotated|updated)[ \t]{1,3}to|is|was|are|were)[ \t]{0,3}:?[ \t]{0,3}` +
			`(?:"([^"\n]{3,})"|'([^'\n]{3,})'|` + "`" + `([^` + "`" + `\n]{3,})` + "`" + `|([^\s"'` + "`" + `]{3,}[^\s"'` + "`" + `.,;:!?)]))`},
}

// awsIDRule is the id of our AWS access key id rule; its matches, and
// gitleaks' aws-access-token ones, anchor awsSecrets.
const awsIDRule = "aws-access-key-id"

// telegramDigits wants 5..16 digits before ":A", at a word boundary or
// after "bot" (the Bot API's URLs: https://api.telegram.org/bot<token>/).
func telegramDigits(text string, _, m span) bool {
	n := strings.IndexByte(text[m.start:m.end], ':')
	return n >= 5 && n <= 16 &&
		(m.start == 0 || !isWordByte(text[m.start-1]) || (m.start >= 3 && strings.EqualFold(text[m.start-3:m.start], "bot")))
}

// mixedCase wants upper- and lower-case letters in the secret: a git hash
// or a hex digest (one case) is not an AWS secret key.
func mixedCase(text string, s, _ span) bool {
	return hasUpper(text[s.start:s.end]) && hasLower(text[s.start:s.end])
}

// proseWordsRE is what a bare value after "password is" looks like in
// prose: a lower-case word ("required", "hashed", "in"), maybe capitalized,
// a snake_case name ("the token is invalid_grant"), or a number of few
// digits ("3 days").
var proseWordsRE = regexp.MustCompile(`^(?:[A-Za-z][a-z]*(?:['’-][a-z]+)*|[a-z]+(?:_[a-z]+)+|[0-9]{1,3})[.,;:!?)]*$`)

// proseSecret accepts the value of a secret stated in prose: a quoted one
// always; a bare one (which does not end in sentence punctuation) that
// does not read as a word — a letter after the first in upper case, a
// digit beyond a short number, a symbol — and is not a path, a URL, a
// variable or Continuo's own placeholder.
func proseSecret(text string, s, _ span) bool {
	v := text[s.start:s.end]
	if s.start > 0 && (text[s.start-1] == '"' || text[s.start-1] == '\'' || text[s.start-1] == '`') {
		return len(v) <= 64 && strings.TrimSpace(v) != "" && !strings.Contains(v, Placeholder) && !placeholderValue(v) // longer: a sentence in quotes
	}
	trim := v
	switch {
	case len(trim) < 4, strings.Contains(v, Placeholder), proseWordsRE.MatchString(v),
		strings.HasPrefix(trim, "/"), strings.HasPrefix(trim, "~/"), strings.Contains(trim, "://"),
		strings.HasPrefix(trim, "$"), strings.HasPrefix(trim, "%"), strings.HasPrefix(trim, "<"), strings.HasPrefix(trim, "{"):
		return false
	}
	return true
}

// gitleaksOverrides adjust gitleaks rules where a decision of ours differs
// from the rule as written (each names the sample or test that holds it).
var gitleaksOverrides = map[string]struct {
	accept func(text string, secret, match span) bool
	narrow func(text string, secret span) span
}{
	// The secret of curl -u is "user:password" to gitleaks; command lines
	// keep the user (docs/DECISIONS.md, "Command lines keep the user";
	// redact_test.go: "curl user", "curl continued line").
	"curl-auth-user": {narrow: curlPassword},
	// A Slack webhook keeps its host and kind, so that a reader knows what
	// it was (redact_test.go: "slack webhook keeps the host").
	"slack-webhook-url": {narrow: slackWebhookPath},
	// generic-api-key takes any name with "key" or "token" in it; the
	// names our assignment rule knows not to be secrets (idempotency_key,
	// sort key, max_tokens, token_env, api_key_file) are not either here
	// (negative.txt: "uuid UUIDs and request ids", "identifiers code that
	// names tokens and keys").
	"generic-api-key": {accept: genericName},
}

// curlPassword narrows curl's "user:password" to the password, or to the
// user when there is no password ("-u key:", an API key as the user).
func curlPassword(text string, s span) span {
	v := text[s.start:s.end]
	q := 0
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		q = 1 // keep the quotes
	}
	inner := v[q : len(v)-q]
	c := strings.IndexByte(inner, ':')
	switch {
	case c < 0:
		return span{s.start + q, s.end - q}
	case c == len(inner)-1:
		return span{s.start + q, s.start + q + c}
	}
	return span{s.start + q + c + 1, s.end - q}
}

// slackWebhookPath narrows a webhook URL to what follows
// hooks.slack.com/services/ (or workflows/, triggers/).
func slackWebhookPath(text string, s span) span {
	v := text[s.start:s.end]
	i := strings.Index(v, "hooks.slack.com/")
	if i < 0 {
		return s
	}
	j := strings.IndexByte(v[i+len("hooks.slack.com/"):], '/')
	if j < 0 {
		return s
	}
	return span{s.start + i + len("hooks.slack.com/") + j + 1, s.end}
}

// genericName reads the name of a generic-api-key match (what comes
// before its operator) as the assignment rule reads a name.
func genericName(text string, _, m span) bool {
	v := text[m.start:m.end]
	end := strings.IndexAny(v, "=>:|?,")
	if end < 0 {
		return true
	}
	name := strings.TrimRight(v[:end], " \t\r\n'\"")
	return secretName(strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' {
			return '_'
		}
		return r
	}, name))
}
