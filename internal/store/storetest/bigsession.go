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

// HistorySession adds n messages to a session directly through the store,
// keeping its tallies true, of which decisions decisions, 5 constraints,
// 6 todos, 3 risks and 10 answered questions (with their answers) stay in
// force, and a current-state note comes last: the rest is history —
// progress notes, superseded decisions, resolved todos and risks. It is the
// shape of a long session for the benchmarks of the brief and the working
// set, whose cost must follow what is in force, not n.
func HistorySession(tb testing.TB, s store.Store, sessionID string, n, decisions int) {
	tb.Helper()
	const guidance, todos, risks, answered = 5, 6, 3, 10
	inForce := decisions + guidance + todos + risks + 2*answered + 1
	if n < inForce {
		tb.Fatalf("HistorySession: %d messages cannot hold %d in force", n, inForce)
	}
	ctx := tb.Context()
	// In force are spread evenly over the history, the current state last.
	every := n / inForce
	const batch = 5000
	var kept int
	var question *continuo.Message
	for done := 0; done < n; done += batch {
		kept0, question0 := kept, question
		MustWrite(tb, s, func(tx store.Tx) error {
			kept, question = kept0, question0 // Write may run this more than once
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
					Status: continuo.StatusOpen, Priority: continuo.PriorityNormal, CreatedAt: at,
					Text: "history message " + strconv.Itoa(i) + ": " + strings.Repeat("w ", 20+i%60)}
				switch {
				case i == n-1:
					m.Kind, m.Tags, m.Text = continuo.KindProgress, []string{continuo.HandoffTag}, "DONE: a. NEXT: b. VERIFY: go test ./..."
				case question != nil: // the answer right after its question
					m.Kind, m.ReplyTo, m.Text = continuo.KindAnswer, question.ID, "yes"
					question.Status, question.Resolution, question.ResolvedBy, question.ResolvedAt = continuo.StatusResolved, "yes", m.ID, &at
					if err := tx.MessageUpdate(ctx, question, continuo.StatusOpen); err != nil {
						return err
					}
					c.ResolvedQuestions++
					question = nil
					kept++
				case i%every == 0 && kept < inForce-1:
					// Its text depends on its place among those in force,
					// not in the history: the same things are in force
					// whatever n.
					m.Text = "in force " + strconv.Itoa(kept) + ": " + strings.Repeat("w ", 20+kept%60)
					switch k := kept; {
					case k < decisions:
						m.Kind = continuo.KindDecision
						if k%10 == 0 {
							m.Priority = continuo.PriorityHigh
						}
						c.Decisions++
					case k < decisions+guidance:
						m.Kind = continuo.KindGuidance
						c.OpenGuidance++
					case k < decisions+guidance+todos:
						m.Kind = continuo.KindTodo
						c.OpenTodos++
					case k < decisions+guidance+todos+risks:
						m.Kind = continuo.KindRisk
						c.OpenRisks++
					default:
						m.Kind = continuo.KindQuestion
						question = m
					}
					kept++
				default:
					switch i % 5 {
					case 0, 1, 2:
						m.Kind = continuo.KindProgress
						c.Progress++
					case 3:
						m.Kind, m.Status = continuo.KindDecision, continuo.StatusSuperseded
						c.Decisions++
						c.SupersededDecisions++
					case 4:
						m.Kind, m.Status, m.Resolution, m.ResolvedAt = []continuo.Kind{continuo.KindTodo, continuo.KindRisk}[i%2], continuo.StatusResolved, "done", &at
					}
				}
				if m.Kind == continuo.KindProgress && i == n-1 {
					c.Progress++
				}
				c.Messages++
				if err := tx.MessageCreate(ctx, m); err != nil {
					return err
				}
			}
			return tx.SessionUpdate(ctx, sess, prev)
		})
	}
	if kept != inForce-1 {
		tb.Fatalf("HistorySession: %d kept in force, want %d", kept, inForce-1)
	}
}
