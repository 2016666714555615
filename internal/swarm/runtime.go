package swarm

import (
	"context"
	"io"
	"os"

	"github.com/continuo-dev/continuo/internal/run/proc"
)

// ProcessRuntime is the process carrier runtime (CONTRACT.md §8): it
// starts the configured command as a replacement carrier, in its own
// process group, with a minimal environment — PATH, HOME, the variables
// the operator named, CONTINUO_SERVER and what the planner adds (the
// ticket, the swarm, the worker, the carrier's own token) — never a secret
// in argv, never the server's environment.
type ProcessRuntime struct {
	Argv     []string
	EnvNames []string // passed through from the server's environment
	Server   string   // the MCP URL the carrier connects to
	Dir      string   // its working directory
	Output   io.Writer
}

// Start implements Runtime.
func (p *ProcessRuntime) Start(_ context.Context, env []string) (string, error) {
	e := make([]string, 0, len(p.EnvNames)+len(env)+3)
	for _, name := range append([]string{"PATH", "HOME"}, p.EnvNames...) {
		if v, ok := os.LookupEnv(name); ok {
			e = append(e, name+"="+v)
		}
	}
	if p.Server != "" {
		e = append(e, "CONTINUO_SERVER="+p.Server)
	}
	e = append(e, env...)
	pr, err := proc.Start(proc.Spec{Argv: p.Argv, Dir: p.Dir, Env: e, Output: p.Output})
	if err != nil {
		return "", err
	}
	go func() { _, _ = pr.Wait() }() // reaped when it exits
	return pr.Ident(), nil
}
