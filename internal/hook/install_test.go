package hook

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestInstallMergesWithBackupAndIsIdempotent(t *testing.T) {
	for _, client := range []string{ClientClaude, ClientCodex} {
		t.Run(client, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "settings.json")
			orig := `{"model":"x","hooks":{"PreCompact":[{"hooks":[{"type":"command","command":"echo mine"},{"type":"command","command":"/old/continuo hook PreCompact"}]}],"Notification":[{"hooks":[{"type":"command","command":"notify"}]}]}}`
			if err := os.WriteFile(path, []byte(orig), 0o600); err != nil {
				t.Fatal(err)
			}
			now := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
			res, err := Install(client, path, "/bin/continuo hook", "--server http://h/mcp", now)
			if err != nil || !res.Changed || res.Backup == "" {
				t.Fatalf("install: %+v %v", res, err)
			}
			if b, _ := os.ReadFile(res.Backup); string(b) != orig {
				t.Errorf("backup %q", b)
			}
			var s map[string]any
			b, _ := os.ReadFile(path)
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			if s["model"] != "x" || !strings.Contains(string(b), "echo mine") || !strings.Contains(string(b), "notify") {
				t.Errorf("lost the user's settings: %s", b)
			}
			if strings.Contains(string(b), "/old/continuo") || strings.Count(string(b), "/bin/continuo hook") != 4 {
				t.Errorf("our hooks: %s", b)
			}
			if !strings.Contains(string(b), `"/bin/continuo hook SessionStart --server http://h/mcp"`) {
				t.Errorf("command: %s", b)
			}
			res, err = Install(client, path, "/bin/continuo hook", "--server http://h/mcp", now.Add(time.Hour))
			if err != nil || res.Changed || res.Backup != "" {
				t.Errorf("second install: %+v %v", res, err)
			}
			if b2, _ := os.ReadFile(path); string(b2) != string(b) {
				t.Errorf("second install changed the file")
			}
		})
	}
}

func TestInstallRefusesWhatItCannotMerge(t *testing.T) {
	for _, bad := range []string{`not json`, `[1]`, `{"hooks":[]}`, `{"hooks":{"PreCompact":{}}}`} {
		path := filepath.Join(t.TempDir(), "settings.json")
		os.WriteFile(path, []byte(bad), 0o600)
		if _, err := Install(ClientClaude, path, "continuo hook", "", time.Now()); err == nil {
			t.Errorf("%s: installed", bad)
		}
		if b, _ := os.ReadFile(path); string(b) != bad {
			t.Errorf("%s: changed to %s", bad, b)
		}
	}
	// A new file: no backup.
	path := filepath.Join(t.TempDir(), ".codex", "hooks.json")
	if res, err := Install(ClientCodex, path, "continuo hook", "", time.Now()); err != nil || res.Backup != "" || !res.Changed {
		t.Errorf("new file: %+v %v", res, err)
	}
}

func TestIsOursAndQuote(t *testing.T) {
	for cmd, want := range map[string]bool{
		"continuo hook PreCompact": true, "/usr/bin/continuo hook Stop --server x": true,
		"'/my dir/continuo' hook Stop": true, "continuo serve": false, "echo continuo hook": false, "": false,
	} {
		if IsOurs(cmd) != want {
			t.Errorf("IsOurs(%q) = %v", cmd, !want)
		}
	}
	if q := ShellQuote("/my dir/it's"); q != `'/my dir/it'\''s'` {
		t.Errorf("quote %s", q)
	}
	if !IsOurs(ShellQuote("/my dir/continuo") + " hook X") {
		t.Error("quoted path not ours")
	}
}
