package redact

import (
	"regexp"
	"strings"
)

// commandRule is a password given on a command line: an option of a known
// command, and its value. gitleaks has such rules for curl (curl-auth-user,
// and curl-auth-header, whose headers the assignment rule already covers);
// the database and SSH clients below are ours, in the same form.
type commandRule struct {
	id    string
	words []string // the command's names: an occurrence starts a command line
	// opt matches one option with its value in three groups: single-quoted,
	// double-quoted (the closing quote may be missing: the value then runs
	// to the end of the line) or bare.
	opt *regexp.Regexp
	// userPass: the value is "user:password"; the password goes and the user
	// stays, or, with no password ("user:"), the user goes: an API key given
	// as the user name, as Stripe and others document.
	userPass bool
}

// quoted or bare value; the bare form's first character class is given
// (callers leave out punctuation that ends a phrase of a document: "`mysql
// -p`, `redis-cli -a`"). A bare value ends at a blank, a quote or a
// backtick.
func optValue(first string) string {
	return `(?:'([^'\n]*)'?|"([^"\n]*)"?|(` + first + `[^\s'"\x60]*))`
}

var commandRules = []commandRule{
	// curl -u user:pw, --user, -U/--proxy-user (gitleaks curl-auth-user).
	// curl accepts the value glued to -u ("-uuser:pw"). A value starting
	// with '-' is taken for the next option, so that "-u -u a:b" finds a:b.
	{"curl-user", []string{"curl"},
		regexp.MustCompile(`[ \t](?:--(?:proxy-)?user(?:=|[ \t]+)|-[uU][ \t]*)` + optValue(`[^\s'"\x60,.;:)-]`)), true},
	// mysql -psecret, mysqldump, mysqladmin, mariadb...: the password is
	// glued to -p ("-p" alone prompts; "-P" is the port). --password=... is
	// an assignment.
	{"mysql-password", []string{"mysql", "mariadb"},
		regexp.MustCompile(`[ \t]-p` + optValue(`[^\s'"\x60,.;:)]`)), false},
	// redis-cli -a secret / --pass secret.
	{"redis-password", []string{"redis-cli"},
		regexp.MustCompile(`[ \t](?:-a|--pass)[ \t]+` + optValue(`[^\s'"\x60,.;:)-]`)), false},
	// sshpass -p secret.
	{"sshpass-password", []string{"sshpass"},
		regexp.MustCompile(`[ \t]-p[ \t]*` + optValue(`[^\s'"\x60,.;:)-]`)), false},
	// aws configure set [profile.]aws_secret_access_key SECRET (and the
	// session token): the value follows the name after a blank, which the
	// assignment rule does not read. (positive.txt: aws-configure.)
	{"aws-configure", []string{"aws"},
		regexp.MustCompile(`[ \t]+configure[ \t]+set[ \t]+(?:[\w-]+\.)?(?:aws_secret_access_key|aws_session_token)[ \t]+` + optValue(`[^\s'"\x60,.;:)-]`)), false},
	// mongo, mongosh, mongodump...: -p secret / --password secret.
	{"mongo-password", []string{"mongo"},
		regexp.MustCompile(`[ \t](?:-p|--password)[ \t]+` + optValue(`[^\s'"\x60,.;:)-]`)), false},
}

// commandSpans finds passwords given as command-line options. A command
// line runs from the command's name to the end of the line, across
// backslash-continued lines.
func commandSpans(s string) []span { return commandSpansOf(s, commandsIn(s)) }

// commandSpansOf is commandSpans for the command rules seen (a bit each)
// in s.
func commandSpansOf(s string, seen uint32) []span {
	if seen == 0 {
		return nil
	}
	var spans []span
	for ri, r := range commandRules {
		if seen&(1<<ri) == 0 {
			continue
		}
		for _, w := range r.words {
			for i := 0; ; {
				k := strings.Index(s[i:], w)
				if k < 0 {
					break
				}
				from := i + k + len(w)
				end := lineEnd(s, from)
				for _, m := range r.opt.FindAllStringSubmatchIndex(s[from:end], -1) {
					for g := 1; g <= 3; g++ {
						if m[2*g] >= 0 {
							if v := s[from+m[2*g] : from+m[2*g+1]]; !placeholderValue(strings.TrimRight(v, ".,;:)")) { // "curl -u user:…", "mysql -p<pw>," in a document
								spans = append(spans, r.secret(s, from+m[2*g], from+m[2*g+1])...)
							}
							break
						}
					}
				}
				i = end
			}
		}
	}
	return spans
}

// commandPairs has a bit for the first two bytes of every command name, so
// that one pass finds which commands a text names (most name none) instead
// of one search per name.
var commandPairs = func() (set [1 << 16 / 8]byte) {
	for _, r := range commandRules {
		for _, w := range r.words {
			k := uint16(w[0])<<8 | uint16(w[1])
			set[k>>3] |= 1 << (k & 7)
		}
	}
	return set
}()

// commandsIn returns a bit per command rule whose name occurs in s.
func commandsIn(s string) uint32 {
	var seen uint32
	for i := 0; i+1 < len(s); i++ {
		k := uint16(s[i])<<8 | uint16(s[i+1])
		if commandPairs[k>>3]&(1<<(k&7)) == 0 {
			continue
		}
		for ri, r := range commandRules {
			for _, w := range r.words {
				if strings.HasPrefix(s[i:], w) {
					seen |= 1 << ri
				}
			}
		}
	}
	return seen
}

// secret returns the part of an option's value [start, end) to redact.
func (r commandRule) secret(s string, start, end int) []span {
	if !r.userPass {
		return []span{{start, end}}
	}
	c := strings.IndexByte(s[start:end], ':')
	switch {
	case c < 0:
		return nil // "-u user": curl asks for the password
	case start+c+1 < end:
		return []span{{start + c + 1, end}}
	case c > 0:
		return []span{{start, start + c}}
	}
	return nil
}

// lineEnd returns the end of the command line that contains i: the next
// newline that does not follow a backslash (or a backslash and '\r').
func lineEnd(s string, i int) int {
	for {
		k := strings.IndexByte(s[i:], '\n')
		if k < 0 {
			return len(s)
		}
		j := i + k
		if !(j > 0 && s[j-1] == '\\') && !(j > 1 && s[j-1] == '\r' && s[j-2] == '\\') {
			return j
		}
		i = j + 1
	}
}
