package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo/internal/provider/providertest"
)

// `providers check` says, per provider, ok, unavailable (its key variable
// is unset) or unreachable, exits 1 when any fails, and never prints a key.
func TestProvidersCheck(t *testing.T) {
	const key = "sk-cli-check-0123456789abcdefABCDEF"
	srv := providertest.NewServer(t, providertest.Script{APIKey: key})
	t.Setenv("CLI_CHECK_KEY", key)
	t.Setenv("CLI_UNSET_KEY", "")
	config := filepath.Join(t.TempDir(), "c.toml")
	body := fmt.Sprintf(`
[[providers]]
id = "good"
kind = "openai-chat"
base_url = %q
model = "m"
api_key_env = "CLI_CHECK_KEY"

[[providers]]
id = "nokey"
kind = "openai-responses"
base_url = %q
model = "m"
api_key_env = "CLI_UNSET_KEY"

[[providers]]
id = "down"
kind = "openai-chat"
base_url = "http://127.0.0.1:9/v1"
model = "m"
`, srv.BaseURL(), srv.BaseURL())
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "providers", "check", "--config", config, "--timeout", "5s", "--json")
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s %s", code, out, errs)
	}
	var v struct {
		Providers []struct {
			ProviderID string `json:"provider_id"`
			Status     string `json:"status"`
		} `json:"providers"`
		Failed int `json:"failed"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	got := map[string]string{}
	for _, p := range v.Providers {
		got[p.ProviderID] = p.Status
	}
	if got["good"] != "ok" || got["nokey"] != "unavailable" || got["down"] != "unreachable" || v.Failed != 2 {
		t.Errorf("providers check = %s", out)
	}
	if strings.Contains(out+errs, key) {
		t.Error("providers check printed the key")
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("the server got %d requests, want the good provider's one", n)
	}
}
