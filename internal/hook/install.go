package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Clients whose hook configuration Install writes.
const (
	ClientClaude = "claude"
	ClientCodex  = "codex"
)

// hookTimeout is the timeout, in seconds, the configuration gives the
// client for the hook command. The hook gives up on the server sooner
// (hook.Budget: 5 s, 2.5 s at SessionEnd, which Codex cuts at 3 s), so it
// always answers before the client stops waiting.
const hookTimeout = 15

// SettingsPath is the settings file of client: the project's (under
// projectDir) when given, else the user's.
func SettingsPath(client, projectDir, home string, getenv func(string) string) (string, error) {
	switch client {
	case ClientClaude:
		if projectDir != "" {
			return filepath.Join(projectDir, ".claude", "settings.json"), nil
		}
		return filepath.Join(home, ".claude", "settings.json"), nil
	case ClientCodex:
		if projectDir != "" {
			return filepath.Join(projectDir, ".codex", "hooks.json"), nil
		}
		if ch := getenv("CODEX_HOME"); ch != "" {
			return filepath.Join(ch, "hooks.json"), nil
		}
		return filepath.Join(home, ".codex", "hooks.json"), nil
	}
	return "", fmt.Errorf("unknown client %q (claude or codex)", client)
}

// event is one hook registration: an event, the matcher of its group ("" for none).
type event struct{ name, matcher string }

// events are the registrations per client, the same for both (recorded
// from Claude Code 2.1.332 and Codex CLI 0.171, which fire all four):
// SessionStart of every source (compact, resume and clear inject the
// brief; startup posts what an earlier hook spooled), PreCompact, Stop at
// the end of each turn and SessionEnd keep the newest instruction.
var events = map[string][]event{
	ClientClaude: {{"SessionStart", ""}, {"PreCompact", ""}, {"Stop", ""}, {"SessionEnd", ""}},
	ClientCodex:  {{"SessionStart", ""}, {"PreCompact", ""}, {"Stop", ""}, {"SessionEnd", ""}},
}

// InstallResult says what Install did.
type InstallResult struct {
	Path    string   `json:"path"`
	Changed bool     `json:"changed"`
	Backup  string   `json:"backup,omitempty"` // the previous file, when there was one
	Events  []string `json:"events"`
}

// Install merges the hook configuration into the client's settings file:
// every other key and every other hook is kept; a hook of ours (a command
// that runs `continuo hook`) is replaced. An existing file is copied to a
// backup before it is changed; a file that would not change is not
// written. command is the hook command line without the event (e.g.
// "/usr/local/bin/continuo hook"), extra its flags after the event.
func Install(client, path, command, extra string, now time.Time) (InstallResult, error) {
	evs, ok := events[client]
	if !ok {
		return InstallResult{}, fmt.Errorf("unknown client %q (claude or codex)", client)
	}
	res := InstallResult{Path: path}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return res, err
	}
	exists := err == nil
	settings := map[string]any{}
	if exists && len(bytes.TrimSpace(old)) > 0 {
		if err := json.Unmarshal(old, &settings); err != nil {
			return res, fmt.Errorf("%s is not a JSON object (%v); left unchanged", path, err)
		}
		if settings == nil {
			settings = map[string]any{}
		}
	}
	hooks, ok := settings["hooks"].(map[string]any)
	if !ok {
		if _, present := settings["hooks"]; present && settings["hooks"] != nil {
			return res, fmt.Errorf("%s: \"hooks\" is not an object; left unchanged", path)
		}
		hooks = map[string]any{}
	}
	for _, ev := range evs {
		groups, _ := hooks[ev.name].([]any)
		if _, present := hooks[ev.name]; present && hooks[ev.name] != nil && groups == nil {
			return res, fmt.Errorf("%s: hooks.%s is not a list; left unchanged", path, ev.name)
		}
		kept := []any{}
		for _, g := range groups {
			if g = withoutOurs(g); g != nil {
				kept = append(kept, g)
			}
		}
		group := map[string]any{"hooks": []any{map[string]any{
			"type": "command", "command": strings.TrimSpace(command + " " + ev.name + " " + extra), "timeout": hookTimeout}}}
		if ev.matcher != "" {
			group["matcher"] = ev.matcher
		}
		hooks[ev.name] = append(kept, group)
		res.Events = append(res.Events, ev.name)
	}
	settings["hooks"] = hooks
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return res, err
	}
	b = append(b, '\n')
	if exists && sameJSON(old, b) {
		return res, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return res, err
	}
	if exists {
		res.Backup = path + ".bak-" + now.UTC().Format("20060102T150405Z")
		if err := os.WriteFile(res.Backup, old, 0o600); err != nil {
			return res, fmt.Errorf("backup: %w", err)
		}
	}
	tmp := path + ".tmp-continuo"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return res, err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return res, err
	}
	res.Changed = true
	return res, nil
}

// withoutOurs is a matcher group without the hook commands of ours (nil
// when nothing else is left in it). A group of an unexpected shape is
// kept as it is.
func withoutOurs(g any) any {
	m, ok := g.(map[string]any)
	if !ok {
		return g
	}
	hs, ok := m["hooks"].([]any)
	if !ok {
		return g
	}
	var kept []any
	for _, h := range hs {
		if hm, ok := h.(map[string]any); ok {
			if cmd, _ := hm["command"].(string); IsOurs(cmd) {
				continue
			}
		}
		kept = append(kept, h)
	}
	if len(kept) == 0 {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	out["hooks"] = kept
	return out
}

// IsOurs reports whether a hook command runs `continuo hook`.
func IsOurs(cmd string) bool {
	cmd = strings.TrimSpace(cmd)
	var exe, rest string
	if strings.HasPrefix(cmd, "'") {
		end := strings.Index(cmd[1:], "'")
		if end < 0 {
			return false
		}
		exe, rest = cmd[1:1+end], cmd[2+end:]
	} else {
		exe, rest, _ = strings.Cut(cmd, " ")
	}
	f := strings.Fields(rest)
	return filepath.Base(exe) == "continuo" && len(f) > 0 && f[0] == "hook"
}

// ShellQuote quotes a word for the POSIX shell the clients run hook
// commands with, when it needs quoting.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// sameJSON reports whether two documents hold the same JSON value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
