package run

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/proc"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/store"
)

// CommandSpec is the spec of a validation run: the check as it was when
// the run was asked for. Environment values are not in it: they are read
// from the server's environment when the run starts, and never stored.
type CommandSpec struct {
	Command     []string `json:"command"`
	Env         []string `json:"env,omitempty"`
	TimeoutSecs int      `json:"timeout_secs"`
}

// DefaultCheckTimeout applies to a check that sets none.
const DefaultCheckTimeout = 600

// BaseEnv are the variables every check gets from the server's
// environment (when set): enough for a toolchain to find itself and a home
// directory, nothing that names a credential.
var BaseEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR"}

// SpecOf is the spec a check runs with.
func SpecOf(c continuo.Check) CommandSpec {
	t := c.TimeoutSecs
	if t == 0 {
		t = DefaultCheckTimeout
	}
	return CommandSpec{Command: c.Command, Env: c.Env, TimeoutSecs: t}
}

// JSON is the spec as a run stores it.
func (c CommandSpec) JSON() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// Commands executes validation runs: the check's argv, without a shell, in
// the run's directory, in its own process group, with an allow-listed
// environment; output (stdout and stderr interleaved) is redacted line by
// line before it reaches the log.
type Commands struct {
	// Getenv reads the server's environment; nil means os.Getenv.
	Getenv func(string) string
}

// Execute implements Executor.
func (x Commands) Execute(ctx context.Context, r *continuo.Run, log *Log) Outcome {
	var spec CommandSpec
	if err := json.Unmarshal([]byte(r.Spec), &spec); err != nil || len(spec.Command) == 0 {
		log.State("the run's spec is not a command")
		return Outcome{ErrorKind: "invalid_spec"}
	}
	getenv := x.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	var env []string
	for _, name := range append(slices.Clone(BaseEnv), spec.Env...) {
		if v := getenv(name); v != "" && !slices.ContainsFunc(env, func(kv string) bool { return len(kv) > len(name) && kv[:len(name)+1] == name+"=" }) {
			env = append(env, name+"="+v)
		}
	}
	stream := redact.NewStream(func(text string) { log.Write(continuo.EventOutput, text) })
	log.Hold() // no output is seen before the process group is on record
	p, err := proc.Start(proc.Spec{Argv: spec.Command, Dir: r.Dir, Env: env, Output: stream})
	if err != nil {
		log.Release()
		// The error names the program and the directory, which the
		// operator configured; it holds no environment value.
		msg, _ := redact.String(err.Error())
		log.State("could not start: " + msg)
		return Outcome{ErrorKind: "start_failed"}
	}
	if err := log.s.setProc(r.ID, p.Ident()); err != nil {
		log.s.log.Error("runs: record a run's process group", "run", r.ID, "err", err)
	}
	log.Release()
	waited := make(chan struct{})
	var code int
	var werr error
	go func() {
		code, werr = p.Wait()
		close(waited)
	}()
	stopped := false
	select {
	case <-waited:
	case <-ctx.Done():
		p.Stop(StopGrace)
		<-waited
		stopped = true
	}
	stream.Close()
	if stopped {
		return Outcome{Stopped: true}
	}
	if werr != nil && code < 0 {
		return Outcome{ErrorKind: "killed"} // by a signal from outside
	}
	out := Outcome{ExitCode: &code, Succeeded: code == 0}
	if code != 0 {
		out.ErrorKind = "exit_status"
	}
	return out
}

// setProc records the process group a run runs in.
func (s *Service) setProc(id, ident string) error {
	_, err := s.update(context.Background(), id, func(_ store.Tx, r *continuo.Run) (continuo.RunState, error) {
		if r.State != continuo.RunRunning {
			return "", nil
		}
		r.Proc = ident
		return r.State, nil
	})
	if err != nil {
		return fmt.Errorf("set proc: %w", err)
	}
	return nil
}
