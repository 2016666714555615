package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo/internal/workflow"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestContinuationStory is issue 22's session, end to end over MCP: a busy
// session — 50 decisions (8 superseded, one by a late correction of an
// early decision), 5 constraints, a question the user answered, a goal at
// revision 5 with completion conditions, 400 progress notes ending with the
// current-state note, 6 open todos, 3 risks, a branch with a commit since
// the session started plus uncommitted work, a check whose evidence went
// stale, two decoy sessions — seeded only through the tools. A fresh
// client then reads read_session_handoff and read_session_working_set
// (following next_cursor): in at most 3 calls and 32 KiB of tool results it
// has every decision in force in full, every constraint verbatim, the
// answer, every open todo and risk, the goal's completion conditions, the
// stopping-point note, the changed paths and the commit subject, and
// nothing superseded or of the decoys.
func TestContinuationStory(t *testing.T) { eachEngine(t, continuationStory) }

// The bounds of CONTRACT.md §4's continuation: a fresh model reconstructs
// the session in this many calls and bytes of tool results.
const (
	storyMaxCalls = 3
	storyMaxBytes = 32 << 10
)

func continuationStory(t *testing.T, engine string) {
	repo := calcRepo(t)
	gitIn(t, repo, "checkout", "-q", "-b", "feature/checked-math")
	dd := dataDir(t, engine)
	config := filepath.Join(t.TempDir(), "continuo.toml")
	if err := os.WriteFile(config, []byte("[projects.demo.checks.test]\ncommand = [\"go\", \"test\", \"./...\"]\ntimeout_secs = 120\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := start(t, dd, repo, "--config", config)
	cs := connect(t, srv.URL, srv.Admin)
	key := 0
	post := func(sid, kind, text string, extra map[string]any) string {
		t.Helper()
		key++
		args := map[string]any{"session_id": sid, "kind": kind, "text": text, "delivery_key": fmt.Sprint("k", key)}
		for k, v := range extra {
			args[k] = v
		}
		return must(t, cs, "post_session_message", args)["message"].(map[string]any)["message_id"].(string)
	}

	// Two decoy sessions in the same project.
	for i, title := range []string{"DECOY rename the module", "DECOY speed up CI"} {
		d := must(t, cs, "work_on_project", map[string]any{"project": "demo", "instruction": "DECOY task " + fmt.Sprint(i), "title": title})["session_id"].(string)
		post(d, "decision", "DECOY decision: use a monorepo", nil)
		post(d, "todo", "DECOY todo: move the files", nil)
		post(d, "progress", "DECOY state: nothing done", map[string]any{"tags": []string{"handoff"}})
	}

	started := must(t, cs, "work_on_project", map[string]any{"project": "demo", "title": "Checked arithmetic for package calc",
		"instruction": "Add overflow-checked arithmetic (AddChecked, SubChecked, MulChecked) to package calc, with tests and docs."})
	sid, ref := started["session_id"].(string), started["session_ref"].(string)

	// The work since the session started: a commit on the branch, and a
	// check that passes on it.
	writeFile(t, repo, "calc.go", calcSource+checkedAdd)
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "-q", "-m", "calc: add AddChecked with overflow detection")
	if r := must(t, cs, "run_validation", map[string]any{"session_id": sid, "check": "test", "wait_secs": 60})["run"].(map[string]any); r["state"] != "succeeded" {
		t.Fatalf("the check on the committed source: %v", r)
	}

	var constraints []string
	for i, c := range []string{
		"Never change the signature of Add, Sub or Mul: other teams call them.",
		"No new dependencies: the standard library only.",
		"Every exported function gets a doc comment that starts with its name.",
		"Run go test ./... before every commit and say so in the progress note.",
		"Ask before renaming anything exported.",
	} {
		prio := "normal"
		if i < 2 {
			prio = "high"
		}
		post(sid, "guidance", c, map[string]any{"priority": prio})
		constraints = append(constraints, c)
	}

	goal := must(t, cs, "create_goal", map[string]any{"session_id": sid, "title": "Overflow-checked arithmetic", "idempotency_key": "g1",
		"objective": "Callers can detect int64 overflow in Add, Sub and Mul without panics.",
		"completion_conditions": []string{"AddChecked, SubChecked and MulChecked exist, each returning (result, ok)",
			"go test ./... passes, with boundary-value table tests", "the README documents the overflow rule"},
		"steps": []map[string]any{{"id": "add", "title": "AddChecked"}, {"id": "sub", "title": "SubChecked"}, {"id": "mul", "title": "MulChecked"}}})["goal"].(map[string]any)
	gid := goal["goal_id"].(string)
	conditions := goal["completion_conditions"].([]any)
	goalStep := func(rev int, completed []string, current string) {
		must(t, cs, "checkpoint_goal", map[string]any{"goal_id": gid, "expected_revision": rev, "idempotency_key": fmt.Sprint("c", rev),
			"completed_step_ids": completed, "current_step_id": current, "summary": "step done"})
	}
	goalStep(1, []string{"add"}, "sub")
	must(t, cs, "revise_goal_plan", map[string]any{"goal_id": gid, "expected_revision": 2, "idempotency_key": "r2", "reason": "docs are a step",
		"steps": []map[string]any{{"id": "add", "title": "AddChecked"}, {"id": "sub", "title": "SubChecked"}, {"id": "mul", "title": "MulChecked"},
			{"id": "docs", "title": "README: the overflow rule"}}})
	goalStep(3, []string{"sub"}, "mul")
	goalStep(4, nil, "mul")

	// 50 decisions among 400 progress notes: 8 superseded (the last one a
	// late correction of D03), 4 of high priority.
	supersedes := map[int]int{12: 2, 18: 5, 25: 9, 31: 14, 37: 20, 42: 27, 46: 33, 49: 3}
	ids := make([]string, 50)
	inForce := map[string]string{}
	progress := 0
	for i := range 50 {
		extra := map[string]any{}
		if old, ok := supersedes[i]; ok {
			extra["supersedes"] = ids[old]
			delete(inForce, ids[old])
		}
		if i%21 == 0 || i == 44 {
			extra["priority"] = "high"
		}
		text := decisionText(i)
		if i == 49 {
			text = "D49 corrects D03: MulChecked detects overflow by dividing back (r/b == a), not with math/bits, which was slower here."
		}
		ids[i] = post(sid, "decision", text, extra)
		inForce[ids[i]] = text
		for range 8 {
			post(sid, "progress", fmt.Sprintf("P%03d: edited calc.go and ran go test ./... (%d tests pass)", progress, 10+progress%7), nil)
			progress++
		}
		switch i {
		case 8:
			q := post(sid, "question", "Should MulChecked return (result, ok bool) or an error?", nil)
			post(sid, "answer", "(result, ok bool), like AddChecked: the user decided, no error values.", map[string]any{"reply_to": q})
		}
	}
	todos := map[string]string{}
	for i, text := range []string{
		"Implement MulChecked per " + ids[10] + " using the bits.Mul64 high word.",
		"Add boundary-value table tests for MulChecked (MinInt64 * -1 overflows).",
		"Document the overflow rule in the README per " + ids[16] + ".",
		"Add a fuzz test comparing AddChecked with big.Int.",
		"Write the CHANGELOG entry under Unreleased.",
		"Benchmark AddChecked against Add; it must stay within 2 ns/op.",
		"Resolved later: rename calc_test.go helpers.",
		"Resolved later: drop the unused constant.",
	} {
		id := post(sid, "todo", text, nil)
		if i >= 6 {
			must(t, cs, "resolve_session_message", map[string]any{"session_id": sid, "message_id": id, "resolution": "done"})
		} else {
			todos[id] = text
		}
	}
	risks := map[string]string{}
	for _, text := range []string{
		"MinInt64 / -1 overflows too: SubChecked and a future DivChecked must handle it.",
		"Callers on 32-bit platforms: int64 math is slower there.",
		"The README example may drift from the code: it is not compiled.",
	} {
		risks[post(sid, "risk", text, nil)] = text
	}
	stateText := "DONE: AddChecked (committed) and SubChecked (uncommitted, in calc.go). IN PROGRESS: MulChecked in mul.go, per " + ids[10] +
		". NEXT: boundary tests, then the README (" + ids[16] + "). VERIFY: go test ./... — the evidence is stale since the last edit."
	state := post(sid, "progress", stateText, map[string]any{"tags": []string{"handoff"}})

	// Uncommitted work: the evidence is now stale.
	writeFile(t, repo, "calc.go", calcSource+checkedAdd+checkedSub)
	writeFile(t, repo, "mul.go", "package calc\n\n// MulChecked is not done yet.\n")

	// A fresh client of the same group reads the session.
	fresh := connect(t, srv.URL, token(t, dd, "admin", "sessions:read"))
	var texts []string
	size := 0
	read := func(tool string, args map[string]any) map[string]any {
		t.Helper()
		res, err := fresh.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil || res.IsError || len(res.Content) != 1 {
			t.Fatalf("%s: %v %+v", tool, err, res)
		}
		text := res.Content[0].(*mcp.TextContent).Text // what the model reads
		texts = append(texts, text)
		size += len(text)
		var v map[string]any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	h := read("read_session_handoff", map[string]any{"session_id": ref})
	briefBytes := len(texts[0])
	var brief workflow.Brief
	remarshal(t, h["handoff_brief"], &brief)
	if brief.NextActions[0] != workflow.WorkingSetCall(ref) {
		t.Fatalf("the brief cut in-force sections, yet next_actions[0] = %q", brief.NextActions[0])
	}
	var pages []workflow.WorkingSet
	for args := (map[string]any{"session_id": ref}); ; {
		var p workflow.WorkingSet
		remarshal(t, read("read_session_working_set", args)["working_set"], &p)
		pages = append(pages, p)
		if p.NextCursor == nil {
			break
		}
		args = map[string]any{"session_id": ref, "cursor": *p.NextCursor}
	}
	t.Logf("%s: brief %d bytes (read_session_handoff result %d bytes), working set %d bytes in %d page(s); %d calls, %d bytes in all",
		engine, len(mustMarshal(t, h["handoff_brief"])), briefBytes, size-briefBytes, len(pages), len(texts), size)
	if len(texts) > storyMaxCalls || size > storyMaxBytes {
		t.Errorf("a fresh client needed %d calls and %d bytes, over %d and %d", len(texts), size, storyMaxCalls, storyMaxBytes)
	}

	// Everything in force, in full.
	var ws workflow.WorkingSet
	for _, p := range pages {
		ws.Decisions = append(ws.Decisions, p.Decisions...)
		ws.Constraints = append(ws.Constraints, p.Constraints...)
		ws.Todos = append(ws.Todos, p.Todos...)
		ws.Risks = append(ws.Risks, p.Risks...)
		ws.Answered = append(ws.Answered, p.Answered...)
		ws.Goals = append(ws.Goals, p.Goals...)
		ws.ChangedFiles = append(ws.ChangedFiles, p.ChangedFiles...)
		ws.Commits = append(ws.Commits, p.Commits...)
		if p.CurrentState != nil {
			ws.CurrentState = p.CurrentState
		}
		if p.Validation != nil {
			ws.Validation = p.Validation
		}
		if p.Workspace != nil {
			ws.Workspace = p.Workspace
		}
	}
	sameItems(t, "decisions in force", ws.Decisions, inForce)
	sameItems(t, "open todos", ws.Todos, todos)
	sameItems(t, "open risks", ws.Risks, risks)
	// Constraints verbatim, high priority first, then newest.
	var gotConstraints []string
	for _, c := range ws.Constraints {
		gotConstraints = append(gotConstraints, c.Text)
	}
	want := []string{constraints[1], constraints[0], constraints[4], constraints[3], constraints[2]}
	if !slices.Equal(gotConstraints, want) {
		t.Errorf("constraints %q, want %q verbatim", gotConstraints, want)
	}
	if len(ws.Answered) != 1 || !strings.HasPrefix(ws.Answered[0].Answer.Text, "(result, ok bool)") || ws.Answered[0].Answer.MessageID == "" {
		t.Errorf("answered = %+v", ws.Answered)
	}
	if len(ws.Goals) != 1 || ws.Goals[0].Revision != 5 || len(ws.Goals[0].Conditions) != len(conditions) || ws.Goals[0].Conditions[2] != conditions[2] {
		t.Errorf("goals = %+v", ws.Goals)
	}
	if cs := ws.CurrentState; cs == nil || cs.MessageID != state || cs.Text != stateText {
		t.Errorf("current state = %+v", ws.CurrentState)
	}
	if cs := brief.Task.CurrentState; cs == nil || cs.MessageID != state || cs.Text != stateText || cs.Truncated {
		t.Errorf("the brief's current state = %+v, want the stopping-point note whole", cs)
	}
	paths := map[string]string{}
	for _, c := range ws.ChangedFiles {
		paths[c.Path] = c.Status
	}
	if paths["calc.go"] != ".M" || paths["mul.go"] != "??" || len(ws.Commits) != 1 || ws.Commits[0] != "calc: add AddChecked with overflow detection" ||
		ws.Workspace == nil || ws.Workspace.Branch != "feature/checked-math" {
		t.Errorf("workspace %+v, changed %v, commits %q", ws.Workspace, paths, ws.Commits)
	}
	if ws.Validation == nil || len(ws.Validation.Checks) != 1 || ws.Validation.Checks[0].Status != workflow.CheckStale {
		t.Errorf("validation = %+v", ws.Validation)
	}
	all := strings.Join(texts, "\n")
	for _, old := range supersedes {
		if strings.Contains(all, `"message_id":"`+ids[old]+`"`) {
			t.Errorf("superseded decision D%02d (%s) is shown", old, ids[old])
		}
	}
	if strings.Contains(all, "DECOY") {
		t.Error("a decoy session's text reached the fresh client")
	}
	// Both put the decisions in CONTRACT.md §4's order: the high ones
	// (the correction among them first), the corrections (the late one
	// first: newest), those the current state and the todos cite, then the
	// newest. The brief carries the first of them, whole.
	order := []int{42, 44, 21, 0, 49, 46, 37, 31, 25, 18, 12, 16, 10, 48, 47}
	for j, i := range order {
		if ws.Decisions[j].MessageID != ids[i] {
			t.Errorf("working set decision %d is %q, want D%02d", j, ws.Decisions[j].Text, i)
		}
	}
	if len(brief.Task.Decisions.Items) < 11 {
		t.Errorf("the brief carries %d decisions, want at least the high ones and the corrections", len(brief.Task.Decisions.Items))
	}
	for j, it := range brief.Task.Decisions.Items {
		if it.MessageID != ws.Decisions[j].MessageID || it.Excerpt != ws.Decisions[j].Text || it.Truncated {
			t.Errorf("brief decision %d = %+v, want %+v whole", j, it, ws.Decisions[j])
		}
	}
	if brief.Answered.Returned != 1 || brief.Task.Decisions.Superseded != 8 || brief.Open.Todos.Total != 6 || brief.Open.Risks.Total != 3 {
		t.Errorf("brief coverage: answered %+v, decisions %+v, todos %+v, risks %+v", brief.Answered, brief.Task.Decisions, brief.Open.Todos, brief.Open.Risks)
	}
	if w := brief.Workspace; w == nil || w.Changes == nil || w.Changes.Total != 2 || w.SinceStart == nil || len(w.SinceStart.Subjects) != 1 {
		t.Errorf("the brief's workspace = %+v", brief.Workspace)
	}
}

// sameItems checks that items are exactly want (id → text), each once.
func sameItems(t *testing.T, what string, items []workflow.WorkingItem, want map[string]string) {
	t.Helper()
	seen := map[string]bool{}
	for _, it := range items {
		if seen[it.MessageID] || want[it.MessageID] != it.Text {
			t.Errorf("%s: %s %q is not in force, repeated, or not whole", what, it.MessageID, it.Text)
		}
		seen[it.MessageID] = true
	}
	if len(seen) != len(want) {
		t.Errorf("%s: %d shown, %d in force", what, len(seen), len(want))
	}
}

func remarshal(t *testing.T, v, into any) {
	t.Helper()
	if err := json.Unmarshal(mustMarshal(t, v), into); err != nil {
		t.Fatal(err)
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decisionText is the i-th decision of the story: about 150 bytes of the
// kind a session records.
func decisionText(i int) string {
	areas := []string{"AddChecked", "SubChecked", "MulChecked", "the error path", "the README", "the tests", "the benchmarks"}
	choices := []string{
		"returns (result, ok bool) and never panics",
		"detects overflow from the operands' signs, with no wider type",
		"uses math/bits for the carry and the high word",
		"keeps int64 throughout; no generics until a second caller needs them",
		"is covered by a table of boundary values (MinInt64, MaxInt64, 0, ±1)",
		"stays within 2 ns/op of the unchecked function",
	}
	reasons := []string{"the callers are hot loops", "the user asked for no new dependencies", "it reads like the standard library",
		"the review of AddChecked settled it"}
	return fmt.Sprintf("D%02d: %s %s, because %s.", i, areas[i%len(areas)], choices[i%len(choices)], reasons[i%len(reasons)])
}

const calcSource = `// Package calc is integer arithmetic.
package calc

// Add returns a+b.
func Add(a, b int64) int64 { return a + b }

// Sub returns a-b.
func Sub(a, b int64) int64 { return a - b }
`

const checkedAdd = `
// AddChecked returns a+b and whether it did not overflow.
func AddChecked(a, b int64) (int64, bool) {
	s := a + b
	return s, (s > a) == (b > 0)
}
`

const checkedSub = `
// SubChecked returns a-b and whether it did not overflow.
func SubChecked(a, b int64) (int64, bool) {
	d := a - b
	return d, (d < a) == (b > 0)
}
`

// calcRepo makes a git checkout named demo (the project a first start
// registers) holding package calc, with its test, in one commit on main.
func calcRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "demo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "go.mod", "module example.com/calc\n\ngo 1.21\n")
	writeFile(t, dir, "calc.go", calcSource)
	writeFile(t, dir, "calc_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"2+3\")\n\t}\n}\n")
	gitIn(t, dir, "init", "-q", "-b", "main")
	gitIn(t, dir, "add", ".")
	gitIn(t, dir, "commit", "-q", "-m", "calc: first version")
	return dir
}

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func writeFile(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
