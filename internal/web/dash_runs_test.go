package web_test

import (
	"bufio"
	"context"
	"encoding/json"
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
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/web"
	"github.com/continuo-dev/continuo/internal/web/webtest"
	"github.com/continuo-dev/continuo/internal/workflow"
)

// The runs area: evidence badges from real checks run by run.Commands in a
// real git checkout, the run page and its live stream, cancel, and who may
// see and do what.

// The payloads of the escaping tests.
var xssPayloads = []string{`<script>alert(1)</script>`, `"><img src=x onerror=alert(1)>`}

// runsScopes are what a person who runs checks holds.
var runsScopes = []continuo.Scope{continuo.ScopeSessionsRead, continuo.ScopeSessionsWrite, continuo.ScopeRuntimeRead, continuo.ScopeProjectWrite}

// runsFixture is a dashboard with a project whose root is a git checkout
// with checks, and a session of its owner's group in it.
type runsFixture struct {
	s      *dashServer
	root   string
	gate   string // the slow check prints its second line once this file exists
	tok    *auth.IssuedToken
	caller *continuo.Caller
	sess   *continuo.Session
	b      *dashBrowser
}

// newRunsFixture registers project name for principal (a group of its
// own) on s, in a new git checkout, and starts a session titled title.
func newRunsFixture(t *testing.T, s *dashServer, principal, name, title string) *runsFixture {
	t.Helper()
	f := &runsFixture{s: s, root: t.TempDir(), gate: filepath.Join(t.TempDir(), "gate")}
	f.git("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(f.root, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.git("add", "-A")
	f.git("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "first")
	f.tok = s.token(principal, runsScopes...)
	f.caller = s.caller(f.tok)
	checks := map[string]continuo.Check{
		"test":  {Command: []string{"sh", "-c", "echo all good"}},
		"lint":  {Command: []string{"sh", "-c", "echo 'main.go:1: bad'; exit 2"}},
		"slow":  {Command: []string{"sh", "-c", "echo one; while [ ! -e " + f.gate + " ]; do sleep 0.01; done; echo two"}},
		"sleep": {Command: []string{"sleep", "600"}},
		"xss":   {Command: []string{"printf", "%s\\n%s\\n", xssPayloads[0], xssPayloads[1]}},
	}
	if _, err := s.auth.AddProject(t.Context(), auth.ProjectSpec{Name: name, Root: f.root, Writable: true, Checks: checks},
		map[string]continuo.Access{principal: continuo.AccessWrite}); err != nil {
		t.Fatal(err)
	}
	w, err := s.wf.WorkOnProject(t.Context(), f.caller, workflow.WorkOn{Project: name, Instruction: "make it work", Title: title})
	if err != nil {
		t.Fatal(err)
	}
	f.sess = w.Session
	f.b = s.browser(f.tok)
	return f
}

func (f *runsFixture) git(args ...string) {
	f.s.t.Helper()
	if out, err := exec.Command("git", append([]string{"-C", f.root}, args...)...).CombinedOutput(); err != nil {
		f.s.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// start starts check for the fixture's session through the service.
func (f *runsFixture) start(check string) *continuo.Run {
	f.s.t.Helper()
	v, err := f.s.wf.RunValidation(f.s.t.Context(), f.caller, f.sess.ID, check, 0)
	if err != nil {
		f.s.t.Fatal(err)
	}
	return &v.Run
}

// startPage starts check and opens its run page.
func (f *runsFixture) startPage(check string) (*continuo.Run, response) {
	f.s.t.Helper()
	r := f.start(check)
	return r, f.b.page("/r/" + r.ID)
}

// wait waits for a run to end.
func (f *runsFixture) wait(id string) *continuo.Run {
	f.s.t.Helper()
	r, err := f.s.runs.Wait(f.s.t.Context(), f.caller, id, 30*time.Second)
	if err != nil || !r.State.Terminal() {
		f.s.t.Fatalf("run %s: %+v, %v", id, r, err)
	}
	return r
}

func (f *runsFixture) get(id string) *continuo.Run {
	f.s.t.Helper()
	r, err := f.s.runs.Get(f.s.t.Context(), f.caller, id)
	if err != nil {
		f.s.t.Fatal(err)
	}
	return r
}

// runCount is how many runs the fixture's group has in its project.
func (f *runsFixture) runCount() int {
	f.s.t.Helper()
	p, err := f.s.runs.List(f.s.t.Context(), f.caller, f.sess.ProjectID, "", 50)
	if err != nil {
		f.s.t.Fatal(err)
	}
	return len(p.Runs)
}

// checkRow returns the row of check in the evidence page's table of the
// session: its status badge, source, run link.
func checkRow(t *testing.T, page, sessionID, check string) string {
	t.Helper()
	sec := regexp.MustCompile(`(?s)<section class="runs-session" id="` + regexp.QuoteMeta(sessionID) + `">.*?</section>`).FindString(page)
	row := regexp.MustCompile(`(?s)<tr>\s*<td><code>` + regexp.QuoteMeta(check) + `</code></td>.*?</tr>`).FindString(sec)
	if row == "" {
		t.Fatalf("no row of check %s in session %s:\n%s", check, sessionID, page)
	}
	return row
}

// see is the path a form post sent the browser to.
func see(t *testing.T, r response) string {
	t.Helper()
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("post: %d %s", r.StatusCode, r.body)
	}
	return r.Header.Get("Location")
}

func TestDashEvidence(t *testing.T) { stores.Each(t, testDashEvidence) }

// Checks run from the evidence page's buttons: a passing check shows
// passed on the commit it ran on, a failing one failed, one never run
// not run; after an edit the finished ones are stale and the source shows
// uncommitted changes. Each badge links to its run.
func testDashEvidence(t *testing.T) {
	s := newDashServer(t)
	f := newRunsFixture(t, s, "alice", "webapp", "evidence session")
	page := f.b.page("/p/webapp/evidence")
	for _, check := range []string{"test", "lint", "slow"} {
		if row := checkRow(t, page.body, f.sess.ID, check); !strings.Contains(row, "badge-not-run") || strings.Contains(row, "/r/") {
			t.Errorf("%s before any run: %s", check, row)
		}
	}
	var ids = map[string]string{}
	for _, check := range []string{"test", "lint"} {
		loc := see(t, f.b.submit(page, "run-"+f.sess.ID+"-"+check, nil))
		id, ok := strings.CutPrefix(loc, "/r/")
		if !ok {
			t.Fatalf("run %s: sent to %s", check, loc)
		}
		if r := f.wait(id); r.Check != check || r.SessionID != f.sess.ID {
			t.Fatalf("the form ran %+v", r)
		}
		ids[check] = id
	}
	head := strings.TrimSpace(gitOut(t, f.root, "rev-parse", "HEAD"))
	page = f.b.page("/p/webapp/evidence")
	for check, want := range map[string]string{"test": "badge-passed", "lint": "badge-failed", "slow": "badge-not-run"} {
		row := checkRow(t, page.body, f.sess.ID, check)
		if !strings.Contains(row, want) {
			t.Errorf("%s: want %s in %s", check, want, row)
		}
		if id := ids[check]; id != "" && (!strings.Contains(row, `href="/r/`+id+`"`) || !strings.Contains(row, head[:12]) || !strings.Contains(row, "clean")) {
			t.Errorf("%s: want a link to %s, head %s, clean: %s", check, id, head[:12], row)
		}
	}
	if !strings.Contains(page.body, "exit 2") {
		t.Errorf("the failing check's exit status is not shown")
	}

	// The code changes: what ran before is stale, and the source says so.
	if err := os.WriteFile(filepath.Join(f.root, "main.go"), []byte("package main // changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	page = f.b.page("/p/webapp/evidence")
	for check, want := range map[string]string{"test": "badge-stale", "lint": "badge-stale", "slow": "badge-not-run"} {
		if row := checkRow(t, page.body, f.sess.ID, check); !strings.Contains(row, want) {
			t.Errorf("after an edit, %s: want %s in %s", check, want, row)
		}
	}
	if !strings.Contains(page.body, "+ uncommitted changes") {
		t.Errorf("the current source does not show the edit:\n%s", page.body)
	}
	// Closed sessions are behind the filter; their checks have no button.
	if _, _, err := s.wf.CloseSession(t.Context(), f.caller, f.sess.ID, ""); err != nil {
		t.Fatal(err)
	}
	if page := f.b.page("/p/webapp/evidence"); strings.Contains(page.body, f.sess.ID) {
		t.Errorf("a closed session among the active ones")
	}
	closed := f.b.page("/p/webapp/evidence?lifecycle=closed")
	if row := checkRow(t, closed.body, f.sess.ID, "test"); !strings.Contains(row, "badge-stale") || strings.Contains(row, "<form") {
		t.Errorf("closed session's test: %s", row)
	}
	if r := f.b.get("/p/webapp/evidence?lifecycle=open"); r.StatusCode != http.StatusBadRequest {
		t.Errorf("a bad filter: %d", r.StatusCode)
	}
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return string(out)
}

func TestDashRunCheckForm(t *testing.T) { stores.Each(t, testDashRunCheckForm) }

// The run button's form is refused without its own csrf field (none,
// another form's, or from another site), and so is it for a browser whose
// sign-in lacks project:write (the service's forbidden): no run starts.
func testDashRunCheckForm(t *testing.T) {
	s := newDashServer(t)
	f := newRunsFixture(t, s, "alice", "webapp", "form session")
	page := f.b.page("/p/webapp/evidence")
	form := "run-" + f.sess.ID + "-test"
	fields := runsForm(t, page, form)
	logout := runsForm(t, page, "logout")
	refusedPosts(t, f.b, "/p/webapp/evidence/run", fields, logout["csrf"][0])
	if n := f.runCount(); n != 0 {
		t.Fatalf("%d runs after refused posts", n)
	}
	// Within the group, a sign-in without project:write is refused.
	weak := s.browser(s.token("alice", continuo.ScopeSessionsRead, continuo.ScopeRuntimeRead))
	wp := weak.page("/p/webapp/evidence")
	if r := weak.submit(wp, form, nil); r.StatusCode != http.StatusForbidden || !strings.Contains(r.body, "project:write") {
		t.Errorf("without project:write: %d %s", r.StatusCode, r.body)
	}
	if n := f.runCount(); n != 0 {
		t.Fatalf("%d runs after a forbidden post", n)
	}
}

// runsForm returns the hidden fields of a page's form.
func runsForm(t *testing.T, page response, id string) url.Values {
	t.Helper()
	fields, ok := webtest.FormFields(page.body, id)
	if !ok {
		t.Fatalf("no form %q on the page:\n%s", id, page.body)
	}
	return fields
}

// refusedPosts posts fields to path without their csrf field, with
// another form's (other), and from another site's Origin: each 403.
func refusedPosts(t *testing.T, b *dashBrowser, path string, fields url.Values, other string) {
	t.Helper()
	without := url.Values{}
	for k, v := range fields {
		if k != "csrf" {
			without[k] = v
		}
	}
	wrong := url.Values{}
	for k, v := range without {
		wrong[k] = v
	}
	wrong.Set("csrf", other)
	for name, form := range map[string]url.Values{"no csrf": without, "another form's csrf": wrong} {
		if r := b.post(path, form); r.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d %s", name, r.StatusCode, r.body)
		}
	}
	req, _ := http.NewRequest("POST", b.s.url+path, strings.NewReader(fields.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	if r := do(t, b.c, req); r.StatusCode != http.StatusForbidden {
		t.Errorf("from another Origin: %d %s", r.StatusCode, r.body)
	}
}

func TestDashRunPage(t *testing.T) { stores.Each(t, testDashRunPage) }

// The run page shows the run's record and its output; output and titles
// holding markup are escaped; an agent run shows its provider and usage;
// the project's runs list links to each.
func testDashRunPage(t *testing.T) {
	s := newDashServer(t)
	f := newRunsFixture(t, s, "alice", "webapp", xssPayloads[0]+xssPayloads[1])
	lint := f.wait(f.start("lint").ID)
	page := f.b.page("/r/" + lint.ID)
	for _, want := range []string{"badge-failed", "<code>lint</code>", "validation check", "main.go:1: bad", "Exit status</dt><dd>2",
		`href="/s/` + f.sess.ID + `"`, `href="/p/webapp/runs"`, "clean"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the run page lacks %q:\n%s", want, page.body)
		}
	}
	if strings.Contains(page.body, "data-live=") || strings.Contains(page.body, `id="run-cancel"`) {
		t.Errorf("an ended run's page follows it live or offers cancel")
	}
	// A failed check's last lines come first, without the log's state lines.
	if tail := regexp.MustCompile(`(?s)id="run-tail">(.*?)</pre>`).FindStringSubmatch(page.body); tail == nil ||
		!strings.Contains(tail[1], "main.go:1: bad") || strings.Contains(tail[1], "exit status") {
		t.Errorf("the failed run's page has no last lines (or they hold state lines):\n%s", page.body)
	}

	// Markup in the output and in the session's title is text.
	xss := f.wait(f.start("xss").ID)
	// The session is named by its ref and title, on the run page and in
	// the runs list.
	for _, path := range []string{"/r/" + xss.ID, "/p/webapp/runs"} {
		sessionsHas(t, path, f.b.page(path).body, `<a href="/s/`+f.sess.ID+`">~s1 · `+html.EscapeString(xssPayloads[0]))
	}
	for _, path := range []string{"/r/" + xss.ID, "/p/webapp/runs", "/p/webapp/evidence"} {
		body := f.b.page(path).body
		for _, p := range xssPayloads {
			if strings.Contains(body, p) || !strings.Contains(body, html.EscapeString(p)) {
				t.Errorf("%s: %q not escaped", path, p)
			}
		}
	}

	// An agent run (recorded directly: no provider runs here).
	agent := storedRun(continuo.RunAgent, f.caller, f.sess.ProjectID)
	ended, code := time.Now().UTC(), 0
	agent.State, agent.ProviderID, agent.StartedAt, agent.EndedAt, agent.ExitCode = continuo.RunSucceeded, "model-review", &ended, &ended, &code
	agent.Usage, agent.Dir, agent.Spec, agent.LeaseUntil = `{"input_tokens":12,"output_tokens":34}`, f.root, "{}", time.Time{}
	err := s.store.Write(t.Context(), func(tx store.Tx) error {
		if err := tx.RunCreate(t.Context(), agent); err != nil {
			return err
		}
		return tx.RunAppend(t.Context(), store.RunAppend{RunID: agent.ID, Events: []continuo.RunEvent{
			{RunID: agent.ID, Seq: 1, Kind: continuo.EventText, Text: "the model's <b>answer</b>", At: ended}}, OutputBytes: 25, KeptBytes: 25, HeadSeq: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	ap := f.b.page("/r/" + agent.ID)
	if strings.Contains(ap.body, `id="run-tail"`) {
		t.Errorf("a succeeded agent run's page shows last lines")
	}
	for _, want := range []string{"delegated model run", "<code>model-review</code>", "input_tokens", "the model&#39;s &lt;b&gt;answer&lt;/b&gt;", "badge-succeeded"} {
		if !strings.Contains(ap.body, want) {
			t.Errorf("the agent run's page lacks %q:\n%s", want, ap.body)
		}
	}

	// The project's runs, newest first, each linked.
	list := f.b.page("/p/webapp/runs")
	iAgent, iXSS, iLint := strings.Index(list.body, "/r/"+agent.ID), strings.Index(list.body, "/r/"+xss.ID), strings.Index(list.body, "/r/"+lint.ID)
	if iAgent < 0 || iXSS < iAgent || iLint < iXSS {
		t.Errorf("runs list order (agent %d, xss %d, lint %d):\n%s", iAgent, iXSS, iLint, list.body)
	}
	if r := f.b.get("/r/" + continuo.NewID(continuo.PrefixRun, time.Now())); r.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown run: %d", r.StatusCode)
	}
	// A sign-in without runtime:read sees the service's forbidden.
	reader := s.browser(s.token("alice", continuo.ScopeSessionsRead))
	for _, path := range []string{"/r/" + lint.ID, "/r/" + lint.ID + "/events", "/p/webapp/runs"} {
		if r := reader.get(path); r.StatusCode != http.StatusForbidden || !strings.Contains(r.body, "runtime:read") {
			t.Errorf("%s without runtime:read: %d %s", path, r.StatusCode, r.body)
		}
	}
}

func TestDashRunsPaging(t *testing.T) { stores.Each(t, testDashRunsPaging) }

// The runs list pages by the service's cursor: 25 runs are 20 and 5.
func testDashRunsPaging(t *testing.T) {
	s := newDashServer(t)
	f := newRunsFixture(t, s, "alice", "webapp", "paging")
	var ids []string
	err := s.store.Write(t.Context(), func(tx store.Tx) error {
		ids = nil
		for range 25 {
			r := storedRun(continuo.RunValidation, f.caller, f.sess.ProjectID)
			now := time.Now().UTC()
			r.State, r.Check, r.Dir, r.Spec, r.StartedAt, r.EndedAt, r.LeaseUntil = continuo.RunSucceeded, "test", f.root, "{}", &now, &now, time.Time{}
			if err := tx.RunCreate(t.Context(), r); err != nil {
				return err
			}
			ids = append(ids, r.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	first := f.b.page("/p/webapp/runs")
	if n := strings.Count(first.body, `<td><a href="/r/`); n != 20 || !strings.Contains(first.body, "/r/"+ids[24]) || strings.Contains(first.body, "/r/"+ids[4]+`"`) {
		t.Fatalf("first page: %d runs\n%s", n, first.body)
	}
	next := regexp.MustCompile(`href="(/p/webapp/runs\?before=[^"]+)">older`).FindStringSubmatch(first.body)
	if next == nil {
		t.Fatalf("no older link:\n%s", first.body)
	}
	second := f.b.page(html.UnescapeString(next[1]))
	if n := strings.Count(second.body, `<td><a href="/r/`); n != 5 || !strings.Contains(second.body, "/r/"+ids[0]) || strings.Contains(second.body, "older →") {
		t.Errorf("second page: %d runs\n%s", n, second.body)
	}
}

// ---- the event stream ----

// sseStream is an open event stream of a browser.
type sseStream struct {
	t    *testing.T
	resp *http.Response
	r    *bufio.Reader
}

type sseEvent struct{ event, id, data string }

// events opens path's event stream in b's session, resuming after lastID
// when it is set.
func (b *dashBrowser) events(path, lastID string) *sseStream {
	t := b.s.t
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", b.s.url+path, nil)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	c := &http.Client{Jar: b.c.Jar, CheckRedirect: b.c.CheckRedirect} // no overall timeout: the context bounds it
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return &sseStream{t: t, resp: resp, r: bufio.NewReader(resp.Body)}
}

// next returns the next event; false at the end of the stream.
func (s *sseStream) next() (sseEvent, bool) {
	s.t.Helper()
	var e sseEvent
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if line != "" || e.event != "" {
				s.t.Fatalf("a stream that ends inside an event: %q, %v", line, err)
			}
			return e, false
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if e.event != "" || e.data != "" {
				return e, true
			}
		case strings.HasPrefix(line, ":"), strings.HasPrefix(line, "retry: "):
		case strings.HasPrefix(line, "event: "):
			e.event = line[len("event: "):]
		case strings.HasPrefix(line, "id: "):
			e.id = line[len("id: "):]
		case strings.HasPrefix(line, "data: "):
			e.data += line[len("data: "):]
		default:
			s.t.Fatalf("not a line of an event stream: %q", line)
		}
	}
}

// logText is the text of a log event ("" for other events).
func (e sseEvent) logText(t *testing.T) string {
	t.Helper()
	if e.event != "log" {
		return ""
	}
	var v struct{ Text string }
	if err := json.Unmarshal([]byte(e.data), &v); err != nil {
		t.Fatalf("log event %q: %v", e.data, err)
	}
	return v.Text
}

// state is the run state a state or end event says.
func (e sseEvent) state(t *testing.T) string {
	t.Helper()
	var v struct{ State string }
	if err := json.Unmarshal([]byte(e.data), &v); err != nil || v.State == "" {
		t.Fatalf("%s event %q: %v", e.event, e.data, err)
	}
	return v.State
}

// until reads events until one whose log text contains text (returned),
// failing on the end event or the stream's end. It returns every log text
// read, in order.
func (s *sseStream) until(text string) (sseEvent, []string) {
	s.t.Helper()
	var texts, seen []string
	for {
		e, ok := s.next()
		if !ok || e.event == "end" {
			s.t.Fatalf("the stream ended (%+v) before %q; it had %q (events: %q)", e, text, texts, seen)
		}
		seen = append(seen, e.event+" "+e.id+" "+e.data)
		if lt := e.logText(s.t); lt != "" {
			texts = append(texts, lt)
			if strings.Contains(lt, text) {
				return e, texts
			}
		}
	}
}

// rest reads the stream to its end: its log texts, and the end event
// (its state), which must be the last event.
func (s *sseStream) rest() ([]string, string) {
	s.t.Helper()
	var texts []string
	for {
		e, ok := s.next()
		if !ok {
			s.t.Fatalf("the stream ended without an end event; it had %q", texts)
		}
		if e.event == "end" {
			if more, ok := s.next(); ok {
				s.t.Fatalf("an event after the end: %+v", more)
			}
			return texts, e.state(s.t)
		}
		if lt := e.logText(s.t); lt != "" {
			texts = append(texts, lt)
		}
	}
}

func TestDashRunEvents(t *testing.T) { stores.Each(t, testDashRunEvents) }

// The run page follows a running check live: its first line arrives as an
// event while the check still runs, its second once it prints it, then the
// end; a reconnect with Last-Event-ID repeats nothing.
func testDashRunEvents(t *testing.T) {
	s := newDashServer(t)
	f := newRunsFixture(t, s, "alice", "webapp", "live")
	r, page := f.startPage("slow")
	live := regexp.MustCompile(`data-live="([^"]+)"`).FindStringSubmatch(page.body)
	if live == nil || !strings.Contains(page.body, `href="/r/`+r.ID+`">Refresh</a>`) {
		t.Fatalf("a running run's page without data-live or a refresh link:\n%s", page.body)
	}
	liveURL := html.UnescapeString(live[1])
	stream := f.b.events(liveURL, "")
	// The check prints its first line at once: the page shows it when it
	// was rendered after that (the machine was busy), and its stream then
	// carries on after it; otherwise the line arrives as an event.
	var oneID string
	if strings.Contains(page.body, `<span class="ev ev-output">one`) {
		u, err := url.Parse(liveURL)
		if err != nil {
			t.Fatal(err)
		}
		oneID = u.Query().Get("after")
	} else {
		one, _ := stream.until("one")
		oneID = one.id
	}
	if st := f.get(r.ID).State; st != continuo.RunRunning {
		t.Fatalf("the first line arrived, the run is %s", st)
	}
	if oneID == "" {
		t.Fatal("a log event without an id")
	}
	// Resumed after "one": nothing before it again.
	resumed := f.b.events("/r/"+r.ID+"/events", oneID)
	if err := os.WriteFile(f.gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	two, _ := stream.until("two")
	rest, state := stream.rest()
	if state != string(continuo.RunSucceeded) || !strings.Contains(strings.Join(rest, ""), "succeeded") {
		t.Errorf("the end: %s after %q", state, rest)
	}
	texts, state := resumed.rest()
	if all := strings.Join(texts, ""); strings.Contains(all, "one") || !strings.Contains(all, "two") || state != string(continuo.RunSucceeded) {
		t.Errorf("resumed after %s: %q, end %s", oneID, texts, state)
	}
	// After the end, resuming from the last line gives the end alone.
	after := f.b.events("/r/"+r.ID+"/events", two.id)
	if texts, state := after.rest(); strings.Contains(strings.Join(texts, ""), "two") || state != string(continuo.RunSucceeded) {
		t.Errorf("resumed after the end: %q, %s", texts, state)
	}
	// From the start (no id, no token): everything, once.
	all, _ := f.b.events("/r/"+r.ID+"/events", "").rest()
	if got := strings.Join(all, ""); strings.Count(got, "one\n") != 1 || strings.Count(got, "two\n") != 1 {
		t.Errorf("the whole log: %q", got)
	}
	// A token of another run (or forged) is refused before any stream.
	other := f.wait(f.start("test").ID)
	req, _ := http.NewRequest("GET", s.url+"/r/"+other.ID+"/events", nil)
	req.Header.Set("Last-Event-ID", oneID)
	if r := do(t, f.b.c, req); r.StatusCode != http.StatusBadRequest {
		t.Errorf("another run's token: %d %s", r.StatusCode, r.body)
	}
}

func TestDashRunEventsBounded(t *testing.T) { stores.Each(t, testDashRunEventsBounded) }

// A stream ends after its longest duration without an end event, and the
// browser's reconnect with the last id carries on where it was.
func testDashRunEventsBounded(t *testing.T) {
	t.Cleanup(web.SetRunStreamMax(300 * time.Millisecond))
	s := newDashServer(t)
	f := newRunsFixture(t, s, "alice", "webapp", "bounded")
	r := f.start("slow")
	stream := f.b.events("/r/"+r.ID+"/events", "")
	one, _ := stream.until("one")
	last := one.id
	for {
		e, ok := stream.next()
		if !ok {
			break
		}
		if e.event == "end" {
			t.Fatalf("the run ended while its gate was shut: %+v", e)
		}
		if e.id != "" {
			last = e.id
		}
	}
	if st := f.get(r.ID).State; st != continuo.RunRunning {
		t.Fatalf("the stream ended with the run %s", st)
	}
	again := f.b.events("/r/"+r.ID+"/events", last)
	if err := os.WriteFile(f.gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// The second stream may itself end at its bound before the run ends:
	// follow it as a browser does.
	var texts []string
	state := ""
	for state == "" {
		e, ok := again.next()
		switch {
		case !ok:
			again = f.b.events("/r/"+r.ID+"/events", last)
			continue
		case e.event == "end":
			state = e.state(t)
		case e.event == "log":
			texts = append(texts, e.logText(t))
		}
		if e.id != "" {
			last = e.id
		}
	}
	if all := strings.Join(texts, ""); strings.Contains(all, "one") || !strings.Contains(all, "two") || state != string(continuo.RunSucceeded) {
		t.Errorf("after the reconnect: %q, %s", texts, state)
	}
}

func TestDashRunEventsSignOut(t *testing.T) { stores.Each(t, testDashRunEventsSignOut) }

// A browser that signs out while it follows a run hears nothing more: the
// stream ends without the run's next line, and a reconnect is sent to sign
// in.
func testDashRunEventsSignOut(t *testing.T) {
	s := newDashServer(t)
	f := newRunsFixture(t, s, "alice", "webapp", "sign out")
	r, page := f.startPage("slow")
	stream := f.b.events("/r/"+r.ID+"/events", "")
	one, _ := stream.until("one")
	see(t, f.b.submit(page, "logout", nil))
	if err := os.WriteFile(f.gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f.wait(r.ID)
	for {
		e, ok := stream.next()
		if !ok {
			break
		}
		if strings.Contains(e.logText(t), "two") || e.event == "end" {
			t.Fatalf("signed out, the stream still sent %+v", e)
		}
	}
	req, _ := http.NewRequest("GET", s.url+"/r/"+r.ID+"/events", nil)
	req.Header.Set("Last-Event-ID", one.id)
	if got := do(t, f.b.c, req); got.StatusCode != http.StatusSeeOther || !strings.HasPrefix(got.Header.Get("Location"), "/login") {
		t.Errorf("a signed-out reconnect: %d %s", got.StatusCode, got.Header.Get("Location"))
	}
}

func TestDashRunCancel(t *testing.T) { stores.Each(t, testDashRunCancel) }

// A long check is cancelled from its page and ends cancelled; the form is
// refused without its own csrf field, from another site, and for a
// sign-in without project:write, and then nothing is cancelled. A second
// cancel changes nothing.
func testDashRunCancel(t *testing.T) {
	s := newDashServer(t)
	f := newRunsFixture(t, s, "alice", "webapp", "cancel")
	r, page := f.startPage("sleep")
	fields := runsForm(t, page, "run-cancel")
	logout := runsForm(t, page, "logout")
	refusedPosts(t, f.b, "/r/"+r.ID+"/cancel", fields, logout["csrf"][0])
	weak := s.browser(s.token("alice", continuo.ScopeSessionsRead, continuo.ScopeRuntimeRead))
	if r := weak.submit(weak.page("/r/"+r.ID), "run-cancel", nil); r.StatusCode != http.StatusForbidden || !strings.Contains(r.body, "project:write") {
		t.Errorf("cancel without project:write: %d %s", r.StatusCode, r.body)
	}
	if got := f.get(r.ID); got.CancelRequested || got.State.Terminal() {
		t.Fatalf("after refused cancels: %+v", got)
	}
	if loc := see(t, f.b.submit(page, "run-cancel", nil)); loc != "/r/"+r.ID {
		t.Errorf("cancel sent the browser to %s", loc)
	}
	if got := f.wait(r.ID); got.State != continuo.RunCancelled {
		t.Fatalf("cancelled from its page: %s", got.State)
	}
	after := f.b.page("/r/" + r.ID)
	if !strings.Contains(after.body, "badge-cancelled") || strings.Contains(after.body, `id="run-cancel"`) {
		t.Errorf("a cancelled run's page:\n%s", after.body)
	}
	if loc := see(t, f.b.submit(page, "run-cancel", nil)); loc != "/r/"+r.ID {
		t.Errorf("a second cancel: %s", loc)
	}
	if got := f.get(r.ID); got.State != continuo.RunCancelled {
		t.Errorf("after a second cancel: %s", got.State)
	}
}

func TestDashRunsCrossGroup(t *testing.T) { stores.Each(t, testDashRunsCrossGroup) }

// Another group's user, with every scope of the area, gets 404 for each
// page of alice's runs and evidence by URL, and cannot act through the
// forms with valid fields of its own pages: nothing starts or stops.
func testDashRunsCrossGroup(t *testing.T) {
	s := newDashServer(t)
	alice := newRunsFixture(t, s, "alice", "webapp", "alice's")
	bob := newRunsFixture(t, s, "bob", "bobapp", "bob's")
	r := alice.start("sleep")
	t.Cleanup(func() { _, _ = s.runs.Cancel(context.Background(), alice.caller, r.ID, 0) })
	for _, path := range []string{"/r/" + r.ID, "/r/" + r.ID + "/events", "/p/webapp/evidence", "/p/webapp/runs",
		"/p/" + alice.sess.ProjectID + "/evidence", "/p/" + alice.sess.ProjectID + "/runs"} {
		if got := bob.b.get(path); got.StatusCode != http.StatusNotFound || strings.Contains(got.body, "alice") {
			t.Errorf("bob GET %s: %d %s", path, got.StatusCode, got.body)
		}
	}
	// bob's own pages give him valid fields for both forms.
	mine := bob.start("sleep")
	t.Cleanup(func() { _, _ = s.runs.Cancel(context.Background(), bob.caller, mine.ID, 0) })
	cancel := runsForm(t, bob.b.page("/r/"+mine.ID), "run-cancel")
	if got := bob.b.post("/r/"+r.ID+"/cancel", cancel); got.StatusCode != http.StatusNotFound {
		t.Errorf("bob cancels alice's run: %d %s", got.StatusCode, got.body)
	}
	check := runsForm(t, bob.b.page("/p/bobapp/evidence"), "run-"+bob.sess.ID+"-test")
	check.Set("session", alice.sess.ID)
	for _, path := range []string{"/p/webapp/evidence/run", "/p/bobapp/evidence/run"} {
		if got := bob.b.post(path, check); got.StatusCode != http.StatusNotFound {
			t.Errorf("bob runs a check of alice's session at %s: %d %s", path, got.StatusCode, got.body)
		}
	}
	if got := alice.get(r.ID); got.CancelRequested || got.State.Terminal() {
		t.Errorf("alice's run after bob's cancel: %+v", got)
	}
	if n := alice.runCount(); n != 1 {
		t.Errorf("alice's project has %d runs, want 1", n)
	}
}

// storedRun is a run row as a test records it directly (its state and
// times set by the test), not one the run service enqueued.
func storedRun(kind continuo.RunKind, c *continuo.Caller, projectID string) *continuo.Run {
	now := time.Now().UTC()
	return &continuo.Run{ID: continuo.NewID(continuo.PrefixRun, now), Kind: kind, State: continuo.RunQueued, GroupID: c.GroupID,
		ProjectID: projectID, Revision: 1, CreatedAt: now}
}
