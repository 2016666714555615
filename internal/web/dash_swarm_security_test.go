package web_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/swarm"
	"github.com/continuo-dev/continuo/internal/web/webtest"
)

// swarmForm is one form of the swarm pages: the page that shows it, its
// id, the fields a person fills in, and the CSRF form name it carries.
type swarmForm struct {
	page, id, csrfName string
	fill               url.Values
}

// everyForm gives the swarm one object for each form of the swarm pages
// (each form acts on its own, so that every one can be shown to act) and
// returns the forms.
func (w *swarmWorld) everyForm() []swarmForm {
	w.t.Helper()
	ctx := w.t.Context()
	y := w.join("doer")
	t1, _ := w.inDoubt(y, "to-requeue", "lost")
	t2, _ := w.inDoubt(y, "to-fail", "lost")
	t3, _ := w.inDoubt(y, "to-settle", "lost")
	ready := w.dispatch("to-collect", "p", y.ref.WorkerID)
	w.next(y)
	if _, err := w.s.swarm.Submit(ctx, w.crew, y.car, y.ref, ready.ID, "done"); err != nil {
		w.t.Fatal(err)
	}
	queued := w.dispatch("to-cancel", "p", "")
	cn1, _ := w.request(w.checkpointed("to-approve"), "")
	cn2, _ := w.request(w.checkpointed("to-revoke"), "")
	cd1 := w.inDoubtContinuation(w.checkpointed("to-no-effect"))
	cd2 := w.inDoubtContinuation(w.checkpointed("to-apply"))
	sw := "/w/" + w.id()
	return []swarmForm{
		{sw, "requeue-" + t1.ID, "swarm-reconcile", url.Values{"evidence": {"nothing ran"}, "disposition": {"no_effect"}}},
		{sw, "fail-" + t2.ID, "swarm-reconcile", url.Values{"evidence": {"checked by hand"}, "disposition": {"unknown"}}},
		{sw + "/tasks/" + t3.ID, "result-" + t3.ID, "swarm-reconcile", url.Values{"evidence": {"found it"}, "result": {"the result"}}},
		{sw + "/tasks/" + ready.ID, "collect", "swarm-collect", nil},
		{sw + "/tasks/" + queued.ID, "cancel", "swarm-cancel", nil},
		{sw, "approve-" + cn1.ID, "swarm-approve", nil},
		{sw, "revoke-" + cn2.ID, "swarm-revoke", nil},
		{sw, "settle-no_effect-" + cd1.ID, "swarm-continuation-reconcile", nil},
		{sw, "settle-applied-" + cd2.ID, "swarm-continuation-reconcile", nil},
	}
}

// snapshot is everything of the swarm that a form could change, as the
// service reads it.
func (w *swarmWorld) snapshot() string {
	w.t.Helper()
	ctx := w.t.Context()
	var b strings.Builder
	st := w.status()
	fmt.Fprintf(&b, "swarm %s r%d counts %v\n", st.Swarm.State, st.Swarm.Revision, st.Counts)
	for _, x := range st.Workers {
		fmt.Fprintf(&b, "worker %s e%d r%d %s %s %s\n", x.ID, x.Epoch, x.Revision, x.State, x.CarrierState, x.ContinuityState)
	}
	for _, c := range w.history() {
		fmt.Fprintf(&b, "continuation %s %s v%d\n", c.ID, c.State, c.Version)
	}
	for _, state := range continuo.TaskStates() {
		p, err := w.s.swarm.ListTaskStatus(ctx, w.owner, w.car, w.id(), state, "", 0)
		if err != nil {
			w.t.Fatal(err)
		}
		for _, ts := range p.Tasks {
			fmt.Fprintf(&b, "task %s %s r%d\n", ts.Task.ID, ts.Task.State, ts.Task.Revision)
		}
	}
	return b.String()
}

// fields returns the form's fields as its page gives them, filled in.
func (f swarmForm) fields(t *testing.T, page string) (url.Values, string) {
	t.Helper()
	v, ok := webtest.FormFields(page, f.id)
	if !ok {
		t.Fatalf("no form %s on %s:\n%s", f.id, f.page, page)
	}
	action, _ := webtest.FormAction(page, f.id)
	for k, vs := range f.fill {
		v[k] = vs
	}
	return v, action
}

// TestDashSwarmCSRF: every form of the swarm pages refuses a post without
// its CSRF field, with another form's, or from another origin — 403, and
// nothing changes — and acts when posted as its page gives it.
func TestDashSwarmCSRF(t *testing.T) { stores.Each(t, testDashSwarmCSRF) }

func testDashSwarmCSRF(t *testing.T) {
	s := newDashServer(t)
	w := newSwarmWorld(t, s, "alice", nil)
	forms := w.everyForm()
	csrf := map[string]string{} // form name → this browser's field
	for _, f := range forms {
		v, _ := f.fields(t, w.b.page(f.page).body)
		csrf[f.csrfName] = v.Get("csrf")
	}
	for _, f := range forms {
		page := w.b.page(f.page)
		fields, action := f.fields(t, page.body)
		logout, _ := webtest.FormFields(page.body, "logout")
		other := "swarm-revoke" // another form's name
		if f.csrfName == other {
			other = "swarm-approve"
		}
		before := w.snapshot()
		for _, bad := range []struct {
			what, origin, csrf string
		}{
			{"no csrf field", s.url, ""},
			{"the sign-out form's csrf", s.url, logout.Get("csrf")},
			{other + "'s csrf", s.url, csrf[other]},
			{"another origin", "https://evil.example", fields.Get("csrf")},
		} {
			post := url.Values{}
			for k, v := range fields {
				post[k] = v
			}
			post.Del("csrf")
			if bad.csrf != "" {
				post.Set("csrf", bad.csrf)
			}
			if r := swarmPost(w.b, bad.origin, action, post); r.StatusCode != http.StatusForbidden {
				t.Fatalf("%s with %s: %d %s", f.id, bad.what, r.StatusCode, r.body)
			}
		}
		if after := w.snapshot(); after != before {
			t.Fatalf("%s: refused posts changed the swarm:\n%s\nthen\n%s", f.id, before, after)
		}
		if r := swarmPost(w.b, s.url, action, fields); r.StatusCode != http.StatusSeeOther {
			t.Fatalf("%s as its page gives it: %d %s", f.id, r.StatusCode, r.body)
		}
		if after := w.snapshot(); after == before {
			t.Fatalf("%s acted on nothing", f.id)
		}
	}
}

// TestDashSwarmCrossGroup: a user of another group gets not_found on
// every swarm page of this group by URL — the very page an unknown swarm
// or task gets — and every form of theirs — carrying their own valid CSRF
// fields — aimed at this group's swarm is not_found too and changes
// nothing (the database is byte for byte what it was; a ticket of this
// group's stays its rightful carrier's to redeem); an anonymous browser
// is sent to sign in.
func TestDashSwarmCrossGroup(t *testing.T) { stores.Each(t, testDashSwarmCrossGroup) }

func testDashSwarmCrossGroup(t *testing.T) {
	s := newDashServer(t)
	alice := newSwarmWorld(t, s, "alice", nil)
	bob := newSwarmWorld(t, s, "bob", nil)
	theirs, ours := alice.everyForm(), bob.everyForm()
	x := alice.checkpointed("to-continue")
	ticket, err := s.swarm.Prepare(t.Context(), alice.owner, alice.car, alice.id(), x.ref.WorkerID, "context full", 0)
	if err != nil {
		t.Fatal(err)
	}
	aliceTask := strings.TrimPrefix(theirs[1].id, "fail-")
	noSwarm, noTask := continuo.NewID(continuo.PrefixSwarm, time.Now()), continuo.NewID(continuo.PrefixTask, time.Now())
	unknownID := regexp.MustCompile(`\b[a-z]{3}_[0-9A-Z]{26}\b`)
	for p, none := range map[string]string{
		"/w/" + alice.id():                                      "/w/" + noSwarm,
		"/w/" + alice.id() + "/tasks":                           "/w/" + noSwarm + "/tasks",
		"/w/" + alice.id() + "/tasks?state=reconcile_required":  "/w/" + noSwarm + "/tasks?state=reconcile_required",
		"/w/" + alice.id() + "/tasks/" + aliceTask:              "/w/" + noSwarm + "/tasks/" + aliceTask,
		"/w/" + bob.id() + "/tasks/" + aliceTask:                "/w/" + bob.id() + "/tasks/" + noTask,
		"/w/" + alice.id() + "/tasks/" + ticket.Continuation.ID: "/w/" + noSwarm + "/tasks/" + ticket.Continuation.ID,
	} {
		r, u := bob.b.get(p), bob.b.get(none)
		if r.StatusCode != http.StatusNotFound {
			t.Fatalf("bob GET %s: %d %s", p, r.StatusCode, r.body)
		}
		swarmLacks(t, "bob's answer for "+p, r.body, "to-requeue", "doer")
		if got, want := unknownID.ReplaceAllString(r.body, "ID"), unknownID.ReplaceAllString(u.body, "ID"); u.StatusCode != r.StatusCode || got != want {
			t.Errorf("bob GET %s and GET %s (unknown) read differently:\n%s\n%s", p, none, got, want)
		}
	}
	before, snap := s.export(), alice.snapshot()
	for i, f := range theirs {
		mine := ours[i] // the same form on bob's own page: his CSRF field for it
		fields, _ := mine.fields(t, bob.b.page(mine.page).body)
		alicePage := alice.b.page(f.page).body
		target, action := f.fields(t, alicePage)
		for k, v := range target { // alice's IDs, bob's CSRF
			if k != "csrf" {
				fields[k] = v
			}
		}
		for _, to := range []string{action, strings.Replace(action, alice.id(), bob.id(), 1)} {
			if r := swarmPost(bob.b, s.url, to, fields); r.StatusCode != http.StatusNotFound {
				t.Fatalf("bob posts %s to %s: %d %s", f.id, to, r.StatusCode, r.body)
			}
		}
	}
	if after := alice.snapshot(); after != snap {
		t.Fatalf("bob's posts changed alice's swarm:\n%s\nthen\n%s", snap, after)
	}
	if after := s.export(); !bytes.Equal(after, before) {
		t.Fatalf("bob's requests changed the database:\n%s\nthen\n%s", before, after)
	}
	car := alice.carrier()
	if b, err := s.swarm.Redeem(t.Context(), alice.crew, car, alice.id(), ticket.Ticket); err != nil || b.Worker.Epoch != 1 {
		t.Fatalf("alice's rightful carrier redeems after bob: %+v %v", b, err)
	}
	anon := s.anonymous()
	if r := anon.get("/w/" + alice.id()); r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/login?") {
		t.Fatalf("anonymous: %d %s", r.StatusCode, r.Header.Get("Location"))
	}
}

// TestDashSwarmXSS: labels, task keys, prompts, results, a worker's note,
// the owner's evidence and a continuation's reason holding markup are
// written escaped on every swarm page.
func TestDashSwarmXSS(t *testing.T) { stores.Each(t, testDashSwarmXSS) }

func testDashSwarmXSS(t *testing.T) {
	s := newDashServer(t)
	ctx := t.Context()
	w := newSwarmWorld(t, s, "alice", nil)
	for i, evil := range []string{`<script>alert(1)</script>`, `"><img src=x onerror=alert(1)>`} {
		x := w.checkpointed("label " + evil)
		y := w.join(fmt.Sprintf("doer %d", i))
		doubt, a := w.inDoubt(y, "key "+evil, "note "+evil)
		done := w.dispatch("done "+evil, "prompt "+evil, y.ref.WorkerID)
		w.next(y)
		if _, err := s.swarm.Submit(ctx, w.crew, y.car, y.ref, done.ID, "result "+evil); err != nil {
			t.Fatal(err)
		}
		w.request(x, "reason "+evil)
		requeued, b := w.inDoubt(y, "requeued "+evil, "lost")
		if _, err := s.swarm.Reconcile(ctx, w.owner, w.car, swarm.ReconcileInput{SwarmID: w.id(), TaskID: requeued.ID, AttemptID: b.ID,
			Decision: swarm.DecideRequeue, Disposition: swarm.NoEffect, Evidence: "evidence " + evil}); err != nil {
			t.Fatal(err)
		}
		pages := map[string][]string{
			"/w/" + w.id(): {"label ", "key ", "note ", "reason "},
			"/w/" + w.id() + "/tasks?state=reconcile_required":   {"key "},
			"/w/" + w.id() + "/tasks?state=result_ready":         {"done "},
			"/w/" + w.id() + "/tasks/" + doubt.ID:                {"key ", "note "},
			"/w/" + w.id() + "/tasks/" + done.ID:                 {"done ", "prompt ", "result "},
			"/w/" + w.id() + "/tasks/" + requeued.ID:             {"requeued ", "evidence "},
			"/swarms":                                            nil,
			"/w/" + w.id() + "/tasks?state=queued&after=" + a.ID: {"requeued "},
		}
		for p, prefixes := range pages {
			body := w.b.page(p).body
			swarmLacks(t, p, body, evil)
			for _, pre := range prefixes {
				swarmHas(t, p, body, swarmEscaped(pre+evil))
			}
		}
	}
}
