package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

func constraintTests() []test {
	return []test{{"Checks", testSchemaChecks}}
}

// testSchemaChecks: the schema itself refuses values no service should
// write (ID prefixes, closed sets, lifecycle/closed_at consistency, no
// terminal reason for an active goal, a run's state/ended_at consistency,
// positive revisions, non-negative log counters, JSON where JSON is kept,
// a secret exactly for confidential OAuth clients, unknown parents), as a
// CHECK, cast or foreign-key error — never ErrConflict, and nothing is
// kept.
func testSchemaChecks(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := Setup(t, s, "alpha")
	client := OAuthClient(t, s, "cli")
	code := oauthCode(t, s, client.ID, f.Principal.ID, "code-1")
	goal := Goal(t, s, f.Session.ID, "ship")
	run := CreateRun(t, s, f.Group.ID, f.Project.ID, "/src/a", "test")
	newRun := func(opts ...func(*continuo.Run)) *continuo.Run {
		r := NewRun(f.Group.ID, f.Project.ID, "/src/a", "lint")
		for _, o := range opts {
			o(r)
		}
		return r
	}
	bad := map[string]func(tx store.Tx) error{
		"GroupIDPrefix": func(tx store.Tx) error {
			return tx.GroupCreate(ctx, &continuo.Group{ID: continuo.NewID(continuo.PrefixProject, Base), Name: "x"})
		},
		"PrincipalOfUnknownGroup": func(tx store.Tx) error {
			return tx.PrincipalCreate(ctx, &continuo.Principal{ID: continuo.NewID(continuo.PrefixPrincipal, Base), Name: "ann",
				GroupID: continuo.NewID(continuo.PrefixGroup, Base), CreatedAt: Base})
		},
		"ClosedWithoutClosedAt": func(tx store.Tx) error {
			x := NewSession(f.Group.ID, f.Project.ID, 50, "x")
			x.Lifecycle = continuo.LifecycleClosed
			return tx.SessionCreate(ctx, x)
		},
		"ClosedAtWhileActive": func(tx store.Tx) error {
			x := *f.Session
			now := Base
			x.ClosedAt = &now
			x.Revision++
			return tx.SessionUpdate(ctx, &x, f.Session.Revision)
		},
		"UnknownMode": func(tx store.Tx) error {
			x := NewSession(f.Group.ID, f.Project.ID, 51, "x")
			x.Mode = "sideways"
			return tx.SessionCreate(ctx, x)
		},
		"ZeroRevision": func(tx store.Tx) error {
			x := NewSession(f.Group.ID, f.Project.ID, 52, "x")
			x.Revision = 0
			return tx.SessionCreate(ctx, x)
		},
		"UnknownKind": func(tx store.Tx) error {
			return tx.MessageCreate(ctx, NewMessage(f.Session.ID, 1, continuo.Kind("gossip"), "x"))
		},
		"UnknownStatus": func(tx store.Tx) error {
			m := NewMessage(f.Session.ID, 1, continuo.KindNote, "x")
			m.Status = "maybe"
			return tx.MessageCreate(ctx, m)
		},
		"UnknownPriority": func(tx store.Tx) error {
			m := NewMessage(f.Session.ID, 1, continuo.KindNote, "x")
			m.Priority = "urgent"
			return tx.MessageCreate(ctx, m)
		},
		"UnknownAccess": func(tx store.Tx) error {
			return tx.GrantSet(ctx, continuo.Grant{ProjectID: f.Project.ID, GroupID: f.Group.ID, Access: "admin"})
		},
		"OAuthClientIDPrefix": func(tx store.Tx) error {
			c := NewOAuthClient("x")
			c.ID = continuo.NewID(continuo.PrefixToken, Base)
			return tx.OAuthClientCreate(ctx, c)
		},
		"UnknownClientKind": func(tx store.Tx) error {
			c := NewOAuthClient("x")
			c.Kind = "static"
			return tx.OAuthClientCreate(ctx, c)
		},
		"UnknownAuthMethod": func(tx store.Tx) error {
			c := NewOAuthClient("x")
			c.AuthMethod, c.SecretHash = "private_key_jwt", "h"
			return tx.OAuthClientCreate(ctx, c)
		},
		"ConfidentialWithoutSecret": func(tx store.Tx) error {
			c := NewOAuthClient("x")
			c.AuthMethod = continuo.AuthMethodPost
			return tx.OAuthClientCreate(ctx, c)
		},
		"PublicWithSecret": func(tx store.Tx) error {
			c := NewOAuthClient("x")
			c.SecretHash = "h"
			return tx.OAuthClientCreate(ctx, c)
		},
		"OAuthGrantOfUnknownClient": func(tx store.Tx) error {
			return tx.OAuthGrantCreate(ctx, &continuo.OAuthGrant{ID: continuo.NewID(continuo.PrefixOAuthGrant, Base),
				ClientID: continuo.NewID(continuo.PrefixOAuthClient, Base), PrincipalID: f.Principal.ID, Resource: "r", CreatedAt: Base})
		},
		"OAuthCodeOfUnknownPrincipal": func(tx store.Tx) error {
			return tx.OAuthCodeCreate(ctx, newOAuthCode(client.ID, continuo.NewID(continuo.PrefixPrincipal, Base), "code-2"))
		},
		"OAuthCodeUseUnknownGrant": func(tx store.Tx) error {
			return tx.OAuthCodeUse(ctx, code.ID, continuo.NewID(continuo.PrefixOAuthGrant, Base), Base)
		},
		"OAuthTokenOfUnknownGrant": func(tx store.Tx) error {
			return tx.OAuthTokenCreate(ctx, newOAuthToken(continuo.NewID(continuo.PrefixOAuthGrant, Base), "t", continuo.TokenAccess))
		},
		"UnknownTokenKind": func(tx store.Tx) error {
			g := &continuo.OAuthGrant{ID: continuo.NewID(continuo.PrefixOAuthGrant, Base), ClientID: client.ID,
				PrincipalID: f.Principal.ID, Resource: "r", CreatedAt: Base}
			if err := tx.OAuthGrantCreate(ctx, g); err != nil {
				return err
			}
			return tx.OAuthTokenCreate(ctx, newOAuthToken(g.ID, "t", "id_token"))
		},
		"LoginLinkOfUnknownPrincipal": func(tx store.Tx) error {
			return tx.LoginLinkCreate(ctx, newLoginLink(continuo.NewID(continuo.PrefixPrincipal, Base), "l"))
		},
		"GoalIDPrefix": func(tx store.Tx) error {
			g := NewGoal(f.Session.ID, "x")
			g.ID = continuo.NewID(continuo.PrefixSession, Base)
			return tx.GoalCreate(ctx, g)
		},
		"UnknownGoalLifecycle": func(tx store.Tx) error {
			g := NewGoal(f.Session.ID, "x")
			g.Lifecycle = "paused"
			return tx.GoalCreate(ctx, g)
		},
		"GoalLifecycleUpdate": func(tx store.Tx) error {
			g := *goal
			g.Lifecycle, g.Revision = "abandoned", 2
			return tx.GoalUpdate(ctx, &g, 1)
		},
		"GoalZeroRevision": func(tx store.Tx) error {
			g := NewGoal(f.Session.ID, "x")
			g.Revision = 0
			return tx.GoalCreate(ctx, g)
		},
		"GoalTerminalReasonWhileActive": func(tx store.Tx) error {
			g := NewGoal(f.Session.ID, "x")
			g.TerminalReason = "early"
			return tx.GoalCreate(ctx, g)
		},
		"GoalOfUnknownSession": func(tx store.Tx) error {
			return tx.GoalCreate(ctx, NewGoal(continuo.NewID(continuo.PrefixSession, Base), "x"))
		},
		"PlanOfUnknownGoal": func(tx store.Tx) error {
			return tx.GoalPlanAdd(ctx, store.PlanSnapshot{GoalID: continuo.NewID(continuo.PrefixGoal, Base), Revision: 1, ReplacedAt: Base})
		},
		"PlanZeroRevision": func(tx store.Tx) error {
			return tx.GoalPlanAdd(ctx, store.PlanSnapshot{GoalID: goal.ID, Revision: 0, ReplacedAt: Base})
		},
		"RunIDPrefix": func(tx store.Tx) error {
			return tx.RunCreate(ctx, newRun(func(r *continuo.Run) { r.ID = continuo.NewID(continuo.PrefixGoal, Base) }))
		},
		"UnknownRunKind": func(tx store.Tx) error {
			return tx.RunCreate(ctx, newRun(func(r *continuo.Run) { r.Kind = "cron" }))
		},
		"UnknownRunState": func(tx store.Tx) error {
			return tx.RunCreate(ctx, newRun(func(r *continuo.Run) { r.State = "paused" }))
		},
		"UnknownRunStateUpdate": func(tx store.Tx) error {
			r := *run
			r.State, r.Revision = "waiting", 2
			return updateRun(ctx, tx, &r, 1)
		},
		"RunZeroRevision": func(tx store.Tx) error {
			return tx.RunCreate(ctx, newRun(func(r *continuo.Run) { r.Revision = 0 }))
		},
		"RunEndedWithoutEndedAt": func(tx store.Tx) error {
			r := *run
			r.State, r.Revision = continuo.RunCancelled, 2
			return updateRun(ctx, tx, &r, 1)
		},
		"RunEndedAtWhileQueued": func(tx store.Tx) error {
			return tx.RunCreate(ctx, newRun(func(r *continuo.Run) { at := Base; r.EndedAt = &at }))
		},
		"RunningWithoutStartedAt": func(tx store.Tx) error {
			return tx.RunCreate(ctx, newRun(func(r *continuo.Run) { r.State = continuo.RunRunning }))
		},
		"RunLeaseBeforeEpoch": func(tx store.Tx) error {
			return tx.RunCreate(ctx, newRun(func(r *continuo.Run) { r.LeaseUntil = time.Unix(-5, 0) }))
		},
		"RunSpecNotJSON": func(tx store.Tx) error {
			return tx.RunCreate(ctx, newRun(func(r *continuo.Run) { r.Spec = "make test" }))
		},
		"RunUsageNotJSON": func(tx store.Tx) error {
			return tx.RunCreate(ctx, newRun(func(r *continuo.Run) { r.Usage = "3 tokens" }))
		},
		"RunOfUnknownGroup": func(tx store.Tx) error {
			return tx.RunCreate(ctx, newRun(func(r *continuo.Run) { r.GroupID = continuo.NewID(continuo.PrefixGroup, Base) }))
		},
		"RunOfUnknownProject": func(tx store.Tx) error {
			return tx.RunCreate(ctx, newRun(func(r *continuo.Run) { r.ProjectID = continuo.NewID(continuo.PrefixProject, Base) }))
		},
		"RunNegativeCounter": func(tx store.Tx) error {
			return tx.RunAppend(ctx, store.RunAppend{RunID: run.ID, OutputBytes: -1})
		},
		"UnknownRunEventKind": func(tx store.Tx) error {
			return tx.RunAppend(ctx, store.RunAppend{RunID: run.ID, Events: []continuo.RunEvent{{Seq: 1, Kind: "stderr", Text: "x", At: Base}}})
		},
		"EvidenceOfUnknownRun": func(tx store.Tx) error {
			return tx.EvidenceAdd(ctx, continuo.Evidence{SessionID: f.Session.ID, Check: "test", RunID: continuo.NewID(continuo.PrefixRun, Base), CreatedAt: Base})
		},
		"EvidenceOfUnknownSession": func(tx store.Tx) error {
			return tx.EvidenceAdd(ctx, continuo.Evidence{SessionID: continuo.NewID(continuo.PrefixSession, Base), Check: "test", RunID: run.ID, CreatedAt: Base})
		},
		"WebSessionIDPrefix": func(tx store.Tx) error {
			w := newWebSession(f.Principal.ID, "w")
			w.ID = continuo.NewID(continuo.PrefixLoginLink, Base)
			return tx.WebSessionCreate(ctx, w)
		},
	}
	for name, fn := range bad {
		t.Run(name, func(t *testing.T) {
			err := s.Write(ctx, fn)
			if err == nil {
				t.Fatal("the schema accepted it")
			}
			if errors.Is(err, store.ErrConflict) {
				t.Errorf("a CHECK or foreign-key violation is reported as ErrConflict: %v", err)
			}
		})
	}
	same(t, "session after the refused writes", *getSession(t, s, f.Session.ID), *f.Session, normSession)
	got, err := getOAuthCode(t, s, code.Hash)
	noErr(t, err, "OAuthCodeGetByHash")
	same(t, "code after the refused use", *got, *code, normOAuthCode)
	clients := mustGet(t, s, "OAuthClientList", func(tx store.Tx) ([]continuo.OAuthClient, error) { return tx.OAuthClientList(ctx) })
	sameList(t, "OAuth clients after the refused writes", clients, []continuo.OAuthClient{*client}, normOAuthClient)
	grants := mustGet(t, s, "OAuthGrantList", func(tx store.Tx) ([]continuo.OAuthGrant, error) { return tx.OAuthGrantList(ctx) })
	sameList(t, "OAuth grants after the refused writes", grants, nil, normOAuthGrant)
	goals := mustGet(t, s, "GoalList", func(tx store.Tx) ([]continuo.Goal, error) {
		return tx.GoalList(ctx, store.GoalListParams{SessionID: f.Session.ID})
	})
	sameList(t, "goals after the refused writes", goals, []continuo.Goal{*goal}, normGoal)
	if n := mustGet(t, s, "GoalPlanCount", func(tx store.Tx) (int, error) { return tx.GoalPlanCount(ctx, goal.ID) }); n != 0 {
		t.Errorf("GoalPlanCount after the refused writes = %d, want 0", n)
	}
	if n := mustGet(t, s, "MessageCount", func(tx store.Tx) (int64, error) {
		return tx.MessageCount(ctx, store.MessageListParams{SessionID: f.Session.ID})
	}); n != 0 {
		t.Errorf("MessageCount after the refused writes = %d, want 0", n)
	}
	sameList(t, "runs after the refused writes", listRuns(t, s, store.RunListParams{}), []continuo.Run{*run}, normRun)
	if got := runEvents(t, s, store.RunEventsParams{RunID: run.ID, MaxBytes: 100}); len(got) != 0 {
		t.Errorf("run events after the refused writes: %v", got)
	}
	if got := latestEvidence(t, s, f.Session.ID, 5); len(got) != 0 {
		t.Errorf("evidence after the refused writes: %v", got)
	}
}
