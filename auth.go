package continuo

import (
	"slices"
	"strings"
	"time"
)

// Scope is a permission carried by a credential (CONTRACT.md §2).
type Scope string

// The scopes. ScopeAdmin implies every other scope.
const (
	ScopeSessionsRead  Scope = "sessions:read"
	ScopeSessionsWrite Scope = "sessions:write"
	ScopeRuntimeRead   Scope = "runtime:read"
	ScopeProjectWrite  Scope = "project:write"
	ScopeCodingAgent   Scope = "coding_agent:run"
	ScopeSwarmOwn      Scope = "swarm:own"
	ScopeSwarmWork     Scope = "swarm:work"
	ScopeAdmin         Scope = "admin"
)

// AllScopes lists every scope, admin last.
func AllScopes() []Scope {
	return []Scope{ScopeSessionsRead, ScopeSessionsWrite, ScopeRuntimeRead, ScopeProjectWrite,
		ScopeCodingAgent, ScopeSwarmOwn, ScopeSwarmWork, ScopeAdmin}
}

// ParseScopes parses a comma- or space-separated scope list. It rejects
// unknown scopes, so a typo never silently grants less (or more).
func ParseScopes(s string) ([]Scope, error) {
	var out []Scope
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		sc := Scope(f)
		if !slices.Contains(AllScopes(), sc) {
			return nil, Invalid("scopes", "unknown scope %q", f)
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		return nil, Invalid("scopes", "at least one scope is required")
	}
	slices.Sort(out)
	return out, nil
}

// Access is a project grant level.
type Access string

// The grant levels; write includes read.
const (
	AccessRead  Access = "read"
	AccessWrite Access = "write"
)

// accesses is the closed set of grant levels, in order.
var accesses = []Access{AccessRead, AccessWrite}

// Accesses lists every grant level, in order.
func Accesses() []Access { return slices.Clone(accesses) }

// Valid reports whether a is one of Accesses.
func (a Access) Valid() bool { return slices.Contains(accesses, a) }

// Caller is the authenticated identity behind one request: a principal of
// one authority group, holding some scopes.
type Caller struct {
	PrincipalID string
	Principal   string
	GroupID     string
	Scopes      []Scope
	TokenID     string // empty for stdio
	Via         string // where a person acts from: ViaDashboard, or "" for a tool call
}

// ViaDashboard is Caller.Via for a person acting on the web dashboard.
const ViaDashboard = "dashboard"

// Actor says who acts, as a note records it (Message.Author, Resolver):
// the principal's name, and "via dashboard" when a person acted on the
// dashboard rather than a model through a tool.
func (c *Caller) Actor() string {
	if c.Via == "" {
		return c.Principal
	}
	return c.Principal + " via " + c.Via
}

// Has reports whether the caller holds scope (admin holds every scope).
func (c *Caller) Has(scope Scope) bool {
	return slices.Contains(c.Scopes, scope) || slices.Contains(c.Scopes, ScopeAdmin)
}

// Require returns forbidden unless the caller holds scope.
func (c *Caller) Require(scope Scope) error {
	if c.Has(scope) {
		return nil
	}
	return Errorf(CodeForbidden, "missing required scope %s", scope).With("scope", string(scope))
}

// Group is an authority group: the owner of sessions and all other work.
type Group struct {
	ID        string    `json:"group_id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// Principal is a user or a service identity; it belongs to one group.
type Principal struct {
	ID        string    `json:"principal_id"`
	Name      string    `json:"name"`
	GroupID   string    `json:"group_id"`
	CreatedAt time.Time `json:"created_at"`
}

// Token is a personal access token's stored record. The secret itself is
// never stored: only Hash.
type Token struct {
	ID          string     `json:"token_id"`
	PrincipalID string     `json:"principal_id"`
	Hash        string     `json:"-"`
	Scopes      []Scope    `json:"scopes"`
	CreatedAt   time.Time  `json:"created_at"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`
	RevokedAt   *time.Time `json:"revoked_at,omitempty"`
}

// Project is a registered project: a name, an optional git checkout the
// server can read, the named checks the operator allows, and whether the
// server may write to it.
type Project struct {
	ID        string           `json:"project_id"`
	Name      string           `json:"name"`
	Root      string           `json:"root,omitempty"`
	Checks    map[string]Check `json:"checks,omitempty"`
	Writable  bool             `json:"writable"`
	CreatedAt time.Time        `json:"created_at"`
}

// Grant gives a group access to a project.
type Grant struct {
	ProjectID string `json:"project_id"`
	GroupID   string `json:"group_id"`
	Access    Access `json:"access"`
}
