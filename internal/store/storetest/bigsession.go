package storetest

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// BigSession adds n messages to a session directly through the store, in
// transactions of 5,000, keeping the session's tallies true, for the
// benchmarks of large sessions: mostly progress, then decisions, notes,
// todos (a third resolved), some guidance, questions and answers, every
// 37th high priority, every 50th progress a handoff note.
func BigSession(tb testing.TB, s store.Store, sessionID string, n int) {
	tb.Helper()
	ctx := tb.Context()
	kinds := []continuo.Kind{continuo.KindProgress, continuo.KindProgress, continuo.KindProgress, continuo.KindDecision,
		continuo.KindNote, continuo.KindTodo, continuo.KindProgress, continuo.KindDecision, continuo.KindQuestion, continuo.KindGuidance}
	const batch = 5000
	for done := 0; done < n; done += batch {
		MustWrite(tb, s, func(tx store.Tx) error {
			sess, err := tx.SessionGet(ctx, sessionID)
			if err != nil {
				return err
			}
			prev := sess.Revision
			sess.Revision++
			c := &sess.Counts
			for i := done; i < min(done+batch, n); i++ {
				sess.MessageSeq++
				at := sess.UpdatedAt.Add(time.Duration(i) * time.Millisecond)
				m := &continuo.Message{ID: continuo.NewID(continuo.PrefixMessage, at), SessionID: sessionID, Seq: sess.MessageSeq,
					Kind: kinds[i%len(kinds)], Text: "benchmark message " + strconv.Itoa(i) + " " + strings.Repeat("x", i%300),
					Status: continuo.StatusOpen, Priority: continuo.PriorityNormal, CreatedAt: at}
				if i%37 == 0 {
					m.Priority = continuo.PriorityHigh
				}
				switch m.Kind {
				case continuo.KindProgress:
					c.Progress++
					if i%50 == 0 {
						m.Tags = []string{continuo.HandoffTag}
					}
				case continuo.KindDecision:
					c.Decisions++
				case continuo.KindTodo:
					if i%3 == 0 {
						m.Status, m.Resolution, m.ResolvedAt = continuo.StatusResolved, "done", &at
					} else {
						c.OpenTodos++
					}
				case continuo.KindQuestion:
					m.Status, m.Resolution, m.ResolvedAt = continuo.StatusResolved, "yes", &at
					c.ResolvedQuestions++
				case continuo.KindGuidance:
					c.OpenGuidance++
				}
				c.Messages++
				if err := tx.MessageCreate(ctx, m); err != nil {
					return err
				}
			}
			return tx.SessionUpdate(ctx, sess, prev)
		})
	}
}
