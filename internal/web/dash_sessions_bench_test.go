package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/continuo-dev/continuo/internal/store/pgtest"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/store/storetest"
	"github.com/continuo-dev/continuo/internal/web"
	"github.com/continuo-dev/continuo/internal/web/webtest"
	"github.com/continuo-dev/continuo/internal/workflow"
)

// BenchmarkSessionPage measures the server time of the dashboard's session
// page on a session of 100,000 messages, on each engine (docs/PERFORMANCE.md:
// p50 ≤ 20 ms): GET /s/{id} handed to the real handler with a recorder (the
// browser session's cookie, the brief, the newest page of notes, the goals,
// the template), and as the baseline in the same run the one service call
// the page cannot do without, ReadHandoff. Each reports its p50 and p99:
//
//	go test -run '^$' -bench SessionPage -benchtime 200x ./internal/web/
func BenchmarkSessionPage(b *testing.B) {
	for _, engine := range stores.Engines {
		b.Run(engine, func(b *testing.B) {
			if engine == "postgres" {
				pgtest.BaseURL(b)
			}
			f := newSessionPageFixture(b, 100_000)
			b.Run("handoff", func(b *testing.B) {
				percentiles(b, func() {
					if _, err := f.wf.ReadHandoff(context.Background(), f.caller, f.session, "", false); err != nil {
						b.Fatal(err)
					}
				})
			})
			b.Run("page", func(b *testing.B) {
				percentiles(b, func() {
					w := httptest.NewRecorder()
					f.handler.ServeHTTP(w, f.request("GET", "/s/"+f.session, ""))
					if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `id="timeline"`) {
						b.Fatalf("GET /s/%s: %d %.300s", f.session, w.Code, w.Body)
					}
				})
			})
		})
	}
}

// percentiles runs op once per iteration and reports the p50 and p99 of
// its wall time, in milliseconds.
func percentiles(b *testing.B, op func()) {
	var times []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		op()
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	at := func(p float64) float64 {
		return float64(times[min(len(times)-1, int(p*float64(len(times))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

type sessionPageFixture struct {
	wf      *workflow.Service
	caller  *continuo.Caller
	handler http.Handler
	session string
	cookies []*http.Cookie
}

const benchIssuer = "http://127.0.0.1:7300"

// newSessionPageFixture is a server on a store of the benchmark's engine
// with one session of n messages, and a browser session signed in to it.
// (The store is stores.Open's, under storetest.Rerun, which runs every
// Write twice: that doubles the setup, and changes nothing of the reads
// the benchmark measures.)
func newSessionPageFixture(b *testing.B, n int) *sessionPageFixture {
	b.Helper()
	ctx := context.Background()
	s := stores.Open(b)
	a := auth.New(s, nil)
	a.EnableOAuth(auth.OAuthOptions{Issuer: benchIssuer})
	tok, err := a.CreateToken(ctx, "bench", []continuo.Scope{continuo.ScopeSessionsRead, continuo.ScopeSessionsWrite}, 0)
	if err != nil {
		b.Fatal(err)
	}
	f := &sessionPageFixture{wf: workflow.New(s, a, nil)}
	if f.caller, err = a.Authenticate(ctx, tok.Token); err != nil {
		b.Fatal(err)
	}
	if _, err := a.AddProject(ctx, auth.ProjectSpec{Name: "big"}, map[string]continuo.Access{"bench": continuo.AccessWrite}); err != nil {
		b.Fatal(err)
	}
	r, err := f.wf.WorkOnProject(ctx, f.caller, workflow.WorkOn{Project: "big", Title: "A long session", Instruction: "keep going"})
	if err != nil {
		b.Fatal(err)
	}
	f.session = r.Session.ID
	storetest.BigSession(b, s, f.session, n)
	if _, _, err := f.wf.CreateGoal(ctx, f.caller, workflow.NewGoalInput{SessionID: f.session, Title: "Finish", Objective: "finish",
		Steps: []workflow.GoalStepInput{{ID: "a", Title: "A"}, {ID: "b", Title: "B"}}, IdempotencyKey: "g"}); err != nil {
		b.Fatal(err)
	}
	key, err := a.SessionKey(ctx)
	if err != nil {
		b.Fatal(err)
	}
	f.handler = web.Handler(web.Options{MCP: mcpserver.New(mcpserver.Options{Workflow: f.wf}), Auth: a, OAuth: a, Key: key,
		Dashboard: &web.Dashboard{Workflow: f.wf, Auth: a}})
	f.signIn(b, tok.Token)
	return f
}

// request is a request to the handler from the fixture's browser.
func (f *sessionPageFixture) request(method, path, form string) *http.Request {
	r := httptest.NewRequest(method, benchIssuer+path, strings.NewReader(form))
	if form != "" {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, c := range f.cookies {
		r.AddCookie(c)
	}
	return r
}

// signIn signs the fixture's browser in with token on the sign-in form.
func (f *sessionPageFixture) signIn(b *testing.B, token string) {
	b.Helper()
	w := httptest.NewRecorder()
	f.handler.ServeHTTP(w, f.request("GET", "/login", ""))
	f.cookies = w.Result().Cookies()
	fields, ok := webtest.FormFields(w.Body.String(), "signin")
	if !ok {
		b.Fatalf("no sign-in form: %d %s", w.Code, w.Body)
	}
	fields.Set("secret", token)
	w = httptest.NewRecorder()
	f.handler.ServeHTTP(w, f.request("POST", "/login", fields.Encode()))
	if w.Code != http.StatusSeeOther {
		b.Fatalf("sign in: %d %s", w.Code, w.Body)
	}
	f.cookies = append(f.cookies, w.Result().Cookies()...)
	if len(f.cookies) < 2 {
		b.Fatal(fmt.Sprint("sign in set no session cookie: ", f.cookies))
	}
}
