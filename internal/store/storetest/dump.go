package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// dumpTests checks export and import: they need two stores each.
func dumpTests(t *testing.T, f Factory) {
	const schema = 7 // any number: both sides must agree
	export := func(t *testing.T, s store.Store) (string, int) {
		t.Helper()
		var b bytes.Buffer
		n, err := store.Export(t.Context(), s, schema, &b)
		if err != nil {
			t.Fatalf("Export: %v", err)
		}
		return b.String(), n
	}
	filled := func(t *testing.T) store.Store {
		t.Helper()
		s := f(t)
		Fill(t, s)
		return s
	}

	t.Run("RoundTrip", func(t *testing.T) {
		a := filled(t)
		out, n := export(t, a)
		if n < 20 {
			t.Fatalf("exported %d rows", n)
		}
		// The fixture fills every table, so that each one's round trip is
		// tested (a new table needs rows here).
		for _, table := range store.Tables {
			if !strings.Contains(out, `{"table":"`+table+`","row":`) {
				t.Errorf("the export has no rows of %s: fill it in dumpTests", table)
			}
		}
		b := f(t)
		m, err := store.Import(t.Context(), b, schema, strings.NewReader(out))
		if err != nil || m != n {
			t.Fatalf("Import: %d rows, %v (exported %d)", m, err, n)
		}
		if again, _ := export(t, b); again != out {
			t.Fatalf("export of the import differs:\n%s\n---\n%s", out, again)
		}
		// Counters travel too: the next session reference continues.
		var ga, gb int64
		MustWrite(t, a, func(tx store.Tx) (err error) {
			g, err := tx.GroupGetByName(t.Context(), "alpha")
			if err == nil {
				ga, err = tx.SessionRefNext(t.Context(), g.ID)
			}
			return err
		})
		MustWrite(t, b, func(tx store.Tx) (err error) {
			g, err := tx.GroupGetByName(t.Context(), "alpha")
			if err == nil {
				gb, err = tx.SessionRefNext(t.Context(), g.ID)
			}
			return err
		})
		if ga != gb || ga < 2 {
			t.Fatalf("next session ref: source %d, imported %d", ga, gb)
		}
	})

	t.Run("RefusesNonEmpty", func(t *testing.T) {
		a := filled(t)
		out, _ := export(t, a)
		before, _ := export(t, a)
		if _, err := store.Import(t.Context(), a, schema, strings.NewReader(out)); !errors.Is(err, store.ErrNotEmpty) {
			t.Fatalf("import into a full store: %v", err)
		}
		if after, _ := export(t, a); after != before {
			t.Fatal("a refused import changed the store")
		}
	})

	t.Run("RejectsBadFiles", func(t *testing.T) {
		out, _ := export(t, filled(t))
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		bad := map[string]string{
			"truncated":   strings.Join(lines[:len(lines)-1], "\n"),
			"no header":   strings.Join(lines[1:], "\n"),
			"schema":      strings.Replace(out, `"schema_version":7`, `"schema_version":8`, 1),
			"count":       strings.Replace(out, `"end":true,"rows":`, `"end":true,"rows":1`, 1),
			"column":      strings.Replace(out, `"name":"alpha"`, `"name; DROP TABLE groups":"alpha"`, 1),
			"table":       strings.Replace(out, `"table":"messages"`, `"table":"sqlite_master"`, 1),
			"order":       strings.Join(append([]string{lines[0]}, append([]string{lines[len(lines)-2]}, lines[1:]...)...), "\n"),
			"float value": strings.Replace(out, `"ref":1`, `"ref":1.5`, 1),
		}
		for name, text := range bad {
			s := f(t)
			if _, err := store.Import(t.Context(), s, schema, strings.NewReader(text)); err == nil {
				t.Errorf("%s: import succeeded", name)
			}
			if after, n := export(t, s); n != 0 {
				t.Errorf("%s: a failed import left %d rows:\n%s", name, n, after)
			}
		}
	})
}

// Fill gives every table of store.Tables rows, with optional columns both
// empty and set, for export tests: a group "alpha" (see Setup) with a
// token, messages, an instruction, an idempotency key, OAuth clients,
// codes, a grant and its tokens, login links, browser sessions, goals and
// their replaced plans, runs with their logs, a session's evidence,
// swarms with their workers, carriers, tasks and attempts, and the
// workers' continuations and context ledgers.
func Fill(t testing.TB, s store.Store) {
	t.Helper()
	ctx := t.Context()
	fx := Setup(t, s, "alpha")
	Token(t, s, fx.Principal.ID, "hash-1", continuo.ScopeSessionsRead)
	Message(t, s, fx.Session.ID, 1, continuo.KindDecision)
	Message(t, s, fx.Session.ID, 2, continuo.KindTodo, func(m *continuo.Message) {
		at := Base.Add(1000)
		m.Status, m.Resolution, m.ResolvedAt, m.Tags = continuo.StatusResolved, "done", &at, []string{"a", "b"}
	})
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.MetaSet(ctx, "k", "v"); err != nil {
			return err
		}
		if err := tx.InstructionAppend(ctx, store.Instruction{SessionID: fx.Session.ID, Seq: 2, Text: "next", CreatedAt: Base}); err != nil {
			return err
		}
		return tx.IdempotencyCreate(ctx, store.Idempotency{Scope: "s", KeyHash: "k", RequestHash: "r", ResultID: "msg", CreatedAt: Base})
	})
	fillOAuth(t, s, fx.Principal.ID)
	fillGoals(t, s, fx.Session.ID)
	fillRuns(t, s, fx)
	fillSwarms(t, s, fx)
}

// fillSwarms gives every swarm table rows: a closed swarm with an invite
// and a policy of its own, and an active bare one; a busy worker with a
// checkpoint and a lost carrier, and an idle one; their active carriers
// and a retired one; a settled task with a result, a held one and a bare
// queued one preferring a worker; an ended attempt (no lease) and a
// running one.
func fillSwarms(t testing.TB, s store.Store, fx *Fixture) {
	t.Helper()
	ctx := t.Context()
	at, later := Base.Add(time.Second), Base.Add(time.Hour)
	closed := Swarm(t, s, fx.Group.ID, fx.Principal.ID, func(sw *continuo.Swarm) {
		sw.State, sw.InviteHash, sw.InviteExpiresAt, sw.Revision, sw.UpdatedAt = continuo.SwarmClosed, "invite-1", later, 3, at
		sw.Policy.RequeueUnacked, sw.Policy.Compaction.Threshold = true, 0.5
	})
	Swarm(t, s, fx.Group.ID, fx.Principal.ID, func(sw *continuo.Swarm) { sw.OwnerCarrier = "" })
	idle := SwarmWorker(t, s, closed.ID, fx.Principal.ID, "idle")
	busy := SwarmWorker(t, s, closed.ID, fx.Principal.ID, "busy \"ü\"")
	done := SwarmTask(t, s, closed.ID, "done", func(k *continuo.Task) {
		k.Payload, k.WorkerID, k.State, k.Attempt = `{"n":1}`, idle.ID, continuo.TaskResultReady, 1
		k.Result, k.ResultHash, k.Detail, k.Revision, k.UpdatedAt, k.EndedAt = "all done", "result-1", "ü", 4, at, &at
	})
	held := SwarmTask(t, s, closed.ID, "held", func(k *continuo.Task) { k.WorkerID, k.State, k.Attempt = busy.ID, continuo.TaskRunning, 2 })
	SwarmTask(t, s, closed.ID, "queued", func(k *continuo.Task) { k.PreferredWorkerID = idle.ID })
	SwarmAttempt(t, s, done, "host-1 42", func(a *continuo.Attempt) {
		a.WorkerID, a.State, a.LeaseUntil, a.AckedAt, a.EndedAt = idle.ID, continuo.AttemptSubmitted, time.Time{}, &at, &at
	})
	SwarmAttempt(t, s, held, "host-2 9", func(a *continuo.Attempt) {
		a.Epoch, a.State, a.AckedAt, a.LeaseUntil = 2, continuo.AttemptRunning, &at, later
	})
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.CarrierRetire(ctx, busy.CarrierHash, at); err != nil {
			return err
		}
		next := *busy
		next.Epoch, next.CarrierHash, next.CarrierSource, next.CarrierState = 2, "carrier-busy-2", continuo.CarrierFromMeta, continuo.CarrierLost
		next.State, next.ContinuityState, next.CurrentTaskID = continuo.WorkerBusy, continuo.ContinuityReconcileRequired, held.ID
		next.Checkpoint, next.CheckpointHash, next.CheckpointAt, next.Revision, next.UpdatedAt = `{"step":1}`, "cp-1", &at, 2, at
		if err := updateWorker(ctx, tx, &next, busy.Revision); err != nil {
			return err
		}
		return tx.CarrierBind(ctx, continuo.Carrier{Hash: next.CarrierHash, WorkerID: busy.ID, SwarmID: closed.ID, Epoch: 2,
			Source: continuo.CarrierFromMeta, State: continuo.CarrierActive, BoundAt: at})
	})
	fillContinuity(t, s, idle, busy)
}

// fillContinuity gives continuations and context_ledger rows: a bound
// ticket-path continuation of busy with a capsule, and a bare pending
// one of idle on the approval path (no ticket, capsule or bound time);
// counts of each counted source and the reports of both reported ones.
func fillContinuity(t testing.TB, s store.Store, idle, busy *continuo.Worker) {
	t.Helper()
	ctx := t.Context()
	at := Base.Add(time.Second)
	Continuation(t, s, busy, continuationIn(continuo.ContinuationBound), func(c *continuo.Continuation) {
		c.Version, c.Capsule, c.CapsuleHash, c.RequestHash, c.Reason = 3, `{"v":1,"label":"busy \"ü\""}`, "capsule-1", "req-1", "pressure"
		c.TargetSource, c.UpdatedAt = continuo.CarrierFromMeta, at
	})
	Continuation(t, s, idle, continuationApproval, func(c *continuo.Continuation) {
		c.TargetCarrier, c.TargetSource, c.Reason, c.RequestedBy = "", "", "", ""
	})
	MustWrite(t, s, func(tx store.Tx) error {
		for _, e := range []continuo.LedgerEntry{
			ledgerEntry(idle.ID, 1, continuo.LedgerTaskPrompt, "tsk_1", 120, Base),
			ledgerEntry(idle.ID, 1, continuo.LedgerTaskResult, "tsk_1", 40, at),
			ledgerEntry(busy.ID, 2, continuo.LedgerCapsule, "cnt_1", 900, at),
		} {
			if _, err := tx.LedgerAdd(ctx, e); err != nil {
				return err
			}
		}
		estimate := ledgerEntry(idle.ID, 1, continuo.LedgerEstimate, "", 3000, at)
		estimate.Basis = "chars/4 \"ü\""
		if err := tx.LedgerReport(ctx, estimate); err != nil {
			return err
		}
		return tx.LedgerReport(ctx, ledgerEntry(busy.ID, 2, continuo.LedgerHostExact, "", 5000, at))
	})
}

// fillRuns gives runs, run_events and evidence rows: an ended validation
// run of the session with every optional column set, a running agent run
// of no session whose log dropped part of its middle, and a bare queued
// run (no lease, exit code, start or end).
func fillRuns(t testing.TB, s store.Store, fx *Fixture) {
	t.Helper()
	ctx := t.Context()
	lease, started, ended, code := Base.Add(time.Minute), Base.Add(time.Second), Base.Add(3*time.Second), 1
	done := CreateRun(t, s, fx.Group.ID, fx.Project.ID, "/src/alpha", "test", func(r *continuo.Run) {
		r.State, r.SessionID, r.SourceHead, r.SourceTree = continuo.RunFailed, fx.Session.ID, "abc123", "tree-1"
		r.SourceStat = `{"paths":["dump/huge.bin"],"total":1}`
		r.Owner, r.LeaseUntil, r.Proc, r.ExitCode, r.ErrorKind = "host-1 42", lease, "host-1 42 7", &code, "exit"
		r.StartedAt, r.EndedAt, r.Revision = &started, &ended, 3
	})
	agent := CreateRun(t, s, fx.Group.ID, fx.Project.ID, "/src/alpha", "", func(r *continuo.Run) {
		r.Kind, r.State, r.ProviderID, r.Spec, r.RequestHash = continuo.RunAgent, continuo.RunRunning, "claude", `{"prompt":"sha256:1"}`, ""
		r.Owner, r.LeaseUntil, r.Proc, r.CancelRequested = "host-2 9", lease, "host-2 9 1", true
		r.Usage, r.StartedAt, r.Revision = `{"input_tokens":10}`, &started, 2
	})
	bare := CreateRun(t, s, fx.Group.ID, fx.Project.ID, "/src/alpha", "lint")
	MustWrite(t, s, func(tx store.Tx) error {
		if err := tx.RunAppend(ctx, store.RunAppend{RunID: done.ID, Events: []continuo.RunEvent{
			{Seq: 1, Kind: continuo.EventState, Text: "started", At: started},
			{Seq: 2, Kind: continuo.EventOutput, Text: "FAIL \"ü\"\n", At: started},
			{Seq: 3, Kind: continuo.EventState, Text: "", At: ended},
		}, OutputBytes: 17, KeptBytes: 17, HeadSeq: 3}); err != nil {
			return err
		}
		var events []continuo.RunEvent
		for seq := int64(1); seq <= 5; seq++ {
			events = append(events, continuo.RunEvent{Seq: seq, Kind: continuo.EventText, Text: fmt.Sprintf("part %d", seq), At: started})
		}
		events[4].Kind = continuo.EventUsage
		if err := tx.RunAppend(ctx, store.RunAppend{RunID: agent.ID, Events: events, OutputBytes: 30, KeptBytes: 18,
			HeadSeq: 2, DroppedThrough: 4, DropFrom: 3, DropThrough: 4}); err != nil {
			return err
		}
		if err := tx.EvidenceAdd(ctx, continuo.Evidence{SessionID: fx.Session.ID, Check: "test", RunID: done.ID, CreatedAt: ended}); err != nil {
			return err
		}
		return tx.EvidenceAdd(ctx, continuo.Evidence{SessionID: fx.Session.ID, Check: "lint", RunID: bare.ID, CreatedAt: Base})
	})
}

// fillGoals gives goals and goal_plans rows: an active goal with a
// replaced plan, a completed one with a terminal reason, and one with no
// conditions, no steps and no current step.
func fillGoals(t testing.TB, s store.Store, sessionID string) {
	t.Helper()
	ctx := t.Context()
	active := Goal(t, s, sessionID, "active \"ü\"")
	Goal(t, s, sessionID, "done", func(g *continuo.Goal) {
		g.Lifecycle, g.TerminalReason, g.CurrentStepID, g.Revision = continuo.GoalCompleted, "all met", "", 4
		for i := range g.Steps {
			g.Steps[i].Status = continuo.StepCompleted
		}
	})
	Goal(t, s, sessionID, "bare", func(g *continuo.Goal) { g.CompletionConditions, g.Steps, g.CurrentStepID = nil, nil, "" })
	MustWrite(t, s, func(tx store.Tx) error {
		next := *active
		next.Steps = append(slices.Clone(active.Steps[:1]), continuo.GoalStep{ID: "s9", Title: "new", Status: continuo.StepPending})
		next.Revision, next.UpdatedAt = 2, Base.Add(2*time.Second)
		if err := tx.GoalUpdate(ctx, &next, 1); err != nil {
			return err
		}
		if err := tx.GoalPlanAdd(ctx, store.PlanSnapshot{GoalID: active.ID, Revision: 1, Steps: active.Steps,
			CurrentStepID: active.CurrentStepID, Reason: "split the work", ReplacedAt: next.UpdatedAt}); err != nil {
			return err
		}
		return tx.GoalPlanAdd(ctx, store.PlanSnapshot{GoalID: active.ID, Revision: 2, ReplacedAt: Base.Add(3 * time.Second)})
	})
}

// fillOAuth gives every OAuth and sign-in table rows.
func fillOAuth(t testing.TB, s store.Store, principalID string) {
	t.Helper()
	ctx := t.Context()
	at := Base.Add(1500 * time.Millisecond)
	public := OAuthClient(t, s, "public", func(c *continuo.OAuthClient) {
		c.ClientID, c.Kind, c.FetchedAt, c.RefreshAt = "https://app.example/c.json", continuo.ClientMetadata, &at, &at
		c.Name, c.RedirectURIs = "App \"ü\"", []string{"https://app.example/cb", "http://[::1]/cb"}
	})
	confidential := OAuthClient(t, s, "confidential", func(c *continuo.OAuthClient) {
		c.AuthMethod, c.SecretHash, c.Scopes = continuo.AuthMethodBasic, "secret-hash", nil
	})
	grant := OAuthGrant(t, s, public.ID, principalID)
	used := newOAuthCode(public.ID, principalID, "code-used")
	MustWrite(t, s, func(tx store.Tx) error {
		for _, c := range []*continuo.OAuthCode{used, newOAuthCode(confidential.ID, principalID, "code-pending")} {
			if err := tx.OAuthCodeCreate(ctx, c); err != nil {
				return err
			}
		}
		if err := tx.OAuthCodeUse(ctx, used.ID, grant.ID, at); err != nil {
			return err
		}
		if err := tx.OAuthClientUse(ctx, public.ID, at); err != nil {
			return err
		}
		if err := tx.OAuthClientRevoke(ctx, confidential.ID, at); err != nil {
			return err
		}
		refresh, access := newOAuthToken(grant.ID, "refresh", continuo.TokenRefresh), newOAuthToken(grant.ID, "access", continuo.TokenAccess)
		access.Scopes = []continuo.Scope{continuo.ScopeSessionsRead} // narrowed by a refresh
		for _, k := range []*continuo.OAuthToken{refresh, access} {
			if err := tx.OAuthTokenCreate(ctx, k); err != nil {
				return err
			}
		}
		if err := tx.OAuthTokenUse(ctx, refresh.ID, at); err != nil {
			return err
		}
		if err := tx.OAuthTokenRevoke(ctx, access.ID, at); err != nil {
			return err
		}
		link, ws := newLoginLink(principalID, "link"), newWebSession(principalID, "session")
		if err := tx.LoginLinkCreate(ctx, link); err != nil {
			return err
		}
		if err := tx.LoginLinkCreate(ctx, newLoginLink(principalID, "link-unused")); err != nil {
			return err
		}
		if err := tx.LoginLinkUse(ctx, link.ID, at); err != nil {
			return err
		}
		if err := tx.WebSessionCreate(ctx, ws); err != nil {
			return err
		}
		if err := tx.WebSessionCreate(ctx, newWebSession(principalID, "session-live")); err != nil {
			return err
		}
		return tx.WebSessionRevoke(ctx, ws.ID, at)
	})
}
