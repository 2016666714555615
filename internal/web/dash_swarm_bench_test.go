package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/pgtest"
	"github.com/continuo-dev/continuo/internal/store/postgres"
	"github.com/continuo-dev/continuo/internal/store/sqlite"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/store/storetest"
	"github.com/continuo-dev/continuo/internal/swarm"
	"github.com/continuo-dev/continuo/internal/web"
	"github.com/continuo-dev/continuo/internal/web/webtest"
	"github.com/jackc/pgx/v5"
)

// BenchmarkSwarmPage measures the server time of the swarm page on a
// swarm of 64 workers and 10,000 tasks, on each engine:
//
//		go test -run '^$' -bench SwarmPage -benchtime 200x ./internal/web/
//
//	  - page: GET /w/{swarm} handed to the handler (no client, no TCP): the
//	    browser session's lookup, the page's service calls, the template.
//	  - services: the service calls the page makes, alone — the baseline:
//	    what the page costs beyond them is the web layer's.
//
// Each reports its p50 and p99 in milliseconds over the iterations.
func BenchmarkSwarmPage(b *testing.B) {
	for _, engine := range stores.Engines {
		b.Run(engine, func(b *testing.B) {
			if engine == "postgres" {
				pgtest.BaseURL(b)
			}
			f := newSwarmBench(b, engine)
			b.Run("page", func(b *testing.B) {
				percentiles(b, func() {
					rec := f.get("/w/" + f.swarmID)
					if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "Rollover history") {
						b.Fatalf("swarm page: %d %s", rec.Code, rec.Body)
					}
				})
			})
			b.Run("services", func(b *testing.B) {
				percentiles(b, func() {
					if err := f.services(); err != nil {
						b.Fatal(err)
					}
				})
			})
		})
	}
}

type swarmBench struct {
	h       http.Handler
	jar     *cookiejar.Jar
	base    *url.URL
	svc     *swarm.Service
	owner   *continuo.Caller
	car     swarm.Carrier
	swarmID string
}

func newSwarmBench(b *testing.B, engine string) *swarmBench {
	b.Helper()
	ctx := context.Background()
	var st store.Store
	var err error
	pg := ""
	if engine == "postgres" {
		pg = pgtest.Schema(b)
		st, err = postgres.Open(ctx, pg, nil)
	} else {
		st, err = sqlite.Open(ctx, filepath.Join(b.TempDir(), "c.db"), nil)
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	a := auth.New(st, nil)
	a.EnableOAuth(auth.OAuthOptions{Issuer: benchIssuer})
	key, err := a.SessionKey(ctx)
	if err != nil {
		b.Fatal(err)
	}
	sw := swarm.New(st, swarm.Options{})
	tok, err := a.CreateToken(ctx, "bench-owner", []continuo.Scope{continuo.ScopeSessionsRead, continuo.ScopeSwarmOwn}, 0)
	if err != nil {
		b.Fatal(err)
	}
	owner, err := a.Authenticate(ctx, tok.Token)
	if err != nil {
		b.Fatal(err)
	}
	car := swarm.Carrier{Source: continuo.CarrierFromKey, Key: "the-bench-owner-conversation"}
	inv, err := sw.Create(ctx, owner, car, swarm.CreateInput{WorkerLimit: continuo.MaxSwarmWorkers})
	if err != nil {
		b.Fatal(err)
	}
	fillSwarm(b, st, inv.Swarm.ID, owner.PrincipalID)
	if pg != "" {
		// The statistics and visibility map autovacuum keeps, which a
		// bulk load has not had yet.
		conn, err := pgx.Connect(ctx, pg)
		if err != nil {
			b.Fatal(err)
		}
		_, err = conn.Exec(ctx, "VACUUM ANALYZE")
		conn.Close(ctx)
		if err != nil {
			b.Fatal(err)
		}
	}
	jar, _ := cookiejar.New(nil)
	base, _ := url.Parse(benchIssuer)
	f := &swarmBench{h: web.Handler(web.Options{Auth: a, OAuth: a, Key: key, Dashboard: &web.Dashboard{Swarm: sw, Auth: a}}),
		jar: jar, base: base, svc: sw, owner: owner, car: car, swarmID: inv.Swarm.ID}
	f.signIn(b, tok.Token)
	return f
}

// fillSwarm writes 64 workers and 10,000 tasks straight to the store: a
// day of work (9,000 collected, 400 failed), 500 queued, one task running
// per worker, 20 in doubt; each worker's ledger; 40 past rollovers.
func fillSwarm(b *testing.B, st store.Store, swarmID, principalID string) {
	ctx := context.Background()
	now := time.Now().UTC()
	var ws []*continuo.Worker
	for i := range continuo.MaxSwarmWorkers {
		ws = append(ws, storetest.SwarmWorker(b, st, swarmID, principalID, fmt.Sprintf("worker %02d", i)))
	}
	const tasks = 10_000
	step := 24 * time.Hour / tasks
	task := func(i int) *continuo.Task {
		at := now.Add(-24 * time.Hour).Add(time.Duration(i) * step)
		k := storetest.NewSwarmTask(swarmID, fmt.Sprintf("task-%05d", i))
		k.ID, k.CreatedAt, k.UpdatedAt = continuo.NewID(continuo.PrefixTask, at), at, at
		k.Prompt = strings.Repeat("work ", 40)
		return k
	}
	write := func(fn func(tx store.Tx) error) {
		if err := st.Write(ctx, fn); err != nil {
			b.Fatal(err)
		}
	}
	for lo := 0; lo < tasks; lo += 1_000 {
		write(func(tx store.Tx) error {
			for i := lo; i < lo+1_000; i++ {
				k := task(i)
				w := ws[i%len(ws)]
				switch {
				case i < 9_400:
					end := k.CreatedAt.Add(3 * time.Minute)
					k.WorkerID, k.Attempt, k.EndedAt, k.UpdatedAt = w.ID, 1, &end, end
					if i%24 == 0 {
						k.State, k.Reason = continuo.TaskFailed, continuo.ReasonWorkerFailed
					} else {
						k.State, k.Result, k.ResultHash = continuo.TaskCollected, "done", "h"
					}
				case i < 9_400+continuo.MaxSwarmWorkers:
					k.State, k.WorkerID, k.Attempt = continuo.TaskRunning, ws[i-9_400].ID, 1
				case i < 9_400+continuo.MaxSwarmWorkers+20:
					k.State, k.WorkerID, k.Attempt, k.Reason = continuo.TaskReconcileRequired, w.ID, 1, continuo.ReasonLeaseExpired
				}
				if err := tx.TaskCreate(ctx, k); err != nil {
					return err
				}
				if k.Attempt == 0 {
					continue
				}
				a := storetest.NewSwarmAttempt(k, "bench")
				a.ID, a.ClaimedAt = continuo.NewID(continuo.PrefixAttempt, k.CreatedAt), k.CreatedAt
				switch k.State {
				case continuo.TaskRunning:
					a.State, a.LeaseUntil, a.AckedAt = continuo.AttemptRunning, now.Add(time.Hour), &k.CreatedAt
				case continuo.TaskReconcileRequired:
					a.State, a.EndedAt = continuo.AttemptInDoubt, &k.UpdatedAt
				default:
					a.State, a.EndedAt = continuo.AttemptSubmitted, k.EndedAt
				}
				if err := tx.AttemptCreate(ctx, a); err != nil {
					return err
				}
			}
			return nil
		})
	}
	write(func(tx store.Tx) error {
		for i, w := range ws {
			for n := range 3 {
				e := continuo.LedgerEntry{WorkerID: w.ID, Epoch: w.Epoch, Source: continuo.LedgerTaskPrompt, Ref: fmt.Sprintf("t%d", n), Tokens: 5_000, At: now}
				if _, err := tx.LedgerAdd(ctx, e); err != nil {
					return err
				}
			}
			source := continuo.LedgerEstimate
			if i%4 == 0 {
				source = continuo.LedgerHostExact
			}
			if err := tx.LedgerReport(ctx, continuo.LedgerEntry{WorkerID: w.ID, Epoch: w.Epoch, Source: source, Tokens: int64(10_000 * i), At: now}); err != nil {
				return err
			}
		}
		for i := range 40 {
			c := storetest.NewContinuation(ws[i%len(ws)])
			at := now.Add(-time.Duration(40-i) * time.Minute)
			c.ID, c.CreatedAt, c.UpdatedAt, c.BoundAt = continuo.NewID(continuo.PrefixContinuation, at), at, at, &at
			c.State, c.TargetCarrier, c.TargetSource = continuo.ContinuationBound, fmt.Sprintf("next-carrier-%d", i), continuo.CarrierFromKey
			if i%2 == 0 {
				c.Path, c.TicketHash, c.ApprovedBy = continuo.PathApproval, "", continuo.ApprovedByPolicy
			}
			if err := tx.ContinuationCreate(ctx, c); err != nil {
				return err
			}
		}
		return nil
	})
}

// serve hands a request to the handler with the jar's cookies.
func (f *swarmBench) serve(req *http.Request) *httptest.ResponseRecorder {
	for _, c := range f.jar.Cookies(f.base) {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	f.jar.SetCookies(f.base, rec.Result().Cookies())
	return rec
}

func (f *swarmBench) get(path string) *httptest.ResponseRecorder {
	return f.serve(httptest.NewRequest("GET", benchIssuer+path, nil))
}

// signIn signs the jar in with a token on the sign-in form.
func (f *swarmBench) signIn(b *testing.B, token string) {
	b.Helper()
	page := f.get("/login")
	fields, ok := webtest.FormFields(page.Body.String(), "signin")
	if !ok {
		b.Fatalf("no sign-in form: %s", page.Body)
	}
	fields.Set("secret", token)
	req := httptest.NewRequest("POST", benchIssuer+"/login", strings.NewReader(fields.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", benchIssuer)
	if rec := f.serve(req); rec.Code != http.StatusSeeOther {
		b.Fatalf("sign in: %d %s", rec.Code, rec.Body)
	}
}

// services makes the service call of the swarm page (dash_swarm.go's
// swarmOverview: 20 tasks in doubt, 24 hours, 20 rollovers).
func (f *swarmBench) services() error {
	_, err := f.svc.Overview(context.Background(), f.owner, f.car, f.swarmID,
		swarm.OverviewInput{InDoubt: 20, Bucket: time.Hour, Buckets: 24, History: 20})
	return err
}
