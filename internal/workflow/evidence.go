package workflow

import (
	"context"
	"encoding/json"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/workspace"
)

// Project evidence: for a person looking at a project, each of the caller
// group's sessions there (a page of them) with every check of the project
// judged as the brief judges it (judgeCheck): the session's newest
// evidence against its checkout's current source.

// ProjectEvidence is one page of a project's sessions with their checks.
type ProjectEvidence struct {
	Project    ProjectView
	Sessions   []SessionEvidence
	Total      int64 // the sessions that match, on every page
	NextOffset *int  // nil after the last page
}

// SessionEvidence is one session's checks.
type SessionEvidence struct {
	SessionID string
	Ref       int64
	Title     string // redacted
	Lifecycle continuo.Lifecycle
	Worktree  bool   // the session has a worktree of its own
	Dir       string // where its checks run: its worktree or the project root
	// Current is the source of Dir now; nil when it was not read (the
	// session has no evidence to compare) or could not be (SourceUnread).
	Current      *Source
	SourceUnread bool
	Status       string // the worst of its checks' (as the brief's validation status)
	Checks       []CheckEvidence
}

// CheckEvidence is one check of a session: its status and the run it
// rests on (nil when the session never ran it).
type CheckEvidence struct {
	Check  string
	Status string // CheckPassed, CheckFailed, CheckStale, CheckRunning, CheckNotRun
	Run    *continuo.Run
	Source *Source // what Run ran on (validation runs record it before they start)
}

// Source is a source fingerprint: the commit and the hash of the working
// tree's differences from it; Clean says there were none. ByStat, when
// set, names the files it took by size and modification time instead of
// content.
type Source struct {
	Head   string
	Tree   string
	Clean  bool
	ByStat *StatFiles
}

// StatFiles are the files a source fingerprint took by size and
// modification time instead of content (workspace.SourceOf: too large to
// read within one call): the first few, in git's order, and how many.
type StatFiles struct {
	Paths []string `json:"paths"`
	Total int      `json:"total"`
}

// TreeHash identifies the working tree the source describes: its head and
// its differences from it (workspace.Source.TreeHash), unlike Tree, which
// every clean checkout shares.
func (s *Source) TreeHash() string { return workspace.Source{Head: s.Head, Tree: s.Tree}.TreeHash() }

func sourceOf(s workspace.Source) *Source {
	out := &Source{Head: s.Head, Tree: s.Tree, Clean: s.Clean()}
	if s.ByStatTotal > 0 {
		out.ByStat = &StatFiles{Paths: s.ByStat, Total: s.ByStatTotal}
	}
	return out
}

// sourceStat is a validation run's record of the files its fingerprint
// took by stat (continuo.Run.SourceStat): "" when there are none.
func sourceStat(s workspace.Source) string {
	if s.ByStatTotal == 0 {
		return ""
	}
	b, err := json.Marshal(StatFiles{Paths: s.ByStat, Total: s.ByStatTotal})
	if err != nil {
		return "" // a []string and an int always marshal
	}
	return string(b)
}

// RunSource is the source a validation run ran on (taken before it
// started); nil for other runs.
func RunSource(r *continuo.Run) *Source {
	if r == nil || r.Kind != continuo.RunValidation {
		return nil
	}
	src := workspace.Source{Head: r.SourceHead, Tree: r.SourceTree}
	if r.SourceStat != "" {
		var st StatFiles
		if json.Unmarshal([]byte(r.SourceStat), &st) == nil {
			src.ByStat, src.ByStatTotal = st.Paths, st.Total
		}
	}
	return sourceOf(src)
}

// Evidence bounds: a page of sessions.
const (
	EvidenceDefault = 20
	EvidenceMax     = 50
)

// Evidence returns a page of the caller group's sessions in a project
// (lifecycle "" for any; offset, limit 0..EvidenceMax, 0 meaning
// EvidenceDefault; the order of ListSessions) with each check of the
// project judged by the session's evidence. The sources are read from
// git once per directory, and only for directories with evidence.
func (s *Service) Evidence(ctx context.Context, c *continuo.Caller, project string, lc continuo.Lifecycle, offset, limit int) (*ProjectEvidence, error) {
	if err := c.Require(continuo.ScopeSessionsRead); err != nil {
		return nil, err
	}
	if limit == 0 {
		limit = EvidenceDefault
	}
	if limit < 1 || limit > EvidenceMax {
		return nil, continuo.Invalid("limit", "must be 1..%d", EvidenceMax)
	}
	if offset < 0 {
		return nil, continuo.Invalid("offset", "must be ≥ 0")
	}
	if lc != "" && !lc.Valid() {
		return nil, continuo.Invalid("lifecycle", "must be active or closed")
	}
	out := &ProjectEvidence{}
	var evidence [][]store.EvidenceRun
	var p *continuo.Project
	err := s.store.Read(ctx, func(tx store.Tx) error {
		var access continuo.Access
		var err error
		if p, access, err = s.auth.ResolveProject(ctx, tx, c, project, continuo.AccessRead); err != nil {
			return err
		}
		out.Project = ProjectView{ProjectID: p.ID, Name: p.Name, Access: access, HasRoot: p.Root != "", Writable: p.Writable, Checks: checkNames(p.Checks)}
		sessions, total, err := tx.SessionList(ctx, store.SessionListParams{GroupID: c.GroupID, ProjectID: p.ID, Lifecycle: lc, Offset: offset, Limit: limit})
		if err != nil {
			return err
		}
		out.Total, out.Sessions, evidence = total, make([]SessionEvidence, len(sessions)), make([][]store.EvidenceRun, len(sessions))
		for i, sess := range sessions {
			if evidence[i], err = tx.EvidenceLatest(ctx, sess.ID, briefEvidence); err != nil {
				return err
			}
			title, _ := redact.String(sess.Title)
			dir := p.Root
			if sess.WorktreePath != "" {
				dir = sess.WorktreePath
			}
			out.Sessions[i] = SessionEvidence{SessionID: sess.ID, Ref: sess.Ref, Title: title, Lifecycle: sess.Lifecycle,
				Worktree: sess.WorktreePath != "", Dir: dir}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if next := offset + len(out.Sessions); int64(next) < out.Total {
		out.NextOffset = &next
	}
	// The checkouts, read once each, and only where there is evidence to
	// compare (as the brief does).
	type read struct {
		src *workspace.Source
		err error
	}
	sources := map[string]read{}
	for i := range out.Sessions {
		se := &out.Sessions[i]
		var current *workspace.Source
		if len(evidence[i]) > 0 && se.Dir != "" {
			got, ok := sources[se.Dir]
			if !ok {
				src, err := s.git.Source(ctx, se.Dir)
				got = read{&src, err}
				sources[se.Dir] = got
			}
			if got.err != nil {
				se.SourceUnread = true
			} else {
				current, se.Current = got.src, sourceOf(*got.src)
			}
		}
		byCheck := map[string][]continuo.Run{}
		for _, e := range evidence[i] {
			byCheck[e.Evidence.Check] = append(byCheck[e.Evidence.Check], e.Run)
		}
		se.Status = CheckPassed
		if len(out.Project.Checks) == 0 {
			se.Status = CheckNotRun
		}
		for _, name := range out.Project.Checks {
			ce := CheckEvidence{Check: name}
			ce.Status, ce.Run = judgeCheck(byCheck[name], current)
			ce.Source = RunSource(ce.Run)
			if checkRank[ce.Status] < checkRank[se.Status] {
				se.Status = ce.Status
			}
			se.Checks = append(se.Checks, ce)
		}
	}
	return out, nil
}

// At is when a check's evidence dates from: its run's end, or its
// creation while it has not ended; zero without a run.
func (ce CheckEvidence) At() time.Time {
	if ce.Run == nil {
		return time.Time{}
	}
	return checkedAt(ce.Run)
}
