package workflow

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/workspace"
)

// MaxBriefBytes bounds the serialized handoff brief (CONTRACT.md §4).
const MaxBriefBytes = 8192

// Brief is the handoff brief. Field order is fixed by this struct, so the
// same snapshot always serializes to the same bytes.
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

// Task is what the session is about, where it stands, and what was decided
// and done.
type Task struct {
	RootInstruction Text `json:"root_instruction"`
	// LatestInstruction is omitted while it is the root.
	LatestInstruction *Text         `json:"latest_instruction,omitempty"`
	Instructions      int64         `json:"instructions"`
	CurrentState      *CurrentState `json:"current_state,omitempty"` // absent: no progress yet
	Decisions         Decisions     `json:"decisions"`
	RecentProgress    Notes         `json:"recent_progress"`
}

// CurrentState is the newest progress message tagged handoff (or, when
// there is none, the newest progress message), in full up to its budget.
type CurrentState struct {
	MessageID string `json:"message_id"`
	Text      string `json:"text"`
	Truncated bool   `json:"truncated,omitempty"`
	Handoff   bool   `json:"handoff"` // tagged handoff, not merely the newest progress
	At        string `json:"at"`
}

// Decisions are the decisions in force, high priority first, then newest.
// Superseded decisions are only counted: the item that replaced one names
// it in supersedes.
type Decisions struct {
	Items      []Item `json:"items"`
	Total      int64  `json:"total"` // in force
	Returned   int    `json:"returned"`
	Truncated  bool   `json:"truncated"`
	Superseded int64  `json:"superseded"`
}

// Notes is a selection of messages with its coverage.
type Notes struct {
	Items     []Item `json:"items"`
	Total     int64  `json:"total"`
	Returned  int    `json:"returned"`
	Truncated bool   `json:"truncated"`
}

// Item is one message in the brief. Every item of a section has the same
// status (in force, open), so none is shown.
type Item struct {
	MessageID  string `json:"message_id"`
	Excerpt    string `json:"excerpt"`
	Truncated  bool   `json:"truncated,omitempty"`
	At         string `json:"at"`
	Priority   string `json:"priority,omitempty"` // only when not normal
	Supersedes string `json:"supersedes,omitempty"`
}

// Constraints are the open guidance messages, the user's standing
// instructions, verbatim: high priority first, then newest.
type Constraints struct {
	Items     []Constraint `json:"items"`
	Total     int64        `json:"total"`
	Returned  int          `json:"returned"`
	Truncated bool         `json:"truncated"`
}

// Constraint is one guidance message, in full unless Truncated (only ever
// the first, when it alone exceeds the budget).
type Constraint struct {
	MessageID string `json:"message_id"`
	Text      string `json:"text"`
	Truncated bool   `json:"truncated,omitempty"`
	At        string `json:"at"`
	Priority  string `json:"priority,omitempty"`
}

// GoalSection is the session's active goals, newest first: where each
// stands. get_goal has the full plan.
type GoalSection struct {
	Items     []BriefGoal `json:"items"`
	Total     int         `json:"total"` // active goals loaded (at most BriefGoals)
	Returned  int         `json:"returned"`
	Truncated bool        `json:"truncated"`
}

// BriefGoal is one active goal: identity, revision, current step and how
// many steps are in each status.
type BriefGoal struct {
	GoalID      string     `json:"goal_id"`
	Title       Text       `json:"title"`
	Revision    int64      `json:"revision"`
	CurrentStep *StepRef   `json:"current_step,omitempty"` // absent: none in progress
	Steps       StepCounts `json:"steps"`
}

// StepRef names a step.
type StepRef struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	Truncated bool   `json:"truncated,omitempty"`
}

// StepCounts counts a plan's steps by status.
type StepCounts struct {
	Pending    int `json:"pending"`
	InProgress int `json:"in_progress"`
	Completed  int `json:"completed"`
}

// Open is the open work of the session, each list high priority first,
// then newest.
type Open struct {
	Todos     Notes     `json:"todos"`
	Risks     Notes     `json:"risks"`
	Questions Questions `json:"questions"`
}

// Questions are the open questions: only the user can settle them.
type Questions struct {
	Note string `json:"note,omitempty"`
	Notes
}

// QuestionsNote is what the brief says about open questions.
const QuestionsNote = "only the user can settle these: ask the user; do not answer them yourself"

// Answered is the newest answered questions as question/answer pairs.
type Answered struct {
	Items     []Answer `json:"items"`
	Total     int64    `json:"total"`
	Returned  int      `json:"returned"`
	Truncated bool     `json:"truncated"`
}

// Answer is one resolved question with its answer: the answer message
// (answer.message_id) or the resolution given when it was resolved.
type Answer struct {
	Question Item       `json:"question"`
	Answer   AnswerText `json:"answer"`
}

// AnswerText is the answer half of a pair.
type AnswerText struct {
	MessageID string `json:"message_id,omitempty"`
	Excerpt   string `json:"excerpt"`
	Truncated bool   `json:"truncated,omitempty"`
	At        string `json:"at,omitempty"`
}

// Validation is the evidence section: per check of the project, the
// session's newest evidence and what it says now. Status sums them up: the
// worst of failed, stale, running, not_run, passed.
type Validation struct {
	Status    string        `json:"status"`
	Checks    []CheckStatus `json:"checks"`
	Total     int           `json:"total"`
	Truncated bool          `json:"truncated"`
}

// CheckStatus is the newest evidence of one named check: status passed or
// failed while the source is what the evidence ran on, stale once it
// differs, running while a run is under way, not_run without a finished
// run. RunID, Outcome, At and Source are of the run that decides the status
// (the newest finished one; the one under way while running).
type CheckStatus struct {
	Check   string       `json:"check"`
	Status  string       `json:"status"`
	RunID   string       `json:"run_id,omitempty"`
	Outcome string       `json:"outcome,omitempty"` // the run's state
	At      string       `json:"at,omitempty"`
	Source  *BriefSource `json:"source,omitempty"`
}

// BriefSource is the source a run ran on, by 12-character prefixes (enough
// to tell commits and trees apart; get the run for the whole).
type BriefSource struct {
	Head     string `json:"head"`
	TreeHash string `json:"tree_hash"`
}

// The validation statuses, worst first: the section's status is the worst
// of its checks'.
const (
	CheckFailed  = "failed"
	CheckStale   = "stale"
	CheckRunning = "running"
	CheckNotRun  = "not_run"
	CheckPassed  = "passed"
)

var checkRank = map[string]int{CheckFailed: 0, CheckStale: 1, CheckRunning: 2, CheckNotRun: 3, CheckPassed: 4}

// Workspace describes the project's checkout.
type Workspace struct {
	Status     string   `json:"status"` // available | unavailable
	Path       string   `json:"path,omitempty"`
	Branch     string   `json:"branch,omitempty"`
	Head       string   `json:"head,omitempty"`
	Dirty      *bool    `json:"dirty,omitempty"`
	Changes    *Changes `json:"changes,omitempty"`
	StartHead  string   `json:"start_head,omitempty"`
	SinceStart *Commits `json:"commits_since_start,omitempty"`
	// SourceChanged says whether the source differs from what the newest
	// finished validation run ran on; absent without one.
	SourceChanged *bool `json:"source_changed_since_evidence,omitempty"`
}

// Changes are the checkout's changed paths with their git status.
type Changes struct {
	Items     []Change `json:"items"`
	Total     int      `json:"total"`
	Returned  int      `json:"returned"`
	Truncated bool     `json:"truncated"`
}

// Change is one changed path: git's porcelain v2 XY code ("??" untracked).
type Change struct {
	Path   string `json:"path"`
	Status string `json:"status"`
}

// Commits are what was committed since the session started.
type Commits struct {
	Count    int      `json:"count"`
	Subjects []string `json:"subjects"` // newest first
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
	// Decisions in force, high priority first, then newest; at most
	// BriefDecisions.
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
	// Answered holds the newest resolved questions; at most BriefAnswered.
	Answered []continuo.Message
	// Goals are the session's active goals, newest first; at most
	// BriefGoals. GoalsMore says there were more.
	Goals     []continuo.Goal
	GoalsMore bool
	// Evidence is the session's newest evidence per check (at most
	// briefEvidence each, newest first), ordered by check.
	Evidence  []store.EvidenceRun
	Workspace *WorkspaceFacts // nil when the project has no root
	Reasons   []string
}

// WorkspaceFacts is what git said about the checkout.
type WorkspaceFacts struct {
	Available    bool
	Path         string // the checkout or worktree
	Branch       string
	Head         string
	Dirty        bool
	Changes      []workspace.Change // at most workspace.MaxChanges
	ChangedTotal int
	StartHead    string             // the session's start head, "" when unknown
	Commits      *workspace.Commits // since StartHead; nil when unknown
	// Source is the checkout's current source fingerprint; nil when it
	// was not read (no evidence to compare) or could not be (SourceUnread).
	Source       *workspace.Source
	SourceUnread bool
}

// level is one setting of the brief's per-section budgets (count, bytes per
// item). BuildBrief tries them in order and keeps the first that fits
// MaxBriefBytes, so cutting is deterministic. The ladder cuts the least
// important first — older progress, answered pairs, the file list, open
// items, then normal decisions, the current state and the instructions —
// and the constraints last.
type level struct {
	decisions, decisionBytes int
	progress, progressBytes  int
	open, openBytes          int // per open kind
	answered, answeredBytes  int
	files, subjects          int
	state, constraints       int // bytes
	instr, title             int
	goals, goalTitle         int // goals shown, bytes of each title (and its current step's)
}

// The goal section sits between the constraints and the recent progress in
// the cutting order: a goal is the plan the work follows, and a few bytes
// of it (id, revision, current step, step counts) tell a model where the
// work stands, so it outlasts progress, answered pairs, files and open
// items. It goes before the constraints are cut at all (CONTRACT.md §4:
// the constraints are the last thing cut); read_session_handoff's
// goal_context, outside the brief, still names the goal then.
var briefLevels = []level{
	{12, 400, 5, 300, 3, 240, 3, 240, 20, 3, 2048, 2048, 600, 240, 3, 120},
	{12, 300, 3, 200, 3, 200, 2, 200, 10, 3, 2048, 2048, 600, 240, 3, 120},
	{10, 240, 1, 160, 2, 160, 1, 160, 5, 2, 2048, 2048, 600, 240, 3, 120},
	{8, 200, 0, 0, 2, 120, 1, 120, 3, 1, 2048, 2048, 600, 240, 3, 120},
	{6, 160, 0, 0, 1, 100, 0, 0, 0, 0, 1536, 2048, 600, 200, 2, 100},
	{4, 120, 0, 0, 1, 80, 0, 0, 0, 0, 1024, 2048, 400, 160, 2, 80},
	{3, 100, 0, 0, 1, 60, 0, 0, 0, 0, 512, 2048, 300, 120, 1, 80},
	{2, 80, 0, 0, 0, 0, 0, 0, 0, 0, 256, 1536, 200, 100, 0, 0},
	{1, 80, 0, 0, 0, 0, 0, 0, 0, 0, 160, 1024, 120, 80, 0, 0},
	{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 80, 512, 80, 60, 0, 0},
	{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 60, 60, 0, 0},
}

// How many messages the snapshot should carry per section: the most any
// level shows (progress one more, for the current state).
const (
	BriefDecisions   = 12
	BriefProgress    = 5
	BriefOpen        = 3
	BriefAnswered    = 3
	BriefConstraints = 16
	BriefGoals       = 8
	maxChecks        = 8
	maxActions       = 7
	maxListActions   = 3
	pathBytes        = 256
	subjectBytes     = 120
)

// BuildBrief builds the handoff brief from a snapshot. It is a pure
// function: no I/O, no clock, no randomness; the same snapshot gives the
// same bytes. The result is valid JSON of at most MaxBriefBytes.
func BuildBrief(s *Snapshot) (*Brief, []byte) {
	sc := scrub(s)
	var b *Brief
	var out []byte
	for _, lv := range briefLevels {
		b = build(sc, lv)
		out, _ = json.Marshal(b) // cannot fail: plain structs of strings and numbers
		if len(out) <= MaxBriefBytes {
			return b, out
		}
	}
	// Unreachable with the bounds above (the smallest level is far below the
	// budget), but the contract is absolute, so say so rather than exceed it.
	panic(fmt.Sprintf("handoff brief of %d bytes exceeds %d at the smallest level", len(out), MaxBriefBytes))
}

// scrubbed is a copy of a snapshot whose every text is already redacted, so
// that redaction runs once per brief and the budget levels only cut.
// Redaction always comes before cutting: a cut could leave half a secret
// that no longer matches a pattern.
type scrubbed struct {
	Snapshot
	title, root, latest bool   // whether redaction changed them
	goalRedacted        []bool // per goal: whether redaction changed its title
	titleCut            bool   // the stored title is a cut of the instruction's first line
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
	if s.Workspace != nil {
		w := *s.Workspace
		w.Branch, w.Path = oneLine(w.Branch), oneLine(w.Path)
		w.Changes = make([]workspace.Change, len(s.Workspace.Changes))
		for i, c := range s.Workspace.Changes {
			w.Changes[i] = workspace.Change{Status: oneLine(c.Status), Path: oneLine(c.Path)}
		}
		if c := s.Workspace.Commits; c != nil {
			cc := workspace.Commits{Count: c.Count, Subjects: make([]string, len(c.Subjects))}
			for i, subj := range c.Subjects {
				cc.Subjects[i] = oneLine(subj)
			}
			w.Commits = &cc
		}
		sc.Workspace = &w
	}
	sc.Decisions = scrubMessages(s.Decisions)
	sc.Progress = scrubMessages(s.Progress)
	sc.Guidance = scrubMessages(s.Guidance)
	sc.Answered = scrubMessages(s.Answered)
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
	for k, msgs := range s.Open {
		sc.Open[k] = scrubMessages(msgs)
	}
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

func build(s *scrubbed, lv level) *Brief {
	sess := &s.Session
	c := sess.Counts
	b := &Brief{Version: 2, Deterministic: true}
	title := excerpt(sess.Title, s.title, lv.title)
	title.Truncated = title.Truncated || s.titleCut
	b.Session = BriefSession{SessionID: sess.ID, SessionRef: continuo.SessionRef(sess.Ref), ProjectID: sess.ProjectID,
		Title: title, Lifecycle: string(sess.Lifecycle), Mode: string(sess.Mode),
		WorktreeBranch: cut(sess.WorktreeBranch, 120)}
	b.Task = Task{RootInstruction: excerpt(sess.RootInstr, s.root, lv.instr), Instructions: sess.Instructions}
	if sess.Instructions > 1 && sess.LatestInstr != sess.RootInstr {
		t := excerpt(sess.LatestInstr, s.latest, lv.instr)
		b.Task.LatestInstruction = &t
	}

	// The current state, and the progress without it.
	state := s.Handoff
	if state == nil && len(s.Progress) > 0 {
		state = &s.Progress[0]
	}
	progress, progressTotal := s.Progress, c.Progress
	if state != nil {
		t := excerpt(state.Text, false, lv.state)
		b.Task.CurrentState = &CurrentState{MessageID: state.ID, Text: t.Excerpt, Truncated: t.Truncated, Handoff: state.Handoff(), At: ts(state)}
		progress = make([]continuo.Message, 0, len(s.Progress))
		for _, m := range s.Progress {
			if m.ID != state.ID {
				progress = append(progress, m)
			}
		}
		progressTotal = max(progressTotal-1, 0)
	}
	d := notes(s.Decisions, c.Decisions-c.SupersededDecisions, lv.decisions, lv.decisionBytes)
	b.Task.Decisions = Decisions{Items: d.Items, Total: d.Total, Returned: d.Returned, Truncated: d.Truncated, Superseded: c.SupersededDecisions}
	b.Task.RecentProgress = notes(progress, progressTotal, lv.progress, lv.progressBytes)

	b.Constraints = constraints(s.Guidance, c.OpenGuidance, lv.constraints)
	b.Goal = goalSection(s, lv)
	b.Open = Open{
		Todos:     notes(s.Open[continuo.KindTodo], c.OpenTodos, lv.open, lv.openBytes),
		Risks:     notes(s.Open[continuo.KindRisk], c.OpenRisks, lv.open, lv.openBytes),
		Questions: Questions{Notes: notes(s.Open[continuo.KindQuestion], c.OpenQuestions, lv.open, lv.openBytes)},
	}
	if c.OpenQuestions > 0 {
		b.Open.Questions.Note = QuestionsNote
	}
	b.Answered = answered(s.Answered, c.ResolvedQuestions, lv.answered, lv.answeredBytes)

	b.Validation = validation(&s.Snapshot)
	reasons := append([]string{}, s.Reasons...) // [] rather than null when complete
	if w := s.Workspace; w != nil {
		if w.Available {
			b.Workspace = workspaceSection(w, lv)
			b.Workspace.SourceChanged = sourceChanged(&s.Snapshot)
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

// goalSection shows the first lv.goals active goals; nil when there is none.
func goalSection(s *scrubbed, lv level) *GoalSection {
	if len(s.Goals) == 0 || lv.goals == 0 {
		return nil
	}
	out := &GoalSection{Items: []BriefGoal{}, Total: len(s.Goals)}
	for i := range s.Goals {
		if i == lv.goals {
			break
		}
		g := &s.Goals[i]
		bg := BriefGoal{GoalID: g.ID, Title: excerpt(g.Title, s.goalRedacted[i], lv.goalTitle), Revision: g.Revision}
		for _, st := range g.Steps {
			switch st.Status {
			case continuo.StepPending:
				bg.Steps.Pending++
			case continuo.StepInProgress:
				bg.Steps.InProgress++
			case continuo.StepCompleted:
				bg.Steps.Completed++
			}
			if st.ID == g.CurrentStepID && g.CurrentStepID != "" {
				t := excerpt(st.Title, false, lv.goalTitle)
				bg.CurrentStep = &StepRef{ID: st.ID, Title: t.Excerpt, Truncated: t.Truncated}
			}
		}
		out.Items = append(out.Items, bg)
	}
	out.Returned = len(out.Items)
	out.Truncated = out.Returned < out.Total || s.GoalsMore
	return out
}

func workspaceSection(w *WorkspaceFacts, lv level) *Workspace {
	dirty := w.Dirty
	out := &Workspace{Status: "available", Path: cut(w.Path, pathBytes), Branch: cut(w.Branch, 120), Head: w.Head, Dirty: &dirty,
		StartHead: w.StartHead}
	if w.ChangedTotal > 0 || len(w.Changes) > 0 {
		ch := &Changes{Items: []Change{}, Total: max(w.ChangedTotal, len(w.Changes))}
		for i, c := range w.Changes {
			if i == lv.files {
				break
			}
			ch.Items = append(ch.Items, Change{Path: cut(c.Path, pathBytes), Status: cut(c.Status, 2)})
		}
		ch.Returned = len(ch.Items)
		ch.Truncated = ch.Returned < ch.Total
		out.Changes = ch
	}
	if c := w.Commits; c != nil {
		sc := &Commits{Count: c.Count, Subjects: []string{}}
		for i, subj := range c.Subjects {
			if i == lv.subjects {
				break
			}
			sc.Subjects = append(sc.Subjects, cut(subj, subjectBytes))
		}
		out.SinceStart = sc
	}
	return out
}

// excerpt cuts an already redacted text to n bytes.
func excerpt(text string, redacted bool, n int) Text {
	out := cut(text, n)
	return Text{Excerpt: out, Truncated: len(out) < len(text), Redacted: redacted}
}

func item(m *continuo.Message, bytes int) Item {
	t := excerpt(m.Text, false, bytes)
	return Item{MessageID: m.ID, Excerpt: t.Excerpt, Truncated: t.Truncated, At: ts(m), Priority: priority(m.Priority), Supersedes: m.Supersedes}
}

// notes selects the first n of msgs (in the snapshot's order, already
// redacted).
func notes(msgs []continuo.Message, total int64, n, bytes int) Notes {
	out := Notes{Items: []Item{}, Total: total}
	for i := range msgs {
		if i == n {
			break
		}
		out.Items = append(out.Items, item(&msgs[i], bytes))
	}
	out.Returned = len(out.Items)
	out.Truncated = int64(out.Returned) < total
	return out
}

// constraints carries guidance verbatim, in order, while it fits budget
// bytes together; only a first message longer than the whole budget is cut.
func constraints(msgs []continuo.Message, total int64, budget int) Constraints {
	out := Constraints{Items: []Constraint{}, Total: total}
	used := 0
	for i := range msgs {
		m := &msgs[i]
		text, truncated := m.Text, false
		if used+len(text) > budget {
			if i > 0 || budget == 0 {
				break
			}
			text = cut(text, budget)
			truncated = true
		}
		used += len(text)
		out.Items = append(out.Items, Constraint{MessageID: m.ID, Text: text, Truncated: truncated, At: ts(m), Priority: priority(m.Priority)})
	}
	out.Returned = len(out.Items)
	out.Truncated = int64(out.Returned) < total || (out.Returned > 0 && out.Items[out.Returned-1].Truncated)
	return out
}

func answered(msgs []continuo.Message, total int64, n, bytes int) Answered {
	out := Answered{Items: []Answer{}, Total: total}
	for i := range msgs {
		if i == n {
			break
		}
		m := &msgs[i]
		q := item(m, bytes)
		q.Supersedes = ""
		a := excerpt(m.Resolution, false, bytes)
		at := ""
		if m.ResolvedAt != nil {
			at = m.ResolvedAt.UTC().Format(continuo.TimeFormat)
		}
		out.Items = append(out.Items, Answer{Question: q, Answer: AnswerText{MessageID: m.ResolvedBy, Excerpt: a.Excerpt, Truncated: a.Truncated, At: at}})
	}
	out.Returned = len(out.Items)
	out.Truncated = int64(out.Returned) < total
	return out
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

// listCall is the exact list_session_messages call that returns what a
// section left out.
func listCall(ref string, kinds []string, extra string) string {
	q := make([]string, len(kinds))
	for i, k := range kinds {
		q[i] = strconv.Quote(k)
	}
	return fmt.Sprintf("list_session_messages(session_id=%q, kinds=[%s]%s)", ref, strings.Join(q, ", "), extra)
}

// nextActions derives at most maxActions hints from fixed templates, most
// important first, each naming the exact id or call.
func nextActions(b *Brief) []string {
	out := []string{}
	add := func(format string, args ...any) {
		if len(out) < maxActions {
			out = append(out, fmt.Sprintf(format, args...))
		}
	}
	ref := b.Session.SessionRef
	if b.Session.Lifecycle == string(continuo.LifecycleClosed) {
		add("session is closed: read it for context, and start a new session to continue the work")
	}
	if !b.Basis.Complete {
		add("re-read the handoff before relying on it: %s", strings.Join(b.Basis.Reasons, ", "))
	}
	// What a truncated section left out, most important section first.
	var lists []string
	open := `, status="open"`
	if b.Constraints.Truncated {
		lists = append(lists, "read every constraint (the brief cut some): "+listCall(ref, []string{"guidance"}, open))
	}
	if b.Task.Decisions.Truncated {
		lists = append(lists, "read the decisions in force the brief left out: "+listCall(ref, []string{"decision"}, open))
	}
	if b.Task.RootInstruction.Truncated {
		lists = append(lists, "read the full root instruction: "+listCall(ref, []string{"instruction"}, `, order="oldest", limit=1`))
	}
	if l := b.Task.LatestInstruction; l != nil && l.Truncated {
		lists = append(lists, "read the full latest instruction: "+listCall(ref, []string{"instruction"}, `, limit=1`))
	}
	if b.Open.Questions.Truncated {
		lists = append(lists, "read the open questions the brief left out: "+listCall(ref, []string{"question"}, open))
	}
	if b.Open.Risks.Truncated || b.Open.Todos.Truncated {
		lists = append(lists, "read the open risks and todos the brief left out: "+listCall(ref, []string{"risk", "todo"}, open))
	}
	for i, l := range lists {
		if i == maxListActions {
			break
		}
		add("%s", l)
	}
	if g := b.Goal; g != nil && len(g.Items) > 0 {
		if g.Returned == 1 && !g.Truncated {
			add("read the active goal's plan before continuing: get_goal(goal_id=%q)", g.Items[0].GoalID)
		} else {
			add("several active goals: read the plan of the one this work serves: get_goal(goal_id=%q) (newest), list_goals(session_id=%q, lifecycle=\"active\")", g.Items[0].GoalID, ref)
		}
	}
	if w := b.Workspace; w != nil && w.Dirty != nil && *w.Dirty {
		n := 0
		if w.Changes != nil {
			n = w.Changes.Total
		}
		add("inspect the %d uncommitted change(s) in %s (git status, git diff) before editing", n, w.Path)
	}
	var rerun, running []string
	for _, cs := range b.Validation.Checks {
		switch cs.Status {
		case CheckFailed, CheckStale, CheckNotRun:
			rerun = append(rerun, fmt.Sprintf("run_validation(session_id=%q, check=%q) (%s)", ref, cs.Check, cs.Status))
		case CheckRunning:
			running = append(running, fmt.Sprintf("observe_run(run_id=%q) (%s)", cs.RunID, cs.Check))
		}
	}
	if len(running) > 0 {
		add("a check is running; read its output: %s", strings.Join(running[:min(2, len(running))], ", "))
	}
	if len(rerun) > 0 && b.Session.Lifecycle == string(continuo.LifecycleActive) {
		add("prove the work with the server's checks (a note saying tests pass is not evidence): %s", strings.Join(rerun[:min(3, len(rerun))], ", "))
	}
	if q := b.Open.Questions.Items; len(q) > 0 {
		add("ask the user to settle question %s (%d open); only the user can answer it", q[0].MessageID, b.Open.Questions.Total)
	}
	// Open risks and todos by priority: risks first at equal priority.
	type work struct {
		kind string
		it   Item
		rank int
	}
	var ws []work
	for _, it := range b.Open.Risks.Items {
		ws = append(ws, work{"risk", it, continuo.Priority(orNormal(it.Priority)).Rank()*2 + 1})
	}
	for _, it := range b.Open.Todos.Items {
		ws = append(ws, work{"todo", it, continuo.Priority(orNormal(it.Priority)).Rank() * 2})
	}
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].rank > ws[j].rank })
	if len(ws) > 0 {
		parts := make([]string, 0, 3)
		for i, w := range ws {
			if i == 3 {
				break
			}
			p := w.kind + " " + w.it.MessageID
			if w.it.Priority != "" {
				p += " (" + w.it.Priority + ")"
			}
			parts = append(parts, p)
		}
		add("open work by priority (%d todo(s), %d risk(s)): %s", b.Open.Todos.Total, b.Open.Risks.Total, strings.Join(parts, ", "))
	} else if n := b.Open.Todos.Total + b.Open.Risks.Total; n > 0 {
		add("review the %d open todo(s) and risk(s): %s", n, listCall(ref, []string{"risk", "todo"}, open))
	}
	return out
}

func orNormal(p string) string {
	if p == "" {
		return string(continuo.PriorityNormal)
	}
	return p
}

// briefEvidence is how many of each check's newest evidence the brief
// reads: enough to find the newest finished run behind a few cancelled or
// interrupted ones.
const briefEvidence = 4

// validation builds the evidence section: every check of the project (the
// first maxChecks by name), judged by the session's evidence against the
// checkout's current source.
func validation(s *Snapshot) Validation {
	names := checkNames(s.Project.Checks)
	v := Validation{Status: CheckPassed, Checks: []CheckStatus{}, Total: len(names), Truncated: len(names) > maxChecks}
	if len(names) == 0 {
		v.Status = CheckNotRun
	}
	byCheck := map[string][]continuo.Run{}
	for _, e := range s.Evidence {
		byCheck[e.Evidence.Check] = append(byCheck[e.Evidence.Check], e.Run)
	}
	var current *workspace.Source
	if s.Workspace != nil {
		current = s.Workspace.Source
	}
	for i, n := range names {
		cs := checkStatus(n, byCheck[n], current)
		if checkRank[cs.Status] < checkRank[v.Status] {
			v.Status = cs.Status
		}
		if i < maxChecks {
			v.Checks = append(v.Checks, cs)
		}
	}
	return v
}

// checkStatus judges one check by its newest runs (newest first).
func checkStatus(name string, runs []continuo.Run, current *workspace.Source) CheckStatus {
	cs := CheckStatus{Check: name}
	var r *continuo.Run
	cs.Status, r = judgeCheck(runs, current)
	if r != nil {
		cs.RunID, cs.Outcome = r.ID, string(r.State)
		cs.At = checkedAt(r).Format(continuo.TimeFormat)
		cs.Source = &BriefSource{Head: prefix(r.SourceHead, 12), TreeHash: prefix(r.SourceTree, 12)}
	}
	return cs
}

// judgeCheck is the rule of a check's status, from its newest runs
// (newest first) and the checkout's current source (nil when unknown):
// running while the newest is under way; else the newest finished run
// (succeeded, failed, timed_out) gives passed or failed on the source it
// ran on, and stale once the source differs or cannot be read; not_run
// without one. It also returns the run the status rests on: the one under
// way, the newest finished one, or else the newest cancelled or
// interrupted one (no evidence either way); nil without runs.
func judgeCheck(runs []continuo.Run, current *workspace.Source) (string, *continuo.Run) {
	if len(runs) > 0 && !runs[0].State.Terminal() {
		return CheckRunning, &runs[0]
	}
	for i := range runs {
		r := &runs[i]
		switch r.State {
		case continuo.RunSucceeded, continuo.RunFailed, continuo.RunTimedOut:
			switch {
			case current == nil || current.Head != r.SourceHead || current.Tree != r.SourceTree:
				// Unknown counts as changed: a check is passed only
				// on the source it passed on.
				return CheckStale, r
			case r.State == continuo.RunSucceeded:
				return CheckPassed, r
			default:
				return CheckFailed, r
			}
		}
	}
	if len(runs) > 0 {
		return CheckNotRun, &runs[0] // cancelled or interrupted: not evidence either way
	}
	return CheckNotRun, nil
}

// checkedAt is when a run's evidence dates from: its end, or its creation
// while it has not ended.
func checkedAt(r *continuo.Run) time.Time {
	if r.EndedAt != nil {
		return *r.EndedAt
	}
	return r.CreatedAt
}

func prefix(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// sourceChanged compares the current source with the one the session's
// newest finished validation run ran on; nil without such a run or without
// the current source.
func sourceChanged(s *Snapshot) *bool {
	var newest *continuo.Run
	for i := range s.Evidence {
		r := &s.Evidence[i].Run
		if r.EndedAt == nil || r.State != continuo.RunSucceeded && r.State != continuo.RunFailed && r.State != continuo.RunTimedOut {
			continue
		}
		if newest == nil || r.EndedAt.After(*newest.EndedAt) || r.EndedAt.Equal(*newest.EndedAt) && r.ID > newest.ID {
			newest = r
		}
	}
	if newest == nil || s.Workspace == nil || s.Workspace.Source == nil {
		return nil
	}
	changed := s.Workspace.Source.Head != newest.SourceHead || s.Workspace.Source.Tree != newest.SourceTree
	return &changed
}
