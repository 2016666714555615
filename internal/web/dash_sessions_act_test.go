package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/workflow"
)

// A person acts on a session from its page: answers a question, adds and
// retires a standing instruction, resolves a todo and a risk. Each lands
// in the next brief, records who acted and from where, and is refused —
// nothing written — without sessions:write, from another group, and
// without the page's CSRF field.
func TestDashboardSessionActions(t *testing.T) { stores.Each(t, testDashboardSessionActions) }

func testDashboardSessionActions(t *testing.T) {
	w := newSessionsWorld(t)
	ctx := t.Context()
	sess := w.start(t, "Ship", "ship the release")
	q := w.note(t, sess.ID, continuo.KindQuestion, "which port should it listen on?")
	todo := w.note(t, sess.ID, continuo.KindTodo, "write the changelog")
	risk := w.note(t, sess.ID, continuo.KindRisk, "the migration may lock the table")
	old := w.note(t, sess.ID, continuo.KindGuidance, "never touch the vendor directory")
	path := "/s/" + sess.ID
	brief := func() *workflow.Brief {
		t.Helper()
		h, err := w.s.wf.ReadHandoff(ctx, w.ac, sess.ID, "", false)
		if err != nil {
			t.Fatal(err)
		}
		return h.Brief
	}
	before := brief().Basis.SessionRevision

	// Refused: a token of alice that may only read; bob of another group
	// with alice's page in hand (signed in, in the browser that loaded
	// it); a post without the page's CSRF field.
	forms := []struct {
		id  string
		set url.Values
	}{{"answer-" + q.ID, url.Values{"text": {"8080"}}}, {"guidance-form", url.Values{"text": {"be kind"}}},
		{"retire-" + old.ID, nil}, {"resolve-" + todo.ID, nil}}
	reader := w.s.browser(w.s.token("alice", continuo.ScopeSessionsRead))
	page := reader.page(path)
	for _, f := range forms {
		r := reader.submit(page, f.id, f.set)
		if r.StatusCode != http.StatusForbidden || !strings.Contains(r.body, "missing required scope sessions:write") {
			t.Errorf("%s without sessions:write: %d %s", f.id, r.StatusCode, r.body)
		}
	}
	other := w.s.browser(w.alice)
	page = other.page(path)
	other.signIn(w.bob)
	for _, f := range forms {
		if r := other.submit(page, f.id, f.set); r.StatusCode != http.StatusNotFound || !strings.Contains(r.body, "not_found") {
			t.Errorf("%s by bob of another group: %d %s", f.id, r.StatusCode, r.body)
		}
		if r := other.submit(page, f.id, url.Values{"csrf": {""}}); r.StatusCode != http.StatusForbidden {
			t.Errorf("%s without the CSRF field: %d", f.id, r.StatusCode)
		}
	}
	if got := brief().Basis.SessionRevision; got != before {
		t.Fatalf("refused actions changed the session: revision %d → %d", before, got)
	}

	alice := w.s.browser(w.alice)
	page = alice.page(path)
	act := func(id string, set url.Values) {
		t.Helper()
		r := alice.submit(page, id, set)
		if r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), path) {
			t.Fatalf("%s: %d %s", id, r.StatusCode, r.body)
		}
		page = alice.page(path) // the redirect's target: a reload shows it
	}
	act("answer-"+q.ID, url.Values{"text": {"8080, behind the proxy"}})
	act("guidance-form", url.Values{"text": {"run the migrations in a transaction"}, "priority": {"high"}})
	act("retire-"+old.ID, url.Values{"reason": {"the vendor directory is gone"}})
	act("resolve-"+todo.ID, url.Values{"resolution": {"written"}})
	act("resolve-"+risk.ID, nil)

	b := brief()
	if len(b.Open.Questions.Items) != 0 || len(b.Answered.Items) != 1 || !strings.Contains(b.Answered.Items[0].Answer.Excerpt, "8080, behind the proxy") {
		t.Errorf("the brief's questions: open %+v answered %+v", b.Open.Questions.Items, b.Answered.Items)
	}
	if len(b.Constraints.Items) != 1 || b.Constraints.Items[0].Text != "run the migrations in a transaction" {
		t.Errorf("the brief's constraints: %+v", b.Constraints.Items)
	}
	if len(b.Open.Todos.Items) != 0 || len(b.Open.Risks.Items) != 0 {
		t.Errorf("the brief's open todos %+v, risks %+v", b.Open.Todos.Items, b.Open.Risks.Items)
	}
	who := "alice via dashboard"
	for _, id := range []string{q.ID, todo.ID, risk.ID} {
		m, err := w.s.wf.GetMessage(ctx, w.ac, sess.ID, id)
		if err != nil || m.Status != continuo.StatusResolved || m.Resolver != who {
			t.Errorf("%s: %+v %v", id, m, err)
		}
	}
	m, err := w.s.wf.GetMessage(ctx, w.ac, sess.ID, old.ID)
	if err != nil || m.Status != continuo.StatusSuperseded {
		t.Fatalf("the retired instruction: %+v %v", m, err)
	}
	note, err := w.s.wf.GetMessage(ctx, w.ac, sess.ID, m.SupersededBy)
	if err != nil || note.Author != who || !strings.Contains(note.Text, "the vendor directory is gone") {
		t.Errorf("the retiring note: %+v %v", note, err)
	}
	sessionsHas(t, "the page after", page.body, `<span class="author">alice via dashboard</span>`)

	// Bad input is the tool's invalid_input, and writes nothing.
	rev := brief().Basis.SessionRevision
	if r := alice.submit(page, "guidance-form", url.Values{"text": {""}}); r.StatusCode != http.StatusBadRequest {
		t.Errorf("an empty instruction: %d", r.StatusCode)
	}
	if r := alice.submit(page, "guidance-form", url.Values{"text": {"x"}, "priority": {"urgent"}}); r.StatusCode != http.StatusBadRequest {
		t.Errorf("an unknown priority: %d", r.StatusCode)
	}
	if got := brief().Basis.SessionRevision; got != rev {
		t.Errorf("refused input changed the session: revision %d → %d", rev, got)
	}
}
