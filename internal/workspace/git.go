package workspace

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
	"unicode/utf8"
)

// gitError is returned when git fails; it wraps the exit error (or the
// context's error), so errors.Is(err, context.DeadlineExceeded) works.
type gitError struct {
	args   []string
	err    error  // *exec.ExitError, or the context's error on timeout
	stderr string // trimmed to maxStderr bytes
}

func (e *gitError) Error() string {
	msg := fmt.Sprintf("workspace: git %s: %v", strings.Join(e.args, " "), e.err)
	if e.stderr != "" {
		msg += ": " + e.stderr
	}
	return msg
}

func (e *gitError) Unwrap() error { return e.err }

// runGit runs `git -C dir args...` with stdout going to stdout, bounded by
// timeout on top of ctx.
func runGit(ctx context.Context, timeout time.Duration, dir string, stdout io.Writer, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd, stderr := gitCommand(ctx, dir, args)
	cmd.Stdout = stdout
	return gitFailure(ctx, args, cmd.Run(), stderr)
}

// streamGit is runGit for a consumer that takes its time: git's stdout is
// read in the calling goroutine and handed to w as it arrives, and git waits
// on the full pipe while w works (SourceOf reads and hashes files as their
// paths arrive). With runGit, exec's copying goroutine would call w, and once
// git has exited, WaitDelay would cut the output off after 2 s of w's work.
// extraEnv is added after gitEnv's variables, so it wins. If w fails, git is
// stopped and w's error returned.
func streamGit(ctx context.Context, timeout time.Duration, dir string, extraEnv []string, w io.Writer, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd, stderr := gitCommand(ctx, dir, args)
	cmd.Env = append(cmd.Env, extraEnv...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return &gitError{args: args, err: err}
	}
	if err := cmd.Start(); err != nil {
		return gitFailure(ctx, args, err, stderr)
	}
	// A grandchild holding the pipe open must not keep the read below
	// blocked past the deadline (WaitDelay does not cover this pipe).
	stop := context.AfterFunc(ctx, func() { out.Close() })
	defer stop()
	buf := make([]byte, 32<<10)
	var readErr, writeErr error
	for {
		n, err := out.Read(buf)
		if n > 0 {
			if _, writeErr = w.Write(buf[:n]); writeErr != nil {
				cancel() // nobody reads the rest: stop git
				break
			}
		}
		if err != nil {
			if err != io.EOF {
				readErr = err
			}
			break
		}
	}
	err = cmd.Wait()
	if writeErr != nil {
		return writeErr
	}
	if err == nil && readErr != nil {
		err = readErr
	}
	return gitFailure(ctx, args, err, stderr)
}

// gitCommand is `git -C dir args...` as every call runs it: the scrubbed
// environment, a bounded stderr, and WaitDelay.
func gitCommand(ctx context.Context, dir string, args []string) (*exec.Cmd, *bytes.Buffer) {
	full := append([]string{"-C", dir}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = gitEnv(os.Environ())
	var stderr bytes.Buffer
	cmd.Stderr = &limitedBuffer{buf: &stderr, max: 4 * maxStderr}
	// A grandchild holding the pipes open (a credential helper, an
	// fsmonitor daemon) must not keep Wait from returning.
	cmd.WaitDelay = 2 * time.Second
	return cmd, &stderr
}

// gitFailure turns the error of a git run into a *gitError carrying its
// stderr, or returns nil for success.
func gitFailure(ctx context.Context, args []string, err error, stderr *bytes.Buffer) error {
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		err = ctxErr // "signal: killed" says less than "context deadline exceeded"
	}
	return &gitError{args: args, err: err, stderr: trimStderr(stderr.String())}
}

// localRepoEnv are the variables with which a parent git process (a hook,
// "git rebase --exec") points its children at its own repository; inherited,
// they would make "git -C root" read that repository instead of root. This
// is the list `git rev-parse --local-env-vars` prints.
var localRepoEnv = map[string]bool{
	"GIT_ALTERNATE_OBJECT_DIRECTORIES": true, "GIT_CONFIG": true, "GIT_CONFIG_PARAMETERS": true,
	"GIT_CONFIG_COUNT": true, "GIT_OBJECT_DIRECTORY": true, "GIT_DIR": true, "GIT_WORK_TREE": true,
	"GIT_IMPLICIT_WORK_TREE": true, "GIT_GRAFT_FILE": true, "GIT_INDEX_FILE": true,
	"GIT_NO_REPLACE_OBJECTS": true, "GIT_REPLACE_REF_BASE": true, "GIT_PREFIX": true,
	"GIT_SHALLOW_FILE": true, "GIT_COMMON_DIR": true,
}

// gitEnv is the environment git runs with: the caller's, minus variables
// that would redirect it to another repository, plus the settings this
// package relies on.
func gitEnv(environ []string) []string {
	env := make([]string, 0, len(environ)+3)
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if localRepoEnv[k] || strings.HasPrefix(k, "GIT_CONFIG_KEY_") || strings.HasPrefix(k, "GIT_CONFIG_VALUE_") ||
			k == "GIT_OPTIONAL_LOCKS" || k == "LC_ALL" || k == "GIT_TERMINAL_PROMPT" {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"GIT_OPTIONAL_LOCKS=0",  // never take the index lock just to refresh stat data
		"LC_ALL=C",              // untranslated messages and output
		"GIT_TERMINAL_PROMPT=0", // never wait for a password nobody will type
	)
}

// trimStderr trims git's stderr to at most maxStderr bytes, cutting at a
// UTF-8 boundary so the error stays valid text.
func trimStderr(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxStderr {
		return s
	}
	cut := maxStderr
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// limitedBuffer keeps the first max bytes written to it and discards the
// rest, so a chatty git cannot grow memory without bound.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		if len(p) > room {
			l.buf.Write(p[:room])
		} else {
			l.buf.Write(p)
		}
	}
	return len(p), nil
}
