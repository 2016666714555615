package workflow_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store/stores"
	"github.com/continuo-dev/continuo/internal/workflow"
)

func TestFindSessions(t *testing.T) { stores.Each(t, testFindSessions) }

// testFindSessions: a project's sessions found by a word of their title,
// of a note or of an instruction, newest activity first, with the
// lifecycle filter and paging; another group's session with the same
// words is never found, even once that group may read the project, and a
// project the group has no grant on is not_found.
func testFindSessions(t *testing.T) {
	f := setup(t, "", workflow.Git{})
	// A clock a second apart per reading: the order by activity is the
	// order of the calls below, not a tie of milliseconds.
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	f.wf = workflow.New(f.store, f.auth, &workflow.Options{Now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}})
	start := func(title, instr string) *continuo.Session {
		t.Helper()
		r, err := f.wf.WorkOnProject(f.ctx, f.caller, workflow.WorkOn{Project: "demo", Title: title, Instruction: instr})
		if err != nil {
			t.Fatal(err)
		}
		return r.Session
	}
	titled := start("Cache invalidation", "begin")
	noted := start("Other work", "begin")
	f.post(t, noted.ID, continuo.KindDecision, "use a write-through cache")
	resumed := start("Third", "begin")
	if _, err := f.wf.WorkOnProject(f.ctx, f.caller, workflow.WorkOn{SessionID: resumed.ID, Instruction: "now look at the CACHE headers"}); err != nil {
		t.Fatal(err)
	}
	start("Unrelated", "begin")
	if _, _, err := f.wf.CloseSession(f.ctx, f.caller, titled.ID, ""); err != nil {
		t.Fatal(err)
	}
	find := func(q workflow.SessionQuery) ([]string, int64) {
		t.Helper()
		q.Project = "demo"
		if q.Limit == 0 {
			q.Limit = 20
		}
		page, err := f.wf.FindSessions(f.ctx, f.caller, q)
		if err != nil {
			t.Fatalf("FindSessions(%+v): %v", q, err)
		}
		if page.Project == nil || page.Project.Name != "demo" || page.Access != continuo.AccessWrite {
			t.Errorf("page project %+v access %q", page.Project, page.Access)
		}
		var got []string
		for _, s := range page.Sessions {
			got = append(got, s.Title)
		}
		return got, page.Total
	}
	// Newest activity first: the close touched "Cache invalidation" last.
	if got, n := find(workflow.SessionQuery{Query: "cache"}); !slices.Equal(got, []string{"Cache invalidation", "Third", "Other work"}) || n != 3 {
		t.Errorf("cache: %q (%d)", got, n)
	}
	if got, _ := find(workflow.SessionQuery{Query: "Cache!", Lifecycle: continuo.LifecycleActive}); !slices.Equal(got, []string{"Third", "Other work"}) {
		t.Errorf("active cache: %q", got)
	}
	page, err := f.wf.FindSessions(f.ctx, f.caller, workflow.SessionQuery{Project: "demo", Query: "cache", Offset: 1, Limit: 1})
	if err != nil || len(page.Sessions) != 1 || page.Sessions[0].ID != resumed.ID || page.NextOffset == nil || *page.NextOffset != 2 {
		t.Errorf("page 2 of cache: %+v, %v", page, err)
	}
	if got, n := find(workflow.SessionQuery{}); len(got) != 4 || n != 4 {
		t.Errorf("every session: %q (%d)", got, n)
	}
	for _, bad := range []workflow.SessionQuery{{Query: "?!"}, {Lifecycle: "archived"}} {
		bad.Project = "demo"
		if _, err := f.wf.FindSessions(f.ctx, f.caller, bad); code(err) != continuo.CodeInvalidInput {
			t.Errorf("FindSessions(%+v) = %v, want invalid_input", bad, err)
		}
	}

	bob := f.otherCaller(t, "bob")
	if _, err := f.wf.FindSessions(f.ctx, bob, workflow.SessionQuery{Project: "demo", Query: "cache", Limit: 20}); code(err) != continuo.CodeNotFound {
		t.Errorf("bob without a grant: %v, want not_found", err)
	}
	if err := f.auth.Grant(f.ctx, "demo", "bob", continuo.AccessRead); err != nil {
		t.Fatal(err)
	}
	page, err = f.wf.FindSessions(f.ctx, bob, workflow.SessionQuery{Project: "demo", Query: "cache", Limit: 20})
	if err != nil || page.Total != 0 || len(page.Sessions) != 0 {
		t.Errorf("bob's search of alice's sessions: %+v, %v", page, err)
	}
}
