package auth

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/store"
)

// AdminName names the group and principal that bootstrap creates.
const AdminName = "admin"

const bootstrappedKey = "bootstrapped_at"

// Bootstrap prepares an empty database for first use, in one transaction:
// an admin group and principal, a token holding every scope, and optionally a
// first project granted to the admin group. On a database that was already
// bootstrapped it does nothing and returns nil: the secret is shown once.
// Without issueToken (stdio, where there is no one to show it to) no token
// is made; `continuo token create` makes one later.
func (s *Service) Bootstrap(ctx context.Context, first *ProjectSpec, issueToken bool) (*IssuedToken, *continuo.Project, error) {
	var issued *IssuedToken
	var project *continuo.Project
	err := s.store.Write(ctx, func(tx store.Tx) error {
		issued, project = nil, nil // Write may run this more than once
		if _, err := tx.MetaGet(ctx, bootstrappedKey); err == nil {
			return nil
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		now := s.now()
		p, err := s.ensurePrincipal(ctx, tx, AdminName)
		if err != nil {
			return err
		}
		if issueToken {
			m := newMint(now, continuo.AllScopes(), 0)
			if err := m.create(ctx, tx, p); err != nil {
				return err
			}
			issued = m.issued
		}
		if first != nil {
			project = &continuo.Project{ID: continuo.NewID(continuo.PrefixProject, now), Name: first.Name, Root: first.Root,
				Checks: first.Checks, Writable: first.Writable, CreatedAt: now}
			if err := tx.ProjectCreate(ctx, project); err != nil {
				return fmt.Errorf("register project %s: %w", first.Name, err)
			}
			if err := tx.GrantSet(ctx, continuo.Grant{ProjectID: project.ID, GroupID: p.GroupID, Access: continuo.AccessWrite}); err != nil {
				return err
			}
		}
		return tx.MetaSet(ctx, bootstrappedKey, now.Format(continuo.TimeFormat))
	})
	if err != nil {
		return nil, nil, fmt.Errorf("bootstrap: %w", err)
	}
	return issued, project, nil
}

// Bootstrapped reports whether the database was bootstrapped already.
func (s *Service) Bootstrapped(ctx context.Context) (bool, error) {
	err := s.store.Read(ctx, func(tx store.Tx) error {
		_, err := tx.MetaGet(ctx, bootstrappedKey)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

const sessionKeyMeta = "mcp_session_key"

// SessionKey returns the key that signs MCP session IDs, creating it on
// first use. It lives in the database so that every replica sharing it
// signs and checks with the same key.
func (s *Service) SessionKey(ctx context.Context) ([]byte, error) {
	var key []byte
	err := s.store.Write(ctx, func(tx store.Tx) error {
		v, err := tx.MetaGet(ctx, sessionKeyMeta)
		if errors.Is(err, store.ErrNotFound) {
			var b [32]byte
			if _, err := rand.Read(b[:]); err != nil {
				return err
			}
			v = hex.EncodeToString(b[:])
			err = tx.MetaSet(ctx, sessionKeyMeta, v)
		}
		if err != nil {
			return err
		}
		key, err = hex.DecodeString(v)
		redact.Register(v) // the key's only text form
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("session key: %w", err)
	}
	return key, nil
}
