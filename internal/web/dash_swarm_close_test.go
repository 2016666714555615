package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store/stores"
)

// TestDashSwarmClose: the owner closes a swarm from its page. While a task
// is cancel_requested the close is refused and the page leads the owner to
// settle it, then close; a token without swarm:own and a member of
// another group with the page in hand are refused, and nothing changes.
func TestDashSwarmClose(t *testing.T) { stores.Each(t, testDashSwarmClose) }

func testDashSwarmClose(t *testing.T) {
	s := newDashServer(t)
	w := newSwarmWorld(t, s, "alice", nil)
	x := w.join("xavier")
	task := w.dispatch("slow", "do it slowly", x.ref.WorkerID)
	w.next(x)
	path := "/w/" + w.id()
	if r := w.b.submit(w.b.page(path+"/tasks/"+task.ID), "cancel", nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("cancel: %d %s", r.StatusCode, r.body)
	}
	if st := w.task(task.ID); st.Task.State != continuo.TaskCancelRequested {
		t.Fatalf("after cancel: %s", st.Task.State)
	}

	page := w.b.page(path)
	swarmHas(t, "the swarm page", page.body, `id="swarm-close"`, `id="settle-`+task.ID+`"`, `href="/w/`+w.id()+`/tasks/`+task.ID+`#decide"`, "xavier holds it")
	// Refused, nothing written: a token of alice without swarm:own; bob
	// of another group; the close form's field from another form.
	other := s.browser(s.token("alice", continuo.ScopeSessionsRead, continuo.ScopeSwarmOwn))
	held := other.page(path)
	other.signIn(s.token("alice", continuo.ScopeSessionsRead))
	if r := other.submit(held, "swarm-close", nil); r.StatusCode != http.StatusForbidden || !strings.Contains(r.body, "missing required scope swarm:own") {
		t.Errorf("close without swarm:own: %d %s", r.StatusCode, r.body)
	}
	other.signIn(s.token("bob", continuo.ScopeSessionsRead, continuo.ScopeSwarmOwn)) // a group of its own
	if r := other.submit(held, "swarm-close", nil); r.StatusCode != http.StatusNotFound {
		t.Errorf("close by another group: %d %s", r.StatusCode, r.body)
	}
	if r := w.b.submit(page, "swarm-close", url.Values{"csrf": {"x"}}); r.StatusCode != http.StatusForbidden {
		t.Errorf("close with a bad CSRF field: %d", r.StatusCode)
	}
	if st := w.status(); st.Swarm.State != continuo.SwarmActive {
		t.Fatalf("a refused close closed it: %s", st.Swarm.State)
	}

	// Refused by the service: the page says why, and how to go on.
	r := w.b.submit(page, "swarm-close", nil)
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != path+"?close=refused#close" {
		t.Fatalf("close with a cancel_requested task: %d %s %s", r.StatusCode, r.Header.Get("Location"), r.body)
	}
	page = w.b.page(path + "?close=refused")
	swarmHas(t, "the refused close", page.body, `id="close-refused"`, `id="settle-`+task.ID+`"`)

	// Settle it on its page, come back, close.
	tp := w.b.page(path + "/tasks/" + task.ID)
	if r := w.b.submit(tp, "fail-"+task.ID, url.Values{"disposition": {"unknown"}, "evidence": {"the worker never answered"}}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("settle: %d %s", r.StatusCode, r.body)
	}
	page = w.b.page(path)
	swarmLacks(t, "the swarm page once settled", page.body, `id="settle-`+task.ID+`"`)
	swarmHas(t, "the swarm page once settled", page.body, "Every task is settled.")
	if r := w.b.submit(page, "swarm-close", nil); r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != path+"#close" {
		t.Fatalf("close: %d %s", r.StatusCode, r.body)
	}
	if st := w.status(); st.Swarm.State != continuo.SwarmClosed {
		t.Fatalf("after close: %s", st.Swarm.State)
	}
	page = w.b.page(path)
	swarmLacks(t, "the closed swarm's page", page.body, `id="swarm-close"`)
}
