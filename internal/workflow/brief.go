package workflow

import (
	"sort"
	"strings"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/store"
)

// Brief is the handoff brief. Field order is fixed by this struct, so the
// same snapshot always serializes to the same bytes.
//
// Each section is a file of its own, with its types and what builds it:
// brief_task.go, brief_decisions.go, brief_constraints.go, brief_goal.go,
// brief_open.go (open work and answered questions), brief_validation.go,
// brief_workspace.go, brief_next.go (next actions) and brief_budget.go (the
// byte budget and the order of cutting). This file holds the whole: the
// snapshot it is built from, its redaction (scrub) and its assembly (build).
type Brief struct {
	Version       int          `json:"version"`
	Session       BriefSession `json:"session"`
	Task          Task         `json:"task"`
	Constraints   Constraints  `json:"constraints"`
	Goal          *GoalSection `json:"goal,omitempty"` // absent: no active goal
	Open          Open         `json:"open"`
	Answered      Answered     `json:"answered"`
	Validation    Validation   `json:"validation"`
	Workspace     *Workspace   `json:"workspace,omitempty"`
	NextActions   []string     `json:"next_actions"`
	Basis         Basis        `json:"basis"`
	Deterministic bool         `json:"deterministic"`
}

// BriefSession identifies the session.
type BriefSession struct {
	SessionID      string `json:"session_id"`
	SessionRef     string `json:"session_ref"`
	ProjectID      string `json:"project_id"`
	Title          Text   `json:"title"`
	Lifecycle      string `json:"lifecycle"`
	Mode           string `json:"mode"`
	WorktreeBranch string `json:"worktree_branch,omitempty"`
}

// Text is a bounded, redacted excerpt of stored text.
type Text struct {
	Excerpt   string `json:"excerpt"`
	Truncated bool   `json:"truncated"`
	Redacted  bool   `json:"redacted,omitempty"`
}

// Basis says how far the brief can be relied on.
type Basis struct {
	Complete        bool     `json:"complete"`
	SessionRevision int64    `json:"session_revision"`
	Reasons         []string `json:"reasons"`
}

// Basis reasons.
const (
	ReasonSessionChanged   = "session_changed_during_snapshot"
	ReasonExternalChanged  = "external_observations_changed_during_snapshot"
	ReasonWorkspaceMissing = "workspace_unavailable"
)

// Snapshot is everything the brief is built from, read in one read
// transaction (plus the workspace, read from git around it).
type Snapshot struct {
	Session continuo.Session
	Project continuo.Project
	// Decisions are decisions in force, in any order and without repeats:
	// the first BriefDecisions by priority then newest, the newest
	// BriefDecisions corrections, and up to BriefCited cited by id
	// (Citations). BuildBrief orders them (OrderDecisions).
	Decisions []continuo.Message
	// Progress is the newest progress, newest first; at most
	// BriefProgress+1 (one may be the current state).
	Progress []continuo.Message
	// Handoff is the newest progress tagged handoff, nil when none.
	Handoff *continuo.Message
	// Guidance is the open guidance by priority then newest; at most
	// BriefConstraints.
	Guidance []continuo.Message
	// Open holds the open todos, risks and questions by priority then
	// newest; at most BriefOpen of each.
	Open map[continuo.Kind][]continuo.Message
	// Answered holds the newest resolved questions with their answers,
	// newest first; at most BriefAnswered.
	Answered []QA
	// Goals are the session's active goals, newest first; at most
	// BriefGoals. GoalsMore says there were more.
	Goals     []continuo.Goal
	GoalsMore bool
	// Evidence is the session's newest evidence per check (at most
	// briefEvidence each, newest first), ordered by check.
	Evidence  []store.EvidenceRun
	Workspace *WorkspaceFacts // nil when the project has no root
	Reasons   []string

	// FailedOutput holds the last lines of the failed runs the validation
	// section rests on, by run ID (failedOutputs: bounded, redacted).
	FailedOutput map[string]string
}

// State is the session's current state: the newest handoff note, else
// the newest progress; nil without progress.
func (s *Snapshot) State() *continuo.Message {
	if s.Handoff != nil {
		return s.Handoff
	}
	if len(s.Progress) > 0 {
		return &s.Progress[0]
	}
	return nil
}

// scrubbed is a copy of a snapshot whose every text is already redacted, so
// that redaction runs once per brief and the cutting only cuts. Redaction
// always comes before cutting: a cut could leave half a secret that no
// longer matches a pattern.
type scrubbed struct {
	Snapshot
	title, root, latest bool               // whether redaction changed them
	goalRedacted        []bool             // per goal: whether redaction changed its title
	titleCut            bool               // the stored title is a cut of the instruction's first line
	ordered             []continuo.Message // the decisions in their order (OrderDecisions)
	// The items of each list, made once: their excerpts do not depend on
	// how much of the brief is cut, only how many of them are shown.
	decisions, progress []Item
	open                map[continuo.Kind][]Item
	answers             []Answer
}

func scrub(s *Snapshot) *scrubbed {
	sc := &scrubbed{Snapshot: *s}
	ss := &sc.Session
	// A session started without a title is titled with the start of its
	// instruction's first line (defaultTitle): say when that was cut.
	sc.titleCut = ss.Title == defaultTitle(ss.RootInstr) && len(ss.Title) < len(firstLine(ss.RootInstr))
	ss.Title, sc.title = redact.String(ss.Title)
	ss.RootInstr, sc.root = redact.String(ss.RootInstr)
	ss.LatestInstr, sc.latest = redact.String(ss.LatestInstr)
	ss.WorktreeBranch = oneLine(ss.WorktreeBranch)
	sc.Workspace = scrubWorkspace(s.Workspace)
	// Citations are read from the stored texts, as the snapshot's reader
	// found them: an id is never a secret.
	sc.ordered = scrubMessages(OrderDecisions(s.Decisions, Citations(s.State(), s.Open, s.Goals)))
	sc.Progress = scrubMessages(s.Progress)
	sc.Guidance = scrubMessages(s.Guidance)
	sc.Answered = scrubAnswered(s.Answered)
	if s.Handoff != nil {
		sc.Handoff = &scrubMessages([]continuo.Message{*s.Handoff})[0]
	}
	sc.Goals = make([]continuo.Goal, len(s.Goals))
	sc.goalRedacted = make([]bool, len(s.Goals))
	for i, g := range s.Goals {
		_, red := redact.String(g.Title)
		g, _ = RedactGoal(g)
		sc.Goals[i], sc.goalRedacted[i] = g, red
	}
	sc.Open = make(map[continuo.Kind][]continuo.Message, len(s.Open))
	sc.open = make(map[continuo.Kind][]Item, len(s.Open))
	for k, msgs := range s.Open {
		sc.Open[k] = scrubMessages(msgs)
		sc.open[k] = items(sc.Open[k], openBytes)
	}
	sc.decisions = items(sc.ordered, decisionBytes)
	if state := sc.State(); state != nil {
		var rest []continuo.Message
		for _, m := range sc.Progress {
			if m.ID != state.ID {
				rest = append(rest, m)
			}
		}
		sc.progress = items(rest, progressBytes)
	} else {
		sc.progress = items(sc.Progress, progressBytes)
	}
	sc.answers = answers(sc.Answered)
	return sc
}

func scrubMessages(msgs []continuo.Message) []continuo.Message {
	out := make([]continuo.Message, len(msgs))
	for i, m := range msgs {
		m.Text, _ = redact.String(m.Text)
		m.Resolution, _ = redact.String(m.Resolution)
		out[i] = m
	}
	return out
}

// oneLine redacts a short single-line value (a branch name, a path, a
// commit subject). Control characters go first, so that removing them
// cannot assemble a secret after redaction has looked.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	red, _ := redact.String(s)
	return red
}

func ts(m *continuo.Message) string { return m.CreatedAt.UTC().Format(continuo.TimeFormat) }

func priority(p continuo.Priority) string {
	if p == continuo.PriorityNormal || p == "" {
		return ""
	}
	return string(p)
}

func build(s *scrubbed, sh shape) *Brief {
	sess := &s.Session
	c := sess.Counts
	lr := lastResort[sh.rest]
	b := &Brief{Version: 3, Deterministic: true}
	title := excerpt(sess.Title, s.title, lr.title)
	title.Truncated = title.Truncated || s.titleCut
	b.Session = BriefSession{SessionID: sess.ID, SessionRef: continuo.SessionRef(sess.Ref), ProjectID: sess.ProjectID,
		Title: title, Lifecycle: string(sess.Lifecycle), Mode: string(sess.Mode),
		WorktreeBranch: cut(sess.WorktreeBranch, 120)}
	b.Task = Task{RootInstruction: excerpt(sess.RootInstr, s.root, lr.instr), Instructions: sess.Instructions}
	if sess.Instructions > 1 && sess.LatestInstr != sess.RootInstr {
		t := excerpt(sess.LatestInstr, s.latest, lr.instr)
		b.Task.LatestInstruction = &t
	}

	// The current state, and the progress without it.
	progressTotal := c.Progress
	if state := s.State(); state != nil {
		t := excerpt(state.Text, false, lr.state)
		b.Task.CurrentState = &CurrentState{MessageID: state.ID, Text: t.Excerpt, Truncated: t.Truncated, Handoff: state.Handoff(), At: ts(state)}
		progressTotal = max(progressTotal-1, 0)
	}
	d := notes(s.decisions, c.Decisions-c.SupersededDecisions, sh.decisions)
	b.Task.Decisions = Decisions{Items: d.Items, Total: d.Total, Returned: d.Returned, Truncated: d.Truncated, Superseded: c.SupersededDecisions}
	b.Task.RecentProgress = notes(s.progress, progressTotal, sh.progress)

	b.Constraints = constraints(s.Guidance, c.OpenGuidance, sh.constraints, constraintBytes)
	b.Goal = goalSection(s, lr)
	open := min(sh.open, lr.open)
	b.Open = Open{
		Todos:     notes(s.open[continuo.KindTodo], c.OpenTodos, open),
		Risks:     notes(s.open[continuo.KindRisk], c.OpenRisks, open),
		Questions: Questions{Notes: notes(s.open[continuo.KindQuestion], c.OpenQuestions, lr.questions)},
	}
	if c.OpenQuestions > 0 {
		b.Open.Questions.Note = QuestionsNote
	}
	n := min(sh.answered, len(s.answers))
	b.Answered = Answered{Items: s.answers[:n:n], Total: c.ResolvedQuestions, Returned: n, Truncated: int64(n) < c.ResolvedQuestions}

	b.Validation = briefValidation(&s.Snapshot, maxChecks)
	reasons := append([]string{}, s.Reasons...) // [] rather than null when complete
	if w := s.Workspace; w != nil {
		if w.Available {
			b.Workspace = workspaceSection(w, lr)
			b.Workspace.SourceChanged = sourceChanged(s.Evidence, s.Workspace)
			if w.SourceUnread {
				reasons = append(reasons, ReasonWorkspaceMissing)
			}
		} else {
			b.Workspace = &Workspace{Status: "unavailable", Path: cut(w.Path, pathBytes)}
			reasons = append(reasons, ReasonWorkspaceMissing)
		}
	}
	sort.Strings(reasons)
	reasons = compact(reasons)
	b.Basis = Basis{Complete: len(reasons) == 0, SessionRevision: sess.Revision, Reasons: reasons}
	b.NextActions = nextActions(b)
	return b
}

func compact(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
