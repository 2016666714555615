package cli

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/datadir"
)

// configuredIssuer is the issuer a server started with this
// configuration has (oauthIssuer), for commands that run beside it.
func (e *env) configuredIssuer() string {
	// A running server of this data directory knows the address it really
	// has (serve --listen, or port 0).
	if s, ok, _ := datadir.ReadServing(e.dataDir, serveLockName); ok && s.Issuer != "" {
		return s.Issuer
	}
	var bound net.Addr
	if a, err := net.ResolveTCPAddr("tcp", e.cfg.Server.Listen); err == nil {
		bound = a
	}
	return oauthIssuer(e.cfg.Server.PublicURL, bound)
}

// withOAuth is withAuth with the OAuth server enabled at the configured
// issuer, for the commands that make links or list OAuth state.
func (e *env) withOAuth(fn func(a *auth.Service) error) error {
	return e.withAuth(func(a *auth.Service) error {
		a.EnableOAuth(auth.OAuthOptions{Issuer: e.configuredIssuer()})
		return fn(a)
	})
}

func runLoginLink(e *env, args []string) error {
	fs := e.flags("login-link", "login-link --principal NAME [--ttl 10m] [--scopes S1,S2]")
	principal := fs.String("principal", "", "the principal `name` who signs in (required)")
	ttl := fs.Duration("ttl", 10*time.Minute, "how long the link stays valid (at most 1h)")
	scopes := fs.String("scopes", string(continuo.ScopeSessionsRead), "what the signed-in browser may do on the dashboard, comma-separated `scopes`: "+scopeList())
	if _, err := e.parse(fs, args, 0); err != nil {
		return err
	}
	if *principal == "" {
		return fmt.Errorf("%w: login-link needs --principal", errUsage)
	}
	sc, err := continuo.ParseScopes(*scopes)
	if err != nil {
		return err
	}
	if *ttl <= 0 || *ttl > time.Hour {
		return continuo.Invalid("ttl", "must be more than 0 and at most 1h")
	}
	if e.configuredIssuer() == "" {
		return continuo.Invalid("server.public_url", "set server.public_url (the address browsers reach this server at) to make sign-in links")
	}
	return e.withOAuth(func(a *auth.Service) error {
		l, err := a.CreateLoginLink(e.ctx, *principal, *ttl, sc)
		if err != nil {
			return err
		}
		e.out(map[string]any{"url": l.URL, "code": l.Code, "expires_at": l.ExpiresAt.Format(time.RFC3339)},
			fmt.Sprintf("single-use sign-in link for %s, valid until %s (keep it secret):\n%s", *principal, l.ExpiresAt.Format(time.Kitchen), l.URL))
		return nil
	})
}

func runOAuth(e *env, args []string) error {
	sub, args, err := e.subcommand(args, "oauth clients", "oauth grants", "oauth revoke CLIENT_ID|GRANT_ID")
	if err != nil {
		return err
	}
	switch sub {
	case "clients":
		fs := e.flags("oauth clients", "oauth clients")
		if _, err := e.parse(fs, args, 0); err != nil {
			return err
		}
		return e.withOAuth(func(a *auth.Service) error {
			cs, err := a.OAuthClients(e.ctx)
			if err != nil {
				return err
			}
			var rows [][]string
			for _, c := range cs {
				state := "active"
				if c.RevokedAt != nil {
					state = "revoked"
				} else if c.UsedAt == nil {
					state = "unused"
				}
				rows = append(rows, []string{c.ClientID, c.Kind, oneLine(c.Name), state, fmt.Sprint(c.ActiveGrants),
					strings.Join(c.RedirectHosts, ","), c.CreatedAt.Format(time.DateOnly)})
			}
			e.out(map[string]any{"clients": cs}, table([]string{"CLIENT_ID", "KIND", "NAME", "STATE", "GRANTS", "REDIRECTS TO", "CREATED"}, rows))
			return nil
		})
	case "grants":
		fs := e.flags("oauth grants", "oauth grants")
		if _, err := e.parse(fs, args, 0); err != nil {
			return err
		}
		return e.withOAuth(func(a *auth.Service) error {
			gs, err := a.OAuthGrants(e.ctx)
			if err != nil {
				return err
			}
			var rows [][]string
			for _, g := range gs {
				rows = append(rows, []string{g.GrantID, oneLine(g.ClientName), g.Principal, g.Group, g.State, g.CreatedAt.Format(time.DateOnly), scopeText(g.Scopes)})
			}
			e.out(map[string]any{"grants": gs}, table([]string{"GRANT_ID", "CLIENT", "PRINCIPAL", "GROUP", "STATE", "CREATED", "SCOPES"}, rows))
			return nil
		})
	case "revoke":
		fs := e.flags("oauth revoke", "oauth revoke CLIENT_ID|GRANT_ID")
		pos, err := e.parse(fs, args, 1)
		if err != nil {
			return err
		}
		return e.withOAuth(func(a *auth.Service) error {
			defer e.hearRevocations(a)()
			kind, n, err := a.RevokeOAuth(e.ctx, pos[0])
			if err != nil {
				return err
			}
			text := fmt.Sprintf("revoked %s %s", kind, pos[0])
			if kind == "client" {
				text += fmt.Sprintf(" and its %d active grant(s)", n)
			}
			e.out(map[string]any{"id": pos[0], "kind": kind, "revoked": true, "grants_revoked": n}, text)
			return nil
		})
	}
	return fmt.Errorf("%w: oauth takes clients, grants or revoke", errUsage)
}

// oneLine keeps a client-chosen name from breaking a table: control
// characters become spaces and it is cut at 40 bytes.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > 40 {
		s = strings.ToValidUTF8(s[:40], "") + "…"
	}
	return s
}
