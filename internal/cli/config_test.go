package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/mcpserver"
)

// Every test in this file has "Config" in its name so that
// `go test -run Config` selects exactly these, and declares its helpers
// locally so as not to collide with other files of the package.

func TestConfigDefaults(t *testing.T) {
	want := Config{
		Server: ServerConfig{Listen: "127.0.0.1:7300"},
		Swarm:  SwarmConfig{Runtime: "manual", ProcessCommand: []string{"continuo", "worker"}},
	}
	if got := DefaultConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("DefaultConfig() = %+v, want %+v", got, want)
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("DefaultConfig().Validate() = %v", err)
	}
	got, err := LoadConfig("")
	if err != nil {
		t.Fatalf(`LoadConfig("") error: %v`, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf(`LoadConfig("") = %+v, want %+v`, got, want)
	}

	// Each call must return fresh slices: a caller appending flags to one
	// configuration must not change the defaults of the next.
	a := DefaultConfig()
	a.Swarm.ProcessCommand[0] = "changed"
	if b := DefaultConfig(); b.Swarm.ProcessCommand[0] != "continuo" {
		t.Errorf("DefaultConfig shares its process command slice between calls")
	}
}

func TestConfigLoadFullExample(t *testing.T) {
	const doc = `
[server]
listen = "0.0.0.0:8080"
public_url = "https://continuo.example.com"   # what OAuth metadata and links use
toolsets = ["continuity", "swarm"]

[database]
url = "postgres://user@host/db"

[stdio]
principal = "admin"

[[providers]]
id = "model-review"
kind = "openai-responses"
base_url = "https://api.openai.com/v1"
model = "gpt-5.1"
api_key_env = "OPENAI_API_KEY"
max_concurrency = 2
projects = []
description = ""
command = []
env = {}

[[providers]]
id = "local.chat_1"
kind = "openai-chat"
base_url = "http://127.0.0.1:11434/v1"
model = "llama"
projects = ["alpha", "beta"]
description = "Local model, no key."

[[providers]]
id = "coder"
kind = "acp"
command = ["coder-agent", "--acp"]
env = { ANTHROPIC_API_KEY = "CONTINUO_CODER_KEY", http_proxy = "HTTP_PROXY" }
max_concurrency = 64

[swarm]
runtime = "process"
process_command = ["/usr/local/bin/continuo", "worker", "--quiet"]
trusted_carrier_meta = "chat.example/conversation_id"
`
	path := filepath.Join(t.TempDir(), "continuo.toml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := LoadConfig(path)
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	want := Config{
		Server: ServerConfig{
			Listen:    "0.0.0.0:8080",
			PublicURL: "https://continuo.example.com",
			Toolsets:  []string{"continuity", "swarm"},
		},
		Database: DatabaseConfig{URL: "postgres://user@host/db"},
		Stdio:    StdioConfig{Principal: "admin"},
		Providers: []ProviderConfig{
			{
				ID:             "model-review",
				Kind:           "openai-responses",
				BaseURL:        "https://api.openai.com/v1",
				Model:          "gpt-5.1",
				APIKeyEnv:      "OPENAI_API_KEY",
				MaxConcurrency: 2,
				Projects:       []string{},
				Command:        []string{},
				Env:            map[string]string{},
			},
			{
				ID:          "local.chat_1",
				Kind:        "openai-chat",
				BaseURL:     "http://127.0.0.1:11434/v1",
				Model:       "llama",
				Projects:    []string{"alpha", "beta"},
				Description: "Local model, no key.",
			},
			{
				ID:             "coder",
				Kind:           "acp",
				Command:        []string{"coder-agent", "--acp"},
				Env:            map[string]string{"ANTHROPIC_API_KEY": "CONTINUO_CODER_KEY", "http_proxy": "HTTP_PROXY"},
				MaxConcurrency: 64,
			},
		},
		Swarm: SwarmConfig{
			Runtime:            "process",
			ProcessCommand:     []string{"/usr/local/bin/continuo", "worker", "--quiet"},
			TrustedCarrierMeta: "chat.example/conversation_id",
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LoadConfig =\n%#v\nwant\n%#v", got, want)
	}
	if sets := got.DefaultToolsets(); sets != mcpserver.ToolsetContinuity|mcpserver.ToolsetSwarm {
		t.Errorf("DefaultToolsets = %s, want continuity,swarm", sets)
	}
	if sets := DefaultConfig().DefaultToolsets(); sets != mcpserver.DefaultToolsets {
		t.Errorf("DefaultToolsets of the defaults = %s, want continuity", sets)
	}
}

func TestConfigPartialFileKeepsDefaults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.toml")
	if err := os.WriteFile(path, []byte("[database]\nurl = \"sqlite:///var/lib/continuo/c.db\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	want.Database.URL = "sqlite:///var/lib/continuo/c.db"
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestConfigLoadErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		doc  string
		want []string // substrings that must all appear
	}{
		{
			name: "unknown top-level key",
			doc:  "bogus = 1\n",
			want: []string{"c.toml:1:1: unknown key \"bogus\""},
		},
		{
			name: "unknown nested key",
			doc:  "[database]\nbogus = 1\n",
			want: []string{"c.toml:2:1: unknown key \"database.bogus\""},
		},
		{
			name: "unknown table",
			doc:  "[databse]\nurl = \"x\"\n",
			want: []string{`unknown key "databse"`},
		},
		{
			name: "unknown key in array of tables",
			doc:  "[[providers]]\nid = \"a\"\nkind = \"acp\"\ncommand = [\"a\"]\nkindd = \"acp\"\n",
			want: []string{"c.toml:5:1: unknown key \"providers.kindd\""},
		},
		{
			name: "every unknown key reported",
			doc:  "[server]\nlisten = \"127.0.0.1:1\"\nlistn = \"x\"\ntrusted_carrier_meta_keys = []\n[swarm]\nruntme = \"manual\"\n",
			want: []string{`unknown key "server.listn"`, `unknown key "server.trusted_carrier_meta_keys"`, `unknown key "swarm.runtme"`},
		},
		{
			name: "wrong type",
			doc:  "[server]\nlisten = 7300\n",
			want: []string{"c.toml:2:", "server.listen"},
		},
		{
			name: "syntax error",
			doc:  "[server\n",
			want: []string{"c.toml:1:"},
		},
		{
			name: "invalid values, each line prefixed",
			doc:  "[server]\nlisten = \"nope\"\n[swarm]\nruntime = \"cloud\"\n",
			want: []string{"c.toml: server.listen: ", "\n" + filepath.Join(dir, "c.toml") + ": swarm.runtime: "},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "c.toml")
			if err := os.WriteFile(path, []byte(tc.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := LoadConfig(path)
			if err == nil {
				t.Fatalf("LoadConfig succeeded with %+v, want error", cfg)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if !reflect.DeepEqual(cfg, Config{}) {
				t.Errorf("LoadConfig returned a config alongside its error: %+v", cfg)
			}
		})
	}

	t.Run("missing file", func(t *testing.T) {
		_, err := LoadConfig(filepath.Join(dir, "absent.toml"))
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("err = %v, want fs.ErrNotExist", err)
		}
	})
}

func TestConfigValidateReportsEveryProblem(t *testing.T) {
	c := DefaultConfig()
	c.Server.Listen = "7300"
	c.Server.PublicURL = "https://example.com/?x=1"
	c.Swarm.TrustedCarrierMeta = "has space"
	c.Database.URL = "mysql://root:secret@db/continuo"
	c.Providers = []ProviderConfig{
		{ID: "a", Kind: "openai-chat", BaseURL: "https://x/v1", Model: "m"},
		{ID: "b", Kind: "x"},
		{ID: "a", Kind: "acp"},
	}
	c.Swarm.Runtime = "process"
	c.Swarm.ProcessCommand = nil

	err := c.Validate()
	if err == nil {
		t.Fatal("Validate() = nil, want errors")
	}
	want := []string{
		`server.listen: "7300" is not host:port`,
		"server.public_url: must not have a query or fragment",
		`database.url: unsupported database URL scheme "mysql"`,
		`providers[1].kind: unknown kind "x" (want openai-responses, openai-chat or acp)`,
		`providers[2].id: duplicate id "a" (also providers[0])`,
		"providers[2].command: required for kind acp",
		"swarm.process_command: required for runtime process",
		"swarm.trusted_carrier_meta: must be a _meta key of at most 128 bytes, without spaces",
	}
	got := strings.Split(err.Error(), "\n")
	if len(got) != len(want) {
		t.Errorf("got %d problems, want %d:\n%s", len(got), len(want), err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in:\n%s", w, err)
		}
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("error leaks the database password:\n%s", err)
	}
	if multi, ok := err.(interface{ Unwrap() []error }); !ok || len(multi.Unwrap()) != len(want) {
		t.Errorf("error is not an errors.Join of %d problems: %#v", len(want), err)
	}
}

func TestConfigValidateRules(t *testing.T) {
	openai := func(mod func(*ProviderConfig)) Config {
		c := DefaultConfig()
		p := ProviderConfig{ID: "p", Kind: "openai-responses", BaseURL: "https://api.openai.com/v1", Model: "gpt-5.1"}
		mod(&p)
		c.Providers = []ProviderConfig{p}
		return c
	}
	acp := func(mod func(*ProviderConfig)) Config {
		c := DefaultConfig()
		p := ProviderConfig{ID: "p", Kind: "acp", Command: []string{"agent"}}
		mod(&p)
		c.Providers = []ProviderConfig{p}
		return c
	}
	with := func(mod func(*Config)) Config {
		c := DefaultConfig()
		mod(&c)
		return c
	}
	cases := []struct {
		name string
		cfg  Config
		want string // "" means valid; otherwise a substring of the error
	}{
		{"listen all interfaces", with(func(c *Config) { c.Server.Listen = ":7300" }), ""},
		{"listen ipv6", with(func(c *Config) { c.Server.Listen = "[::1]:7300" }), ""},
		{"listen hostname", with(func(c *Config) { c.Server.Listen = "localhost:0" }), ""},
		{"listen empty", with(func(c *Config) { c.Server.Listen = "" }), "server.listen: "},
		{"listen no port", with(func(c *Config) { c.Server.Listen = "127.0.0.1" }), "server.listen: "},
		{"listen named port", with(func(c *Config) { c.Server.Listen = "127.0.0.1:http" }), "server.listen: port \"http\""},
		{"listen port range", with(func(c *Config) { c.Server.Listen = "127.0.0.1:65536" }), "server.listen: port \"65536\""},

		{"public url with path", with(func(c *Config) { c.Server.PublicURL = "https://example.com/continuo/" }), "server.public_url: must not have a path"},
		{"public url root path", with(func(c *Config) { c.Server.PublicURL = "https://example.com/" }), ""},
		{"public url port", with(func(c *Config) { c.Server.PublicURL = "https://example.com:8443" }), ""},
		{"public url http", with(func(c *Config) { c.Server.PublicURL = "http://127.0.0.1:7300" }), ""},
		{"public url http localhost", with(func(c *Config) { c.Server.PublicURL = "http://localhost:7300" }), ""},
		{"public url http ipv6 loopback", with(func(c *Config) { c.Server.PublicURL = "http://[::1]:7300" }), ""},
		{"public url http remote", with(func(c *Config) { c.Server.PublicURL = "http://continuo.example.com" }), "server.public_url: must be https:// (http:// only on a loopback host"},
		{"public url http private address", with(func(c *Config) { c.Server.PublicURL = "http://192.168.1.5:7300" }), "server.public_url: must be https://"},
		{"public url relative", with(func(c *Config) { c.Server.PublicURL = "/continuo" }), "server.public_url: must be an absolute http"},
		{"public url scheme", with(func(c *Config) { c.Server.PublicURL = "ftp://example.com" }), `server.public_url: must be an absolute http:// or https:// URL, got scheme "ftp"`},
		{"public url no host", with(func(c *Config) { c.Server.PublicURL = "https:///x" }), "server.public_url: must be an absolute URL with a host"},
		{"public url fragment", with(func(c *Config) { c.Server.PublicURL = "https://example.com/#x" }), "server.public_url: must not have a query or fragment"},
		{"public url empty query", with(func(c *Config) { c.Server.PublicURL = "https://example.com/?" }), "server.public_url: must not have a query or fragment"},
		{"public url user info", with(func(c *Config) { c.Server.PublicURL = "https://u:p@example.com" }), "server.public_url: must not contain user info"},

		{"meta key 128 bytes", with(func(c *Config) { c.Swarm.TrustedCarrierMeta = strings.Repeat("k", 128) }), ""},
		{"meta key 129 bytes", with(func(c *Config) { c.Swarm.TrustedCarrierMeta = strings.Repeat("k", 129) }), "swarm.trusted_carrier_meta: must be a _meta key of at most 128 bytes, without spaces"},
		{"allowed origin", with(func(c *Config) { c.Server.AllowedOrigins = []string{"https://app.example.org:8443"} }), ""},
		{"allowed origin with a path", with(func(c *Config) { c.Server.AllowedOrigins = []string{"https://app.example.org/x"} }), `server.allowed_origins[0]: "https://app.example.org/x" is not an origin (scheme://host[:port])`},
		{"allowed origin without scheme", with(func(c *Config) { c.Server.AllowedOrigins = []string{"app.example.org"} }), `server.allowed_origins[0]: "app.example.org" is not an origin`},
		{"session caps", with(func(c *Config) {
			c.Server.MaxSessions, c.Server.MaxSessionsPerPrincipal, c.Server.SessionIdleSecs = 10, 2, 60
		}), ""},
		{"negative session cap", with(func(c *Config) { c.Server.MaxSessionsPerPrincipal = -1 }), "server.max_sessions_per_principal: must be 0 (the default) to 1000000, got -1"},
		{"toolsets", with(func(c *Config) { c.Server.Toolsets = []string{"worker", "delegation"} }), ""},
		{"toolsets all", with(func(c *Config) { c.Server.Toolsets = []string{"all"} }), ""},
		{"toolsets none", with(func(c *Config) { c.Server.Toolsets = []string{} }), ""},
		{"unknown toolset", with(func(c *Config) { c.Server.Toolsets = []string{"continuity", "owner"} }),
			`server.toolsets[1]: "owner" is not a toolset (want one of continuity, delegation, swarm, worker, all)`},
		{"toolsets in one item", with(func(c *Config) { c.Server.Toolsets = []string{"continuity,swarm"} }), `server.toolsets[0]: "continuity,swarm" is not a toolset`},
		{"body timeout", with(func(c *Config) { c.Server.BodyTimeoutSecs = 5 }), ""},
		{"body timeout too long", with(func(c *Config) { c.Server.BodyTimeoutSecs = 3601 }), "server.body_timeout_secs: must be 0 (the default) to 3600, got 3601"},

		{"sqlite url", with(func(c *Config) { c.Database.URL = "sqlite://data/c.db" }), ""},
		{"postgresql url", with(func(c *Config) { c.Database.URL = "postgresql://u@h/db" }), ""},
		{"sqlite no path", with(func(c *Config) { c.Database.URL = "sqlite://" }), "database.url: sqlite URL has no file path"},
		{"database path only", with(func(c *Config) { c.Database.URL = "/var/lib/c.db" }), "database.url: not a database URL"},

		{"openai ok", openai(func(p *ProviderConfig) {}), ""},
		{"openai with key env", openai(func(p *ProviderConfig) { p.APIKeyEnv = "OPENAI_API_KEY_2" }), ""},
		{"openai max concurrency", openai(func(p *ProviderConfig) { p.MaxConcurrency = 64 }), ""},
		{"id 64", openai(func(p *ProviderConfig) { p.ID = strings.Repeat("a", 64) }), ""},
		{"id 65", openai(func(p *ProviderConfig) { p.ID = strings.Repeat("a", 65) }), "providers[0].id: must be at most 64 characters"},
		{"id empty", openai(func(p *ProviderConfig) { p.ID = "" }), "providers[0].id: required"},
		{"id charset", openai(func(p *ProviderConfig) { p.ID = "a b" }), `providers[0].id: "a b" may only contain`},
		{"kind empty", openai(func(p *ProviderConfig) { p.Kind = "" }), "providers[0].kind: required"},
		{"openai no base url", openai(func(p *ProviderConfig) { p.BaseURL = "" }), "providers[0].base_url: required for kind openai-responses"},
		{"openai bad base url", openai(func(p *ProviderConfig) { p.BaseURL = "api.openai.com/v1" }), "providers[0].base_url: must be an absolute http"},
		{"openai no model", openai(func(p *ProviderConfig) { p.Model = "" }), "providers[0].model: required for kind openai-responses"},
		{"openai lower key env", openai(func(p *ProviderConfig) { p.APIKeyEnv = "openai_key" }), `providers[0].api_key_env: "openai_key" is not a valid environment variable name`},
		{"openai digit key env", openai(func(p *ProviderConfig) { p.APIKeyEnv = "1KEY" }), "providers[0].api_key_env: "},
		{"openai with command", openai(func(p *ProviderConfig) { p.Command = []string{"x"} }), "providers[0].command: only valid for kind acp"},
		{"openai with env", openai(func(p *ProviderConfig) { p.Env = map[string]string{"A": "B"} }), "providers[0].env: only valid for kind acp"},
		{"max concurrency negative", openai(func(p *ProviderConfig) { p.MaxConcurrency = -1 }), "providers[0].max_concurrency: must be 0 (meaning 1) to 64, got -1"},
		{"max concurrency 65", openai(func(p *ProviderConfig) { p.MaxConcurrency = 65 }), "providers[0].max_concurrency: "},
		{"empty project", openai(func(p *ProviderConfig) { p.Projects = []string{"a", ""} }), "providers[0].projects[1]: must not be empty"},

		{"acp ok", acp(func(p *ProviderConfig) {}), ""},
		{"acp model allowed", acp(func(p *ProviderConfig) { p.Model = "sonnet" }), ""},
		{"acp empty argv0", acp(func(p *ProviderConfig) { p.Command = []string{""} }), "providers[0].command: required for kind acp"},
		{"acp base url", acp(func(p *ProviderConfig) { p.BaseURL = "https://x" }), "providers[0].base_url: not valid for kind acp"},
		{"acp key env", acp(func(p *ProviderConfig) { p.APIKeyEnv = "KEY" }), "providers[0].api_key_env: not valid for kind acp"},
		{"acp bad env name", acp(func(p *ProviderConfig) { p.Env = map[string]string{"A-B": "C"} }), `providers[0].env: "A-B" is not a valid environment variable name`},
		{"acp bad env source", acp(func(p *ProviderConfig) { p.Env = map[string]string{"A": "$B"} }), `providers[0].env.A: "$B" is not a valid environment variable name`},

		{"swarm process default command", with(func(c *Config) { c.Swarm.Runtime = "process" }), ""},
		{"swarm unknown", with(func(c *Config) { c.Swarm.Runtime = "" }), `swarm.runtime: unknown runtime "" (want manual or process)`},
		{"swarm process empty argv0", with(func(c *Config) { c.Swarm.Runtime = "process"; c.Swarm.ProcessCommand = []string{""} }), "swarm.process_command: required for runtime process"},
		{"swarm manual ignores command", with(func(c *Config) { c.Swarm.ProcessCommand = nil }), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.want != "" && err == nil:
				t.Errorf("Validate() = nil, want error containing %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("Validate() = %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestConfigApplyEnv(t *testing.T) {
	env := map[string]string{
		"CONTINUO_LISTEN":       "0.0.0.0:9000",
		"CONTINUO_DATABASE_URL": "postgres://u@h/db",
		"CONTINUO_PUBLIC_URL":   "https://c.example",
		"CONTINUO_TOOLSETS":     "worker, delegation",
	}
	c := DefaultConfig()
	c.ApplyEnv(func(k string) string { return env[k] })
	if c.Server.Listen != "0.0.0.0:9000" || c.Database.URL != "postgres://u@h/db" || c.Server.PublicURL != "https://c.example" ||
		c.Validate() != nil || c.DefaultToolsets() != mcpserver.ToolsetWorker|mcpserver.ToolsetDelegation {
		t.Errorf("ApplyEnv did not apply every override: %+v", c)
	}

	// Unset or empty variables leave the configuration alone.
	c = DefaultConfig()
	c.Database.URL = "sqlite://keep.db"
	c.ApplyEnv(func(k string) string {
		if k == "CONTINUO_DATABASE_URL" {
			return ""
		}
		return ""
	})
	want := DefaultConfig()
	want.Database.URL = "sqlite://keep.db"
	if !reflect.DeepEqual(c, want) {
		t.Errorf("ApplyEnv with an empty environment changed the config: %+v", c)
	}

	// nil means the process environment.
	t.Setenv("CONTINUO_LISTEN", "127.0.0.1:1234")
	t.Setenv("CONTINUO_DATABASE_URL", "")
	t.Setenv("CONTINUO_PUBLIC_URL", "")
	c = DefaultConfig()
	c.ApplyEnv(nil)
	if c.Server.Listen != "127.0.0.1:1234" {
		t.Errorf("ApplyEnv(nil) listen = %q, want it from os.Getenv", c.Server.Listen)
	}
}

func TestConfigDatabaseURL(t *testing.T) {
	c := DefaultConfig()
	if got, want := c.DatabaseURL("/var/lib/continuo"), "sqlite:///var/lib/continuo/continuo.db"; got != want {
		t.Errorf("absolute data dir: %q, want %q", got, want)
	}
	if got, want := c.DatabaseURL("continuo-data"), "sqlite://continuo-data/continuo.db"; got != want {
		t.Errorf("relative data dir: %q, want %q", got, want)
	}
	// The default must round-trip through ParseDatabaseURL to the file.
	driver, target, err := ParseDatabaseURL(c.DatabaseURL("/var/lib/continuo"))
	if err != nil || driver != "sqlite" || target != "/var/lib/continuo/continuo.db" {
		t.Errorf("ParseDatabaseURL(default) = %q, %q, %v", driver, target, err)
	}
	c.Database.URL = "postgres://u@h/db"
	if got := c.DatabaseURL("/ignored"); got != "postgres://u@h/db" {
		t.Errorf("configured URL: %q", got)
	}
}

func TestConfigParseDatabaseURL(t *testing.T) {
	cases := []struct {
		in             string
		driver, target string
		err            string // substring; "" means success
	}{
		{"sqlite:///abs/path.db", "sqlite", "/abs/path.db", ""},
		{"sqlite://rel/path.db", "sqlite", "rel/path.db", ""},
		{"SQLite://x.db", "sqlite", "x.db", ""},
		{"postgres://u@h/db", "postgres", "postgres://u@h/db", ""},
		{"postgresql://u:pw@h:5432/db?sslmode=disable", "postgres", "postgresql://u:pw@h:5432/db?sslmode=disable", ""},
		{"mysql://x", "", "", `unsupported database URL scheme "mysql" (want sqlite://PATH or postgres://USER@HOST/DB)`},
		{"sqlite://", "", "", "sqlite URL has no file path"},
		{"continuo.db", "", "", "not a database URL (want sqlite://PATH or postgres://"},
		{"://x", "", "", "not a database URL"},
		{"", "", "", "not a database URL"},
		{"postgres://u:p w@h%zz/db", "", "", "malformed postgres URL"},
		{"user:s3cret@h://x", "", "", "unsupported database URL scheme (want"},
	}
	for _, tc := range cases {
		driver, target, err := ParseDatabaseURL(tc.in)
		if tc.err == "" {
			if err != nil || driver != tc.driver || target != tc.target {
				t.Errorf("ParseDatabaseURL(%q) = %q, %q, %v; want %q, %q, nil", tc.in, driver, target, err, tc.driver, tc.target)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseDatabaseURL(%q) error = %v, want it to contain %q", tc.in, err, tc.err)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "p w") {
			t.Errorf("ParseDatabaseURL(%q) error leaks the URL: %v", tc.in, err)
		}
		if driver != "" || target != "" {
			t.Errorf("ParseDatabaseURL(%q) returned %q, %q alongside an error", tc.in, driver, target)
		}
	}
}

func TestConfigProjects(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.toml")
	body := `
[projects.web.checks.test]
command = ["go", "test", "./..."]
timeout_secs = 900
env = ["GOFLAGS"]

[projects.web.checks]
vet = { command = ["go", "vet", "./..."] }

[projects.docs]
root = "/srv/docs"
`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	specs := got.projectSpecs()
	if len(specs) != 2 || specs[0].Name != "docs" || specs[0].Root != "/srv/docs" || len(specs[0].Checks) != 0 ||
		specs[1].Name != "web" || len(specs[1].Checks) != 2 {
		t.Fatalf("specs = %+v", specs)
	}
	test := specs[1].Checks["test"]
	if !reflect.DeepEqual(test, continuo.Check{Command: []string{"go", "test", "./..."}, TimeoutSecs: 900, Env: []string{"GOFLAGS"}}) {
		t.Errorf("test = %+v", test)
	}

	for name, body := range map[string]string{
		"empty command":   "[projects.a.checks.t]\ncommand = []\n",
		"bad env":         "[projects.a.checks.t]\ncommand = [\"x\"]\nenv = [\"A=B\"]\n",
		"timeout":         "[projects.a.checks.t]\ncommand = [\"x\"]\ntimeout_secs = 99999999\n",
		"relative root":   "[projects.a]\nroot = \"src/a\"\n",
		"unknown key":     "[projects.a.checks.t]\ncommand = [\"x\"]\nshell = true\n",
		"string not argv": "[projects.a.checks]\nt = \"go test\"\n",
	} {
		p := filepath.Join(t.TempDir(), "c.toml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadConfig(p); err == nil {
			t.Errorf("%s: LoadConfig accepted %q", name, body)
		}
	}
}
