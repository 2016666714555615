package workflow

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/workspace"
)

func evidenceRun(n int, check string, state continuo.RunState, head, tree string) store.EvidenceRun {
	at := briefBase.Add(time.Duration(n) * time.Minute)
	r := continuo.Run{ID: fmt.Sprintf("run_%026d", n), Kind: continuo.RunValidation, State: state, Check: check,
		SourceHead: head, SourceTree: tree, CreatedAt: at}
	if state.Terminal() {
		end := at.Add(time.Second)
		r.EndedAt = &end
	}
	return store.EvidenceRun{Evidence: continuo.Evidence{Check: check, RunID: r.ID, CreatedAt: at}, Run: r}
}

// TestBriefValidation: each check's status from its newest evidence and
// the current source, the section's sum, and the hints that name the
// check to run.
func TestBriefValidation(t *testing.T) {
	cur := &workspace.Source{Head: strings.Repeat("a", 40), Tree: strings.Repeat("b", 64)}
	old := &workspace.Source{Head: strings.Repeat("a", 40), Tree: strings.Repeat("c", 64)}
	for _, tc := range []struct {
		name     string
		evidence []store.EvidenceRun // newest first per check
		source   *workspace.Source
		want     map[string]string // check → status
		sum      string
		outcome  string // of "test"
	}{
		{"nothing ran", nil, cur, map[string]string{"test": "not_run", "lint": "not_run", "vet": "not_run"}, "not_run", ""},
		{"passed on this source", []store.EvidenceRun{evidenceRun(1, "test", continuo.RunSucceeded, cur.Head, cur.Tree)}, cur,
			map[string]string{"test": "passed"}, "not_run", "succeeded"},
		{"passed on other source", []store.EvidenceRun{evidenceRun(1, "test", continuo.RunSucceeded, old.Head, old.Tree)}, cur,
			map[string]string{"test": "stale"}, "stale", "succeeded"},
		{"failed", []store.EvidenceRun{evidenceRun(1, "test", continuo.RunFailed, cur.Head, cur.Tree)}, cur,
			map[string]string{"test": "failed"}, "failed", "failed"},
		{"timed out is failed", []store.EvidenceRun{evidenceRun(1, "test", continuo.RunTimedOut, cur.Head, cur.Tree)}, cur,
			map[string]string{"test": "failed"}, "failed", "timed_out"},
		{"running", []store.EvidenceRun{evidenceRun(2, "test", continuo.RunRunning, cur.Head, cur.Tree),
			evidenceRun(1, "test", continuo.RunSucceeded, cur.Head, cur.Tree)}, cur, map[string]string{"test": "running"}, "running", "running"},
		{"cancelled behind a pass", []store.EvidenceRun{evidenceRun(2, "test", continuo.RunCancelled, cur.Head, cur.Tree),
			evidenceRun(1, "test", continuo.RunSucceeded, cur.Head, cur.Tree)}, cur, map[string]string{"test": "passed"}, "not_run", "succeeded"},
		{"only interrupted", []store.EvidenceRun{evidenceRun(2, "test", continuo.RunInterrupted, cur.Head, cur.Tree)}, cur,
			map[string]string{"test": "not_run"}, "not_run", "interrupted"},
		{"source unknown", []store.EvidenceRun{evidenceRun(1, "test", continuo.RunSucceeded, cur.Head, cur.Tree)}, nil,
			map[string]string{"test": "stale"}, "stale", "succeeded"},
		{"all passed", []store.EvidenceRun{evidenceRun(3, "lint", continuo.RunSucceeded, cur.Head, cur.Tree),
			evidenceRun(1, "test", continuo.RunSucceeded, cur.Head, cur.Tree), evidenceRun(2, "vet", continuo.RunSucceeded, cur.Head, cur.Tree)}, cur,
			map[string]string{"test": "passed", "lint": "passed", "vet": "passed"}, "passed", "succeeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testSnapshot()
			s.Project.Root = "/srv/parser"
			s.Workspace = &WorkspaceFacts{Available: true, Path: "/srv/parser", Head: cur.Head, Source: tc.source}
			s.Evidence = tc.evidence
			b, raw := BuildBrief(s)
			if len(raw) > MaxBriefBytes {
				t.Fatalf("brief is %d bytes", len(raw))
			}
			got := map[string]CheckStatus{}
			for _, cs := range b.Validation.Checks {
				got[cs.Check] = cs
			}
			for check, want := range tc.want {
				if got[check].Status != want {
					t.Errorf("%s = %s, want %s", check, got[check].Status, want)
				}
			}
			if b.Validation.Status != tc.sum {
				t.Errorf("section status = %s, want %s", b.Validation.Status, tc.sum)
			}
			if got["test"].Outcome != tc.outcome {
				t.Errorf("test outcome = %q, want %q", got["test"].Outcome, tc.outcome)
			}
			if cs := got["test"]; cs.RunID != "" && (cs.Source == nil || len(cs.Source.Head) != 12 || cs.At == "") {
				t.Errorf("test evidence = %+v", cs)
			}
			actions := strings.Join(b.NextActions, "\n")
			st := got["test"]
			call := fmt.Sprintf("run_validation(session_id=%q, check=%q)", "~s3", "test")
			wantHint := st.Status == CheckFailed || st.Status == CheckStale || st.Status == CheckNotRun
			if strings.Contains(actions, call) != wantHint {
				t.Errorf("hint to run test (%s): want %v:\n%s", st.Status, wantHint, actions)
			}
			if st.Status == CheckRunning && !strings.Contains(actions, fmt.Sprintf("observe_run(run_id=%q)", st.RunID)) {
				t.Errorf("no observe hint for the running check:\n%s", actions)
			}
			sc := b.Workspace.SourceChanged
			switch {
			case tc.source == nil || tc.outcome == "" || tc.outcome == "interrupted" || tc.outcome == "running" && len(tc.evidence) == 1:
				if sc != nil {
					t.Errorf("source_changed_since_evidence = %v, want absent", *sc)
				}
			case sc == nil:
				t.Error("source_changed_since_evidence absent")
			case *sc != (tc.name == "passed on other source"):
				t.Errorf("source_changed_since_evidence = %v", *sc)
			}
		})
	}
}

// A note claiming the tests pass changes nothing: only runs are evidence.
func TestBriefNotesAreNotEvidence(t *testing.T) {
	s := testSnapshot()
	s.Progress = newest(20, 1, continuo.KindProgress, continuo.StatusOpen, func(int) string { return "all tests pass, go test ./... is green" })
	b, _ := BuildBrief(s)
	for _, cs := range b.Validation.Checks {
		if cs.Status != CheckNotRun {
			t.Errorf("%s = %s after a note, want not_run", cs.Check, cs.Status)
		}
	}
}
