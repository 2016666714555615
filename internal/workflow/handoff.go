package workflow

import (
	"context"
	"encoding/json"
	"slices"

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

// GoalView is the one active goal: identity, an objective excerpt, its
// completion conditions (each at most 512 bytes, whole), the current plan.
type GoalView struct {
	GoalID        string              `json:"goal_id"`
	Title         string              `json:"title"`
	Revision      int64               `json:"revision"`
	Objective     Text                `json:"objective"`
	Conditions    []string            `json:"completion_conditions"`
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
			Conditions: g.CompletionConditions, Steps: make([]continuo.GoalStep, len(g.Steps)), CurrentStepID: g.CurrentStepID}
		for i, st := range g.Steps {
			t := clip(st.Title, goalStepTitleBytes)
			v.StepsCut = v.StepsCut || len(t) < len(st.Title)
			v.Steps[i] = continuo.GoalStep{ID: st.ID, Title: t, Status: st.Status}
		}
		return &GoalContext{Status: GoalAvailable, Goal: v}
	}
	out := &GoalContext{Status: GoalSelectionRequired, ReasonCode: "multiple_active_goals", Truncated: s.GoalsMore}
	for _, g := range s.Goals {
		title, _ := redact.String(g.Title)
		out.Candidates = append(out.Candidates, GoalCandidate{GoalID: g.ID, Title: clip(title, goalStepTitleBytes), Revision: g.Revision})
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

// snapshot is what the brief is built from, in three steps: read the
// stored part in one read transaction (readStored), observe the checkout
// with git outside it (observe), and assemble the two with the basis's
// reasons (assemble).
func (s *Service) snapshot(ctx context.Context, c *continuo.Caller, ref, project string, diagnostic bool) (*Snapshot, *Diagnostic, error) {
	snap, diag, err := s.readStored(ctx, c, ref, project, diagnostic)
	if err != nil {
		return nil, nil, err
	}
	w, reasons := s.observe(ctx, &snap.Session, &snap.Project, len(snap.Evidence) > 0, workspace.MaxChanges, workspace.MaxSubjects)
	err = s.assemble(ctx, snap, w, reasons)
	return snap, diag, err
}

// readStored reads the session's part of a snapshot in one read
// transaction, so that it is one consistent state; with diagnostic, also
// the longer open lists of the diagnostic.
func (s *Service) readStored(ctx context.Context, c *continuo.Caller, ref, project string, diagnostic bool) (*Snapshot, *Diagnostic, error) {
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
		// its LIMIT (store.MessageListParams), or a lookup by id: the cost
		// does not grow with the session.
		rd := reader{ctx: ctx, tx: tx, session: sess.ID}
		byRank, err := rd.list(continuo.KindDecision, continuo.StatusOpen, byPriority, BriefDecisions)
		if err != nil {
			return err
		}
		corrections, err := rd.list(continuo.KindDecision, continuo.StatusOpen, correctionsOnly, BriefDecisions)
		if err != nil {
			return err
		}
		snap.Decisions = append(byRank, corrections...)
		if snap.Progress, err = rd.list(continuo.KindProgress, "", newestFirst, BriefProgress+1); err != nil {
			return err
		}
		if snap.Handoff, err = rd.handoff(); err != nil {
			return err
		}
		if snap.Guidance, err = rd.list(continuo.KindGuidance, continuo.StatusOpen, byPriority, BriefConstraints); err != nil {
			return err
		}
		if snap.Answered, err = rd.answered(BriefAnswered); err != nil {
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
		if snap.FailedOutput, err = failedOutputs(ctx, tx, snap.Evidence); err != nil {
			return err
		}
		if diag, err = rd.open(snap, diagnostic); err != nil {
			return err
		}
		// The decisions the remaining work names by id, fetched one by one
		// (at most BriefCited), when the reads above did not bring them.
		cited, err := rd.cited(Citations(snap.State(), snap.Open, snap.Goals), snap.Decisions)
		snap.Decisions = append(snap.Decisions, cited...)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return snap, diag, nil
}

// assemble puts the observed checkout into the snapshot with the basis's
// reasons: those its observation gave, then a change of the session since
// it was read (recheck).
func (s *Service) assemble(ctx context.Context, snap *Snapshot, w *WorkspaceFacts, reasons []string) error {
	snap.Workspace, snap.Reasons = w, reasons
	more, err := s.recheck(ctx, &snap.Session)
	snap.Reasons = append(snap.Reasons, more...)
	return err
}

// reader reads one session's messages inside a read transaction, each
// query bounded by its limit and served by an index.
type reader struct {
	ctx     context.Context
	tx      store.Tx
	session string
}

// The orders and filters reader.list asks for.
const (
	newestFirst     = iota
	byPriority      // high first, then newest (messages_rank)
	correctionsOnly // messages that supersede another, newest first (messages_corrections)
)

func (r *reader) list(k continuo.Kind, st continuo.Status, order, n int) ([]continuo.Message, error) {
	q := store.MessageListParams{SessionID: r.session, Kinds: []continuo.Kind{k}, Limit: n,
		ByPriority: order == byPriority, Corrections: order == correctionsOnly}
	if st != "" {
		q.Statuses = []continuo.Status{st}
	}
	return r.tx.MessageList(r.ctx, q)
}

// handoff is the newest current-state note, nil when there is none.
func (r *reader) handoff() (*continuo.Message, error) {
	h, err := r.tx.MessageList(r.ctx, store.MessageListParams{SessionID: r.session, Handoff: true, Limit: 1})
	if err != nil || len(h) == 0 {
		return nil, err
	}
	return &h[0], nil
}

// open reads the open todos, risks and questions of snap's session into
// snap.Open (guidance is read already); with diagnostic, more of each, and
// the diagnostic's lists of them.
func (r *reader) open(snap *Snapshot, diagnostic bool) (*Diagnostic, error) {
	sess := &snap.Session
	var diag *Diagnostic
	n := BriefOpen
	if diagnostic {
		n = max(n, diagnosticOpen)
		diag = &Diagnostic{Counts: sess.Counts, Instructions: sess.Instructions, Open: map[string]Notes{}}
	}
	for _, k := range []continuo.Kind{continuo.KindTodo, continuo.KindRisk, continuo.KindQuestion, continuo.KindGuidance} {
		var msgs []continuo.Message
		var err error
		if k == continuo.KindGuidance {
			msgs = snap.Guidance[:min(n, len(snap.Guidance))]
		} else if msgs, err = r.list(k, continuo.StatusOpen, byPriority, n); err != nil {
			return nil, err
		}
		if diag != nil {
			diag.Open[string(k)] = notes(items(scrubMessages(msgs), 2000), *openCounter(&sess.Counts, k), diagnosticOpen)
		}
		if k != continuo.KindGuidance {
			snap.Open[k] = msgs[:min(BriefOpen, len(msgs))]
		}
	}
	return diag, nil
}

// answered reads the newest n resolved questions and, for each, the answer
// in force: the answer that resolved it, or the later answers that
// superseded that one (at most maxAnswerHops of them). The answers are
// read by id, one query per step along the chains.
func (r *reader) answered(n int) ([]QA, error) {
	qs, err := r.list(continuo.KindQuestion, continuo.StatusResolved, newestFirst, n)
	if err != nil {
		return nil, err
	}
	out := make([]QA, len(qs))
	next := make([]string, len(qs)) // per question, the id to read next
	for i, q := range qs {
		out[i].Question, next[i] = q, q.ResolvedBy
	}
	for hop := 0; hop <= maxAnswerHops; hop++ {
		ms, err := r.byID(next)
		if err != nil || len(ms) == 0 {
			return out, err
		}
		for i, id := range next {
			m, ok := ms[id]
			switch {
			case id == "":
			case !ok: // archived: the resolution stands for it
				next[i] = ""
			case m.Kind != continuo.KindAnswer:
				out[i].Replaced, next[i] = m.ID, ""
			default:
				out[i].Answer, next[i] = m, m.SupersededBy
				if next[i] != "" && hop == maxAnswerHops {
					out[i].Replaced = next[i] // a longer chain than is followed: not shown as in force
				}
			}
		}
	}
	return out, nil
}

// maxAnswerHops bounds how many later answers are followed from the one
// that resolved a question.
const maxAnswerHops = 4

// byID reads the messages of the session among ids ("" ignored), in one
// query by the primary key.
func (r *reader) byID(ids []string) (map[string]*continuo.Message, error) {
	var want []string
	for _, id := range ids {
		if id != "" && !slices.Contains(want, id) {
			want = append(want, id)
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	ms, err := r.tx.MessageList(r.ctx, store.MessageListParams{SessionID: r.session, IDs: want, Limit: len(want)})
	out := make(map[string]*continuo.Message, len(ms))
	for i := range ms {
		out[ms[i].ID] = &ms[i]
	}
	return out, err
}

// cited reads the decisions in force among ids that are not in have
// already.
func (r *reader) cited(ids []string, have []continuo.Message) ([]continuo.Message, error) {
	ids = slices.DeleteFunc(slices.Clone(ids), func(id string) bool {
		return slices.ContainsFunc(have, func(m continuo.Message) bool { return m.ID == id })
	})
	ms, err := r.byID(ids)
	var out []continuo.Message
	for _, id := range ids { // in the order cited
		if m, ok := ms[id]; ok && m.Kind == continuo.KindDecision && m.Status == continuo.StatusOpen {
			out = append(out, *m)
		}
	}
	return out, err
}

// observe reads the session's checkout with git, outside the read
// transaction: branch, head, the first changes changed paths, the commits
// since the session started (up to subjects subjects) and, when withSource
// (there is evidence to compare), the source fingerprint. A cheap
// fingerprint of the checkout taken before and after says whether it
// changed meanwhile. Nil without a root.
func (s *Service) observe(ctx context.Context, sess *continuo.Session, p *continuo.Project, withSource bool, changes, subjects int) (*WorkspaceFacts, []string) {
	root := p.Root
	if sess.WorktreePath != "" {
		root = sess.WorktreePath
	}
	if root == "" {
		return nil, nil
	}
	var reasons []string
	before, ferr := s.git.Fingerprint(root)
	st, perr := s.git.Probe(ctx, root, changes)
	w := &WorkspaceFacts{Path: root, StartHead: sess.StartHead}
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
			if c, err := s.git.Since(ctx, root, w.StartHead, subjects); err == nil {
				w.Commits = &c
			}
		}
	}
	if withSource {
		// Only evidence makes the source worth reading: it says whether
		// what the checks ran on is still what is there.
		if src, err := s.git.Source(ctx, root); err == nil {
			w.Source = &src
		} else {
			w.SourceUnread = true
		}
	}
	after, aerr := s.git.Fingerprint(root)
	if ferr == nil && aerr == nil && before != after {
		reasons = append(reasons, ReasonExternalChanged)
	}
	return w, reasons
}

// recheck re-reads the session's revision: a change since sess was read
// means the snapshot may mix two states.
func (s *Service) recheck(ctx context.Context, sess *continuo.Session) ([]string, error) {
	var reasons []string
	err := s.store.Read(ctx, func(tx store.Tx) error {
		rev, err := tx.SessionRevision(ctx, sess.ID)
		if err == nil && rev != sess.Revision {
			reasons = append(reasons, ReasonSessionChanged)
		}
		return err
	})
	return reasons, err
}
