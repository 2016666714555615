package workflow_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo/internal/store/stores"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/run"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/workflow"
	"github.com/continuo-dev/continuo/internal/workspace"
)

type fixture struct {
	ctx     context.Context
	store   store.Store
	auth    *auth.Service
	wf      *workflow.Service
	runs    *run.Service // validationFixture's
	caller  *continuo.Caller
	project *continuo.Project
}

func setup(t testing.TB, root string, git workflow.Git) *fixture {
	t.Helper()
	ctx := context.Background()
	db := stores.Open(t)
	a := auth.New(db, nil)
	tok, err := a.CreateToken(ctx, "alice", []continuo.Scope{continuo.ScopeSessionsRead, continuo.ScopeSessionsWrite, continuo.ScopeProjectWrite, continuo.ScopeRuntimeRead}, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.Authenticate(ctx, tok.Token)
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.AddProject(ctx, auth.ProjectSpec{Name: "demo", Root: root, Writable: true}, map[string]continuo.Access{"alice": continuo.AccessWrite})
	if err != nil {
		t.Fatal(err)
	}
	wf := workflow.New(db, a, &workflow.Options{WorktreeDir: filepath.Join(t.TempDir(), "wt"), Git: git})
	return &fixture{ctx: ctx, store: db, auth: a, wf: wf, caller: c, project: p}
}

func (f *fixture) start(t testing.TB) *continuo.Session {
	t.Helper()
	r, err := f.wf.WorkOnProject(f.ctx, f.caller, workflow.WorkOn{Project: "demo", Instruction: "do the thing"})
	if err != nil {
		t.Fatal(err)
	}
	return r.Session
}

func (f *fixture) post(t testing.TB, sid string, kind continuo.Kind, text string) *continuo.Message {
	t.Helper()
	m, _, err := f.wf.PostMessage(f.ctx, f.caller, workflow.Post{SessionID: sid, Kind: kind, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func code(err error) continuo.Code {
	var e *continuo.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// The tallies kept in the session row must always equal a count of the
// messages: the brief and lists trust them instead of scanning.
func TestCountersMatchMessages(t *testing.T) { stores.Each(t, testCountersMatchMessages) }

func testCountersMatchMessages(t *testing.T) {
	f := setup(t, "", workflow.Git{})
	s := f.start(t)
	todo := f.post(t, s.ID, continuo.KindTodo, "a")
	f.post(t, s.ID, continuo.KindTodo, "b")
	risk := f.post(t, s.ID, continuo.KindRisk, "r")
	q := f.post(t, s.ID, continuo.KindQuestion, "q")
	f.post(t, s.ID, continuo.KindGuidance, "g")
	d := f.post(t, s.ID, continuo.KindDecision, "d1")
	f.post(t, s.ID, continuo.KindProgress, "p1")
	if _, _, err := f.wf.ResolveMessage(f.ctx, f.caller, s.ID, todo.ID, "done"); err != nil {
		t.Fatal(err)
	}
	if _, changed, err := f.wf.ResolveMessage(f.ctx, f.caller, s.ID, todo.ID, "again"); err != nil || changed {
		t.Fatalf("second resolve: changed=%v err=%v", changed, err)
	}
	// Superseding an open risk closes it; superseding a resolved question changes no open count.
	if _, _, err := f.wf.PostMessage(f.ctx, f.caller, workflow.Post{SessionID: s.ID, Kind: continuo.KindRisk, Text: "r2", Supersedes: risk.ID}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.wf.ResolveMessage(f.ctx, f.caller, s.ID, q.ID, ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.wf.PostMessage(f.ctx, f.caller, workflow.Post{SessionID: s.ID, Kind: continuo.KindDecision, Text: "d2", Supersedes: d.ID}); err != nil {
		t.Fatal(err)
	}
	_, _, err := f.wf.PostMessage(f.ctx, f.caller, workflow.Post{SessionID: s.ID, Kind: continuo.KindDecision, Text: "d3", Supersedes: d.ID})
	if code(err) != continuo.CodeConflict {
		t.Fatalf("superseding twice: %v", err)
	}
	// An answer to an open question resolves it in the same write; an
	// answer to a resolved question, or to a todo, only links.
	q2 := f.post(t, s.ID, continuo.KindQuestion, "which port?")
	q3 := f.post(t, s.ID, continuo.KindQuestion, "which host?")
	post := func(p workflow.Post) *continuo.Message {
		t.Helper()
		p.SessionID = s.ID
		m, _, err := f.wf.PostMessage(f.ctx, f.caller, p)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	ans := post(workflow.Post{Kind: continuo.KindAnswer, Text: "8080, as the user said", ReplyTo: q2.ID})
	post(workflow.Post{Kind: continuo.KindAnswer, Text: "again", ReplyTo: q2.ID})
	post(workflow.Post{Kind: continuo.KindAnswer, Text: "late", ReplyTo: q.ID})
	post(workflow.Post{Kind: continuo.KindAnswer, Text: "not a question", ReplyTo: todo.ID})
	post(workflow.Post{Kind: continuo.KindNote, Text: "a note is no answer", ReplyTo: q3.ID})
	// Superseding a resolved question takes it out of the answered count.
	ans3 := post(workflow.Post{Kind: continuo.KindAnswer, Text: "localhost", ReplyTo: q3.ID})
	post(workflow.Post{Kind: continuo.KindQuestion, Text: "which host, really?", Supersedes: q3.ID})
	// An answer that supersedes the question it replies to supersedes it.
	q4 := f.post(t, s.ID, continuo.KindQuestion, "which db?")
	post(workflow.Post{Kind: continuo.KindAnswer, Text: "withdrawn", ReplyTo: q4.ID, Supersedes: q4.ID})
	err = f.store.Read(f.ctx, func(tx store.Tx) error {
		for _, c := range []struct {
			id, status, by, resolution string
		}{{q2.ID, "resolved", ans.ID, "8080, as the user said"}, {q.ID, "resolved", "", ""}, {todo.ID, "resolved", "", "done"},
			{q3.ID, "superseded", ans3.ID, "localhost"}, {q4.ID, "superseded", "", ""}} {
			m, err := tx.MessageGet(f.ctx, s.ID, c.id)
			if err != nil {
				return err
			}
			if string(m.Status) != c.status || m.ResolvedBy != c.by || m.Resolution != c.resolution {
				t.Errorf("%s: status %s resolved_by %q resolution %q, want %s %q %q", c.id, m.Status, m.ResolvedBy, m.Resolution, c.status, c.by, c.resolution)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	err = f.store.Read(f.ctx, func(tx store.Tx) error {
		got, err := tx.SessionGet(f.ctx, s.ID)
		if err != nil {
			return err
		}
		count := func(k continuo.Kind, st ...continuo.Status) int64 {
			n, err := tx.MessageCount(f.ctx, store.MessageListParams{SessionID: s.ID, Kinds: []continuo.Kind{k}, Statuses: st})
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		all, err := tx.MessageCount(f.ctx, store.MessageListParams{SessionID: s.ID})
		if err != nil {
			return err
		}
		want := continuo.Counts{
			Decisions: count(continuo.KindDecision), Progress: count(continuo.KindProgress),
			OpenTodos: count(continuo.KindTodo, continuo.StatusOpen), OpenRisks: count(continuo.KindRisk, continuo.StatusOpen),
			OpenQuestions: count(continuo.KindQuestion, continuo.StatusOpen), OpenGuidance: count(continuo.KindGuidance, continuo.StatusOpen),
			Messages:            all,
			SupersededDecisions: count(continuo.KindDecision, continuo.StatusSuperseded),
			ResolvedQuestions:   count(continuo.KindQuestion, continuo.StatusResolved),
		}
		if got.Counts != want {
			t.Fatalf("counters %+v, messages say %+v", got.Counts, want)
		}
		if want.OpenTodos != 1 || want.OpenRisks != 1 || want.OpenQuestions != 1 || want.Decisions != 2 ||
			want.SupersededDecisions != 1 || want.ResolvedQuestions != 2 {
			t.Fatalf("unexpected tallies %+v", want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Paging with the cursor visits every message exactly once, newest first.
func TestListMessagesCursor(t *testing.T) { stores.Each(t, testListMessagesCursor) }

func testListMessagesCursor(t *testing.T) {
	f := setup(t, "", workflow.Git{})
	s := f.start(t)
	other := f.start(t)
	for i := 0; i < 23; i++ {
		f.post(t, s.ID, continuo.KindNote, strings.Repeat("x", i+1))
	}
	seen := map[int64]bool{}
	last := int64(1 << 62)
	q := workflow.MessageQuery{SessionID: s.ID, Kinds: continuo.Kinds(), Limit: 5} // messages only
	for pages := 0; ; pages++ {
		page, err := f.wf.ListMessages(f.ctx, f.caller, q)
		if err != nil {
			t.Fatal(err)
		}
		if page.Total != 23 {
			t.Fatalf("total %d", page.Total)
		}
		for _, m := range page.Messages {
			if seen[m.Seq] || m.Seq >= last {
				t.Fatalf("seq %d out of order or repeated", m.Seq)
			}
			seen[m.Seq], last = true, m.Seq
		}
		if page.NextCursor == "" {
			break
		}
		// A cursor of one session is refused by another.
		if _, err := f.wf.ListMessages(f.ctx, f.caller, workflow.MessageQuery{SessionID: other.ID, Cursor: page.NextCursor, Limit: 5}); code(err) != continuo.CodeInvalidInput {
			t.Fatalf("foreign cursor: %v", err)
		}
		q.Cursor = page.NextCursor
	}
	if len(seen) != 23 {
		t.Fatalf("saw %d messages", len(seen))
	}
}

// basis.complete reports a checkout or session that changed while the
// brief was being built.
func TestHandoffBasis(t *testing.T) { stores.Each(t, testHandoffBasis) }

func testHandoffBasis(t *testing.T) {
	var f *fixture
	var sid string
	probes := 0
	fp := 0
	git := workflow.Git{
		Fingerprint: func(string) (string, error) { fp++; return "fp" + string(rune('0'+fp)), nil },
		Probe: func(ctx context.Context, root string, _ int) (workspace.State, error) {
			probes++
			if probes == 2 { // the session changes while git is being read
				f.post(t, sid, continuo.KindNote, "meanwhile")
			}
			return workspace.State{Branch: "main", Head: strings.Repeat("a", 40)}, nil
		},
	}
	f = setup(t, "/nonexistent/root", git)
	sid = f.start(t).ID

	h, err := f.wf.ReadHandoff(f.ctx, f.caller, sid, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if h.Brief.Basis.Complete || strings.Join(h.Brief.Basis.Reasons, ",") != workflow.ReasonExternalChanged {
		t.Fatalf("first brief basis: %+v", h.Brief.Basis)
	}
	h, err = f.wf.ReadHandoff(f.ctx, f.caller, sid, "", false)
	if err != nil {
		t.Fatal(err)
	}
	want := workflow.ReasonExternalChanged + "," + workflow.ReasonSessionChanged
	if h.Brief.Basis.Complete || strings.Join(h.Brief.Basis.Reasons, ",") != want {
		t.Fatalf("second brief basis: %+v", h.Brief.Basis)
	}

	// A checkout git cannot read is reported, not hidden.
	g := setup(t, t.TempDir(), workflow.Git{})
	s := g.start(t)
	h, err = g.wf.ReadHandoff(g.ctx, g.caller, s.ID, "demo", false)
	if err != nil {
		t.Fatal(err)
	}
	if h.Brief.Workspace == nil || h.Brief.Workspace.Status != "unavailable" || h.Brief.Basis.Complete {
		t.Fatalf("unreadable checkout: %+v %+v", h.Brief.Workspace, h.Brief.Basis)
	}
	if _, err := g.wf.ReadHandoff(g.ctx, g.caller, s.ID, "other", false); code(err) != continuo.CodeInvalidInput {
		t.Fatalf("wrong project: %v", err)
	}
}

// Worktree mode gives a session its own worktree and branch; resume keeps it.
func TestWorktreeMode(t *testing.T) { stores.Each(t, testWorktreeMode) }

func testWorktreeMode(t *testing.T) {
	root := t.TempDir()
	run := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e", "HOME="+root)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	run("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(root, "AGENTS.md"), []byte("Use tabs. TOKEN=hunter2hunter2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("add", ".")
	run("commit", "-q", "-m", "init")
	f := setup(t, root, workflow.Git{})
	r, err := f.wf.WorkOnProject(f.ctx, f.caller, workflow.WorkOn{Project: "demo", Instruction: "x", Mode: continuo.ModeWorktree})
	if err != nil {
		t.Fatal(err)
	}
	if r.Worktree == "" || r.Session.WorktreeBranch != "continuo/s1" {
		t.Fatalf("worktree %q branch %q", r.Worktree, r.Session.WorktreeBranch)
	}
	st, err := workspace.ProbeUpTo(f.ctx, r.Worktree, workspace.MaxChanges)
	if err != nil || st.Branch != "continuo/s1" {
		t.Fatalf("worktree state %+v %v", st, err)
	}
	mats := f.wf.Materials(r, []string{workflow.MaterialProjectInstructions, workflow.MaterialWorkflowGuide})
	if mats[0].Status != "available" || !strings.Contains(mats[0].Text, "Use tabs") || strings.Contains(mats[0].Text, "hunter2") || !mats[0].Redacted {
		t.Fatalf("project instructions: %+v", mats[0])
	}
	if mats[1].Text != workflow.WorkflowGuide {
		t.Fatalf("guide: %+v", mats[1])
	}
	h, err := f.wf.ReadHandoff(f.ctx, f.caller, r.Session.ID, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if h.Brief.Workspace.Branch != "continuo/s1" || h.Brief.Session.WorktreeBranch != "continuo/s1" {
		t.Fatalf("brief workspace %+v", h.Brief.Workspace)
	}
	_, err = f.wf.WorkOnProject(f.ctx, f.caller, workflow.WorkOn{SessionID: "~1", Instruction: "y"})
	if code(err) != continuo.CodeInvalidInput {
		t.Fatalf("bad ref: %v", err)
	}
	res, err := f.wf.WorkOnProject(f.ctx, f.caller, workflow.WorkOn{SessionID: "~s1", Instruction: "y", Mode: continuo.ModeCheckout})
	if code(err) != continuo.CodeInvalidInput {
		t.Fatalf("resume in another mode: %v %v", res, err)
	}
	res, err = f.wf.WorkOnProject(f.ctx, f.caller, workflow.WorkOn{SessionID: "~s1", Instruction: "y"})
	if err != nil || !res.Resumed || res.Worktree != r.Worktree {
		t.Fatalf("resume: %+v %v", res, err)
	}

	// A resume never hands out a worktree that does not exist: a deleted
	// one is made again, on the session's branch with its commits.
	if err := os.WriteFile(filepath.Join(r.Worktree, "work.txt"), []byte("done\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git := func(dir string, args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e", "HOME="+root)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git(r.Worktree, "add", "work.txt")
	git(r.Worktree, "commit", "-q", "-m", "work")
	head := git(r.Worktree, "rev-parse", "HEAD")
	if err := os.RemoveAll(r.Worktree); err != nil {
		t.Fatal(err)
	}
	res, err = f.wf.WorkOnProject(f.ctx, f.caller, workflow.WorkOn{SessionID: "~s1", Instruction: "z"})
	if err != nil || res.Worktree != r.Worktree {
		t.Fatalf("resume after the worktree was deleted: %+v %v", res, err)
	}
	st, err = workspace.ProbeUpTo(f.ctx, res.Worktree, workspace.MaxChanges)
	if err != nil || st.Branch != "continuo/s1" || st.Head != head {
		t.Fatalf("recreated worktree: %+v %v; want branch continuo/s1 at %s", st, err, head)
	}
}

// list_projects with nothing to show says why, as a hint in the result.
func TestProjectsHint(t *testing.T) { stores.Each(t, testProjectsHint) }

func testProjectsHint(t *testing.T) {
	f := setup(t, "", workflow.Git{})
	ps, hint, err := f.wf.Projects(f.ctx, f.caller)
	if err != nil || len(ps) != 1 || hint != "" {
		t.Fatalf("with a grant: %v %q %v", ps, hint, err)
	}
	tok, err := f.auth.CreateToken(f.ctx, "bob", []continuo.Scope{continuo.ScopeSessionsRead}, 0)
	if err != nil {
		t.Fatal(err)
	}
	bob, err := f.auth.Authenticate(f.ctx, tok.Token)
	if err != nil {
		t.Fatal(err)
	}
	ps, hint, err = f.wf.Projects(f.ctx, bob)
	if err != nil || len(ps) != 0 || !strings.Contains(hint, `group "bob" has no grant`) || !strings.Contains(hint, "continuo project grant PROJECT bob:write") {
		t.Fatalf("without a grant: %v %q %v", ps, hint, err)
	}
}

// The diagnostic view is model-facing too: it is redacted like the brief.
func TestDiagnosticRedacted(t *testing.T) { stores.Each(t, testDiagnosticRedacted) }

func testDiagnosticRedacted(t *testing.T) {
	f := setup(t, "", workflow.Git{})
	s := f.start(t)
	f.post(t, s.ID, continuo.KindTodo, "rotate OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123")
	h, err := f.wf.ReadHandoff(f.ctx, f.caller, s.ID, "", true)
	if err != nil {
		t.Fatal(err)
	}
	todos := h.Diagnostic.Open["todo"]
	if todos.Total != 1 || len(todos.Items) != 1 || strings.Contains(todos.Items[0].Excerpt, "abcdefghijklmnop") {
		t.Fatalf("diagnostic todos: %+v", todos)
	}
}

// A keyed work_on_project is safe to retry: a start makes one session and a
// resume appends its instruction once, even when the retries race.
func TestWorkOnProjectIdempotent(t *testing.T) { stores.Each(t, testWorkOnProjectIdempotent) }

func testWorkOnProjectIdempotent(t *testing.T) {
	f := setup(t, "", workflow.Git{})
	in := workflow.WorkOn{Project: "demo", Instruction: "start it", IdempotencyKey: "k1"}
	const n = 16
	results := make(chan *workflow.WorkResult, n)
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			r, err := f.wf.WorkOnProject(f.ctx, f.caller, in)
			results <- r
			errs <- err
		}()
	}
	ids := map[string]int{}
	replays := 0
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		r := <-results
		ids[r.Session.ID]++
		if r.Replayed {
			replays++
		}
	}
	if len(ids) != 1 || replays != n-1 {
		t.Fatalf("%d sessions, %d replays", len(ids), replays)
	}
	page, err := f.wf.ListSessions(f.ctx, f.caller, "demo", "", 0, 50)
	if err != nil || page.Total != 1 {
		t.Fatalf("sessions: %+v %v", page, err)
	}
	other := in
	other.Instruction = "something else"
	if _, err := f.wf.WorkOnProject(f.ctx, f.caller, other); code(err) != continuo.CodeConflict {
		t.Fatalf("changed input under a used key: %v", err)
	}

	var sid string
	for id := range ids {
		sid = id
	}
	resume := workflow.WorkOn{SessionID: sid, Instruction: "next step", IdempotencyKey: "k2"}
	first, err := f.wf.WorkOnProject(f.ctx, f.caller, resume)
	if err != nil || first.Replayed || !first.Resumed {
		t.Fatalf("resume: %+v %v", first, err)
	}
	again, err := f.wf.WorkOnProject(f.ctx, f.caller, resume)
	if err != nil || !again.Replayed || !again.Resumed || again.Session.Instructions != first.Session.Instructions {
		t.Fatalf("resume replay: %+v %v", again, err)
	}
	if again.Session.Instructions != 2 {
		t.Fatalf("instructions %d, want 2", again.Session.Instructions)
	}
}

// list_session_messages: instructions in full and in order, oldest first,
// word queries, and cursors bound to their order.
func TestListMessagesOrderQuery(t *testing.T) { stores.Each(t, testListMessagesOrderQuery) }

func testListMessagesOrderQuery(t *testing.T) {
	f := setup(t, "", workflow.Git{})
	s := f.start(t) // instruction 1: "do the thing"
	f.post(t, s.ID, continuo.KindNote, "first note")
	long := strings.Repeat("keep every constraint. ", 80) + "LAST CONSTRAINT: never push to main"
	if _, err := f.wf.WorkOnProject(f.ctx, f.caller, workflow.WorkOn{SessionID: s.ID, Instruction: long}); err != nil {
		t.Fatal(err)
	}
	f.post(t, s.ID, continuo.KindProgress, "what remains: the docs")
	kinds := func(p *workflow.MessagePage) (out []string) {
		for _, m := range p.Messages {
			out = append(out, string(m.Kind))
		}
		return out
	}
	page, err := f.wf.ListMessages(f.ctx, f.caller, workflow.MessageQuery{SessionID: s.ID, Oldest: true, Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kinds(page), []string{"instruction", "note", "instruction", "progress"}; !slices.Equal(got, want) || page.Total != 4 {
		t.Fatalf("oldest first: %v total %d, want %v total 4", got, page.Total, want)
	}
	if page.Messages[2].Text != long {
		t.Errorf("the resume instruction is not listed in full: %d bytes of %d", len(page.Messages[2].Text), len(long))
	}
	page, err = f.wf.ListMessages(f.ctx, f.caller, workflow.MessageQuery{SessionID: s.ID, Query: "Never PUSH", Limit: 50})
	if err != nil || page.Total != 1 || len(page.Messages) != 1 || page.Messages[0].Kind != continuo.KindInstruction {
		t.Fatalf("query: %v %+v", err, page)
	}
	page, err = f.wf.ListMessages(f.ctx, f.caller, workflow.MessageQuery{SessionID: s.ID, Query: "remains", Kinds: continuo.Kinds(), Limit: 50})
	if err != nil || page.Total != 1 || page.Messages[0].Kind != continuo.KindProgress {
		t.Fatalf("query with kinds: %v %+v", err, page)
	}
	var many []string
	for i := range store.MaxSearchWords + 1 {
		many = append(many, "w"+strconv.Itoa(i))
	}
	for _, bad := range []string{"!!!", strings.Join(many, " ")} {
		if _, err := f.wf.ListMessages(f.ctx, f.caller, workflow.MessageQuery{SessionID: s.ID, Query: bad, Limit: 5}); code(err) != continuo.CodeInvalidInput {
			t.Errorf("query %q: %v, want invalid_input", bad, err)
		}
	}
	// Paging oldest first; a newest-order cursor is refused there.
	var seen []string
	q := workflow.MessageQuery{SessionID: s.ID, Oldest: true, Limit: 1}
	for {
		p, err := f.wf.ListMessages(f.ctx, f.caller, q)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, kinds(p)...)
		if p.NextCursor == "" {
			break
		}
		if _, err := f.wf.ListMessages(f.ctx, f.caller, workflow.MessageQuery{SessionID: s.ID, Cursor: p.NextCursor, Limit: 1}); code(err) != continuo.CodeInvalidInput {
			t.Fatalf("oldest cursor used newest first: %v", err)
		}
		q.Cursor = p.NextCursor
	}
	if want := []string{"instruction", "note", "instruction", "progress"}; !slices.Equal(seen, want) {
		t.Errorf("paged oldest first: %v, want %v", seen, want)
	}
	// Posting an instruction stays invalid.
	if _, _, err := f.wf.PostMessage(f.ctx, f.caller, workflow.Post{SessionID: s.ID, Kind: continuo.KindInstruction, Text: "x"}); err == nil {
		t.Errorf("posting kind instruction succeeded")
	}
}

func TestNotesRecordWhoActed(t *testing.T) { stores.Each(t, testNotesRecordWhoActed) }

// testNotesRecordWhoActed: a note records who posted it and who resolved
// it, and a person on the dashboard is told apart from a tool call.
func testNotesRecordWhoActed(t *testing.T) {
	f := setup(t, "", workflow.Git{})
	s := f.start(t)
	person := *f.caller
	person.Via = continuo.ViaDashboard
	q := f.post(t, s.ID, continuo.KindQuestion, "which port?")
	todo := f.post(t, s.ID, continuo.KindTodo, "write docs")
	if q.Author != f.caller.Principal {
		t.Errorf("a tool's question's author = %q, want %q", q.Author, f.caller.Principal)
	}
	ans, _, err := f.wf.PostMessage(f.ctx, &person, workflow.Post{SessionID: s.ID, Kind: continuo.KindAnswer, Text: "8080", ReplyTo: q.ID})
	if err != nil {
		t.Fatal(err)
	}
	want := f.caller.Principal + " via dashboard"
	if _, _, err := f.wf.ResolveMessage(f.ctx, &person, s.ID, todo.ID, "done"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id, author, resolver string
	}{{q.ID, f.caller.Principal, want}, {ans.ID, want, ""}, {todo.ID, f.caller.Principal, want}} {
		m, err := f.wf.GetMessage(f.ctx, f.caller, s.ID, c.id)
		if err != nil {
			t.Fatal(err)
		}
		if m.Author != c.author || m.Resolver != c.resolver {
			t.Errorf("%s %s: author %q resolver %q, want %q %q", m.Kind, m.ID, m.Author, m.Resolver, c.author, c.resolver)
		}
	}
}
