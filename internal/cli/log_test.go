package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --log-level and --log-format, and the [log] table, choose the stderr
// logger; bad values are usage or configuration errors that create nothing.
func TestLogFlags(t *testing.T) {
	d := filepath.Join(t.TempDir(), "data")
	for _, args := range [][]string{{"--log-level", "loud"}, {"--log-format", "xml"}} {
		code, _, errs := run(t, append([]string{"init", "--data-dir", d}, args...)...)
		if code != 2 || !strings.Contains(errs, args[0]) {
			t.Errorf("init %v: exit %d, %q; want 2 naming the flag", args, code, errs)
		}
	}
	if _, err := os.Stat(d); !os.IsNotExist(err) {
		t.Fatalf("a refused flag made the data directory: %v", err)
	}
	cfg := filepath.Join(t.TempDir(), "c.toml")
	if err := os.WriteFile(cfg, []byte("[log]\nlevel = \"loud\"\nformat = \"xml\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "init", "--data-dir", d, "--config", cfg)
	if code == 0 || !strings.Contains(errs, "log.level") || !strings.Contains(errs, "log.format") {
		t.Errorf("a bad [log] table: exit %d, %q", code, errs)
	}

	var buf bytes.Buffer
	l, err := newLogger(&buf, "warn", "json")
	if err != nil {
		t.Fatal(err)
	}
	l.Info("hidden")
	l.Warn("shown", "token", "cto_pat_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil || rec["msg"] != "shown" || strings.Contains(buf.String(), "cto_pat_AAAA") {
		t.Fatalf("json logger at warn wrote %q (%v)", buf.String(), err)
	}
}
