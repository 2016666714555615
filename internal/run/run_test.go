package run_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/run"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/stores"
)

// fixture is one store with a project, an admin caller, and a caller of
// another group that reaches the project too (read access).
type fixture struct {
	t       testing.TB
	store   store.Store
	auth    *auth.Service
	project *continuo.Project
	admin   *continuo.Caller
	other   *continuo.Caller
	dir     string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	ctx := t.Context()
	s := stores.Open(t)
	a := auth.New(s, nil)
	dir := t.TempDir()
	if _, _, err := a.Bootstrap(ctx, &auth.ProjectSpec{Name: "p", Root: dir, Writable: true}, false); err != nil {
		t.Fatal(err)
	}
	admin, err := a.Principal(ctx, auth.AdminName, continuo.AllScopes())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateGroup(ctx, "rivals"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreatePrincipal(ctx, "eve", "rivals"); err != nil {
		t.Fatal(err)
	}
	if err := a.Grant(ctx, "p", "rivals", continuo.AccessRead); err != nil {
		t.Fatal(err)
	}
	other, err := a.Principal(ctx, "eve", continuo.AllScopes())
	if err != nil {
		t.Fatal(err)
	}
	var p *continuo.Project
	if err := s.Read(ctx, func(tx store.Tx) (err error) { p, err = tx.ProjectGetByName(ctx, "p"); return err }); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, store: s, auth: a, project: p, admin: admin, other: other, dir: dir}
}

// service starts a run service named owner on the fixture's store.
func (f *fixture) service(owner string) *run.Service {
	f.t.Helper()
	s := run.New(f.store, f.auth, run.Options{Owner: owner, Key: []byte("test key"),
		Executors: map[continuo.RunKind]run.Executor{continuo.RunValidation: run.Commands{}}})
	if err := s.Start(); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(s.Close)
	return s
}

// start queues a validation run of argv in the fixture's directory and
// kicks the service.
func (f *fixture) start(s *run.Service, check string, timeout int, argv ...string) *continuo.Run {
	f.t.Helper()
	ctx := f.t.Context()
	var r *continuo.Run
	if err := f.store.Write(ctx, func(tx store.Tx) (err error) {
		r, err = s.Enqueue(ctx, tx, f.admin, run.Draft{Kind: continuo.RunValidation, ProjectID: f.project.ID, Check: check, Dir: f.dir,
			Spec: run.CommandSpec{Command: argv, TimeoutSecs: timeout}.JSON(), SourceHead: "h", SourceTree: "t"})
		return err
	}); err != nil {
		f.t.Fatal(err)
	}
	s.Kick()
	return r
}

// wait waits for a run to end, failing the test after a deadline.
func (f *fixture) wait(s *run.Service, id string) *continuo.Run {
	f.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		r, err := s.Wait(f.t.Context(), f.admin, id, 5*time.Second)
		if err != nil {
			f.t.Fatal(err)
		}
		if r.State.Terminal() {
			return r
		}
	}
	f.t.Fatalf("run %s did not end", id)
	return nil
}

// output reads a run's whole retained log through Observe, page by page.
func (f *fixture) output(s *run.Service, id string) (string, bool) {
	f.t.Helper()
	var b strings.Builder
	token, lost := "", false
	for {
		o, err := s.Observe(f.t.Context(), f.admin, id, token, 0)
		if err != nil {
			f.t.Fatal(err)
		}
		for _, e := range o.Events {
			b.WriteString(e.Text)
		}
		lost = lost || o.HistoryLost
		token = o.Token
		if !o.HasMore {
			return b.String(), lost
		}
	}
}

func TestRunOutcomes(t *testing.T) { stores.Each(t, testRunOutcomes) }

func testRunOutcomes(t *testing.T) {
	f := newFixture(t)
	s := f.service("")
	ok := f.start(s, "ok", 0, "sh", "-c", "echo out; echo err >&2")
	bad := f.start(s, "bad", 0, "sh", "-c", "echo failing; exit 3")
	missing := f.start(s, "missing", 0, "no-such-program-anywhere")

	r := f.wait(s, ok.ID)
	if r.State != continuo.RunSucceeded || r.ExitCode == nil || *r.ExitCode != 0 || r.StartedAt == nil || r.EndedAt == nil {
		t.Errorf("ok run = %+v", r)
	}
	if out, _ := f.output(s, ok.ID); !strings.Contains(out, "out\n") || !strings.Contains(out, "err\n") || !strings.HasPrefix(out, "running\n") ||
		!strings.HasSuffix(out, "succeeded (exit status 0)\n") {
		t.Errorf("ok output = %q", out)
	}
	// The output's bytes are the process's, not the log's state lines.
	if r, err := s.Get(t.Context(), f.admin, ok.ID); err != nil || r.OutputBytes != int64(len("out\nerr\n")) {
		t.Errorf("ok run: output bytes %d (%v), want %d", r.OutputBytes, err, len("out\nerr\n"))
	}
	r = f.wait(s, bad.ID)
	if r.State != continuo.RunFailed || r.ExitCode == nil || *r.ExitCode != 3 || r.ErrorKind != "exit_status" {
		t.Errorf("bad run = %+v", r)
	}
	r = f.wait(s, missing.ID)
	if r.State != continuo.RunFailed || r.ErrorKind != "start_failed" || r.ExitCode != nil {
		t.Errorf("missing run = %+v", r)
	}
}

func TestRunTimeoutKillsGroup(t *testing.T) { stores.Each(t, testRunTimeoutKillsGroup) }

// A run past its timeout ends timed_out, and its whole process group is
// gone (a background child included).
func testRunTimeoutKillsGroup(t *testing.T) {
	f := newFixture(t)
	s := f.service("")
	pidFile := filepath.Join(f.dir, "child.pid")
	r := f.start(s, "slow", 1, "sh", "-c", "sleep 300 & echo $! > "+pidFile+"; wait")
	got := f.wait(s, r.ID)
	if got.State != continuo.RunTimedOut || got.ErrorKind != "timeout" {
		t.Fatalf("run = %+v", got)
	}
	assertGone(t, pidFile)
}

// assertGone checks that the process whose pid is in file is gone.
func assertGone(t *testing.T, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(st), ") Z ") {
			return // gone, or a zombie waiting for its reaper
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d is still there", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRunCancel(t *testing.T) { stores.Each(t, testRunCancel) }

// cancel_run from another "replica" stops the run where it runs; a second
// cancel changes nothing; cancelling a queued run ends it at once; a
// caller of another group cannot see the run.
func testRunCancel(t *testing.T) {
	f := newFixture(t)
	a := f.service("replica-a")
	b := f.service("replica-b")
	ctx := t.Context()
	pidFile := filepath.Join(f.dir, "child.pid")
	r := f.start(a, "long", 0, "sh", "-c", "sleep 300 & echo $! > "+pidFile+"; echo started; wait")
	o, err := b.Observe(ctx, f.admin, r.ID, "", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(eventsText(o), "started") {
		if o, err = b.Observe(ctx, f.admin, r.ID, o.Token, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	queued := f.start(a, "long", 0, "true") // the same check in the same directory: waits
	if got, _ := a.Get(ctx, f.admin, queued.ID); got.State != continuo.RunQueued {
		t.Errorf("second run of the check = %s, want queued", got.State)
	}
	if _, err := b.Cancel(ctx, f.other, r.ID, 0); continuo.ErrorCode(err) != continuo.CodeNotFound {
		t.Errorf("another group's cancel = %v, want not_found", err)
	}
	got, err := b.Cancel(ctx, f.admin, r.ID, run.CancelWait)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != continuo.RunCancelled {
		got = f.wait(a, r.ID)
	}
	if got.State != continuo.RunCancelled || got.ErrorKind != "cancelled" {
		t.Fatalf("cancelled run = %+v", got)
	}
	assertGone(t, pidFile)
	again, err := a.Cancel(ctx, f.admin, r.ID, 0)
	if err != nil || again.State != continuo.RunCancelled || again.Revision != got.Revision {
		t.Errorf("second cancel = %+v, %v", again, err)
	}
	// The queued one started once the first ended; cancel a fresh queued one.
	if q := f.wait(a, queued.ID); q.State != continuo.RunSucceeded {
		t.Errorf("the queued run = %s, want succeeded after the first ended", q.State)
	}
	blocker := f.start(a, "block", 0, "sleep", "300")
	for r, _ := a.Get(ctx, f.admin, blocker.ID); r.State != continuo.RunRunning; r, _ = a.Get(ctx, f.admin, blocker.ID) {
		if _, err := a.Wait(ctx, f.admin, blocker.ID, 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	waiting := f.start(b, "block", 0, "true")
	qc, err := a.Cancel(ctx, f.admin, waiting.ID, run.CancelWait)
	if err != nil || qc.State != continuo.RunCancelled || qc.StartedAt != nil {
		t.Errorf("cancelled queued run = %+v, %v", qc, err)
	}
	if _, err := a.Cancel(ctx, f.admin, blocker.ID, run.CancelWait); err != nil {
		t.Fatal(err)
	}
}

func eventsText(o *run.Observation) string {
	var b strings.Builder
	for _, e := range o.Events {
		b.WriteString(e.Text)
	}
	return b.String()
}

func TestObserve(t *testing.T) { stores.Each(t, testObserve) }

// Observation tokens: only new output after one; a long poll wakes on new
// output; a token of another run or principal, or changed, is refused.
func testObserve(t *testing.T) {
	f := newFixture(t)
	s := f.service("")
	ctx := t.Context()
	fifo := filepath.Join(f.dir, "go")
	r := f.start(s, "paced", 0, "sh", "-c", "echo one; while [ ! -e "+fifo+" ]; do sleep 0.01; done; echo two")
	var seen string
	o := &run.Observation{}
	for !strings.Contains(seen, "one") {
		var err error
		if o, err = s.Observe(ctx, f.admin, r.ID, o.Token, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		seen += eventsText(o)
	}
	token := o.Token
	if err := os.WriteFile(fifo, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	next, err := s.Observe(ctx, f.admin, r.ID, token, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if txt := eventsText(next); strings.Contains(txt, "one") || !strings.Contains(txt, "two") && !strings.Contains(txt, "succeeded") {
		t.Errorf("after the token: %q", txt)
	}
	f.wait(s, r.ID)
	for name, tok := range map[string]string{"tampered": token[:len(token)-2] + "AA", "garbage": "not-a-token"} {
		if _, err := s.Observe(ctx, f.admin, r.ID, tok, 0); continuo.ErrorCode(err) != continuo.CodeInvalidInput {
			t.Errorf("%s token: %v, want invalid_input", name, err)
		}
	}
	other := f.start(s, "other", 0, "true")
	if _, err := s.Observe(ctx, f.admin, other.ID, token, 0); continuo.ErrorCode(err) != continuo.CodeInvalidInput {
		t.Errorf("a token of another run: %v, want invalid_input", err)
	}
	if _, err := s.Observe(ctx, f.other, r.ID, "", 0); continuo.ErrorCode(err) != continuo.CodeNotFound {
		t.Errorf("another group's observe: %v, want not_found", err)
	}
	// A token stays valid for a new service (a restart) with the same key.
	later := run.New(f.store, f.auth, run.Options{Key: []byte("test key")})
	if _, err := later.Observe(ctx, f.admin, r.ID, token, 0); err != nil {
		t.Errorf("the token after a restart: %v", err)
	}
}

func TestRunLogBounds(t *testing.T) { stores.Each(t, testRunLogBounds) }

// A run writing 3 MiB keeps its first 256 KiB and its newest bytes up to
// 1 MiB in all, says what it dropped, and observers reading from the
// start are told history was lost.
func testRunLogBounds(t *testing.T) {
	f := newFixture(t)
	s := f.service("")
	// 3 MiB of numbered 64-byte lines.
	r := f.start(s, "noisy", 0, "sh", "-c", `i=0; while [ $i -lt 49152 ]; do printf '%063d\n' $i; i=$((i+1)); done`)
	got := f.wait(s, r.ID)
	if got.State != continuo.RunSucceeded {
		t.Fatalf("run = %+v", got)
	}
	if got.OutputBytes < 3<<20 || got.KeptBytes > continuo.MaxRunKept || got.KeptBytes < continuo.MaxRunKept-continuo.MaxRunEvent*2 || got.DroppedThrough == 0 {
		t.Errorf("counters: output %d kept %d dropped through %d", got.OutputBytes, got.KeptBytes, got.DroppedThrough)
	}
	out, lost := f.output(s, r.ID)
	if !lost {
		t.Error("reading from the start did not report the dropped history")
	}
	if !strings.HasPrefix(out, "running\n"+fmt.Sprintf("%063d\n", 0)) || !strings.Contains(out, fmt.Sprintf("%063d\n", 49151)) {
		t.Errorf("the head or the tail is missing (%d bytes read)", len(out))
	}
	if int64(len(out)) != got.KeptBytes {
		t.Errorf("read %d bytes, the run says it keeps %d", len(out), got.KeptBytes)
	}
}

func TestRunRedactsOutput(t *testing.T) { stores.Each(t, testRunRedactsOutput) }

// A credential a check prints is redacted before it is stored.
func testRunRedactsOutput(t *testing.T) {
	f := newFixture(t)
	s := f.service("")
	secret := "ghp_XdnYcLxQlNnVxKW3x9KsQuKf0ElTELYCRPkl" // a token of a real one's entropy
	r := f.start(s, "leaky", 0, "sh", "-c", "echo token="+secret+"; printf 'Authorization: Bearer %s\\n' "+secret)
	f.wait(s, r.ID)
	out, _ := f.output(s, r.ID)
	if strings.Contains(out, secret) || !strings.Contains(out, redact.Placeholder) {
		t.Errorf("output = %q", out)
	}
}

func TestSweep(t *testing.T) { stores.Each(t, testSweep) }

// A run whose lease ran out, and one whose owner is a process of this host
// that is gone, are interrupted by a starting service; a live owner's run
// is left alone.
func testSweep(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	now := time.Now().UTC()
	mk := func(check, owner string, lease time.Time, state continuo.RunState) *continuo.Run {
		r := &continuo.Run{ID: continuo.NewID(continuo.PrefixRun, now), Kind: continuo.RunValidation, State: state, GroupID: f.admin.GroupID,
			ProjectID: f.project.ID, Check: check, Dir: f.dir, Spec: "{}", Owner: owner, LeaseUntil: lease,
			Revision: 1, CreatedAt: now}
		if state == continuo.RunRunning {
			r.StartedAt = &now
		}
		if err := f.store.Write(ctx, func(tx store.Tx) error { return tx.RunCreate(ctx, r) }); err != nil {
			t.Fatal(err)
		}
		return r
	}
	self := run.New(f.store, f.auth, run.Options{}).Owner()
	host := strings.Fields(self)[0]
	expired := mk("a", "elsewhere 1 1", now.Add(-time.Minute), continuo.RunRunning)
	deadOwner := mk("b", host+" 999999999 1", now.Add(time.Hour), continuo.RunQueued)
	liveOwner := mk("c", self, now.Add(time.Hour), continuo.RunRunning)

	s := f.service("replica-sweeper")
	for id, want := range map[string]string{expired.ID: "lease_expired", deadOwner.ID: "owner_lost"} {
		r, err := s.Get(ctx, f.admin, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.State != continuo.RunInterrupted || r.ErrorKind != want || r.EndedAt == nil {
			t.Errorf("run %s = %s %s, want interrupted %s", id, r.State, r.ErrorKind, want)
		}
	}
	if r, _ := s.Get(ctx, f.admin, liveOwner.ID); r.State != continuo.RunRunning {
		t.Errorf("a live owner's run = %s", r.State)
	}
}

func TestGetNotFound(t *testing.T) { stores.Each(t, testGetNotFound) }

func testGetNotFound(t *testing.T) {
	f := newFixture(t)
	s := f.service("")
	ctx := t.Context()
	if _, err := s.Get(ctx, f.admin, "run_nope"); continuo.ErrorCode(err) != continuo.CodeInvalidInput {
		t.Errorf("malformed id: %v", err)
	}
	if _, err := s.Get(ctx, f.admin, continuo.NewID(continuo.PrefixRun, time.Now())); continuo.ErrorCode(err) != continuo.CodeNotFound {
		t.Errorf("unknown id: %v", err)
	}
	reader := &continuo.Caller{PrincipalID: f.admin.PrincipalID, GroupID: f.admin.GroupID, Scopes: []continuo.Scope{continuo.ScopeSessionsRead}}
	if _, err := s.Get(ctx, reader, continuo.NewID(continuo.PrefixRun, time.Now())); continuo.ErrorCode(err) != continuo.CodeForbidden {
		t.Errorf("without runtime:read: %v", err)
	}
}
