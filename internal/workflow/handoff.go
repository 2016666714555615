package workflow

import (
	"context"
	"encoding/json"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/workspace"
)

// Handoff is what read_session_handoff returns.
type Handoff struct {
	SessionID string
	ProjectID string
	Brief     *Brief
	BriefJSON json.RawMessage
	// GoalContext is nil when the session has no active goal.
	GoalContext *GoalContext
	Diagnostic  *Diagnostic
}

// GoalContext is read_session_handoff's goal_context: with exactly one
// active goal, that goal (status available); with several, the candidates
// to choose from (status selection_required, reason_code
// multiple_active_goals).
type GoalContext struct {
	Status     string          `json:"status"`
	ReasonCode string          `json:"reason_code,omitempty"`
	Goal       *GoalView       `json:"goal,omitempty"`
	Candidates []GoalCandidate `json:"candidates,omitempty"`
	Truncated  bool            `json:"truncated,omitempty"` // more candidates than shown
}

// GoalView is the one active goal: identity, an objective excerpt, the
// current plan.
type GoalView struct {
	GoalID        string              `json:"goal_id"`
	Title         string              `json:"title"`
	Revision      int64               `json:"revision"`
	Objective     Text                `json:"objective"`
	Steps         []continuo.GoalStep `json:"steps"`
	StepsCut      bool                `json:"steps_truncated,omitempty"` // some step titles were cut
	CurrentStepID string              `json:"current_step_id,omitempty"`
}

// GoalCandidate is one of several active goals.
type GoalCandidate struct {
	GoalID   string `json:"goal_id"`
	Title    string `json:"title"`
	Revision int64  `json:"revision"`
}

// goal_context statuses and bounds.
const (
	GoalAvailable         = "available"
	GoalSelectionRequired = "selection_required"
	goalObjectiveBytes    = 600
	goalStepTitleBytes    = 120
)

// goalContext builds goal_context from the snapshot's active goals
// (redacted here); nil when there is none.
func goalContext(s *Snapshot) *GoalContext {
	switch len(s.Goals) {
	case 0:
		return nil
	case 1:
		g, _ := RedactGoal(s.Goals[0])
		_, red := redact.String(s.Goals[0].Objective)
		v := &GoalView{GoalID: g.ID, Title: g.Title, Revision: g.Revision, Objective: excerpt(g.Objective, red, goalObjectiveBytes),
			Steps: make([]continuo.GoalStep, len(g.Steps)), CurrentStepID: g.CurrentStepID}
		for i, st := range g.Steps {
			t := cut(st.Title, goalStepTitleBytes)
			v.StepsCut = v.StepsCut || len(t) < len(st.Title)
			v.Steps[i] = continuo.GoalStep{ID: st.ID, Title: t, Status: st.Status}
		}
		return &GoalContext{Status: GoalAvailable, Goal: v}
	}
	out := &GoalContext{Status: GoalSelectionRequired, ReasonCode: "multiple_active_goals", Truncated: s.GoalsMore}
	for _, g := range s.Goals {
		title, _ := redact.String(g.Title)
		out.Candidates = append(out.Candidates, GoalCandidate{GoalID: g.ID, Title: cut(title, goalStepTitleBytes), Revision: g.Revision})
	}
	return out
}

// Diagnostic is the optional detail behind a brief: the full tallies and
// more of the open work than the brief has room for.
type Diagnostic struct {
	Counts       continuo.Counts  `json:"counts"`
	Instructions int64            `json:"instructions"`
	Open         map[string]Notes `json:"open"`
}

const diagnosticOpen = 20

// ReadHandoff builds the handoff brief of a session. It is a pure read.
//
// The session is read in one read transaction, so the stored part of the
// brief is one consistent snapshot. The checkout is read with git outside
// that transaction; a cheap fingerprint of the checkout taken before and
// after, and the session's revision re-read at the end, tell whether either
// changed while the brief was built, which basis.complete then reports.
// Every query is bounded (the few most important or newest of one kind and
// status, by index), and every total comes from the session row, so the
// cost does not grow with the number of messages in the session.
func (s *Service) ReadHandoff(ctx context.Context, c *continuo.Caller, ref, project string, diagnostic bool) (*Handoff, error) {
	if err := c.Require(continuo.ScopeSessionsRead); err != nil {
		return nil, err
	}
	snap, diag, err := s.snapshot(ctx, c, ref, project, diagnostic)
	if err != nil {
		return nil, err
	}
	b, raw := BuildBrief(snap)
	return &Handoff{SessionID: snap.Session.ID, ProjectID: snap.Session.ProjectID, Brief: b, BriefJSON: raw,
		GoalContext: goalContext(snap), Diagnostic: diag}, nil
}

func (s *Service) snapshot(ctx context.Context, c *continuo.Caller, ref, project string, diagnostic bool) (*Snapshot, *Diagnostic, error) {
	snap := &Snapshot{Open: map[continuo.Kind][]continuo.Message{}}
	var diag *Diagnostic
	err := s.store.Read(ctx, func(tx store.Tx) error {
		sess, p, err := s.resolveWithProject(ctx, tx, c, ref)
		if err != nil {
			return err
		}
		if err := checkProject(project, p); err != nil {
			return err
		}
		snap.Session, snap.Project = *sess, *p
		// Every query below is a range scan of one index that stops after
		// its LIMIT (store.MessageListParams): the cost does not grow with
		// the session.
		list := func(k continuo.Kind, st continuo.Status, byPriority bool, n int) ([]continuo.Message, error) {
			q := store.MessageListParams{SessionID: sess.ID, Kinds: []continuo.Kind{k}, Limit: n, ByPriority: byPriority}
			if st != "" {
				q.Statuses = []continuo.Status{st}
			}
			return tx.MessageList(ctx, q)
		}
		if snap.Decisions, err = list(continuo.KindDecision, continuo.StatusOpen, true, BriefDecisions); err != nil {
			return err
		}
		if snap.Progress, err = list(continuo.KindProgress, "", false, BriefProgress+1); err != nil {
			return err
		}
		h, err := tx.MessageList(ctx, store.MessageListParams{SessionID: sess.ID, Handoff: true, Limit: 1})
		if err != nil {
			return err
		}
		if len(h) == 1 {
			snap.Handoff = &h[0]
		}
		if snap.Guidance, err = list(continuo.KindGuidance, continuo.StatusOpen, true, BriefConstraints); err != nil {
			return err
		}
		if snap.Answered, err = list(continuo.KindQuestion, continuo.StatusResolved, false, BriefAnswered); err != nil {
			return err
		}
		goals, err := tx.GoalList(ctx, store.GoalListParams{SessionID: sess.ID, Lifecycle: continuo.GoalActive, Limit: BriefGoals + 1})
		if err != nil {
			return err
		}
		snap.Goals, snap.GoalsMore = goals[:min(len(goals), BriefGoals)], len(goals) > BriefGoals
		if snap.Evidence, err = tx.EvidenceLatest(ctx, sess.ID, briefEvidence); err != nil {
			return err
		}
		n := BriefOpen
		if diagnostic {
			n = diagnosticOpen
			diag = &Diagnostic{Counts: sess.Counts, Instructions: sess.Instructions, Open: map[string]Notes{}}
		}
		for _, k := range []continuo.Kind{continuo.KindTodo, continuo.KindRisk, continuo.KindQuestion, continuo.KindGuidance} {
			var msgs []continuo.Message
			if k == continuo.KindGuidance {
				msgs = snap.Guidance[:min(n, len(snap.Guidance))]
			} else if msgs, err = list(k, continuo.StatusOpen, true, n); err != nil {
				return err
			}
			if diag != nil {
				diag.Open[string(k)] = notes(scrubMessages(msgs), *openCounter(&sess.Counts, k), diagnosticOpen, 2000)
			}
			if k != continuo.KindGuidance {
				snap.Open[k] = msgs[:min(BriefOpen, len(msgs))]
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	root := snap.Project.Root
	if snap.Session.WorktreePath != "" {
		root = snap.Session.WorktreePath
	}
	if root != "" {
		before, ferr := s.git.Fingerprint(root)
		st, perr := s.git.Probe(ctx, root)
		w := &WorkspaceFacts{Path: root, StartHead: snap.Session.StartHead}
		if perr == nil {
			w.Available, w.Branch, w.Head, w.Dirty = true, st.Branch, st.Head, st.Dirty
			w.Changes, w.ChangedTotal = st.Changes, st.ChangedTotal
			switch {
			case w.StartHead == "":
			case w.StartHead == w.Head:
				w.Commits = &workspace.Commits{}
			default:
				// An unknown start head (a rebase, a gc) leaves the count
				// out rather than guessing.
				if c, err := s.git.Since(ctx, root, w.StartHead); err == nil {
					w.Commits = &c
				}
			}
		}
		if len(snap.Evidence) > 0 {
			// Only evidence makes the source worth reading: it says
			// whether what the checks ran on is still what is there.
			if src, err := s.git.Source(ctx, root); err == nil {
				w.Source = &src
			} else {
				w.SourceUnread = true
			}
		}
		after, aerr := s.git.Fingerprint(root)
		snap.Workspace = w
		if ferr == nil && aerr == nil && before != after {
			snap.Reasons = append(snap.Reasons, ReasonExternalChanged)
		}
	}
	err = s.store.Read(ctx, func(tx store.Tx) error {
		rev, err := tx.SessionRevision(ctx, snap.Session.ID)
		if err == nil && rev != snap.Session.Revision {
			snap.Reasons = append(snap.Reasons, ReasonSessionChanged)
		}
		return err
	})
	return snap, diag, err
}
