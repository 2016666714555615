package swarm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/redact"
	"github.com/continuo-dev/continuo/internal/store"
)

// The capsule (CONTRACT.md §8) is what a new carrier starts from: built
// from stored truth only — never a transcript, hidden reasoning, a token
// or a credential. It is versioned and hashed; a capsule that would carry
// a secret is refused, never trimmed.

// CapsuleVersion is the capsule format's version.
const CapsuleVersion = 1

// capsuleTasks bounds the recent tasks a capsule names, and summaryBytes
// each one's result summary.
const (
	capsuleTasks = 10
	summaryBytes = 512
)

// Capsule is the JSON a continuation carries.
type Capsule struct {
	Version     int             `json:"version"`
	Authority   string          `json:"authority,omitempty"` // always "context_only": it grants nothing
	SwarmID     string          `json:"swarm_id"`
	WorkerID    string          `json:"worker_id"`
	Label       string          `json:"label"`
	Epoch       int64           `json:"epoch"` // the epoch the new carrier holds
	Checkpoint  json.RawMessage `json:"checkpoint"`
	Blockers    json.RawMessage `json:"blockers,omitempty"`
	Artifacts   json.RawMessage `json:"artifact_refs,omitempty"`
	RecentTasks []CapsuleTask   `json:"recent_tasks"`
	// TasksLeftOut counts the older of the recent tasks left out so that
	// the capsule stays within its bound.
	TasksLeftOut int `json:"tasks_left_out,omitempty"`
}

// CapsuleTask is one recent task of the worker, summarised.
type CapsuleTask struct {
	TaskID  string `json:"task_id"`
	State   string `json:"state"`
	Summary string `json:"summary,omitempty"` // the result's first bytes
}

// capsuleLimit is the most bytes a capsule of a worker of sw may hold:
// MaxCapsule, and a quarter of the swarm's budget (CONTRACT.md §8: a
// rollover must leave room to work). At the ledger's bytesPerToken, a
// quarter of budget_tokens is budget_tokens bytes.
func capsuleLimit(sw *continuo.Swarm) int {
	quarter := sw.Policy.Compaction.BudgetTokens / 4 * bytesPerToken
	return int(min(int64(continuo.MaxCapsule), max(quarter, 0)))
}

// buildCapsule makes a worker's capsule for target epoch, and its hash,
// within limit bytes (capsuleLimit): the oldest recent tasks are left out
// to fit, never the checkpoint. It fails with invalid_state when the
// capsule would not fit even so (reason capsule_too_large) or would carry
// a secret.
func buildCapsule(ctx context.Context, tx store.Tx, w *continuo.Worker, target int64, limit int) (string, string, error) {
	c := Capsule{Version: CapsuleVersion, Authority: "context_only", SwarmID: w.SwarmID, WorkerID: w.ID, Label: w.Label,
		Epoch: target, Checkpoint: json.RawMessage(w.Checkpoint), RecentTasks: []CapsuleTask{}}
	var cp map[string]json.RawMessage
	if err := json.Unmarshal([]byte(w.Checkpoint), &cp); err == nil {
		c.Blockers, c.Artifacts = cp["blockers"], firstOf(cp, "artifact_refs", "artifacts")
	}
	ts, err := tx.TaskList(ctx, store.TaskListParams{SwarmID: w.SwarmID, WorkerID: w.ID, Newest: true, Limit: capsuleTasks})
	if err != nil {
		return "", "", err
	}
	for _, t := range ts {
		ct := CapsuleTask{TaskID: t.ID, State: string(t.State)}
		if t.Result != "" {
			ct.Summary = truncate(t.Result, summaryBytes)
		}
		c.RecentTasks = append(c.RecentTasks, ct)
	}
	b, err := encodeCapsule(c)
	// The checkpoint (with its blockers and artifact refs) is never cut;
	// the summaries of recent results are: the oldest tasks make room.
	for err == nil && len(b) > limit && len(c.RecentTasks) > 0 {
		c.RecentTasks, c.TasksLeftOut = c.RecentTasks[:len(c.RecentTasks)-1], c.TasksLeftOut+1
		b, err = encodeCapsule(c)
	}
	if err != nil {
		return "", "", err
	}
	if len(b) > limit {
		return "", "", continuo.Errorf(continuo.CodeInvalidState, "the capsule would be %d bytes with its checkpoint alone, over %d (a quarter of the swarm's budget, at most %d): checkpoint less",
			len(b), limit, continuo.MaxCapsule).With("reason", string(continuo.BlockedCapsuleTooLarge)).With("limit", limit)
	}
	// The scan looks at what came from stored truth, not at the
	// envelope's own names ("authority" reads like a credential's key).
	scan := c
	scan.Authority = ""
	sb, err := encodeCapsule(scan)
	if err != nil {
		return "", "", err
	}
	if path := secretAt(string(sb)); path != "" {
		return "", "", continuo.Errorf(continuo.CodeInvalidState, "the capsule would carry a credential (at %s): it is refused, not trimmed", path).
			With("reason", "capsule_contains_secret").With("path", path)
	}
	if _, changed := redact.String(string(sb)); changed {
		return "", "", continuo.Errorf(continuo.CodeInvalidState, "the capsule would carry a credential: it is refused, not trimmed").
			With("reason", "capsule_contains_secret")
	}
	return string(b), CapsuleHash(b), nil
}

// CapsuleHash is a capsule's hash: the hex SHA-256 of its bytes, which a
// carrier can check on what it was given.
func CapsuleHash(capsule []byte) string {
	h := sha256.Sum256(capsule)
	return hex.EncodeToString(h[:])
}

// encodeCapsule is c as compact JSON, without escaping HTML's characters
// (a capsule is read by carriers, not pasted into a page).
func encodeCapsule(c Capsule) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func firstOf(m map[string]json.RawMessage, keys ...string) json.RawMessage {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v
		}
	}
	return nil
}

// truncate cuts s to at most n bytes at a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
