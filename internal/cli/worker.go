package cli

import (
	"fmt"
	"os"
	"strconv"

	"github.com/continuo-dev/continuo/internal/hook"
	"github.com/continuo-dev/continuo/internal/mcpserver"
	"github.com/continuo-dev/continuo/internal/worker"
)

const workerUsage = "worker --swarm ID --provider PROVIDER_ID --project P [--server URL] [--token-env VAR] [--invite-env VAR] [--label L]"

// defaultServer is the MCP endpoint of a `continuo serve` with the default
// listen address.
const defaultServer = "http://127.0.0.1:7300/mcp"

// workerToolsets are the toolsets of the tools the reference worker calls:
// the worker loop, and start_coding_agent and observe_coding_agent for each
// task. It asks for them on whatever endpoint it is given (a path's
// toolset and the header's add up).
const workerToolsets = "worker,delegation"

// runWorker is `continuo worker`: the reference Chat Swarm worker. Its
// invite, token and continuation ticket come from the environment, never
// from argv (a process list shows argv), and so does its carrier key when
// whoever starts it names one ($CONTINUO_CARRIER_KEY; else it is random).
func runWorker(e *env, args []string) error {
	fs := e.flags("worker", workerUsage+"   (carry one swarm worker; model turns run on the server's provider)")
	server := fs.String("server", "", "MCP `url` of the Continuo server (default $CONTINUO_SERVER, else "+defaultServer+")")
	tokenEnv := fs.String("token-env", "CONTINUO_TOKEN", "environment `variable` holding the token (scopes swarm:work, coding_agent:run, project:write, runtime:read)")
	swarmID := fs.String("swarm", "", "the swarm `id` (default $CONTINUO_SWARM_ID)")
	providerID := fs.String("provider", "", "the model `provider` that runs each task (list_runners)")
	project := fs.String("project", "", "the `project` the provider's runs belong to")
	inviteEnv := fs.String("invite-env", "CONTINUO_INVITE", "environment `variable` holding the swarm's invite (a new worker)")
	label := fs.String("label", "", "what this worker is, for the owner (default: continuo-worker-PID)")
	if _, err := e.parseFlags(fs, args, 0); err != nil {
		return err
	}
	url := firstSet(*server, os.Getenv("CONTINUO_SERVER"), defaultServer)
	cfg := worker.Config{SwarmID: firstSet(*swarmID, os.Getenv("CONTINUO_SWARM_ID")), ProviderID: *providerID, Project: *project,
		Ticket: os.Getenv("CONTINUO_CONTINUATION_TICKET"), Invite: os.Getenv(*inviteEnv), CarrierKey: os.Getenv("CONTINUO_CARRIER_KEY"),
		Label: firstSet(*label, "continuo-worker-"+strconv.Itoa(os.Getpid())), Logger: e.log}
	switch {
	case cfg.SwarmID == "" || cfg.ProviderID == "" || cfg.Project == "":
		return fmt.Errorf("%w: %s", errUsage, workerUsage)
	case cfg.Ticket == "" && cfg.Invite == "":
		return fmt.Errorf("%w: no invite in $%s and no $CONTINUO_CONTINUATION_TICKET", errUsage, *inviteEnv)
	}
	token := os.Getenv(*tokenEnv)
	if token == "" {
		return fmt.Errorf("%w: no token in $%s", errUsage, *tokenEnv)
	}
	// The worker loop, and the provider's runs that do each task.
	c, err := hook.Dial(e.ctx, url, token, workerToolsets, mcpserver.Version)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", url, err)
	}
	defer c.Close()
	why, err := worker.Run(e.ctx, c, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "continuo worker: stopped (%s)\n", why)
	return nil
}

// firstSet returns the first non-empty value.
func firstSet(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
