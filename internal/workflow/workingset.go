package workflow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/workspace"
)

// The working set (CONTRACT.md §4) is the whole truth still in force, and
// nothing historical: every open constraint verbatim, every decision in
// force in full, every answered question with its answer, the open
// questions, todos and risks, the active goals whole, the current state in
// full, the workspace and validation per check. Superseded decisions,
// resolved items and progress other than the current state are only
// counted. Like the brief it is a pure function of one snapshot, redacted
// before anything else; unlike the brief it cuts nothing: it is split into
// pages of at most MaxWorkingSetPage bytes.
//
// Its size follows what is in force, not the history: every read is a
// status-filtered range scan of an index (open or resolved messages of one
// kind), a lookup by id, or a counter of the session row.

// MaxWorkingSetPage bounds one page as the tool returns it, serialized:
// half of the 64 KiB CONTRACT.md §4 allows, because Codex CLI cuts the
// middle out of any tool result over 10,000 tokens (it counts 4 bytes a
// token, so about 40 KB) before its model reads it; a 32 KiB page arrives
// whole (TestRealClients reads one).
const MaxWorkingSetPage = 32 << 10

// workingPageBudget leaves room for the tool result's wrapper
// ({"working_set": …}).
const workingPageBudget = MaxWorkingSetPage - 64

// WorkingCap bounds each section the working set reads (constraints,
// decisions, answered questions, open questions, todos, risks, goals): a
// session with more in force lists the first WorkingCap and names the
// section in totals.capped.
const WorkingCap = 1000

// WorkingSet is one page of the working set. Its sections, in this order,
// hold the items on this page; totals says how many each has in all.
// Field order is fixed by this struct, so the same snapshot always gives
// the same bytes.
type WorkingSet struct {
	Version    int            `json:"version"`
	SessionID  string         `json:"session_id"`
	SessionRef string         `json:"session_ref"`
	ProjectID  string         `json:"project_id"`
	Title      string         `json:"title"`
	Lifecycle  string         `json:"lifecycle"`
	Page       int            `json:"page"` // 1, 2, …
	Totals     WorkingTotals  `json:"totals"`
	History    WorkingHistory `json:"not_in_force"`

	Task         *WorkingTask      `json:"task,omitempty"`
	CurrentState *CurrentState     `json:"current_state,omitempty"`
	Constraints  []WorkingItem     `json:"constraints,omitempty"`
	Goals        []WorkingGoal     `json:"goals,omitempty"`
	Decisions    []WorkingItem     `json:"decisions,omitempty"`
	Answered     []WorkingAnswer   `json:"answered,omitempty"`
	Questions    []WorkingItem     `json:"questions,omitempty"`
	Todos        []WorkingItem     `json:"todos,omitempty"`
	Risks        []WorkingItem     `json:"risks,omitempty"`
	Workspace    *WorkingWorkspace `json:"workspace,omitempty"`
	ChangedFiles []Change          `json:"changed_files,omitempty"`
	Commits      []string          `json:"commit_subjects,omitempty"` // since the session started, newest first
	Validation   *Validation       `json:"validation,omitempty"`

	Basis Basis `json:"basis"`
	// NextCursor continues on the next page; null on the last.
	NextCursor *string `json:"next_cursor"`
}

// WorkingTotals counts each section over every page. Capped names the
// sections that hold more than WorkingCap in force.
type WorkingTotals struct {
	Constraints  int      `json:"constraints"`
	Goals        int      `json:"goals"`
	Decisions    int      `json:"decisions"`
	Answered     int      `json:"answered"`
	Questions    int      `json:"questions"`
	Todos        int      `json:"todos"`
	Risks        int      `json:"risks"`
	ChangedFiles int      `json:"changed_files"`
	Commits      int      `json:"commit_subjects"`
	Pages        int      `json:"pages"`
	Capped       []string `json:"capped,omitempty"`
}

// WorkingHistory is what is no longer in force, only counted (from the
// session row's tallies): list_session_messages reads it.
type WorkingHistory struct {
	Messages            int64 `json:"messages"`
	SupersededDecisions int64 `json:"superseded_decisions"`
	ResolvedQuestions   int64 `json:"resolved_questions"`
	ReplacedAnswers     int   `json:"replaced_answers"` // answered, but the answer was superseded by something else
	Progress            int64 `json:"progress"`         // besides the current state
}

// WorkingTask is what the session was asked, in full.
type WorkingTask struct {
	RootInstruction   string `json:"root_instruction"`
	LatestInstruction string `json:"latest_instruction,omitempty"` // omitted while it is the root
	Instructions      int64  `json:"instructions"`
	Truncated         bool   `json:"truncated,omitempty"` // only when it alone would not fit a page
}

// WorkingItem is one message in full.
type WorkingItem struct {
	MessageID  string `json:"message_id"`
	Text       string `json:"text"`
	At         string `json:"at"`
	Priority   string `json:"priority,omitempty"` // only when not normal
	Supersedes string `json:"supersedes,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"` // only when it alone would not fit a page
}

// WorkingAnswer is an answered question whose answer holds, both in full.
type WorkingAnswer struct {
	Question WorkingItem `json:"question"`
	Answer   WorkingItem `json:"answer"` // message_id "" when the resolution is the answer
}

// WorkingGoal is an active goal, whole.
type WorkingGoal struct {
	GoalID        string              `json:"goal_id"`
	Title         string              `json:"title"`
	Revision      int64               `json:"revision"`
	Objective     string              `json:"objective"`
	Conditions    []string            `json:"completion_conditions"`
	Steps         []continuo.GoalStep `json:"steps"`
	CurrentStepID string              `json:"current_step_id,omitempty"`
	Truncated     bool                `json:"truncated,omitempty"` // only when it alone would not fit a page
}

// WorkingWorkspace is the checkout: its changed files and commit subjects
// are the sections changed_files and commit_subjects.
type WorkingWorkspace struct {
	Status        string `json:"status"` // available | unavailable
	Path          string `json:"path"`
	Branch        string `json:"branch,omitempty"`
	Head          string `json:"head,omitempty"`
	Dirty         *bool  `json:"dirty,omitempty"`
	ChangedTotal  int    `json:"changed_total"`
	StartHead     string `json:"start_head,omitempty"`
	Commits       *int   `json:"commits_since_start,omitempty"` // absent when the start head is unknown
	SourceChanged *bool  `json:"source_changed_since_evidence,omitempty"`
}

// WorkingSnapshot is everything the working set is built from, read in one
// read transaction (plus the workspace, read from git around it).
type WorkingSnapshot struct {
	Session continuo.Session
	Project continuo.Project
	State   *continuo.Message // the current state; nil without progress
	// Guidance, Questions, Todos and Risks are open, by priority then
	// newest; Decisions are in force, in any order (OrderDecisions orders
	// them). Each at most WorkingCap.
	Guidance, Decisions, Questions, Todos, Risks []continuo.Message
	// Answered are the resolved questions, newest first, at most
	// WorkingCap.
	Answered  []QA
	Goals     []continuo.Goal // active, newest first, at most WorkingCap
	Capped    []string        // sections with more than WorkingCap in force
	Evidence  []store.EvidenceRun
	Workspace *WorkspaceFacts // nil when the project has no root
	Reasons   []string
}

// ReadWorkingSet returns one page of a session's working set: the first
// without a cursor, else the page the cursor names. It is a pure read with
// the ownership and visibility rules of ReadHandoff.
func (s *Service) ReadWorkingSet(ctx context.Context, c *continuo.Caller, ref, cursor string) (*WorkingSet, error) {
	if err := c.Require(continuo.ScopeSessionsRead); err != nil {
		return nil, err
	}
	var cur workingCursor
	if cursor != "" {
		var err error
		if cur, err = parseWorkingCursor(cursor); err != nil {
			return nil, err
		}
	}
	ws, err := s.workingSnapshot(ctx, c, ref)
	if err != nil {
		return nil, err
	}
	if cursor != "" && cur.session != sessionTag(ws.Session.ID) {
		return nil, continuo.Invalid("cursor", "not a cursor of this session's working set")
	}
	return workingSetPage(ws, cur)
}

func (s *Service) workingSnapshot(ctx context.Context, c *continuo.Caller, ref string) (*WorkingSnapshot, error) {
	ws := &WorkingSnapshot{}
	err := s.store.Read(ctx, func(tx store.Tx) error {
		sess, p, err := s.resolveWithProject(ctx, tx, c, ref)
		if err != nil {
			return err
		}
		ws.Session, ws.Project = *sess, *p
		rd := reader{ctx: ctx, tx: tx, session: sess.ID}
		if ws.State, err = rd.handoff(); err != nil {
			return err
		}
		if ws.State == nil {
			p, err := rd.list(continuo.KindProgress, "", newestFirst, 1)
			if err != nil {
				return err
			}
			if len(p) > 0 {
				ws.State = &p[0]
			}
		}
		for _, sec := range []struct {
			name string
			kind continuo.Kind
			into *[]continuo.Message
		}{
			{"constraints", continuo.KindGuidance, &ws.Guidance}, {"decisions", continuo.KindDecision, &ws.Decisions},
			{"questions", continuo.KindQuestion, &ws.Questions}, {"todos", continuo.KindTodo, &ws.Todos},
			{"risks", continuo.KindRisk, &ws.Risks},
		} {
			msgs, err := rd.list(sec.kind, continuo.StatusOpen, byPriority, WorkingCap+1)
			if err != nil {
				return err
			}
			*sec.into = capped(ws, sec.name, msgs)
		}
		answered, err := rd.answered(WorkingCap + 1)
		if err != nil {
			return err
		}
		ws.Answered = capped(ws, "answered", answered)
		goals, err := tx.GoalList(ctx, store.GoalListParams{SessionID: sess.ID, Lifecycle: continuo.GoalActive, Limit: WorkingCap + 1})
		if err != nil {
			return err
		}
		ws.Goals = capped(ws, "goals", goals)
		ws.Evidence, err = tx.EvidenceLatest(ctx, sess.ID, briefEvidence)
		return err
	})
	if err != nil {
		return nil, err
	}
	ws.Workspace, ws.Reasons = s.observe(ctx, &ws.Session, &ws.Project, len(ws.Evidence) > 0,
		workspace.MaxListedChanges, workspace.MaxListedSubjects)
	reasons, err := s.recheck(ctx, &ws.Session)
	ws.Reasons = append(ws.Reasons, reasons...)
	return ws, err
}

// capped keeps the first WorkingCap of a section read with one more, and
// names the section when there were more.
func capped[T any](ws *WorkingSnapshot, name string, xs []T) []T {
	if len(xs) > WorkingCap {
		ws.Capped = append(ws.Capped, name)
		return xs[:WorkingCap]
	}
	return xs
}

// workingEntry is one piece of the working set: an item of a list section,
// or a section's one value. Pages are cut between entries.
type workingEntry struct {
	key   string // the section's JSON key
	list  bool
	value any
	raw   []byte // value's JSON
}

// workingSetPage builds the page of the working set that cur names (the
// first when zero). It is a pure function: the same snapshot and cursor
// give the same bytes. A cursor of an earlier state of the working set is
// a conflict: its pages would not fit together.
func workingSetPage(ws *WorkingSnapshot, cur workingCursor) (*WorkingSet, error) {
	entries, head := workingEntries(ws)
	tag := contentTag(ws.Session.ID, entries)
	if cur.pos > 0 || cur.page > 0 {
		if cur.content != tag {
			return nil, continuo.Errorf(continuo.CodeConflict,
				"the working set changed since the page this cursor continues: read it again without a cursor").
				With("reason", "working_set_changed")
		}
		if cur.pos > len(entries) {
			return nil, continuo.Invalid("cursor", "not a cursor of this session's working set")
		}
	}
	// Every page is cut the same way, so the number of pages is known from
	// the first.
	starts := pageStarts(head, entries)
	head.Totals.Pages = len(starts)
	page := sort.SearchInts(starts, cur.pos)
	if page == len(starts) || starts[page] != cur.pos || cur.page > 0 && cur.page != page+1 {
		return nil, continuo.Invalid("cursor", "not a cursor of this session's working set")
	}
	end := len(entries)
	if page+1 < len(starts) {
		end = starts[page+1]
	}
	out := head
	out.Page = page + 1
	for _, e := range entries[cur.pos:end] {
		put(&out, e)
	}
	if end < len(entries) {
		c := workingCursor{page: page + 2, pos: end, session: sessionTag(ws.Session.ID), content: tag}.String()
		out.NextCursor = &c
	}
	return &out, nil
}

// pageStarts cuts entries into pages of at most workingPageBudget bytes,
// serialized: the index of each page's first entry. The cost of an entry
// is what it adds to a page's JSON, so the sum over a page and its header
// (measured with the longest cursor and page number) bound the page.
func pageStarts(head WorkingSet, entries []workingEntry) []int {
	c := workingCursor{page: 1 << 30, pos: 1 << 30, session: strings.Repeat("f", 8), content: strings.Repeat("f", 12)}.String()
	head.NextCursor, head.Page, head.Totals.Pages = &c, 1<<30, 1<<30
	base, _ := json.Marshal(head)
	starts := []int{0}
	size, seen := len(base), map[string]bool{}
	for i, e := range entries {
		cost := entryCost(e, !seen[e.key])
		if size+cost > workingPageBudget && i > starts[len(starts)-1] {
			starts = append(starts, i)
			size, seen = len(base), map[string]bool{}
			cost = entryCost(e, true)
		}
		size += cost
		seen[e.key] = true
	}
	return starts
}

// entryCost is what an entry adds to a page: `,"key":value` for a section's
// one value; `,"key":[item]` for a list's first item on the page, `,item`
// for the next.
func entryCost(e workingEntry, first bool) int {
	switch {
	case !e.list:
		return len(e.raw) + len(e.key) + 4
	case first:
		return len(e.raw) + len(e.key) + 6
	}
	return len(e.raw) + 1
}

// put places an entry on a page.
func put(p *WorkingSet, e workingEntry) {
	switch v := e.value.(type) {
	case WorkingTask:
		p.Task = &v
	case CurrentState:
		p.CurrentState = &v
	case WorkingGoal:
		p.Goals = append(p.Goals, v)
	case WorkingAnswer:
		p.Answered = append(p.Answered, v)
	case WorkingWorkspace:
		p.Workspace = &v
	case Change:
		p.ChangedFiles = append(p.ChangedFiles, v)
	case string:
		p.Commits = append(p.Commits, v)
	case Validation:
		p.Validation = &v
	case WorkingItem:
		switch e.key {
		case "constraints":
			p.Constraints = append(p.Constraints, v)
		case "decisions":
			p.Decisions = append(p.Decisions, v)
		case "questions":
			p.Questions = append(p.Questions, v)
		case "todos":
			p.Todos = append(p.Todos, v)
		case "risks":
			p.Risks = append(p.Risks, v)
		}
	}
}

// workingEntries lays the working set out, redacted, in page order: the
// task, the current state, the constraints, the goals, the decisions in
// their order (OrderDecisions), the answered questions, the open
// questions, todos and risks, the workspace, its changed files and commit
// subjects, validation. It returns the page header too (identity, totals,
// what is only counted, basis).
func workingEntries(ws *WorkingSnapshot) ([]workingEntry, WorkingSet) {
	sess := &ws.Session
	c := sess.Counts
	title, _ := redact.String(sess.Title)
	head := WorkingSet{Version: 1, SessionID: sess.ID, SessionRef: continuo.SessionRef(sess.Ref), ProjectID: sess.ProjectID,
		Title: title, Lifecycle: string(sess.Lifecycle),
		History: WorkingHistory{Messages: c.Messages, SupersededDecisions: c.SupersededDecisions, ResolvedQuestions: c.ResolvedQuestions,
			Progress: c.Progress}}
	if ws.State != nil {
		head.History.Progress = max(c.Progress-1, 0)
	}
	var out []workingEntry
	add := func(key string, list bool, v any) {
		out = append(out, workingEntry{key: key, list: list, value: v})
	}

	task := WorkingTask{Instructions: sess.Instructions}
	task.RootInstruction, _ = redact.String(sess.RootInstr)
	if sess.Instructions > 1 && sess.LatestInstr != sess.RootInstr {
		task.LatestInstruction, _ = redact.String(sess.LatestInstr)
	}
	add("task", false, task)
	if st := ws.State; st != nil {
		text, _ := redact.String(st.Text)
		add("current_state", false, CurrentState{MessageID: st.ID, Text: text, Handoff: st.Handoff(), At: ts(st)})
	}
	items := func(key string, msgs []continuo.Message) int {
		for i := range msgs {
			add(key, true, workingItem(&msgs[i]))
		}
		return len(msgs)
	}
	head.Totals.Constraints = items("constraints", ws.Guidance)
	for _, g := range ws.Goals {
		g, _ = RedactGoal(g)
		add("goals", true, WorkingGoal{GoalID: g.ID, Title: g.Title, Revision: g.Revision, Objective: g.Objective,
			Conditions: g.CompletionConditions, Steps: g.Steps, CurrentStepID: g.CurrentStepID})
	}
	head.Totals.Goals = len(ws.Goals)
	open := map[continuo.Kind][]continuo.Message{continuo.KindTodo: ws.Todos, continuo.KindQuestion: ws.Questions}
	head.Totals.Decisions = items("decisions", OrderDecisions(ws.Decisions, Citations(ws.State, open, ws.Goals)))
	for i := range ws.Answered {
		q := &ws.Answered[i]
		if !q.InForce() {
			head.History.ReplacedAnswers++
			continue
		}
		qi := workingItem(&q.Question)
		qi.Supersedes = ""
		a := WorkingItem{}
		a.Text, _ = redact.String(q.text())
		if q.Answer != nil {
			a.MessageID, a.At = q.Answer.ID, ts(q.Answer)
		} else if r := q.Question.ResolvedAt; r != nil {
			a.At = r.UTC().Format(continuo.TimeFormat)
		}
		add("answered", true, WorkingAnswer{Question: qi, Answer: a})
		head.Totals.Answered++
	}
	head.Totals.Questions = items("questions", ws.Questions)
	head.Totals.Todos = items("todos", ws.Todos)
	head.Totals.Risks = items("risks", ws.Risks)
	if w := scrubWorkspace(ws.Workspace); w != nil {
		ww := WorkingWorkspace{Status: "unavailable", Path: w.Path}
		if w.Available {
			dirty := w.Dirty
			ww = WorkingWorkspace{Status: "available", Path: w.Path, Branch: w.Branch, Head: w.Head, Dirty: &dirty,
				ChangedTotal: max(w.ChangedTotal, len(w.Changes)), StartHead: w.StartHead,
				SourceChanged: sourceChanged(ws.Evidence, ws.Workspace)}
			if w.Commits != nil {
				n := w.Commits.Count
				ww.Commits = &n
			}
		}
		add("workspace", false, ww)
		for _, ch := range w.Changes {
			add("changed_files", true, Change{Path: ch.Path, Status: cut(ch.Status, 2)})
		}
		head.Totals.ChangedFiles = len(w.Changes)
		if w.Commits != nil {
			for _, subj := range w.Commits.Subjects {
				add("commit_subjects", true, subj)
			}
			head.Totals.Commits = len(w.Commits.Subjects)
		}
	}
	checks := len(ws.Project.Checks)
	add("validation", false, validation(&ws.Project, ws.Evidence, ws.Workspace, checks))

	reasons := append([]string{}, ws.Reasons...)
	if w := ws.Workspace; w != nil && (!w.Available || w.SourceUnread) {
		reasons = append(reasons, ReasonWorkspaceMissing)
	}
	sort.Strings(reasons)
	reasons = compact(reasons)
	head.Basis = Basis{Complete: len(reasons) == 0, SessionRevision: sess.Revision, Reasons: reasons}
	head.Totals.Capped = ws.Capped

	for i := range out {
		out[i].raw, _ = json.Marshal(out[i].value) // cannot fail: plain structs of strings and numbers
		if len(out[i].raw) > workingEntryBudget {
			out[i] = shrinkEntry(out[i])
		}
	}
	return out, head
}

// workingEntryBudget is the most one entry may take: what a page leaves
// beside its header. Only texts that JSON escapes to six bytes a character
// (control characters, <, >, &) come near it.
const workingEntryBudget = workingPageBudget - 4096

func workingItem(m *continuo.Message) WorkingItem {
	text, _ := redact.String(m.Text)
	return WorkingItem{MessageID: m.ID, Text: text, At: ts(m), Priority: priority(m.Priority), Supersedes: m.Supersedes}
}

// shrinkEntry cuts the texts of an entry too large for a page, halving
// until it fits, and marks it truncated.
func shrinkEntry(e workingEntry) workingEntry {
	for n := 16 << 10; n > 0; n /= 2 {
		var v any
		switch x := e.value.(type) {
		case WorkingTask:
			x.RootInstruction, x.LatestInstruction, x.Truncated = cut(x.RootInstruction, n), cut(x.LatestInstruction, n), true
			v = x
		case CurrentState:
			x.Text, x.Truncated = cut(x.Text, n), true
			v = x
		case WorkingItem:
			x.Text, x.Truncated = cut(x.Text, n), true
			v = x
		case WorkingAnswer:
			x.Question.Text, x.Answer.Text = cut(x.Question.Text, n), cut(x.Answer.Text, n)
			x.Question.Truncated, x.Answer.Truncated = true, true
			v = x
		case WorkingGoal:
			x.Title, x.Objective, x.Truncated = cut(x.Title, n), cut(x.Objective, n), true
			x.Conditions = cutAll(x.Conditions, n/8)
			steps := make([]continuo.GoalStep, len(x.Steps))
			for i, st := range x.Steps {
				st.Title = cut(st.Title, n/32)
				steps[i] = st
			}
			x.Steps = steps
			v = x
		default:
			v = x
		}
		raw, _ := json.Marshal(v)
		if len(raw) <= workingEntryBudget {
			return workingEntry{key: e.key, list: e.list, value: v, raw: raw}
		}
	}
	panic(fmt.Sprintf("working set: an entry of section %s does not fit a page", e.key))
}

func cutAll(ss []string, n int) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = cut(s, n)
	}
	return out
}

// workingCursor names a page: its number (2, 3, …), its first entry, the session,
// and a digest of every entry of the working set it was cut from, so that
// pages of two different states are never mixed.
type workingCursor struct {
	page, pos        int
	session, content string
}

// String is "w" + page + "." + position (base 36) + "." + session tag +
// "." + content tag.
func (c workingCursor) String() string {
	return "w" + strconv.FormatInt(int64(c.page), 36) + "." + strconv.FormatInt(int64(c.pos), 36) + "." + c.session + "." + c.content
}

func parseWorkingCursor(s string) (workingCursor, error) {
	bad := continuo.Invalid("cursor", "not a cursor of this session's working set")
	body, ok := strings.CutPrefix(s, "w")
	parts := strings.Split(body, ".")
	if !ok || len(parts) != 4 || len(parts[2]) != 8 || len(parts[3]) != 12 {
		return workingCursor{}, bad
	}
	page, err1 := strconv.ParseInt(parts[0], 36, 32)
	pos, err2 := strconv.ParseInt(parts[1], 36, 32)
	if err1 != nil || err2 != nil || page <= 0 || pos <= 0 {
		return workingCursor{}, bad
	}
	c := workingCursor{page: int(page), pos: int(pos), session: parts[2], content: parts[3]}
	if c.String() != s {
		return workingCursor{}, bad // not canonical: not one of ours
	}
	return c, nil
}

func sessionTag(id string) string {
	h := sha256.Sum256([]byte("working-set/session\x00" + id))
	return hex.EncodeToString(h[:4])
}

// contentTag digests every entry of a working set: two states give two
// tags (but for a collision of 48 bits).
func contentTag(sessionID string, entries []workingEntry) string {
	h := sha256.New()
	h.Write([]byte("working-set/content\x00" + sessionID))
	for _, e := range entries {
		h.Write([]byte{0})
		h.Write([]byte(e.key))
		h.Write([]byte{0})
		h.Write(e.raw)
	}
	return hex.EncodeToString(h.Sum(nil)[:6])
}
