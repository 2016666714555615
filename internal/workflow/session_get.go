package workflow

import (
	"context"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// GetSession returns a session the caller may read (by ID or "~sN") and
// its project, as stored: texts are not redacted here, every projection
// redacts what it shows. Another group's session is not_found.
func (s *Service) GetSession(ctx context.Context, c *continuo.Caller, ref string) (*continuo.Session, *continuo.Project, error) {
	if err := c.Require(continuo.ScopeSessionsRead); err != nil {
		return nil, nil, err
	}
	var sess *continuo.Session
	var p *continuo.Project
	err := s.store.Read(ctx, func(tx store.Tx) (err error) {
		sess, p, err = s.resolveWithProject(ctx, tx, c, ref)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return sess, p, nil
}

// GetMessage returns one message of a session the caller may read, as
// stored (see GetSession). An unknown message, or one of another session,
// is not_found.
func (s *Service) GetMessage(ctx context.Context, c *continuo.Caller, ref, messageID string) (*continuo.Message, error) {
	if err := c.Require(continuo.ScopeSessionsRead); err != nil {
		return nil, err
	}
	var m *continuo.Message
	err := s.store.Read(ctx, func(tx store.Tx) error {
		sess, err := s.resolveSession(ctx, tx, c, ref)
		if err != nil {
			return err
		}
		m, err = s.message(ctx, tx, sess.ID, messageID, "message_id")
		return err
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}
