package workflow

import (
	"context"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/run"
	"github.com/continuo-dev/continuo/internal/store"
)

// briefSource is the source a validation run ran on, by 12-character
// prefixes: its head, the hash that identifies the tested tree (head and
// uncommitted changes; workspace.Source.TreeHash), and whether it had no
// uncommitted changes.
func briefSource(r *continuo.Run) *BriefSource {
	src := RunSource(r)
	if src == nil {
		return &BriefSource{Head: prefix(r.SourceHead, 12)}
	}
	return &BriefSource{Head: prefix(src.Head, 12), TreeHash: prefix(src.TreeHash(), 12), Clean: src.Clean}
}

// The brief carries the last lines of a failed check's output
// (run.ReadTail: at most run.TailLines lines and run.TailBytes bytes) for
// its first briefFailedChecks failed checks, so that a model sees why
// without fetching the run.
const briefFailedChecks = 2

// briefValidation is the brief's validation section, with the failed
// checks' last lines.
func briefValidation(s *Snapshot, n int) Validation {
	v := validation(&s.Project, s.Evidence, s.Workspace, n)
	shown := 0
	for i := range v.Checks {
		cs := &v.Checks[i]
		if cs.Status != CheckFailed || shown == briefFailedChecks {
			continue
		}
		if out := s.FailedOutput[cs.RunID]; out != "" {
			cs.FailedOutput = out
			shown++
		}
	}
	return v
}

// failedOutputs reads the last lines of each check's newest finished run
// when that run failed (the run a failed status rests on), by run ID.
func failedOutputs(ctx context.Context, tx store.Tx, evidence []store.EvidenceRun) (map[string]string, error) {
	out := map[string]string{}
	seen := map[string]bool{}
	for _, e := range evidence { // by check, newest first
		r := &e.Run
		if seen[e.Evidence.Check] {
			continue
		}
		switch r.State {
		case continuo.RunSucceeded:
			seen[e.Evidence.Check] = true
		case continuo.RunFailed, continuo.RunTimedOut:
			seen[e.Evidence.Check] = true
			if len(out) == briefFailedChecks*2 {
				continue
			}
			tail, err := run.ReadTail(ctx, tx, r)
			if err != nil {
				return nil, err
			}
			if tail != "" {
				out[r.ID] = tail
			}
		}
	}
	return out, nil
}
