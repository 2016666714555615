package redact

import (
	"crypto/sha256"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// Realistic-looking (but fake) credentials, built once so each case reads
// like the text an assistant would paste.
var (
	openAIKey    = "sk-" + strings.Repeat("aB3dE5gH7jK9", 4)
	openAIProj   = "sk-proj-" + strings.Repeat("Ab_9-xY2", 8)
	anthropicKey = "sk-ant-api03-" + strings.Repeat("Zq8_Lm-4", 10)
	continuoPAT  = "cto_pat_" + strings.Repeat("0a1B2c3D", 4)
	githubPAT    = "ghp_" + strings.Repeat("A1b2C3d4E5f6", 3)
	githubFine   = "github_pat_11ABCDEFG0ZlIuR0HmLhfg_BcKr8Kr0Lvgx5sIt5XDJnqjgNYhTY1FpvIj6VLg8ykCcdOAzbkZoRaoZV8d" // 82 characters, as issued
	slackToken   = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMn"
	googleKey    = "AIza" + "SyA-1234567890abcdefghijklmnopqrs_t"
	jwt          = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	pemBody64    = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj" // 64 characters
)

func TestString(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		// Bearer tokens keep the scheme word.
		{"authorization header", "Authorization: Bearer abc123def456ghi789", "Authorization: Bearer [redacted]"},
		{"bearer in curl", "curl -H 'Authorization: Bearer " + jwt + "' https://x", "curl -H 'Authorization: Bearer [redacted]' https://x"},
		{"bare bearer", "send Bearer Zx9.abcd-EF/gh= now", "send Bearer [redacted] now"},
		{"lower-case bearer", "bearer a1b2c3d4e5", "bearer [redacted]"},
		{"lower-case header token", "Authorization: Bearer abcdefghijk", "Authorization: Bearer [redacted]"},
		{"basic auth header", "Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic [redacted]"},
		{"short header credential", "authorization: Bearer abc", "authorization: Bearer [redacted]"},

		// Tokens recognisable by their shape.
		{"continuo pat", "token is " + continuoPAT + ".", "token is [redacted]."},
		{"continuo other", "use cto_oat_0123456789abcdefXYZ now", "use [redacted] now"},
		{"openai", "key " + openAIKey + " end", "key [redacted] end"},
		{"openai project", openAIProj, "[redacted]"},
		{"anthropic", "(" + anthropicKey + ")", "([redacted])"},
		{"github classic", "remote " + githubPAT, "remote [redacted]"},
		{"github other kinds", "gho_7X8s51fbLtByHwiUmrCaoND5bgfTFAbGOUBw ghs_XdnYcLxQlNnVxKW3x9KsQuKf0ElTELYCRPkl", "[redacted] [redacted]"},
		{"github fine grained", githubFine, "[redacted]"},
		{"aws access key id", "aws_access_key_id AKIAIOSFODNN7EXAMPLE", "aws_access_key_id [redacted]"},
		{"aws temporary", "ASIAIOSFODNN7EXAMPLE", "[redacted]"},
		{"slack", "slack " + slackToken, "slack [redacted]"},
		{"google", "maps " + googleKey + " ok", "maps [redacted] ok"},
		{"jwt", "cookie " + jwt + ";", "cookie [redacted];"},
		{"continuo after a short candidate", "cto_ 0" + continuoPAT, "cto_ 0[redacted]"},
		{"continuo pat inside an identifier", "de_facto_" + continuoPAT, "de_facto_[redacted]"},
		{"continuo pat glued to a word", "my" + continuoPAT, "my[redacted]"},
		{"continuo after punctuation", "(cto_0123456789abcdefXYZ)", "([redacted])"},
		{"aws key glued to bearer", "AKIAIOSFODNN7EXAMPLEbearer abcdefgh12", "[redacted]bearer [redacted]"},
		{"key glued to a word", "mykeysk-" + strings.Repeat("Q7", 12), "mykey[redacted]"},
		{"several on a line", openAIKey + "," + githubPAT, "[redacted],[redacted]"},

		// Secret-named assignments keep the name and separator.
		{"env assignment", "API_KEY=abc", "API_KEY=[redacted]"},
		{"export quoted", `export OPENAI_API_KEY="not-a-real-key"`, `export OPENAI_API_KEY="[redacted]"`},
		{"export quoted key shape", `export OPENAI_API_KEY="` + openAIKey + `"`, `export OPENAI_API_KEY="[redacted]"`},
		{"yaml password", "password: hunter2", "password: [redacted]"},
		{"json secret", `{"client_secret": "x", "client_id": "abc"}`, `{"client_secret": "[redacted]", "client_id": "abc"}`},
		{"json escaped quote", `{"password": "a\"b c"}`, `{"password": "[redacted]"}`},
		{"json in a string", `"{\"api_key\": \"abc123\", \"n\": 1}"`, `"{\"api_key\": \"[redacted]\", \"n\": 1}"`},
		{"single quotes", "db_password = 'p@ss word'", "db_password = '[redacted]'"},
		{"unterminated quote", "SECRET=\"abc def\nnext line", "SECRET=\"[redacted]\nnext line"},
		{"go short decl", `token := "abc123"`, `token := "[redacted]"`},
		{"python annotation", `token: str = "abc123"`, `token: str = "[redacted]"`},
		{"camel case", "apiKey: 'zq8Lm4'", "apiKey: '[redacted]'"},
		{"header name", "X-Api-Key: 9f8e7d6c", "X-Api-Key: [redacted]"},
		{"markdown bold", "**Password**: hunter2", "**Password**: [redacted]"},
		{"prose label with value", "the API key: abc123 for staging", "the API key: [redacted] for staging"},
		{"strong name in prose", "the staging password: swordfish for admin", "the staging password: [redacted] for admin"},
		{"nested label", "auth: password: hunter2", "auth: password: [redacted]"},
		{"after a rejected name", "note: password=hunter2", "note: password=[redacted]"},
		{"unquoted stops at comma", "PASSWD=abc,user=bob", "PASSWD=[redacted],user=bob"},
		{"credential", "GOOGLE_CREDENTIALS=abc", "GOOGLE_CREDENTIALS=[redacted]"},
		{"pwd", "DB_PWD=x", "DB_PWD=[redacted]"},
		{"query parameter", "GET /cb?code=1&access_token=abc123 HTTP/1.1", "GET /cb?code=1&access_token=[redacted] HTTP/1.1"},
		{"fat arrow", `'secret' => 'abc'`, `'secret' => '[redacted]'`},
		{"case insensitive", "Password=Hunter2", "Password=[redacted]"},

		// Private keys: the whole block.
		{"pem", "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAAAA\n-----END RSA PRIVATE KEY-----\ndone", "key:\n[redacted]\ndone"},
		{"pem plain", "-----BEGIN PRIVATE KEY-----\nMII\n-----END PRIVATE KEY-----", "[redacted]"},
		{"pem openssh", "a -----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY----- b", "a [redacted] b"},
		{"pem unterminated", "see\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\ntruncated…", "see\n[redacted]"},
		// Bodies of a real key's length: gitleaks' private-key rule wants 64
		// characters at least, and on toy bodies reads from the first BEGIN
		// to the second END.
		{"pem two blocks", "-----BEGIN PRIVATE KEY-----\n" + pemBody64 + "\n-----END PRIVATE KEY-----\nmid\n-----BEGIN PRIVATE KEY-----\n" + pemBody64 + "\n-----END PRIVATE KEY-----", "[redacted]\nmid\n[redacted]"},

		// URL passwords: user and host stay.
		{"url password", "postgres://admin:s3cret@db:5432/app", "postgres://admin:[redacted]@db:5432/app"},
		{"url empty user", "redis://:hunter2@cache:6379", "redis://:[redacted]@cache:6379"},
		{"url password with at", "https://u:p@ss@host/x", "https://u:[redacted]@host/x"},
		{"url secret-named user", "https://token:abc@host/x", "https://token:[redacted]@host/x"},

		// Provider shapes added from gitleaks' rule set (the corpus has one
		// of each; these pin what stays around them).
		{"slack webhook keeps the host", "https://hooks.slack.com/services/T0123ABCD/B0123ABCDEF/" + strings.Repeat("aB3d", 6),
			"https://hooks.slack.com/services/[redacted]"},
		{"stripe live", "key=" + "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc" + ",", "key=[redacted],"},
		{"gitlab pat", "glpat-" + "xY_9qR2-mK7wZ4vB1nL3" + " ok", "[redacted] ok"},
		{"npm", "token npm_" + strings.Repeat("a1B2", 9), "token [redacted]"},
		{"hugging face", "(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)", "([redacted])"},
		{"sendgrid", "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", "[redacted]"},
		{"aws secret next to its id", "AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "[redacted] [redacted]"},
		{"aws id alone keeps a git hash", "AKIAIOSFODNN7EXAMPLE at 4f1c2a9d8e7b6a5f4c3d2e1f0a9b8c7d6e5f4a3b", "[redacted] at 4f1c2a9d8e7b6a5f4c3d2e1f0a9b8c7d6e5f4a3b"},
		{"bounded prefix after a space", "ctx ACCA" + "ABCDEFGH23456723", "ctx [redacted]"},
		// A rule with a boundary (gitleaks' aws-access-token: \b) finds a
		// key glued to one that another rule removed, on String's next pass.
		{"a second pass after a replacement", "AKIAIOSFODNN7EXAMPLE" + "ACCAQ3EGYWL2XN7PAFD6", "[redacted][redacted]"},

		// Passwords on command lines keep the command and the user.
		{"curl user", "curl -u admin:s3cret https://x", "curl -u admin:[redacted] https://x"},
		{"curl api key as user", "curl -u k3yk3yk3y: https://x", "curl -u [redacted]: https://x"},
		{"curl continued line", "curl https://x \\\n  --user 'bob:p w'", "curl https://x \\\n  --user 'bob:[redacted]'"},
		{"mysql glued", "mysql -uroot -phunter2 db", "mysql -uroot -p[redacted] db"},
		{"mysql quoted", `mysqldump -p"a b" db`, `mysqldump -p"[redacted]" db`},
		{"redis", "redis-cli -a hunter2 ping", "redis-cli -a [redacted] ping"},

		// A value ends at ';' as in connection strings and shell.
		{"connection string", "AccountName=a;AccountKey=abc+/def==;EndpointSuffix=core.windows.net",
			"AccountName=a;AccountKey=[redacted];EndpointSuffix=core.windows.net"},
		{"shell semicolon", "export PASSWORD=abc; ./run", "export PASSWORD=[redacted]; ./run"},
		{"db pass", "DB_PASS=x smtpPass: y", "DB_PASS=[redacted] smtpPass: [redacted]"},
		{"passphrase", `ssh_passphrase: "a b c"`, `ssh_passphrase: "[redacted]"`},

		// PuTTY keys: the private lines, not the label or the MAC.
		{"putty", "Private-Lines: 2\nAAAAgQ\nBBBB==\nPrivate-MAC: ab12", "Private-Lines: 2\n[redacted]\nPrivate-MAC: ab12"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := String(tc.in)
			if got != tc.want {
				t.Fatalf("String(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			if changed != (tc.in != tc.want) {
				t.Errorf("changed = %v, want %v", changed, tc.in != tc.want)
			}
			again, changed2 := String(got)
			if again != got || changed2 {
				t.Errorf("not idempotent: String(%q) = %q, %v", got, again, changed2)
			}
		})
	}
}

// TestStringLeavesProse pins the false positives we refuse to make: briefs
// are read by models, and a brief full of "[redacted]" holes is useless.
func TestStringLeavesProse(t *testing.T) {
	tests := []string{
		"",
		"the key decision is to use SQLite",
		"token bucket rate limiter",
		"password reset flow",
		"Bearer authentication is required; bearer tokens expire.",
		"We use Bearer token-based auth.",
		"Auth: implemented PAT hashing",
		"API key: rotated yesterday by ops",
		"max_tokens: 4096",
		"max_output_tokens=8192, num_keys=3",
		"author: Jane Doe",
		"authorName = \"Jane\"",
		"primary_key: id",
		"Primary key: id",
		"sort key: created_at",
		"idempotency_key: run-42",
		"public_key: ssh-ed25519 AAAAC3NzaC1",
		"token_env = \"CONTINUO_TOKEN\"",
		"api_key_file: /run/secrets/openai",
		"token_type: Bearer",
		"password_min_length: 12",
		"auth_enabled: true",
		"api_key: null",
		"API_KEY=",
		"API_KEY=[redacted]",
		`"password": ""`,
		`"password": "[redacted]"`,
		"password:\n  nested: value",
		"PWD=/home/alice/src",
		"let k = Key::new(a); Token::Ident",
		"task-management-system-overview-page",
		"risk-assessment-for-the-migration",
		"de_facto_standard_for_everything_here",
		"sk-short",
		"AKIA is the prefix of an access key id",
		"The JWT header starts with eyJ.",
		"https://example.com:8080/path?q=1",
		"ssh://git@github.com/org/repo.git",
		"mail me at bob@example.com: I'm around",
		"-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----",
		"tokenizer: cl100k_base",
		// Code and documents: a weak name's value of letters alone, a
		// variable, a call, a placeholder (docs/DECISIONS.md, "Redaction").
		"apiKey: 'zzz'",
		`textKey := "refusal"`,
		"token: token, auth: a.auth, Key: s.Key(c, id)",
		`c.APIKey = getenv(pc.APIKeyEnv)`,
		"export CONTINUO_TOKEN=cto_pat_… before starting it",
		`"Authorization: " + auth`,
		`return fmt.Errorf("authenticate: %w", err)`,
		"MaxTaskKey = 128",
		`env = { AGENT_API_KEY = "MY_AGENT_KEY" }`,
		"the header is an Authorization: Basic header.",
		"keyboard: us",
		"ünïcödé prose — with key: ideas welcome",
		"First pass: 20 files fixed",
		"pass_rate: 0.95",
		"var authEnabled = true;",
		"docker run -u 1000:1000 img; git push -u origin main",
		"mysql -u root -p mydb",
		"curl -u deploy https://x",
		"xoxo-everyone-who-helped",
		"ses_ACCAABCDEFGH23456723ABCD prj_A3TXABCDEFGH2345672ABCDE",
		"4f1c2a9d8e7b6a5f4c3d2e1f0a9b8c7d6e5f4a3b 3f2504e0-4f89-11d3-9a0c-0305e82c3301",
	}
	for _, in := range tests {
		if got, changed := String(in); got != in || changed {
			t.Errorf("String(%q) = %q, %v; want it unchanged", in, got, changed)
		}
	}
}

func TestStringInvalidUTF8(t *testing.T) {
	in := "\xff\xfepassword=\xc3(abc \x80 " + openAIKey + "\xe2\x82"
	got, changed := String(in)
	if !changed || strings.Contains(got, openAIKey) || strings.Contains(got, "\xc3(abc") {
		t.Fatalf("String(%q) = %q, %v", in, got, changed)
	}
	if again, _ := String(got); again != got {
		t.Fatalf("not idempotent on invalid UTF-8: %q then %q", got, again)
	}
}

// alnum maps fuzz bytes onto an alphabet, so a planted secret has a real
// key's shape whatever the fuzzer chose.
func plant(prefix string, seed []byte, n int, alphabet string) string {
	var b strings.Builder
	b.WriteString(prefix)
	for i := 0; i < n; i++ {
		var c byte
		if len(seed) > 0 {
			c = seed[i%len(seed)] + byte(i/len(seed))
		}
		b.WriteByte(alphabet[int(c)%len(alphabet)])
	}
	return b.String()
}

// fullWidth writes the ASCII letters and digits of s in their full-width
// forms (U+FF21…), which NFKC turns back.
func fullWidth(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r > ' ' && r < 0x7f {
			r += 0xFF01 - '!'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// random is prefix and n characters of alphabet drawn from a hash of
// seed: a secret of a real one's entropy, whatever the fuzzer chose.
func random(prefix string, seed []byte, n int, alphabet string) string {
	var b strings.Builder
	b.WriteString(prefix)
	h := sha256.Sum256(seed)
	for i := 0; i < n; i++ {
		if i%32 == 0 && i > 0 {
			h = sha256.Sum256(h[:])
		}
		b.WriteByte(alphabet[int(h[i%32])%len(alphabet)])
	}
	return b.String()
}

const (
	alnumChars  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	tokenChars  = alnumChars + "_-"
	upperDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
)

func FuzzString(f *testing.F) {
	seeds := []string{
		"",
		"plain prose about the key decision",
		"Authorization: Bearer abc123def456",
		"API_KEY=abc password: hunter2 \"client_secret\": \"x\"",
		"-----BEGIN PRIVATE KEY-----\nabc",
		"postgres://u:p@h/db",
		"https://token:\"a b\"@host",
		"x://u:password=a b@h",
		`{\"api_key\": \"abc\"}`,
		"token: str = 'x' auth: password: y",
		"\xff\xfe\x00 invalid utf-8 \xc3",
		"task-0123456789abcdef0123 de_facto_cto_standard",
		"Bearer sk-" + strings.Repeat("a", 24),
		jwt + " " + slackToken + " " + googleKey,
		// Shapes of the rules added from gitleaks; command lines; AWS pairs.
		"glpat-" + strings.Repeat("xY_9", 5) + " npm_" + strings.Repeat("a1B2", 9) + " hf_" + strings.Repeat("AbCd", 9),
		"sk_live_" + strings.Repeat("4eC3", 6) + " rk_test_" + strings.Repeat("Zz9", 5) + " SG.aaaaaaaaaaaaaaaaaaaa.bbbbbbbbbbbbbbbbbbbb",
		"https://hooks.slack.com/services/T0/B0/" + strings.Repeat("x", 24),
		"AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY ACCAABCDEFGH23456723",
		"x ACCAABCDEFGH23456723 SK0123456789abcdef0123456789abcdef EAAA" + strings.Repeat("a", 30),
		"abc8Q~" + strings.Repeat("a.", 17) + " key-0123456789abcdef0123456789abcdef",
		"curl -u u:p -U x:y --user 'a b:c' \\\n -u k:",
		"mysql -pX; redis-cli -a Y; sshpass -p Z; mongosh -p W",
		"AccountKey=abc;x DB_PASS=y; Private-Lines: 1\nAAAA\n",
		"sk-sk-sk-sk-eyJeyJ.eyJ.AKIAAKIAAKIA",
		// The normal form: full-width letters, continuations, invisible
		// characters, compatibility forms, decompositions, invalid bytes
		// beside them; and the rules of gitleaks' file.
		"key ＡＫＩＡＱ３ＥＧＹＷＬ２ＸＮ７ＰＡＦＤ６ and ｇｈｐ＿ａｂｃ",
		"export OPENAI_API_KEY=sk-abc\\\ndef\\\r\nghi \\\\\n",
		"sk-ab\u200bcd\u00adef\ufeff ﬁ ① e\u0301 \xff\xc3\u200b",
		"the password is Tr0ub4dor&3x; the token for ci is 'x y'; secret: is",
		"MTA0MjM0NTY3ODkwMTIzNDU2.GAbCdE.abcdefghijklmnopqrstuvwxyz0123456789 123456789:AAabcdefghijklmnopqrstuvwxyz0123456",
		"aws configure set aws_secret_access_key abc; curl -u a:b https://x -H 'Authorization: Bearer abcdefgh1234'",
		"discord_token = \"00000000000000000000000000000000000000000000000000000000000000ab\" kind: Secret\ndata:\n  k: YWJjZGVmZ2hpams=",
		"Twilio AC0123456789abcdef0123456789abcdef 0123456789abcdef0123456789abcdef dp.st.dev.aaaa hvs.abc",
	}
	for i, s := range seeds {
		f.Add(s, []byte(s), uint16(i*7))
	}
	f.Fuzz(func(t *testing.T, text string, seed []byte, at uint16) {
		// 1. No panic, idempotent, valid UTF-8 stays valid.
		out, changed := String(text)
		if changed != (out != text) {
			t.Fatalf("changed = %v but out != in is %v", changed, out != text)
		}
		if again, _ := String(out); again != out {
			t.Fatalf("not idempotent:\n in   %q\n once %q\n twice %q", text, out, again)
		}
		if utf8.ValidString(text) && !utf8.ValidString(out) {
			t.Fatalf("valid UTF-8 in, invalid out: %q -> %q", text, out)
		}

		// 2. A planted secret never survives, wherever it lands: as it is,
		// in full-width letters, or split by a line continuation.
		i := int(at) % (len(text) + 1)
		for i < len(text) && !utf8.RuneStart(text[i]) {
			i++ // not inside a rune: planted there, a full-width secret would not be one
		}
		aws := plant("AKIA", seed, 16, upperDigits)
		wide := fullWidth(aws)
		split := plant("sk-", seed, 24, alnumChars)
		doc := text[:i] + wide + " " + split[:14] + "\\\n" + split[14:] + " " + text[i:]
		leaked := func(red, piece string) bool { return strings.Contains(red, piece) && !strings.Contains(text, piece) }
		if red, _ := String(doc); leaked(red, wide) || leaked(red, split[:14]) || leaked(red, split[14:]) {
			t.Fatalf("a disguised secret survived:\n in  %q\n out %q", doc, red)
		} else if again, _ := String(red); again != red {
			t.Fatalf("not idempotent with disguised secrets:\n in   %q\n once %q\n twice %q", doc, red, again)
		}
		for _, p := range []struct {
			secret string
			word   bool // planted as a word, with blanks around it
		}{
			// Our shapes have no boundary: glued to anything, they go.
			{plant("sk-", seed, 24, alnumChars), false},
			{plant("cto_pat_", seed, 32, tokenChars), false},
			{plant("AKIA", seed, 16, upperDigits), false},
			// gitleaks' rules want a boundary and a secret's entropy: a
			// random one, as a word.
			{random("glpat-", seed, 20, tokenChars), true},
			{random("npm_", seed, 36, alnumChars), true},
			{random("sk_live_", seed, 24, alnumChars), true},
			{"xoxb-" + random("", seed, 12, "0123456789") + "-" + random("", append(slices.Clip(seed), 1), 13, "0123456789") + "-" +
				random("", append(slices.Clip(seed), 2), 24, alnumChars), true},
		} {
			secret := p.secret
			if p.word {
				secret = " " + secret + " "
			}
			doc := text[:i] + secret + text[i:]
			secret = strings.TrimSpace(secret)
			red, _ := String(doc)
			if strings.Contains(red, secret) {
				t.Fatalf("planted %q survived:\n in  %q\n out %q", secret, doc, red)
			}
			if again, _ := String(red); again != red {
				t.Fatalf("not idempotent with planted secret:\n in   %q\n once %q\n twice %q", doc, red, again)
			}
		}
	})
}
