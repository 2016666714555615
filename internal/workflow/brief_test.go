package workflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/workspace"
)

var briefBase = time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)

func testMsg(n int, kind continuo.Kind, status continuo.Status, text string) continuo.Message {
	return continuo.Message{ID: fmt.Sprintf("msg_%026d", n), SessionID: "ses_00000000000000000000000001", Seq: int64(n),
		Kind: kind, Text: text, Status: status, Priority: continuo.PriorityNormal, CreatedAt: briefBase.Add(time.Duration(n) * time.Minute)}
}

// newest returns n messages of kind, newest first (as the snapshot has them).
func newest(start, n int, kind continuo.Kind, status continuo.Status, text func(i int) string) []continuo.Message {
	out := make([]continuo.Message, 0, n)
	for i := n - 1; i >= 0; i-- {
		out = append(out, testMsg(start+i, kind, status, text(i)))
	}
	return out
}

// answeredBy returns n answered questions, newest first, each resolved by
// an answer message (in force) whose text is text(i).
func answeredBy(start, n int, text func(i int) string) []QA {
	qs := newest(start, n, continuo.KindQuestion, continuo.StatusResolved, func(i int) string { return fmt.Sprint("question ", i) })
	out := make([]QA, len(qs))
	for i, q := range qs {
		a := testMsg(start+500+n-1-i, continuo.KindAnswer, continuo.StatusOpen, text(n-1-i))
		a.ReplyTo = q.ID
		q.Resolution, q.ResolvedBy, q.ResolvedAt = cut(a.Text, 2000), a.ID, &a.CreatedAt
		out[i] = QA{Question: q, Answer: &a}
	}
	return out
}

func testSnapshot() *Snapshot {
	s := &Snapshot{
		Session: continuo.Session{ID: "ses_00000000000000000000000001", Ref: 3, GroupID: "grp_1", ProjectID: "prj_00000000000000000000000001",
			Title: "Port the parser", Lifecycle: continuo.LifecycleActive, Mode: continuo.ModeCheckout,
			RootInstr: "Port the parser to the new AST.", LatestInstr: "Now fix the failing tests.", Instructions: 2, Revision: 7,
			Counts:    continuo.Counts{Decisions: 2, Progress: 1, OpenTodos: 1, OpenRisks: 0, OpenQuestions: 1, Messages: 5},
			CreatedAt: briefBase, UpdatedAt: briefBase.Add(time.Hour)},
		Project: continuo.Project{ID: "prj_00000000000000000000000001", Name: "parser",
			Checks: map[string]continuo.Check{"test": {Command: []string{"go", "test", "./..."}}, "lint": {Command: []string{"golangci-lint", "run"}}, "vet": {Command: []string{"go", "vet", "./..."}}}},
		Decisions: newest(10, 2, continuo.KindDecision, continuo.StatusOpen, func(i int) string { return fmt.Sprintf("decision %d", i) }),
		Progress:  newest(20, 1, continuo.KindProgress, continuo.StatusOpen, func(i int) string { return "parsed expressions" }),
		Open: map[continuo.Kind][]continuo.Message{
			continuo.KindTodo:     newest(30, 1, continuo.KindTodo, continuo.StatusOpen, func(int) string { return "handle generics" }),
			continuo.KindQuestion: newest(40, 1, continuo.KindQuestion, continuo.StatusOpen, func(int) string { return "keep the old API?" }),
		},
	}
	return s
}

func decodeBrief(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	if !json.Valid(raw) {
		t.Fatalf("brief is not valid JSON: %s", raw)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func at(m any, path ...string) any {
	for _, p := range path {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil
		}
		m = mm[p]
	}
	return m
}

func TestBuildBriefBasic(t *testing.T) {
	s := testSnapshot()
	b, raw := BuildBrief(s)
	m := decodeBrief(t, raw)
	if at(m, "session", "session_ref") != "~s3" || at(m, "session", "title", "excerpt") != "Port the parser" ||
		at(m, "session", "lifecycle") != "active" || at(m, "session", "mode") != "checkout" {
		t.Fatalf("session = %v", m["session"])
	}
	if at(m, "task", "root_instruction", "excerpt") != "Port the parser to the new AST." ||
		at(m, "task", "latest_instruction", "excerpt") != "Now fix the failing tests." {
		t.Fatalf("task = %v", m["task"])
	}
	dec := b.Task.Decisions
	if dec.Total != 2 || dec.Returned != 2 || dec.Truncated || dec.Items[0].Excerpt != "decision 1" {
		t.Fatalf("decisions = %+v (newest first)", dec)
	}
	if b.Open.Todos.Total != 1 || b.Open.Risks.Total != 0 || len(b.Open.Risks.Items) != 0 {
		t.Fatalf("open = %+v", b.Open)
	}
	if at(m, "open", "risks", "items") == nil {
		t.Fatal("empty items serialize as null, want []")
	}
	if b.Validation.Status != "not_run" || b.Validation.Total != 3 || len(b.Validation.Checks) != 3 ||
		b.Validation.Checks[0].Check != "lint" || b.Validation.Checks[2].Check != "vet" {
		t.Fatalf("validation = %+v", b.Validation)
	}
	if !b.Basis.Complete || b.Basis.SessionRevision != 7 || len(b.Basis.Reasons) != 0 {
		t.Fatalf("basis = %+v", b.Basis)
	}
	if r, ok := at(m, "basis", "reasons").([]any); !ok || len(r) != 0 {
		t.Fatalf("basis.reasons = %#v, want []", at(m, "basis", "reasons"))
	}
	if b.Workspace != nil || m["workspace"] != nil {
		t.Fatal("workspace shown for a project without a root")
	}
	if !b.Deterministic || b.Version != 3 {
		t.Fatalf("version/deterministic = %d/%v", b.Version, b.Deterministic)
	}
	q, todo := s.Open[continuo.KindQuestion][0].ID, s.Open[continuo.KindTodo][0].ID
	if !slices.Contains(b.NextActions, "ask the user question "+q+" (1 open); do not answer it yourself") ||
		!slices.Contains(b.NextActions, "open work by priority: todo "+todo) {
		t.Fatalf("next_actions = %v", b.NextActions)
	}
	// The returned struct and the bytes agree.
	again, _ := json.Marshal(b)
	if !bytes.Equal(again, raw) {
		t.Fatal("the bytes are not the serialization of the returned brief")
	}
}

func TestBuildBriefDeterministic(t *testing.T) {
	s := heavySnapshot()
	_, first := BuildBrief(s)
	for i := 0; i < 3; i++ {
		// A fresh but equal snapshot (new map, new check map order).
		s2 := heavySnapshot()
		if _, raw := BuildBrief(s2); !bytes.Equal(raw, first) {
			t.Fatalf("build %d differs:\n%s\n%s", i, raw, first)
		}
		if _, raw := BuildBrief(s); !bytes.Equal(raw, first) {
			t.Fatalf("rebuild %d differs", i)
		}
	}
	// Building does not modify the snapshot.
	s.Reasons = []string{"b", "a", "b"}
	BuildBrief(s)
	if !slices.Equal(s.Reasons, []string{"b", "a", "b"}) {
		t.Fatalf("BuildBrief modified the snapshot's reasons: %v", s.Reasons)
	}
}

// nasty is text that expands when JSON-escaped (<, >, & and control
// characters become six bytes each) plus quotes and backslashes.
func nasty(n int) string {
	const unit = "<>&\"\\\x01\x1f\x7f\u2028\n\t"
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(unit)
	}
	return b.String()[:n]
}

func heavySnapshot() *Snapshot {
	s := testSnapshot()
	big := func(i int) string { return nasty(8000 - i) }
	s.Session.Title = nasty(240)
	s.Session.RootInstr = nasty(16384)
	s.Session.LatestInstr = nasty(16000)
	s.Session.WorktreeBranch = nasty(500)
	s.Session.Mode = continuo.ModeWorktree
	s.Session.Counts = continuo.Counts{Decisions: 5000, Progress: 4000, OpenTodos: 300, OpenRisks: 20, OpenQuestions: 7, OpenGuidance: 3, Messages: 9400,
		SupersededDecisions: 100, ResolvedQuestions: 9}
	s.Decisions = newest(100, BriefDecisions, continuo.KindDecision, continuo.StatusOpen, big)
	s.Progress = newest(200, BriefProgress+1, continuo.KindProgress, continuo.StatusOpen, big)
	s.Open = map[continuo.Kind][]continuo.Message{}
	for k, kind := range []continuo.Kind{continuo.KindTodo, continuo.KindRisk, continuo.KindQuestion} {
		s.Open[kind] = newest(300+100*k, 3, kind, continuo.StatusOpen, big)
	}
	s.Guidance = newest(700, 3, continuo.KindGuidance, continuo.StatusOpen, big)
	s.Answered = answeredBy(800, 3, big)
	h := testMsg(900, continuo.KindProgress, continuo.StatusOpen, big(0))
	h.Tags = []string{continuo.HandoffTag}
	s.Handoff = &h
	changes := make([]workspace.Change, 20)
	for i := range changes {
		changes[i] = workspace.Change{Status: ".M", Path: nasty(300)}
	}
	subjects := []string{nasty(300), nasty(300), nasty(300)}
	checks := map[string]continuo.Check{}
	for i := 0; i < 32; i++ {
		checks[fmt.Sprintf("check-%02d-%s", i, strings.Repeat("x", 50))] = continuo.Check{Command: []string{"true"}}
	}
	s.Project.Checks = checks
	s.Project.Root = "/srv/parser"
	s.Workspace = &WorkspaceFacts{Available: true, Path: nasty(600), Branch: nasty(300), Head: strings.Repeat("f", 40), Dirty: true,
		Changes: changes, ChangedTotal: 100000, StartHead: strings.Repeat("e", 40), Commits: &workspace.Commits{Count: 9999, Subjects: subjects}}
	return s
}

func TestBuildBriefBudget(t *testing.T) {
	s := heavySnapshot()
	b, raw := BuildBrief(s)
	if len(raw) > MaxBriefBytes {
		t.Fatalf("brief is %d bytes, over %d", len(raw), MaxBriefBytes)
	}
	m := decodeBrief(t, raw)
	// Coverage counts stay true while items are cut.
	for _, sec := range []struct {
		name  string
		notes Notes
		total int64
	}{
		{"decisions", Notes{b.Task.Decisions.Items, b.Task.Decisions.Total, b.Task.Decisions.Returned, b.Task.Decisions.Truncated}, 4900},
		{"recent_progress", b.Task.RecentProgress, 4000 - 1},
		{"todos", b.Open.Todos, 300}, {"risks", b.Open.Risks, 20}, {"questions", b.Open.Questions.Notes, 7},
	} {
		n := sec.notes
		if n.Total != sec.total || n.Returned != len(n.Items) || !n.Truncated {
			t.Errorf("%s: total=%d returned=%d items=%d truncated=%v, want total %d and truncated", sec.name,
				n.Total, n.Returned, len(n.Items), n.Truncated, sec.total)
		}
		for _, it := range n.Items {
			if !it.Truncated {
				t.Errorf("%s: an 8000-byte note is not marked truncated", sec.name)
			}
		}
	}
	if c := b.Constraints; c.Total != 3 || !c.Truncated || c.Returned != len(c.Items) {
		t.Errorf("constraints = %+v", c)
	}
	if !b.Task.RootInstruction.Truncated || !b.Task.LatestInstruction.Truncated || !b.Session.Title.Truncated {
		t.Error("long instructions/title not marked truncated")
	}
	if b.Validation.Total != 32 || len(b.Validation.Checks) != 8 || !b.Validation.Truncated {
		t.Errorf("validation = total %d checks %d truncated %v", b.Validation.Total, len(b.Validation.Checks), b.Validation.Truncated)
	}
	if len(b.NextActions) > maxActions {
		t.Errorf("%d next actions", len(b.NextActions))
	}
	// The branch is one clean line.
	if br := b.Session.WorktreeBranch; strings.ContainsAny(br, "\n\t\x01\x1f\x7f") || len(br) > 120 {
		t.Errorf("worktree branch not cleaned: %q", br)
	}
	if br := b.Workspace.Branch; strings.ContainsAny(br, "\n\t\x01\x1f\x7f") || len(br) > 120 {
		t.Errorf("workspace branch not cleaned: %q", br)
	}
	if at(m, "workspace", "head") != strings.Repeat("f", 40) {
		t.Errorf("workspace head = %v", at(m, "workspace", "head"))
	}

	// The budget is kept whatever the mix: only decisions, only open work,
	// only long instructions.
	for name, mod := range map[string]func(*Snapshot){
		"no notes": func(s *Snapshot) {
			s.Decisions, s.Progress, s.Open, s.Guidance, s.Answered, s.Handoff = nil, nil, nil, nil, nil, nil
		},
		"no open":   func(s *Snapshot) { s.Open = nil },
		"no checks": func(s *Snapshot) { s.Project.Checks = nil },
		"plain text": func(s *Snapshot) {
			s.Decisions = newest(1, 8, continuo.KindDecision, continuo.StatusOpen, func(int) string { return strings.Repeat("a", 8000) })
		},
		"multibyte": func(s *Snapshot) {
			s.Progress = newest(1, 8, continuo.KindProgress, continuo.StatusOpen, func(int) string { return strings.Repeat("€", 2666) })
		},
		"invalid utf8": func(s *Snapshot) {
			s.Decisions = newest(1, 8, continuo.KindDecision, continuo.StatusOpen, func(int) string { return strings.Repeat("\xff", 8000) })
		},
	} {
		s := heavySnapshot()
		mod(s)
		_, raw := BuildBrief(s)
		if len(raw) > MaxBriefBytes || !json.Valid(raw) {
			t.Errorf("%s: %d bytes, valid=%v", name, len(raw), json.Valid(raw))
		}
	}
}

func TestBuildBriefCoverage(t *testing.T) {
	s := testSnapshot()
	// 20 decisions are in force; the snapshot carries the newest 8.
	s.Session.Counts.Decisions = 20
	s.Decisions = newest(100, 8, continuo.KindDecision, continuo.StatusOpen, func(i int) string { return fmt.Sprintf("d%d", i) })
	// 5 open todos; the snapshot carries 3.
	s.Session.Counts.OpenTodos = 5
	s.Open[continuo.KindTodo] = newest(200, 3, continuo.KindTodo, continuo.StatusOpen, func(i int) string { return fmt.Sprintf("t%d", i) })
	b, _ := BuildBrief(s)
	d := b.Task.Decisions
	if d.Total != 20 || d.Returned != 8 || !d.Truncated || len(d.Items) != 8 {
		t.Fatalf("decisions = total %d returned %d truncated %v", d.Total, d.Returned, d.Truncated)
	}
	if d.Items[0].Excerpt != "d7" || d.Items[7].Excerpt != "d0" {
		t.Fatalf("decisions not newest first: %q … %q", d.Items[0].Excerpt, d.Items[7].Excerpt)
	}
	td := b.Open.Todos
	if td.Total != 5 || td.Returned != 3 || !td.Truncated {
		t.Fatalf("todos = %+v", td)
	}
	// The only progress note is the current state, not recent progress too.
	p := b.Task.RecentProgress
	if p.Total != 0 || p.Returned != 0 || p.Truncated || b.Task.CurrentState == nil || b.Task.CurrentState.Handoff {
		t.Fatalf("progress = %+v, current state %+v", p, b.Task.CurrentState)
	}
	if c := b.Constraints; c.Total != 0 || c.Returned != 0 || c.Truncated {
		t.Fatalf("constraints = %+v", c)
	}
	// Timestamps are UTC with milliseconds.
	if got := d.Items[7].At; got != "2030-05-06T08:48:09.000Z" {
		t.Fatalf("at = %q", got)
	}
}

func TestBuildBriefSuperseded(t *testing.T) {
	s := testSnapshot()
	old := fmt.Sprintf("msg_%026d", 10)
	newer := testMsg(11, continuo.KindDecision, continuo.StatusOpen, "use CBOR")
	newer.Supersedes = old
	newer.Priority = continuo.PriorityHigh
	s.Decisions = []continuo.Message{newer}
	s.Session.Counts.Decisions, s.Session.Counts.SupersededDecisions = 2, 1
	b, raw := BuildBrief(s)
	d := b.Task.Decisions
	if len(d.Items) != 1 || d.Total != 1 || d.Superseded != 1 || d.Truncated {
		t.Fatalf("decisions = %+v, want the one in force, one superseded counted", d)
	}
	if it := d.Items[0]; it.Supersedes != old || it.Priority != "high" {
		t.Fatalf("item = %+v", it)
	}
	if !strings.Contains(string(raw), `"supersedes":"`+old+`"`) {
		t.Fatalf("supersedes missing from the bytes: %s", raw)
	}
	for _, noise := range []string{`"priority":"normal"`, `"status":"open"`, `"superseded_by"`} {
		if strings.Contains(string(raw), noise) {
			t.Fatalf("%s is shown: %s", noise, raw)
		}
	}
}

// Secrets planted in every text a brief shows.
var plantedSecrets = []string{
	"sk-" + "Zq8RtY2uIo4pAs6dFg0hJk1L",
	"cto_pat_" + "abcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqrstu",
	"Bearer " + "eyJhbGciOiJIUzI1NiJ9abcdef0123456789",
	"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7xq9hZ1bQ3m\nw8Tz0PEMBODYLINE\n-----END RSA PRIVATE KEY-----",
}

// secretCores are the parts of plantedSecrets that must never appear.
var secretCores = []string{"Zq8RtY2uIo4pAs6dFg0hJk1L", "abcdefghijklmnopqrstuvwxyz234567", "eyJhbGciOiJIUzI1NiJ9abcdef0123456789",
	"MIIEowIBAAKCAQEA7xq9hZ1bQ3m", "w8Tz0PEMBODYLINE"}

func TestBuildBriefRedaction(t *testing.T) {
	for i, secret := range plantedSecrets {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			s := testSnapshot()
			s.Session.Title = "deploy with " + secret
			s.Session.RootInstr = "use " + secret + " to log in"
			s.Session.LatestInstr = "the key is " + secret
			s.Session.Mode = continuo.ModeWorktree
			s.Session.WorktreeBranch = "continuo/" + secret
			s.Project.Root = "/srv/p"
			s.Workspace = &WorkspaceFacts{Available: true, Branch: "feature/" + secret, Head: "abc"}
			text := func(int) string { return "note: " + secret + " end" }
			s.Decisions = newest(1, 2, continuo.KindDecision, continuo.StatusOpen, text)
			s.Progress = newest(10, 2, continuo.KindProgress, continuo.StatusOpen, text)
			for k, kind := range []continuo.Kind{continuo.KindTodo, continuo.KindRisk, continuo.KindQuestion} {
				s.Open[kind] = newest(20+10*k, 2, kind, continuo.StatusOpen, text)
			}
			s.Guidance = newest(60, 2, continuo.KindGuidance, continuo.StatusOpen, text)
			s.Answered = answeredBy(70, 2, text)
			s.Answered[1].Answer = nil // resolved by resolve_session_message: the resolution is the answer
			s.Answered[1].Question.Resolution = text(0)
			h := testMsg(80, continuo.KindProgress, continuo.StatusOpen, text(0))
			s.Handoff = &h
			s.Workspace.Path = "/srv/" + secret
			s.Workspace.Changes = []workspace.Change{{Status: "??", Path: "env-" + secret}}
			s.Workspace.Commits = &workspace.Commits{Count: 1, Subjects: []string{"add " + secret}}
			b, raw := BuildBrief(s)
			out := string(raw)
			for _, core := range secretCores {
				if strings.Contains(out, core) {
					t.Fatalf("secret %q survives in the brief: %s", core, out)
				}
			}
			if !strings.Contains(out, "[redacted]") {
				t.Fatalf("no placeholder: %s", out)
			}
			if !b.Session.Title.Redacted || !b.Task.RootInstruction.Redacted || !b.Task.LatestInstruction.Redacted {
				t.Fatalf("redacted flags: title %v root %v latest %v", b.Session.Title.Redacted,
					b.Task.RootInstruction.Redacted, b.Task.LatestInstruction.Redacted)
			}
			if !strings.HasPrefix(b.Session.Title.Excerpt, "deploy with ") {
				t.Fatalf("title lost its prose: %q", b.Session.Title.Excerpt)
			}
			if !strings.HasPrefix(b.Session.WorktreeBranch, "continuo/") {
				t.Fatalf("branch = %q", b.Session.WorktreeBranch)
			}
		})
	}
	// Plain text is not marked redacted.
	b, _ := BuildBrief(testSnapshot())
	if b.Session.Title.Redacted || b.Task.RootInstruction.Redacted {
		t.Fatal("plain text marked redacted")
	}
}

// A secret right at a cut point is redacted before it is cut, so no prefix
// of it survives.
func TestBuildBriefRedactsBeforeCutting(t *testing.T) {
	secret := "sk-" + strings.Repeat("A1b2C3d4", 8)
	s := testSnapshot()
	s.Session.RootInstr = strings.Repeat("x", 590) + secret // the cut (600) falls inside the secret
	b, raw := BuildBrief(s)
	if strings.Contains(string(raw), "A1b2C3d4") {
		t.Fatalf("part of the secret survives: %q", b.Task.RootInstruction.Excerpt)
	}
	if !b.Task.RootInstruction.Redacted {
		t.Fatal("not marked redacted")
	}
}

func TestBuildBriefBasis(t *testing.T) {
	s := testSnapshot()
	s.Reasons = []string{ReasonSessionChanged, ReasonExternalChanged, ReasonSessionChanged}
	b, raw := BuildBrief(s)
	want := []string{ReasonExternalChanged, ReasonSessionChanged}
	if b.Basis.Complete || !slices.Equal(b.Basis.Reasons, want) {
		t.Fatalf("basis = %+v, want incomplete with %v", b.Basis, want)
	}
	if b.NextActions[0] != `re-read before relying on it: read_session_handoff(session_id="~s3") (external_observations_changed_during_snapshot, session_changed_during_snapshot)` {
		t.Fatalf("next_actions = %v", b.NextActions)
	}
	decodeBrief(t, raw)

	t.Run("workspace unavailable", func(t *testing.T) {
		s := testSnapshot()
		s.Project.Root = "/srv/gone"
		s.Workspace = &WorkspaceFacts{Available: false}
		b, raw := BuildBrief(s)
		if b.Basis.Complete || !slices.Equal(b.Basis.Reasons, []string{ReasonWorkspaceMissing}) {
			t.Fatalf("basis = %+v", b.Basis)
		}
		if b.Workspace == nil || b.Workspace.Status != "unavailable" || b.Workspace.Dirty != nil {
			t.Fatalf("workspace = %+v", b.Workspace)
		}
		if at(decodeBrief(t, raw), "workspace", "status") != "unavailable" {
			t.Fatal("workspace status missing from the bytes")
		}
	})
	t.Run("workspace unavailable and session changed", func(t *testing.T) {
		s := testSnapshot()
		s.Workspace = &WorkspaceFacts{}
		s.Reasons = []string{ReasonWorkspaceMissing, ReasonSessionChanged}
		b, _ := BuildBrief(s)
		if want := []string{ReasonSessionChanged, ReasonWorkspaceMissing}; !slices.Equal(b.Basis.Reasons, want) {
			t.Fatalf("reasons = %v, want %v (sorted, unique)", b.Basis.Reasons, want)
		}
	})
	t.Run("workspace available", func(t *testing.T) {
		s := testSnapshot()
		s.Workspace = &WorkspaceFacts{Available: true, Branch: "main", Head: "0123abcd", Dirty: false}
		b, raw := BuildBrief(s)
		if !b.Basis.Complete || b.Workspace.Status != "available" || b.Workspace.Dirty == nil || *b.Workspace.Dirty {
			t.Fatalf("basis %+v workspace %+v", b.Basis, b.Workspace)
		}
		if at(decodeBrief(t, raw), "workspace", "dirty") != false {
			t.Fatal("dirty=false must be shown, not omitted")
		}
	})
}

func TestBuildBriefNextActions(t *testing.T) {
	s := testSnapshot()
	s.Reasons = []string{ReasonSessionChanged}
	s.Session.Counts = continuo.Counts{OpenTodos: 4, OpenRisks: 3, OpenQuestions: 2, OpenGuidance: 1, Decisions: 30, Progress: 9}
	s.Decisions = newest(100, BriefDecisions, continuo.KindDecision, continuo.StatusOpen, func(int) string { return "d" })
	s.Session.RootInstr = strings.Repeat("r", 1000)
	s.Workspace = &WorkspaceFacts{Available: true, Branch: "main", Dirty: true, Path: "/srv/p", ChangedTotal: 2}
	b, _ := BuildBrief(s)
	want := []string{
		`read_session_working_set(session_id="~s3")`,
		`re-read before relying on it: read_session_handoff(session_id="~s3") (session_changed_during_snapshot)`,
		`ask the user question msg_00000000000000000000000040 (2 open); do not answer it yourself`,
		`inspect the 2 uncommitted change(s) before editing: git status, git diff`,
		`run_validation(session_id="~s3", check="lint") (not_run); run_validation(session_id="~s3", check="test") (not_run); ` +
			`run_validation(session_id="~s3", check="vet") (not_run)`,
		`open work by priority: todo msg_00000000000000000000000030`,
		`older progress: list_session_messages(session_id="~s3", kinds=["progress"])`,
	}
	if !slices.Equal(b.NextActions, want) {
		t.Fatalf("next_actions =\n%s\nwant\n%s", strings.Join(b.NextActions, "\n"), strings.Join(want, "\n"))
	}
	if n := len(strings.Join(b.NextActions, "")); n > 700 {
		t.Errorf("next actions take %d bytes: hints are short", n)
	}
	s.Session.Lifecycle = continuo.LifecycleClosed
	b, _ = BuildBrief(s)
	if b.NextActions[0] != want[0] || !strings.HasPrefix(b.NextActions[1], "session closed") ||
		slices.ContainsFunc(b.NextActions, func(a string) bool { return strings.HasPrefix(a, "run_validation") }) {
		t.Fatalf("closed: next_actions = %q", b.NextActions)
	}
	// Nothing to do: an empty list, not null.
	s = testSnapshot()
	s.Session.Counts = continuo.Counts{}
	s.Open, s.Decisions, s.Project.Checks = nil, nil, nil
	b, raw := BuildBrief(s)
	if b.NextActions == nil || len(b.NextActions) != 0 {
		t.Fatalf("next_actions = %#v", b.NextActions)
	}
	if v, ok := at(decodeBrief(t, raw), "next_actions").([]any); !ok || len(v) != 0 {
		t.Fatalf("next_actions serialized as %#v", v)
	}
}

// alnum maps fuzz bytes onto letters and digits.
func alnum(b []byte, n int) string {
	const set = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	out := make([]byte, n)
	for i := range out {
		var c byte = byte(i * 7)
		if len(b) > 0 {
			c += b[i%len(b)]
		}
		out[i] = set[int(c)%len(set)]
	}
	return string(out)
}

func FuzzBrief(f *testing.F) {
	f.Add("title", "root instruction", "latest", "a decision", "progress made", "a todo", "main", []byte("seed"), uint8(0), false)
	f.Add(nasty(300), nasty(9000), "", nasty(8000), "", nasty(8000), nasty(200), []byte{0xff, 0}, uint8(3), true)
	f.Add("Bearer ", "token=", "-----BEGIN PRIVATE KEY-----", "https://u:", "AIza", "cto_", "\n", []byte("x"), uint8(7), true)
	f.Add("€€€", "\xff\xfe", "\u2028", "sk-", "sk-ant-", "eyJ", "refs/heads/x", []byte("0123456789"), uint8(255), false)
	f.Fuzz(func(t *testing.T, title, root, latest, note1, note2, note3, branch string, key []byte, shape uint8, dirty bool) {
		// Excerpts are at most 600 bytes, so longer texts add only cost;
		// TestBuildBriefBudget covers texts at their full bounds.
		lim := func(s *string, n int) {
			if len(*s) > n {
				*s = (*s)[:n]
			}
		}
		lim(&title, 300)
		lim(&branch, 300)
		for _, s := range []*string{&root, &latest, &note1, &note2, &note3} {
			lim(s, 1500)
		}
		secret := "sk-" + alnum(key, 24)
		plant := func(s string) string {
			// Put the secret in the middle of the fuzz text.
			h := len(s) / 2
			return s[:h] + " " + secret + " " + s[h:]
		}
		s := testSnapshot()
		s.Session.Title = plant(title)
		s.Session.RootInstr = plant(root)
		s.Session.LatestInstr = plant(latest)
		s.Session.WorktreeBranch = plant(branch)
		s.Session.Mode = continuo.ModeWorktree
		if shape&1 != 0 {
			s.Session.Lifecycle = continuo.LifecycleClosed
		}
		texts := []string{plant(note1), plant(note2), plant(note3), note1 + note2}
		text := func(i int) string { return texts[i%len(texts)] }
		nd, np, no := int(shape>>1&7)*4+1, int(shape>>4&7)+1, int(shape>>6&3)+1
		s.Decisions = newest(100, nd, continuo.KindDecision, continuo.StatusOpen, text)
		for i := range s.Decisions {
			// Every third a correction, every fifth high: all the tiers.
			if i%3 == 0 {
				s.Decisions[i].Supersedes = fmt.Sprintf("msg_%026d", 99-i)
			}
			if i%5 == 1 {
				s.Decisions[i].Priority = continuo.PriorityHigh
			}
		}
		s.Progress = newest(200, np, continuo.KindProgress, continuo.StatusOpen, text)
		if shape&8 != 0 {
			// The current state cites the oldest decision by id.
			h := testMsg(250, continuo.KindProgress, continuo.StatusOpen, plant(note1+note2+note3)+" see "+s.Decisions[nd-1].ID)
			h.Tags = []string{continuo.HandoffTag}
			s.Handoff = &h
		}
		for k, kind := range []continuo.Kind{continuo.KindTodo, continuo.KindRisk, continuo.KindQuestion} {
			s.Open[kind] = newest(300+100*k, no, kind, continuo.StatusOpen, text)
		}
		s.Guidance = newest(700, no, continuo.KindGuidance, continuo.StatusOpen, text)
		s.Answered = answeredBy(800, no, text)
		s.Answered[0].Answer.Text = plant(note3)
		s.Session.Counts = continuo.Counts{Decisions: int64(nd) * 3, Progress: int64(np), OpenTodos: int64(no),
			OpenRisks: int64(no) + 1, OpenQuestions: int64(no), OpenGuidance: int64(no), SupersededDecisions: int64(nd),
			ResolvedQuestions: int64(no)}
		s.Workspace = &WorkspaceFacts{Available: dirty || shape&2 != 0, Path: plant(branch), Branch: plant(branch), Head: "abc", Dirty: dirty,
			Changes: []workspace.Change{{Status: ".M", Path: plant(note1)}}, ChangedTotal: 30,
			StartHead: "abd", Commits: &workspace.Commits{Count: 2, Subjects: []string{plant(note2)}}}
		if shape&4 != 0 {
			s.Reasons = []string{ReasonSessionChanged}
		}
		if ng := int(shape>>3&3) * 3; ng > 0 { // 0, 3, 6 or 9 goals
			s.Goals = testGoals(min(ng, BriefGoals), func(i int) string {
				return texts[i%len(texts)][:min(len(texts[i%len(texts)]), continuo.MaxGoalTitle+40)]
			})
			s.GoalsMore = ng > BriefGoals
			s.Goals[0].Steps[1].Title = plant(note2)
		}

		b, raw := BuildBrief(s)
		if len(raw) > MaxBriefBytes {
			t.Fatalf("brief is %d bytes", len(raw))
		}
		if !json.Valid(raw) || !utf8.Valid(raw) {
			t.Fatalf("invalid JSON: %q", raw)
		}
		if _, again := BuildBrief(s); !bytes.Equal(raw, again) {
			t.Fatal("two builds differ")
		}
		if strings.Contains(string(raw), secret) {
			t.Fatalf("planted secret %s survives: %s", secret, raw)
		}
		if len(b.NextActions) > maxActions {
			t.Fatalf("%d next actions", len(b.NextActions))
		}
		d := b.Task.Decisions
		for _, n := range []Notes{{d.Items, d.Total, d.Returned, d.Truncated}, b.Task.RecentProgress, b.Open.Todos, b.Open.Risks, b.Open.Questions.Notes} {
			if n.Returned != len(n.Items) || n.Truncated != (int64(n.Returned) < n.Total) {
				t.Fatalf("coverage inconsistent: %+v", n)
			}
		}
		if b.Basis.Complete != (len(b.Basis.Reasons) == 0) || !slices.IsSorted(b.Basis.Reasons) {
			t.Fatalf("basis = %+v", b.Basis)
		}
		checkBriefOrder(t, "fuzz", s, b)
		if (b.Goal == nil) != (len(s.Goals) == 0) || b.Goal != nil && (len(b.Goal.Items) == 0 || b.Goal.Returned != len(b.Goal.Items)) {
			t.Fatalf("goal = %+v with %d goals", b.Goal, len(s.Goals))
		}
		if gc := goalContext(s); (gc == nil) != (len(s.Goals) == 0) {
			t.Fatalf("goal_context = %+v with %d goals", gc, len(s.Goals))
		} else if gc != nil {
			if j, _ := json.Marshal(gc); strings.Contains(string(j), secret) {
				t.Fatalf("planted secret %s survives in goal_context: %s", secret, j)
			}
		}
	})
}

// TestBriefSelectionRules: one case per rule of CONTRACT.md §4.
func TestBriefSelectionRules(t *testing.T) {
	high := func(m continuo.Message) continuo.Message { m.Priority = continuo.PriorityHigh; return m }
	tagged := func(m continuo.Message) continuo.Message { m.Tags = []string{continuo.HandoffTag}; return m }
	tests := []struct {
		name  string
		mod   func(s *Snapshot)
		check func(t *testing.T, b *Brief, raw string)
	}{
		{"latest instruction omitted while it is the root", func(s *Snapshot) {
			s.Session.Instructions, s.Session.LatestInstr = 1, s.Session.RootInstr
		}, func(t *testing.T, b *Brief, raw string) {
			if b.Task.LatestInstruction != nil || strings.Contains(raw, "latest_instruction") {
				t.Fatal("latest_instruction shown")
			}
		}},
		{"a default title cut from the instruction says truncated", func(s *Snapshot) {
			s.Session.RootInstr = strings.Repeat("word ", 40) + "\nsecond line"
			s.Session.Title = defaultTitle(s.Session.RootInstr)
		}, func(t *testing.T, b *Brief, _ string) {
			if !b.Session.Title.Truncated {
				t.Fatalf("title = %+v", b.Session.Title)
			}
		}},
		{"a title given in full does not", func(s *Snapshot) { s.Session.Title = "Port" }, func(t *testing.T, b *Brief, _ string) {
			if b.Session.Title.Truncated {
				t.Fatal("title marked truncated")
			}
		}},
		{"the handoff note is the current state, not the newest progress", func(s *Snapshot) {
			h := tagged(testMsg(5, continuo.KindProgress, continuo.StatusOpen, "STATE: "+strings.Repeat("s", 1900)))
			s.Handoff = &h
			s.Progress = append(newest(50, 3, continuo.KindProgress, continuo.StatusOpen, func(i int) string { return fmt.Sprint("p", i) }), h)
			s.Session.Counts.Progress = 10
		}, func(t *testing.T, b *Brief, _ string) {
			cs := b.Task.CurrentState
			if cs == nil || cs.MessageID != fmt.Sprintf("msg_%026d", 5) || !cs.Handoff || cs.Truncated || len(cs.Text) != 1907 {
				t.Fatalf("current state = %+v", cs)
			}
			p := b.Task.RecentProgress
			if p.Total != 9 || p.Returned != 3 || p.Items[0].Excerpt != "p2" {
				t.Fatalf("recent progress = %+v", p)
			}
		}},
		{"without a handoff note, the newest progress", nil, func(t *testing.T, b *Brief, _ string) {
			if cs := b.Task.CurrentState; cs == nil || cs.Handoff || cs.Text != "parsed expressions" {
				t.Fatalf("current state = %+v", cs)
			}
		}},
		{"constraints verbatim, whole, in order, up to 2,048 bytes", func(s *Snapshot) {
			s.Guidance = []continuo.Message{
				high(testMsg(60, continuo.KindGuidance, continuo.StatusOpen, strings.Repeat("a", 1500))),
				testMsg(61, continuo.KindGuidance, continuo.StatusOpen, strings.Repeat("b", 600)),
				testMsg(62, continuo.KindGuidance, continuo.StatusOpen, "small"),
			}
			s.Session.Counts.OpenGuidance = 3
		}, func(t *testing.T, b *Brief, _ string) {
			c := b.Constraints
			if c.Returned != 1 || !c.Truncated || len(c.Items[0].Text) != 1500 || c.Items[0].Priority != "high" {
				t.Fatalf("constraints = %+v", c)
			}
			if b.NextActions[0] != `read_session_working_set(session_id="~s3")` {
				t.Fatalf("next_actions = %q", b.NextActions)
			}
		}},
		{"a single constraint over the budget is cut and says so", func(s *Snapshot) {
			s.Guidance = []continuo.Message{testMsg(60, continuo.KindGuidance, continuo.StatusOpen, strings.Repeat("a", 3000))}
			s.Session.Counts.OpenGuidance = 1
		}, func(t *testing.T, b *Brief, _ string) {
			c := b.Constraints
			if c.Returned != 1 || !c.Truncated || !c.Items[0].Truncated || len(c.Items[0].Text) != 2048 || !strings.HasSuffix(c.Items[0].Text, "…") {
				t.Fatalf("constraints = %+v", c)
			}
		}},
		{"answered questions as pairs", func(s *Snapshot) {
			q := testMsg(70, continuo.KindQuestion, continuo.StatusResolved, "which port?")
			at := q.CreatedAt.Add(time.Minute)
			a := testMsg(71, continuo.KindAnswer, continuo.StatusOpen, "8080")
			q.Resolution, q.ResolvedBy, q.ResolvedAt = "8080", a.ID, &at
			s.Answered = []QA{{Question: q, Answer: &a}}
			s.Session.Counts.ResolvedQuestions = 4
		}, func(t *testing.T, b *Brief, _ string) {
			a := b.Answered
			if a.Total != 4 || a.Returned != 1 || !a.Truncated || a.Items[0].Question.Excerpt != "which port?" ||
				a.Items[0].Answer != (AnswerText{MessageID: fmt.Sprintf("msg_%026d", 71), Excerpt: "8080", At: "2030-05-06T08:19:09.000Z"}) {
				t.Fatalf("answered = %+v", a)
			}
		}},
		{"an answer superseded by a later answer: the later one is shown", func(s *Snapshot) {
			s.Answered = answeredBy(70, 1, func(int) string { return "port 8080" })
			later := testMsg(90, continuo.KindAnswer, continuo.StatusOpen, "port 9090 after all")
			s.Answered[0].Answer = &later
		}, func(t *testing.T, b *Brief, _ string) {
			if a := b.Answered.Items[0].Answer; a.MessageID != fmt.Sprintf("msg_%026d", 90) || a.Excerpt != "port 9090 after all" || a.ReplacedBy != "" {
				t.Fatalf("answer = %+v", a)
			}
		}},
		{"pairs whose answer holds come first; a replaced one names what replaced it", func(s *Snapshot) {
			s.Answered = answeredBy(70, 2, func(i int) string { return fmt.Sprint("answer ", i) })
			s.Answered[0].Replaced = fmt.Sprintf("msg_%026d", 95) // the newest pair's answer was overruled by a decision
		}, func(t *testing.T, b *Brief, _ string) {
			a := b.Answered.Items
			if len(a) != 2 || a[0].Answer.Excerpt != "answer 0" || a[1].Answer.Excerpt != "answer 1" || a[1].Answer.ReplacedBy != fmt.Sprintf("msg_%026d", 95) {
				t.Fatalf("answered = %+v", a)
			}
		}},
		{"decisions: high, then corrections, then cited, then newest, normal before low", func(s *Snapshot) {
			d := func(n int, p continuo.Priority, supersedes string) continuo.Message {
				m := testMsg(n, continuo.KindDecision, continuo.StatusOpen, fmt.Sprint("d", n))
				m.Priority, m.Supersedes = p, supersedes
				return m
			}
			old := fmt.Sprintf("msg_%026d", 1)
			s.Decisions = []continuo.Message{
				d(100, continuo.PriorityLow, ""), d(99, continuo.PriorityNormal, ""), d(98, continuo.PriorityHigh, ""),
				d(97, continuo.PriorityNormal, old), d(96, continuo.PriorityHigh, old), d(95, continuo.PriorityNormal, ""),
				d(94, continuo.PriorityLow, old), d(93, continuo.PriorityNormal, ""), d(92, continuo.PriorityHigh, ""),
			}
			// The current state cites 95, an open todo 92 (high already) and 93.
			h := tagged(testMsg(5, continuo.KindProgress, continuo.StatusOpen, "next: apply msg_00000000000000000000000095"))
			s.Handoff = &h
			s.Open[continuo.KindTodo][0].Text = "follow msg_00000000000000000000000093 and msg_00000000000000000000000092"
			s.Session.Counts.Decisions = 9
		}, func(t *testing.T, b *Brief, _ string) {
			var got []string
			for _, it := range b.Task.Decisions.Items {
				got = append(got, it.Excerpt)
			}
			want := []string{"d96", "d92", "d98", "d97", "d94", "d95", "d93", "d99", "d100"}
			if !slices.Equal(got, want) {
				t.Fatalf("order = %v, want %v", got, want)
			}
		}},
		{"a cited high decision comes before the other high ones", func(s *Snapshot) {
			s.Decisions = newest(100, 3, continuo.KindDecision, continuo.StatusOpen, func(i int) string { return fmt.Sprint("h", i) })
			for i := range s.Decisions {
				s.Decisions[i].Priority = continuo.PriorityHigh
			}
			s.Open[continuo.KindQuestion][0].Text = "keep msg_00000000000000000000000100?"
		}, func(t *testing.T, b *Brief, _ string) {
			if it := b.Task.Decisions.Items; it[0].Excerpt != "h0" || it[1].Excerpt != "h2" {
				t.Fatalf("order = %+v", it)
			}
		}},
		{"excerpts end at a word boundary with an ellipsis", func(s *Snapshot) {
			s.Decisions = []continuo.Message{testMsg(100, continuo.KindDecision, continuo.StatusOpen,
				strings.Repeat("wörd ", 60)+"tail")}
		}, func(t *testing.T, b *Brief, _ string) {
			it := b.Task.Decisions.Items[0]
			if !it.Truncated || !strings.HasSuffix(it.Excerpt, "wörd…") || len(it.Excerpt) > decisionBytes || !utf8.ValidString(it.Excerpt) {
				t.Fatalf("excerpt = %q (%d bytes)", it.Excerpt, len(it.Excerpt))
			}
		}},
		{"whenever something in force is cut, the working set comes first", func(s *Snapshot) {
			s.Session.Counts.OpenTodos = 12
		}, func(t *testing.T, b *Brief, _ string) {
			if !b.Open.Todos.Truncated || b.NextActions[0] != `read_session_working_set(session_id="~s3")` {
				t.Fatalf("next_actions = %q", b.NextActions)
			}
		}},
		{"older progress alone does not send to the working set", func(s *Snapshot) {
			s.Session.Counts.Progress = 400
		}, func(t *testing.T, b *Brief, _ string) {
			if !b.Task.RecentProgress.Truncated || slices.ContainsFunc(b.NextActions, func(a string) bool { return strings.Contains(a, "working_set") }) {
				t.Fatalf("next_actions = %q", b.NextActions)
			}
			if !slices.Contains(b.NextActions, `older progress: list_session_messages(session_id="~s3", kinds=["progress"])`) {
				t.Fatalf("next_actions = %q", b.NextActions)
			}
		}},
		{"questions are the user's to settle", nil, func(t *testing.T, b *Brief, _ string) {
			if b.Open.Questions.Note != QuestionsNote {
				t.Fatalf("note = %q", b.Open.Questions.Note)
			}
			for _, a := range b.NextActions {
				if strings.HasPrefix(a, "answer") {
					t.Fatalf("action %q", a)
				}
			}
		}},
		{"decisions high first, supersedes named", func(s *Snapshot) {
			d := high(testMsg(12, continuo.KindDecision, continuo.StatusOpen, "h"))
			d.Supersedes = fmt.Sprintf("msg_%026d", 9)
			s.Decisions = append([]continuo.Message{d}, s.Decisions...)
		}, func(t *testing.T, b *Brief, _ string) {
			it := b.Task.Decisions.Items[0]
			if it.Priority != "high" || it.Supersedes != fmt.Sprintf("msg_%026d", 9) {
				t.Fatalf("first decision = %+v", it)
			}
		}},
		{"workspace: path, changes, start head, commits since", func(s *Snapshot) {
			ch := make([]workspace.Change, workspace.MaxChanges)
			for i := range ch {
				ch[i] = workspace.Change{Status: "??", Path: fmt.Sprintf("f%02d", i)}
			}
			s.Workspace = &WorkspaceFacts{Available: true, Path: "/srv/p", Branch: "main", Head: "h2", Dirty: true, Changes: ch,
				ChangedTotal: 25, StartHead: "h1", Commits: &workspace.Commits{Count: 7, Subjects: []string{"c", "b", "a"}}}
		}, func(t *testing.T, b *Brief, _ string) {
			w := b.Workspace
			if w.Path != "/srv/p" || w.Changes.Total != 25 || w.Changes.Returned != 20 || !w.Changes.Truncated ||
				w.StartHead != "h1" || w.SinceStart.Count != 7 || len(w.SinceStart.Subjects) != 3 {
				t.Fatalf("workspace = %+v", w)
			}
			if !slices.Contains(b.NextActions, "inspect the 25 uncommitted change(s) before editing: git status, git diff") {
				t.Fatalf("next_actions = %q", b.NextActions)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := testSnapshot()
			if tc.mod != nil {
				tc.mod(s)
			}
			b, raw := BuildBrief(s)
			if len(raw) > MaxBriefBytes || !json.Valid(raw) {
				t.Fatalf("%d bytes", len(raw))
			}
			tc.check(t, b, string(raw))
		})
	}
}

// randomSnapshot is a snapshot of random mix and sizes: texts of words,
// of multibyte characters or of characters JSON escapes; decisions of every
// priority, some corrections, some cited by the current state or an open
// todo; answered pairs, some no longer holding; a workspace or none.
func randomSnapshot(r *rand.Rand) *Snapshot {
	texts := []func(n int) string{nasty, func(n int) string { return strings.Repeat("€", n/3) },
		func(n int) string { return strings.Repeat("word ", n/5) }}
	text := func() string { return texts[r.Intn(len(texts))](r.Intn(8000)) }
	seq := 1000
	msgs := func(kind continuo.Kind, status continuo.Status, max int) []continuo.Message {
		out := newest(seq, r.Intn(max+1), kind, status, func(int) string { return text() })
		seq += 100
		for i := range out {
			out[i].Priority = continuo.Priorities()[r.Intn(3)]
			out[i].Resolution = text()
		}
		slices.SortStableFunc(out, func(a, b continuo.Message) int { return b.Priority.Rank() - a.Priority.Rank() })
		return out
	}
	s := testSnapshot()
	s.Session.Title, s.Session.RootInstr, s.Session.LatestInstr = cut(text(), 240), text(), text()
	s.Session.Instructions = int64(1 + r.Intn(3))
	s.Decisions = msgs(continuo.KindDecision, continuo.StatusOpen, 3*BriefDecisions)
	for i := range s.Decisions {
		if r.Intn(4) == 0 {
			s.Decisions[i].Supersedes = fmt.Sprintf("msg_%026d", i+1)
		}
	}
	s.Progress = msgs(continuo.KindProgress, continuo.StatusOpen, BriefProgress+1)
	s.Guidance = msgs(continuo.KindGuidance, continuo.StatusOpen, BriefConstraints)
	s.Answered = answeredBy(seq, r.Intn(BriefAnswered+1), func(int) string { return text() })
	for i := range s.Answered {
		if r.Intn(4) == 0 {
			s.Answered[i].Replaced = fmt.Sprintf("msg_%026d", 7)
		}
	}
	for _, k := range []continuo.Kind{continuo.KindTodo, continuo.KindRisk, continuo.KindQuestion} {
		s.Open[k] = msgs(k, continuo.StatusOpen, BriefOpen)
	}
	if r.Intn(2) == 0 && len(s.Progress) > 0 {
		h := s.Progress[len(s.Progress)-1]
		h.Tags = []string{continuo.HandoffTag}
		s.Handoff = &h
	}
	// Some decisions are cited by id.
	if state := s.State(); state != nil && len(s.Decisions) > 0 {
		state.Text += " see " + s.Decisions[r.Intn(len(s.Decisions))].ID
	}
	if todos := s.Open[continuo.KindTodo]; len(todos) > 0 && len(s.Decisions) > 0 {
		todos[0].Text = "per " + s.Decisions[r.Intn(len(s.Decisions))].ID + ": " + todos[0].Text
	}
	n := func(m int) int64 { return int64(m + r.Intn(100000)) }
	s.Session.Counts = continuo.Counts{Decisions: n(len(s.Decisions)), Progress: n(len(s.Progress)), OpenGuidance: n(len(s.Guidance)),
		OpenTodos: n(len(s.Open[continuo.KindTodo])), OpenRisks: n(len(s.Open[continuo.KindRisk])),
		OpenQuestions: n(len(s.Open[continuo.KindQuestion])), ResolvedQuestions: n(len(s.Answered))}
	if r.Intn(2) == 0 {
		ch := make([]workspace.Change, r.Intn(workspace.MaxChanges+1))
		for j := range ch {
			ch[j] = workspace.Change{Status: "??", Path: cut(text(), 4096)}
		}
		s.Workspace = &WorkspaceFacts{Available: r.Intn(4) > 0, Path: cut(text(), 4096), Branch: cut(text(), 300), Head: strings.Repeat("a", 40),
			Dirty: len(ch) > 0, Changes: ch, ChangedTotal: len(ch) + r.Intn(3), StartHead: strings.Repeat("b", 40),
			Commits: &workspace.Commits{Count: r.Intn(100), Subjects: []string{cut(text(), 1000)}}}
	}
	return s
}

// TestBriefRandomSnapshots: whatever the mix and sizes, the brief fits, is
// valid JSON, is byte-identical when rebuilt, keeps CONTRACT.md §4's order
// and cut order — high-priority constraints before normal ones; decisions
// in their order, a correction never cut while a non-correction of its
// priority stays; every answered pair that holds kept while any decision
// is; the current state never cut while anything else could be — and its
// coverage is consistent.
func TestBriefRandomSnapshots(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for i := range 300 {
		s := randomSnapshot(r)
		b, raw := BuildBrief(s)
		if len(raw) > MaxBriefBytes || !json.Valid(raw) || !utf8.Valid(raw) {
			t.Fatalf("case %d: %d bytes, valid %v", i, len(raw), json.Valid(raw))
		}
		if _, again := BuildBrief(s); !bytes.Equal(raw, again) {
			t.Fatalf("case %d: rebuilt brief differs", i)
		}
		checkBriefOrder(t, fmt.Sprint("case ", i), s, b)
	}
}

// checkBriefOrder checks the selection and cut rules of CONTRACT.md §4 on
// a brief built from s.
func checkBriefOrder(t *testing.T, name string, s *Snapshot, b *Brief) {
	t.Helper()
	sawNormal := false
	for _, c := range b.Constraints.Items {
		if c.Priority != "high" {
			sawNormal = true
		} else if sawNormal {
			t.Fatalf("%s: a high constraint after a lower one", name)
		}
	}
	if c := b.Constraints; c.Returned != len(c.Items) || (int64(c.Returned) < c.Total && !c.Truncated) {
		t.Fatalf("%s: constraints coverage %+v", name, c)
	}
	if len(b.NextActions) > maxActions {
		t.Fatalf("%s: %d actions", name, len(b.NextActions))
	}
	// Decisions are a prefix of their order; no superseded one is shown.
	order := OrderDecisions(s.Decisions, Citations(s.State(), s.Open, s.Goals))
	d := b.Task.Decisions
	for j, it := range d.Items {
		// A cut excerpt ends at a word boundary of the (redacted) text:
		// never mid-word, never mid-character.
		if src, _ := redact.String(order[j].Text); it.Truncated {
			kept := strings.TrimSuffix(it.Excerpt, ellipsis)
			next, _ := utf8.DecodeRuneInString(src[min(len(kept), len(src)):])
			if !strings.HasPrefix(src, kept) || strings.ContainsFunc(kept, unicode.IsSpace) && !unicode.IsSpace(next) {
				t.Fatalf("%s: excerpt %q is not a cut at a word boundary of %q", name, it.Excerpt, src[:min(len(src), len(kept)+10)])
			}
		}
		if it.MessageID != order[j].ID {
			t.Fatalf("%s: decision %d is %s, want %s (the contract's order)", name, j, it.MessageID, order[j].ID)
		}
		if order[j].Status != continuo.StatusOpen {
			t.Fatalf("%s: %s is %s, shown as in force", name, it.MessageID, order[j].Status)
		}
	}
	// A correction is never cut before a non-correction of its priority.
	for _, left := range order[len(d.Items):] {
		if left.Supersedes == "" {
			continue
		}
		for _, it := range d.Items {
			if it.Supersedes == "" && orNormal(it.Priority) == string(left.Priority) {
				t.Fatalf("%s: correction %s cut while %s of its priority stays", name, left.ID, it.MessageID)
			}
		}
	}
	holding := 0
	for _, q := range s.Answered {
		if q.InForce() {
			holding++
		}
	}
	if len(d.Items) > 0 && b.Answered.Returned < len(s.Answered) {
		t.Fatalf("%s: %d of %d answered pairs kept while %d decisions are", name, b.Answered.Returned, len(s.Answered), len(d.Items))
	}
	for j, a := range b.Answered.Items {
		if (j < holding) != (a.Answer.ReplacedBy == "") {
			t.Fatalf("%s: answered pair %d %+v out of order (%d hold)", name, j, a, holding)
		}
	}
	// The current state is cut only once everything the contract cuts is.
	if cs := b.Task.CurrentState; cs != nil && cs.Truncated && len(s.State().Text) <= constraintBytes {
		if len(d.Items)+b.Task.RecentProgress.Returned+b.Answered.Returned+b.Constraints.Returned > 0 {
			t.Fatalf("%s: the current state is cut while other sections are not", name)
		}
	}
	for _, n := range []Notes{{d.Items, d.Total, d.Returned, d.Truncated}, b.Task.RecentProgress, b.Open.Todos, b.Open.Risks, b.Open.Questions.Notes} {
		if n.Returned != len(n.Items) || n.Truncated != (int64(n.Returned) < n.Total) {
			t.Fatalf("%s: coverage inconsistent: %+v", name, n)
		}
		for _, it := range n.Items {
			if it.Truncated != strings.HasSuffix(it.Excerpt, ellipsis) && it.Excerpt != "" {
				t.Fatalf("%s: excerpt %q (truncated %v)", name, it.Excerpt, it.Truncated)
			}
		}
	}
	if cutInForce(b) != (len(b.NextActions) > 0 && b.NextActions[0] == WorkingSetCall(b.Session.SessionRef)) {
		t.Fatalf("%s: something in force cut (%v), next_actions %q", name, cutInForce(b), b.NextActions)
	}
}

// Every shape of the brief matches the schema published for it (generated
// from Brief): no null where an object is declared, no undeclared field.
func TestBriefMatchesSchema(t *testing.T) {
	s, err := jsonschema.For[Brief](nil)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	empty := testSnapshot()
	empty.Decisions, empty.Progress, empty.Open = nil, nil, nil
	empty.Session.Counts = continuo.Counts{}
	empty.Session.Instructions = 1
	for name, snap := range map[string]*Snapshot{"basic": testSnapshot(), "heavy": heavySnapshot(), "empty": empty} {
		_, raw := BuildBrief(snap)
		var v map[string]any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		if err := rs.Validate(v); err != nil {
			t.Errorf("%s: %v\n%s", name, err, raw)
		}
		// The published schema has no nullable types (mcpserver), so a
		// brief has no null anywhere.
		var walk func(path string, x any)
		walk = func(path string, x any) {
			switch x := x.(type) {
			case nil:
				t.Errorf("%s: %s is null", name, path)
			case map[string]any:
				for k, e := range x {
					walk(path+"."+k, e)
				}
			case []any:
				for i, e := range x {
					walk(fmt.Sprintf("%s[%d]", path, i), e)
				}
			}
		}
		walk("brief", v)
	}
}
