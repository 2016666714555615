package workflow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// Post is the input of post_session_message.
type Post struct {
	SessionID   string
	Kind        continuo.Kind
	Text        string
	DeliveryKey string
	Supersedes  string
	ReplyTo     string
	Tags        []string
	Priority    continuo.Priority
}

// fingerprint is what "the same payload" means for a delivery key: every
// field that shapes the message. Tags are order-sensitive, as stored.
func (p Post) fingerprint() string {
	return fingerprint("post/v1", p.Kind, p.Text, p.Supersedes, p.ReplyTo, p.Tags, p.Priority)
}

// PostMessage adds a message to an active session. With a delivery key, a
// replay of the same payload returns the original message (replayed=true)
// and changes nothing, across restarts; a different payload under the same
// key is a conflict.
func (s *Service) PostMessage(ctx context.Context, c *continuo.Caller, in Post) (*continuo.Message, bool, error) {
	if err := c.Require(continuo.ScopeSessionsWrite); err != nil {
		return nil, false, err
	}
	if in.Priority == "" {
		in.Priority = continuo.PriorityNormal
	}
	var msg *continuo.Message
	var replayed bool
	err := s.store.Write(ctx, func(tx store.Tx) error {
		msg, replayed = nil, false // Write may run this more than once
		sess, err := s.resolveSession(ctx, tx, c, in.SessionID)
		if err != nil {
			return err
		}
		scope := messageScope(sess.ID)
		if id, err := replay(ctx, tx, scope, in.DeliveryKey, in.fingerprint()); err != nil {
			return err
		} else if id != "" {
			msg, err = tx.MessageGet(ctx, sess.ID, id)
			replayed = true
			return err
		}
		if sess.Lifecycle != continuo.LifecycleActive {
			return continuo.Errorf(continuo.CodeSessionClosed, "session %s is closed", continuo.SessionRef(sess.Ref))
		}
		var question *continuo.Message // the open question this answer resolves
		if in.ReplyTo != "" {
			target, err := s.message(ctx, tx, sess.ID, in.ReplyTo, "reply_to")
			if err != nil {
				return err
			}
			// An answer to an open question resolves it (CONTRACT.md §3);
			// a reply to anything else only links. When the same post
			// also supersedes the question, superseding wins.
			if in.Kind == continuo.KindAnswer && target.Kind == continuo.KindQuestion &&
				target.Status == continuo.StatusOpen && in.Supersedes != target.ID {
				question = target
			}
		}
		prev := sess.Revision
		s.bump(sess)
		sess.MessageSeq++
		m := &continuo.Message{ID: continuo.NewID(continuo.PrefixMessage, sess.UpdatedAt), SessionID: sess.ID, Seq: sess.MessageSeq,
			Kind: in.Kind, Text: in.Text, Status: continuo.StatusOpen, Priority: in.Priority, Tags: in.Tags,
			ReplyTo: in.ReplyTo, Supersedes: in.Supersedes, Author: c.Actor(), CreatedAt: sess.UpdatedAt}
		count(&sess.Counts, m.Kind, "", m.Status)
		sess.Counts.Messages++
		var old *continuo.Message
		if in.Supersedes != "" {
			if old, err = s.message(ctx, tx, sess.ID, in.Supersedes, "supersedes"); err != nil {
				return err
			}
			if old.Status == continuo.StatusSuperseded {
				return continuo.Errorf(continuo.CodeConflict, "message %s is already superseded by %s", old.ID, old.SupersededBy).
					With("superseded_by", old.SupersededBy)
			}
			count(&sess.Counts, old.Kind, old.Status, continuo.StatusSuperseded)
		}
		if question != nil {
			count(&sess.Counts, question.Kind, question.Status, continuo.StatusResolved)
		}
		// The session row first: it guards everything below (store's
		// package comment).
		if err := tx.SessionUpdate(ctx, sess, prev); err != nil {
			return err
		}
		if old != nil {
			was := old.Status
			old.Status, old.SupersededBy = continuo.StatusSuperseded, m.ID
			if err := tx.MessageUpdate(ctx, old, was); err != nil {
				return err
			}
		}
		if question != nil {
			at := m.CreatedAt
			question.Status, question.Resolution, question.ResolvedBy, question.Resolver, question.ResolvedAt =
				continuo.StatusResolved, cut(m.Text, resolutionBytes), m.ID, m.Author, &at
			if err := tx.MessageUpdate(ctx, question, continuo.StatusOpen); err != nil {
				return err
			}
		}
		if err := tx.MessageCreate(ctx, m); err != nil {
			return err
		}
		if err := remember(ctx, tx, scope, in.DeliveryKey, in.fingerprint(), m.ID, sess.UpdatedAt); err != nil {
			return err
		}
		msg = m
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("post to session %s: %w", in.SessionID, err)
	}
	return msg, replayed, nil
}

// message loads a message of the session named by an argument.
func (s *Service) message(ctx context.Context, tx store.Tx, sessionID, id, field string) (*continuo.Message, error) {
	if !continuo.ValidID(continuo.PrefixMessage, id) {
		return nil, continuo.Invalid(field, "must be a msg_… id")
	}
	m, err := tx.MessageGet(ctx, sessionID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, continuo.NotFound("message", id).With("field", field)
	}
	return m, err
}

// resolutionBytes bounds the excerpt of an answer stored as the resolution
// of the question it answers (the answer itself stays in full).
const resolutionBytes = 2000

// count moves a message of kind k from status from ("" for a new message)
// to status to in a session's tallies.
func count(c *continuo.Counts, k continuo.Kind, from, to continuo.Status) {
	if from == "" {
		switch k {
		case continuo.KindDecision:
			c.Decisions++
		case continuo.KindProgress:
			c.Progress++
		}
	}
	switch {
	case k == continuo.KindDecision && from != continuo.StatusSuperseded && to == continuo.StatusSuperseded:
		c.SupersededDecisions++
	case k == continuo.KindQuestion && from != to && from == continuo.StatusResolved:
		c.ResolvedQuestions--
	case k == continuo.KindQuestion && from != to && to == continuo.StatusResolved:
		c.ResolvedQuestions++
	}
	open := openCounter(c, k)
	if open == nil {
		return
	}
	if from == continuo.StatusOpen {
		*open--
	}
	if to == continuo.StatusOpen {
		*open++
	}
}

func openCounter(c *continuo.Counts, k continuo.Kind) *int64 {
	switch k {
	case continuo.KindTodo:
		return &c.OpenTodos
	case continuo.KindRisk:
		return &c.OpenRisks
	case continuo.KindQuestion:
		return &c.OpenQuestions
	case continuo.KindGuidance:
		return &c.OpenGuidance
	}
	return nil
}

// ResolveMessage resolves an open todo, question or risk. Resolving a
// resolved message changes nothing and reports changed=false.
func (s *Service) ResolveMessage(ctx context.Context, c *continuo.Caller, sessionRef, messageID, resolution string) (*continuo.Message, bool, error) {
	if err := c.Require(continuo.ScopeSessionsWrite); err != nil {
		return nil, false, err
	}
	var msg *continuo.Message
	var changed bool
	err := s.store.Write(ctx, func(tx store.Tx) error {
		changed = false
		sess, err := s.resolveSession(ctx, tx, c, sessionRef)
		if err != nil {
			return err
		}
		m, err := s.message(ctx, tx, sess.ID, messageID, "message_id")
		if err != nil {
			return err
		}
		msg = m
		if !m.Kind.Resolvable() {
			return continuo.Errorf(continuo.CodeInvalidState, "a %s message cannot be resolved (only todo, question and risk)", m.Kind).
				With("kind", string(m.Kind))
		}
		switch m.Status {
		case continuo.StatusResolved:
			return nil
		case continuo.StatusSuperseded:
			return continuo.Errorf(continuo.CodeInvalidState, "message %s was superseded by %s", m.ID, m.SupersededBy).
				With("superseded_by", m.SupersededBy)
		}
		if sess.Lifecycle != continuo.LifecycleActive {
			return continuo.Errorf(continuo.CodeSessionClosed, "session %s is closed", continuo.SessionRef(sess.Ref))
		}
		prev := sess.Revision
		s.bump(sess)
		count(&sess.Counts, m.Kind, m.Status, continuo.StatusResolved)
		at := sess.UpdatedAt
		m.Status, m.Resolution, m.Resolver, m.ResolvedAt = continuo.StatusResolved, resolution, c.Actor(), &at
		if err := tx.SessionUpdate(ctx, sess, prev); err != nil {
			return err
		}
		if err := tx.MessageUpdate(ctx, m, continuo.StatusOpen); err != nil {
			return err
		}
		changed = true
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("resolve %s in session %s: %w", messageID, sessionRef, err)
	}
	return msg, changed, nil
}

// MessageQuery is the input of list_session_messages.
type MessageQuery struct {
	SessionID string
	Kinds     []continuo.Kind // continuo.ListKinds: may hold instruction
	Statuses  []continuo.Status
	Query     string // words that must all match (store/search.go); "": any
	Oldest    bool   // oldest first; else newest first
	Cursor    string
	Limit     int
}

// MessagePage is one page of a session's listing: its messages and, as
// messages of kind instruction, its instructions, in full.
type MessagePage struct {
	Messages   []continuo.Message
	NextCursor string
	Total      int64
}

// Cursors are "c" + the order ("n" newest first, "o" oldest first) + the
// entry key to continue after (store.EntryKey, base 36, "." between) + "."
// + a short tag of the session, so that a cursor from one session, or from
// the other order, is refused.
func cursor(sessionID string, oldest bool, k store.EntryKey) string {
	h := sha256.Sum256([]byte(sessionID))
	o := "n"
	if oldest {
		o = "o"
	}
	return "c" + o + strconv.FormatInt(k.Pos, 36) + "." + strconv.FormatInt(k.Sub, 36) + "." + hex.EncodeToString(h[:4])
}

func parseCursor(sessionID string, oldest bool, c string) (store.EntryKey, error) {
	bad := continuo.Invalid("cursor", "not a cursor of this session's listing")
	body, ok := strings.CutPrefix(c, "c")
	if !ok || body == "" {
		return store.EntryKey{}, bad
	}
	if (body[0] == 'o') != oldest && (body[0] == 'o' || body[0] == 'n') {
		return store.EntryKey{}, continuo.Invalid("cursor", "a cursor of the other order: list again without a cursor")
	}
	parts := strings.Split(body[1:], ".")
	if len(parts) != 3 {
		return store.EntryKey{}, bad
	}
	pos, err1 := strconv.ParseInt(parts[0], 36, 64)
	sub, err2 := strconv.ParseInt(parts[1], 36, 64)
	k := store.EntryKey{Pos: pos, Sub: sub}
	if err1 != nil || err2 != nil || pos < 0 || sub < 0 || cursor(sessionID, oldest, k) != c {
		return store.EntryKey{}, bad
	}
	return k, nil
}

// ListMessages lists a session's messages and instructions, newest or
// oldest first, with a keyset cursor; Total counts every match.
func (s *Service) ListMessages(ctx context.Context, c *continuo.Caller, q MessageQuery) (*MessagePage, error) {
	if err := c.Require(continuo.ScopeSessionsRead); err != nil {
		return nil, err
	}
	for _, k := range q.Kinds {
		if !k.Listable() {
			return nil, continuo.Invalid("kinds", "unknown kind "+strconv.Quote(string(k)))
		}
	}
	words, err := searchWords(q.Query)
	if err != nil {
		return nil, err
	}
	var page MessagePage
	err = s.store.Read(ctx, func(tx store.Tx) error {
		page = MessagePage{}
		sess, err := s.resolveSession(ctx, tx, c, q.SessionID)
		if err != nil {
			return err
		}
		p := store.EntryListParams{SessionID: sess.ID, Kinds: q.Kinds, Statuses: q.Statuses, Words: words,
			Oldest: q.Oldest, Limit: q.Limit + 1}
		if q.Cursor != "" {
			k, err := parseCursor(sess.ID, q.Oldest, q.Cursor)
			if err != nil {
				return err
			}
			p.After = &k
		}
		entries, err := tx.EntryList(ctx, p)
		if err != nil {
			return err
		}
		if len(entries) > q.Limit {
			entries = entries[:q.Limit]
			page.NextCursor = cursor(sess.ID, q.Oldest, entries[len(entries)-1].Key)
		}
		page.Messages = make([]continuo.Message, len(entries))
		for i := range entries {
			page.Messages[i] = entries[i].Message
		}
		if len(q.Kinds) == 0 && len(q.Statuses) == 0 && len(words) == 0 {
			page.Total = sess.Counts.Messages + sess.Instructions
			return nil
		}
		page.Total, err = tx.EntryCount(ctx, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &page, nil
}
