package cli

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/continuo-dev/continuo/internal/provider"
	"github.com/continuo-dev/continuo/internal/workflow"
)

// providerSet is what the configured [[providers]] give a serving process.
type providerSet struct {
	providers map[string]provider.Provider
	limits    map[string]int
	runners   []workflow.Runner
}

// providerConfig turns one [[providers]] entry into a provider.Config,
// reading the credential from the named environment variable (never from
// the file). It reports whether the provider can run here: an API key
// variable that is named but unset makes it unavailable.
func providerConfig(pc ProviderConfig, getenv func(string) string) (provider.Config, bool) {
	c := provider.Config{ID: pc.ID, Kind: pc.Kind, Description: pc.Description, BaseURL: pc.BaseURL, Model: pc.Model,
		MaxOutputTokens: pc.MaxOutputTokens, Command: pc.Command, AllowTools: pc.AllowTools}
	available := true
	if pc.APIKeyEnv != "" {
		c.APIKey = getenv(pc.APIKeyEnv)
		available = c.APIKey != ""
	}
	if pc.Kind == provider.KindACP {
		// A cleared environment plus what the config maps, PATH and HOME
		// included: an agent gets no variable the operator did not name.
		c.Env = []string{}
		names := make([]string, 0, len(pc.Env))
		for name := range pc.Env {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if v := getenv(pc.Env[name]); v != "" {
				c.Env = append(c.Env, name+"="+v)
			}
		}
	}
	return c, available
}

// buildProviders makes every configured provider.
func buildProviders(cfgs []ProviderConfig, getenv func(string) string) (*providerSet, error) {
	set := &providerSet{providers: map[string]provider.Provider{}, limits: map[string]int{}, runners: []workflow.Runner{}}
	for _, pc := range cfgs {
		c, available := providerConfig(pc, getenv)
		p, err := provider.New(c)
		if err != nil {
			return nil, fmt.Errorf("provider %s: %w", pc.ID, err)
		}
		set.providers[pc.ID] = p
		set.limits[pc.ID] = max(pc.MaxConcurrency, 1)
		set.runners = append(set.runners, workflow.Runner{ID: pc.ID, Kind: pc.Kind, Model: pc.Model, Description: pc.Description,
			Available: available, Projects: pc.Projects, MCP: pc.MCP, MaxQueued: pc.MaxQueued})
	}
	return set, nil
}

// runProviders is `continuo providers check`: every configured provider's
// configuration and reachability, one line each, no secret printed.
func runProviders(e *env, args []string) error {
	sub, args, err := e.subcommand(args, "providers check [--timeout 20s]")
	if err != nil {
		return err
	}
	if sub != "check" {
		return fmt.Errorf("%w: unknown providers command %q", errUsage, sub)
	}
	fs := e.flags("providers check", "providers check [--timeout 20s]")
	timeout := fs.Duration("timeout", 20*time.Second, "how long each provider may take to answer")
	if _, err := e.parse(fs, args, 0); err != nil {
		return err
	}
	if err := e.cfg.Validate(); err != nil {
		return err
	}
	type line struct {
		ID     string `json:"provider_id"`
		Kind   string `json:"kind"`
		Model  string `json:"model,omitempty"`
		Status string `json:"status"` // ok | unavailable | unreachable
		Detail string `json:"detail,omitempty"`
	}
	var lines []line
	failed := 0
	for _, pc := range e.cfg.Providers {
		l := line{ID: pc.ID, Kind: pc.Kind, Model: pc.Model, Status: "ok"}
		c, available := providerConfig(pc, os.Getenv)
		switch p, err := provider.New(c); {
		case err != nil:
			l.Status, l.Detail = "unreachable", err.Error()
		case !available:
			l.Status, l.Detail = "unavailable", "environment variable "+pc.APIKeyEnv+" is not set"
		default:
			ctx, cancel := context.WithTimeout(e.ctx, *timeout)
			if err := p.Check(ctx); err != nil {
				l.Status, l.Detail = "unreachable", err.Error()
			}
			cancel()
		}
		if l.Status != "ok" {
			failed++
		}
		lines = append(lines, l)
	}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%-20s %-17s %-12s %s\n", l.ID, l.Kind, l.Status, l.Detail)
	}
	if len(lines) == 0 {
		b.WriteString("no providers are configured ([[providers]] in the config file)\n")
	}
	e.out(map[string]any{"providers": lines, "failed": failed}, strings.TrimSuffix(b.String(), "\n"))
	if failed > 0 {
		return reported(fmt.Sprintf("%d of %d providers failed the check", failed, len(lines)))
	}
	return nil
}
