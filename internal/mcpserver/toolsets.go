package mcpserver

import (
	"fmt"
	"strings"

	"github.com/continuo-dev/continuo"
)

// Toolsets (CONTRACT.md §4): every tool a server lists sits in the context
// of every request of a client that sends the whole list, so an endpoint
// lists only the tools of its toolsets. A person who wants continuity
// never calls the swarm's tools, and a worker conversation needs its loop
// and nothing else. Toolsets decide what a conversation sees; scopes decide
// what a caller may do, and neither widens the other.

// Toolsets is a set of toolsets. The zero value means "the default".
type Toolsets uint8

// The toolsets, in their order.
const (
	// ToolsetContinuity: projects, sessions and notes, the brief and the working
	// set, goals, validation — what the instructions talk about.
	ToolsetContinuity Toolsets = 1 << iota
	// ToolsetDelegation: runs on model providers and coding agents.
	ToolsetDelegation
	// ToolsetSwarm: the Chat Swarm's owner.
	ToolsetSwarm
	// ToolsetWorker: a Chat Swarm worker's loop, and continuing a worker.
	ToolsetWorker

	// AllToolsets is every toolset ("all").
	AllToolsets = ToolsetContinuity | ToolsetDelegation | ToolsetSwarm | ToolsetWorker
	// DefaultToolsets is what an endpoint lists when nothing chose.
	DefaultToolsets = ToolsetContinuity
)

// ToolsetsHeader names the toolsets of a request to /mcp, comma-separated
// (one toolset can also be named by the path /mcp/x/{toolset}).
const ToolsetsHeader = "X-MCP-Toolsets"

// toolsetNames are the toolsets' names, in their order.
var toolsetNames = []struct {
	name string
	set  Toolsets
}{{"continuity", ToolsetContinuity}, {"delegation", ToolsetDelegation}, {"swarm", ToolsetSwarm}, {"worker", ToolsetWorker}}

// allName names every toolset.
const allName = "all"

// ToolsetNames returns the names a toolset list may hold, "all" last.
func ToolsetNames() []string {
	out := make([]string, 0, len(toolsetNames)+1)
	for _, n := range toolsetNames {
		out = append(out, n.name)
	}
	return append(out, allName)
}

// ParseToolsets reads toolset names, each argument one name or several
// separated by commas; spaces around a name are ignored. No name at all is
// 0 (the default applies). An unknown name is invalid_input naming it and
// the known ones.
func ParseToolsets(lists ...string) (Toolsets, error) {
	var out Toolsets
	for _, list := range lists {
		for _, name := range strings.Split(list, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			set, ok := ToolsetNamed(name)
			if !ok {
				if len(name) > 64 {
					name = strings.ToValidUTF8(name[:64], "") + "…"
				}
				return 0, continuo.Errorf(continuo.CodeInvalidInput, "unknown toolset %q (the toolsets are %s)", name,
					strings.Join(ToolsetNames(), ", ")).With("toolsets", ToolsetNames())
			}
			out |= set
		}
	}
	return out, nil
}

// ToolsetNamed returns the toolsets of exactly one name ("all": every
// one), as a path names them.
func ToolsetNamed(name string) (Toolsets, bool) {
	if name == allName {
		return AllToolsets, true
	}
	for _, n := range toolsetNames {
		if n.name == name {
			return n.set, true
		}
	}
	return 0, false
}

// Names returns the names of the toolsets in t, in their order.
func (t Toolsets) Names() []string {
	var out []string
	for _, n := range toolsetNames {
		if t&n.set != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

// String is t as a toolset list: "continuity,swarm"; "all" for every one.
func (t Toolsets) String() string {
	if t == AllToolsets {
		return allName
	}
	if t == 0 {
		return "default"
	}
	return strings.Join(t.Names(), ",")
}

// toolToolsets says which toolsets list each tool: the one table of it.
// Adding a tool to a set is a line here; a tool registered without a line
// stops the server from starting (add panics), and TestToolsetTable fails
// on a tool in no set and on a line that names no tool. A tool may be in
// several sets (ToolsetContinuity|ToolsetDelegation); one set is the rule.
var toolToolsets = map[string]Toolsets{
	// Projects, sessions and notes.
	"list_projects":            ToolsetContinuity,
	"work_on_project":          ToolsetContinuity,
	"list_sessions":            ToolsetContinuity,
	"post_session_message":     ToolsetContinuity,
	"resolve_session_message":  ToolsetContinuity,
	"list_session_messages":    ToolsetContinuity,
	"read_session_handoff":     ToolsetContinuity,
	"read_session_working_set": ToolsetContinuity,
	"close_session":            ToolsetContinuity,
	// Goals.
	"create_goal":      ToolsetContinuity,
	"get_goal":         ToolsetContinuity,
	"list_goals":       ToolsetContinuity,
	"checkpoint_goal":  ToolsetContinuity,
	"revise_goal_plan": ToolsetContinuity,
	"update_goal":      ToolsetContinuity,
	// Validation: a check's run, and its output (why it failed).
	"run_validation": ToolsetContinuity,
	"observe_run":    ToolsetContinuity,

	// Runs on model providers and coding agents.
	"list_runners":         ToolsetDelegation,
	"start_coding_agent":   ToolsetDelegation,
	"observe_coding_agent": ToolsetDelegation,
	"cancel_coding_agent":  ToolsetDelegation,
	"cancel_run":           ToolsetDelegation,

	// The swarm's owner.
	"chat_swarm_create":                 ToolsetSwarm,
	"chat_swarm_invite":                 ToolsetSwarm,
	"chat_swarm_dispatch":               ToolsetSwarm,
	"chat_swarm_status":                 ToolsetSwarm,
	"chat_swarm_collect":                ToolsetSwarm,
	"chat_swarm_cancel":                 ToolsetSwarm,
	"chat_swarm_reconcile":              ToolsetSwarm,
	"chat_swarm_close":                  ToolsetSwarm,
	"chat_swarm_remove_worker":          ToolsetSwarm,
	"chat_swarm_prepare_continuation":   ToolsetSwarm,
	"chat_swarm_approve_continuation":   ToolsetSwarm,
	"chat_swarm_revoke_continuation":    ToolsetSwarm,
	"chat_swarm_reconcile_continuation": ToolsetSwarm,

	// A worker's loop, and a new conversation continuing a worker. The
	// context tools take the worker's carrier: the owner cannot call them.
	"chat_swarm_join":       ToolsetWorker,
	"chat_swarm_next":       ToolsetWorker,
	"chat_swarm_ack":        ToolsetWorker,
	"chat_swarm_checkpoint": ToolsetWorker,
	"chat_swarm_submit":     ToolsetWorker,
	"chat_swarm_fail":       ToolsetWorker,
	// Leaving is the worker's; listed to the owner too, whose conversation
	// may also carry a worker of another swarm.
	"chat_swarm_leave":                ToolsetWorker | ToolsetSwarm,
	"chat_swarm_report_context":       ToolsetWorker,
	"chat_swarm_context_status":       ToolsetWorker,
	"chat_swarm_request_continuation": ToolsetWorker,
	"chat_swarm_continuation_status":  ToolsetWorker,
}

// promptToolsets and resourceToolsets place the prompts and the resource
// templates (by name) as toolToolsets places the tools: the recovery
// sequence and the brief belong with the session tools.
var (
	promptToolsets = map[string]Toolsets{
		"continue_work": ToolsetContinuity,
		"save_handoff":  ToolsetContinuity,
	}
	resourceToolsets = map[string]Toolsets{
		"handoff":     ToolsetContinuity,
		"working-set": ToolsetContinuity,
	}
)

// serves reports whether an endpoint of sets lists what table places
// under name. A name the table lacks is a programming error, caught at
// start-up and by every test.
func serves(table map[string]Toolsets, kind, name string, sets Toolsets) bool {
	in, ok := table[name]
	if !ok || in == 0 {
		panic(fmt.Sprintf("mcpserver: %s %q is in no toolset (toolsets.go)", kind, name))
	}
	return in&sets != 0
}

// anyServed reports whether an endpoint of sets lists anything of table.
func anyServed(table map[string]Toolsets, sets Toolsets) bool {
	for _, in := range table {
		if in&sets != 0 {
			return true
		}
	}
	return false
}
