package web_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/workflow"
)

func TestDashboardSessionNotes(t *testing.T) { stores.Each(t, testDashboardSessionNotes) }

// testDashboardSessionNotes: the session page's notes, newest first, 50 a
// page with the listing's cursor; filtered by kind, status and words;
// superseded notes struck through and linked to what replaced them;
// resolved ones marked; an answer linked to its question and back, by
// anchor on the same page and to the note's own page otherwise.
func testDashboardSessionNotes(t *testing.T) {
	w := newSessionsWorld(t)
	s := w.start(t, "Notes", "write things down")
	q := w.note(t, s.ID, continuo.KindQuestion, "which database?")
	a := w.post(t, workflow.Post{SessionID: s.ID, Kind: continuo.KindAnswer, Text: "PostgreSQL", ReplyTo: q.ID})
	late := w.post(t, workflow.Post{SessionID: s.ID, Kind: continuo.KindAnswer, Text: "or SQLite for small setups", ReplyTo: q.ID})
	old := w.note(t, s.ID, continuo.KindDecision, "tabs")
	repl := w.post(t, workflow.Post{SessionID: s.ID, Kind: continuo.KindDecision, Text: "spaces", Supersedes: old.ID})
	todo := w.note(t, s.ID, continuo.KindTodo, "write the docs")
	if _, _, err := w.s.wf.ResolveMessage(t.Context(), w.ac, s.ID, todo.ID, "written"); err != nil {
		t.Fatal(err)
	}
	var progress []*continuo.Message
	for i := range 55 {
		progress = append(progress, w.note(t, s.ID, continuo.KindProgress, fmt.Sprintf("step %d", i)))
	}
	b := w.s.browser(w.alice)

	// Page 1: the 50 newest; page 2 the rest, down to the instruction.
	p1 := b.page("/s/" + s.ID)
	got := sessionsNotesOn(p1.body)
	if len(got) != 50 || got[0] != progress[54].ID || got[49] != progress[5].ID {
		t.Fatalf("page 1: %d notes, %v…", len(got), got[:min(2, len(got))])
	}
	sessionsHas(t, "page 1", p1.body, `<span class="count">62</span>`)
	p2 := b.page(sessionsLink(t, p1.body, "cursor="))
	got = sessionsNotesOn(p2.body)
	want := []string{progress[4].ID, progress[3].ID, progress[2].ID, progress[1].ID, progress[0].ID, todo.ID, repl.ID, old.ID, late.ID, a.ID, q.ID, "instruction-1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("page 2: %v\nwant %v", got, want)
	}
	sessionsHas(t, "page 2", p2.body, "← First page")
	sessionsLacks(t, "page 2", p2.body, "Older notes →")

	// On one page: struck through, linked both ways, resolved.
	sessionsHas(t, "superseded note", sessionsSection(t, p2.body, "article", old.ID), `status-superseded`, "<s>tabs</s>",
		`superseded by <a class="mono" href="#`+repl.ID+`">`)
	sessionsHas(t, "replacing note", sessionsSection(t, p2.body, "article", repl.ID), `replaces <a class="mono" href="#`+old.ID+`">`)
	sessionsLacks(t, "replacing note", sessionsSection(t, p2.body, "article", repl.ID), "<s>")
	sessionsHas(t, "question", sessionsSection(t, p2.body, "article", q.ID), `badge-resolved`, `with answer <a class="mono" href="#`+a.ID+`">`, `resolved by <span class="author">`,
		`answered in <a class="mono" href="#`+late.ID+`">`)
	sessionsHas(t, "answer", sessionsSection(t, p2.body, "article", a.ID), `answers <a class="mono" href="#`+q.ID+`">`)
	sessionsHas(t, "late answer", sessionsSection(t, p2.body, "article", late.ID), `answers <a class="mono" href="#`+q.ID+`">`)
	sessionsHas(t, "resolved todo", sessionsSection(t, p2.body, "article", todo.ID), "badge-resolved", "Resolution: written")

	// Filters: kinds, status, words, order; a link to a note elsewhere
	// goes to its own page.
	answers := b.page("/s/" + s.ID + "?kind=answer")
	if got := sessionsNotesOn(answers.body); fmt.Sprint(got) != fmt.Sprint([]string{late.ID, a.ID}) {
		t.Errorf("answers: %v", got)
	}
	sessionsHas(t, "answers", answers.body, `<span class="count">2 matching</span>`, `value="answer" checked`,
		`answers <a class="mono" href="/s/`+s.ID+`/m/`+q.ID+`">`)
	if got := sessionsNotesOn(b.page("/s/" + s.ID + "?kind=decision&kind=todo&status=open").body); fmt.Sprint(got) != fmt.Sprint([]string{repl.ID}) {
		t.Errorf("open decisions and todos: %v", got)
	}
	if got := sessionsNotesOn(b.page("/s/" + s.ID + "?q=sqlite+small").body); fmt.Sprint(got) != fmt.Sprint([]string{late.ID}) {
		t.Errorf("words: %v", got)
	}
	if got := sessionsNotesOn(b.page("/s/" + s.ID + "?order=oldest&kind=instruction&kind=question").body); fmt.Sprint(got) != fmt.Sprint([]string{"instruction-1", q.ID}) {
		t.Errorf("oldest instructions and questions: %v", got)
	}
	for _, bad := range []string{"?kind=secret", "?status=gone", "?cursor=bogus", "?q=%2A%2A"} {
		if r := b.get("/s/" + s.ID + bad); r.StatusCode != http.StatusBadRequest {
			t.Errorf("GET /s/…%s: %d, want 400", bad, r.StatusCode)
		}
	}
	// The session by its reference is the same page.
	sessionsHas(t, "by ref", b.page("/s/~s1").body, "~s1 · Notes")
}

func TestDashboardSessionMessage(t *testing.T) { stores.Each(t, testDashboardSessionMessage) }

// testDashboardSessionMessage: a note's own page shows it with what it
// answers, what answered it and what it replaced or was replaced by, each
// linking on.
func testDashboardSessionMessage(t *testing.T) {
	w := newSessionsWorld(t)
	s := w.start(t, "One note", "begin")
	q := w.note(t, s.ID, continuo.KindQuestion, "ship on Friday?")
	a := w.post(t, workflow.Post{SessionID: s.ID, Kind: continuo.KindAnswer, Text: "no, Monday", ReplyTo: q.ID})
	b := w.s.browser(w.alice)
	qp := b.page("/s/" + s.ID + "/m/" + q.ID)
	sessionsHas(t, "question page", qp.body, "ship on Friday?", "<h2>Answered by</h2>", "no, Monday", `href="/s/`+s.ID+`/m/`+a.ID+`"`,
		`href="/s/`+s.ID+`"`)
	ap := b.page("/s/" + s.ID + "/m/" + a.ID)
	sessionsHas(t, "answer page", ap.body, "<h2>In reply to</h2>", "ship on Friday?", `href="/s/`+s.ID+`/m/`+q.ID+`"`)
	other := w.start(t, "Another", "begin")
	for _, path := range []string{"/s/" + other.ID + "/m/" + q.ID, "/s/" + s.ID + "/m/" + continuo.NewID(continuo.PrefixMessage, time.Now())} {
		if r := b.get(path); r.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, r.StatusCode)
		}
	}
	if r := b.get("/s/" + s.ID + "/m/nota"); r.StatusCode != http.StatusBadRequest {
		t.Errorf("a malformed message id: %d, want 400", r.StatusCode)
	}
}

// ---- GET /g/{goal} ----

func TestDashboardGoal(t *testing.T) { stores.Each(t, testDashboardGoal) }

// testDashboardGoal: the goal page shows the objective, conditions and
// plan with the current step marked, the checkpoints, and each change of
// the plan as a diff from the plan before it.
func testDashboardGoal(t *testing.T) {
	w := newSessionsWorld(t)
	ctx := t.Context()
	s := w.start(t, "Release 2.0", "ship it")
	g := w.goal(t, s.ID, workflow.NewGoalInput{Title: "Ship 2.0", Objective: "Release version 2.0\nto everyone",
		CompletionConditions: []string{"tag pushed", "notes published"}}, "freeze", "Freeze", "test", "Test", "docs", "Docs")
	g = w.checkpoint(t, g, []string{"freeze"}, "test", "frozen on Monday")
	g = w.revise(t, g, "docs move to the website", "test", "Test everything", "freeze", "Freeze", "site", "Website")
	b := w.s.browser(w.alice)
	sp := b.page("/s/" + s.ID)
	r := b.page(sessionsLink(t, sessionsSection(t, sp.body, "h2", "goals"), "/g/"+g.ID))
	sessionsHas(t, "goal page", r.body, "<h1>Ship 2.0</h1>", "revision 3", "Release version 2.0\nto everyone", "tag pushed", "notes published",
		`href="/s/`+s.ID+`"`, "Release 2.0", "1 of 3 completed")
	plan := sessionsSection(t, r.body, "section", "plan")
	if !regexp.MustCompile(`<li class="step step-in_progress current" aria-current="step">\s*<span class="badge badge-step-in_progress">in_progress</span> <span class="title">Test everything</span>`).MatchString(plan) {
		t.Errorf("the current step is not marked:\n%s", plan)
	}
	if strings.Count(plan, "current step") != 1 {
		t.Errorf("the plan marks %d current steps", strings.Count(plan, "current step"))
	}
	sessionsHas(t, "checkpoints", sessionsSection(t, r.body, "section", "checkpoints"), "frozen on Monday", "revision 1 → 2", "✓ Freeze", "current: Test")
	sessionsLacks(t, "checkpoints", sessionsSection(t, r.body, "section", "checkpoints"), "docs move")
	history := sessionsSection(t, r.body, "section", "history")
	sessionsHas(t, "history", history, "2 changes",
		"Revision 2 → 3", "plan revised", "docs move to the website", "+ added <span class=\"title\">Website</span> <code>site</code>",
		"− removed <span class=\"title\">Docs</span> <code>docs</code>", "<del>Test</del> → <ins>Test everything</ins>", "the steps were reordered",
		"Revision 1 → 2", "checkpoint", "<span class=\"title\">Freeze</span> <code>freeze</code>: pending → completed",
		"<span class=\"title\">Test</span> <code>test</code>: pending → in_progress", "current step: none → Test")
	if strings.Index(history, "Revision 2 → 3") > strings.Index(history, "Revision 1 → 2") {
		t.Error("the history is not newest first")
	}
	sessionsLacks(t, "history", history, "badge-cut")

	// Finished goals show how they ended.
	if _, _, err := w.s.wf.UpdateGoal(ctx, w.ac, workflow.FinishInput{GoalID: g.ID, ExpectedRevision: g.Revision, IdempotencyKey: "u",
		Lifecycle: continuo.GoalCancelled, TerminalReason: "postponed to 3.0"}); err != nil {
		t.Fatal(err)
	}
	sessionsHas(t, "cancelled goal", b.page("/g/"+g.ID).body, "<strong>Cancelled:</strong> postponed to 3.0", "badge-cancelled")
	if r := b.get("/g/" + continuo.NewID(continuo.PrefixGoal, time.Now())); r.StatusCode != http.StatusNotFound {
		t.Errorf("unknown goal: %d", r.StatusCode)
	}
}

func TestDashboardGoalHistoryCut(t *testing.T) { stores.Each(t, testDashboardGoalHistoryCut) }

// testDashboardGoalHistoryCut: past the history get_goal returns, the
// page says how many older changes it does not show.
func testDashboardGoalHistoryCut(t *testing.T) {
	w := newSessionsWorld(t)
	s := w.start(t, "Long goal", "begin")
	g := w.goal(t, s.ID, workflow.NewGoalInput{Title: "Many checkpoints", Objective: "o"}, "a", "A")
	for i := range workflow.MaxPlanHistory + 2 {
		g = w.checkpoint(t, g, nil, "", fmt.Sprint("checkpoint ", i))
	}
	body := w.s.browser(w.alice).page("/g/" + g.ID).body
	sessionsHas(t, "history", body, "10 changes", "2 older changes are not shown", "checkpoint 9", "no change to the steps")
	sessionsLacks(t, "history", body, "checkpoint 1<", "checkpoint 0<")
}

// ---- security ----

// sessionsPages makes a session with a note, an answered question and a
// goal with a history, and returns every page of the area about them.
func (w *sessionsWorld) sessionsPages(t *testing.T, title, text string) (pages []string, s *continuo.Session) {
	t.Helper()
	ctx := t.Context()
	s = w.start(t, title, text)
	m := w.post(t, workflow.Post{SessionID: s.ID, Kind: continuo.KindProgress, Text: text, Tags: []string{text, continuo.HandoffTag}})
	q := w.note(t, s.ID, continuo.KindQuestion, text)
	w.post(t, workflow.Post{SessionID: s.ID, Kind: continuo.KindAnswer, Text: text, ReplyTo: q.ID})
	todo := w.note(t, s.ID, continuo.KindTodo, text)
	if _, _, err := w.s.wf.ResolveMessage(ctx, w.ac, s.ID, todo.ID, text); err != nil {
		t.Fatal(err)
	}
	g := w.goal(t, s.ID, workflow.NewGoalInput{Title: title, Objective: text, CompletionConditions: []string{text}}, "one", title)
	g = w.checkpoint(t, g, nil, "one", text)
	g = w.revise(t, g, text, "one", text, "two", title)
	return []string{"/p/webapp", "/p/webapp?q=" + url.QueryEscape(title), "/s/" + s.ID, "/s/" + s.ID + "/m/" + m.ID,
		"/s/" + s.ID + "/m/" + q.ID, "/g/" + g.ID}, s
}

func TestDashboardSessionsEscape(t *testing.T) { stores.Each(t, testDashboardSessionsEscape) }

// testDashboardSessionsEscape: markup in a session's title, notes, tags,
// resolutions and goal texts is shown as text on every page, never run.
func testDashboardSessionsEscape(t *testing.T) {
	w := newSessionsWorld(t)
	b := w.s.browser(w.alice)
	for _, attack := range []string{`<script>alert(1)</script>`, `"><img src=x onerror=alert(1)>`} {
		pages, _ := w.sessionsPages(t, "title "+attack, "note "+attack)
		for _, path := range pages {
			body := b.page(path).body
			for _, raw := range []string{"<script>alert(1)</script>", "<img src=x onerror=alert(1)>"} {
				if strings.Contains(body, raw) {
					t.Errorf("%s renders %q unescaped", path, raw)
				}
			}
			sessionsHas(t, path, body, html.EscapeString(attack))
		}
	}
}

func TestDashboardSessionsIsolation(t *testing.T) { stores.Each(t, testDashboardSessionsIsolation) }

// testDashboardSessionsIsolation: a user of another group gets 404 for
// every page of alice's work by URL — the same page as for an unknown ID,
// naming nothing of hers — also once that group may read the project,
// whose page then lists none of her sessions or goals. (Every browser
// session has sessions:read: a token without it cannot sign in.)
func testDashboardSessionsIsolation(t *testing.T) {
	w := newSessionsWorld(t)
	pages, s := w.sessionsPages(t, "Alice's secret plan", "alice's private note")
	pages = append(pages, "/s/~s1")
	bob := w.s.browser(w.bob)
	unknown := continuo.NewID(continuo.PrefixSession, time.Now())
	check := func(stage string) {
		t.Helper()
		for _, path := range pages[2:] {
			r := bob.get(path)
			if r.StatusCode != http.StatusNotFound {
				t.Errorf("%s: bob GET %s: %d, want 404", stage, path, r.StatusCode)
			}
			sessionsLacks(t, stage+" "+path, r.body, "secret plan", "private note")
		}
		// Alice's session is answered as a session that does not exist.
		mine, none := bob.get("/s/"+s.ID), bob.get("/s/"+unknown)
		if strings.ReplaceAll(none.body, unknown, s.ID) != mine.body {
			t.Errorf("%s: bob's page of alice's session differs from an unknown one's:\n%s\n---\n%s", stage, mine.body, none.body)
		}
	}
	check("no grant")
	for _, path := range pages[:2] {
		if r := bob.get(path); r.StatusCode != http.StatusNotFound {
			t.Errorf("bob GET %s without a grant: %d, want 404", path, r.StatusCode)
		}
	}
	if err := w.s.auth.Grant(t.Context(), "webapp", "bob", continuo.AccessRead); err != nil {
		t.Fatal(err)
	}
	check("read grant")
	for _, path := range pages[:2] {
		body := bob.page(path).body
		sessionsLacks(t, "bob's "+path, body, "private note", s.ID, "/g/")
		sessionsHas(t, "bob's "+path, body, `<span class="count">0`)
	}
	sessionsLacks(t, "bob's project page", bob.page(pages[0]).body, "secret plan")
	// Signed out: sent to sign in, and back.
	if r := w.s.anonymous().get(pages[2]); r.StatusCode != http.StatusSeeOther || !strings.Contains(r.Header.Get("Location"), "/login?next=") {
		t.Errorf("anonymous GET %s: %d %s", pages[2], r.StatusCode, r.Header.Get("Location"))
	}
}

func TestDashboardSessionWorkspace(t *testing.T) { stores.Each(t, testDashboardSessionWorkspace) }

// testDashboardSessionWorkspace: for a project with a checkout the brief's
// workspace section shows its branch, head, the commits since the session
// started and the changed files with their git status; a check the
// project names shows as not run.
func testDashboardSessionWorkspace(t *testing.T) {
	w := newSessionsWorld(t)
	root := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", root, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "trunk")
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("main.go", "package main\n")
	git("add", ".")
	git("commit", "-qm", "first")
	if _, err := w.s.auth.AddProject(t.Context(), auth.ProjectSpec{Name: "checkout", Root: root,
		Checks: map[string]continuo.Check{"unit": {Command: []string{"true"}}}}, map[string]continuo.Access{"alice": continuo.AccessWrite}); err != nil {
		t.Fatal(err)
	}
	r, err := w.s.wf.WorkOnProject(t.Context(), w.ac, workflow.WorkOn{Project: "checkout", Title: "Edit", Instruction: "edit main.go"})
	if err != nil {
		t.Fatal(err)
	}
	write("main.go", "package main\n\nfunc main() {}\n")
	git("commit", "-qam", "add main")
	write("main.go", "package main\n\nfunc main() { println() }\n")
	write("new.go", "package main\n")
	body := w.s.browser(w.alice).page("/s/" + r.Session.ID).body
	ws := sessionsSection(t, body, "section", "brief-workspace")
	sessionsHas(t, "workspace", ws, "<code>"+root+"</code>", "<code>trunk</code>", "Uncommitted changes</dt><dd>yes",
		"Commits since start</dt><dd>1", "<li>add main</li>", `<code class="xy">.M</code> <code>main.go</code>`,
		`<code class="xy">??</code> <code>new.go</code>`, "Changed files <span class=\"count\">2</span>")
	sessionsHas(t, "validation", sessionsSection(t, body, "section", "brief-validation"), "<code>unit</code>", "badge-not_run")
	sessionsHas(t, "next actions", body, html.EscapeString("inspect the 2 uncommitted change(s)"))
}
