package cli

import (
	"slices"
	"sort"

	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/mcpserver"

	toml "github.com/pelletier/go-toml/v2"
)

// Config is the operator configuration of a continuo server, read from a
// TOML file. Every key is optional; DefaultConfig supplies the defaults and
// unknown keys are rejected so that a misspelt setting is never silently
// ignored.
type Config struct {
	// Server configures the HTTP listener.
	Server ServerConfig `toml:"server"`
	// Database selects the store.
	Database DatabaseConfig `toml:"database"`
	// Stdio configures `continuo stdio`.
	Stdio StdioConfig `toml:"stdio"`
	// Providers lists the model providers workflows can call.
	Providers []ProviderConfig `toml:"providers"`
	// Swarm configures how workers are started.
	Swarm SwarmConfig `toml:"swarm"`
	// Projects declares projects' validation checks by project name
	// ([projects.NAME.checks.CHECK]); a start applies them to the database.
	Projects map[string]ProjectConfig `toml:"projects"`
	// Log configures what every command writes to stderr.
	Log LogConfig `toml:"log"`
}

// LogConfig is the [log] table; --log-level and --log-format override it.
type LogConfig struct {
	// Level is debug, info (the default), warn or error.
	Level string `toml:"level"`
	// Format is text (the default) or json: one slog record a line.
	Format string `toml:"format"`
}

// validate checks the [log] table.
func (l LogConfig) validate(p *problems) {
	if _, err := logLevel(l.Level); err != nil {
		p.add("log.level", err.Error())
	}
	if l.Format != "" && l.Format != "text" && l.Format != "json" {
		p.add("log.format", "must be text or json")
	}
}

// ProjectConfig is one [projects.NAME] table.
type ProjectConfig struct {
	// Root is the project's git checkout. It registers the project (with
	// write access for the admin group) when the database has none of that
	// name; for an existing project it must name the same checkout.
	Root string `toml:"root"`
	// Checks replace the project's checks at every start: check name →
	// command (argv, run without a shell), timeout and extra environment.
	Checks map[string]CheckConfig `toml:"checks"`
}

// CheckConfig is one [projects.NAME.checks.CHECK] table.
type CheckConfig struct {
	Command     []string `toml:"command"`
	TimeoutSecs int      `toml:"timeout_secs"` // 0: 600
	Env         []string `toml:"env"`          // variables passed through besides PATH, HOME, USER, LANG, TMPDIR, …
}

// ServerConfig is the [server] table.
type ServerConfig struct {
	// Listen is the host:port the HTTP server listens on.
	Listen string `toml:"listen"`
	// PublicURL is the externally visible origin (https://host[:port], or
	// http:// on a loopback host; no path): the OAuth issuer, and the base
	// of links. Empty means http://<listen address> when that is a
	// loopback address, and OAuth off otherwise.
	PublicURL string `toml:"public_url"`
	// AllowedOrigins are browser origins (scheme://host[:port]) allowed to
	// call /mcp besides loopback and the public URL's origin.
	AllowedOrigins []string `toml:"allowed_origins"`
	// MaxSessions and MaxSessionsPerPrincipal cap the stateful MCP
	// sessions one process holds (0: 2000 and 100); SessionIdleSecs is how
	// long one may go without a request (0: 1800).
	MaxSessions             int `toml:"max_sessions"`
	MaxSessionsPerPrincipal int `toml:"max_sessions_per_principal"`
	SessionIdleSecs         int `toml:"session_idle_secs"`
	// Toolsets are what /mcp and `continuo stdio` list when a client names
	// none: continuity (the default), delegation, swarm, worker, or all.
	// /mcp/x/{toolset} and the X-MCP-Toolsets header choose per client.
	Toolsets []string `toml:"toolsets"`
	// BodyTimeoutSecs bounds how long a client may take to send one
	// request body, on every route (0: 30).
	BodyTimeoutSecs int `toml:"body_timeout_secs"`
}

// DatabaseConfig is the [database] table.
type DatabaseConfig struct {
	// URL is "sqlite://PATH" or "postgres://..." (also "postgresql://").
	// Empty means a SQLite database in the data directory; see
	// Config.DatabaseURL.
	URL string `toml:"url"`
}

// StdioConfig is the [stdio] table.
type StdioConfig struct {
	// Principal is the principal `continuo stdio` runs as when no
	// --principal flag is given.
	Principal string `toml:"principal"`
}

// ProviderConfig is one [[providers]] entry: a model endpoint or an ACP
// agent that workflows can call.
type ProviderConfig struct {
	// ID names the provider in workflows; unique, 1..64 of [A-Za-z0-9_.-].
	ID string `toml:"id"`
	// Kind is "openai-responses", "openai-chat" or "acp".
	Kind string `toml:"kind"`
	// BaseURL is the API base URL (openai kinds).
	BaseURL string `toml:"base_url"`
	// Model is the model name (required for openai kinds).
	Model string `toml:"model"`
	// APIKeyEnv names the environment variable holding the API key. The key
	// itself never appears in the file. Empty means no key, for local
	// endpoints that need none.
	APIKeyEnv string `toml:"api_key_env"`
	// MaxConcurrency caps concurrent calls; 0 means 1.
	MaxConcurrency int `toml:"max_concurrency"`
	// Projects restricts the provider to these projects; empty means every
	// project.
	Projects []string `toml:"projects"`
	// Description is shown to operators and agents.
	Description string `toml:"description"`
	// Command is the argv of the agent (kind "acp").
	Command []string `toml:"command"`
	// Env maps an environment variable of the agent to the variable of
	// continuo's own environment it is copied from (kind "acp"), so that
	// secrets are passed by reference rather than written in the file.
	// Nothing else is passed: map PATH and HOME too if the agent needs them.
	Env map[string]string `toml:"env"`
	// MaxQueued bounds the runs of this provider waiting to start (0: 16);
	// past it start_coding_agent answers queue_full.
	MaxQueued int `toml:"max_queued"`
	// MaxOutputTokens bounds a turn's output (openai kinds; 0: the API's
	// default).
	MaxOutputTokens int `toml:"max_output_tokens"`
	// AllowTools are the ACP tool kinds whose permission requests are
	// allowed (read, search, fetch, think, …); every other is rejected.
	AllowTools []string `toml:"allow_tools"`
	// MCP gives an ACP agent Continuo as an MCP server for each run.
	MCP bool `toml:"mcp"`
}

// SwarmConfig is the [swarm] table.
type SwarmConfig struct {
	// Runtime is "manual" (workers are started by the operator) or
	// "process" (continuo starts ProcessCommand itself).
	Runtime string `toml:"runtime"`
	// ProcessCommand is the argv of a worker for the "process" runtime.
	ProcessCommand []string `toml:"process_command"`
	// ProcessEnv names the variables of the server's environment a started
	// carrier gets besides PATH and HOME.
	ProcessEnv []string `toml:"process_env"`
	// TrustedCarrierMeta names a request _meta key that the chat host sets
	// to its conversation's ID: when set, that value identifies a swarm
	// carrier before the MCP session does (CONTRACT.md §2). Set it only
	// for hosts known to set the key, and to set it for every request.
	TrustedCarrierMeta string `toml:"trusted_carrier_meta"`
}

// DefaultConfig returns the configuration used for every key a file does
// not set: listening on 127.0.0.1:7300, a SQLite database in the data
// directory (empty database URL), and the manual swarm runtime with
// process command ["continuo", "worker"].
func DefaultConfig() Config {
	return Config{
		Server: ServerConfig{Listen: "127.0.0.1:7300"},
		Swarm: SwarmConfig{
			Runtime:        "manual",
			ProcessCommand: []string{"continuo", "worker"},
		},
	}
}

// LoadConfig reads the TOML file at path over DefaultConfig and validates
// the result. An empty path means no file: the defaults alone. Unknown keys,
// at any depth, are errors naming the key and its line. Every error is
// prefixed with path.
//
// Environment overrides are not applied; callers apply them with ApplyEnv
// (and then flags), and should call Validate again afterwards.
func LoadConfig(path string) (Config, error) {
	cfg := DefaultConfig()
	if path == "" {
		return cfg, cfg.Validate()
	}
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	defer f.Close()

	dec := toml.NewDecoder(f)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		// keyName renders a TOML key the way an operator would write it,
		// quoting parts that are not bare keys.
		keyName := func(k toml.Key) string {
			parts := make([]string, len(k))
			for i, p := range k {
				bare := p != ""
				for _, r := range p {
					if !(r == '_' || r == '-' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')) {
						bare = false
						break
					}
				}
				if bare {
					parts[i] = p
				} else {
					parts[i] = strconv.Quote(p)
				}
			}
			return strings.Join(parts, ".")
		}
		var strict *toml.StrictMissingError
		if errors.As(err, &strict) {
			// The library reports every unknown key but its own message
			// names none of them; list each with its position.
			errs := make([]error, len(strict.Errors))
			for i := range strict.Errors {
				e := &strict.Errors[i]
				line, col := e.Position()
				errs[i] = fmt.Errorf("%s:%d:%d: unknown key %q", path, line, col, keyName(e.Key()))
			}
			return Config{}, errors.Join(errs...)
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, col := de.Position()
			if k := de.Key(); len(k) > 0 {
				return Config{}, fmt.Errorf("%s:%d:%d: %s: %w", path, line, col, keyName(k), err)
			}
			return Config{}, fmt.Errorf("%s:%d:%d: %w", path, line, col, err)
		}
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}

	if err := cfg.Validate(); err != nil {
		// Prefix each problem rather than the joined whole, so that every
		// line of the message says which file it is about.
		var errs []error
		if multi, ok := err.(interface{ Unwrap() []error }); ok {
			errs = multi.Unwrap()
		} else {
			errs = []error{err}
		}
		for i, e := range errs {
			errs[i] = fmt.Errorf("%s: %w", path, e)
		}
		return Config{}, errors.Join(errs...)
	}
	return cfg, nil
}

// ApplyEnv overrides settings from the environment: CONTINUO_LISTEN
// (server.listen), CONTINUO_DATABASE_URL (database.url),
// CONTINUO_PUBLIC_URL (server.public_url) and CONTINUO_TOOLSETS
// (server.toolsets, comma-separated). A variable that is unset or empty
// leaves the setting alone. getenv is normally os.Getenv (nil means
// os.Getenv); tests pass a map lookup. It does not validate; call Validate
// afterwards.
func (c *Config) ApplyEnv(getenv func(string) string) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if v := getenv("CONTINUO_LISTEN"); v != "" {
		c.Server.Listen = v
	}
	if v := getenv("CONTINUO_DATABASE_URL"); v != "" {
		c.Database.URL = v
	}
	if v := getenv("CONTINUO_PUBLIC_URL"); v != "" {
		c.Server.PublicURL = v
	}
	if v := getenv("CONTINUO_TOOLSETS"); v != "" {
		c.Server.Toolsets = strings.Split(v, ",")
	}
}

// DefaultToolsets returns the toolsets of server.toolsets (Validate has
// checked the names): the default continuity when it names none.
func (c Config) DefaultToolsets() mcpserver.Toolsets {
	sets, _ := mcpserver.ParseToolsets(c.Server.Toolsets...)
	if sets == 0 {
		sets = mcpserver.DefaultToolsets
	}
	return sets
}

// Validate checks c and reports every problem at once, joined with
// errors.Join, each prefixed with the key it is about (for example
// "server.listen: ..." or "providers[1].kind: ..."), so that an operator can
// fix a file in one pass. It returns nil if c is valid.
//
// Values that may hold credentials (the database URL) are never echoed.
func (c Config) Validate() error {
	var p problems
	c.Server.validate(&p)
	c.Database.validate(&p)
	validateProviders(c.Providers, &p)
	c.Swarm.validate(&p)
	c.Log.validate(&p)
	for _, name := range sortedNames(c.Projects) {
		pc := c.Projects[name]
		key := "projects." + name
		if pc.Root != "" && !filepath.IsAbs(pc.Root) {
			p.add(key+".root", "must be an absolute path")
		}
		if len(pc.Checks) > continuo.MaxChecks {
			p.add(key+".checks", fmt.Sprintf("at most %d checks", continuo.MaxChecks))
		}
		for _, check := range sortedNames(pc.Checks) {
			if err := pc.Checks[check].check().Validate(); err != nil {
				p.add(key+".checks."+check, err.Error())
			}
		}
	}
	return errors.Join(p...)
}

// problems collects what Validate finds, each prefixed with its key.
type problems []error

func (p *problems) add(key, msg string) { *p = append(*p, errors.New(key+": "+msg)) }

// validate checks the [server] table.
func (s ServerConfig) validate(p *problems) {
	if host, port, err := net.SplitHostPort(s.Listen); err != nil {
		p.add("server.listen", fmt.Sprintf("%q is not host:port (for example 127.0.0.1:7300)", s.Listen))
	} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		p.add("server.listen", fmt.Sprintf("port %q of %q is not a number from 0 to 65535", port, net.JoinHostPort(host, port)))
	}
	if u := s.PublicURL; u != "" {
		if why := httpURL(u); why != "" {
			p.add("server.public_url", why)
		} else if strings.ContainsAny(u, "?#") {
			// The public URL is a base that paths are appended to; a
			// query or fragment would end up in the middle of every link.
			p.add("server.public_url", "must not have a query or fragment")
		} else if pu, _ := url.Parse(u); pu.User != nil {
			// It is published in OAuth metadata, so credentials in it
			// would be handed to every client.
			p.add("server.public_url", "must not contain user info")
		} else if pu.Path != "" && pu.Path != "/" {
			// It is the OAuth issuer, whose endpoints and metadata live at
			// fixed paths of its origin.
			p.add("server.public_url", "must not have a path (it is the server's origin, scheme://host[:port])")
		} else if pu.Scheme != "https" && !loopbackName(pu.Hostname()) {
			// Tokens and sign-in cookies travel to it: only a loopback
			// address may be spoken to in the clear.
			p.add("server.public_url", "must be https:// (http:// only on a loopback host such as 127.0.0.1)")
		}
	}
	for i, o := range s.AllowedOrigins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			p.add(fmt.Sprintf("server.allowed_origins[%d]", i), fmt.Sprintf("%q is not an origin (scheme://host[:port])", o))
		}
	}
	bound := func(key string, v, max int) {
		if v < 0 || v > max {
			p.add("server."+key, fmt.Sprintf("must be 0 (the default) to %d, got %d", max, v))
		}
	}
	for i, name := range s.Toolsets {
		if _, err := mcpserver.ParseToolsets(name); err != nil || strings.Contains(name, ",") {
			p.add(fmt.Sprintf("server.toolsets[%d]", i), fmt.Sprintf("%q is not a toolset (want one of %s)", name, strings.Join(mcpserver.ToolsetNames(), ", ")))
		}
	}
	bound("max_sessions", s.MaxSessions, 1_000_000)
	bound("max_sessions_per_principal", s.MaxSessionsPerPrincipal, 1_000_000)
	bound("session_idle_secs", s.SessionIdleSecs, 7*24*3600)
	bound("body_timeout_secs", s.BodyTimeoutSecs, 3600)
}

// validate checks the [database] table.
func (d DatabaseConfig) validate(p *problems) {
	if d.URL != "" {
		if _, _, err := ParseDatabaseURL(d.URL); err != nil {
			p.add("database.url", err.Error())
		}
	}
}

// acpToolKinds are the tool kinds of the Agent Client Protocol.
var acpToolKinds = []string{"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"}

// validateProviders checks the [[providers]] entries.
func validateProviders(providers []ProviderConfig, p *problems) {
	firstIndex := make(map[string]int, len(providers))
	for i, pc := range providers {
		key := func(field string) string { return fmt.Sprintf("providers[%d].%s", i, field) }

		switch {
		case pc.ID == "":
			p.add(key("id"), "required")
		case len(pc.ID) > 64:
			p.add(key("id"), fmt.Sprintf("must be at most 64 characters, got %d", len(pc.ID)))
		case strings.IndexFunc(pc.ID, func(r rune) bool {
			return !(r == '_' || r == '.' || r == '-' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9'))
		}) >= 0:
			p.add(key("id"), fmt.Sprintf("%q may only contain letters, digits, '_', '.' and '-'", pc.ID))
		default:
			if j, dup := firstIndex[pc.ID]; dup {
				p.add(key("id"), fmt.Sprintf("duplicate id %q (also providers[%d])", pc.ID, j))
			} else {
				firstIndex[pc.ID] = i
			}
		}

		switch pc.Kind {
		case "openai-responses", "openai-chat":
			if pc.BaseURL == "" {
				p.add(key("base_url"), "required for kind "+pc.Kind)
			} else if why := httpURL(pc.BaseURL); why != "" {
				p.add(key("base_url"), why)
			}
			if pc.Model == "" {
				p.add(key("model"), "required for kind "+pc.Kind)
			}
			// A command or env on an HTTP provider would be silently
			// ignored; it almost certainly means the kind is wrong.
			if len(pc.Command) > 0 {
				p.add(key("command"), "only valid for kind acp")
			}
			if len(pc.Env) > 0 {
				p.add(key("env"), "only valid for kind acp")
			}
		case "acp":
			if len(pc.Command) == 0 || pc.Command[0] == "" {
				p.add(key("command"), "required for kind acp (the agent's argv)")
			}
			if pc.BaseURL != "" {
				p.add(key("base_url"), "not valid for kind acp")
			}
			if pc.APIKeyEnv != "" {
				p.add(key("api_key_env"), "not valid for kind acp (pass secrets through env)")
			}
			for name, src := range pc.Env {
				// Lower case is allowed here because conventional
				// variables such as http_proxy are lower case.
				if !envName(name, true) {
					p.add(key("env"), fmt.Sprintf("%q is not a valid environment variable name", name))
				}
				if !envName(src, true) {
					p.add(key("env."+name), fmt.Sprintf("%q is not a valid environment variable name", src))
				}
			}
		case "":
			p.add(key("kind"), "required (want openai-responses, openai-chat or acp)")
		default:
			p.add(key("kind"), fmt.Sprintf("unknown kind %q (want openai-responses, openai-chat or acp)", pc.Kind))
		}

		if pc.APIKeyEnv != "" && !envName(pc.APIKeyEnv, false) {
			p.add(key("api_key_env"), fmt.Sprintf("%q is not a valid environment variable name ([A-Z_][A-Z0-9_]*)", pc.APIKeyEnv))
		}
		if pc.MaxConcurrency < 0 || pc.MaxConcurrency > 64 {
			p.add(key("max_concurrency"), fmt.Sprintf("must be 0 (meaning 1) to 64, got %d", pc.MaxConcurrency))
		}
		if pc.MaxQueued < 0 || pc.MaxQueued > 1000 {
			p.add(key("max_queued"), fmt.Sprintf("must be 0 (meaning 16) to 1000, got %d", pc.MaxQueued))
		}
		if pc.MaxOutputTokens < 0 || pc.MaxOutputTokens > 1_000_000 {
			p.add(key("max_output_tokens"), fmt.Sprintf("must be 0 (the API's default) to 1000000, got %d", pc.MaxOutputTokens))
		}
		if pc.Kind != "acp" && (len(pc.AllowTools) > 0 || pc.MCP) {
			p.add(key("allow_tools"), "allow_tools and mcp are only valid for kind acp")
		}
		for _, k := range pc.AllowTools {
			if !slices.Contains(acpToolKinds, k) {
				p.add(key("allow_tools"), fmt.Sprintf("%q is not an ACP tool kind (want one of %s)", k, strings.Join(acpToolKinds, ", ")))
			}
		}
		for j, proj := range pc.Projects {
			if proj == "" {
				p.add(fmt.Sprintf("providers[%d].projects[%d]", i, j), "must not be empty")
			}
		}
	}
}

// validate checks the [swarm] table.
func (s SwarmConfig) validate(p *problems) {
	switch s.Runtime {
	case "manual":
	case "process":
		if len(s.ProcessCommand) == 0 || s.ProcessCommand[0] == "" {
			p.add("swarm.process_command", "required for runtime process")
		}
	default:
		p.add("swarm.runtime", fmt.Sprintf("unknown runtime %q (want manual or process)", s.Runtime))
	}
	for _, n := range s.ProcessEnv {
		if !envName(n, true) {
			p.add("swarm.process_env", fmt.Sprintf("%q is not an environment variable name", n))
		}
	}
	if k := s.TrustedCarrierMeta; k != "" && (len(k) > 128 || strings.ContainsAny(k, " \t\n")) {
		p.add("swarm.trusted_carrier_meta", "must be a _meta key of at most 128 bytes, without spaces")
	}
}

// envName reports whether s is an environment variable name:
// [A-Z_][A-Z0-9_]*, or with lower-case letters too if lower is set.
func envName(s string, lower bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		ok := ch == '_' || ('A' <= ch && ch <= 'Z') ||
			(lower && 'a' <= ch && ch <= 'z') || (i > 0 && '0' <= ch && ch <= '9')
		if !ok {
			return false
		}
	}
	return true
}

// httpURL returns why s is not an absolute http(s) URL with a host, or ""
// if it is.
func httpURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "not a valid URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("must be an absolute http:// or https:// URL, got scheme %q", u.Scheme)
	case u.Host == "":
		return "must be an absolute URL with a host"
	}
	return ""
}

// loopbackName reports whether host (without port) names the loopback
// interface: localhost, 127.0.0.0/8 or ::1.
func loopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// DatabaseURL returns the database URL to use: the configured one, or a
// SQLite database named continuo.db in dataDir. Pass the result to
// ParseDatabaseURL for the driver and its target.
func (c Config) DatabaseURL(dataDir string) string {
	if c.Database.URL != "" {
		return c.Database.URL
	}
	return "sqlite://" + filepath.Join(dataDir, "continuo.db")
}

// ParseDatabaseURL splits a database URL into its driver, "sqlite" or
// "postgres", and the target the driver opens: for sqlite the file path
// after "sqlite://" (so "sqlite:///abs/x.db" is the absolute path "/abs/x.db"
// and "sqlite://rel/x.db" the relative path "rel/x.db"), for postgres the
// whole URL unchanged ("postgresql://" is accepted as a synonym). Schemes
// are case-insensitive. Errors never repeat the URL, which may contain a
// password.
func ParseDatabaseURL(u string) (driver, target string, err error) {
	const want = "want sqlite://PATH or postgres://USER@HOST/DB"
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok || scheme == "" {
		return "", "", fmt.Errorf("not a database URL (%s)", want)
	}
	switch strings.ToLower(scheme) {
	case "sqlite":
		if rest == "" {
			return "", "", errors.New("sqlite URL has no file path (want sqlite://PATH)")
		}
		return "sqlite", rest, nil
	case "postgres", "postgresql":
		if _, err := url.Parse(u); err != nil {
			// url.Parse's error quotes the input; drop it.
			return "", "", errors.New("malformed postgres URL")
		}
		return "postgres", u, nil
	default:
		// Only echo something that looks like a scheme: text before
		// "://" in a mangled URL could be a password.
		for i, r := range scheme {
			if !(('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') ||
				(i > 0 && (('0' <= r && r <= '9') || r == '+' || r == '-' || r == '.'))) {
				return "", "", fmt.Errorf("unsupported database URL scheme (%s)", want)
			}
		}
		return "", "", fmt.Errorf("unsupported database URL scheme %q (%s)", scheme, want)
	}
}

func (c CheckConfig) check() continuo.Check {
	return continuo.Check{Command: c.Command, TimeoutSecs: c.TimeoutSecs, Env: c.Env}
}

// projectSpecs are the [projects] tables as the auth service applies them.
func (c Config) projectSpecs() []auth.ProjectSpec {
	var specs []auth.ProjectSpec
	for _, name := range sortedNames(c.Projects) {
		pc := c.Projects[name]
		spec := auth.ProjectSpec{Name: name, Root: pc.Root, Checks: map[string]continuo.Check{}, Writable: true}
		for check, cc := range pc.Checks {
			spec.Checks[check] = cc.check()
		}
		specs = append(specs, spec)
	}
	return specs
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
