package datadir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ServingName is the file in which a running `continuo serve` says where
// it listens, so that other commands on the same data directory (`hook
// install`, `login-link`) name the address it really has rather than a
// default.
const ServingName = "serve.json"

// Serving is where a server of the directory listens.
type Serving struct {
	URL    string `json:"url"`              // the base URL: public_url, else http://ADDR
	MCPURL string `json:"mcp_url"`          // URL + "/mcp"
	Issuer string `json:"issuer,omitempty"` // its OAuth issuer, which sign-in links use ("": none)
	PID    int    `json:"pid"`
}

// WriteServing records s for dir (0600, replaced whole).
func WriteServing(dir string, s Serving) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, ServingName+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, ServingName))
}

// RemoveServing forgets it, at a server's shutdown.
func RemoveServing(dir string) { os.Remove(filepath.Join(dir, ServingName)) }

// ReadServing returns where the server of dir listens; ok is false when no
// server holds lockName (a file left by a killed server is not believed).
func ReadServing(dir, lockName string) (s Serving, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, ServingName))
	if errors.Is(err, os.ErrNotExist) {
		return s, false, nil
	}
	if err != nil {
		return s, false, err
	}
	if len(b) > 64<<10 {
		return s, false, fmt.Errorf("%s: too large", ServingName)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, false, fmt.Errorf("%s: %w", filepath.Join(dir, ServingName), err)
	}
	l, err := TryLock(filepath.Join(dir, lockName))
	var locked *LockedError
	if errors.As(err, &locked) {
		return s, true, nil // held: a server runs
	}
	if err == nil {
		l.Unlock()
	}
	return s, false, nil
}
