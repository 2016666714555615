package workflow

import (
	"github.com/continuo-dev/continuo/internal/workspace"
)

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
