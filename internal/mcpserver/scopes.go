package mcpserver

import (
	"fmt"
	"slices"
	"strings"

	"github.com/continuo-dev/continuo"
)

// ToolScope is what a tool needs of its caller's scopes: every one of
// Scopes (checked before its arguments are read, and again by the service
// behind it), and, in Also, what some calls need besides.
type ToolScope struct {
	Scopes []continuo.Scope
	Also   string
}

var (
	read    = []continuo.Scope{continuo.ScopeSessionsRead}
	write   = []continuo.Scope{continuo.ScopeSessionsWrite}
	runtime = []continuo.Scope{continuo.ScopeRuntimeRead}
	own     = []continuo.Scope{continuo.ScopeSwarmOwn}
	work    = []continuo.Scope{continuo.ScopeSwarmWork}
)

// toolScopes is the scope table: every tool, by name. README.md's table is
// made from it (scopeTable) and a test keeps the two equal. A tool
// missing here panics at registration.
var toolScopes = map[string]ToolScope{
	"list_projects":            {Scopes: read},
	"work_on_project":          {Scopes: write, Also: "`project:write` with `mode: worktree`"},
	"list_sessions":            {Scopes: read},
	"post_session_message":     {Scopes: write},
	"resolve_session_message":  {Scopes: write},
	"list_session_messages":    {Scopes: read},
	"read_session_handoff":     {Scopes: read},
	"read_session_working_set": {Scopes: read},
	"close_session":            {Scopes: write},
	"create_goal":              {Scopes: write},
	"get_goal":                 {Scopes: read},
	"list_goals":               {Scopes: read},
	"checkpoint_goal":          {Scopes: write},
	"revise_goal_plan":         {Scopes: write},
	"update_goal":              {Scopes: write},
	"run_validation":           {Scopes: []continuo.Scope{continuo.ScopeProjectWrite}},
	"observe_run":              {Scopes: runtime},
	"observe_coding_agent":     {Scopes: runtime},
	"cancel_run":               {Also: "`project:write` for a validation run, `coding_agent:run` for a delegated one"},
	"cancel_coding_agent":      {Also: "`project:write` for a validation run, `coding_agent:run` for a delegated one"},
	"list_runners":             {},
	"start_coding_agent": {Scopes: []continuo.Scope{continuo.ScopeCodingAgent, continuo.ScopeProjectWrite},
		Also: "`runtime:read` with `context_session_id`"},
	"chat_swarm_create":                 {Scopes: own},
	"chat_swarm_invite":                 {Scopes: own},
	"chat_swarm_dispatch":               {Scopes: own},
	"chat_swarm_status":                 {Scopes: own},
	"chat_swarm_collect":                {Scopes: own},
	"chat_swarm_cancel":                 {Scopes: own},
	"chat_swarm_reconcile":              {Scopes: own},
	"chat_swarm_close":                  {Scopes: own},
	"chat_swarm_remove_worker":          {Scopes: own},
	"chat_swarm_prepare_continuation":   {Scopes: own},
	"chat_swarm_approve_continuation":   {Scopes: own},
	"chat_swarm_revoke_continuation":    {Scopes: own},
	"chat_swarm_reconcile_continuation": {Scopes: own},
	"chat_swarm_join":                   {Scopes: work},
	"chat_swarm_next":                   {Scopes: work},
	"chat_swarm_ack":                    {Scopes: work},
	"chat_swarm_checkpoint":             {Scopes: work},
	"chat_swarm_submit":                 {Scopes: work},
	"chat_swarm_fail":                   {Scopes: work},
	"chat_swarm_leave":                  {Scopes: work},
	"chat_swarm_report_context":         {Scopes: work},
	"chat_swarm_context_status":         {Scopes: work},
	"chat_swarm_request_continuation":   {Scopes: work},
	"chat_swarm_continuation_status":    {Scopes: work},
}

// scopesOf returns a tool's entry; a tool without one is a programming
// error.
func scopesOf(name string) ToolScope {
	ts, ok := toolScopes[name]
	if !ok {
		panic(fmt.Sprintf("mcpserver: tool %q has no entry in toolScopes", name))
	}
	return ts
}

// requireScopes refuses a caller without every scope the tool needs.
func requireScopes(c *continuo.Caller, ts ToolScope) error {
	for _, sc := range ts.Scopes {
		if err := c.Require(sc); err != nil {
			return err
		}
	}
	return nil
}

// scopeTable is the scope table as README.md shows it: a Markdown table,
// one row per tool in name order (`admin` holds every scope).
func scopeTable() string {
	names := make([]string, 0, len(toolScopes))
	for n := range toolScopes {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString("| tool | needs | and |\n|---|---|---|\n")
	for _, n := range names {
		ts := toolScopes[n]
		needs := "—"
		if len(ts.Scopes) > 0 {
			parts := make([]string, len(ts.Scopes))
			for i, sc := range ts.Scopes {
				parts[i] = "`" + string(sc) + "`"
			}
			needs = strings.Join(parts, " + ")
		}
		also := ts.Also
		if also == "" {
			also = "—"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", n, needs, also)
	}
	return b.String()
}
