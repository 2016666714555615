package workflow

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
)

// MaxBriefBytes bounds the serialized handoff brief (CONTRACT.md §4).
const MaxBriefBytes = 8192

// Brief is the handoff brief. Field order is fixed by this struct, so the
// same snapshot always serializes to the same bytes.
type Brief struct {
	Version       int          `json:"version"`
	Session       BriefSession `json:"session"`
	Task          Task         `json:"task"`
	Open          Open         `json:"open"`
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

// Task is what the session is about and what was decided and done.
type Task struct {
	RootInstruction   Text  `json:"root_instruction"`
	LatestInstruction Text  `json:"latest_instruction"`
	Instructions      int64 `json:"instructions"`
	Decisions         Notes `json:"decisions"`
	RecentProgress    Notes `json:"recent_progress"`
}

// Notes is a newest-first selection of messages with its coverage.
type Notes struct {
	Items     []Item `json:"items"`
	Total     int64  `json:"total"`
	Returned  int    `json:"returned"`
	Truncated bool   `json:"truncated"`
}

// Item is one message in the brief.
type Item struct {
	MessageID    string `json:"message_id"`
	Excerpt      string `json:"excerpt"`
	Truncated    bool   `json:"truncated,omitempty"`
	Status       string `json:"status"`
	SupersededBy string `json:"superseded_by,omitempty"`
	Priority     string `json:"priority,omitempty"` // only when not normal
	At           string `json:"at"`
}

// Open is the open work of the session.
type Open struct {
	Todos     Notes `json:"todos"`
	Risks     Notes `json:"risks"`
	Questions Notes `json:"questions"`
	Guidance  Notes `json:"guidance"`
}

// Validation is the evidence section. Evidence arrives with validation runs;
// until a check has run, its status is not_run.
type Validation struct {
	Status    string        `json:"status"`
	Checks    []CheckStatus `json:"checks"`
	Total     int           `json:"total"`
	Truncated bool          `json:"truncated"`
}

// CheckStatus is the newest evidence of one named check.
type CheckStatus struct {
	Check  string `json:"check"`
	Status string `json:"status"`
}

// Workspace describes the project's checkout.
type Workspace struct {
	Status string `json:"status"` // available | unavailable
	Branch string `json:"branch,omitempty"`
	Head   string `json:"head,omitempty"`
	Dirty  *bool  `json:"dirty,omitempty"`
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
	Session   continuo.Session
	Project   continuo.Project
	Decisions []continuo.Message // newest first; at most briefLevels[0].notes
	Progress  []continuo.Message // newest first
	Open      map[continuo.Kind][]continuo.Message
	Workspace *WorkspaceFacts // nil when the project has no root
	Reasons   []string
}

// WorkspaceFacts is what git said about the checkout.
type WorkspaceFacts struct {
	Available bool
	Branch    string
	Head      string
	Dirty     bool
}

// level is one setting of the brief's per-section budgets. BuildBrief tries
// them in order and keeps the first that fits MaxBriefBytes, so cutting is
// deterministic: fewer and shorter items, oldest dropped first.
type level struct {
	notes, noteBytes int // decisions and progress
	open, openBytes  int // per open kind
	instr, title     int
}

var briefLevels = []level{
	{8, 480, 3, 240, 600, 240},
	{6, 400, 3, 200, 600, 240},
	{5, 300, 2, 160, 500, 200},
	{4, 240, 2, 120, 400, 160},
	{3, 160, 1, 100, 300, 120},
	{2, 120, 1, 80, 200, 100},
	{1, 80, 0, 0, 120, 80},
	{0, 0, 0, 0, 60, 60},
}

// BriefNotes and BriefOpen are how many messages the snapshot should carry.
const (
	BriefNotes = 8
	BriefOpen  = 3
	maxChecks  = 8
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
	title, root, latest bool // whether redaction changed them
}

func scrub(s *Snapshot) *scrubbed {
	sc := &scrubbed{Snapshot: *s}
	ss := &sc.Session
	ss.Title, sc.title = redact.String(ss.Title)
	ss.RootInstr, sc.root = redact.String(ss.RootInstr)
	ss.LatestInstr, sc.latest = redact.String(ss.LatestInstr)
	ss.WorktreeBranch = oneLine(ss.WorktreeBranch)
	if s.Workspace != nil {
		w := *s.Workspace
		w.Branch = oneLine(w.Branch)
		sc.Workspace = &w
	}
	sc.Decisions = scrubMessages(s.Decisions)
	sc.Progress = scrubMessages(s.Progress)
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
		out[i] = m
	}
	return out
}

// oneLine redacts a short single-line value (a branch name). Control
// characters go first, so that removing them cannot assemble a secret
// after redaction has looked.
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

func build(s *scrubbed, lv level) *Brief {
	sess := &s.Session
	b := &Brief{Version: 1, Deterministic: true}
	b.Session = BriefSession{SessionID: sess.ID, SessionRef: continuo.SessionRef(sess.Ref), ProjectID: sess.ProjectID,
		Title: excerpt(sess.Title, s.title, lv.title), Lifecycle: string(sess.Lifecycle), Mode: string(sess.Mode),
		WorktreeBranch: cut(sess.WorktreeBranch, 120)}
	b.Task = Task{RootInstruction: excerpt(sess.RootInstr, s.root, lv.instr), LatestInstruction: excerpt(sess.LatestInstr, s.latest, lv.instr),
		Instructions:   sess.Instructions,
		Decisions:      notes(s.Decisions, sess.Counts.Decisions, lv.notes, lv.noteBytes),
		RecentProgress: notes(s.Progress, sess.Counts.Progress, lv.notes, lv.noteBytes)}
	c := sess.Counts
	b.Open = Open{
		Todos:     notes(s.Open[continuo.KindTodo], c.OpenTodos, lv.open, lv.openBytes),
		Risks:     notes(s.Open[continuo.KindRisk], c.OpenRisks, lv.open, lv.openBytes),
		Questions: notes(s.Open[continuo.KindQuestion], c.OpenQuestions, lv.open, lv.openBytes),
		Guidance:  notes(s.Open[continuo.KindGuidance], c.OpenGuidance, lv.open, lv.openBytes),
	}
	names := checkNames(s.Project.Checks)
	b.Validation = Validation{Status: "not_run", Checks: []CheckStatus{}, Total: len(names), Truncated: len(names) > maxChecks}
	for i, n := range names {
		if i == maxChecks {
			break
		}
		b.Validation.Checks = append(b.Validation.Checks, CheckStatus{Check: n, Status: "not_run"})
	}
	reasons := append([]string{}, s.Reasons...) // [] rather than null when complete
	if w := s.Workspace; w != nil {
		if w.Available {
			dirty := w.Dirty
			b.Workspace = &Workspace{Status: "available", Branch: cut(w.Branch, 120), Head: w.Head, Dirty: &dirty}
		} else {
			b.Workspace = &Workspace{Status: "unavailable"}
			reasons = append(reasons, ReasonWorkspaceMissing)
		}
	}
	sort.Strings(reasons)
	reasons = compact(reasons)
	b.Basis = Basis{Complete: len(reasons) == 0, SessionRevision: sess.Revision, Reasons: reasons}
	b.NextActions = nextActions(b)
	return b
}

// excerpt cuts an already redacted text to n bytes.
func excerpt(text string, redacted bool, n int) Text {
	out := cut(text, n)
	return Text{Excerpt: out, Truncated: len(out) < len(text), Redacted: redacted}
}

// notes selects the first n of msgs (newest first, already redacted).
func notes(msgs []continuo.Message, total int64, n, bytes int) Notes {
	out := Notes{Items: []Item{}, Total: total}
	for i := range msgs {
		if i == n {
			break
		}
		m := &msgs[i]
		t := excerpt(m.Text, false, bytes)
		it := Item{MessageID: m.ID, Excerpt: t.Excerpt, Truncated: t.Truncated, Status: string(m.Status),
			SupersededBy: m.SupersededBy, At: m.CreatedAt.UTC().Format(continuo.TimeFormat)}
		if m.Priority != continuo.PriorityNormal {
			it.Priority = string(m.Priority)
		}
		out.Items = append(out.Items, it)
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

// nextActions derives at most five hints from fixed templates.
func nextActions(b *Brief) []string {
	var out []string
	add := func(format string, args ...any) {
		if len(out) < 5 {
			out = append(out, fmt.Sprintf(format, args...))
		}
	}
	if b.Session.Lifecycle == string(continuo.LifecycleClosed) {
		add("session is closed: read it for context, and start a new session to continue the work")
	}
	if !b.Basis.Complete {
		add("re-read the handoff before relying on it: %s", strings.Join(b.Basis.Reasons, ", "))
	}
	if n := b.Open.Questions.Total; n > 0 {
		add("answer %d open question(s)", n)
	}
	if n := b.Open.Risks.Total; n > 0 {
		add("review %d open risk(s)", n)
	}
	if n := b.Open.Guidance.Total; n > 0 {
		add("follow %d open guidance message(s)", n)
	}
	if n := b.Open.Todos.Total; n > 0 {
		add("work through %d open todo(s)", n)
	}
	if w := b.Workspace; w != nil && w.Dirty != nil && *w.Dirty {
		add("the checkout has uncommitted changes: inspect them before editing")
	}
	if out == nil {
		out = []string{}
	}
	return out
}
