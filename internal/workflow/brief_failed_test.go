package workflow_test

import (
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/run"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/workflow"
)

func TestBriefFailedOutput(t *testing.T) { stores.Each(t, testBriefFailedOutput) }

// A failed check's entry in the brief carries the last lines of what it
// printed — at most run.TailLines lines and FailedBytes bytes,
// redacted, without the log's state lines — and a passed one none.
func testBriefFailedOutput(t *testing.T) {
	f, _, _ := validationFixture(t)
	script := `i=1; while [ $i -le 40 ]; do echo "line $i"; i=$((i+1)); done; echo "token sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"; echo "FAIL: TestX" >&2; exit 1`
	err := f.store.Write(f.ctx, func(tx store.Tx) error {
		return tx.ProjectSetChecks(f.ctx, f.project.ID, map[string]continuo.Check{
			"unit": {Command: []string{"sh", "-c", script}},
			"ok":   {Command: []string{"echo", "fine"}},
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	s := f.start(t)
	for _, check := range []string{"unit", "ok"} {
		if _, err := f.wf.RunValidation(f.ctx, f.caller, s.ID, check, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	h, err := f.wf.ReadHandoff(f.ctx, f.caller, s.ID, "", false)
	if err != nil {
		t.Fatal(err)
	}
	byCheck := map[string]workflow.CheckStatus{}
	for _, cs := range h.Brief.Validation.Checks {
		byCheck[cs.Check] = cs
	}
	unit, ok := byCheck["unit"], byCheck["ok"]
	out := unit.FailedOutput
	lines := strings.Split(out, "\n")
	if unit.Status != workflow.CheckFailed || len(lines) != run.TailLines || len(out) > run.TailBytes ||
		lines[0] != "line 23" || lines[len(lines)-1] != "FAIL: TestX" {
		t.Fatalf("failed check's output (%s, %d lines):\n%s", unit.Status, len(lines), out)
	}
	if strings.Contains(out, "sk-ant-api03-AAAA") || strings.Contains(out, "failed (exit status") {
		t.Errorf("the excerpt holds a secret or a state line:\n%s", out)
	}
	if ok.Status != workflow.CheckPassed || ok.FailedOutput != "" {
		t.Errorf("passed check: %+v", ok)
	}
	if len(h.BriefJSON) > workflow.MaxBriefBytes {
		t.Errorf("brief %d bytes", len(h.BriefJSON))
	}
}
