package mcpserver_test

// swarmTools are Chat Swarm's tools; TestSwarmBadInput holds their bad
// input.
var swarmTools = []string{"chat_swarm_create", "chat_swarm_invite", "chat_swarm_join", "chat_swarm_dispatch", "chat_swarm_next",
	"chat_swarm_ack", "chat_swarm_checkpoint", "chat_swarm_submit", "chat_swarm_fail", "chat_swarm_status", "chat_swarm_collect",
	"chat_swarm_cancel", "chat_swarm_reconcile", "chat_swarm_close"}
