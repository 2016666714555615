package workflow

import (
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/workspace"
)

// Validation is the evidence section: per check of the project, the
// session's newest evidence and what it says now. Status sums them up: the
// worst of failed, stale, running, not_run, passed.
type Validation struct {
	Status    string        `json:"status"`
	Checks    []CheckStatus `json:"checks"`
	Total     int           `json:"total"`
	Truncated bool          `json:"truncated"`
}

// CheckStatus is the newest evidence of one named check: status passed or
// failed while the source is what the evidence ran on, stale once it
// differs, running while a run is under way, not_run without a finished
// run. RunID, Outcome, At and Source are of the run that decides the status
// (the newest finished one; the one under way while running).
type CheckStatus struct {
	Check   string       `json:"check"`
	Status  string       `json:"status"`
	RunID   string       `json:"run_id,omitempty"`
	Outcome string       `json:"outcome,omitempty"` // the run's state
	At      string       `json:"at,omitempty"`
	Source  *BriefSource `json:"source,omitempty"`
	// FailedOutput is the last lines of a failed check's output.
	FailedOutput string `json:"failed_output,omitempty"`
}

// BriefSource is the source a run ran on, by 12-character prefixes (enough
// to tell commits and trees apart; get the run for the whole).
type BriefSource struct {
	Head     string `json:"head"`
	TreeHash string `json:"tree_hash"`
	Clean    bool   `json:"clean"`
}

// The validation statuses, worst first: the section's status is the worst
// of its checks'.
const (
	CheckFailed  = "failed"
	CheckStale   = "stale"
	CheckRunning = "running"
	CheckNotRun  = "not_run"
	CheckPassed  = "passed"
)

var checkRank = map[string]int{CheckFailed: 0, CheckStale: 1, CheckRunning: 2, CheckNotRun: 3, CheckPassed: 4}

// briefEvidence is how many of each check's newest evidence the brief
// reads: enough to find the newest finished run behind a few cancelled or
// interrupted ones.
const briefEvidence = 4

// validation builds the evidence section: every check of the project (the
// first n by name), judged by the session's evidence against the
// checkout's current source.
func validation(p *continuo.Project, evidence []store.EvidenceRun, w *WorkspaceFacts, n int) Validation {
	names := checkNames(p.Checks)
	v := Validation{Status: CheckPassed, Checks: []CheckStatus{}, Total: len(names), Truncated: len(names) > n}
	if len(names) == 0 {
		v.Status = CheckNotRun
	}
	byCheck := map[string][]continuo.Run{}
	for _, e := range evidence {
		byCheck[e.Evidence.Check] = append(byCheck[e.Evidence.Check], e.Run)
	}
	var current *workspace.Source
	if w != nil {
		current = w.Source
	}
	for i, name := range names {
		cs := checkStatus(name, byCheck[name], current)
		if checkRank[cs.Status] < checkRank[v.Status] {
			v.Status = cs.Status
		}
		if i < n {
			v.Checks = append(v.Checks, cs)
		}
	}
	return v
}

// checkStatus judges one check by its newest runs (newest first).
func checkStatus(name string, runs []continuo.Run, current *workspace.Source) CheckStatus {
	cs := CheckStatus{Check: name}
	var r *continuo.Run
	cs.Status, r = judgeCheck(runs, current)
	if r != nil {
		cs.RunID, cs.Outcome = r.ID, string(r.State)
		cs.At = checkedAt(r).Format(continuo.TimeFormat)
		cs.Source = briefSource(r)
	}
	return cs
}

// judgeCheck is the rule of a check's status, from its newest runs
// (newest first) and the checkout's current source (nil when unknown):
// running while the newest is under way; else the newest finished run
// (succeeded, failed, timed_out) gives passed or failed on the source it
// ran on, and stale once the source differs or cannot be read; not_run
// without one. It also returns the run the status rests on: the one under
// way, the newest finished one, or else the newest cancelled or
// interrupted one (no evidence either way); nil without runs.
func judgeCheck(runs []continuo.Run, current *workspace.Source) (string, *continuo.Run) {
	if len(runs) > 0 && !runs[0].State.Terminal() {
		return CheckRunning, &runs[0]
	}
	for i := range runs {
		r := &runs[i]
		switch r.State {
		case continuo.RunSucceeded, continuo.RunFailed, continuo.RunTimedOut:
			switch {
			case current == nil || current.Head != r.SourceHead || current.Tree != r.SourceTree:
				// Unknown counts as changed: a check is passed only
				// on the source it passed on.
				return CheckStale, r
			case r.State == continuo.RunSucceeded:
				return CheckPassed, r
			default:
				return CheckFailed, r
			}
		}
	}
	if len(runs) > 0 {
		return CheckNotRun, &runs[0] // cancelled or interrupted: not evidence either way
	}
	return CheckNotRun, nil
}

// checkedAt is when a run's evidence dates from: its end, or its creation
// while it has not ended.
func checkedAt(r *continuo.Run) time.Time {
	if r.EndedAt != nil {
		return *r.EndedAt
	}
	return r.CreatedAt
}

func prefix(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// sourceChanged compares the current source with the one the session's
// newest finished validation run ran on; nil without such a run or without
// the current source.
func sourceChanged(evidence []store.EvidenceRun, w *WorkspaceFacts) *bool {
	var newest *continuo.Run
	for i := range evidence {
		r := &evidence[i].Run
		if r.EndedAt == nil || r.State != continuo.RunSucceeded && r.State != continuo.RunFailed && r.State != continuo.RunTimedOut {
			continue
		}
		if newest == nil || r.EndedAt.After(*newest.EndedAt) || r.EndedAt.Equal(*newest.EndedAt) && r.ID > newest.ID {
			newest = r
		}
	}
	if newest == nil || w == nil || w.Source == nil {
		return nil
	}
	changed := w.Source.Head != newest.SourceHead || w.Source.Tree != newest.SourceTree
	return &changed
}
