package workflow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// Keyed mutations (CONTRACT.md §1): the same key with the same input
// returns the original result and changes nothing; the same key with other
// input is a conflict. The record is written in the same transaction as
// the mutation, so it is exactly as durable.

// The scopes keys are unique within: a session's messages, and a group's
// work_on_project calls (whose result is a session).
func messageScope(sessionID string) string { return "msg:" + sessionID }
func workScope(groupID string) string      { return "work:" + groupID }

// fingerprint hashes what "the same input" means for one kind of mutation.
func fingerprint(parts ...any) string {
	b, _ := json.Marshal(parts) // plain strings and slices: cannot fail
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func keyHash(key string) string {
	h := sha256.Sum256([]byte("continuo/key/v1\x00" + key))
	return hex.EncodeToString(h[:])
}

// replay returns the ID recorded for key in scope when the input matches,
// "" when the key is unused (or empty), and conflict when it was used with
// other input.
func replay(ctx context.Context, tx store.Tx, scope, key, fp string) (string, error) {
	if key == "" {
		return "", nil
	}
	rec, err := tx.IdempotencyGet(ctx, scope, keyHash(key))
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	} else if err != nil {
		return "", err
	}
	if rec.RequestHash != fp {
		return "", continuo.Errorf(continuo.CodeConflict, "the key was already used with different input").With("result_id", rec.ResultID)
	}
	return rec.ResultID, nil
}

// remember records the result of a keyed mutation (nothing without a key).
func remember(ctx context.Context, tx store.Tx, scope, key, fp, resultID string, at time.Time) error {
	if key == "" {
		return nil
	}
	return tx.IdempotencyCreate(ctx, store.Idempotency{Scope: scope, KeyHash: keyHash(key), RequestHash: fp, ResultID: resultID, CreatedAt: at})
}
