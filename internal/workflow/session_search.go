package workflow

import (
	"context"
	"strconv"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// SessionQuery is a listing of one project's sessions: list_sessions'
// filters and, for the dashboard, words to find.
type SessionQuery struct {
	Project   string // name or ID
	Lifecycle continuo.Lifecycle
	// Query keeps the sessions whose title holds every word of it, or one
	// of whose messages or instructions does (list_session_messages'
	// query, store/search.go); "": every session.
	Query  string
	Offset int
	Limit  int
}

// SessionPage is one page of a project's sessions.
type SessionPage struct {
	Project    *continuo.Project
	Access     continuo.Access // the caller group's access to the project
	Total      int64
	Sessions   []continuo.Session
	NextOffset *int
}

// FindSessions lists the caller group's sessions in one project, newest
// activity (updated_at) first, filtered before counting: other groups'
// sessions are never seen, not even counted.
func (s *Service) FindSessions(ctx context.Context, c *continuo.Caller, q SessionQuery) (*SessionPage, error) {
	if err := c.Require(continuo.ScopeSessionsRead); err != nil {
		return nil, err
	}
	if q.Lifecycle != "" && !q.Lifecycle.Valid() {
		return nil, continuo.Invalid("lifecycle", "unknown lifecycle %q", q.Lifecycle)
	}
	words, err := searchWords(q.Query)
	if err != nil {
		return nil, err
	}
	var page SessionPage
	err = s.store.Read(ctx, func(tx store.Tx) error {
		p, access, err := s.auth.ResolveProject(ctx, tx, c, q.Project, continuo.AccessRead)
		if err != nil {
			return err
		}
		page = SessionPage{Project: p, Access: access}
		page.Sessions, page.Total, err = tx.SessionList(ctx, store.SessionListParams{GroupID: c.GroupID, ProjectID: p.ID,
			Lifecycle: q.Lifecycle, Words: words, Offset: q.Offset, Limit: q.Limit})
		return err
	})
	if err != nil {
		return nil, err
	}
	if next := q.Offset + len(page.Sessions); int64(next) < page.Total {
		page.NextOffset = &next
	}
	return &page, nil
}

// searchWords are the words of a query (store.SearchWords), nil for "";
// a query without a word, or with too many, is invalid.
func searchWords(query string) ([]string, error) {
	if query == "" {
		return nil, nil
	}
	words := store.SearchWords(query)
	switch {
	case len(words) == 0:
		return nil, continuo.Invalid("query", "must hold a word: a letter or a digit (punctuation is ignored)")
	case len(words) > store.MaxSearchWords:
		return nil, continuo.Invalid("query", "at most "+strconv.Itoa(store.MaxSearchWords)+" words")
	}
	return words, nil
}
