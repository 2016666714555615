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
		if in.ReplyTo != "" {
			if _, err := s.message(ctx, tx, sess.ID, in.ReplyTo, "reply_to"); err != nil {
				return err
			}
		}
		prev := sess.Revision
		s.bump(sess)
		sess.MessageSeq++
		m := &continuo.Message{ID: continuo.NewID(continuo.PrefixMessage, sess.UpdatedAt), SessionID: sess.ID, Seq: sess.MessageSeq,
			Kind: in.Kind, Text: in.Text, Status: continuo.StatusOpen, Priority: in.Priority, Tags: in.Tags,
			ReplyTo: in.ReplyTo, Supersedes: in.Supersedes, CreatedAt: sess.UpdatedAt}
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
		m.Status, m.Resolution, m.ResolvedAt = continuo.StatusResolved, resolution, &at
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
	Kinds     []continuo.Kind
	Statuses  []continuo.Status
	Cursor    string
	Limit     int
}

// MessagePage is one page of messages, newest first.
type MessagePage struct {
	Messages   []continuo.Message
	NextCursor string
	Total      int64
}

// Cursors are "c" + the seq to continue below + "." + a short tag of the
// session, so that a cursor from one session is refused by another.
func cursor(sessionID string, seq int64) string {
	h := sha256.Sum256([]byte(sessionID))
	return "c" + strconv.FormatInt(seq, 36) + "." + hex.EncodeToString(h[:4])
}

func parseCursor(sessionID, c string) (int64, error) {
	body, _, _ := strings.Cut(strings.TrimPrefix(c, "c"), ".")
	seq, err := strconv.ParseInt(body, 36, 64)
	if err != nil || seq <= 0 || cursor(sessionID, seq) != c {
		return 0, continuo.Invalid("cursor", "not a cursor of this session's listing")
	}
	return seq, nil
}

// ListMessages lists a session's messages newest first with a keyset cursor.
func (s *Service) ListMessages(ctx context.Context, c *continuo.Caller, q MessageQuery) (*MessagePage, error) {
	if err := c.Require(continuo.ScopeSessionsRead); err != nil {
		return nil, err
	}
	var page MessagePage
	err := s.store.Read(ctx, func(tx store.Tx) error {
		sess, err := s.resolveSession(ctx, tx, c, q.SessionID)
		if err != nil {
			return err
		}
		p := store.MessageListParams{SessionID: sess.ID, Kinds: q.Kinds, Statuses: q.Statuses, Limit: q.Limit + 1}
		if q.Cursor != "" {
			if p.BeforeSeq, err = parseCursor(sess.ID, q.Cursor); err != nil {
				return err
			}
		}
		msgs, err := tx.MessageList(ctx, p)
		if err != nil {
			return err
		}
		if len(msgs) > q.Limit {
			msgs = msgs[:q.Limit]
			page.NextCursor = cursor(sess.ID, msgs[len(msgs)-1].Seq)
		}
		page.Messages = msgs
		if len(q.Kinds) == 0 && len(q.Statuses) == 0 {
			page.Total = sess.Counts.Messages
			return nil
		}
		page.Total, err = tx.MessageCount(ctx, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &page, nil
}
