package workflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/workspace"
)

// randomWorkingSnapshot is a working-set snapshot with r's random mix: texts of
// words, of multibyte characters or of characters JSON escapes to six
// bytes; every section; a workspace of up to 500 changes.
func randomWorkingSnapshot(r *rand.Rand, scale int) *WorkingSnapshot {
	b := randomSnapshot(r)
	texts := []func(n int) string{nasty, func(n int) string { return strings.Repeat("€", n/3) },
		func(n int) string { return strings.Repeat("word ", n/5) }}
	text := func() string { return texts[r.Intn(len(texts))](r.Intn(8000)) }
	msgs := func(start int, kind continuo.Kind, n int) []continuo.Message {
		return newest(start, r.Intn(n+1), kind, continuo.StatusOpen, func(int) string { return text() })
	}
	ws := &WorkingSnapshot{Session: b.Session, Project: b.Project, State: b.State(), Evidence: b.Evidence, Reasons: b.Reasons,
		Guidance: msgs(10000, continuo.KindGuidance, scale), Decisions: msgs(20000, continuo.KindDecision, 3*scale),
		Questions: msgs(30000, continuo.KindQuestion, scale), Todos: msgs(40000, continuo.KindTodo, scale),
		Risks: msgs(50000, continuo.KindRisk, scale), Answered: answeredBy(60000, r.Intn(scale+1), func(int) string { return text() }),
		Goals: testGoals(r.Intn(3), func(int) string { return "goal" })}
	ws.Session.RootInstr = nasty(16384)
	for i := range ws.Decisions {
		if r.Intn(3) == 0 {
			ws.Decisions[i].Supersedes = fmt.Sprintf("msg_%026d", i+1)
		}
	}
	if r.Intn(2) == 0 {
		ch := make([]workspace.Change, r.Intn(workspace.MaxListedChanges+1))
		for j := range ch {
			ch[j] = workspace.Change{Status: ".M", Path: fmt.Sprintf("dir/file-%03d.go", j)}
		}
		ws.Workspace = &WorkspaceFacts{Available: true, Path: "/srv/p", Branch: "main", Head: strings.Repeat("a", 40), Dirty: len(ch) > 0,
			Changes: ch, ChangedTotal: len(ch) + r.Intn(3), StartHead: strings.Repeat("b", 40),
			Commits: &workspace.Commits{Count: 7, Subjects: []string{"third", "second", "first"}}}
	}
	return ws
}

// pages reads every page of a working set, following its cursors.
func pages(t *testing.T, ws *WorkingSnapshot) []*WorkingSet {
	t.Helper()
	var out []*WorkingSet
	var cur workingCursor
	for len(out) < 1000 {
		p, err := workingSetPage(ws, cur)
		if err != nil {
			t.Fatalf("page %d: %v", len(out)+1, err)
		}
		out = append(out, p)
		if p.NextCursor == nil {
			return out
		}
		if cur, err = parseWorkingCursor(*p.NextCursor); err != nil {
			t.Fatalf("page %d's cursor %q: %v", len(out), *p.NextCursor, err)
		}
	}
	t.Fatal("the working set does not end")
	return nil
}

// TestWorkingSetPaging: whatever the mix, following the cursors from the
// first page covers every entry of the working set exactly once, in order;
// every page, as the tool returns it, is at most MaxWorkingSetPage (32 KiB) of valid JSON;
// two reads of one snapshot give the same bytes; each section's total
// counts its items over every page. The cases are drawn in order (the
// same 24 every run) and checked in parallel: each pages through
// megabytes of redacted text, minutes in all under -race.
func TestWorkingSetPaging(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	for i := range 24 {
		ws := randomWorkingSnapshot(r, 1+i%4*16)
		t.Run(fmt.Sprint("case ", i), func(t *testing.T) {
			t.Parallel()
			checkPaging(t, i, ws)
		})
	}
}

// checkPaging checks case i of TestWorkingSetPaging, the working set ws.
func checkPaging(t *testing.T, i int, ws *WorkingSnapshot) {
	entries, _ := workingEntries(ws)
	ps := pages(t, ws)
	var all WorkingSet
	for j, p := range ps {
		raw, err := json.Marshal(map[string]any{"working_set": p})
		if err != nil || len(raw) > MaxWorkingSetPage || !utf8.Valid(raw) {
			t.Fatalf("case %d page %d: %d bytes (%v)", i, j+1, len(raw), err)
		}
		if p.Page != j+1 || p.Totals.Pages != len(ps) {
			t.Fatalf("case %d page %d says page %d of %d (of %d)", i, j+1, p.Page, p.Totals.Pages, len(ps))
		}
		if again, _ := workingSetPage(ws, cursorOf(t, ps, j)); !equalJSON(again, p) {
			t.Fatalf("case %d page %d differs when read again", i, j+1)
		}
		all.Constraints = append(all.Constraints, p.Constraints...)
		all.Decisions = append(all.Decisions, p.Decisions...)
		all.Answered = append(all.Answered, p.Answered...)
		all.Todos = append(all.Todos, p.Todos...)
		all.ChangedFiles = append(all.ChangedFiles, p.ChangedFiles...)
	}
	tot := ps[0].Totals
	if len(all.Constraints) != tot.Constraints || len(all.Decisions) != tot.Decisions || len(all.Answered) != tot.Answered ||
		len(all.Todos) != tot.Todos || len(all.ChangedFiles) != tot.ChangedFiles {
		t.Fatalf("case %d: totals %+v, pages hold %d constraints, %d decisions, %d answered, %d todos, %d files", i, tot,
			len(all.Constraints), len(all.Decisions), len(all.Answered), len(all.Todos), len(all.ChangedFiles))
	}
	if tot.Decisions != len(ws.Decisions) || tot.Todos != len(ws.Todos) || tot.Constraints != len(ws.Guidance) {
		t.Fatalf("case %d: totals %+v for %d decisions, %d todos, %d constraints", i, tot, len(ws.Decisions), len(ws.Todos), len(ws.Guidance))
	}
	order := OrderDecisions(ws.Decisions, Citations(ws.State, map[continuo.Kind][]continuo.Message{
		continuo.KindTodo: ws.Todos, continuo.KindQuestion: ws.Questions}, ws.Goals))
	for j, d := range all.Decisions {
		if d.MessageID != order[j].ID {
			t.Fatalf("case %d: decision %d is %s, want %s", i, j, d.MessageID, order[j].ID)
		}
	}
	n := 0
	for _, p := range ps {
		n += countEntries(p)
	}
	if n != len(entries) {
		t.Fatalf("case %d: the pages hold %d entries of %d", i, n, len(entries))
	}
}

func countEntries(p *WorkingSet) int {
	n := len(p.Constraints) + len(p.Goals) + len(p.Decisions) + len(p.Answered) + len(p.Questions) + len(p.Todos) + len(p.Risks) +
		len(p.ChangedFiles) + len(p.Commits)
	for _, one := range []bool{p.Task != nil, p.CurrentState != nil, p.Workspace != nil, p.Validation != nil} {
		if one {
			n++
		}
	}
	return n
}

func cursorOf(t *testing.T, ps []*WorkingSet, j int) workingCursor {
	t.Helper()
	if j == 0 {
		return workingCursor{}
	}
	c, err := parseWorkingCursor(*ps[j-1].NextCursor)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestWorkingSetContents: what is in force is there in full and redacted;
// the superseded, the resolved and older progress are only counted; an
// answer overruled by a decision is counted, not listed; the cursor of an
// earlier state is a conflict, a cursor not of this working set refused.
func TestWorkingSetContents(t *testing.T) {
	secret := "sk-" + "Zq8RtY2uIo4pAs6dFg0hJk1L"
	s := testSnapshot()
	ws := &WorkingSnapshot{Session: s.Session, Project: s.Project}
	ws.Session.Counts = continuo.Counts{Messages: 500, Decisions: 12, SupersededDecisions: 8, ResolvedQuestions: 3, Progress: 400}
	h := testMsg(900, continuo.KindProgress, continuo.StatusOpen, "DONE: a. NEXT: b, per msg_00000000000000000000000101. key "+secret)
	h.Tags = []string{continuo.HandoffTag}
	ws.State = &h
	ws.Guidance = []continuo.Message{testMsg(50, continuo.KindGuidance, continuo.StatusOpen, strings.Repeat("never push to main ", 200))}
	ws.Decisions = newest(100, 4, continuo.KindDecision, continuo.StatusOpen, func(i int) string { return fmt.Sprint("decision ", i) })
	ws.Decisions[3].Supersedes = fmt.Sprintf("msg_%026d", 7)
	ws.Answered = answeredBy(200, 3, func(i int) string { return fmt.Sprint("answer ", i) })
	ws.Answered[1].Replaced = fmt.Sprintf("msg_%026d", 102)
	ws.Answered[2].Answer = nil
	ws.Answered[2].Question.Resolution = "resolved: yes"
	ws.Todos = []continuo.Message{testMsg(300, continuo.KindTodo, continuo.StatusOpen, "todo with "+secret)}
	ws.Goals = testGoals(1, func(int) string { return "ship" })
	ws.Goals[0].CompletionConditions = []string{"go test ./... passes"}
	p, err := workingSetPage(ws, workingCursor{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(p)
	out := string(raw)
	if strings.Contains(out, "Zq8RtY2uIo4pAs6dFg0hJk1L") {
		t.Fatalf("secret in the working set: %s", out)
	}
	if p.Constraints[0].Text != ws.Guidance[0].Text || !strings.HasPrefix(p.CurrentState.Text, "DONE: a. NEXT: b, per msg_") ||
		!strings.Contains(p.CurrentState.Text, "[redacted]") {
		t.Errorf("constraint or state not whole: %+v %+v", p.Constraints[0], p.CurrentState)
	}
	// Cited by the current state (101 = "decision 1"), then the correction
	// first within normal priority: 100 supersedes 7.
	var ids []string
	for _, d := range p.Decisions {
		ids = append(ids, d.MessageID)
	}
	if want := []string{fmt.Sprintf("msg_%026d", 100), fmt.Sprintf("msg_%026d", 101), fmt.Sprintf("msg_%026d", 103),
		fmt.Sprintf("msg_%026d", 102)}; !slices.Equal(ids, want) {
		t.Errorf("decisions %v, want %v", ids, want)
	}
	if len(p.Answered) != 2 || p.Answered[0].Answer.Text != "answer 2" || p.Answered[1].Answer.Text != "resolved: yes" ||
		p.Answered[1].Answer.MessageID != "" || p.History.ReplacedAnswers != 1 {
		t.Errorf("answered %+v, history %+v", p.Answered, p.History)
	}
	if p.History != (WorkingHistory{Messages: 500, SupersededDecisions: 8, ResolvedQuestions: 3, ReplacedAnswers: 1, Progress: 399}) {
		t.Errorf("history %+v", p.History)
	}
	if g := p.Goals[0]; len(g.Conditions) != 1 || len(g.Steps) != 3 || g.CurrentStepID != "b" || g.Objective == "" {
		t.Errorf("goal %+v", g)
	}
	if p.NextCursor != nil || p.Totals.Pages != 1 || p.Page != 1 {
		t.Errorf("one page expected: %+v", p.Totals)
	}

	// Cursors: of an earlier state, conflict; malformed, refused.
	ws.Todos = append(ws.Todos, testMsg(301, continuo.KindTodo, continuo.StatusOpen, strings.Repeat("x", 7000)))
	for range 20 {
		ws.Decisions = append(ws.Decisions, testMsg(400+len(ws.Decisions), continuo.KindDecision, continuo.StatusOpen, strings.Repeat("<>", 3900)))
	}
	first, err := workingSetPage(ws, workingCursor{})
	if err != nil || first.NextCursor == nil {
		t.Fatalf("first page: %v, %+v", err, first)
	}
	cur, err := parseWorkingCursor(*first.NextCursor)
	if err != nil {
		t.Fatal(err)
	}
	ws.Todos = ws.Todos[:1]
	if _, err := workingSetPage(ws, cur); continuo.ErrorCode(err) != continuo.CodeConflict {
		t.Errorf("a cursor of an earlier state: %v, want conflict", err)
	}
	for _, bad := range []string{"", "w", "w1.2.3.4", "w0.1.abcdefgh.0123456789ab", "w2.0.abcdefgh.0123456789ab", "w2.01.abcdefgh.0123456789ab",
		"c2.1.abcdefgh.0123456789ab", "w2.1.abcdefgh.0123456789a", "w2.1.abcdefgh.0123456789ab.x"} {
		if _, err := parseWorkingCursor(bad); continuo.ErrorCode(err) != continuo.CodeInvalidInput {
			t.Errorf("cursor %q: %v, want invalid_input", bad, err)
		}
	}
}
