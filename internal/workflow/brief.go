package workflow

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
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

// Decisions are the decisions in force in the order of CONTRACT.md §4
// (OrderDecisions): high priority, corrections, those cited by id, then
// the newest. Superseded decisions are only counted: the item that
// replaced one names it in supersedes.
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

// Answered is the newest answered questions as question/answer pairs:
// those whose answer still holds first.
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
	// ReplacedBy names the message (not an answer) that superseded this
	// answer: it no longer holds.
	ReplacedBy string `json:"replaced_by,omitempty"`
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
	// FailedOutput is the last lines of a failed check's output.
	FailedOutput string `json:"failed_output,omitempty"`
}

// BriefSource is the source a run ran on, by 12-character prefixes (enough
// to tell commits and trees apart; get the run for the whole).
type BriefSource struct {
	Head     string `json:"head"`
	TreeHash string `json:"tree_hash"`
	Clean    bool   `json:"clean"`
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

// QA is a resolved question and what answered it.
type QA struct {
	Question continuo.Message
	// Answer is the answer in force: the answer message that resolved the
	// question or, when that one was superseded by a later answer, the
	// latest of them. Nil when the question was resolved with
	// resolve_session_message (its resolution is the answer).
	Answer *continuo.Message
	// Replaced names what superseded the answer when that is not another
	// answer (a decision, say): the pair no longer holds.
	Replaced string
}

// InForce reports whether the pair's answer still holds.
func (q *QA) InForce() bool { return q.Replaced == "" }

// text is the answer's text: the answer message's, or the resolution.
func (q *QA) text() string {
	if q.Answer != nil {
		return q.Answer.Text
	}
	return q.Question.Resolution
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

// WorkspaceFacts is what git said about the checkout.
type WorkspaceFacts struct {
	Available    bool
	Path         string // the checkout or worktree
	Branch       string
	Head         string
	Dirty        bool
	Changes      []workspace.Change // the first few (the brief 20, the working set 500)
	ChangedTotal int
	StartHead    string             // the session's start head, "" when unknown
	Commits      *workspace.Commits // since StartHead; nil when unknown
	// Source is the checkout's current source fingerprint; nil when it
	// was not read (no evidence to compare) or could not be (SourceUnread).
	Source       *workspace.Source
	SourceUnread bool
}

// shape is how much of each cuttable section a brief shows. BuildBrief
// starts from the most (fullShape) and cuts in the order of CONTRACT.md §4
// (cutOrder) until the brief fits MaxBriefBytes, so the same snapshot is
// always cut the same way.
type shape struct {
	progress    int // recent_progress items
	decisions   int // decisions, from the front of their order
	open        int // open todos and risks, each
	answered    int // answered pairs
	constraints int // constraints, whole, from the front
	rest        int // index into lastResort: how much of what the contract never cuts stays
}

// rest is the size of the sections the contract does not name in its cut
// order: the instructions, the title, the goal, the open questions, the
// first few todos and risks, the workspace's lists and, last of all, the
// current state. A brief reaches the smaller settings only when texts that
// JSON escapes to six bytes a character (control characters, <, >, &)
// fill it: the budget is absolute.
type rest struct {
	instr, title, state int // bytes
	goals, goalTitle    int // goals shown, bytes of each title (and its current step's)
	questions, open     int // open questions; todos and risks each (below the cut order's floor)
	files, subjects     int
}

// lastResort runs from the smallest setting to the full one (the last).
var lastResort = []rest{
	{instr: 60, title: 60, state: 0},
	{instr: 80, title: 60, state: 256},
	{instr: 120, title: 80, state: 512, goals: 1, goalTitle: 60, questions: 1},
	{instr: 200, title: 120, state: 1024, goals: 1, goalTitle: 80, questions: 1, open: 1, files: 3, subjects: 1},
	{instr: 300, title: 160, state: 2048, goals: 2, goalTitle: 100, questions: 2, open: 2, files: 10, subjects: 2},
	{instr: 600, title: 240, state: 2048, goals: 3, goalTitle: 120, questions: BriefOpen, open: BriefOpen, files: workspace.MaxChanges, subjects: workspace.MaxSubjects},
}

// cutOrder is CONTRACT.md §4's order of cutting, first cut first: older
// progress, then decisions from the end of their order, then open todos
// and risks beyond the first few, then answered pairs, then constraints;
// the current state only in lastResort's smallest settings.
var cutOrder = []struct {
	knob  func(*shape) *int
	floor int
}{
	{func(s *shape) *int { return &s.progress }, 0},
	{func(s *shape) *int { return &s.decisions }, 0},
	{func(s *shape) *int { return &s.open }, openFew},
	{func(s *shape) *int { return &s.answered }, 0},
	{func(s *shape) *int { return &s.constraints }, 0},
	{func(s *shape) *int { return &s.rest }, 0},
}

// How many messages the snapshot should carry per section, and how many
// bytes each item's excerpt keeps.
const (
	BriefDecisions   = 24 // of each read: by priority, corrections
	BriefCited       = 16 // decisions cited by id, read by id in one query
	BriefProgress    = 5
	BriefOpen        = 8 // todos, risks, questions: each
	BriefAnswered    = 8
	BriefConstraints = 16
	BriefGoals       = 8
	openFew          = 3 // todos and risks kept after the others are cut
	constraintBytes  = 2048
	decisionBytes    = 320
	progressBytes    = 200
	openBytes        = 240
	answeredBytes    = 240
	maxChecks        = 8
	maxActions       = 7
	maxCheckActions  = 3 // checks named by next_actions, in one action
	pathBytes        = 256
	subjectBytes     = 120
)

// BuildBrief builds the handoff brief from a snapshot. It is a pure
// function: no I/O, no clock, no randomness; the same snapshot gives the
// same bytes. The result is valid JSON of at most MaxBriefBytes.
func BuildBrief(s *Snapshot) (*Brief, []byte) {
	sc := scrub(s)
	sh := fullShape(sc)
	b, out := render(sc, sh)
	for _, step := range cutOrder {
		if len(out) <= MaxBriefBytes {
			return b, out
		}
		k := step.knob(&sh)
		hi := *k
		if hi <= step.floor {
			continue
		}
		*k = step.floor
		if b, out = render(sc, sh); len(out) > MaxBriefBytes {
			continue // all of this section is not enough: cut the next
		}
		// The most of this section that fits: a brief shrinks as a count
		// does, so the first count from the top that fits is found by
		// bisection (hi does not fit, the floor does).
		i := sort.Search(hi-step.floor, func(i int) bool {
			*k = hi - 1 - i
			_, o := render(sc, sh)
			return len(o) <= MaxBriefBytes
		})
		*k = hi - 1 - i
		b, out = render(sc, sh)
	}
	if len(out) <= MaxBriefBytes {
		return b, out
	}
	// Unreachable with the bounds above (the smallest setting is far below
	// the budget), but the contract is absolute, so say so rather than
	// exceed it.
	panic(fmt.Sprintf("handoff brief of %d bytes exceeds %d at the smallest setting", len(out), MaxBriefBytes))
}

// fullShape is the most of each section a brief shows.
func fullShape(s *scrubbed) shape {
	return shape{progress: BriefProgress, decisions: len(s.ordered), open: BriefOpen, answered: len(s.Answered),
		constraints: len(s.Guidance), rest: len(lastResort) - 1}
}

func render(s *scrubbed, sh shape) (*Brief, []byte) {
	b := build(s, sh)
	out, _ := json.Marshal(b) // cannot fail: plain structs of strings and numbers
	return b, out
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

func items(msgs []continuo.Message, bytes int) []Item {
	out := make([]Item, len(msgs))
	for i := range msgs {
		out[i] = item(&msgs[i], bytes)
	}
	return out
}

func scrubWorkspace(in *WorkspaceFacts) *WorkspaceFacts {
	if in == nil {
		return nil
	}
	w := *in
	w.Branch, w.Path = oneLine(w.Branch), oneLine(w.Path)
	w.Changes = make([]workspace.Change, len(in.Changes))
	for i, c := range in.Changes {
		w.Changes[i] = workspace.Change{Status: oneLine(c.Status), Path: oneLine(c.Path)}
	}
	if c := in.Commits; c != nil {
		cc := workspace.Commits{Count: c.Count, Subjects: make([]string, len(c.Subjects))}
		for i, subj := range c.Subjects {
			cc.Subjects[i] = oneLine(subj)
		}
		w.Commits = &cc
	}
	return &w
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

func scrubAnswered(qs []QA) []QA {
	out := make([]QA, len(qs))
	for i, q := range qs {
		q.Question = scrubMessages([]continuo.Message{q.Question})[0]
		if q.Answer != nil {
			q.Answer = &scrubMessages([]continuo.Message{*q.Answer})[0]
		}
		out[i] = q
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

// goalSection shows the first lr.goals active goals; nil when there is none.
func goalSection(s *scrubbed, lr rest) *GoalSection {
	if len(s.Goals) == 0 || lr.goals == 0 {
		return nil
	}
	out := &GoalSection{Items: []BriefGoal{}, Total: len(s.Goals)}
	for i := range s.Goals {
		if i == lr.goals {
			break
		}
		g := &s.Goals[i]
		bg := BriefGoal{GoalID: g.ID, Title: excerpt(g.Title, s.goalRedacted[i], lr.goalTitle), Revision: g.Revision}
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
				t := excerpt(st.Title, false, lr.goalTitle)
				bg.CurrentStep = &StepRef{ID: st.ID, Title: t.Excerpt, Truncated: t.Truncated}
			}
		}
		out.Items = append(out.Items, bg)
	}
	out.Returned = len(out.Items)
	out.Truncated = out.Returned < out.Total || s.GoalsMore
	return out
}

func workspaceSection(w *WorkspaceFacts, lr rest) *Workspace {
	dirty := w.Dirty
	out := &Workspace{Status: "available", Path: cut(w.Path, pathBytes), Branch: cut(w.Branch, 120), Head: w.Head, Dirty: &dirty,
		StartHead: w.StartHead}
	if w.ChangedTotal > 0 || len(w.Changes) > 0 {
		ch := &Changes{Items: []Change{}, Total: max(w.ChangedTotal, len(w.Changes))}
		for i, c := range w.Changes {
			if i == lr.files {
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
			if i == lr.subjects {
				break
			}
			sc.Subjects = append(sc.Subjects, clip(subj, subjectBytes))
		}
		out.SinceStart = sc
	}
	return out
}

// excerpt cuts an already redacted text to n bytes at a word boundary
// (clip).
func excerpt(text string, redacted bool, n int) Text {
	out := clip(text, n)
	return Text{Excerpt: out, Truncated: out != text, Redacted: redacted}
}

func item(m *continuo.Message, bytes int) Item {
	t := excerpt(m.Text, false, bytes)
	return Item{MessageID: m.ID, Excerpt: t.Excerpt, Truncated: t.Truncated, At: ts(m), Priority: priority(m.Priority), Supersedes: m.Supersedes}
}

// notes shows the first n of items (in the snapshot's order).
func notes(items []Item, total int64, n int) Notes {
	n = min(n, len(items))
	out := Notes{Items: items[:n:n], Total: total, Returned: n, Truncated: int64(n) < total}
	if out.Items == nil {
		out.Items = []Item{} // [] rather than null
	}
	return out
}

// constraints carries the first n guidance messages verbatim, in order,
// while they fit budget bytes together; only a first message longer than
// the whole budget is cut.
func constraints(msgs []continuo.Message, total int64, n, budget int) Constraints {
	out := Constraints{Items: []Constraint{}, Total: total}
	used := 0
	for i := range msgs[:min(n, len(msgs))] {
		m := &msgs[i]
		text, truncated := m.Text, false
		if used+len(text) > budget {
			if i > 0 {
				break
			}
			text = clip(text, budget)
			truncated = true
		}
		used += len(text)
		out.Items = append(out.Items, Constraint{MessageID: m.ID, Text: text, Truncated: truncated, At: ts(m), Priority: priority(m.Priority)})
	}
	out.Returned = len(out.Items)
	out.Truncated = int64(out.Returned) < total || (out.Returned > 0 && out.Items[out.Returned-1].Truncated)
	return out
}

// answers makes the answered pairs: those whose answer still holds first,
// newest first, then the others (their answer names what replaced it).
func answers(qs []QA) []Answer {
	out := make([]Answer, 0, len(qs))
	for _, inForce := range []bool{true, false} {
		for i := range qs {
			q := &qs[i]
			if q.InForce() != inForce {
				continue
			}
			it := item(&q.Question, answeredBytes)
			it.Supersedes = ""
			a := excerpt(q.text(), false, answeredBytes)
			at := AnswerText{Excerpt: a.Excerpt, Truncated: a.Truncated, ReplacedBy: q.Replaced}
			if q.Answer != nil {
				at.MessageID, at.At = q.Answer.ID, ts(q.Answer)
			} else if r := q.Question.ResolvedAt; r != nil {
				at.At = r.UTC().Format(continuo.TimeFormat)
			}
			if q.Answer == nil && q.Question.ResolvedBy != "" {
				at.MessageID = q.Question.ResolvedBy
			}
			out = append(out, Answer{Question: it, Answer: at})
		}
	}
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

// WorkingSetCall is the exact read_session_working_set call of a session:
// next_actions[0] whenever the brief cut anything the working set holds.
func WorkingSetCall(ref string) string {
	return fmt.Sprintf("read_session_working_set(session_id=%q)", ref)
}

// cutInForce reports whether the brief left out anything the working set
// holds: an instruction, the current state, a constraint, a decision, an
// answered pair, open work, a goal, a changed path or a commit subject.
// Older progress is not in force, so its cut does not count.
func cutInForce(b *Brief) bool {
	t := &b.Task
	cut := t.RootInstruction.Truncated || t.LatestInstruction != nil && t.LatestInstruction.Truncated ||
		t.CurrentState != nil && t.CurrentState.Truncated || t.Decisions.Truncated ||
		b.Constraints.Truncated || b.Answered.Truncated ||
		b.Open.Todos.Truncated || b.Open.Risks.Truncated || b.Open.Questions.Truncated ||
		b.Goal != nil && b.Goal.Truncated
	if w := b.Workspace; w != nil {
		cut = cut || w.Changes != nil && w.Changes.Truncated || w.SinceStart != nil && len(w.SinceStart.Subjects) < w.SinceStart.Count
	}
	return cut
}

// nextActions derives at most maxActions hints from fixed templates, most
// important first, each naming the exact id, check or call. Whenever the
// brief cut something in force, the first is the working-set call.
func nextActions(b *Brief) []string {
	out := []string{}
	add := func(format string, args ...any) {
		if len(out) < maxActions {
			out = append(out, fmt.Sprintf(format, args...))
		}
	}
	ref := b.Session.SessionRef
	if cutInForce(b) {
		add("%s", WorkingSetCall(ref))
	}
	if b.Session.Lifecycle == string(continuo.LifecycleClosed) {
		add("session closed: read it for context; continue in a new session (work_on_project)")
	}
	if !b.Basis.Complete {
		add("re-read before relying on it: read_session_handoff(session_id=%q) (%s)", ref, strings.Join(b.Basis.Reasons, ", "))
	}
	if q := b.Open.Questions.Items; len(q) > 0 {
		add("ask the user question %s (%d open); do not answer it yourself", q[0].MessageID, b.Open.Questions.Total)
	}
	if g := b.Goal; g != nil && (g.Returned > 1 || g.Truncated) {
		add("several active goals: list_goals(session_id=%q, lifecycle=\"active\")", ref)
	}
	if w := b.Workspace; w != nil && w.Dirty != nil && *w.Dirty {
		n := 0
		if w.Changes != nil {
			n = w.Changes.Total
		}
		add("inspect the %d uncommitted change(s) before editing: git status, git diff", n)
	}
	// The checks that need a run, worst first (failed, stale, running,
	// not_run), at most maxCheckActions.
	checks := slices.Clone(b.Validation.Checks)
	slices.SortStableFunc(checks, func(x, y CheckStatus) int { return checkRank[x.Status] - checkRank[y.Status] })
	var runs []string
	for _, cs := range checks[:min(maxCheckActions, len(checks))] {
		switch {
		case cs.Status == CheckPassed:
		case cs.Status == CheckRunning:
			runs = append(runs, fmt.Sprintf("observe_run(run_id=%q) (%s running)", cs.RunID, cs.Check))
		case b.Session.Lifecycle == string(continuo.LifecycleActive):
			runs = append(runs, fmt.Sprintf("run_validation(session_id=%q, check=%q) (%s)", ref, cs.Check, cs.Status))
		}
	}
	if len(runs) > 0 {
		add("%s", strings.Join(runs, "; "))
	}
	if ws := openWork(b); ws != "" {
		add("open work by priority: %s", ws)
	}
	if b.Task.RecentProgress.Truncated {
		add("older progress: list_session_messages(session_id=%q, kinds=[\"progress\"])", ref)
	}
	return out
}

// openWork names the first three open risks and todos by priority (risks
// first at equal priority), "" without any.
func openWork(b *Brief) string {
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
	parts := make([]string, 0, 3)
	for _, w := range ws[:min(3, len(ws))] {
		p := w.kind + " " + w.it.MessageID
		if w.it.Priority != "" {
			p += " (" + w.it.Priority + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
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
// first n by name), judged by the session's evidence against the
// checkout's current source.
func validation(p *continuo.Project, evidence []store.EvidenceRun, w *WorkspaceFacts, n int) Validation {
	names := checkNames(p.Checks)
	v := Validation{Status: CheckPassed, Checks: []CheckStatus{}, Total: len(names), Truncated: len(names) > n}
	if len(names) == 0 {
		v.Status = CheckNotRun
	}
	byCheck := map[string][]continuo.Run{}
	for _, e := range evidence {
		byCheck[e.Evidence.Check] = append(byCheck[e.Evidence.Check], e.Run)
	}
	var current *workspace.Source
	if w != nil {
		current = w.Source
	}
	for i, name := range names {
		cs := checkStatus(name, byCheck[name], current)
		if checkRank[cs.Status] < checkRank[v.Status] {
			v.Status = cs.Status
		}
		if i < n {
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
		cs.Source = briefSource(r)
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
func sourceChanged(evidence []store.EvidenceRun, w *WorkspaceFacts) *bool {
	var newest *continuo.Run
	for i := range evidence {
		r := &evidence[i].Run
		if r.EndedAt == nil || r.State != continuo.RunSucceeded && r.State != continuo.RunFailed && r.State != continuo.RunTimedOut {
			continue
		}
		if newest == nil || r.EndedAt.After(*newest.EndedAt) || r.EndedAt.Equal(*newest.EndedAt) && r.ID > newest.ID {
			newest = r
		}
	}
	if newest == nil || w == nil || w.Source == nil {
		return nil
	}
	changed := w.Source.Head != newest.SourceHead || w.Source.Tree != newest.SourceTree
	return &changed
}
