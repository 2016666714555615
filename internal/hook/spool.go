package hook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The spool keeps the notes a hook could not post: each is written before
// it is posted (so a hook the client kills at its timeout leaves it behind)
// and removed once the server has it. The next hook run to the same target
// posts what is left, oldest first. A note's delivery_key makes posting it
// twice harmless.

// Spool bounds.
const (
	maxSpooled    = 200
	maxSpoolAge   = 30 * 24 * time.Hour
	maxEntryBytes = 64 << 10
)

// Spool is a directory of pending tool calls for one target (a server URL,
// or a local data directory).
type Spool struct {
	Dir    string // "" disables spooling
	Target string
}

// spooled is one pending call, as stored.
type spooled struct {
	Target string         `json:"target"`
	Tool   string         `json:"tool"`
	Args   map[string]any `json:"args"`
	At     time.Time      `json:"at"`
}

// Add writes a pending call and returns its file ("" when the spool is off).
// The file name sorts by time, and holds a hash of the call so that the
// same note spooled twice is one file.
func (s Spool) Add(tool string, args map[string]any, now time.Time) (string, error) {
	if s.Dir == "" {
		return "", nil
	}
	b, err := json.Marshal(spooled{Target: s.Target, Tool: tool, Args: args, At: now.UTC()})
	if err != nil {
		return "", err
	}
	if len(b) > maxEntryBytes {
		return "", fmt.Errorf("spool: a call of %d bytes is over %d", len(b), maxEntryBytes)
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return "", fmt.Errorf("spool: %w", err)
	}
	key, _ := args["delivery_key"].(string)
	h := sha256.Sum256([]byte(s.Target + "\x00" + tool + "\x00" + key))
	if matches, _ := filepath.Glob(filepath.Join(s.Dir, "*-"+hex.EncodeToString(h[:8])+".json")); len(matches) > 0 {
		return matches[0], nil // already spooled
	}
	name := filepath.Join(s.Dir, fmt.Sprintf("%020d-%s.json", now.UnixNano(), hex.EncodeToString(h[:8])))
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return "", fmt.Errorf("spool: %w", err)
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("spool: %w", err)
	}
	s.trim(now)
	return name, nil
}

// Remove forgets a pending call.
func (s Spool) Remove(name string) {
	if name != "" {
		os.Remove(name)
	}
}

// Pending lists the files of this target's pending calls, oldest first.
func (s Spool) Pending() []string {
	if s.Dir == "" {
		return nil
	}
	var out []string
	for _, name := range s.files() {
		if e, err := s.read(name); err == nil && e.Target == s.Target {
			out = append(out, name)
		}
	}
	return out
}

func (s Spool) files() []string {
	names, _ := filepath.Glob(filepath.Join(s.Dir, "*.json"))
	sort.Strings(names)
	return names
}

func (s Spool) read(name string) (spooled, error) {
	var e spooled
	b, err := os.ReadFile(name)
	if err != nil {
		return e, err
	}
	if len(b) > maxEntryBytes {
		return e, errors.New("spool entry too large")
	}
	err = json.Unmarshal(b, &e)
	return e, err
}

// trim drops what is too old, unreadable, or beyond maxSpooled (the oldest
// first): the spool never grows without bound.
func (s Spool) trim(now time.Time) {
	names := s.files()
	for i, name := range names {
		ns, _, _ := strings.Cut(filepath.Base(name), "-")
		at, err := strconv.ParseInt(ns, 10, 64)
		if err != nil || now.Sub(time.Unix(0, at)) > maxSpoolAge || len(names)-i > maxSpooled {
			os.Remove(name)
		}
	}
}

// Drain posts this target's pending calls with c, oldest first, until one
// fails for a reason a later try could mend (it stays, with those after
// it). A call the server refuses for good (its session closed or gone, its
// input invalid) is dropped. It returns how many were posted and dropped,
// and the error that stopped it.
func (s Spool) Drain(ctx context.Context, c Caller) (posted, dropped int, err error) {
	for _, name := range s.Pending() {
		if ctx.Err() != nil {
			return posted, dropped, ctx.Err()
		}
		e, rerr := s.read(name)
		if rerr != nil {
			os.Remove(name)
			dropped++
			continue
		}
		if err := c.Call(ctx, e.Tool, e.Args, nil); err != nil {
			if !Permanent(err) {
				return posted, dropped, err
			}
			os.Remove(name)
			dropped++
			continue
		}
		os.Remove(name)
		posted++
	}
	return posted, dropped, nil
}

// Permanent reports a tool error no retry mends: the note is refused for
// what it is, not for when it was sent.
func Permanent(err error) bool {
	var te *ToolError
	if !errors.As(err, &te) {
		return false
	}
	switch te.Code {
	case "invalid_input", "not_found", "session_closed", "forbidden", "too_large", "conflict":
		return true
	}
	return false
}
