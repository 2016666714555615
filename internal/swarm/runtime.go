package swarm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/continuo-dev/continuo/internal/proc"
)

// ProcessRuntime is the process carrier runtime (CONTRACT.md §8): it
// starts the configured command as a replacement carrier, in its own
// process group, with a minimal environment — PATH, HOME, the variables
// the operator named, CONTINUO_SERVER and what the planner adds (the
// ticket, the swarm, the worker, the carrier's own token) — never a secret
// in argv, never the server's environment. A carrier is detached: it
// outlives the server that started it (a restart does not take a worker's
// carrier away), and writes its output to LogDir/<name>.log.
type ProcessRuntime struct {
	Argv     []string
	EnvNames []string // passed through from the server's environment
	Server   string   // the MCP URL the carrier connects to
	Dir      string   // its working directory
	LogDir   string   // where its log is appended
}

// Start implements Runtime.
func (p *ProcessRuntime) Start(_ context.Context, name string, env []string) (string, error) {
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
	if err := os.MkdirAll(p.LogDir, 0o700); err != nil {
		return "", fmt.Errorf("swarm: the carriers' log directory: %w", err)
	}
	log, err := os.OpenFile(filepath.Join(p.LogDir, filepath.Base(name)+".log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return "", fmt.Errorf("swarm: a carrier's log: %w", err)
	}
	defer log.Close() // the carrier has its own copy
	pr, err := proc.Start(proc.Spec{Argv: p.Argv, Dir: p.Dir, Env: e, Detach: true, Log: log})
	if err != nil {
		return "", err
	}
	go func() { _, _ = pr.Wait() }() // reaped when it exits
	return pr.Ident(), nil
}
