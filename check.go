package continuo

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Check bounds.
const (
	MaxChecks       = 32
	MaxCheckArgs    = 64
	MaxCheckCommand = 4096 // bytes of the whole argv
	MaxCheckEnv     = 32
)

// SplitCommand splits a command line into argv the way a POSIX shell splits
// words, and does nothing else a shell does: blanks separate words, '…'
// quotes literally, "…" quotes with \ escaping only \ " $ and `, and \
// outside quotes escapes the next character. A character that would make a
// shell do more (| & ; < > ( ) $ ` * ? [ # ~ { } and a newline) outside
// quotes is refused, so that a check written as one line never silently
// means something else than what runs: an operator who wants a shell writes
// ["sh", "-c", "…"] as the check's command.
func SplitCommand(line string) ([]string, error) {
	var args []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				args = append(args, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated ' quote")
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && strings.IndexByte("\\\"$`", line[i+1]) >= 0 {
					i++
				} else if line[i] == '$' || line[i] == '`' {
					return nil, fmt.Errorf("%q inside \"…\" is shell expansion; quote it with '…' or write the check as [\"sh\", \"-c\", …]", line[i])
				}
				cur.WriteByte(line[i])
			}
			if i == len(line) {
				return nil, errors.New("unterminated \" quote")
			}
			inWord = true
		case c == '\\':
			if i+1 == len(line) {
				return nil, errors.New("a trailing \\ escapes nothing")
			}
			i++
			cur.WriteByte(line[i])
			inWord = true
		case strings.IndexByte("|&;<>()$`*?[#~{}\n\r", c) >= 0:
			return nil, fmt.Errorf("%q is shell syntax; quote it, or write the check as [\"sh\", \"-c\", …] to run it through a shell", c)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		args = append(args, cur.String())
	}
	if len(args) == 0 {
		return nil, errors.New("the command is empty")
	}
	return args, nil
}

// Validate checks a check's bounds: a non-empty argv without NUL bytes, at
// most MaxCheckArgs words and MaxCheckCommand bytes, a timeout within
// MaxCheckTimeout, and environment names that are plain variable names.
func (c Check) Validate() error {
	if len(c.Command) == 0 || c.Command[0] == "" {
		return errors.New("the command is empty")
	}
	if len(c.Command) > MaxCheckArgs {
		return fmt.Errorf("at most %d words", MaxCheckArgs)
	}
	n := 0
	for _, a := range c.Command {
		n += len(a) + 1
		if strings.IndexByte(a, 0) >= 0 {
			return errors.New("a word holds a NUL byte")
		}
	}
	if n > MaxCheckCommand {
		return fmt.Errorf("the command is longer than %d bytes", MaxCheckCommand)
	}
	if c.TimeoutSecs < 0 || c.TimeoutSecs > int(MaxCheckTimeout.Seconds()) {
		return fmt.Errorf("timeout_secs must be 0..%d", int(MaxCheckTimeout.Seconds()))
	}
	if len(c.Env) > MaxCheckEnv {
		return fmt.Errorf("at most %d environment names", MaxCheckEnv)
	}
	for _, name := range c.Env {
		if !envName(name) {
			return fmt.Errorf("environment name %q must match [A-Za-z_][A-Za-z0-9_]*", name)
		}
	}
	return nil
}

func envName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// UnmarshalJSON reads a check as stored: an object, or (as projects
// registered before checks had options stored them) a command line, which
// is split with SplitCommand; a line SplitCommand refuses is kept as a
// check whose Validate fails, so that running it says why.
func (c *Check) UnmarshalJSON(b []byte) error {
	var line string
	if err := json.Unmarshal(b, &line); err == nil {
		argv, err := SplitCommand(line)
		if err != nil {
			*c = Check{}
			return nil
		}
		*c = Check{Command: argv}
		return nil
	}
	type plain Check
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*c = Check(p)
	return nil
}
