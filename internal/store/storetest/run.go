package storetest

import (
	"fmt"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// NewRun returns a queued validation run of check in dir, of group
// groupID in project projectID, in no session, at revision 1, created at
// Base. It does not touch a store.
func NewRun(groupID, projectID, dir, check string) *continuo.Run {
	return &continuo.Run{
		ID:          continuo.NewID(continuo.PrefixRun, Base),
		Kind:        continuo.RunValidation,
		State:       continuo.RunQueued,
		GroupID:     groupID,
		ProjectID:   projectID,
		Check:       check,
		Dir:         dir,
		Spec:        fmt.Sprintf(`{"command":["make",%q]}`, check),
		RequestHash: "req-" + check,
		Revision:    1,
		CreatedAt:   Base,
	}
}

// CreateRun creates a run (see NewRun); opts may change it before it is
// created.
func CreateRun(t testing.TB, s store.Store, groupID, projectID, dir, check string, opts ...func(*continuo.Run)) *continuo.Run {
	t.Helper()
	r := NewRun(groupID, projectID, dir, check)
	for _, o := range opts {
		o(r)
	}
	MustWrite(t, s, func(tx store.Tx) error { return tx.RunCreate(t.Context(), r) })
	return r
}
